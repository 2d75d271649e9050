/* The generic interfaces, selected by argument type: RMA with and without
 * a context, atomics (the deprecated names too, on every type of the
 * tables), signals with and without a context, waits, collectives and
 * reductions. Built as C11 (_Generic) and as C++ (the overloads of
 * shmem-cxx.h). */
#include "check.h"

static long l[4];
static int i4[4];
static double d[4];
static unsigned int u;
static long lsrc[2], ldst[2];
static unsigned long ul;
static unsigned long long ull;
static int vals[4];
/* The deprecated atomics' objects, one per type of their tables. */
static float of;
static double od;
static int oi;
static long ol;
static long long oll;
static uint64_t sig;

/* shmem_fetch (from a const pointer), shmem_set and shmem_swap on type T:
 * each PE works on its right neighbour's `v` and checks its own. */
#define OLD_EXT(T, v)                                                           \
    do {                                                                        \
        shmem_barrier_all();                                                    \
        shmem_set(&v, (T)(me + 1), right);                                      \
        shmem_barrier_all();                                                    \
        CHECK(v == (T)(left + 1), #T " set: %g", (double)v);                   \
        const T *cv = &v;                                                       \
        CHECK(shmem_fetch(cv, right) == (T)(me + 1), #T " fetch");              \
        shmem_barrier_all();                                                    \
        CHECK(shmem_swap(&v, (T)(me + 10), right) == (T)(me + 1), #T " swap");  \
        shmem_barrier_all();                                                    \
        CHECK(v == (T)(left + 10), #T " swapped: %g", (double)v);              \
    } while (0)

/* shmem_inc, shmem_add, shmem_finc, shmem_fadd and shmem_cswap on integer
 * type T, after OLD_EXT left `v` at left + 10. */
#define OLD_STD(T, v)                                                           \
    do {                                                                        \
        shmem_barrier_all();                                                    \
        shmem_inc(&v, right);                                                   \
        shmem_barrier_all();                                                    \
        CHECK(v == (T)(left + 11), #T " inc: %lld", (long long)v);             \
        shmem_barrier_all();                                                    \
        shmem_add(&v, (T)5, right);                                             \
        shmem_barrier_all();                                                    \
        CHECK(v == (T)(left + 16), #T " add: %lld", (long long)v);             \
        shmem_barrier_all();                                                    \
        CHECK(shmem_finc(&v, right) == (T)(me + 16), #T " finc");               \
        shmem_barrier_all();                                                    \
        CHECK(shmem_fadd(&v, (T)3, right) == (T)(me + 17), #T " fadd");         \
        shmem_barrier_all();                                                    \
        CHECK(shmem_cswap(&v, (T)(me + 20), (T)0, right) == (T)(me + 20),      \
              #T " cswap");                                                     \
        shmem_barrier_all();                                                    \
        CHECK(v == (T)0, #T " cswapped: %lld", (long long)v);                  \
    } while (0)

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n;
    long lv[2] = {me, me};
    shmem_put(l, lv, 2, right);
    int iv[2] = {me, me};
    shmem_put(SHMEM_CTX_DEFAULT, i4, iv, 2, right);
    shmem_p(&d[0], 1.5 * me, right);
    shmem_p(SHMEM_CTX_DEFAULT, &d[1], 2.5, right);
    shmem_barrier_all();
    int left = (me + n - 1) % n;
    CHECK(l[1] == left && i4[0] == left && d[0] == 1.5 * left && d[1] == 2.5, "generic put/p");
    CHECK(shmem_g(&l[0], right) == me, "generic g");
    CHECK(shmem_g(SHMEM_CTX_DEFAULT, &i4[1], right) == me, "generic ctx g");
    shmem_atomic_add(&l[2], 2L, 0);
    shmem_atomic_inc(SHMEM_CTX_DEFAULT, &i4[2], 0);
    shmem_atomic_or(&u, 1u << (me % 32), 0);
    shmem_barrier_all();
    if (me == 0) CHECK(l[2] == 2 * n && i4[2] == n, "generic atomics");
    shmem_barrier_all();
    shmem_atomic_set(&l[3], 7L, right);
    shmem_wait_until(&l[3], SHMEM_CMP_EQ, 7L);
    CHECK(shmem_test(&l[3], SHMEM_CMP_EQ, 7L), "generic test");
    lsrc[0] = me;
    shmem_sum_reduce(SHMEM_TEAM_WORLD, ldst, lsrc, 1);
    CHECK(ldst[0] == (long)n * (n - 1) / 2, "generic reduce");
    shmem_broadcast(SHMEM_TEAM_WORLD, ldst, lsrc, 1, 0);
    CHECK(ldst[0] == 0, "generic broadcast");
    /* The deprecated generic atomics, on unsigned types too. */
    shmem_barrier_all();
    shmem_inc(&ul, 0);
    shmem_add(&ull, 3ULL, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(ul == (unsigned long)n && ull == 3ULL * n, "deprecated inc/add");
    shmem_barrier_all();
    CHECK(shmem_fetch(&ul, 0) == (unsigned long)n, "deprecated fetch");
    shmem_barrier_all();
    if (me == 0) {
        shmem_set(&ul, 5UL, right);
        CHECK(shmem_cswap(&ull, 3ULL * n, 1ULL, 0) == 3ULL * n, "deprecated cswap");
        CHECK(shmem_finc(&vals[0], 0) == 0 && shmem_fadd(&vals[0], 2, 0) == 1, "finc/fadd");
        CHECK(shmem_swap(&vals[1], 9, 0) == 0 && vals[1] == 9, "deprecated swap");
    }
    /* Every type of the deprecated atomics' tables (OpenSHMEM 1.5:
     * fetch, set, swap on float, double, int, long, long long; cswap,
     * finc, inc, fadd, add on int, long, long long). */
    OLD_EXT(float, of);
    OLD_EXT(double, od);
    OLD_EXT(int, oi);
    OLD_EXT(long, ol);
    OLD_EXT(long long, oll);
    OLD_STD(int, oi);
    OLD_STD(long, ol);
    OLD_STD(long long, oll);
    /* Signals (1.6), with and without a context. */
    shmem_barrier_all();
    shmem_signal_set(&sig, 5, right);
    shmem_fence();
    shmem_signal_add(SHMEM_CTX_DEFAULT, &sig, 2, right);
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(&sig) == 7, "signal set/add: %llu", (unsigned long long)sig);
    shmem_barrier_all();
    shmem_signal_set(SHMEM_CTX_DEFAULT, &sig, 1, right);
    shmem_fence();
    shmem_signal_add(&sig, 3, right);
    shmem_barrier_all();
    CHECK(shmem_signal_fetch(&sig) == 4, "ctx signal set/add: %llu", (unsigned long long)sig);
    shmem_sync(SHMEM_TEAM_WORLD);
    static long ps[SHMEM_BARRIER_SYNC_SIZE];
    shmem_sync(0, 0, n, ps);
    return done("generic");
}
