/*
 * shmem.h -- the OpenSHMEM 1.5 C interface of fshmem.
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
#define SHMEM_MINOR_VERSION 5
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
/* Setup, exit and query                                            */

void shmem_init(void);
int shmem_init_thread(int requested, int *provided);
void shmem_query_thread(int *provided);
void shmem_finalize(void);
void shmem_global_exit(int status);
int shmem_my_pe(void);
int shmem_n_pes(void);
int shmem_pe_accessible(int pe);
int shmem_addr_accessible(const void *addr, int pe);
void *shmem_ptr(const void *dest, int pe);
void *shmem_team_ptr(shmem_team_t team, const void *dest, int pe);
void shmem_info_get_version(int *major, int *minor);
void shmem_info_get_name(char *name);
void shmem_pcontrol(const int level, ...);

/* Deprecated names. */
void start_pes(int npes);
int _my_pe(void);
int _num_pes(void);
void shmem_clear_cache_inv(void);
void shmem_set_cache_inv(void);
void shmem_clear_cache_line_inv(void *dest);
void shmem_set_cache_line_inv(void *dest);
void shmem_udcflush(void);
void shmem_udcflush_line(void *dest);

/* ---------------------------------------------------------------- */
/* Memory management                                                */

void *shmem_malloc(size_t size);
void *shmem_malloc_with_hints(size_t size, long hints);
void *shmem_calloc(size_t count, size_t size);
void *shmem_align(size_t alignment, size_t size);
void *shmem_realloc(void *ptr, size_t size);
void shmem_free(void *ptr);
void *shmalloc(size_t size);
void shfree(void *ptr);
void *shrealloc(void *ptr, size_t size);
void *shmemalign(size_t alignment, size_t size);

/* ---------------------------------------------------------------- */
/* Teams and contexts                                               */

int shmem_team_my_pe(shmem_team_t team);
int shmem_team_n_pes(shmem_team_t team);
int shmem_team_get_config(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void shmem_team_destroy(shmem_team_t team);
int shmem_team_sync(shmem_team_t team);

int shmem_ctx_create(long options, shmem_ctx_t *ctx);
int shmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx);
void shmem_ctx_destroy(shmem_ctx_t ctx);
int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team);

/* ---------------------------------------------------------------- */
/* Ordering and completion                                          */

void shmem_fence(void);
void shmem_quiet(void);
void shmem_ctx_fence(shmem_ctx_t ctx);
void shmem_ctx_quiet(shmem_ctx_t ctx);
void shmem_pe_quiet(const int *target_pes, size_t npes);
void shmem_ctx_pe_quiet(shmem_ctx_t ctx, const int *target_pes, size_t npes);

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
/* RMA                                                              */

#define SHMEMI_DECL_RMA(T, N)                                                         \
    void shmem_##N##_put(T *dest, const T *source, size_t nelems, int pe);            \
    void shmem_ctx_##N##_put(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_get(T *dest, const T *source, size_t nelems, int pe);            \
    void shmem_ctx_##N##_get(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe);        \
    void shmem_ctx_##N##_put_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe);        \
    void shmem_ctx_##N##_get_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void shmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_##N##_iget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_##N##_ibput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_ctx_##N##_ibput(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_##N##_ibget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_ctx_##N##_ibget(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_##N##_put_signal(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_##N##_put_signal(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_##N##_put_signal_nbi(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_##N##_put_signal_nbi(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_RMA_TYPES(SHMEMI_DECL_RMA)

#define SHMEMI_DECL_PG(T, N)                                                          \
    void shmem_##N##_p(T *dest, T value, int pe);                                     \
    void shmem_ctx_##N##_p(shmem_ctx_t ctx, T *dest, T value, int pe);                \
    T shmem_##N##_g(const T *source, int pe);                                         \
    T shmem_ctx_##N##_g(shmem_ctx_t ctx, const T *source, int pe);
#define SHMEMI_PG_TYPES(X)                                                            \
    X(float, float) X(double, double) X(char, char) X(signed char, schar)            \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                 \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)          \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)         \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)          \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)      \
    X(ptrdiff_t, ptrdiff)
SHMEMI_PG_TYPES(SHMEMI_DECL_PG)

void shmem_putmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);

/* long double travels by value in x87 registers, which the library's ABI
 * does not use: these four are defined here over putmem/getmem. */
