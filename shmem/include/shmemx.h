/*
 * shmemx.h -- fshmem extensions to OpenSHMEM.
 */
#ifndef FSHMEM_SHMEMX_H
#define FSHMEM_SHMEMX_H

#include <shmem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Seconds since an arbitrary point in the past (monotonic clock). */
double shmemx_wtime(void);

/* The OpenSHMEM 1.6 additions fshmem provides (ibput/ibget, scans,
 * shmem_signal_add/set, shmem_pe_quiet, shmem_team_ptr) are declared in
 * shmem.h under their 1.6 names. */

#ifdef __cplusplus
}
#endif

#endif /* FSHMEM_SHMEMX_H */
