/*
 * shmem-api.h -- the prototypes of every routine of fshmem's OpenSHMEM C
 * interface, written as SHMEMI_FN(name). shmem.h includes it with the
 * standard names; pshmem.h includes it again with the profiling names
 * (pshmem_put, pstart_pes...), which libshmem exports as the strong
 * symbols behind the standard names. Not meant to be included directly;
 * no include guard, on purpose.
 */
#ifndef SHMEMI_FN
#error "include <shmem.h> or <pshmem.h>, not <shmem-api.h>"
#endif

/* ---------------------------------------------------------------- */
/* Setup, exit and query                                            */

void SHMEMI_FN(shmem_init)(void);
int SHMEMI_FN(shmem_init_thread)(int requested, int *provided);
void SHMEMI_FN(shmem_query_thread)(int *provided);
void SHMEMI_FN(shmem_finalize)(void);
void SHMEMI_FN(shmem_query_initialized)(int *initialized);
void SHMEMI_FN(shmem_global_exit)(int status);
int SHMEMI_FN(shmem_my_pe)(void);
int SHMEMI_FN(shmem_n_pes)(void);
int SHMEMI_FN(shmem_pe_accessible)(int pe);
int SHMEMI_FN(shmem_addr_accessible)(const void *addr, int pe);
void *SHMEMI_FN(shmem_ptr)(const void *dest, int pe);
void *SHMEMI_FN(shmem_team_ptr)(shmem_team_t team, const void *dest, int pe);
void SHMEMI_FN(shmem_info_get_version)(int *major, int *minor);
void SHMEMI_FN(shmem_info_get_name)(char *name);
void SHMEMI_FN(shmem_pcontrol)(const int level, ...);

/* Deprecated names. */
void SHMEMI_FN(start_pes)(int npes);
int SHMEMI_FN(_my_pe)(void);
int SHMEMI_FN(_num_pes)(void);
void SHMEMI_FN(shmem_clear_cache_inv)(void);
void SHMEMI_FN(shmem_set_cache_inv)(void);
void SHMEMI_FN(shmem_clear_cache_line_inv)(void *dest);
void SHMEMI_FN(shmem_set_cache_line_inv)(void *dest);
void SHMEMI_FN(shmem_udcflush)(void);
void SHMEMI_FN(shmem_udcflush_line)(void *dest);

/* ---------------------------------------------------------------- */
/* Memory management                                                */

void *SHMEMI_FN(shmem_malloc)(size_t size);
void *SHMEMI_FN(shmem_malloc_with_hints)(size_t size, long hints);
void *SHMEMI_FN(shmem_calloc)(size_t count, size_t size);
void *SHMEMI_FN(shmem_align)(size_t alignment, size_t size);
void *SHMEMI_FN(shmem_realloc)(void *ptr, size_t size);
void SHMEMI_FN(shmem_free)(void *ptr);
void *SHMEMI_FN(shmalloc)(size_t size);
void SHMEMI_FN(shfree)(void *ptr);
void *SHMEMI_FN(shrealloc)(void *ptr, size_t size);
void *SHMEMI_FN(shmemalign)(size_t alignment, size_t size);

/* ---------------------------------------------------------------- */
/* Teams and contexts                                               */

int SHMEMI_FN(shmem_team_my_pe)(shmem_team_t team);
int SHMEMI_FN(shmem_team_n_pes)(shmem_team_t team);
int SHMEMI_FN(shmem_team_get_config)(shmem_team_t team, long config_mask, shmem_team_config_t *config);
int SHMEMI_FN(shmem_team_translate_pe)(shmem_team_t src_team, int src_pe, shmem_team_t dest_team);
int SHMEMI_FN(shmem_team_split_strided)(shmem_team_t parent_team, int start, int stride, int size,
                             const shmem_team_config_t *config, long config_mask,
                             shmem_team_t *new_team);
int SHMEMI_FN(shmem_team_split_2d)(shmem_team_t parent_team, int xrange,
                        const shmem_team_config_t *xaxis_config, long xaxis_mask,
                        shmem_team_t *xaxis_team, const shmem_team_config_t *yaxis_config,
                        long yaxis_mask, shmem_team_t *yaxis_team);
void SHMEMI_FN(shmem_team_destroy)(shmem_team_t team);
int SHMEMI_FN(shmem_team_sync)(shmem_team_t team);

