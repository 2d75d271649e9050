/*
 * shmem-cxx.h -- the generic OpenSHMEM interfaces for C++, included by
 * shmem.h: what C11 programs get from _Generic (shmem_put(dest, source,
 * nelems, pe), shmem_put(ctx, ...), shmem_atomic_add, shmem_wait_until,
 * shmem_sum_reduce(team, ...), the deprecated shmem_fetch, shmem_add...),
 * here as overloads over the same type lists, each calling the typed
 * routine. Not meant to be included directly.
 */
#ifndef FSHMEM_SHMEM_CXX_H
#define FSHMEM_SHMEM_CXX_H

#ifndef FSHMEM_SHMEM_H
#error "include <shmem.h>, not <shmem-cxx.h>"
#endif

extern "C++" {

/* RMA, with and without a context. */
#define SHMEMI_CXX_RMA(T, N, op)                                                              \
    static inline void shmem_put(T *d, const T *s, size_t n, int pe) { shmem_##N##_put(d, s, n, pe); } \
    static inline void shmem_put(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put(c, d, s, n, pe); } \
    static inline void shmem_get(T *d, const T *s, size_t n, int pe) { shmem_##N##_get(d, s, n, pe); } \
    static inline void shmem_get(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get(c, d, s, n, pe); } \
    static inline void shmem_put_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_put_nbi(d, s, n, pe); } \
    static inline void shmem_put_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_put_nbi(c, d, s, n, pe); } \
    static inline void shmem_get_nbi(T *d, const T *s, size_t n, int pe) { shmem_##N##_get_nbi(d, s, n, pe); } \
    static inline void shmem_get_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, int pe) { shmem_ctx_##N##_get_nbi(c, d, s, n, pe); } \
    static inline void shmem_p(T *d, T v, int pe) { shmem_##N##_p(d, v, pe); }               \
    static inline void shmem_p(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_p(c, d, v, pe); } \
    static inline T shmem_g(const T *s, int pe) { return shmem_##N##_g(s, pe); }             \
    static inline T shmem_g(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_g(c, s, pe); } \
    static inline void shmem_iput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iput(d, s, dst, sst, n, pe); } \
    static inline void shmem_iput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iput(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_##N##_iget(d, s, dst, sst, n, pe); } \
    static inline void shmem_iget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n, int pe) { shmem_ctx_##N##_iget(c, d, s, dst, sst, n, pe); } \
    static inline void shmem_ibput(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmem_##N##_ibput(d, s, dst, sst, b, nb, pe); } \
    static inline void shmem_ibput(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmem_ctx_##N##_ibput(c, d, s, dst, sst, b, nb, pe); } \
    static inline void shmem_ibget(T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmem_##N##_ibget(d, s, dst, sst, b, nb, pe); } \
    static inline void shmem_ibget(shmem_ctx_t c, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t b, size_t nb, int pe) { shmem_ctx_##N##_ibget(c, d, s, dst, sst, b, nb, pe); } \
    static inline void shmem_put_signal(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int sig_op, int pe) { shmem_##N##_put_signal(d, s, n, sig, v, sig_op, pe); } \
    static inline void shmem_put_signal(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int sig_op, int pe) { shmem_ctx_##N##_put_signal(c, d, s, n, sig, v, sig_op, pe); } \
    static inline void shmem_put_signal_nbi(T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int sig_op, int pe) { shmem_##N##_put_signal_nbi(d, s, n, sig, v, sig_op, pe); } \
    static inline void shmem_put_signal_nbi(shmem_ctx_t c, T *d, const T *s, size_t n, uint64_t *sig, uint64_t v, int sig_op, int pe) { shmem_ctx_##N##_put_signal_nbi(c, d, s, n, sig, v, sig_op, pe); }
SHMEMI_GT_RMA(SHMEMI_CXX_RMA, )

/* Signals (1.6): the context forms of shmem_signal_add and _set. */
static inline void shmem_signal_add(shmem_ctx_t c, uint64_t *sig, uint64_t v, int pe) { shmem_ctx_signal_add(c, sig, v, pe); }
static inline void shmem_signal_set(shmem_ctx_t c, uint64_t *sig, uint64_t v, int pe) { shmem_ctx_signal_set(c, sig, v, pe); }

/* Atomics: the extended, standard and bitwise families. */
#define SHMEMI_CXX_AMO_EXT(T, N, op)                                                          \
    static inline T shmem_atomic_fetch(const T *s, int pe) { return shmem_##N##_atomic_fetch(s, pe); } \
    static inline T shmem_atomic_fetch(shmem_ctx_t c, const T *s, int pe) { return shmem_ctx_##N##_atomic_fetch(c, s, pe); } \
    static inline void shmem_atomic_set(T *d, T v, int pe) { shmem_##N##_atomic_set(d, v, pe); } \
    static inline void shmem_atomic_set(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_set(c, d, v, pe); } \
    static inline T shmem_atomic_swap(T *d, T v, int pe) { return shmem_##N##_atomic_swap(d, v, pe); } \
    static inline T shmem_atomic_swap(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_swap(c, d, v, pe); } \
    static inline void shmem_atomic_fetch_nbi(T *f, const T *s, int pe) { shmem_##N##_atomic_fetch_nbi(f, s, pe); } \
    static inline void shmem_atomic_fetch_nbi(shmem_ctx_t c, T *f, const T *s, int pe) { shmem_ctx_##N##_atomic_fetch_nbi(c, f, s, pe); } \
    static inline void shmem_atomic_swap_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_swap_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_swap_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_swap_nbi(c, f, d, v, pe); }
SHMEMI_GT_AMO_EXT(SHMEMI_CXX_AMO_EXT, )

#define SHMEMI_CXX_AMO_STD(T, N, op)                                                          \
    static inline T shmem_atomic_compare_swap(T *d, T cond, T v, int pe) { return shmem_##N##_atomic_compare_swap(d, cond, v, pe); } \
    static inline T shmem_atomic_compare_swap(shmem_ctx_t c, T *d, T cond, T v, int pe) { return shmem_ctx_##N##_atomic_compare_swap(c, d, cond, v, pe); } \
    static inline T shmem_atomic_fetch_inc(T *d, int pe) { return shmem_##N##_atomic_fetch_inc(d, pe); } \
    static inline T shmem_atomic_fetch_inc(shmem_ctx_t c, T *d, int pe) { return shmem_ctx_##N##_atomic_fetch_inc(c, d, pe); } \
    static inline void shmem_atomic_inc(T *d, int pe) { shmem_##N##_atomic_inc(d, pe); }   \
    static inline void shmem_atomic_inc(shmem_ctx_t c, T *d, int pe) { shmem_ctx_##N##_atomic_inc(c, d, pe); } \
    static inline T shmem_atomic_fetch_add(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_add(d, v, pe); } \
    static inline T shmem_atomic_fetch_add(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_add(c, d, v, pe); } \
    static inline void shmem_atomic_add(T *d, T v, int pe) { shmem_##N##_atomic_add(d, v, pe); } \
    static inline void shmem_atomic_add(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_add(c, d, v, pe); } \
    static inline void shmem_atomic_compare_swap_nbi(T *f, T *d, T cond, T v, int pe) { shmem_##N##_atomic_compare_swap_nbi(f, d, cond, v, pe); } \
    static inline void shmem_atomic_compare_swap_nbi(shmem_ctx_t c, T *f, T *d, T cond, T v, int pe) { shmem_ctx_##N##_atomic_compare_swap_nbi(c, f, d, cond, v, pe); } \
    static inline void shmem_atomic_fetch_inc_nbi(T *f, T *d, int pe) { shmem_##N##_atomic_fetch_inc_nbi(f, d, pe); } \
    static inline void shmem_atomic_fetch_inc_nbi(shmem_ctx_t c, T *f, T *d, int pe) { shmem_ctx_##N##_atomic_fetch_inc_nbi(c, f, d, pe); } \
    static inline void shmem_atomic_fetch_add_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_fetch_add_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_fetch_add_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_fetch_add_nbi(c, f, d, v, pe); }
SHMEMI_GT_AMO_STD(SHMEMI_CXX_AMO_STD, )

#define SHMEMI_CXX_AMO_BIT1(T, N, op)                                                         \
    static inline T shmem_atomic_fetch_##op(T *d, T v, int pe) { return shmem_##N##_atomic_fetch_##op(d, v, pe); } \
    static inline T shmem_atomic_fetch_##op(shmem_ctx_t c, T *d, T v, int pe) { return shmem_ctx_##N##_atomic_fetch_##op(c, d, v, pe); } \
    static inline void shmem_atomic_##op(T *d, T v, int pe) { shmem_##N##_atomic_##op(d, v, pe); } \
    static inline void shmem_atomic_##op(shmem_ctx_t c, T *d, T v, int pe) { shmem_ctx_##N##_atomic_##op(c, d, v, pe); } \
    static inline void shmem_atomic_fetch_##op##_nbi(T *f, T *d, T v, int pe) { shmem_##N##_atomic_fetch_##op##_nbi(f, d, v, pe); } \
    static inline void shmem_atomic_fetch_##op##_nbi(shmem_ctx_t c, T *f, T *d, T v, int pe) { shmem_ctx_##N##_atomic_fetch_##op##_nbi(c, f, d, v, pe); }
SHMEMI_GT_AMO_BIT(SHMEMI_CXX_AMO_BIT1, and)
SHMEMI_GT_AMO_BIT(SHMEMI_CXX_AMO_BIT1, or)
SHMEMI_GT_AMO_BIT(SHMEMI_CXX_AMO_BIT1, xor)

/* The deprecated atomics (shmem_swap on a long is the C routine itself). */
#define SHMEMI_CXX_OLD_EXT(T, N, op)                                                          \
    static inline T shmem_fetch(const T *s, int pe) { return shmem_##N##_fetch(s, pe); }     \
    static inline void shmem_set(T *d, T v, int pe) { shmem_##N##_set(d, v, pe); }
SHMEMI_GT_OLD_EXT(SHMEMI_CXX_OLD_EXT, )
#define SHMEMI_CXX_OLD_SWAP(T, N, op)                                                         \
    static inline T shmem_swap(T *d, T v, int pe) { return shmem_##N##_swap(d, v, pe); }
SHMEMI_CXX_OLD_SWAP(int, int, ) SHMEMI_CXX_OLD_SWAP(long long, longlong, )
SHMEMI_CXX_OLD_SWAP(unsigned int, uint, ) SHMEMI_CXX_OLD_SWAP(unsigned long, ulong, )
SHMEMI_CXX_OLD_SWAP(unsigned long long, ulonglong, ) SHMEMI_CXX_OLD_SWAP(float, float, )
SHMEMI_CXX_OLD_SWAP(double, double, )
#define SHMEMI_CXX_OLD_STD(T, N, op)                                                          \
    static inline T shmem_cswap(T *d, T cond, T v, int pe) { return shmem_##N##_cswap(d, cond, v, pe); } \
    static inline T shmem_finc(T *d, int pe) { return shmem_##N##_finc(d, pe); }             \
    static inline void shmem_inc(T *d, int pe) { shmem_##N##_inc(d, pe); }                   \
    static inline T shmem_fadd(T *d, T v, int pe) { return shmem_##N##_fadd(d, v, pe); }     \
    static inline void shmem_add(T *d, T v, int pe) { shmem_##N##_add(d, v, pe); }
SHMEMI_GT_OLD_STD(SHMEMI_CXX_OLD_STD, )

/* Point-to-point synchronization. */
#define SHMEMI_CXX_SYNC(T, N, op)                                                             \
    static inline void shmem_wait_until(T *v, int cmp, T x) { shmem_##N##_wait_until(v, cmp, x); } \
    static inline void shmem_wait_until_all(T *v, size_t n, const int *st, int cmp, T x) { shmem_##N##_wait_until_all(v, n, st, cmp, x); } \
    static inline size_t shmem_wait_until_any(T *v, size_t n, const int *st, int cmp, T x) { return shmem_##N##_wait_until_any(v, n, st, cmp, x); } \
    static inline size_t shmem_wait_until_some(T *v, size_t n, size_t *ix, const int *st, int cmp, T x) { return shmem_##N##_wait_until_some(v, n, ix, st, cmp, x); } \
    static inline void shmem_wait_until_all_vector(T *v, size_t n, const int *st, int cmp, const T *x) { shmem_##N##_wait_until_all_vector(v, n, st, cmp, x); } \
    static inline size_t shmem_wait_until_any_vector(T *v, size_t n, const int *st, int cmp, const T *x) { return shmem_##N##_wait_until_any_vector(v, n, st, cmp, x); } \
    static inline size_t shmem_wait_until_some_vector(T *v, size_t n, size_t *ix, const int *st, int cmp, const T *x) { return shmem_##N##_wait_until_some_vector(v, n, ix, st, cmp, x); } \
    static inline int shmem_test(T *v, int cmp, T x) { return shmem_##N##_test(v, cmp, x); } \
    static inline int shmem_test_all(T *v, size_t n, const int *st, int cmp, T x) { return shmem_##N##_test_all(v, n, st, cmp, x); } \
    static inline size_t shmem_test_any(T *v, size_t n, const int *st, int cmp, T x) { return shmem_##N##_test_any(v, n, st, cmp, x); } \
    static inline size_t shmem_test_some(T *v, size_t n, size_t *ix, const int *st, int cmp, T x) { return shmem_##N##_test_some(v, n, ix, st, cmp, x); } \
    static inline int shmem_test_all_vector(T *v, size_t n, const int *st, int cmp, const T *x) { return shmem_##N##_test_all_vector(v, n, st, cmp, x); } \
    static inline size_t shmem_test_any_vector(T *v, size_t n, const int *st, int cmp, const T *x) { return shmem_##N##_test_any_vector(v, n, st, cmp, x); } \
    static inline size_t shmem_test_some_vector(T *v, size_t n, size_t *ix, const int *st, int cmp, const T *x) { return shmem_##N##_test_some_vector(v, n, ix, st, cmp, x); }
SHMEMI_GT_SYNC(SHMEMI_CXX_SYNC, )

/* Team collectives; shmem_sync(team). */
#define SHMEMI_CXX_COLL(T, N, op)                                                             \
    static inline int shmem_broadcast(shmem_team_t t, T *d, const T *s, size_t n, int root) { return shmem_##N##_broadcast(t, d, s, n, root); } \
    static inline int shmem_collect(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_collect(t, d, s, n); } \
    static inline int shmem_fcollect(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_fcollect(t, d, s, n); } \
    static inline int shmem_alltoall(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_alltoall(t, d, s, n); } \
    static inline int shmem_alltoalls(shmem_team_t t, T *d, const T *s, ptrdiff_t dst, ptrdiff_t sst, size_t n) { return shmem_##N##_alltoalls(t, d, s, dst, sst, n); }
SHMEMI_GT_RMA(SHMEMI_CXX_COLL, )
#define SHMEMI_CXX_RED(T, N, op)                                                              \
    static inline int shmem_##op##_reduce(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_##op##_reduce(t, d, s, n); }
SHMEMI_GT_RED_BIT(SHMEMI_CXX_RED, and)
SHMEMI_GT_RED_BIT(SHMEMI_CXX_RED, or)
SHMEMI_GT_RED_BIT(SHMEMI_CXX_RED, xor)
SHMEMI_GT_RED_ORD(SHMEMI_CXX_RED, max)
SHMEMI_GT_RED_ORD(SHMEMI_CXX_RED, min)
SHMEMI_GT_RED_ARITH(SHMEMI_CXX_RED, sum)
SHMEMI_GT_RED_ARITH(SHMEMI_CXX_RED, prod)
#define SHMEMI_CXX_SCAN(T, N, op)                                                             \
    static inline int shmem_sum_##op(shmem_team_t t, T *d, const T *s, size_t n) { return shmem_##N##_sum_##op(t, d, s, n); }
SHMEMI_GT_RED_ARITH(SHMEMI_CXX_SCAN, inscan)
SHMEMI_GT_RED_ARITH(SHMEMI_CXX_SCAN, exscan)
static inline int shmem_sync(shmem_team_t team) { return shmem_team_sync(team); }

} /* extern "C++" */

#endif /* FSHMEM_SHMEM_CXX_H */
