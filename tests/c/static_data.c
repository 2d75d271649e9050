/* Static and global variables are symmetric: puts, gets, atomics, waits
 * and collectives on initialized (.data) and zeroed (.bss) variables, file
 * statics and function statics. */
#include "check.h"

int global_init[4] = {1, 2, 3, 4};
long global_bss[1024];
static double file_static = 2.5;
static long long counter;

static int *func_static(void) {
    static int in_func[2] = {7, 7};
    return in_func;
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();
    int right = (me + 1) % n, left = (me + n - 1) % n;
    CHECK(global_init[2] == 3 && file_static == 2.5, "initial values survive init");
    shmem_barrier_all();
    int four[4] = {me, me, me, me};
    shmem_int_put(global_init, four, 4, right);
    shmem_long_p(&global_bss[1023], 100 + me, right);
    shmem_double_p(&file_static, me + 0.5, right);
    shmem_int_p(func_static() + 1, me, right);
    shmem_longlong_atomic_add(&counter, me + 1, 0);
    shmem_barrier_all();
    CHECK(global_init[0] == left && global_init[3] == left, "put to .data");
    CHECK(global_bss[1023] == 100 + left, "p to .bss");
    CHECK(file_static == left + 0.5, "file static");
    CHECK(func_static()[1] == left && func_static()[0] == 7, "function static");
    if (me == 0) CHECK(counter == (long long)n * (n + 1) / 2, "atomics %lld", counter);
    CHECK(shmem_long_g(&global_bss[1023], right) == 100 + me, "g from .bss");
    /* wait on a static word */
    static int flag;
    shmem_barrier_all();
    shmem_int_atomic_set(&flag, 1, right);
    shmem_int_wait_until(&flag, SHMEM_CMP_EQ, 1);
    /* collectives on static buffers */
    static long src[4], dst[4], bdst[4];
    src[0] = me;
    shmem_long_max_reduce(SHMEM_TEAM_WORLD, dst, src, 1);
    CHECK(dst[0] == n - 1, "reduce on statics");
    shmem_long_broadcast(SHMEM_TEAM_WORLD, bdst, global_bss + 1023, 1, 0);
    CHECK(bdst[0] == 100 + (n - 1), "broadcast from .bss %ld", bdst[0]);
    return done("static_data");
}
