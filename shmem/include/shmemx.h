/*
 * shmemx.h -- fshmem extensions to OpenSHMEM.
 *
 * The OpenSHMEM 1.6 additions fshmem provides (shmem_ibput/ibget,
 * shmem_<type>_sum_inscan/exscan, shmem_signal_add/set, shmem_pe_quiet,
 * shmem_team_ptr) are declared in shmem.h under their 1.6 names; this
 * header declares fshmem-specific routines: user active messages.
 */
#ifndef FSHMEM_SHMEMX_H
#define FSHMEM_SHMEMX_H

#include <shmem.h>

/* Defined when the library is fshmem. */
#define SHMEMX_FSHMEM 1

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * User active messages (GASNet style).
 *
 * A handler runs on the target PE when a message naming it arrives, with
 * the message's 32-bit arguments and payload:
 *
 *   void handler(shmemx_am_token_t token, const uint32_t *args, size_t nargs,
 *                const void *payload, size_t nbytes, void *user);
 *
 * shmemx_am_register is collective: every PE registers the same handlers
 * in the same order (so the returned numbers agree), and it ends with a
 * barrier (so no PE sends to a PE that has not registered yet) that also
 * checks that every PE registered the handler at the same number: a
 * registration that fails on one PE fails on every PE, each ending the
 * job with a line naming the PE and the cause.
 *
 * Requests: Short (arguments only), Medium (arguments and at most
 * SHMEMX_AM_MAX_MEDIUM payload bytes, which the handler may read during
 * the call only) and Long (at most SHMEMX_AM_MAX_LONG bytes written at the
 * symmetric address dest on the target before its handler runs; the
 * handler receives a copy of them).
 *
 * Handler rules, enforced: a handler runs on the runtime's progress path
 * (inside a call that polls, or a conduit's progress thread), so it must
 * be short and must not block. It may reply at most once, and only to a
 * request, with shmemx_am_reply_*; any other fshmem call from a handler
 * (put, get, atomics, waits, quiet, barriers, collectives, requests,
 * allocation) reports "called from an active-message handler" and ends the
 * job, as other misuse does. A second reply, or a reply from a reply
 * handler, ends the job the same way.
 *
 * Handlers run while the program polls: shmemx_am_poll, waits and
 * barriers serve pending messages, including the barrier that ends a
 * registration. A handler that reads handler numbers from variables (to
 * reply) needs them stored on every PE before the first request: register
 * every handler, then shmem_barrier_all, then send.
 */
#define SHMEMX_AM_MAX_ARGS 16
#define SHMEMX_AM_MAX_MEDIUM 4096
#define SHMEMX_AM_MAX_LONG 65536

/* The token a handler is given: names the requester and carries the
 * reply. Valid during the handler call only. */
typedef void *shmemx_am_token_t;

/* A handler. */
typedef void (*shmemx_am_handler_t)(shmemx_am_token_t token, const uint32_t *args,
                                    size_t nargs, const void *payload, size_t nbytes,
                                    void *user);

/* Registers fn (called with user); collective; returns the handler
 * number to name in requests and replies (64..223).
 *
 * Requests and replies name a number this function returned. A number it
 * can never return (below 64, or 224..255) ends the job at the call,
 * naming the PE, the call and the number, on every conduit: on the fpga
 * conduit 224..255 are the handlers of the boards' compute cores, which
 * run on the board itself (the GEMM engine; a Rust program reaches it
 * through shmem::compute, and there is no C call for it). A number in
 * 64..223 that no PE registered ends the job when the message arrives
 * ("no handler registered"). */
int shmemx_am_register(shmemx_am_handler_t fn, void *user);

/* Requests to handler `handler` of PE `pe`. */
void shmemx_am_request_short(int pe, int handler, const uint32_t *args, size_t nargs);
void shmemx_am_request_medium(int pe, int handler, const uint32_t *args, size_t nargs,
                              const void *payload, size_t nbytes);
void shmemx_am_request_long(int pe, int handler, const uint32_t *args, size_t nargs,
                            const void *payload, size_t nbytes, void *dest);

/* In a request handler: the requester, and the one reply. */
int shmemx_am_src_pe(shmemx_am_token_t token);
void shmemx_am_reply_short(shmemx_am_token_t token, int handler, const uint32_t *args,
                           size_t nargs);
void shmemx_am_reply_medium(shmemx_am_token_t token, int handler, const uint32_t *args,
                            size_t nargs, const void *payload, size_t nbytes);
void shmemx_am_reply_long(shmemx_am_token_t token, int handler, const uint32_t *args,
                          size_t nargs, const void *payload, size_t nbytes, void *dest);

/* Serves pending incoming messages. */
void shmemx_am_poll(void);

#ifdef __cplusplus
}
#endif

#endif /* FSHMEM_SHMEMX_H */
