/* Latency and bandwidth of put and get between PE 0 and PE 1, for the
 * side-by-side comparison of the fshmem ipv6 conduit with another
 * OpenSHMEM: the same measurements, order and counts as
 * conduits/examples/ipv6_bench.rs (see that file and README.md).
 * Every point is the median of BENCH_TRIALS (default 5) timed trials
 * after one untimed warm-up trial.
 * Prints: op size usec_per_op MB_per_s */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LAT_MAX (64 << 10)
#define BW_MIN (4 << 10)
#define BW_MAX (4 << 20)
#define MAX_TRIALS 101

enum op { PUT_LAT, GET_LAT, PUT_BW, GET_BW };
static const char *names[] = {"put_lat", "get_lat", "put_bw", "get_bw"};

static char *buf;
static char local[BW_MAX], back[BW_MAX];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void body(enum op op, size_t n, int iters) {
    switch (op) {
    case PUT_LAT:
        for (int i = 0; i < iters; i++) {
            shmem_putmem(buf, local, n, 1);
            shmem_quiet();
        }
        break;
    case GET_LAT:
        for (int i = 0; i < iters; i++) shmem_getmem(back, buf, n, 1);
        break;
    case PUT_BW:
        for (int i = 0; i < iters; i++) shmem_putmem_nbi(buf, local, n, 1);
        shmem_quiet();
        break;
    case GET_BW:
        for (int i = 0; i < iters; i++) shmem_getmem_nbi(back, buf, n, 1);
        shmem_quiet();
        break;
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void point(enum op op, size_t n, int iters, int trials) {
    double t[MAX_TRIALS];
    body(op, n, iters);
    for (int k = 0; k < trials; k++) {
        double s = now();
        body(op, n, iters);
        t[k] = (now() - s) / iters;
    }
    qsort(t, trials, sizeof t[0], cmp);
    double per = t[trials / 2];
    printf("%s %zu %.2f %.1f\n", names[op], n, per * 1e6, n / per / 1e6);
    fflush(stdout);
}

static int clamp(long v, long lo, long hi) { return v < lo ? lo : v > hi ? hi : v; }

int main(void) {
    shmem_init();
    const char *e = getenv("BENCH_TRIALS");
    int trials = e ? clamp(atol(e), 1, MAX_TRIALS) : 5;
    buf = shmem_malloc(BW_MAX);
    memset(local, 1, sizeof local);
    shmem_barrier_all();
    if (shmem_my_pe() == 0) {
        for (size_t n = 8; n <= LAT_MAX; n *= 2) {
            int iters = clamp((1 << 20) / n, 200, 1000);
            point(PUT_LAT, n, iters, trials);
            point(GET_LAT, n, iters, trials);
        }
        for (size_t n = BW_MIN; n <= BW_MAX; n *= 4) {
            int iters = clamp((16 << 20) / n, 4, 1 << 30);
            point(PUT_BW, n, iters, trials);
            point(GET_BW, n, iters, trials);
        }
    }
    shmem_barrier_all();
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
