/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spawner.h: starts the local backend's processes from a small helper
 * process, so that the daemon itself never forks.
 *
 * Why: fork() of the daemon copies the page tables of a large, busy,
 * multi-threaded process and write-protects its memory, so every thread
 * then takes copy-on-write faults; at hundreds of launches a second that was
 * most of the daemon's time (docs/benchmarks.md). The helper is the small
 * gpuaas-spawner program (libc only: a fork copies a few dozen mappings, not
 * the daemon's hundreds), or else a child forked from the daemon. It holds
 * nothing but a socket, is single-threaded, allocates nothing (as a forked
 * child the daemon's locks may have been held at fork time), and leaves
 * when the daemon closes its end or dies.
 *
 * Each spawned process is a keeper (see keep() in spawner-helper.c) that
 * runs the program as its child in its own session and process group,
 * and writes its pid and start time, then how and when the work ended, to a
 * run file (SPAWN_RUN_END_AT), so that a daemon that was down meanwhile
 * still finds the work, or learns how and when it ended.
 * The helper reaps its keepers; before reaping one it kills what is left of
 * its process group (the zombie holds the group id, so it cannot be reused
 * meanwhile) and tells the daemon the keeper's wait status, which is the
 * work's own.
 */
#ifndef GPUAAS_SPAWNER_H
#define GPUAAS_SPAWNER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/spawner-proto.h"
#include "base/err.h"

struct spawner;

struct spawn_request {
    const char *program;     /* the path to execute */
    const char *const *argv; /* NULL-terminated, argv[0] included */
    char *const *envp;       /* NULL-terminated: the work's whole environment */
    const char *log_path;    /* stdout and stderr, appended; created 0600 */
    const char *run_path; /* created or truncated 0600: the keeper's run file (spawner-proto.h) */
    const char
        *cgroup; /* the cgroup to make and put the work in (cgroup_request_format), NULL: none */
    bool switch_user;         /* setgroups/setgid/setuid to uid/gid before exec */
    uid_t uid;
    gid_t gid;
};

/*
 * Starts the helper: the gpuaas-spawner program at path program, or, when
 * program is NULL, a child forked from this process (cheap only while this
 * process is small). ERR_UNAVAILABLE with ei when that fails.
 */
int spawner_start(const char *program, struct spawner **ret, struct error_info *ei);

/*
 * Starts one process; *ret_pid is its pid (also its process group and
 * session id). Its keeper opens the log and run files itself: when it
 * cannot, the process ends at once with 127 and says why in its log (or on
 * the daemon's error output). ERR_INVALID (a request too large) or
 * ERR_UNAVAILABLE (fork failed, or the helper is gone: spawner_alive() then
 * says false), with ei.
 */
int spawner_spawn(struct spawner *sp, const struct spawn_request *rq, pid_t *ret_pid,
                  struct error_info *ei);

/*
 * Reads what the helper has said so far, without waiting. False once the
 * helper is gone: ends of what it started will not be told any more.
 */
bool spawner_alive(struct spawner *sp);

/*
 * Whether a process this spawner started has been told ended (by the last
 * spawner_alive() or spawn); when it has, *ret_status is its wait status
 * and the end is forgotten (each end is taken once).
 */
bool spawner_take_end(struct spawner *sp, pid_t pid, int *ret_status);

/* Nobody follows pid any more (a launch undone): its end, told or to come, is dropped. */
void spawner_forget(struct spawner *sp, pid_t pid);

/* Closes the helper's socket and reaps it; what it started keeps running. NULL is fine. */
void spawner_stop(struct spawner *sp);

#endif
