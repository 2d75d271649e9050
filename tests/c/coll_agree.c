/* Collectives check that the PEs agree on their arguments: run as
 * `coll_agree <case>`; in every case but "ok" the last PE passes another
 * value than the others, and every PE must report the disagreement (the
 * job ends with status 1). "ok" runs collectives whose arguments agree,
 * named differently on different PEs where the types are the same. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int src[64], dst[64 * 8];
static long lsrc[64], ldst[64];

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int odd = me == n - 1; /* the PE that disagrees */
    const char *c = argc > 1 ? argv[1] : "ok";
    for (int i = 0; i < 64; i++) src[i] = me * 100 + i;
    shmem_barrier_all();
    if (strcmp(c, "bcast_root") == 0) {
        shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 10, odd ? 1 : 0);
    } else if (strcmp(c, "bcast_count") == 0) {
        shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, odd ? 20 : 10, 0);
    } else if (strcmp(c, "reduce_count") == 0) {
        shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, odd ? 5 : 4);
    } else if (strcmp(c, "reduce_zero") == 0) {
        shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, odd ? 0 : 4);
    } else if (strcmp(c, "reduce_op") == 0) {
        if (odd)
            shmem_int_max_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        else
            shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
    } else if (strcmp(c, "fcollect_count") == 0) {
        shmem_int_fcollect(SHMEM_TEAM_WORLD, dst, src, odd ? 3 : 2);
    } else if (strcmp(c, "alltoall_block") == 0) {
        shmem_int_alltoall(SHMEM_TEAM_WORLD, dst, src, odd ? 2 : 1);
    } else if (strcmp(c, "to_all") == 0) {
        static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
        static long psync[SHMEM_REDUCE_SYNC_SIZE];
        shmem_long_sum_to_all(ldst, lsrc, odd ? 3 : 2, 0, 0, n, pwrk, psync);
    } else if (strcmp(c, "ok") == 0) {
        /* int and int32_t are one type: the same call. */
        if (odd)
            shmem_int32_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        else
            shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 4);
        for (int i = 0; i < 4; i++)
            CHECK(dst[i] == 100 * n * (n - 1) / 2 + n * i, "sum %d: %d", i, dst[i]);
        shmem_int_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 0);
        shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 8, n - 1);
        CHECK(dst[7] == (n - 1) * 100 + 7, "broadcast %d", dst[7]);
        return done("coll_agree");
    } else {
        fprintf(stderr, "coll_agree: unknown case %s\n", c);
        return 2;
    }
    printf("PE %d: %s returned\n", me, c);
    shmem_finalize();
    return 0;
}
