/* Locks: set_lock/clear_lock mutual exclusion on a counter kept with
 * plain get/put, and test_lock. */
#include "check.h"

static long lock;
static long counter;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    for (int round = 0; round < 50; round++) {
        shmem_set_lock(&lock);
        long c = shmem_long_g(&counter, 0);
        shmem_long_p(&counter, c + 1, 0);
        shmem_clear_lock(&lock);
    }
    shmem_barrier_all();
    if (me == 0) CHECK(counter == 50 * n, "counter %ld", counter);
    shmem_barrier_all();
    int taken = 0;
    while (shmem_test_lock(&lock) != 0) taken++;
    shmem_long_atomic_inc(&counter, 0);
    shmem_clear_lock(&lock);
    shmem_barrier_all();
    if (me == 0) CHECK(counter == 51 * n, "after test_lock %ld", counter);
    (void)taken;
    return done("locks");
}
