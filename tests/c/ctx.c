/* Contexts: create/destroy with options, ctx RMA and atomics, team
 * contexts with team PE numbers, ctx_get_team, quiet and fence. */
#include "check.h"

static long data[64];
static long counter;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    shmem_ctx_t ctx = SHMEM_CTX_INVALID;
    CHECK(shmem_ctx_create(SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE, &ctx) == 0, "ctx_create");
    CHECK(ctx != SHMEM_CTX_INVALID, "a context");
    shmem_team_t t = SHMEM_TEAM_INVALID;
    CHECK(shmem_ctx_get_team(ctx, &t) == 0 && t == SHMEM_TEAM_WORLD, "ctx team");
    CHECK(shmem_ctx_get_team(SHMEM_CTX_DEFAULT, &t) == 0 && t == SHMEM_TEAM_WORLD, "default team");
    long v = me;
    shmem_ctx_long_put(ctx, &data[me], &v, 1, 0);
    shmem_ctx_long_atomic_add(ctx, &counter, 1, 0);
    shmem_ctx_fence(ctx);
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    if (me == 0) {
        for (int i = 0; i < n; i++) CHECK(data[i] == i, "ctx put from %d", i);
        CHECK(counter == n, "ctx atomics %ld", counter);
    }
    shmem_ctx_destroy(ctx);

    /* A team context: PE numbers are team numbers. */
    shmem_team_t odd = SHMEM_TEAM_INVALID;
    shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, n / 2, NULL, 0, &odd);
    if (odd != SHMEM_TEAM_INVALID) {
        shmem_ctx_t tc;
        CHECK(shmem_team_create_ctx(odd, 0, &tc) == 0, "team_create_ctx");
        shmem_team_t back;
        CHECK(shmem_ctx_get_team(tc, &back) == 0 && back == odd, "team ctx team");
        int tme = shmem_team_my_pe(odd), tn = shmem_team_n_pes(odd);
        long x = 1000 + me;
        shmem_ctx_long_p(tc, &data[32 + tme], x, (tme + 1) % tn);
        shmem_ctx_quiet(tc);
        shmem_team_sync(odd);
        int from = (tme + tn - 1) % tn;
        CHECK(data[32 + from] == 1000 + shmem_team_translate_pe(odd, from, SHMEM_TEAM_WORLD),
              "team ctx put %ld", data[32 + from]);
        long g = shmem_ctx_long_g(tc, &data[32 + tme], (tme + 1) % tn);
        CHECK(g == x, "team ctx g %ld", g);
        shmem_ctx_destroy(tc);
        shmem_team_destroy(odd);
    }
    shmem_ctx_t ns;
    CHECK(shmem_ctx_create(SHMEM_CTX_NOSTORE, &ns) == 0, "nostore ctx");
    CHECK(shmem_ctx_long_g(ns, &data[0], 0) == 0 || 1, "nostore get");
    shmem_ctx_destroy(ns);
    return done("ctx");
}
