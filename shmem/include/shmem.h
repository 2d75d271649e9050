/*
 * shmem.h -- the OpenSHMEM 1.6 C interface of fshmem.
 *
 * Every routine is implemented by libshmem (the Rust runtime of fshmem);
 * build programs with `oshcc` / `oshc++` and run them with `oshrun`.
 *
 * The typed routines are declared through per-family type tables below
 * (SHMEMI_* macros are internal). C11 programs also get the generic
 * interfaces (`shmem_put(dest, src, n, pe)`, `shmem_put(ctx, ...)`, ...)
 * built with _Generic. The header compiles as C99, C11 and C++.
 *
 * Global and static variables of the program are symmetric objects, as
 * is memory from shmem_malloc and friends.
 */
#ifndef FSHMEM_SHMEM_H
#define FSHMEM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- */
/* Library constants                                                */

#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 6
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "fshmem"
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CTX_SERIALIZED 1L
#define SHMEM_CTX_PRIVATE 2L
#define SHMEM_CTX_NOSTORE 4L

#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

#define SHMEM_TEAM_NUM_CONTEXTS 1L

/* Sessions (1.6): the option of shmem_ctx_session_start, and the mask bit
 * of shmem_ctx_session_config_t's field. */
#define SHMEM_CTX_SESSION_BATCH 1L
#define SHMEM_CTX_SESSION_TOTAL_OPS 1L

#define SHMEM_MALLOC_ATOMICS_REMOTE 1L
#define SHMEM_MALLOC_SIGNAL_REMOTE 2L

/* pSync and pWrk of the deprecated active-set collectives: accepted, never
 * read (fshmem keeps its own synchronization state per active set). */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 8
#define SHMEM_BCAST_SYNC_SIZE 8
#define SHMEM_BARRIER_SYNC_SIZE 8
#define SHMEM_REDUCE_SYNC_SIZE 8
#define SHMEM_COLLECT_SYNC_SIZE 8
#define SHMEM_ALLTOALL_SYNC_SIZE 8
#define SHMEM_ALLTOALLS_SYNC_SIZE 8
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_ALLTOALL_SYNC_SIZE SHMEM_ALLTOALL_SYNC_SIZE
#define _SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_ALLTOALLS_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

/* ---------------------------------------------------------------- */
/* Handles                                                          */

/* Opaque: the predefined handles are small constants, the others point at
 * objects of the library. */
typedef struct shmemi_team_s { int shmemi_opaque; } *shmem_team_t;
typedef struct shmemi_ctx_s { int shmemi_opaque; } *shmem_ctx_t;

typedef struct {
    int num_contexts;
} shmem_team_config_t;

typedef struct {
    size_t total_ops;
} shmem_ctx_session_config_t;

#define SHMEM_TEAM_INVALID ((shmem_team_t) 0)
#define SHMEM_TEAM_WORLD ((shmem_team_t) 1)
#define SHMEM_TEAM_SHARED ((shmem_team_t) 2)
#define SHMEM_CTX_INVALID ((shmem_ctx_t) 0)
#define SHMEM_CTX_DEFAULT ((shmem_ctx_t) 1)

/* Complex element types of the sum and product reductions. */
#if !defined(__cplusplus)
#define SHMEMI_HAVE_COMPLEX 1
#define SHMEMI_COMPLEXF float _Complex
#define SHMEMI_COMPLEXD double _Complex
#elif defined(__GNUC__)
#define SHMEMI_HAVE_COMPLEX 1
#define SHMEMI_COMPLEXF __complex__ float
#define SHMEMI_COMPLEXD __complex__ double
#endif

/* ---------------------------------------------------------------- */
/* Type tables: X(C type, TYPENAME)                                  */

/* Standard RMA types (Table 5). */
#define SHMEMI_RMA_TYPES(X)                                                   \
    X(float, float) X(double, double) X(long double, longdouble)            \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)         \
    X(long, long) X(long long, longlong) X(unsigned char, uchar)            \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
    X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16)      \
    X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                    \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64)              \
    X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Sized RMA: X(C type, SIZE). */