static inline void shmem_longdouble_p(long double *dest, long double value, int pe) {
    shmem_putmem(dest, &value, sizeof value, pe);
}
static inline void shmem_ctx_longdouble_p(shmem_ctx_t ctx, long double *dest, long double value, int pe) {
    shmem_ctx_putmem(ctx, dest, &value, sizeof value, pe);
}
static inline long double shmem_longdouble_g(const long double *source, int pe) {
    long double v;
    shmem_getmem(&v, source, sizeof v, pe);
    return v;
}
static inline long double shmem_ctx_longdouble_g(shmem_ctx_t ctx, const long double *source, int pe) {
    long double v;
    shmem_ctx_getmem(ctx, &v, source, sizeof v, pe);
    return v;
}

#define SHMEMI_DECL_SIZED(T, S)                                                       \
    void shmem_put##S(void *dest, const void *source, size_t nelems, int pe);         \
    void shmem_ctx_put##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##S(void *dest, const void *source, size_t nelems, int pe);         \
    void shmem_ctx_get##S(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_put##S##_nbi(void *dest, const void *source, size_t nelems, int pe);   \
    void shmem_ctx_put##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_get##S##_nbi(void *dest, const void *source, size_t nelems, int pe);   \
    void shmem_ctx_get##S##_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void shmem_iput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iput##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_iget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ctx_iget##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void shmem_ibput##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_ctx_ibput##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_ibget##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_ctx_ibget##S(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void shmem_put##S##_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_put##S##_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_put##S##_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void shmem_ctx_put##S##_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_SIZED_TYPES(SHMEMI_DECL_SIZED)

void shmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_putmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe);
void shmem_ctx_getmem_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void shmem_putmem_signal(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_putmem_signal_nbi(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void shmem_ctx_putmem_signal_nbi(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

uint64_t shmem_signal_fetch(const uint64_t *sig_addr);
uint64_t shmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value);
void shmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe);
void shmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);

/* ---------------------------------------------------------------- */
/* Atomics                                                          */

#define SHMEMI_DECL_AMO_EXT(T, N)                                                     \
    T shmem_##N##_atomic_fetch(const T *source, int pe);                              \
    T shmem_ctx_##N##_atomic_fetch(shmem_ctx_t ctx, const T *source, int pe);         \
    void shmem_##N##_atomic_set(T *dest, T value, int pe);                            \
    void shmem_ctx_##N##_atomic_set(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    T shmem_##N##_atomic_swap(T *dest, T value, int pe);                              \
    T shmem_ctx_##N##_atomic_swap(shmem_ctx_t ctx, T *dest, T value, int pe);         \
    void shmem_##N##_atomic_fetch_nbi(T *fetch, const T *source, int pe);             \
    void shmem_ctx_##N##_atomic_fetch_nbi(shmem_ctx_t ctx, T *fetch, const T *source, int pe); \
    void shmem_##N##_atomic_swap_nbi(T *fetch, T *dest, T value, int pe);             \
    void shmem_ctx_##N##_atomic_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEMI_AMO_EXT_TYPES(SHMEMI_DECL_AMO_EXT)

#define SHMEMI_DECL_AMO_STD(T, N)                                                     \
    T shmem_##N##_atomic_fetch_inc(T *dest, int pe);                                  \
    T shmem_ctx_##N##_atomic_fetch_inc(shmem_ctx_t ctx, T *dest, int pe);             \
    void shmem_##N##_atomic_inc(T *dest, int pe);                                     \
    void shmem_ctx_##N##_atomic_inc(shmem_ctx_t ctx, T *dest, int pe);                \
    T shmem_##N##_atomic_fetch_add(T *dest, T value, int pe);                         \
    T shmem_ctx_##N##_atomic_fetch_add(shmem_ctx_t ctx, T *dest, T value, int pe);    \
    void shmem_##N##_atomic_add(T *dest, T value, int pe);                            \
    void shmem_ctx_##N##_atomic_add(shmem_ctx_t ctx, T *dest, T value, int pe);       \
    T shmem_##N##_atomic_compare_swap(T *dest, T cond, T value, int pe);              \
    T shmem_ctx_##N##_atomic_compare_swap(shmem_ctx_t ctx, T *dest, T cond, T value, int pe); \
    void shmem_##N##_atomic_fetch_inc_nbi(T *fetch, T *dest, int pe);                 \
    void shmem_ctx_##N##_atomic_fetch_inc_nbi(shmem_ctx_t ctx, T *fetch, T *dest, int pe); \
    void shmem_##N##_atomic_fetch_add_nbi(T *fetch, T *dest, T value, int pe);        \
    void shmem_ctx_##N##_atomic_fetch_add_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe); \
    void shmem_##N##_atomic_compare_swap_nbi(T *fetch, T *dest, T cond, T value, int pe); \
    void shmem_ctx_##N##_atomic_compare_swap_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);
