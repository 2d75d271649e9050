/* User active messages from C: Short, Medium and Long requests and replies,
 * a counter kept by handlers, and a Long payload landing in symmetric
 * memory. Every PE sends to every PE (itself included). */
#include "check.h"
#include <shmemx.h>
#include <string.h>

static int h_count, h_echo, h_echo_reply, h_long, h_long_reply, h_ack;
static long acks;      /* Short replies received */
static long counted;   /* sum of Short arguments received */
static long replies;   /* replies received */
static long echo_sum;  /* sum of echoed bytes */
static long long_seen; /* Long requests seen with the right bytes */
static unsigned char land[64];       /* symmetric: Long requests land here */
static unsigned char back[64];       /* symmetric: Long replies land here */

static void count(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                  size_t n, void *user) {
    (void)p; (void)n; (void)user;
    for (size_t i = 0; i < nargs; i++)
        counted += args[i];
    shmemx_am_reply_short(t, h_ack, NULL, 0);
}

static void ack(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                size_t n, void *user) {
    (void)t; (void)args; (void)nargs; (void)p; (void)n; (void)user;
    acks++;
}

static void echo(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                 size_t n, void *user) {
    (void)user;
    shmemx_am_reply_medium(t, h_echo_reply, args, nargs, p, n);
}

static void echo_reply(shmemx_am_token_t t, const uint32_t *args, size_t nargs,
                       const void *p, size_t n, void *user) {
    (void)t; (void)args; (void)nargs; (void)user;
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        echo_sum += b[i];
    replies++;
}

static void long_req(shmemx_am_token_t t, const uint32_t *args, size_t nargs, const void *p,
                     size_t n, void *user) {
    (void)nargs; (void)user;
    const unsigned char *b = p;
    int ok = n == 64;
    for (size_t i = 0; ok && i < n; i++)
        ok = b[i] == (unsigned char)(args[0] + i);
    long_seen += ok;
    unsigned char r[64];
    memset(r, (int)shmemx_am_src_pe(t), sizeof r);
    shmemx_am_reply_long(t, h_long_reply, args, 1, r, sizeof r, back);
}

static void long_reply(shmemx_am_token_t t, const uint32_t *args, size_t nargs,
                       const void *p, size_t n, void *user) {
    (void)t; (void)args; (void)nargs; (void)p; (void)n; (void)user;
    replies++;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    h_count = shmemx_am_register(count, NULL);
    h_echo = shmemx_am_register(echo, NULL);
    h_echo_reply = shmemx_am_register(echo_reply, NULL);
    h_long = shmemx_am_register(long_req, NULL);
    h_long_reply = shmemx_am_register(long_reply, NULL);
    h_ack = shmemx_am_register(ack, NULL);
    /* Handlers read h_* to reply: every PE has stored them before the first
     * request arrives. */
    shmem_barrier_all();
    CHECK(h_count >= 64 && h_echo == h_count + 1, "handler numbers %d %d", h_count, h_echo);

    for (int pe = 0; pe < n; pe++) {
        uint32_t a[3] = {1, 2, (uint32_t)me};
        shmemx_am_request_short(pe, h_count, a, 3);
        unsigned char m[100];
        for (int i = 0; i < 100; i++)
            m[i] = (unsigned char)(me + i);
        shmemx_am_request_medium(pe, h_echo, a, 1, m, sizeof m);
    }
    while (replies < n || acks < n)
        shmemx_am_poll();
    long want = 0;
    for (int i = 0; i < 100; i++)
        want += (unsigned char)(me + i);
    CHECK(echo_sum == want * n, "echo sum %ld, want %ld", echo_sum, want * n);

    /* Long: one PE at a time writes into `land` on its right neighbour. */
    int right = (me + 1) % n;
    unsigned char l[64];
    for (int i = 0; i < 64; i++)
        l[i] = (unsigned char)(me + i);
    uint32_t a0 = (uint32_t)me;
    shmemx_am_request_long(right, h_long, &a0, 1, l, sizeof l, land);
    while (replies < n + 1)
        shmemx_am_poll();
    CHECK(back[0] == (unsigned char)me && back[63] == (unsigned char)me, "long reply %d",
          back[0]);
    shmem_barrier_all();
    CHECK(long_seen == 1, "long requests seen %ld", long_seen);
    CHECK(land[5] == (unsigned char)((me + n - 1) % n + 5), "land[5] = %d", land[5]);
    long sum_me = 0;
    for (int pe = 0; pe < n; pe++)
        sum_me += 3 + pe;
    CHECK(counted == sum_me, "counted %ld, want %ld", counted, sum_me);
    return done("am");
}
