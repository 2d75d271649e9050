/* Touches every byte of the symmetric heap: allocates it in 1 MiB blocks
 * until shmem_malloc returns NULL and writes each block. Run where
 * /dev/shm is too small for SHMEM_SYMMETRIC_SIZE, shmem_init must refuse
 * the heap (one line naming the variable); it must never get this far
 * and die of SIGBUS on a page that cannot be backed. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    size_t blocks = 0;
    for (;;) {
        char *p = shmem_malloc(1 << 20);
        if (p == NULL) break;
        memset(p, me + 1, 1 << 20);
        blocks++;
    }
    shmem_barrier_all();
    printf("PE %d: touched %zu MiB of the heap\n", me, blocks);
    shmem_finalize();
    return 0;
}