#define SHMEMI_SIZED_TYPES(X)                                                 \
    X(uint8_t, 8) X(uint16_t, 16) X(uint32_t, 32) X(uint64_t, 64)            \
    X(shmemi_uint128_t, 128)
typedef struct { uint64_t shmemi_lo, shmemi_hi; } shmemi_uint128_t;

/* Standard AMO types (inc, add, compare_swap). */
#define SHMEMI_AMO_STD_TYPES(X)                                               \
    X(int, int) X(long, long) X(long long, longlong) X(unsigned int, uint)  \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int32_t, int32) X(int64_t, int64) X(uint32_t, uint32)                  \
    X(uint64_t, uint64) X(size_t, size) X(ptrdiff_t, ptrdiff)

/* Extended AMO types (fetch, set, swap): the standard ones and floats. */
#define SHMEMI_AMO_EXT_TYPES(X) SHMEMI_AMO_STD_TYPES(X) X(float, float) X(double, double)

/* Bitwise AMO types. */
#define SHMEMI_AMO_BIT_TYPES(X)                                               \
    X(unsigned int, uint) X(unsigned long, ulong)                            \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64)

/* Point-to-point synchronization types. */
#define SHMEMI_SYNC_TYPES(X)                                                  \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)        \
    X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong) \
    X(unsigned long long, ulonglong) X(int32_t, int32) X(int64_t, int64)     \
    X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)                  \
    X(ptrdiff_t, ptrdiff)

/* Reduction types: bitwise (and, or, xor), ordered (max, min), arithmetic
 * (sum, prod). */
#define SHMEMI_RED_BIT_TYPES(X)                                               \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)    \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size)
#define SHMEMI_RED_ORD_TYPES(X)                                               \
    X(char, char) X(signed char, schar) X(short, short) X(int, int)         \
    X(long, long) X(long long, longlong) X(ptrdiff_t, ptrdiff)              \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint) \
    X(unsigned long, ulong) X(unsigned long long, ulonglong)                 \
    X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) X(int64_t, int64)    \
    X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)                \
    X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)   \
    X(long double, longdouble)
#ifdef SHMEMI_HAVE_COMPLEX
#define SHMEMI_RED_ARITH_TYPES(X)                                             \
    SHMEMI_RED_ORD_TYPES(X) X(SHMEMI_COMPLEXF, complexf) X(SHMEMI_COMPLEXD, complexd)
#else
#define SHMEMI_RED_ARITH_TYPES(X) SHMEMI_RED_ORD_TYPES(X)
#endif

/* Deprecated to_all types. */
#define SHMEMI_TOALL_BIT_TYPES(X) X(short, short) X(int, int) X(long, long) X(long long, longlong)
#define SHMEMI_TOALL_ORD_TYPES(X)                                             \
    SHMEMI_TOALL_BIT_TYPES(X) X(float, float) X(double, double) X(long double, longdouble)
#ifdef SHMEMI_HAVE_COMPLEX
#define SHMEMI_TOALL_ARITH_TYPES(X)                                           \
    SHMEMI_TOALL_ORD_TYPES(X) X(SHMEMI_COMPLEXF, complexf) X(SHMEMI_COMPLEXD, complexd)
#else
#define SHMEMI_TOALL_ARITH_TYPES(X) SHMEMI_TOALL_ORD_TYPES(X)
#endif

/* ---------------------------------------------------------------- */
/* The routines (shmem-api.h, shared with pshmem.h)                  */

#define SHMEMI_FN(name) name
#include "shmem-api.h"
#undef SHMEMI_FN

/* ---------------------------------------------------------------- */
/* The types of the generic interfaces (C11 _Generic and C++            */
/* overloads): the distinct C types of each table (int32_t is int, ...) */

#define SHMEMI_GT_RMA(X, op)                                                          \
    X(float, float, op) X(double, double, op) X(long double, longdouble, op)          \
    X(char, char, op) X(signed char, schar, op) X(short, short, op) X(int, int, op)   \
    X(long, long, op) X(long long, longlong, op) X(unsigned char, uchar, op)          \
    X(unsigned short, ushort, op) X(unsigned int, uint, op) X(unsigned long, ulong, op) \
    X(unsigned long long, ulonglong, op)
