/* The program a profiling tool (pshmem_tool.c) watches: a fixed number of
 * calls of each routine the tool counts, with results checked, so that
 * the counts and the results show that the tool saw every call and the
 * library still did the work. Expected counts per PE: init 1, put 10,
 * g 10, barrier_all 22 (2 per round, 1 more, and done()'s), sum_reduce 1
 * (done() reduces ints), malloc 1, free 1. */
#include "check.h"

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *buf = shmem_malloc(10 * sizeof(long));
    static long src[10], sum, one = 1;
    for (int r = 0; r < 10; r++) {
        for (int i = 0; i < 10; i++) src[i] = 1000 * r + 10 * me + i;
        shmem_long_put(buf, src, 10, (me + 1) % n);
        shmem_barrier_all();
        int left = (me + n - 1) % n;
        CHECK(buf[9] == 1000 * r + 10 * left + 9, "round %d: %ld", r, buf[9]);
        CHECK(shmem_long_g(&buf[0], (me + 1) % n) == 1000 * r + 10 * me, "g round %d", r);
        shmem_barrier_all(); /* every PE checked before the next round's put */
    }
    shmem_barrier_all();
    shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &sum, &one, 1);
    CHECK(sum == n, "sum %ld", sum);
    shmem_free(buf);
    return done("pshmem_prog");
}