int SHMEMI_FN(shmem_ctx_create)(long options, shmem_ctx_t *ctx);
int SHMEMI_FN(shmem_team_create_ctx)(shmem_team_t team, long options, shmem_ctx_t *ctx);
void SHMEMI_FN(shmem_ctx_destroy)(shmem_ctx_t ctx);
int SHMEMI_FN(shmem_ctx_get_team)(shmem_ctx_t ctx, shmem_team_t *team);
void SHMEMI_FN(shmem_ctx_session_start)(shmem_ctx_t ctx, long options,
                                        const shmem_ctx_session_config_t *config, long config_mask);
void SHMEMI_FN(shmem_ctx_session_stop)(shmem_ctx_t ctx);

/* ---------------------------------------------------------------- */
/* Ordering and completion                                          */

void SHMEMI_FN(shmem_fence)(void);
void SHMEMI_FN(shmem_quiet)(void);
void SHMEMI_FN(shmem_ctx_fence)(shmem_ctx_t ctx);
void SHMEMI_FN(shmem_ctx_quiet)(shmem_ctx_t ctx);
void SHMEMI_FN(shmem_pe_quiet)(const int *target_pes, size_t npes);
void SHMEMI_FN(shmem_ctx_pe_quiet)(shmem_ctx_t ctx, const int *target_pes, size_t npes);

/* ---------------------------------------------------------------- */
/* RMA                                                              */

