/* shmem_align with large alignments returns absolutely aligned addresses
 * on every PE, and the blocks are usable symmetric memory. */
#include "check.h"
#include <stdint.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    size_t aligns[] = {4096, 65536, (size_t)1 << 20, (size_t)1 << 23};
    long *blocks[4];
    for (int i = 0; i < 4; i++) {
        size_t a = aligns[i];
        /* An odd-sized block before it, so the heap is not at an aligned spot. */
        char *pad = shmem_malloc(24);
        long *p = shmem_align(a, 100 * sizeof(long));
        CHECK(p != NULL, "align %zu returned NULL", a);
        if (!p) return done("align");
        CHECK((uintptr_t)p % a == 0, "align %zu: %p is not aligned", a, (void *)p);
        for (int j = 0; j < 100; j++) p[j] = -1;
        shmem_barrier_all();
        long mine[100];
        for (int j = 0; j < 100; j++) mine[j] = me * 1000 + j + (long)i;
        shmem_long_put(p, mine, 100, right);
        shmem_barrier_all();
        CHECK(p[0] == left * 1000 + i && p[99] == left * 1000 + 99 + i, "align %zu: put", a);
        CHECK(shmem_long_g(p + 50, right) == me * 1000 + 50 + i, "align %zu: get", a);
        shmem_long_atomic_add(p + 1, 1, 0);
        shmem_barrier_all();
        CHECK(p[1] == left * 1000 + 1 + i + (me == 0 ? n : 0), "align %zu: atomic add %ld", a, p[1]);
        shmem_barrier_all();
        shmem_free(pad);
        blocks[i] = p;
    }
    for (int i = 0; i < 4; i++) shmem_free(blocks[i]);
    return done("align");
}
