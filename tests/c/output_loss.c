/* Output is never lost when a PE fails: every PE prints lines with printf
 * (a pipe: buffered unless the library line-buffers stdout) and one to
 * stderr, then PE 1 makes a mistake while the others wait in a barrier.
 * oshrun stops the others; every line printed before must still come out,
 * and the job's messages name PE 1.
 *
 * `output_loss partial` ends each PE's output with text that no newline
 * follows; `output_loss full` makes stdout fully buffered first (so
 * nothing is written until a flush). In both, the PEs other than PE 1 then
 * wait outside the library (pause), where nothing but the launcher's
 * stop signal ends them: what they printed must come out all the same. */
#include <shmem.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static long word;
static char big_buffer[1 << 16];

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "lines";
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (strcmp(mode, "full") == 0)
        setvbuf(stdout, big_buffer, _IOFBF, sizeof big_buffer);
    for (int i = 0; i < 20; i++) printf("PE %d line %d\n", me, i);
    if (strcmp(mode, "partial") == 0) printf("PE %d tail-without-newline", me);
    fprintf(stderr, "PE %d to stderr\n", me);
    shmem_barrier_all();
    if (me == 1) {
        long v = 1;
        shmem_long_put(&word, &v, 1, n + 3); /* out of range: ends the job */
    }
    if (strcmp(mode, "lines") != 0)
        for (;;) pause();
    shmem_barrier_all();
    printf("PE %d: unreachable\n", me);
    shmem_finalize();
    return 0;
}
