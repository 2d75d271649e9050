/* Setup and query: init_thread, query_thread, my_pe/n_pes and the
 * deprecated names, pe/addr_accessible, shmem_ptr, info, pcontrol. */
#include "check.h"
#include <string.h>

static long sym_static;

int main(void) {
    int provided = -1;
    CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
    CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
    int q = -1;
    shmem_query_thread(&q);
    CHECK(q == provided, "query_thread %d", q);
    shmem_init(); /* a second init (1.6): matched by its own finalize */
    int me = shmem_my_pe(), n = shmem_n_pes();
    CHECK(me >= 0 && me < n, "my_pe %d of %d", me, n);
    CHECK(_my_pe() == me && _num_pes() == n, "deprecated names");
    for (int pe = -1; pe <= n; pe++)
        CHECK(shmem_pe_accessible(pe) == (pe >= 0 && pe < n), "pe_accessible(%d)", pe);
    long *heap = shmem_malloc(sizeof(long));
    long local = 0;
    CHECK(shmem_addr_accessible(heap, (me + 1) % n), "heap accessible");
    CHECK(shmem_addr_accessible(&sym_static, 0), "static accessible");
    CHECK(!shmem_addr_accessible(&local, 0), "stack not accessible");
    CHECK(shmem_ptr(heap, me) == heap, "ptr to self");
    /* shmem_ptr reaches exactly the PEs of this host, the shared team
     * (every PE on smp; with oshrun --hosts, the host's PEs). */
    for (int pe = 0; pe < n; pe++) {
        int mate = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED) >= 0;
        CHECK((shmem_ptr(heap, pe) != NULL) == mate, "shmem_ptr to PE %d, %s the shared team",
              pe, mate ? "in" : "not in");
    }
    /* Each PE names its shared team (the launcher's test checks it
     * against the hosts it made), by world rank. */
    {
        int sn = shmem_team_n_pes(SHMEM_TEAM_SHARED);
        char list[1024];
        size_t at = 0;
        list[0] = 0;
        for (int i = 0; i < sn && at < sizeof list - 16; i++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%d", i ? "," : "",
                                   shmem_team_translate_pe(SHMEM_TEAM_SHARED, i, SHMEM_TEAM_WORLD));
        printf("setup: PE %d shares memory with PEs %s\n", me, list);
    }
    int right = (me + 1) % n;
    long *peer = shmem_ptr(heap, right);
    *heap = 100 + me;
    shmem_barrier_all();
    CHECK(!peer || *peer == 100 + right, "load through shmem_ptr: %ld", peer ? *peer : -1);
    long *speer = shmem_ptr(&sym_static, right);
    CHECK((speer != NULL) == (peer != NULL), "static data through shmem_ptr");
    sym_static = 7 + me;
    shmem_barrier_all();
    CHECK(!speer || *speer == 7 + right, "static peer %ld", speer ? *speer : -1);
    CHECK(shmem_ptr(&local, 0) == NULL, "ptr of a stack variable");
    int major = 0, minor = 0;
    shmem_info_get_version(&major, &minor);
    CHECK(major == SHMEM_MAJOR_VERSION && minor == SHMEM_MINOR_VERSION, "version %d.%d", major, minor);
    char name[SHMEM_MAX_NAME_LEN];
    shmem_info_get_name(name);
    CHECK(strncmp(name, "fshmem", 6) == 0, "name %s", name);
    shmem_pcontrol(1);
    shmem_pcontrol(2, "extra");
    shmem_quiet();
    shmem_fence();
    shmem_sync_all();
    shmem_free(heap);
    shmem_finalize(); /* matches the second init: a barrier */
    int on = 0;
    shmem_query_initialized(&on);
    CHECK(on == 1, "still initialized after the inner finalize");
    return done("setup");
}
