/* Collectives check that the PEs agree on their arguments: run as
 * `coll_agree <case>`; in every case but "ok" the last PE passes another
 * value than the others, and every PE must report the disagreement (the
 * job ends with status 1). "ok" runs collectives whose arguments agree,
 * named differently on different PEs where the types are the same.
 *
 * The active-set cases ("*_set") give the last PE another set: with 2 PEs
 * it calls on the set of itself alone (and so returns, then finalizes),
 * with more it leaves PE 0 out (PE_start 1) while the others call on
 * every PE. */
#include "check.h"
#include <stdint.h>
#include <string.h>

static int src[64], dst[64 * 8];
static long lsrc[64], ldst[64];
static long psync[SHMEM_REDUCE_SYNC_SIZE];
static long pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];

/* The active set of this PE in the "*_set" cases. */
static void my_set(int me, int n, int *start, int *size) {
    int odd = me == n - 1;
    if (n == 2) {
        *start = odd ? 1 : 0;
        *size = odd ? 1 : 2;
    } else {
        *start = odd ? 1 : 0;
        *size = odd ? n - 1 : n;
    }
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int odd = me == n - 1; /* the PE that disagrees */
    const char *c = argc > 1 ? argv[1] : "ok";
    for (int i = 0; i < 64; i++) src[i] = me * 100 + i, lsrc[i] = me * 100 + i;
    int start, size;
    my_set(me, n, &start, &size);
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
        shmem_long_sum_to_all(ldst, lsrc, odd ? 3 : 2, 0, 0, n, pwrk, psync);
    } else if (strcmp(c, "bcast_root_range") == 0) {
        /* Out of range on the last PE only. */
        shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 10, odd ? n : 0);
    } else if (strcmp(c, "bcast_root_all_bad") == 0) {
        shmem_int_broadcast(SHMEM_TEAM_WORLD, dst, src, 10, -1);
    } else if (strcmp(c, "alltoalls_stride") == 0) {
        shmem_int_alltoalls(SHMEM_TEAM_WORLD, dst, src, odd ? 2 : 1, 1, 2);
    } else if (strcmp(c, "collect_size") == 0) {
        if (odd)
            shmem_long_collect(SHMEM_TEAM_WORLD, ldst, lsrc, 2);
        else
            shmem_int_collect(SHMEM_TEAM_WORLD, dst, src, 2);
    } else if (strcmp(c, "fcollect_size") == 0) {
        if (odd)
            shmem_long_fcollect(SHMEM_TEAM_WORLD, ldst, lsrc, 2);
        else
            shmem_int_fcollect(SHMEM_TEAM_WORLD, dst, src, 2);
    } else if (strcmp(c, "inscan_count") == 0) {
        shmem_int_sum_inscan(SHMEM_TEAM_WORLD, dst, src, odd ? 5 : 4);
    } else if (strcmp(c, "exscan_count") == 0) {
        shmem_int_sum_exscan(SHMEM_TEAM_WORLD, dst, src, odd ? 3 : 4);
    } else if (strcmp(c, "team_reduce") == 0) {
        /* A team of PEs 1..n-1 (every PE with 2), not the world. */
        shmem_team_t team;
        int t0 = n >= 3 ? 1 : 0;
        shmem_team_split_strided(SHMEM_TEAM_WORLD, t0, 1, n - t0, NULL, 0, &team);
        if (team != SHMEM_TEAM_INVALID)
            shmem_int_sum_reduce(team, dst, src, odd ? 5 : 4);
        else
            shmem_barrier_all(); /* PE 0 waits; the job ends meanwhile */
    } else if (strcmp(c, "to_all_set") == 0) {
        shmem_long_sum_to_all(ldst, lsrc, 2, start, 0, size, pwrk, psync);
    } else if (strcmp(c, "bcast32_set") == 0) {
        shmem_broadcast32(dst, src, 4, 0, start, 0, size, psync);
    } else if (strcmp(c, "fcollect64_set") == 0) {
        shmem_fcollect64(ldst, lsrc, 2, start, 0, size, psync);
    } else if (strcmp(c, "barrier_set") == 0) {
        shmem_barrier(start, 0, size, psync);
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
