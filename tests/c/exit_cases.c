/* How a program that does not call shmem_finalize ends: run as
 * `exit_cases <case>`.
 *   return     every PE leaves main without finalizing (finalized at exit,
 *              PE 0 warns), status 0
 *   exit3      every PE calls exit(3) without finalizing: status 3
 *   exit0_one  PE 1 calls exit(0) while the others call shmem_finalize
 *   start_pes  a start_pes program that never finalizes (no warning)
 *   _exit      PE 1 calls _exit(0) while the others wait in a barrier: a
 *              failure naming PE 1
 *   kill       PE 1 kills itself with SIGKILL while the others wait */
#include <shmem.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "start_pes") == 0)
        start_pes(0);
    else
        shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    static long x;
    shmem_long_p(&x, me, (me + 1) % n);
    shmem_barrier_all();
    /* Buffered on purpose (stdout is a pipe): this line must still come out. */
    printf("PE %d: before the end (got %ld)\n", me, x);
    if (strcmp(c, "return") == 0 || strcmp(c, "start_pes") == 0) return 0;
    if (strcmp(c, "exit3") == 0) exit(3);
    if (strcmp(c, "exit0_one") == 0) {
        if (me == 1) exit(0);
        shmem_finalize();
        return 0;
    }
    if (strcmp(c, "_exit") == 0) {
        if (me == 1) {
            fflush(stdout);
            _exit(0);
        }
        shmem_barrier_all();
        printf("PE %d: passed the barrier\n", me);
    }
    if (strcmp(c, "kill") == 0) {
        if (me == 1) {
            fflush(stdout);
            raise(SIGKILL);
        }
        shmem_barrier_all();
        printf("PE %d: passed the barrier\n", me);
    }
    shmem_finalize();
    return 0;
}
