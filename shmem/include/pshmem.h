/*
 * pshmem.h -- the profiling interface of fshmem's OpenSHMEM library.
 *
 * libshmem exports every routine under a second name with a `p` prefix
 * (pshmem_put, pshmem_ctx_int_atomic_add, pstart_pes, p_my_pe, pshmalloc,
 * ...), and the standard name is a weak alias of it. A profiling or
 * tracing tool defines the standard names it wants to see (shmem_put,
 * ...), does its work, and calls the `p` name to reach the library; the
 * tool's definition replaces the weak alias whether the tool is a shared
 * library loaded before libshmem or an object linked with libshmem.a.
 * This header declares the `p` names, with the prototypes of shmem.h
 * and shmemx.h (pshmemx_am_poll, ...).
 */
#ifndef FSHMEM_PSHMEM_H
#define FSHMEM_PSHMEM_H

#include <shmem.h>
#include <shmemx.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEMI_FN(name) p##name
#include "shmem-api.h"
#undef SHMEMI_FN

/* The fshmem extensions of shmemx.h, under the same scheme. */
int pshmemx_am_register(shmemx_am_handler_t fn, void *user);
void pshmemx_am_request_short(int pe, int handler, const uint32_t *args, size_t nargs);
void pshmemx_am_request_medium(int pe, int handler, const uint32_t *args, size_t nargs,
                               const void *payload, size_t nbytes);
void pshmemx_am_request_long(int pe, int handler, const uint32_t *args, size_t nargs,
                             const void *payload, size_t nbytes, void *dest);
int pshmemx_am_src_pe(shmemx_am_token_t token);
void pshmemx_am_reply_short(shmemx_am_token_t token, int handler, const uint32_t *args,
                            size_t nargs);
void pshmemx_am_reply_medium(shmemx_am_token_t token, int handler, const uint32_t *args,
                             size_t nargs, const void *payload, size_t nbytes);
void pshmemx_am_reply_long(shmemx_am_token_t token, int handler, const uint32_t *args,
                           size_t nargs, const void *payload, size_t nbytes, void *dest);
void pshmemx_am_poll(void);

#ifdef __cplusplus
}
#endif

#endif /* FSHMEM_PSHMEM_H */
