/* The OpenSHMEM 1.6 additions and clarifications: sessions, test_all on
 * an empty set, const comparison vectors, shmem_team_ptr, the version. */
#include "check.h"
#include <shmemx.h>

static long flags[4];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    CHECK(major == 1 && minor == 6, "version %d.%d", major, minor);
    CHECK(SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION == 6, "header version");

    /* Sessions: hints on the default context, a created one, and no-ops on
     * SHMEM_CTX_INVALID. */
    shmem_ctx_session_config_t cfg = {.total_ops = 16};
    shmem_ctx_session_start(SHMEM_CTX_DEFAULT, SHMEM_CTX_SESSION_BATCH, &cfg,
                            SHMEM_CTX_SESSION_TOTAL_OPS);
    for (int i = 0; i < 4; i++) shmem_long_p(&flags[i], me + i, (me + 1) % n);
    shmem_ctx_session_stop(SHMEM_CTX_DEFAULT);
    shmem_ctx_t ctx;
    CHECK(shmem_ctx_create(0, &ctx) == 0, "ctx_create");
    shmem_ctx_session_start(ctx, 0, NULL, 0);
    shmem_ctx_long_atomic_add(ctx, &flags[3], 10, (me + 1) % n);
    shmem_ctx_fence(ctx);
    shmem_ctx_session_stop(ctx);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
    shmem_ctx_session_start(SHMEM_CTX_INVALID, SHMEM_CTX_SESSION_BATCH, NULL, 0);
    shmem_ctx_session_stop(SHMEM_CTX_INVALID);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    for (int i = 0; i < 3; i++) CHECK(flags[i] == left + i, "flags[%d] %ld", i, flags[i]);
    CHECK(flags[3] == left + 3 + 10, "flags[3] %ld", flags[3]);

    /* test_all of an empty set (or with every element excluded) is 1. */
    CHECK(shmem_long_test_all(flags, 0, NULL, SHMEM_CMP_EQ, -1) == 1, "test_all empty");
    int skip[4] = {1, 1, 1, 1};
    CHECK(shmem_long_test_all(flags, 4, skip, SHMEM_CMP_EQ, -1) == 1, "test_all excluded");
    const long want[4] = {left, left + 1, left + 2, left + 13};
    CHECK(shmem_long_test_all_vector(flags, 4, NULL, SHMEM_CMP_EQ, want) == 1, "const vector");
    CHECK(shmem_long_test_all_vector(flags, 0, NULL, SHMEM_CMP_NE, want) == 1, "empty vector");
    shmem_long_wait_until_all_vector(flags, 4, NULL, SHMEM_CMP_EQ, want);
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
    CHECK(shmem_test_all(flags, 0, NULL, SHMEM_CMP_EQ, 0L) == 1, "generic test_all empty");
#endif

    /* shmem_team_ptr: this PE through the world team; peers on smp. */
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, flags, me) == (void *)flags, "team_ptr self");
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, flags, me) == NULL, "team_ptr invalid team");
    return done("v16");
}
