/* OpenSHMEM 1.6: shmem_init and shmem_finalize may be called again (each
 * initialization matched by a finalize; the last finalize releases the
 * library, which may then start again) and shmem_query_initialized tells
 * the state at any time. Three rounds, each with nested initializations,
 * symmetric allocation, RMA, a team and collectives. */
#include "check.h"
#include <string.h>

static long ring[4];
static int bad;

#define EXPECT(cond, what)                                                  \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "reinit: check failed: %s\n", what);            \
            bad++;                                                          \
        }                                                                   \
    } while (0)

static int initialized(void) {
    int flag = -1;
    shmem_query_initialized(&flag);
    return flag;
}

int main(void) {
    EXPECT(initialized() == 0, "not initialized before shmem_init");
    for (int round = 0; round < 3; round++) {
        shmem_init();
        EXPECT(initialized() != 0, "initialized after shmem_init");
        shmem_init(); /* nested: needs its own finalize */
        int me = shmem_my_pe(), n = shmem_n_pes();
        long *h = shmem_calloc(n, sizeof(long));
        EXPECT(h != NULL, "calloc");
        /* Everyone puts its rank (and the round) into its right neighbour. */
        shmem_long_p(&ring[round], 100 * round + me, (me + 1) % n);
        shmem_long_p(&h[me], round + 1, (me + 1) % n);
        shmem_barrier_all();
        EXPECT(ring[round] == 100 * round + (me + n - 1) % n, "static data put");
        EXPECT(h[(me + n - 1) % n] == round + 1, "heap put");
        /* A team and a collective on it. */
        shmem_team_t even;
        int made = shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even);
        EXPECT(made == 0, "split");
        static long one = 1, sum;
        if (even != SHMEM_TEAM_INVALID) {
            shmem_long_sum_reduce(even, &sum, &one, 1);
            EXPECT(sum == (n + 1) / 2, "reduce on the team");
            shmem_team_destroy(even);
        }
        static int all[64];
        static int mine;
        mine = me + round;
        shmem_int_fcollect(SHMEM_TEAM_WORLD, all, &mine, 1);
        for (int i = 0; i < n && i < 64; i++) EXPECT(all[i] == i + round, "fcollect");
        shmem_free(h);
        shmem_finalize(); /* matches the nested init: a barrier */
        EXPECT(initialized() != 0, "still initialized after the inner finalize");
        shmem_finalize(); /* the last: the library is released */
        EXPECT(initialized() == 0, "not initialized after the last finalize");
    }
    shmem_init();
    if (shmem_my_pe() == 0) printf("reinit: 3 rounds\n");
    check_failures += bad;
    return done("reinit");
}
