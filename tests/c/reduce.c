/* Reductions: every type and operator on teams (shmem_<T>_<op>_reduce),
 * the deprecated active-set to_all forms, in place, and the 1.6 scans. */
#include "check.h"
#include <complex.h>

#define NR 5
static long psync[SHMEM_REDUCE_SYNC_SIZE];

#define ORD(T, N)                                                                   \
    static T ord_s_##N[NR], ord_d_##N[NR];                                          \
    static void ord_##N(int me, int n) {                                            \
        for (int i = 0; i < NR; i++) ord_s_##N[i] = (T)(me + i);                    \
        shmem_barrier_all();                                                        \
        shmem_##N##_max_reduce(SHMEM_TEAM_WORLD, ord_d_##N, ord_s_##N, NR);         \
        for (int i = 0; i < NR; i++) CHECK(ord_d_##N[i] == (T)(n - 1 + i), #N " max %d", i); \
        shmem_##N##_min_reduce(SHMEM_TEAM_WORLD, ord_d_##N, ord_s_##N, NR);         \
        for (int i = 0; i < NR; i++) CHECK(ord_d_##N[i] == (T)i, #N " min %d", i);  \
        shmem_##N##_sum_reduce(SHMEM_TEAM_WORLD, ord_d_##N, ord_s_##N, NR);         \
        for (int i = 0; i < NR; i++)                                                \
            CHECK(ord_d_##N[i] == (T)(n * (n - 1) / 2 + n * i), #N " sum %d", i);   \
        for (int i = 0; i < NR; i++) ord_s_##N[i] = (T)((me == i % n) ? 2 : 1);     \
        shmem_##N##_prod_reduce(SHMEM_TEAM_WORLD, ord_d_##N, ord_s_##N, NR);        \
        for (int i = 0; i < NR; i++) CHECK(ord_d_##N[i] == (T)2, #N " prod %d", i); \
        shmem_barrier_all();                                                        \
    }

#define BIT(T, N)                                                                   \
    static T bit_s_##N[NR], bit_d_##N[NR];                                          \
    static void bit_##N(int me, int n) {                                            \
        for (int i = 0; i < NR; i++) bit_s_##N[i] = (T)(1 << (me % 7));             \
        T all = 0;                                                                  \
        for (int p = 0; p < n; p++) all |= (T)(1 << (p % 7));                       \
        shmem_barrier_all();                                                        \
        shmem_##N##_or_reduce(SHMEM_TEAM_WORLD, bit_d_##N, bit_s_##N, NR);          \
        CHECK(bit_d_##N[NR - 1] == all, #N " or");                                  \
        shmem_##N##_and_reduce(SHMEM_TEAM_WORLD, bit_d_##N, bit_s_##N, NR);         \
        CHECK(bit_d_##N[0] == (T)(n == 1 ? 1 : 0), #N " and");                      \
        shmem_##N##_xor_reduce(SHMEM_TEAM_WORLD, bit_d_##N, bit_s_##N, NR);         \
        T x = 0;                                                                    \
        for (int p = 0; p < n; p++) x ^= (T)(1 << (p % 7));                         \
        CHECK(bit_d_##N[2] == x, #N " xor");                                        \
        shmem_barrier_all();                                                        \
    }

#define TOALL(T, N)                                                                 \
    static T ta_s_##N[NR], ta_d_##N[NR], ta_w_##N[NR + SHMEM_REDUCE_MIN_WRKDATA_SIZE]; \
    static void toall_##N(int me, int n) {                                          \
        for (int i = 0; i < NR; i++) ta_s_##N[i] = (T)(me + 1);                     \
        shmem_barrier_all();                                                        \
        shmem_##N##_sum_to_all(ta_d_##N, ta_s_##N, NR, 0, 0, n, ta_w_##N, psync);   \
        CHECK(ta_d_##N[0] == (T)(n * (n + 1) / 2), #N " sum_to_all");              \
        shmem_##N##_max_to_all(ta_d_##N, ta_s_##N, NR, 0, 0, n, ta_w_##N, psync);   \
        CHECK(ta_d_##N[1] == (T)n, #N " max_to_all");                               \
        shmem_##N##_min_to_all(ta_s_##N, ta_s_##N, NR, 0, 0, n, ta_w_##N, psync);   \
        CHECK(ta_s_##N[4] == (T)1, #N " min_to_all in place");                      \
        shmem_##N##_prod_to_all(ta_d_##N, ta_s_##N, NR, 0, 0, n, ta_w_##N, psync);  \
        CHECK(ta_d_##N[2] == (T)1, #N " prod_to_all");                              \
        shmem_barrier_all();                                                        \
    }

#define TOALL_BIT(T, N)                                                             \
    static void toallbit_##N(int me, int n) {                                       \
        static T s[NR], d[NR];                                                      \
        static T wrk[NR];                                                           \
        for (int i = 0; i < NR; i++) s[i] = (T)(me == 0 ? 3 : 1);                   \
        shmem_barrier_all();                                                        \
        shmem_##N##_and_to_all(d, s, NR, 0, 0, n, wrk, psync);                      \
        CHECK(d[0] == (T)(n == 1 ? 3 : 1), #N " and_to_all");                       \
        shmem_##N##_or_to_all(d, s, NR, 0, 0, n, wrk, psync);                       \
        CHECK(d[0] == (T)(n == 1 ? 3 : 3), #N " or_to_all");                        \
        shmem_##N##_xor_to_all(d, s, NR, 0, 0, n, wrk, psync);                      \
        T x = 0;                                                                    \
        for (int p = 0; p < n; p++) x ^= (T)(p == 0 ? 3 : 1);                       \
        CHECK(d[0] == x, #N " xor_to_all");                                         \
        shmem_barrier_all();                                                        \
    }

SHMEMI_RED_ORD_TYPES(ORD)
SHMEMI_RED_BIT_TYPES(BIT)
SHMEMI_TOALL_ORD_TYPES(TOALL)
SHMEMI_TOALL_BIT_TYPES(TOALL_BIT)
#define RUN_ORD(T, N) ord_##N(me, n);
#define RUN_BIT(T, N) bit_##N(me, n);
#define RUN_TOALL(T, N) toall_##N(me, n);
#define RUN_TOALL_BIT(T, N) toallbit_##N(me, n);

static double _Complex zs[2], zd[2];
static long scan_s[3], scan_d[3];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++) psync[i] = SHMEM_SYNC_VALUE;
    SHMEMI_RED_ORD_TYPES(RUN_ORD)
    SHMEMI_RED_BIT_TYPES(RUN_BIT)
    SHMEMI_TOALL_ORD_TYPES(RUN_TOALL)
    SHMEMI_TOALL_BIT_TYPES(RUN_TOALL_BIT)
    zs[0] = me + 1.0 * I;
    zs[1] = 1.0;
    shmem_barrier_all();
    shmem_complexd_sum_reduce(SHMEM_TEAM_WORLD, zd, zs, 2);
    CHECK(creal(zd[0]) == n * (n - 1) / 2 && cimag(zd[0]) == n, "complexd sum");
    shmem_complexd_prod_reduce(SHMEM_TEAM_WORLD, zd, zs, 2);
    CHECK(creal(zd[1]) == 1.0, "complexd prod");
    for (int i = 0; i < 3; i++) scan_s[i] = me + i;
    shmem_barrier_all();
    shmem_long_sum_inscan(SHMEM_TEAM_WORLD, scan_d, scan_s, 3);
    CHECK(scan_d[0] == me * (me + 1) / 2, "inscan %ld", scan_d[0]);
    shmem_long_sum_exscan(SHMEM_TEAM_WORLD, scan_d, scan_s, 3);
    CHECK(scan_d[1] == me * (me - 1) / 2 + me, "exscan %ld", scan_d[1]);
    /* Active set of the odd PEs. */
    if (me % 2 == 1 && n > 2) {
        static int os[2], od[2];
        static int ow[8];
        os[0] = me;
        shmem_int_sum_to_all(od, os, 1, 1, 1, n / 2, ow, psync);
        int want = 0;
        for (int p = 1; p < n; p += 2) want += p;
        CHECK(od[0] == want, "odd sum_to_all %d", od[0]);
    }
    return done("reduce");
}
