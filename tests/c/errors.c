/* Errors a C program makes end the job with one line naming the PE, the
 * routine and the value: run as `errors <case>`; PE 1 (or 0 in a job of
 * one) makes the mistake. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>

static long word;

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int culprit = n > 1 ? 1 : 0;
    const char *c = argc > 1 ? argv[1] : "";
    long local = 1;
    if (me == culprit) {
        if (strcmp(c, "pe") == 0) shmem_long_put(&word, &local, 1, n + 5);
        if (strcmp(c, "negative_pe") == 0) shmem_long_p(&word, 1, -1);
        if (strcmp(c, "address") == 0) shmem_long_put(&local, &local, 1, 0);
        if (strcmp(c, "misaligned") == 0) shmem_int_atomic_add((int *)((char *)&word + 2), 1, 0);
        if (strcmp(c, "team") == 0) shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &local, &local, 1);
    }
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
