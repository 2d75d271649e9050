/* A user active message to a handler number shmemx_am_register never
 * returned: 224, the first of the numbers a board's compute core owns on
 * the fpga conduit (224..255). Run as
 * `am_compute_index [short|medium|reply|unregistered]`: the last PE sends a
 * Short (or Medium) request to handler 224 of PE 0, or (reply) PE 0's
 * handler replies to handler 224, or (unregistered) the last PE sends a
 * Short request to handler 223, which no PE registered. Every PE first
 * prints a line of its own (which must not be lost when the job ends); a
 * PE that gets past the call prints that it did. The job must fail naming
 * the PE, the call (or, for 223, the arrival) and the index, on every
 * conduit. */
#include <shmemx.h>
#include <stdio.h>
#include <string.h>

static int h_ping;

static void ping(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                 size_t n, void *user) {
    (void)args; (void)nargs; (void)p; (void)n; (void)user;
    uint32_t a[1] = {1};
    shmemx_am_reply_short(t, 224, a, 1);
}

int main(int argc, char **argv) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    const char *c = argc > 1 ? argv[1] : "short";
    h_ping = shmemx_am_register(ping, NULL);
    printf("am_compute_index: PE %d of %d registered handler %d\n", me, n, h_ping);
    fflush(stdout);
    shmem_barrier_all();
    if (me == n - 1) {
        uint32_t a[1] = {7};
        if (strcmp(c, "short") == 0) shmemx_am_request_short(0, 224, a, 1);
        if (strcmp(c, "medium") == 0) shmemx_am_request_medium(0, 224, a, 1, "payload", 7);
        if (strcmp(c, "reply") == 0) shmemx_am_request_short(0, h_ping, a, 1);
        if (strcmp(c, "unregistered") == 0) shmemx_am_request_short(0, 223, a, 1);
        printf("am_compute_index: PE %d: the %s call returned\n", me, c);
        fflush(stdout);
    }
    /* Serve requests (the reply case) until every PE got here. */
    shmem_barrier_all();
    printf("am_compute_index: PE %d finished\n", me);
    shmem_finalize();
    return 0;
}
