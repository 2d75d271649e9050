/* The generic interfaces, selected by argument type: RMA with and without
 * a context, atomics (the deprecated names too, on every type of the
 * tables), waits, collectives and reductions. Built as C11 (_Generic) and
 * as C++ (the overloads of shmem-cxx.h). */
#include "check.h"

static long l[4];
static int i4[4];
static double d[4];
static unsigned int u;
static long lsrc[2], ldst[2];
static unsigned long ul;
static unsigned long long ull;
static int vals[4];

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
    shmem_sync(SHMEM_TEAM_WORLD);
    static long ps[SHMEM_BARRIER_SYNC_SIZE];
    shmem_sync(0, 0, n, ps);
    return done("generic");
}
