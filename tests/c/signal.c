/* put_signal (set and add), put_signal_nbi, signal_fetch,
 * signal_wait_until, signal_add and signal_set, typed and mem forms. */
#include "check.h"

static int payload[16];
static uint64_t sig;
static uint64_t sig2;

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n;
    int src[16];
    for (int i = 0; i < 16; i++) src[i] = me * 100 + i;
    CHECK(shmem_signal_fetch(&sig) == 0, "initial signal");
    shmem_barrier_all();
    shmem_int_put_signal(payload, src, 16, &sig, 1, SHMEM_SIGNAL_SET, right);
    uint64_t got = shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
    CHECK(got == 1, "signal value %llu", (unsigned long long)got);
    int left = (me + n - 1) % n;
    for (int i = 0; i < 16; i++) CHECK(payload[i] == left * 100 + i, "payload %d", i);
    shmem_barrier_all();
    /* Every PE adds to PE 0's signal with a put. */
    shmem_putmem_signal_nbi(&payload[me % 16], &me, sizeof me, &sig2, 1, SHMEM_SIGNAL_ADD, 0);
    shmem_quiet();
    if (me == 0) {
        shmem_signal_wait_until(&sig2, SHMEM_CMP_GE, (uint64_t)n);
        CHECK(shmem_signal_fetch(&sig2) == (uint64_t)n, "added signals");
    }
    shmem_barrier_all();
    shmem_signal_set(&sig, 42, right);
    shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 42);
    shmem_barrier_all();
    shmem_signal_add(&sig, 8, right);
    shmem_signal_wait_until(&sig, SHMEM_CMP_GE, 50);
    shmem_ctx_int_put_signal(SHMEM_CTX_DEFAULT, payload, src, 1, &sig, 60, SHMEM_SIGNAL_SET, right);
    shmem_signal_wait_until(&sig, SHMEM_CMP_GT, 55);
    return done("signal");
}
