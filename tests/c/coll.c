/* Collectives on teams and on active sets: barrier and sync, broadcast,
 * collect, fcollect, alltoall, alltoalls (typed, mem, 32/64), team
 * splits (strided, 2d), translate, get_config, destroy. */
#include "check.h"
#include <string.h>

static long psync[SHMEM_BCAST_SYNC_SIZE];
static int64_t a64[256];
static int64_t b64[256];
static int32_t a32[256];
static int32_t b32[256];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_BCAST_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    shmem_barrier_all();

    /* Team broadcast from the last PE. */
    long *v = shmem_calloc(8, sizeof(long));
    long *w = shmem_calloc(8 * n, sizeof(long));
    for (int i = 0; i < 8; i++) v[i] = me * 8 + i;
    CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, w, v, 8, n - 1) == 0, "broadcast rc");
    for (int i = 0; i < 8; i++) CHECK(w[i] == (n - 1) * 8 + i, "broadcast %d", i);
    shmem_barrier_all();
    CHECK(shmem_long_fcollect(SHMEM_TEAM_WORLD, w, v, 8) == 0, "fcollect rc");
    for (int i = 0; i < 8 * n; i++) CHECK(w[i] == i, "fcollect %d", i);
    shmem_barrier_all();
    /* collect: PE i gives i % 3 elements */
    memset(w, 0, 8 * n * sizeof(long));
    CHECK(shmem_long_collect(SHMEM_TEAM_WORLD, w, v, me % 3) == 0, "collect rc");
    int k = 0;
    for (int pe = 0; pe < n; pe++)
        for (int j = 0; j < pe % 3; j++, k++) CHECK(w[k] == pe * 8 + j, "collect %d", k);
    /* alltoall: block j of v goes to PE j */
    long *src = shmem_malloc(n * 2 * sizeof(long));
    long *dst = shmem_malloc(n * 2 * sizeof(long));
    for (int j = 0; j < 2 * n; j++) src[j] = me * 1000 + j;
    shmem_barrier_all();
    shmem_long_alltoall(SHMEM_TEAM_WORLD, dst, src, 2);
    for (int j = 0; j < n; j++)
        CHECK(dst[2 * j] == j * 1000 + 2 * me && dst[2 * j + 1] == j * 1000 + 2 * me + 1, "alltoall %d", j);
    shmem_barrier_all();
    shmem_long_alltoalls(SHMEM_TEAM_WORLD, dst, src, 2, 2, 1);
    for (int j = 0; j < n; j++) CHECK(dst[2 * j] == j * 1000 + 2 * me, "alltoalls %d", j);
    shmem_barrier_all();
    shmem_broadcastmem(SHMEM_TEAM_WORLD, dst, src, 8, 0);
    CHECK(dst[0] == 0, "broadcastmem");
    shmem_fcollectmem(SHMEM_TEAM_WORLD, w, v, sizeof(long));
    for (int i = 0; i < n; i++) CHECK(w[i] == i * 8, "fcollectmem %d", i);
    shmem_barrier_all();

    /* Teams: even PEs, then a 2d split. */
    shmem_team_t even;
    shmem_team_config_t cfg = {.num_contexts = 2};
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, &cfg,
                                   SHMEM_TEAM_NUM_CONTEXTS, &even) == 0, "split");
    CHECK((even != SHMEM_TEAM_INVALID) == (me % 2 == 0), "membership");
    if (even != SHMEM_TEAM_INVALID) {
        CHECK(shmem_team_my_pe(even) == me / 2 && shmem_team_n_pes(even) == (n + 1) / 2, "team numbering");
        shmem_team_config_t got = {0};
        shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got);
        CHECK(got.num_contexts == 2, "config");
        CHECK(shmem_team_translate_pe(even, 1, SHMEM_TEAM_WORLD) == (n > 2 ? 2 : -1), "translate");
        shmem_team_sync(even);
        long s = me, r = 0;
        static long tsrc, tdst;
        tsrc = s;
        shmem_long_sum_reduce(even, &tdst, &tsrc, 1);
        r = 0;
        for (int i = 0; i < n; i += 2) r += i;
        CHECK(tdst == r, "team sum %ld", tdst);
        shmem_long_broadcast(even, w, v, 1, 0);
        CHECK(w[0] == 0, "team broadcast");
        shmem_team_destroy(even);
    }
    /* The shared team is the PEs of this host: the whole job on smp, this
       PE alone on fpga and on ipv6 without oshrun --hosts, the host's PEs
       with it (tests/c/setup.c checks which). */
    int shared_n = shmem_team_n_pes(SHMEM_TEAM_SHARED);
    CHECK(shared_n >= 1 && shared_n <= n, "shared team size %d", shared_n);
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, SHMEM_TEAM_SHARED) == shmem_team_my_pe(SHMEM_TEAM_SHARED),
          "shared team");
    CHECK(shmem_team_my_pe(SHMEM_TEAM_INVALID) == -1, "invalid team");
    shmem_team_t row, col;
    CHECK(shmem_team_split_2d(SHMEM_TEAM_WORLD, 2, NULL, 0, &row, NULL, 0, &col) == 0, "split_2d");
    CHECK(shmem_team_my_pe(row) == me % 2 && shmem_team_my_pe(col) == me / 2, "2d numbering");
    shmem_team_destroy(row);
    shmem_team_destroy(col);
    /* Many splits and destroys reuse slots. */
    for (int i = 0; i < 40; i++) {
        shmem_team_t t;
        CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, n, NULL, 0, &t) == 0, "split %d", i);
        shmem_team_destroy(t);
    }

    /* Active sets: the whole job, and PEs 1.. (when n > 1), stride 2. */
    for (int i = 0; i < 256; i++) { a64[i] = me * 256 + i; a32[i] = me * 256 + i; }
    shmem_barrier(0, 0, n, psync);
    shmem_broadcast64(b64, a64, 4, 0, 0, 0, n, psync);
    if (me != 0) CHECK(b64[3] == 3, "broadcast64");
    else CHECK(b64[3] == 0, "broadcast64 leaves the root's dest");
    shmem_barrier_all();
    shmem_fcollect32(b32, a32, 2, 0, 0, n, psync);
    for (int i = 0; i < n; i++) CHECK(b32[2 * i + 1] == i * 256 + 1, "fcollect32 %d", i);
    shmem_barrier_all();
    shmem_collect64(b64, a64, 1, 0, 0, n, psync);
    for (int i = 0; i < n; i++) CHECK(b64[i] == i * 256, "collect64 %d", i);
    shmem_barrier_all();
    shmem_alltoall32(b32, a32, 1, 0, 0, n, psync);
    for (int i = 0; i < n; i++) CHECK(b32[i] == i * 256 + me, "alltoall32 %d", i);
    shmem_barrier_all();
    shmem_alltoalls64(b64, a64, 1, 1, 1, 0, 0, n, psync);
    for (int i = 0; i < n; i++) CHECK(b64[i] == i * 256 + me, "alltoalls64 %d", i);
    shmem_barrier_all();
    if (n > 2 && me % 2 == 1) {
        int size = n / 2; /* PEs 1, 3, 5, ... */
        shmem_barrier(1, 1, size, psync);
        /* The root is the set's second PE (PE 3) when it has two. */
        int root = size > 1 ? 1 : 0;
        shmem_broadcast32(b32, a32, 3, root, 1, 1, size, psync);
        if (me != 2 * root + 1) CHECK(b32[2] == (2 * root + 1) * 256 + 2, "strided broadcast32");
        shmem_sync(1, 1, size, psync);
        shmem_fcollect64(b64, a64, 1, 1, 1, size, psync);
        for (int i = 0; i < size; i++) CHECK(b64[i] == (2 * i + 1) * 256, "strided fcollect64 %d", i);
    }
    shmem_barrier_all();
    shmem_free(src);
    shmem_free(dst);
    shmem_free(v);
    shmem_free(w);
    return done("coll");
}
