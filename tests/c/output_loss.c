/* Output is never lost when a PE fails: every PE prints lines with printf
 * (a pipe: buffered unless the library line-buffers stdout) and one to
 * stderr, then PE 1 makes a mistake while the others wait in a barrier.
 * oshrun stops the others; every line printed before must still come out,
 * and the job's messages name PE 1. */
#include <shmem.h>
#include <stdio.h>

static long word;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int i = 0; i < 20; i++) printf("PE %d line %d\n", me, i);
    fprintf(stderr, "PE %d to stderr\n", me);
    shmem_barrier_all();
    if (me == 1) {
        long v = 1;
        shmem_long_put(&word, &v, 1, n + 3); /* out of range: ends the job */
    }
    shmem_barrier_all();
    printf("PE %d: unreachable\n", me);
    shmem_finalize();
    return 0;
}
