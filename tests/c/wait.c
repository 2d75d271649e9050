/* Point-to-point synchronization: wait_until, test and their _all, _any,
 * _some and _vector forms for every type, and the deprecated wait. */
#include "check.h"

#define NW 4

#define WAIT(T, N)                                                                  \
    static T w_##N[NW];                                                             \
    static void wait_##N(int me, int n) {                                           \
        int right = (me + 1) % n;                                                   \
        size_t idx[NW];                                                             \
        int status[NW] = {0, 1, 0, 0};                                              \
        T vals[NW] = {1, 2, 3, 4};                                                  \
        CHECK(!shmem_##N##_test(&w_##N[0], SHMEM_CMP_EQ, (T)1), #N " test before"); \
        CHECK(shmem_##N##_test_any(w_##N, NW, NULL, SHMEM_CMP_NE, (T)0) == SIZE_MAX, #N " test_any none"); \
        CHECK(shmem_##N##_test_some(w_##N, NW, idx, NULL, SHMEM_CMP_NE, (T)0) == 0, #N " test_some none"); \
        shmem_barrier_all();                                                        \
        shmem_##N##_atomic_set_or_p(&w_##N[2], (T)3, right);                        \
        shmem_##N##_wait_until(&w_##N[2], SHMEM_CMP_EQ, (T)3);                      \
        CHECK(shmem_##N##_wait_until_any(w_##N, NW, status, SHMEM_CMP_GT, (T)0) == 2, #N " any"); \
        CHECK(shmem_##N##_test_any(w_##N, NW, NULL, SHMEM_CMP_GT, (T)0) == 2, #N " test_any"); \
        CHECK(shmem_##N##_wait_until_some(w_##N, NW, idx, NULL, SHMEM_CMP_GE, (T)3) == 1 && idx[0] == 2, #N " some"); \
        CHECK(shmem_##N##_test_some_vector(w_##N, NW, idx, NULL, SHMEM_CMP_EQ, vals) == 1, #N " test_some_vector"); \
        shmem_barrier_all();                                                        \
        for (int i = 0; i < NW; i++) shmem_##N##_p(&w_##N[i], (T)(i + 1), right);   \
        shmem_##N##_wait_until_all(w_##N, NW, NULL, SHMEM_CMP_GT, (T)0);            \
        shmem_##N##_wait_until_all_vector(w_##N, NW, status, SHMEM_CMP_EQ, vals);   \
        CHECK(shmem_##N##_test_all(w_##N, NW, NULL, SHMEM_CMP_LE, (T)4), #N " test_all"); \
        CHECK(shmem_##N##_test_all_vector(w_##N, NW, NULL, SHMEM_CMP_EQ, vals), #N " test_all_vector"); \
        CHECK(shmem_##N##_wait_until_any_vector(w_##N, NW, NULL, SHMEM_CMP_EQ, vals) < NW, #N " any_vector"); \
        CHECK(shmem_##N##_test_any_vector(w_##N, NW, status, SHMEM_CMP_NE, vals) == SIZE_MAX, #N " test_any_vector"); \
        CHECK(shmem_##N##_test(&w_##N[3], SHMEM_CMP_EQ, (T)4), #N " test");         \
        shmem_barrier_all();                                                        \
        shmem_##N##_p(&w_##N[0], (T)9, right);                                      \
        shmem_##N##_wait(&w_##N[0], (T)1);                                          \
        CHECK(w_##N[0] == (T)9, #N " deprecated wait");                             \
        shmem_barrier_all();                                                        \
    }

/* 16-bit words have no atomics: set them with p, the others atomically. */
#define shmem_short_atomic_set_or_p shmem_short_p
#define shmem_ushort_atomic_set_or_p shmem_ushort_p
#define SETP(T, N) static inline void shmem_##N##_atomic_set_or_p(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); }
SETP(int, int) SETP(long, long) SETP(long long, longlong) SETP(unsigned int, uint)
SETP(unsigned long, ulong) SETP(unsigned long long, ulonglong) SETP(int32_t, int32)
SETP(int64_t, int64) SETP(uint32_t, uint32) SETP(uint64_t, uint64) SETP(size_t, size)
SETP(ptrdiff_t, ptrdiff)

SHMEMI_SYNC_TYPES(WAIT)
#define RUN(T, N) wait_##N(me, n);

static long flag;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    SHMEMI_SYNC_TYPES(RUN)
    shmem_long_p(&flag, 5, (me + 1) % n);
    shmem_wait(&flag, 0);
    CHECK(flag == 5, "shmem_wait");
    return done("wait");
}