SHMEMI_AMO_STD_TYPES(SHMEMI_DECL_AMO_STD)

#define SHMEMI_DECL_AMO_BIT1(T, N, OP)                                                \
    T shmem_##N##_atomic_fetch_##OP(T *dest, T value, int pe);                        \
    T shmem_ctx_##N##_atomic_fetch_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);   \
    void shmem_##N##_atomic_##OP(T *dest, T value, int pe);                           \
    void shmem_ctx_##N##_atomic_##OP(shmem_ctx_t ctx, T *dest, T value, int pe);      \
    void shmem_##N##_atomic_fetch_##OP##_nbi(T *fetch, T *dest, T value, int pe);     \
    void shmem_ctx_##N##_atomic_fetch_##OP##_nbi(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_BIT(T, N)                                                     \
    SHMEMI_DECL_AMO_BIT1(T, N, and) SHMEMI_DECL_AMO_BIT1(T, N, or) SHMEMI_DECL_AMO_BIT1(T, N, xor)
SHMEMI_AMO_BIT_TYPES(SHMEMI_DECL_AMO_BIT)

/* Deprecated atomics. */
#define SHMEMI_DECL_AMO_OLD_EXT(T, N)                                                 \
    T shmem_##N##_fetch(const T *source, int pe);                                     \
    void shmem_##N##_set(T *dest, T value, int pe);                                   \
    T shmem_##N##_swap(T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_OLD_STD(T, N)                                                 \
    T shmem_##N##_cswap(T *dest, T cond, T value, int pe);                            \
    T shmem_##N##_finc(T *dest, int pe);                                              \
    void shmem_##N##_inc(T *dest, int pe);                                            \
    T shmem_##N##_fadd(T *dest, T value, int pe);                                     \
    void shmem_##N##_add(T *dest, T value, int pe);
#define SHMEMI_OLD_STD_TYPES(X) X(int, int) X(long, long) X(long long, longlong)
SHMEMI_OLD_STD_TYPES(SHMEMI_DECL_AMO_OLD_EXT)
SHMEMI_DECL_AMO_OLD_EXT(float, float)
SHMEMI_DECL_AMO_OLD_EXT(double, double)
SHMEMI_OLD_STD_TYPES(SHMEMI_DECL_AMO_OLD_STD)
long shmem_swap(long *dest, long value, int pe);

/* ---------------------------------------------------------------- */
/* Point-to-point synchronization                                   */

#define SHMEMI_DECL_SYNC(T, N)                                                        \
    void shmem_##N##_wait_until(T *ivar, int cmp, T cmp_value);                       \
    void shmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
    void shmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *cmp_values); \
    int shmem_##N##_test(T *ivar, int cmp, T cmp_value);                              \
    int shmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t shmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
    int shmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp, T *cmp_values); \
    size_t shmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T *cmp_values); \
    void shmem_##N##_wait(T *ivar, T cmp_value);
SHMEMI_SYNC_TYPES(SHMEMI_DECL_SYNC)
void shmem_wait(long *ivar, long cmp_value);

/* Locks. */
void shmem_set_lock(long *lock);
void shmem_clear_lock(long *lock);
int shmem_test_lock(long *lock);

/* ---------------------------------------------------------------- */
/* Collectives                                                      */

void shmem_sync_all(void);
void shmem_barrier_all(void);
void shmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync);
void shmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync);

#define SHMEMI_DECL_COLL(T, N)                                                        \
    int shmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int shmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int shmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
SHMEMI_RMA_TYPES(SHMEMI_DECL_COLL)
int shmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int shmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems);
int shmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

#define SHMEMI_DECL_ACTIVE(S)                                                         \
    void shmem_broadcast##S(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_collect##S(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_fcollect##S(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_alltoall##S(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void shmem_alltoalls##S(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);
SHMEMI_DECL_ACTIVE(32)
SHMEMI_DECL_ACTIVE(64)

