/* A request that reaches its target while the target is in
 * shmem_finalize: the last PE sends a Short request to PE 0 right before
 * its own shmem_finalize, while PE 0 is already in its finalize. PE 0's
 * handler runs inside that call (in its barrier, or in the look at the
 * receive queue after it) and replies, which it may: the runtime is
 * still initialized until the call's barrier is over. PE 0 prints how
 * many requests it served once its finalize returned; the reply reaches
 * the last PE in its finalize or at exit, where the handler only counts. */
#include <shmemx.h>
#include <stdio.h>

static int h_req, h_ack;
static int served;
static int acked;

static void req(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                size_t n, void *user) {
    (void)args; (void)nargs; (void)p; (void)n; (void)user;
    served++;
    uint32_t a[1] = {(uint32_t)served};
    shmemx_am_reply_short(t, h_ack, a, 1);
}

static void ack(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                size_t n, void *user) {
    (void)t; (void)args; (void)nargs; (void)p; (void)n; (void)user;
    acked++;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    h_req = shmemx_am_register(req, NULL);
    h_ack = shmemx_am_register(ack, NULL);
    shmem_barrier_all();
    if (me == n - 1 && n > 1) {
        uint32_t a[1] = {1};
        shmemx_am_request_short(0, h_req, a, 1);
    }
    shmem_finalize();
    if (me == 0)
        printf("am_finalize: PE 0 served %d request(s) in shmem_finalize\n", served);
    return 0;
}
