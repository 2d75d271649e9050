/* The OpenSHMEM 1.6 additions and clarifications: sessions, test_all on
 * an empty set, const comparison vectors, shmem_team_ptr, shmem_pe_quiet,
 * the version. Run as `v16 reachable` where every PE's memory is mapped
 * by every other (smp), `v16 unreachable` where only a PE's own is (ipv6
 * and fpga under oshrun: every PE a host of its own). */
#include "check.h"
#include <shmemx.h>
#include <string.h>

static long flags[4];
static long slot[64];
static long box[4], box2[4];
static long got[4], pub_vals[4];
static long ready, ready2;

int main(int argc, char **argv) {
    int reachable = argc > 1 && strcmp(argv[1], "reachable") == 0;
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

    /* shmem_team_ptr: this PE through the world team, every peer where it
     * is reachable (and then a pointer that writes its memory), NULL where
     * it is not; the same on a team of PEs 1..n-1, numbered from 0. */
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, flags, me) == (void *)flags, "team_ptr self");
    CHECK(shmem_team_ptr(SHMEM_TEAM_INVALID, flags, me) == NULL, "team_ptr invalid team");
    CHECK(shmem_team_ptr(SHMEM_TEAM_WORLD, flags, n) == NULL, "team_ptr PE out of range");
    for (int p = 0; p < n; p++) {
        void *q = shmem_team_ptr(SHMEM_TEAM_WORLD, slot, p);
        CHECK(q == shmem_ptr(slot, p), "team_ptr agrees with shmem_ptr for PE %d", p);
        if (p != me) CHECK((q != NULL) == reachable, "team_ptr PE %d: %p", p, q);
    }
    int right = (me + 1) % n;
    long *peer = (long *)shmem_team_ptr(SHMEM_TEAM_WORLD, slot, right);
    if (peer != NULL) peer[me] = 100 + me;
    shmem_barrier_all();
    if (reachable) CHECK(slot[left] == 100 + left, "write through team_ptr: %ld", slot[left]);
    shmem_team_t upper = SHMEM_TEAM_INVALID;
    if (n > 1) shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 1, n - 1, NULL, 0, &upper);
    if (upper != SHMEM_TEAM_INVALID) {
        for (int t = 0; t < n - 1; t++) {
            void *q = shmem_team_ptr(upper, slot, t);
            CHECK(q == shmem_ptr(slot, t + 1), "team PE %d is PE %d", t, t + 1);
            CHECK((q != NULL) == (reachable || t + 1 == me), "team PE %d: %p", t, q);
        }
        CHECK(shmem_team_ptr(upper, slot, n - 1) == NULL, "team PE out of range");
        shmem_team_destroy(upper);
    }

    /* shmem_pe_quiet completes what this PE issued to the PEs named: a
     * non-blocking get has landed, and a non-blocking put's source may be
     * reused (the target sees the values before the reuse); the context
     * form on a created context; an empty list. */
    for (int i = 0; i < 4; i++) pub_vals[i] = me * 10 + i;
    shmem_barrier_all();
    long src[4] = {me, me + 1, me + 2, me + 3};
    shmem_long_put_nbi(box, src, 4, right);
    shmem_long_get_nbi(got, pub_vals, 4, right);
    shmem_pe_quiet(&right, 1);
    for (int i = 0; i < 4; i++) src[i] = -1;
    for (int i = 0; i < 4; i++)
        CHECK(got[i] == right * 10 + i, "pe_quiet get %d: %ld", i, got[i]);
    shmem_long_atomic_set(&ready, 1, right);
    shmem_long_wait_until(&ready, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 4; i++) CHECK(box[i] == left + i, "pe_quiet put %d: %ld", i, box[i]);
    shmem_ctx_t c2;
    CHECK(shmem_ctx_create(0, &c2) == 0, "ctx_create");
    long src2[4] = {me * 2, me * 2 + 1, me * 2 + 2, me * 2 + 3};
    shmem_ctx_long_put_nbi(c2, box2, src2, 4, right);
    shmem_ctx_pe_quiet(c2, &right, 1);
    for (int i = 0; i < 4; i++) src2[i] = -1;
    shmem_ctx_long_atomic_set(c2, &ready2, 1, right);
    shmem_long_wait_until(&ready2, SHMEM_CMP_EQ, 1);
    for (int i = 0; i < 4; i++)
        CHECK(box2[i] == left * 2 + i, "ctx_pe_quiet put %d: %ld", i, box2[i]);
    shmem_pe_quiet(NULL, 0);
    shmem_ctx_pe_quiet(c2, NULL, 0);
    shmem_ctx_destroy(c2);
    return done("v16");
}