#define SHMEMI_GT_AMO_STD(X, op)                                                      \
    X(int, int, op) X(long, long, op) X(long long, longlong, op) X(unsigned int, uint, op) \
    X(unsigned long, ulong, op) X(unsigned long long, ulonglong, op)
#define SHMEMI_GT_AMO_EXT(X, op) SHMEMI_GT_AMO_STD(X, op) X(float, float, op) X(double, double, op)
#define SHMEMI_GT_AMO_BIT(X, op)                                                      \
    X(unsigned int, uint, op) X(unsigned long, ulong, op) X(unsigned long long, ulonglong, op) \
    X(int, int32, op) X(long, int64, op)
/* The deprecated atomics take the types of the current ones. */
#define SHMEMI_GT_OLD_STD(X, op) SHMEMI_GT_AMO_STD(X, op)
#define SHMEMI_GT_OLD_EXT(X, op) SHMEMI_GT_AMO_EXT(X, op)
#define SHMEMI_GT_SYNC(X, op)                                                         \
    X(short, short, op) X(int, int, op) X(long, long, op) X(long long, longlong, op)  \
    X(unsigned short, ushort, op) X(unsigned int, uint, op) X(unsigned long, ulong, op) \
    X(unsigned long long, ulonglong, op)
#define SHMEMI_GT_RED_BIT(X, op)                                                      \
    X(unsigned char, uchar, op) X(unsigned short, ushort, op) X(unsigned int, uint, op) \
    X(unsigned long, ulong, op) X(unsigned long long, ulonglong, op)                  \
    X(signed char, int8, op) X(short, int16, op) X(int, int32, op) X(long, int64, op)
#define SHMEMI_GT_RED_ORD(X, op)                                                      \
    X(char, char, op) X(signed char, schar, op) X(short, short, op) X(int, int, op)   \
    X(long, long, op) X(long long, longlong, op) X(unsigned char, uchar, op)          \
    X(unsigned short, ushort, op) X(unsigned int, uint, op) X(unsigned long, ulong, op) \
    X(unsigned long long, ulonglong, op) X(float, float, op) X(double, double, op)    \
    X(long double, longdouble, op)
#ifdef SHMEMI_HAVE_COMPLEX
#define SHMEMI_GT_RED_ARITH(X, op)                                                    \
    SHMEMI_GT_RED_ORD(X, op) X(SHMEMI_COMPLEXF, complexf, op) X(SHMEMI_COMPLEXD, complexd, op)
#else
#define SHMEMI_GT_RED_ARITH(X, op) SHMEMI_GT_RED_ORD(X, op)
#endif


/* ---------------------------------------------------------------- */
/* C11 generic interfaces                                           */

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus)

/* Never matches: ends association lists (which otherwise end in a comma). */
typedef struct shmemi_never_s { int shmemi_opaque; } *shmemi_never_t;
/* Selected only when the arguments match no typed routine: a link error
 * naming it. */
void shmemi_generic_no_match(void);

#define SHMEMI_A0(a, ...) a
#define SHMEMI_A1(a, b, ...) b

#define SHMEMI_AS(T, N, op) T *: shmem_##N##_##op,
#define SHMEMI_ASC(T, N, op) T *: shmem_##N##_##op, const T *: shmem_##N##_##op,
#define SHMEMI_ACTX(T, N, op) T *: shmem_ctx_##N##_##op,
#define SHMEMI_ACTXC(T, N, op) T *: shmem_ctx_##N##_##op, const T *: shmem_ctx_##N##_##op,

/* A routine with a context form: dispatch on the first argument (a
 * context, or the typed pointer), then on the second. */
#define SHMEMI_G_CTX(L, AS, ACTX, op, ...)                                            \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        shmem_ctx_t: _Generic((SHMEMI_A1(__VA_ARGS__, 0, 0)) + 0,                      \
            L(ACTX, op) default: shmemi_generic_no_match),                            \
        L(AS, op) shmemi_never_t: shmemi_generic_no_match)(__VA_ARGS__)