#define SHMEMI_DECL_REDUCE(T, N, OP)                                                  \
    int shmem_##N##_##OP##_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMI_DECL_RED_AND(T, N) SHMEMI_DECL_REDUCE(T, N, and)
#define SHMEMI_DECL_RED_OR(T, N) SHMEMI_DECL_REDUCE(T, N, or)
#define SHMEMI_DECL_RED_XOR(T, N) SHMEMI_DECL_REDUCE(T, N, xor)
#define SHMEMI_DECL_RED_MAX(T, N) SHMEMI_DECL_REDUCE(T, N, max)
#define SHMEMI_DECL_RED_MIN(T, N) SHMEMI_DECL_REDUCE(T, N, min)
#define SHMEMI_DECL_RED_SUM(T, N) SHMEMI_DECL_REDUCE(T, N, sum)                       \
    int shmem_##N##_sum_inscan(shmem_team_t team, T *dest, const T *source, size_t nreduce); \
    int shmem_##N##_sum_exscan(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMI_DECL_RED_PROD(T, N) SHMEMI_DECL_REDUCE(T, N, prod)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_AND)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_OR)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_XOR)
SHMEMI_RED_ORD_TYPES(SHMEMI_DECL_RED_MAX)
SHMEMI_RED_ORD_TYPES(SHMEMI_DECL_RED_MIN)
SHMEMI_RED_ARITH_TYPES(SHMEMI_DECL_RED_SUM)
SHMEMI_RED_ARITH_TYPES(SHMEMI_DECL_RED_PROD)

#define SHMEMI_DECL_TOALL(T, N, OP)                                                   \
    void shmem_##N##_##OP##_to_all(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, int PE_size, T *pWrk, long *pSync);
#define SHMEMI_DECL_TOALL_AND(T, N) SHMEMI_DECL_TOALL(T, N, and)
#define SHMEMI_DECL_TOALL_OR(T, N) SHMEMI_DECL_TOALL(T, N, or)
#define SHMEMI_DECL_TOALL_XOR(T, N) SHMEMI_DECL_TOALL(T, N, xor)
#define SHMEMI_DECL_TOALL_MAX(T, N) SHMEMI_DECL_TOALL(T, N, max)
#define SHMEMI_DECL_TOALL_MIN(T, N) SHMEMI_DECL_TOALL(T, N, min)
#define SHMEMI_DECL_TOALL_SUM(T, N) SHMEMI_DECL_TOALL(T, N, sum)
#define SHMEMI_DECL_TOALL_PROD(T, N) SHMEMI_DECL_TOALL(T, N, prod)
SHMEMI_TOALL_BIT_TYPES(SHMEMI_DECL_TOALL_AND)
SHMEMI_TOALL_BIT_TYPES(SHMEMI_DECL_TOALL_OR)
SHMEMI_TOALL_BIT_TYPES(SHMEMI_DECL_TOALL_XOR)
SHMEMI_TOALL_ORD_TYPES(SHMEMI_DECL_TOALL_MAX)
SHMEMI_TOALL_ORD_TYPES(SHMEMI_DECL_TOALL_MIN)
SHMEMI_TOALL_ARITH_TYPES(SHMEMI_DECL_TOALL_SUM)
SHMEMI_TOALL_ARITH_TYPES(SHMEMI_DECL_TOALL_PROD)

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

/* Association lists of the generic types: T*: shmem_<N>_<op>. */
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
#define SHMEMI_GT_OLD_STD(X, op) X(int, int, op) X(long, long, op) X(long long, longlong, op)
#define SHMEMI_GT_OLD_EXT(X, op) SHMEMI_GT_OLD_STD(X, op) X(float, float, op) X(double, double, op)
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
#define SHMEMI_GT_RED_ARITH(X, op)                                                    \
    SHMEMI_GT_RED_ORD(X, op) X(float _Complex, complexf, op) X(double _Complex, complexd, op)

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
/* A routine without context form dispatching on argument `A`. */
#define SHMEMI_G_ARG0(L, op, ...)                                                     \
    _Generic((SHMEMI_A0(__VA_ARGS__, 0)) + 0,                                         \
        L(SHMEMI_AS, op) shmemi_never_t: shmemi_generic_no_match)(__VA_ARGS__)
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

/* Deprecated atomics */
#define shmem_fetch(...) SHMEMI_G_ARG0(SHMEMI_GT_OLD_EXT, fetch, __VA_ARGS__)
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
#endif

#endif /* FSHMEM_SHMEM_H */