#define SHMEMI_DECL_RMA(T, N)                                                             \
    void SHMEMI_FN(shmem_##N##_put)(T *dest, const T *source, size_t nelems, int pe);     \
    void SHMEMI_FN(shmem_ctx_##N##_put)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_get)(T *dest, const T *source, size_t nelems, int pe);     \
    void SHMEMI_FN(shmem_ctx_##N##_get)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_put_nbi)(T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_put_nbi)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_get_nbi)(T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_get_nbi)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_iput)(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_iput)(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_iget)(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_iget)(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_##N##_ibput)(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_ibput)(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_##N##_ibget)(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_ibget)(shmem_ctx_t ctx, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_##N##_put_signal)(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_put_signal)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_##N##_put_signal_nbi)(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_put_signal_nbi)(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_RMA_TYPES(SHMEMI_DECL_RMA)

#define SHMEMI_DECL_PG(T, N)                                                              \
    void SHMEMI_FN(shmem_##N##_p)(T *dest, T value, int pe);                              \
    void SHMEMI_FN(shmem_ctx_##N##_p)(shmem_ctx_t ctx, T *dest, T value, int pe);         \
    T SHMEMI_FN(shmem_##N##_g)(const T *source, int pe);                                  \
    T SHMEMI_FN(shmem_ctx_##N##_g)(shmem_ctx_t ctx, const T *source, int pe);
#define SHMEMI_PG_TYPES(X)                                                                \
    X(float, float) X(double, double) X(char, char) X(signed char, schar)                 \
    X(short, short) X(int, int) X(long, long) X(long long, longlong)                      \
    X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)               \
    X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)              \
    X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)               \
    X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)           \
    X(ptrdiff_t, ptrdiff)
SHMEMI_PG_TYPES(SHMEMI_DECL_PG)

void SHMEMI_FN(shmem_putmem)(void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_ctx_putmem)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_getmem)(void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_ctx_getmem)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);

/* long double travels by value in x87 registers, which the library's ABI
 * does not use: these four are defined here over putmem/getmem. */
static inline void SHMEMI_FN(shmem_longdouble_p)(long double *dest, long double value, int pe) {
    SHMEMI_FN(shmem_putmem)(dest, &value, sizeof value, pe);
}
static inline void SHMEMI_FN(shmem_ctx_longdouble_p)(shmem_ctx_t ctx, long double *dest, long double value, int pe) {
    SHMEMI_FN(shmem_ctx_putmem)(ctx, dest, &value, sizeof value, pe);
}
static inline long double SHMEMI_FN(shmem_longdouble_g)(const long double *source, int pe) {
    long double v;
    SHMEMI_FN(shmem_getmem)(&v, source, sizeof v, pe);
    return v;
}
static inline long double SHMEMI_FN(shmem_ctx_longdouble_g)(shmem_ctx_t ctx, const long double *source, int pe) {
    long double v;
    SHMEMI_FN(shmem_ctx_getmem)(ctx, &v, source, sizeof v, pe);
    return v;
}

#define SHMEMI_DECL_SIZED(T, S)                                                           \
    void SHMEMI_FN(shmem_put##S)(void *dest, const void *source, size_t nelems, int pe);  \
    void SHMEMI_FN(shmem_ctx_put##S)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_get##S)(void *dest, const void *source, size_t nelems, int pe);  \
    void SHMEMI_FN(shmem_ctx_get##S)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_put##S##_nbi)(void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_put##S##_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_get##S##_nbi)(void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_get##S##_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_iput##S)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_iput##S)(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_iget##S)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ctx_iget##S)(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int pe); \
    void SHMEMI_FN(shmem_ibput##S)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_ctx_ibput##S)(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_ibget##S)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_ctx_ibget##S)(shmem_ctx_t ctx, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize, size_t nblocks, int pe); \
    void SHMEMI_FN(shmem_put##S##_signal)(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_ctx_put##S##_signal)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_put##S##_signal_nbi)(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe); \
    void SHMEMI_FN(shmem_ctx_put##S##_signal_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
SHMEMI_SIZED_TYPES(SHMEMI_DECL_SIZED)

void SHMEMI_FN(shmem_putmem_nbi)(void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_ctx_putmem_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_getmem_nbi)(void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_ctx_getmem_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, int pe);
void SHMEMI_FN(shmem_putmem_signal)(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void SHMEMI_FN(shmem_ctx_putmem_signal)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void SHMEMI_FN(shmem_putmem_signal_nbi)(void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);
void SHMEMI_FN(shmem_ctx_putmem_signal_nbi)(shmem_ctx_t ctx, void *dest, const void *source, size_t nelems, uint64_t *sig_addr, uint64_t signal, int sig_op, int pe);

uint64_t SHMEMI_FN(shmem_signal_fetch)(const uint64_t *sig_addr);
uint64_t SHMEMI_FN(shmem_signal_wait_until)(uint64_t *sig_addr, int cmp, uint64_t cmp_value);
void SHMEMI_FN(shmem_signal_add)(uint64_t *sig_addr, uint64_t signal, int pe);
void SHMEMI_FN(shmem_ctx_signal_add)(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);
void SHMEMI_FN(shmem_signal_set)(uint64_t *sig_addr, uint64_t signal, int pe);
void SHMEMI_FN(shmem_ctx_signal_set)(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe);

/* ---------------------------------------------------------------- */
/* Atomics                                                          */

#define SHMEMI_DECL_AMO_EXT(T, N)                                                         \
    T SHMEMI_FN(shmem_##N##_atomic_fetch)(const T *source, int pe);                       \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_fetch)(shmem_ctx_t ctx, const T *source, int pe);  \
    void SHMEMI_FN(shmem_##N##_atomic_set)(T *dest, T value, int pe);                     \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_set)(shmem_ctx_t ctx, T *dest, T value, int pe); \
    T SHMEMI_FN(shmem_##N##_atomic_swap)(T *dest, T value, int pe);                       \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_swap)(shmem_ctx_t ctx, T *dest, T value, int pe);  \
    void SHMEMI_FN(shmem_##N##_atomic_fetch_nbi)(T *fetch, const T *source, int pe);      \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_nbi)(shmem_ctx_t ctx, T *fetch, const T *source, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_swap_nbi)(T *fetch, T *dest, T value, int pe);      \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_swap_nbi)(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
SHMEMI_AMO_EXT_TYPES(SHMEMI_DECL_AMO_EXT)

#define SHMEMI_DECL_AMO_STD(T, N)                                                         \
    T SHMEMI_FN(shmem_##N##_atomic_fetch_inc)(T *dest, int pe);                           \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_inc)(shmem_ctx_t ctx, T *dest, int pe);      \
    void SHMEMI_FN(shmem_##N##_atomic_inc)(T *dest, int pe);                              \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_inc)(shmem_ctx_t ctx, T *dest, int pe);         \
    T SHMEMI_FN(shmem_##N##_atomic_fetch_add)(T *dest, T value, int pe);                  \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_add)(shmem_ctx_t ctx, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_add)(T *dest, T value, int pe);                     \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_add)(shmem_ctx_t ctx, T *dest, T value, int pe); \
    T SHMEMI_FN(shmem_##N##_atomic_compare_swap)(T *dest, T cond, T value, int pe);       \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_compare_swap)(shmem_ctx_t ctx, T *dest, T cond, T value, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_fetch_inc_nbi)(T *fetch, T *dest, int pe);          \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_inc_nbi)(shmem_ctx_t ctx, T *fetch, T *dest, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_fetch_add_nbi)(T *fetch, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_add_nbi)(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_compare_swap_nbi)(T *fetch, T *dest, T cond, T value, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_compare_swap_nbi)(shmem_ctx_t ctx, T *fetch, T *dest, T cond, T value, int pe);
SHMEMI_AMO_STD_TYPES(SHMEMI_DECL_AMO_STD)

#define SHMEMI_DECL_AMO_BIT1(T, N, OP)                                                    \
    T SHMEMI_FN(shmem_##N##_atomic_fetch_##OP)(T *dest, T value, int pe);                 \
    T SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_##OP)(shmem_ctx_t ctx, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_##OP)(T *dest, T value, int pe);                    \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_##OP)(shmem_ctx_t ctx, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_##N##_atomic_fetch_##OP##_nbi)(T *fetch, T *dest, T value, int pe); \
    void SHMEMI_FN(shmem_ctx_##N##_atomic_fetch_##OP##_nbi)(shmem_ctx_t ctx, T *fetch, T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_BIT(T, N)                                                         \
    SHMEMI_DECL_AMO_BIT1(T, N, and) SHMEMI_DECL_AMO_BIT1(T, N, or) SHMEMI_DECL_AMO_BIT1(T, N, xor)
SHMEMI_AMO_BIT_TYPES(SHMEMI_DECL_AMO_BIT)

/* Deprecated atomics. */
#define SHMEMI_DECL_AMO_OLD_EXT(T, N)                                                     \
    T SHMEMI_FN(shmem_##N##_fetch)(const T *source, int pe);                              \
    void SHMEMI_FN(shmem_##N##_set)(T *dest, T value, int pe);                            \
    T SHMEMI_FN(shmem_##N##_swap)(T *dest, T value, int pe);
#define SHMEMI_DECL_AMO_OLD_STD(T, N)                                                     \
    T SHMEMI_FN(shmem_##N##_cswap)(T *dest, T cond, T value, int pe);                     \
    T SHMEMI_FN(shmem_##N##_finc)(T *dest, int pe);                                       \
    void SHMEMI_FN(shmem_##N##_inc)(T *dest, int pe);                                     \
    T SHMEMI_FN(shmem_##N##_fadd)(T *dest, T value, int pe);                              \
    void SHMEMI_FN(shmem_##N##_add)(T *dest, T value, int pe);
SHMEMI_AMO_EXT_TYPES(SHMEMI_DECL_AMO_OLD_EXT)
SHMEMI_AMO_STD_TYPES(SHMEMI_DECL_AMO_OLD_STD)
long SHMEMI_FN(shmem_swap)(long *dest, long value, int pe);

/* ---------------------------------------------------------------- */
/* Point-to-point synchronization                                   */

#define SHMEMI_DECL_SYNC(T, N)                                                            \
    void SHMEMI_FN(shmem_##N##_wait_until)(T *ivar, int cmp, T cmp_value);                \
    void SHMEMI_FN(shmem_##N##_wait_until_all)(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t SHMEMI_FN(shmem_##N##_wait_until_any)(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t SHMEMI_FN(shmem_##N##_wait_until_some)(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
    void SHMEMI_FN(shmem_##N##_wait_until_all_vector)(T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values); \
    size_t SHMEMI_FN(shmem_##N##_wait_until_any_vector)(T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values); \
    size_t SHMEMI_FN(shmem_##N##_wait_until_some_vector)(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, const T *cmp_values); \
    int SHMEMI_FN(shmem_##N##_test)(T *ivar, int cmp, T cmp_value);                       \
    int SHMEMI_FN(shmem_##N##_test_all)(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t SHMEMI_FN(shmem_##N##_test_any)(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value); \
    size_t SHMEMI_FN(shmem_##N##_test_some)(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, T cmp_value); \
    int SHMEMI_FN(shmem_##N##_test_all_vector)(T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values); \
    size_t SHMEMI_FN(shmem_##N##_test_any_vector)(T *ivars, size_t nelems, const int *status, int cmp, const T *cmp_values); \
    size_t SHMEMI_FN(shmem_##N##_test_some_vector)(T *ivars, size_t nelems, size_t *indices, const int *status, int cmp, const T *cmp_values); \
    void SHMEMI_FN(shmem_##N##_wait)(T *ivar, T cmp_value);
SHMEMI_SYNC_TYPES(SHMEMI_DECL_SYNC)
void SHMEMI_FN(shmem_wait)(long *ivar, long cmp_value);

/* Locks. */
void SHMEMI_FN(shmem_set_lock)(long *lock);
void SHMEMI_FN(shmem_clear_lock)(long *lock);
int SHMEMI_FN(shmem_test_lock)(long *lock);

/* ---------------------------------------------------------------- */
/* Collectives                                                      */

void SHMEMI_FN(shmem_sync_all)(void);
void SHMEMI_FN(shmem_barrier_all)(void);
void SHMEMI_FN(shmem_barrier)(int PE_start, int logPE_stride, int PE_size, long *pSync);
void SHMEMI_FN(shmem_sync)(int PE_start, int logPE_stride, int PE_size, long *pSync);

#define SHMEMI_DECL_COLL(T, N)                                                            \
    int SHMEMI_FN(shmem_##N##_broadcast)(shmem_team_t team, T *dest, const T *source, size_t nelems, int PE_root); \
    int SHMEMI_FN(shmem_##N##_collect)(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int SHMEMI_FN(shmem_##N##_fcollect)(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int SHMEMI_FN(shmem_##N##_alltoall)(shmem_team_t team, T *dest, const T *source, size_t nelems); \
    int SHMEMI_FN(shmem_##N##_alltoalls)(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems);
SHMEMI_RMA_TYPES(SHMEMI_DECL_COLL)
int SHMEMI_FN(shmem_broadcastmem)(shmem_team_t team, void *dest, const void *source, size_t nelems, int PE_root);
int SHMEMI_FN(shmem_collectmem)(shmem_team_t team, void *dest, const void *source, size_t nelems);
int SHMEMI_FN(shmem_fcollectmem)(shmem_team_t team, void *dest, const void *source, size_t nelems);
int SHMEMI_FN(shmem_alltoallmem)(shmem_team_t team, void *dest, const void *source, size_t nelems);
int SHMEMI_FN(shmem_alltoallsmem)(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems);

#define SHMEMI_DECL_ACTIVE(S)                                                             \
    void SHMEMI_FN(shmem_broadcast##S)(void *dest, const void *source, size_t nelems, int PE_root, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void SHMEMI_FN(shmem_collect##S)(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void SHMEMI_FN(shmem_fcollect##S)(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void SHMEMI_FN(shmem_alltoall##S)(void *dest, const void *source, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync); \
    void SHMEMI_FN(shmem_alltoalls##S)(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems, int PE_start, int logPE_stride, int PE_size, long *pSync);
SHMEMI_DECL_ACTIVE(32)
SHMEMI_DECL_ACTIVE(64)

#define SHMEMI_DECL_REDUCE(T, N, OP)                                                      \
    int SHMEMI_FN(shmem_##N##_##OP##_reduce)(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMI_DECL_RED_AND(T, N) SHMEMI_DECL_REDUCE(T, N, and)
#define SHMEMI_DECL_RED_OR(T, N) SHMEMI_DECL_REDUCE(T, N, or)
#define SHMEMI_DECL_RED_XOR(T, N) SHMEMI_DECL_REDUCE(T, N, xor)
#define SHMEMI_DECL_RED_MAX(T, N) SHMEMI_DECL_REDUCE(T, N, max)
#define SHMEMI_DECL_RED_MIN(T, N) SHMEMI_DECL_REDUCE(T, N, min)
#define SHMEMI_DECL_RED_SUM(T, N) SHMEMI_DECL_REDUCE(T, N, sum)                           \
    int SHMEMI_FN(shmem_##N##_sum_inscan)(shmem_team_t team, T *dest, const T *source, size_t nreduce); \
    int SHMEMI_FN(shmem_##N##_sum_exscan)(shmem_team_t team, T *dest, const T *source, size_t nreduce);
#define SHMEMI_DECL_RED_PROD(T, N) SHMEMI_DECL_REDUCE(T, N, prod)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_AND)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_OR)
SHMEMI_RED_BIT_TYPES(SHMEMI_DECL_RED_XOR)
SHMEMI_RED_ORD_TYPES(SHMEMI_DECL_RED_MAX)
SHMEMI_RED_ORD_TYPES(SHMEMI_DECL_RED_MIN)
SHMEMI_RED_ARITH_TYPES(SHMEMI_DECL_RED_SUM)
SHMEMI_RED_ARITH_TYPES(SHMEMI_DECL_RED_PROD)

#define SHMEMI_DECL_TOALL(T, N, OP)                                                       \
    void SHMEMI_FN(shmem_##N##_##OP##_to_all)(T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, int PE_size, T *pWrk, long *pSync);
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
