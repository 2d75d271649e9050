/* Shared helpers of fshmem's C test programs. */
#ifndef FSHMEM_TEST_CHECK_H
#define FSHMEM_TEST_CHECK_H
#include <shmem.h>
#include <stdio.h>

static int check_failures;

/* Records a failed check and prints where, as one line written at once
 * (lines of several PEs do not mix); the program ends with done(). */
#define CHECK(cond, ...)                                                    \
    do {                                                                    \
        if (!(cond)) {                                                      \
            char check_msg_[512];                                           \
            int check_len_ = snprintf(check_msg_, sizeof check_msg_,        \
                                      "PE %d: %s:%d: check failed: %s: ",   \
                                      shmem_my_pe(), __FILE__, __LINE__,    \
                                      #cond);                               \
            if (check_len_ < 0 || check_len_ > 400) check_len_ = 0;         \
            snprintf(check_msg_ + check_len_,                               \
                     sizeof check_msg_ - check_len_, __VA_ARGS__);          \
            fprintf(stderr, "%s\n", check_msg_);                            \
            check_failures++;                                               \
        }                                                                   \
    } while (0)

/* Every PE reports; PE 0 prints "<name>: ok on N PEs" when all passed. */
static int done(const char *name) {
    static int fails;
    static int total;
    fails = check_failures;
    total = 0;
    shmem_barrier_all();
    shmem_int_sum_reduce(SHMEM_TEAM_WORLD, &total, &fails, 1);
    if (total == 0 && shmem_my_pe() == 0)
        printf("%s: ok on %d PEs\n", name, shmem_n_pes());
    shmem_finalize();
    return total == 0 ? 0 : 1;
}
#endif
