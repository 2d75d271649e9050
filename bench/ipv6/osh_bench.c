/* Latency and bandwidth of put and get between PE 0 and PE 1, for the
 * side-by-side comparison of the fshmem ipv6 conduit with another
 * OpenSHMEM (conduits/examples/ipv6_bench.rs measures the same things).
 * Prints: op size usec_per_op MB_per_s */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    size_t max = 1 << 20;
    char *buf = shmem_malloc(max);
    static char local[1 << 20];
    memset(local, 1, sizeof local);
    shmem_barrier_all();
    if (me == 0) {
        for (size_t n = 8; n <= max; n *= 8) {
            int iters = n <= 4096 ? 2000 : 200;
            double t = now();
            for (int i = 0; i < iters; i++) {
                shmem_putmem(buf, local, n, 1);
                shmem_quiet();
            }
            double lat = (now() - t) / iters;
            printf("put_lat %zu %.2f %.1f\n", n, lat * 1e6, n / lat / 1e6);
            t = now();
            for (int i = 0; i < iters; i++) shmem_getmem(local, buf, n, 1);
            lat = (now() - t) / iters;
            printf("get_lat %zu %.2f %.1f\n", n, lat * 1e6, n / lat / 1e6);
            t = now();
            for (int i = 0; i < iters; i++) shmem_putmem_nbi(buf, local, n, 1);
            shmem_quiet();
            lat = (now() - t) / iters;
            printf("put_bw %zu %.2f %.1f\n", n, lat * 1e6, n / lat / 1e6);
        }
    }
    shmem_barrier_all();
    shmem_free(buf);
    shmem_finalize();
    return 0;
}
