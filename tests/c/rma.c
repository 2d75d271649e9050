/* RMA for every standard type, the sized forms and mem: put, get, p, g,
 * iput, iget, ibput, ibget, the nbi forms and the ctx forms, on heap and
 * static destinations. */
#include "check.h"
#include <string.h>

#define NE 8

#define TEST_RMA(T, N)                                                              \
    static T st_##N[4 * NE];                                                        \
    static void test_##N(int me, int n) {                                           \
        int right = (me + 1) % n, left = (me + n - 1) % n;                          \
        T *h = shmem_calloc(4 * NE, sizeof(T));                                     \
        T src[NE], back[4 * NE];                                                    \
        for (int i = 0; i < NE; i++) src[i] = (T)(me * 10 + i + 1);                 \
        shmem_##N##_put(h, src, NE, right);                                         \
        shmem_##N##_put(st_##N, src, NE, right);                                    \
        shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, h + NE, src, NE, right);             \
        shmem_##N##_put_nbi(h + 2 * NE, src, NE, right);                            \
        shmem_##N##_iput(st_##N + NE, src, 2, 1, NE / 2, right);                    \
        shmem_##N##_p(st_##N + 3 * NE, (T)(me + 1), right);                         \
        shmem_ctx_##N##_p(SHMEM_CTX_DEFAULT, st_##N + 3 * NE + 1, (T)(me + 2), right); \
        shmem_quiet();                                                              \
        shmem_barrier_all();                                                        \
        for (int i = 0; i < NE; i++) {                                              \
            T want = (T)(left * 10 + i + 1);                                        \
            CHECK(h[i] == want && st_##N[i] == want, #N " put %d", i);              \
            CHECK(h[NE + i] == want && h[2 * NE + i] == want, #N " ctx/nbi put %d", i); \
        }                                                                           \
        for (int i = 0; i < NE / 2; i++)                                            \
            CHECK(st_##N[NE + 2 * i] == (T)(left * 10 + i + 1), #N " iput %d", i);  \
        CHECK(st_##N[3 * NE] == (T)(left + 1), #N " p");                            \
        CHECK(st_##N[3 * NE + 1] == (T)(left + 2), #N " ctx p");                    \
        memset(back, 0, sizeof back);                                               \
        shmem_##N##_get(back, h, NE, right);                                        \
        for (int i = 0; i < NE; i++) CHECK(back[i] == (T)(me * 10 + i + 1), #N " get %d", i); \
        memset(back, 0, sizeof back);                                               \
        shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, back, st_##N, NE, left);             \
        shmem_##N##_get_nbi(back + NE, st_##N, NE, left);                           \
        shmem_quiet();                                                              \
        for (int i = 0; i < NE; i++) {                                              \
            T want = (T)(((left + n - 1) % n) * 10 + i + 1);                        \
            CHECK(back[i] == want && back[NE + i] == want, #N " ctx get/get_nbi %d", i); \
        }                                                                           \
        memset(back, 0, sizeof back);                                               \
        shmem_##N##_iget(back, h, 3, 2, NE / 2, right);                             \
        for (int i = 0; i < NE / 2; i++)                                            \
            CHECK(back[3 * i] == (T)(me * 10 + 2 * i + 1), #N " iget %d", i);       \
        CHECK(shmem_##N##_g(h + 1, right) == (T)(me * 10 + 2), #N " g");            \
        CHECK(shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, st_##N + 2, right) == (T)(me * 10 + 3), #N " ctx g"); \
        shmem_barrier_all();                                                        \
        /* ibput: 2 blocks of 2 elements, block strides 3 (dest) and 4 (src) */     \
        T blk[8];                                                                   \
        for (int i = 0; i < 8; i++) blk[i] = (T)(me + i + 1);                       \
        memset(h, 0, 4 * NE * sizeof(T));                                           \
        shmem_barrier_all();                                                        \
        shmem_##N##_ibput(h, blk, 3, 4, 2, 2, right);                               \
        shmem_barrier_all();                                                        \
        CHECK(h[0] == (T)(left + 1) && h[1] == (T)(left + 2), #N " ibput block 0"); \
        CHECK(h[3] == (T)(left + 5) && h[4] == (T)(left + 6), #N " ibput block 1"); \
        memset(back, 0, sizeof back);                                               \
        shmem_##N##_ibget(back, h, 4, 3, 2, 2, right);                              \
        CHECK(back[0] == (T)(me + 1) && back[5] == (T)(me + 6), #N " ibget");       \
        shmem_barrier_all();                                                        \
        shmem_free(h);                                                              \
    }

SHMEMI_RMA_TYPES(TEST_RMA)

#define RUN(T, N) test_##N(me, n);

static unsigned char bytes_dst[64];

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    SHMEMI_RMA_TYPES(RUN)
    /* Sized and mem forms. */
    uint64_t w[4] = {1, 2, 3, (uint64_t)me};
    static uint64_t wd[8];
    int right = (me + 1) % n, left = (me + n - 1) % n;
    shmem_put64(wd, w, 4, right);
    shmem_put32(wd + 4, w, 2, right); /* 2 x 32 bits = w[0] */
    shmem_putmem(bytes_dst, "fshmem", 7, right);
    shmem_putmem_nbi(bytes_dst + 8, "nbi", 4, right);
    shmem_ctx_putmem(SHMEM_CTX_DEFAULT, bytes_dst + 16, "ctx", 4, right);
    shmem_iput128(wd + 6, w, 1, 1, 1, right);
    shmem_barrier_all();
    CHECK(wd[3] == (uint64_t)left && wd[4] == 1 && wd[6] == 1 && wd[7] == 2, "sized puts");
    CHECK(strcmp((char *)bytes_dst, "fshmem") == 0, "putmem");
    CHECK(strcmp((char *)bytes_dst + 8, "nbi") == 0, "putmem_nbi");
    CHECK(strcmp((char *)bytes_dst + 16, "ctx") == 0, "ctx_putmem");
    char got[8] = {0};
    shmem_getmem(got, bytes_dst, 7, right);
    CHECK(strcmp(got, "fshmem") == 0, "getmem");
    uint16_t s16[2] = {0, 0};
    shmem_get16(s16, wd, 2, left);
    CHECK(s16[0] == 1, "get16");
    /* Symmetric memory on both sides: a get into the heap and into static
     * data (on ipv6 the progress thread writes such a destination itself),
     * a put from them, strided and with a signal. */
    static long st_got[16];
    static uint64_t st_sig;
    long *hp = shmem_malloc(32 * sizeof(long));
    for (int i = 0; i < 32; i++) hp[i] = me * 100 + i;
    shmem_barrier_all();
    shmem_long_get(hp + 16, hp, 16, right);
    shmem_long_get(st_got, hp, 16, left);
    for (int i = 0; i < 16; i++) {
        CHECK(hp[16 + i] == right * 100 + i, "get into the heap %d", i);
        CHECK(st_got[i] == left * 100 + i, "get into static data %d", i);
    }
    shmem_long_iget(st_got, hp, 2, 1, 8, right);
    CHECK(st_got[2] == right * 100 + 1 && st_got[14] == right * 100 + 7, "iget into static data");
    shmem_barrier_all();
    shmem_long_put(hp, st_got, 8, right);          /* from static data */
    shmem_long_put_signal(hp + 8, hp + 16, 8, &st_sig, 1, SHMEM_SIGNAL_ADD, right);
    shmem_signal_wait_until(&st_sig, SHMEM_CMP_EQ, 1);
    shmem_barrier_all();
    CHECK(hp[2] == me * 100 + 1 && hp[8] == me * 100 && hp[15] == me * 100 + 7,
          "put from symmetric memory");
    shmem_barrier_all();
    shmem_free(hp);
    return done("rma");
}
