/* Atomics: standard, extended and bitwise types, the nbi fetching forms,
 * the ctx forms and the deprecated names, on static and heap words. */
#include "check.h"

#define TEST_STD(T, N)                                                              \
    static T s_##N;                                                                 \
    static void std_##N(int me, int n) {                                            \
        T *h = shmem_calloc(1, sizeof(T));                                          \
        shmem_##N##_atomic_inc(&s_##N, 0);                                          \
        shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, &s_##N, (T)2, 0);            \
        T old = shmem_##N##_atomic_fetch_inc(h, 0);                                 \
        CHECK(old < (T)(11 * n), #N " fetch_inc %lld", (long long)old);                    \
        T f = 0;                                                                    \
        shmem_##N##_atomic_fetch_add_nbi(&f, h, (T)10, 0);                          \
        shmem_quiet();                                                              \
        shmem_barrier_all();                                                        \
        if (me == 0) {                                                              \
            CHECK(s_##N == (T)(3 * n), #N " inc/add %lld", (long long)s_##N);      \
            CHECK(*h == (T)(11 * n), #N " fetch_inc/add %lld", (long long)*h);     \
        }                                                                           \
        shmem_barrier_all();                                                        \
        /* Exactly one PE wins the compare-and-swap. */                             \
        static int wins;                                                            \
        T prev = shmem_##N##_atomic_compare_swap(h, (T)(11 * n), (T)(me + 1), 0);   \
        if (prev == (T)(11 * n)) shmem_int_atomic_inc(&wins, 0);                    \
        T nb = 0;                                                                   \
        shmem_##N##_atomic_compare_swap_nbi(&nb, h, (T)1000, (T)1, 0);              \
        shmem_##N##_atomic_fetch_inc_nbi(&nb, h, 0);                                \
        shmem_ctx_##N##_atomic_fetch_inc(SHMEM_CTX_DEFAULT, h, 0);                  \
        shmem_barrier_all();                                                        \
        if (me == 0) CHECK(wins == 1, #N " cswap winners %d", wins);                \
        shmem_barrier_all();                                                        \
        wins = 0;                                                                   \
        shmem_free(h);                                                              \
    }

#define TEST_EXT(T, N)                                                              \
    static T e_##N;                                                                 \
    static void ext_##N(int me, int n) {                                            \
        int right = (me + 1) % n;                                                   \
        shmem_##N##_atomic_set(&e_##N, (T)(me + 1), right);                         \
        shmem_barrier_all();                                                        \
        int left = (me + n - 1) % n;                                                \
        CHECK(e_##N == (T)(left + 1), #N " set");                                   \
        CHECK(shmem_##N##_atomic_fetch(&e_##N, right) == (T)(me + 1), #N " fetch"); \
        shmem_barrier_all();                                                        \
        T old = shmem_##N##_atomic_swap(&e_##N, (T)7, right);                       \
        CHECK(old == (T)(me + 1), #N " swap");                                      \
        shmem_barrier_all();                                                        \
        T f = 0;                                                                    \
        shmem_##N##_atomic_fetch_nbi(&f, &e_##N, right);                            \
        shmem_##N##_atomic_swap_nbi(&old, &e_##N, (T)9, right);                     \
        shmem_quiet();                                                              \
        CHECK(f == (T)7 && old == (T)7, #N " nbi fetch/swap");                      \
        CHECK(shmem_ctx_##N##_atomic_fetch(SHMEM_CTX_DEFAULT, &e_##N, right) == (T)9, #N " ctx fetch"); \
        shmem_barrier_all();                                                        \
    }

#define TEST_BIT(T, N)                                                              \
    static T b_##N;                                                                 \
    static void bit_##N(int me, int n) {                                            \
        if (me == 0) b_##N = 0;                                                     \
        shmem_barrier_all();                                                        \
        shmem_##N##_atomic_or(&b_##N, (T)1 << (me % 16), 0);                        \
        shmem_barrier_all();                                                        \
        T all = 0;                                                                  \
        for (int i = 0; i < n; i++) all |= (T)1 << (i % 16);                        \
        if (me == 0) CHECK(b_##N == all, #N " or");                                 \
        shmem_barrier_all();                                                        \
        T old = shmem_##N##_atomic_fetch_and(&b_##N, ~((T)1 << (me % 16)), 0);     \
        CHECK((old & all) == old, #N " fetch_and");                                 \
        shmem_barrier_all();                                                        \
        if (me == 0) CHECK(b_##N == 0, #N " and");                                  \
        shmem_barrier_all();                                                        \
        shmem_##N##_atomic_xor(&b_##N, (T)3, 0);                                    \
        shmem_barrier_all();                                                        \
        if (me == 0) CHECK(b_##N == (T)((n % 2) ? 3 : 0), #N " xor");              \
        shmem_barrier_all();                                                        \
        T f = 0;                                                                    \
        shmem_##N##_atomic_fetch_xor_nbi(&f, &b_##N, (T)0, 0);                      \
        shmem_##N##_atomic_fetch_or_nbi(&f, &b_##N, (T)0, 0);                       \
        shmem_##N##_atomic_fetch_and_nbi(&f, &b_##N, ~(T)0, 0);                     \
        shmem_quiet();                                                              \
        CHECK(f == (T)((n % 2) ? 3 : 0), #N " nbi bitwise");                        \
        CHECK(shmem_ctx_##N##_atomic_fetch_or(SHMEM_CTX_DEFAULT, &b_##N, 0, 0) == f, #N " ctx or"); \
        shmem_barrier_all();                                                        \
    }

SHMEMI_AMO_STD_TYPES(TEST_STD)
SHMEMI_AMO_EXT_TYPES(TEST_EXT)
SHMEMI_AMO_BIT_TYPES(TEST_BIT)
#define RUN_STD(T, N) std_##N(me, n);
#define RUN_EXT(T, N) ext_##N(me, n);
#define RUN_BIT(T, N) bit_##N(me, n);

static long old_l;
static int old_i;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    SHMEMI_AMO_STD_TYPES(RUN_STD)
    SHMEMI_AMO_EXT_TYPES(RUN_EXT)
    SHMEMI_AMO_BIT_TYPES(RUN_BIT)
    /* Deprecated names. */
    shmem_long_inc(&old_l, 0);
    shmem_long_add(&old_l, 2, 0);
    shmem_int_finc(&old_i, 0);
    shmem_int_fadd(&old_i, 1, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(old_l == 3 * n && old_i == 2 * n, "deprecated inc/add");
    shmem_barrier_all();
    if (me == 0) {
        CHECK(shmem_long_swap(&old_l, 5, 0) == 3 * n, "long_swap");
        CHECK(shmem_swap(&old_l, 6, 0) == 5, "shmem_swap");
        CHECK(shmem_long_cswap(&old_l, 6, 8, 0) == 6, "cswap");
        CHECK(shmem_long_fetch(&old_l, 0) == 8, "fetch");
        shmem_int_set(&old_i, 4, 0);
        /* A non-fetching atomic completes at the next quiet. */
        shmem_quiet();
        CHECK(old_i == 4, "set");
    }
    return done("atomics");
}
