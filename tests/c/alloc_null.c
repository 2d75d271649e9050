/* Allocation follows the specification: a request the symmetric heap
 * cannot satisfy returns NULL on every PE (and the program goes on), as
 * does shmem_align with an alignment that is not a power of two. Probing
 * the heap by allocating until NULL runs to the end. Run with
 * SHMEM_SYMMETRIC_SIZE=16M: the probe finds exactly 16 blocks of 1 MiB. */
#include "check.h"
#include <stdint.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

int main(void) {
    shmem_init();
    int me = shmem_my_pe();

    CHECK(shmem_malloc((size_t)1 << 50) == NULL, "malloc(2^50)");
    CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflowing size_t");
    CHECK(shmem_calloc((size_t)1 << 30, 1024) == NULL, "calloc(2^30, 1024)");
    CHECK(shmem_align(3, 64) == NULL, "align(3)");
    CHECK(shmem_align(0, 64) == NULL, "align(0)");
    CHECK(shmem_align(48, 64) == NULL, "align(48)");
    CHECK(shmem_align((size_t)1 << 40, 64) == NULL, "align(2^40)");

    /* A failed realloc leaves the block as it was. */
    int *a = shmem_malloc(64 * sizeof(int));
    CHECK(a != NULL, "malloc(256)");
    for (int i = 0; i < 64; i++) a[i] = me * 100 + i;
    CHECK(shmem_realloc(a, (size_t)1 << 50) == NULL, "realloc(2^50)");
    for (int i = 0; i < 64; i++) CHECK(a[i] == me * 100 + i, "a[%d] kept", i);
    shmem_free(a);

    /* Probe the heap: allocate 1 MiB blocks until NULL. */
    static void *blocks[64];
    int count = 0;
    while (count < 64 && (blocks[count] = shmem_malloc(MIB)) != NULL) {
        memset(blocks[count], me, MIB);
        count++;
    }
    CHECK(count == 16, "probe found %d blocks of 1 MiB, expected 16", count);
    /* Every block is usable across PEs. */
    int n = shmem_n_pes();
    if (count > 0) {
        shmem_putmem(blocks[count - 1], blocks[0], 64, (me + 1) % n);
        shmem_barrier_all();
        CHECK(((unsigned char *)blocks[count - 1])[0] == (unsigned char)((me + n - 1) % n),
              "last block received the neighbour's bytes");
    }
    while (count > 0) shmem_free(blocks[--count]);
    /* The heap is whole again. */
    void *big = shmem_malloc(15 * MIB);
    CHECK(big != NULL, "malloc(15 MiB) after freeing");
    shmem_free(big);
    if (me == 0) printf("alloc_null: probe ran to the end\n");
    return done("alloc_null");
}
