/* A small profiling tool of the kind the OpenSHMEM profiling interface is
 * for: it defines some standard routines, counts the calls, and reaches
 * the library through their pshmem_ names. At shmem_finalize each PE
 * prints one line with its counts. Built as a shared library (linked
 * before libshmem, or LD_PRELOADed) or as an object linked with
 * libshmem.a. */
#include <pshmem.h>
#include <stdio.h>

static long puts_, gets_, barriers, reductions, mallocs, frees, inits;

void shmem_init(void) {
    inits++;
    pshmem_init();
}

void shmem_long_put(long *dest, const long *source, size_t nelems, int pe) {
    puts_++;
    pshmem_long_put(dest, source, nelems, pe);
}

long shmem_long_g(const long *source, int pe) {
    gets_++;
    return pshmem_long_g(source, pe);
}

void shmem_barrier_all(void) {
    barriers++;
    pshmem_barrier_all();
}

int shmem_long_sum_reduce(shmem_team_t team, long *dest, const long *source, size_t nreduce) {
    reductions++;
    return pshmem_long_sum_reduce(team, dest, source, nreduce);
}

void *shmem_malloc(size_t size) {
    mallocs++;
    return pshmem_malloc(size);
}

void shmem_free(void *ptr) {
    frees++;
    pshmem_free(ptr);
}

void shmem_finalize(void) {
    printf("tool: PE %d: init %ld put %ld g %ld barrier_all %ld sum_reduce %ld malloc %ld free %ld\n",
           pshmem_my_pe(), inits, puts_, gets_, barriers, reductions, mallocs, frees);
    fflush(stdout);
    pshmem_finalize();
}
