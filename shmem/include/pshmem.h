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
 * This header declares the `p` names, with the prototypes of shmem.h.
 */
#ifndef FSHMEM_PSHMEM_H
#define FSHMEM_PSHMEM_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMEMI_FN(name) p##name
#include "shmem-api.h"
#undef SHMEMI_FN

#ifdef __cplusplus
}
#endif

#endif /* FSHMEM_PSHMEM_H */
