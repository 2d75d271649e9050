/* The handler rule of shmemx.h for the calls that wait: a handler that
 * calls a wait, a test or a lock routine ends the job naming the PE and
 * the call. Run as `am_handler_waits CASE`, CASE one of wait_until,
 * wait_until_any, test, signal_wait_until, set_lock, test_lock,
 * clear_lock: the last PE sends a Short request to PE 0, whose handler
 * makes that call. Every call is one that would return at once outside a
 * handler (the word already holds, the lock is free), so a library that
 * let it through would finish the job with status 0 and the line
 * "the handler returned". Every PE first prints a line of its own. */
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

static long flag;     /* symmetric, 0 */
static uint64_t sig;  /* symmetric, 0 */
static long lock;     /* symmetric, free */
static const char *which = "wait_until";
static int h_call;

static void call(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                 size_t n, void *user) {
    (void)t; (void)args; (void)nargs; (void)p; (void)n; (void)user;
    if (strcmp(which, "wait_until") == 0) shmem_long_wait_until(&flag, SHMEM_CMP_EQ, 0);
    if (strcmp(which, "wait_until_any") == 0)
        shmem_long_wait_until_any(&flag, 1, NULL, SHMEM_CMP_EQ, 0);
    if (strcmp(which, "test") == 0) (void)shmem_long_test(&flag, SHMEM_CMP_EQ, 0);
    if (strcmp(which, "signal_wait_until") == 0)
        (void)shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 0);
    if (strcmp(which, "set_lock") == 0) shmem_set_lock(&lock);
    if (strcmp(which, "test_lock") == 0) (void)shmem_test_lock(&lock);
    if (strcmp(which, "clear_lock") == 0) shmem_clear_lock(&lock);
    printf("am_handler_waits: PE %d: the handler returned from %s\n", shmem_my_pe(), which);
    fflush(stdout);
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    if (argc > 1) which = argv[1];
    h_call = shmemx_am_register(call, NULL);
    printf("am_handler_waits: PE %d of %d registered handler %d\n", me, n, h_call);
    fflush(stdout);
    shmem_barrier_all();
    if (me == n - 1) shmemx_am_request_short(0, h_call, NULL, 0);
    /* PE 0 serves the request here (or in shmem_finalize). */
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
