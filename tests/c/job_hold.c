/* Holds a job open until a file exists, with every PE's data in symmetric
 * memory, then checks the data: run as `job_hold <file>`. A second job
 * started meanwhile with the same job id must be refused before it can
 * touch this one's memory. */
#include <shmem.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define N 4096

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: job_hold <file>\n");
        return 2;
    }
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    long *data = shmem_malloc(N * sizeof(long));
    static long statics[N];
    for (int i = 0; i < N; i++) {
        data[i] = 1000L * me + i;
        statics[i] = -1000L * me - i;
    }
    shmem_barrier_all();
    printf("PE %d: holding\n", me);
    fflush(stdout);
    if (me == 0) {
        /* Waits for the file the test creates once the second job ended. */
        struct timespec t = {0, 10 * 1000 * 1000};
        while (access(argv[1], F_OK) != 0) nanosleep(&t, NULL);
    }
    shmem_barrier_all();
    long bad = 0;
    for (int i = 0; i < N; i++) {
        long want = 1000L * ((me + 1) % n) + i;
        if (shmem_long_g(&data[i], (me + 1) % n) != want) bad++;
        if (statics[i] != -1000L * me - i) bad++;
    }
    shmem_barrier_all();
    printf("PE %d: %ld words differ\n", me, bad);
    shmem_free(data);
    shmem_finalize();
    return bad != 0;
}
