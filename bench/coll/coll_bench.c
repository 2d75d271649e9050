/*
 * Collective latency benchmark for any OpenSHMEM 1.4 library, with the
 * loops of fshmem's shmem/examples/coll_bench.rs: barrier, 8-byte
 * broadcast, 8-byte and 64 KiB sum reductions, 8-byte fcollect and
 * alltoall over all PEs; with the argument `all` after the scale, also
 * broadcast, collect, fcollect and alltoall of 64 KiB (from each PE; to
 * each PE for alltoall)
 * and collect of 8 bytes. Prints the median over 7 batches of the mean
 * time per call on the slowest PE, in microseconds.
 *
 *   oshcc -O2 -o coll_bench bench/coll/coll_bench.c
 *   oshrun -np 2 ./coll_bench [scale [all]]
 */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCHES 7
#define BIG 8192

static long psync[2][SHMEM_REDUCE_SYNC_SIZE > SHMEM_ALLTOALL_SYNC_SIZE
                        ? (SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE : SHMEM_BCAST_SYNC_SIZE)
                        : (SHMEM_ALLTOALL_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ? SHMEM_ALLTOALL_SYNC_SIZE : SHMEM_COLLECT_SYNC_SIZE)];
static long long pwrk[BIG / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long long small_src[1024], small_dst[1024];
static long long big_src[BIG], big_dst[BIG];
static long long *wide_src, *wide_dst; /* BIG elements per PE */
static double mine, worst;
static double dwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE + 1];
static int npes, parity;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static long *next_psync(void) {
    parity ^= 1;
    return psync[parity];
}

static void op_barrier(void) { shmem_barrier_all(); }
static void op_bcast(void) { shmem_broadcast64(small_dst, small_src, 1, 0, 0, 0, npes, next_psync()); }
static void op_reduce8(void) { shmem_longlong_sum_to_all(small_dst, small_src, 1, 0, 0, npes, pwrk, next_psync()); }
static void op_reduce64k(void) { shmem_longlong_sum_to_all(big_dst, big_src, BIG, 0, 0, npes, pwrk, next_psync()); }
static void op_fcollect(void) { shmem_fcollect64(small_dst, small_src, 1, 0, 0, npes, next_psync()); }
static void op_alltoall(void) { shmem_alltoall64(small_dst, small_src, 1, 0, 0, npes, next_psync()); }
static void op_bcast64k(void) { shmem_broadcast64(big_dst, big_src, BIG, 0, 0, 0, npes, next_psync()); }
static void op_collect8(void) { shmem_collect64(small_dst, small_src, 1, 0, 0, npes, next_psync()); }
static void op_collect64k(void) { shmem_collect64(wide_dst, big_src, BIG, 0, 0, npes, next_psync()); }
static void op_fcollect64k(void) { shmem_fcollect64(wide_dst, big_src, BIG, 0, 0, npes, next_psync()); }
static void op_alltoall64k(void) { shmem_alltoall64(wide_dst, wide_src, BIG, 0, 0, npes, next_psync()); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench(void (*f)(void), int iters) {
    double per[BATCHES];
    for (int i = 0; i < iters / 10 + 1; i++) f();
    for (int b = 0; b < BATCHES; b++) {
        shmem_barrier_all();
        double t = now();
        for (int i = 0; i < iters; i++) f();
        per[b] = (now() - t) / iters;
    }
    shmem_barrier_all();
    qsort(per, BATCHES, sizeof per[0], cmp);
    mine = per[BATCHES / 2];
    shmem_barrier_all();
    shmem_double_max_to_all(&worst, &mine, 1, 0, 0, npes, dwrk, next_psync());
    return worst;
}

int main(int argc, char **argv) {
    shmem_init();
    npes = shmem_n_pes();
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    int all = argc > 2 && strcmp(argv[2], "all") == 0;
    wide_src = shmem_malloc(sizeof(long long) * BIG * npes);
    wide_dst = shmem_malloc(sizeof(long long) * BIG * npes);
    if (wide_src == NULL || wide_dst == NULL) {
        fprintf(stderr, "coll_bench: cannot allocate %d x 64 KiB\n", npes);
        return 1;
    }
    for (int i = 0; i < 2; i++)
        for (size_t j = 0; j < sizeof psync[0] / sizeof psync[0][0]; j++) psync[i][j] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();
#define IT(k) ((int)((k) * scale) > 0 ? (int)((k) * scale) : 1)
    struct { const char *name; void (*f)(void); int iters; } rows[] = {
        {"barrier", op_barrier, IT(5000)},
        {"broadcast 8 B", op_bcast, IT(5000)},
        {"sum_reduce 8 B", op_reduce8, IT(5000)},
        {"sum_reduce 64 KiB", op_reduce64k, IT(300)},
        {"fcollect 8 B", op_fcollect, IT(5000)},
        {"alltoall 8 B", op_alltoall, IT(5000)},
        {"broadcast 64 KiB", op_bcast64k, IT(300)},
        {"collect 8 B", op_collect8, IT(5000)},
        {"collect 64 KiB", op_collect64k, IT(300)},
        {"fcollect 64 KiB", op_fcollect64k, IT(300)},
        {"alltoall 64 KiB", op_alltoall64k, IT(300)},
    };
    int nrows = all ? 11 : 6;
    double t[11];
    for (int r = 0; r < nrows; r++) t[r] = bench(rows[r].f, rows[r].iters);
    if (shmem_my_pe() == 0) {
        printf("coll_bench (C, OpenSHMEM 1.4): %d PEs, median of %d batches, microseconds per call on the slowest PE\n",
               npes, BATCHES);
        for (int r = 0; r < nrows; r++) printf("%-20s %10.2f\n", rows[r].name, t[r] * 1e6);
    }
    shmem_free(wide_dst);
    shmem_free(wide_src);
    shmem_finalize();
    return 0;
}
