/*
 * shmemx.h -- fshmem extensions to OpenSHMEM.
 *
 * The OpenSHMEM 1.6 additions fshmem provides (shmem_ibput/ibget,
 * shmem_<type>_sum_inscan/exscan, shmem_signal_add/set, shmem_pe_quiet,
 * shmem_team_ptr) are declared in shmem.h under their 1.6 names; this
 * header is where fshmem-specific routines will live.
 */
#ifndef FSHMEM_SHMEMX_H
#define FSHMEM_SHMEMX_H

#include <shmem.h>

/* Defined when the library is fshmem. */
#define SHMEMX_FSHMEM 1

#endif /* FSHMEM_SHMEMX_H */