/* A routine without context form dispatching on argument `A` (`...C`: the
 * argument may also point to const). */
#define SHMEMI_G_ARG0(L, op, ...)                                                     \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        L(SHMEMI_AS, op) shmemi_never_t: shmemi_generic_no_match)(__VA_ARGS__)
#define SHMEMI_G_ARG0C(L, op, ...)                                                    \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        L(SHMEMI_ASC, op) shmemi_never_t: shmemi_generic_no_match)(__VA_ARGS__)
#define SHMEMI_G_ARG1(L, op, ...)                                                     \
    _Generic((SHMEMI_A1(__VA_ARGS__, 0, 0)) + 0,                                      \
        L(SHMEMI_AS, op) shmemi_never_t: shmemi_generic_no_match)(__VA_ARGS__)

/* RMA */
#define shmem_put(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, put, __VA_ARGS__)
#define shmem_get(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, get, __VA_ARGS__)
#define shmem_put_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, put_nbi, __VA_ARGS__)
#define shmem_get_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, get_nbi, __VA_ARGS__)
#define shmem_p(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, p, __VA_ARGS__)
#define shmem_g(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_ASC, SHMEMI_ACTXC, g, __VA_ARGS__)
#define shmem_iput(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, iput, __VA_ARGS__)
#define shmem_iget(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, iget, __VA_ARGS__)
#define shmem_ibput(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, ibput, __VA_ARGS__)
#define shmem_ibget(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, ibget, __VA_ARGS__)
#define shmem_put_signal(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, put_signal, __VA_ARGS__)
#define shmem_put_signal_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_RMA, SHMEMI_AS, SHMEMI_ACTX, put_signal_nbi, __VA_ARGS__)

/* Signals (1.6): shmem_signal_add(ctx, sig_addr, signal, pe) and
 * shmem_signal_set(ctx, ...) next to the routines without a context. */
#define shmem_signal_add(...)                                                         \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        shmem_ctx_t: shmem_ctx_signal_add, default: shmem_signal_add)(__VA_ARGS__)
#define shmem_signal_set(...)                                                         \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        shmem_ctx_t: shmem_ctx_signal_set, default: shmem_signal_set)(__VA_ARGS__)

/* Atomics */
#define shmem_atomic_fetch(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_EXT, SHMEMI_ASC, SHMEMI_ACTXC, atomic_fetch, __VA_ARGS__)
#define shmem_atomic_set(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_EXT, SHMEMI_AS, SHMEMI_ACTX, atomic_set, __VA_ARGS__)
#define shmem_atomic_swap(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_EXT, SHMEMI_AS, SHMEMI_ACTX, atomic_swap, __VA_ARGS__)
#define shmem_atomic_fetch_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_EXT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_nbi, __VA_ARGS__)
#define shmem_atomic_swap_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_EXT, SHMEMI_AS, SHMEMI_ACTX, atomic_swap_nbi, __VA_ARGS__)
#define shmem_atomic_compare_swap(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_compare_swap, __VA_ARGS__)
#define shmem_atomic_fetch_inc(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_inc, __VA_ARGS__)
#define shmem_atomic_inc(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_inc, __VA_ARGS__)
#define shmem_atomic_fetch_add(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_add, __VA_ARGS__)
#define shmem_atomic_add(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_add, __VA_ARGS__)
#define shmem_atomic_compare_swap_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_compare_swap_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_inc_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_inc_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_add_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_STD, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_add_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_and(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_and, __VA_ARGS__)
#define shmem_atomic_and(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_and, __VA_ARGS__)
#define shmem_atomic_fetch_or(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_or, __VA_ARGS__)
#define shmem_atomic_or(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_or, __VA_ARGS__)
#define shmem_atomic_fetch_xor(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_xor, __VA_ARGS__)
#define shmem_atomic_xor(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_xor, __VA_ARGS__)
#define shmem_atomic_fetch_and_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_and_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_or_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_or_nbi, __VA_ARGS__)
#define shmem_atomic_fetch_xor_nbi(...) SHMEMI_G_CTX(SHMEMI_GT_AMO_BIT, SHMEMI_AS, SHMEMI_ACTX, atomic_fetch_xor_nbi, __VA_ARGS__)

