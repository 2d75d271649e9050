/*
 * osh_bench.c: the side-by-side counterpart of fshmem's `osu` benchmark, for
 * any OpenSHMEM implementation (built here with Open MPI's oshcc). Same
 * definitions as osu.rs: times are means over a batch of iterations, the
 * median over batches is reported. One difference: the ping-pong sends data
 * with putmem + fence + p (Open MPI 4.1 has no shmem_put_signal); on fshmem's
 * smp conduit put_signal is that same sequence.
 *
 *   oshcc -O2 -o osh_bench osh_bench.c
 *   oshrun --allow-run-as-root --oversubscribe --mca btl ^openib -np 2 ./osh_bench [iters]
 *
 * Prints CSV rows test,size_bytes,value,unit on PE 0.
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 9
#define MIB (1 << 20)
#define WINDOW 64

static long long iters;

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    iters = argc > 1 ? atoll(argv[1]) : 20000;
    if (iters < 1)
        iters = 1;
    if (n < 2) {
        if (me == 0)
            fprintf(stderr, "osh_bench: needs 2 PEs\n");
        shmem_finalize();
        return 1;
    }
    char *buf = shmem_malloc(MIB);
    long *flag = shmem_calloc(1, sizeof(long));
    long *ctr = shmem_calloc(1, sizeof(long));
    char *src = aligned_alloc(4096, MIB); /* page-aligned, as osu.rs */
    memset(src, 1, MIB);
    double t[BATCHES];
    long long per = iters / BATCHES > 0 ? iters / BATCHES : 1;
    if (me == 0)
        printf("test,size_bytes,value,unit\n");

    /* put 8 B + quiet, target idle */
    shmem_barrier_all();
    if (me == 0) {
        for (long long i = 0; i < per; i++) {
            shmem_putmem(buf, src, 8, 1);
            shmem_quiet();
        }
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_ns();
            for (long long i = 0; i < per; i++) {
                shmem_putmem(buf, src, 8, 1);
                shmem_quiet();
            }
            t[b] = (now_ns() - t0) / per;
        }
        printf("put_lat,8,%.4f,us\n", median(t, BATCHES) / 1e3);
    }

    /* ping-pong, 8 B put + flag (fence), half round trip */
    shmem_barrier_all();
    {
        long warm = per, total = warm + per * BATCHES, step = 0;
        int peer = 1 - me;
        for (long i = 1; i <= total; i++) {
            if (me == 0 && i > warm && (i - warm - 1) % per == 0)
                t[step] = now_ns();
            if (me == 0) {
                shmem_putmem(buf, src, 8, peer);
                shmem_fence();
                shmem_long_p(flag, i, peer);
                shmem_long_wait_until(flag, SHMEM_CMP_EQ, i);
            } else if (me == 1) {
                shmem_long_wait_until(flag, SHMEM_CMP_EQ, i);
                shmem_putmem(buf, src, 8, peer);
                shmem_fence();
                shmem_long_p(flag, i, peer);
            }
            if (me == 0 && i > warm && (i - warm) % per == 0) {
                t[step] = (now_ns() - t[step]) / (2.0 * per);
                step++;
            }
        }
        if (me == 0)
            printf("pingpong,8,%.4f,us\n", median(t, BATCHES) / 1e3);
    }

    /* remote fetch-add, target idle */
    shmem_barrier_all();
    if (me == 0) {
        for (long long i = 0; i < per; i++)
            (void)shmem_long_atomic_fetch_add(ctr, 1, 1);
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_ns();
            for (long long i = 0; i < per; i++)
                (void)shmem_long_atomic_fetch_add(ctr, 1, 1);
            t[b] = (now_ns() - t0) / per;
        }
        printf("fetch_add,8,%.4f,us\n", median(t, BATCHES) / 1e3);
    }

    /* put bandwidth at 1 MiB, WINDOW non-blocking puts then quiet */
    shmem_barrier_all();
    if (me == 0) {
        /* as osu.rs: iterations shrink with the size above 64 KiB */
        long long reps = per / 16 / WINDOW > 2 ? per / 16 / WINDOW : 2;
        for (int w = 0; w < WINDOW; w++)
            shmem_putmem_nbi(buf, src, MIB, 1);
        shmem_quiet();
        for (int b = 0; b < BATCHES; b++) {
            double t0 = now_ns();
            for (long long r = 0; r < reps; r++) {
                for (int w = 0; w < WINDOW; w++)
                    shmem_putmem_nbi(buf, src, MIB, 1);
                shmem_quiet();
            }
            t[b] = (double)MIB * WINDOW * reps / ((now_ns() - t0) / 1e9) / 1e6;
        }
        printf("put_bw,%d,%.1f,MB/s\n", MIB, median(t, BATCHES));
    }

    /* barrier_all */
    shmem_barrier_all();
    for (long long i = 0; i < per; i++)
        shmem_barrier_all();
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (long long i = 0; i < per; i++)
            shmem_barrier_all();
        t[b] = (now_ns() - t0) / per;
    }
    if (me == 0)
        printf("barrier,0,%.4f,us\n", median(t, BATCHES) / 1e3);

    shmem_barrier_all();
    free(src);
    shmem_free(ctr);
    shmem_free(flag);
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
