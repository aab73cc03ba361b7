/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spawner-proto.h: what the daemon and its process spawner say to each other
 * over their SOCK_SEQPACKET socket pair, one message per datagram:
 *
 *   daemon -> helper  SPAWN   header + NUL-terminated strings: the program,
 *                             log path, run file path, the replica's cgroup
 *                             (cgroup_request_format; "" none),
 *                             then the arguments, then the environment
 *   helper -> daemon  STARTED the pid, or which step failed and its errno
 *   helper -> daemon  ENDED   a keeper's pid and wait status, when reaped
 *
 * Both ends are built from this tree at once, so there is no versioning.
 */
#ifndef GPUAAS_SPAWNER_PROTO_H
#define GPUAAS_SPAWNER_PROTO_H

#include <stdint.h>

/*
 * A replica's run file, written by its keeper so that a daemon that was not
 * there still learns what ran and how it ended: "<pid> <start time>\n" at
 * offset 0 before the work starts (start time: /proc/<pid>/stat field 22),
 * "<exit code> <end ms>\n" at SPAWN_RUN_END_AT once the work has ended.
 */
#define SPAWN_RUN_END_AT 64

#define MSG_MAX (64 * 1024) /* a SPAWN: the command is at most 8 KiB, the environment small */
#define ENV_MAX 256
#define ARGS_MAX 256 /* argv[0] included */

enum msg_type { MSG_SPAWN = 1, MSG_STARTED, MSG_ENDED };
enum spawn_step { STEP_OK = 0, STEP_BAD_REQUEST, STEP_FORK };

struct spawn_header {
    uint32_t type;
    uint32_t seq;
    uint32_t switch_user;
    uint32_t uid;
    uint32_t gid;
    uint32_t n_args;
    uint32_t n_env;
};

struct spawn_note {
    uint32_t type;
    uint32_t seq;   /* STARTED: the SPAWN's */
    int32_t pid;    /* STARTED: > 0 when started; ENDED: the keeper */
    int32_t status; /* ENDED: wait status */
    int32_t step;   /* STARTED: enum spawn_step */
    int32_t err;    /* STARTED: errno of the failed step */
};

/*
 * The helper's loop on socket sock: serves SPAWN requests and tells the ends
 * of what it started, until the daemon closes its end. Never returns. Runs in
 * the gpuaas-spawner program, or in a child forked from the daemon: system
 * calls and static buffers only (no malloc, no stdio).
 */
__attribute__((noreturn)) void spawner_helper_main(int sock);

#endif