/* Deprecated atomics (shmem_fetch reads a const source, as its C11
 * synopsis in 1.5 has it) */
#define shmem_fetch(...) SHMEMI_G_ARG0C(SHMEMI_GT_OLD_EXT, fetch, __VA_ARGS__)
#define shmem_set(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_EXT, set, __VA_ARGS__)
#define shmem_swap(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_EXT, swap, __VA_ARGS__)
#define shmem_cswap(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_STD, cswap, __VA_ARGS__)
#define shmem_finc(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_STD, finc, __VA_ARGS__)
#define shmem_inc(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_STD, inc, __VA_ARGS__)
#define shmem_fadd(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_STD, fadd, __VA_ARGS__)
#define shmem_add(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_STD, add, __VA_ARGS__)

/* Point-to-point synchronization */
#define shmem_wait_until(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until, __VA_ARGS__)
#define shmem_wait_until_all(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_all, __VA_ARGS__)
#define shmem_wait_until_any(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_any, __VA_ARGS__)
#define shmem_wait_until_some(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_some, __VA_ARGS__)
#define shmem_wait_until_all_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_all_vector, __VA_ARGS__)
#define shmem_wait_until_any_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_any_vector, __VA_ARGS__)
#define shmem_wait_until_some_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, wait_until_some_vector, __VA_ARGS__)
#define shmem_test(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test, __VA_ARGS__)
#define shmem_test_all(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_all, __VA_ARGS__)
#define shmem_test_any(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_any, __VA_ARGS__)
#define shmem_test_some(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_some, __VA_ARGS__)
#define shmem_test_all_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_all_vector, __VA_ARGS__)
#define shmem_test_any_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_any_vector, __VA_ARGS__)
#define shmem_test_some_vector(...) SHMEMI_G_ARG0(SHMEMI_GT_SYNC, test_some_vector, __VA_ARGS__)

/* Collectives */
#define shmem_broadcast(...) SHMEMI_G_ARG1(SHMEMI_GT_RMA, broadcast, __VA_ARGS__)
#define shmem_collect(...) SHMEMI_G_ARG1(SHMEMI_GT_RMA, collect, __VA_ARGS__)
#define shmem_fcollect(...) SHMEMI_G_ARG1(SHMEMI_GT_RMA, fcollect, __VA_ARGS__)
#define shmem_alltoall(...) SHMEMI_G_ARG1(SHMEMI_GT_RMA, alltoall, __VA_ARGS__)
#define shmem_alltoalls(...) SHMEMI_G_ARG1(SHMEMI_GT_RMA, alltoalls, __VA_ARGS__)
#define shmem_and_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_BIT, and_reduce, __VA_ARGS__)
#define shmem_or_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_BIT, or_reduce, __VA_ARGS__)
#define shmem_xor_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_BIT, xor_reduce, __VA_ARGS__)
#define shmem_max_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ORD, max_reduce, __VA_ARGS__)
#define shmem_min_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ORD, min_reduce, __VA_ARGS__)
#define shmem_sum_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ARITH, sum_reduce, __VA_ARGS__)
#define shmem_prod_reduce(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ARITH, prod_reduce, __VA_ARGS__)
#define shmem_sum_inscan(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ARITH, sum_inscan, __VA_ARGS__)
#define shmem_sum_exscan(...) SHMEMI_G_ARG1(SHMEMI_GT_RED_ARITH, sum_exscan, __VA_ARGS__)

/* shmem_sync(team) (1.5) and shmem_sync(PE_start, logPE_stride, PE_size,
 * pSync) (deprecated) */
#define shmem_sync(...)                                                               \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)),                                             \
        shmem_team_t: shmem_team_sync, default: shmem_sync)(__VA_ARGS__)

#endif /* C11 */

#ifdef __cplusplus
}
#include "shmem-cxx.h"
#endif

#endif /* FSHMEM_SHMEM_H */
