/* Memory management: malloc, calloc, align, realloc, free,
 * malloc_with_hints, and the deprecated shmalloc family. */
#include "check.h"
#include <stdint.h>
#include <string.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(shmem_malloc(0) == NULL, "malloc(0)");
    int *a = shmem_malloc(100 * sizeof(int));
    CHECK(a != NULL, "malloc");
    for (int i = 0; i < 100; i++) a[i] = me * 1000 + i;
    double *z = shmem_calloc(50, sizeof(double));
    for (int i = 0; i < 50; i++) CHECK(z[i] == 0.0, "calloc zero at %d", i);
    char *al = shmem_align(4096, 10);
    CHECK(((uintptr_t)al & 4095) == 0, "align %p", (void *)al);
    long *h = shmem_malloc_with_hints(8 * sizeof(long), SHMEM_MALLOC_ATOMICS_REMOTE);
    CHECK(h != NULL, "with hints");
    shmem_barrier_all();
    /* The same offsets on every PE: put into the neighbour's copy. */
    shmem_int_put(a + 50, a, 50, (me + 1) % n);
    shmem_barrier_all();
    CHECK(a[50] == ((me + n - 1) % n) * 1000, "put into malloc'd %d", a[50]);
    a = shmem_realloc(a, 100000 * sizeof(int));
    CHECK(a[0] == me * 1000 && a[49] == me * 1000 + 49, "realloc keeps contents");
    a[99999] = me;
    shmem_barrier_all();
    CHECK(shmem_int_g(a + 99999, (me + 1) % n) == (me + 1) % n, "realloc'd is symmetric");
    CHECK(shmem_realloc(NULL, 0) == NULL, "realloc(NULL, 0)");
    void *r = shmem_realloc(NULL, 64);
    CHECK(r != NULL, "realloc(NULL) allocates");
    CHECK(shmem_realloc(r, 0) == NULL, "realloc(p, 0) frees");
    shmem_free(NULL);
    shmem_free(a);
    shmem_free(z);
    shmem_free(al);
    shmem_free(h);
    int *d = shmalloc(16);
    d = shrealloc(d, 32);
    shfree(d);
    void *m = shmemalign(64, 16);
    CHECK(((uintptr_t)m & 63) == 0, "shmemalign");
    shfree(m);
    return done("memory");
}
