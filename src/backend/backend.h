/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h: what runs placed work (DESIGN.md section 6). A backend is a
 * table of functions over one cluster: launch a workload on the nodes and
 * devices the scheduler chose, stop it (signal, grace, kill), and report
 * what really happened. The engine calls a backend from one thread only.
 * Times are milliseconds since the epoch, given by the caller, so that the
 * simulator can be driven faster than real time and tests are exact.
 *
 * Backends: sim (here), local and slurm (later, same interface).
 */
#ifndef GPUAAS_BACKEND_H
#define GPUAAS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* One device (or share of one) given to one replica. */
struct backend_device {
    int64_t gpu_id;
    const char *uuid; /* may be NULL */
    int32_t index;    /* on its node */
    int32_t milli;
    const char *gpu_class; /* its class's name (slurm: the GRES type); may be NULL */
};

struct backend_replica {
    int32_t replica;
    int64_t node_id;
    const char *node_name;
    const struct backend_device *devices;
    size_t n_devices;
};

struct backend_launch {
    int64_t workload_id;
    int64_t project_id;
    const char *command; /* "" when none */
    const char *image;   /* "" when none */
    int64_t cpu_milli;   /* per replica */
    int64_t mem_mib;     /* per replica */
    int64_t duration_ms;    /* sim: how long it runs; < 0 until stopped */
    int64_t max_runtime_ms; /* < 0: no limit; reaching it ends the work, killed */
    const struct backend_replica *replicas;
    size_t n_replicas;
};

enum backend_end {
    BACKEND_EXITED = 1, /* ended by itself: exit_code says how */
    BACKEND_STOPPED,    /* ended after stop(): by the signal or the kill */
    BACKEND_TIMEOUT,    /* killed at its max runtime */
    BACKEND_LOST,       /* the backend no longer knows it (after a restart) */
    /*
     * It never started: launch() failed (the engine records that itself), or
     * a backend that launches asynchronously (slurm) learnt afterwards that
     * the launch failed, and reports it from poll() with a message.
     */
    BACKEND_NOT_STARTED,
};

struct backend_event {
    int64_t workload_id;
    int64_t at_ms;
    enum backend_end how;
    int exit_code;     /* negative: killed by that signal number */
    char message[200]; /* BACKEND_NOT_STARTED: why, "" when not said */
};

struct backend;

struct backend_ops {
    const char *name;
    /*
     * Starts all replicas at now_ms. Errors: ERR_INVALID, ERR_UNAVAILABLE, with ei.
     * A backend may also accept the launch and report it BACKEND_NOT_STARTED
     * from a later poll() (slurm: sbatch answers after launch() returns).
     */
    int (*launch)(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                  struct error_info *ei);
    /* Asks the work to stop now (SIGTERM or equivalent) and kills it at now_ms + grace_ms. */
    int (*stop)(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms);
    /* Ends that happened up to now_ms, oldest first, at most max; returns how many. */
    size_t (*poll)(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max);
    /* The earliest time poll() will have something, INT64_MAX when unknown or never. */
    int64_t (*next_event_ms)(struct backend *b);
    /*
     * After a daemon restart: takes back work the previous daemon launched at
     * started_ms. Work that ended meanwhile is reported by the next poll()
     * with its real end time; work the backend cannot find is BACKEND_LOST.
     */
    int (*adopt)(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                 int64_t now_ms, struct error_info *ei);
    void (*free)(struct backend *b);
};

/*
 * Ends a backend has seen and poll() has not handed out yet, in the order
 * pushed (src/backend/ends.c). Zero-initialised is empty.
 */
struct backend_ends {
    struct backend_event *ev;
    size_t n, cap;
};
void backend_ends_push(struct backend_ends *q, const struct backend_event *ev);
/* Whether an end of that workload is queued. */
bool backend_ends_has(const struct backend_ends *q, int64_t workload_id);
/* Moves the first min(n, max) ends to out; returns how many. */
size_t backend_ends_take(struct backend_ends *q, struct backend_event *out, size_t max);
void backend_ends_release(struct backend_ends *q);

/* Checks a launch request's shape (id, replicas, devices); 0 or ERR_INVALID with ei. */
int backend_check_launch(const struct backend_launch *l, struct error_info *ei);

/*
 * The start of the names a backend gives what it runs outside the daemon
 * (cgroups, containers, Slurm jobs): "gpuaas-<8 hex digits>-", a hash of the
 * log directory's real path. The same after a restart, so that work is
 * found again by name; different for daemons with their own stores, whose
 * workload ids are not, on one machine or one Slurm cluster. Caller frees.
 */
char *backend_instance_prefix(const char *log_dir);

/*
 * Whether the user `uid` (primary group `gid`, and its other groups as this
 * host's group database knows them) may reach `dir`: search permission on
 * it and on every directory above it. Work run as another user opens its
 * log there itself (Slurm's slurmstepd does). Returns 0, or ERR_INVALID
 * naming the first directory it cannot pass.
 */
int backend_dir_reachable(const char *dir, uid_t uid, gid_t gid, struct error_info *ei);

struct backend {
    const struct backend_ops *ops;
    int64_t cluster_id;
    void *impl;
};

struct sim_options {
    /*
     * Speed of simulated time: 1 is real time, 60 runs a minute of work in a
     * second. Durations and grace periods are divided by it.
     */
    int64_t speed;
    /* How long a stopped workload takes to exit after the signal (before speed). */
    int64_t exit_after_signal_ms;
};

/*
 * The simulator's rules (src/backend/sim.c). Spans are divided by speed
 * (speed < 1 counts as 1); a positive span never rounds down to 0 ms.
 *  - launch: the work ends at now + duration_ms (BACKEND_EXITED, exit 0), or
 *    never when duration_ms < 0; when max_runtime_ms >= 0 is strictly
 *    shorter, it ends at now + max_runtime_ms instead (BACKEND_TIMEOUT, -9).
 *    ERR_INVALID: no replicas, or a workload id <= 0; ERR_CONFLICT: that id
 *    is still known (running, or ended and not yet polled).
 *  - stop: the work ends BACKEND_STOPPED at now + min(grace_ms,
 *    exit_after_signal_ms), at least 1 ms later: exit -15 when it exits on
 *    the signal, -9 when the grace is shorter and it is killed. If it would
 *    end by itself (or time out) no later than that, that end stands. An
 *    unknown or already ended workload is a no-op; stop always returns 0.
 *  - poll: ends up to now, by end time then workload id, each exactly once;
 *    a polled workload is forgotten (its id may be launched again).
 *  - adopt: as launch, with the times counted from started_ms
 *    (ERR_INVALID when started_ms > now_ms). The simulator never loses work,
 *    so it never reports BACKEND_LOST.
 * launch, stop and each polled event cost O(log n) in the work it knows.
 */
/* A simulated backend: work "runs" for its duration. Caller frees with b->ops->free(b). */
struct backend *backend_sim_new(int64_t cluster_id, const struct sim_options *opt);

struct local_options {
    /* Where per-workload logs (<id>.log) and run files (<id>.<replica>.run) go; made 0700. */
    const char *log_dir;
    /*
     * Where replicas' cgroups go (cgroup.h): NULL or "" for none, "auto"
     * (the machine's cgroup v2, else v1's cpu and memory hierarchies) or a
     * cgroup v2 directory the daemon may write. Each replica then runs in a
     * child gpuaas-<id>-<replica> with the launch's CPU and memory limits;
     * when none can be made, work runs without limits and
     * backend_local_cgroups() says why.
     */
    const char *cgroup_root;
    /* Unprivileged user and group to run work as; < 0 (or a daemon not root): the daemon's. */
    int64_t run_uid;
    int64_t run_gid;
    /* Between SIGTERM and SIGKILL when work reaches its max runtime; < 0 counts as 0. */
    int64_t timeout_grace_ms;
    /*
     * Starts the processes (backend/spawner.h); not owned, may be shared by
     * several local backends. NULL: the backend starts its own at its first
     * launch. A daemon starts one before it grows, so that forking it is cheap.
     */
    struct spawner *spawner;
    /*
     * Runs work that names an image: a path, or a name looked up in PATH;
     * NULL: "podman". "" or not found: such work is refused (ERR_INVALID).
     */
    const char *podman;
};

/*
 * The local backend's rules (src/backend/local.c, docs/local-backend.md):
 *  - launch: each replica is `/bin/sh -c <command>` in its own session and
 *    process group, with CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES set
 *    to its devices (uuids, else indices, comma-separated), GPUAAS_WORKLOAD_ID
 *    and GPUAAS_REPLICA, a minimal environment otherwise, stdin /dev/null and
 *    stdout/stderr appended to <log_dir>/<id>.log (0600). Work that names an
 *    image runs as `podman run` of it with the same command, devices (CDI),
 *    limits and variables. Each replica's keeper writes its run file
 *    <log_dir>/<id>.<replica>.run (pid and start time, then how it ended)
 *    for adopt(); a log or run file it cannot open ends the replica at once
 *    with 127. ERR_INVALID: no replicas, id <= 0, no command, an image and
 *    no podman; ERR_CONFLICT: the id is still known; ERR_UNAVAILABLE: the
 *    machine refused (fork, cgroup), with nothing left running.
 *  - stop: SIGTERM to every replica's process group now, SIGKILL at now +
 *    grace (sent by the first poll() at or after that time; a container is
 *    also killed by name). Unknown or ended work: a no-op; returns 0.
 *  - poll: learns of ends from the spawner (from /proc and run files for
 *    work it did not start); when a replica's main process ends, what is
 *    left of its process group is killed, except after a stop, whose grace
 *    the whole group gets. A workload is reported
 *    once, when all its replicas have ended, at the now_ms of that poll:
 *    STOPPED after stop(), TIMEOUT after its max runtime, EXITED otherwise.
 *    exit_code: that of the lowest-numbered replica that did not exit 0
 *    (negative: killed by that signal), else 0; -1 when unknown (adopted
 *    work whose keeper did not say). O(replicas known) per call.
 *  - adopt: reads the run files and takes back the replicas whose pid is
 *    alive with the same start time (pid reuse); when none is found and no
 *    run file says how it ended, the next poll reports BACKEND_LOST at the
 *    adopt's now_ms.
 *  - free: kills nothing (work outlives the daemon).
 */
/* The machine the daemon runs on. NULL with ei on error (log_dir missing or not creatable). */
struct backend *backend_local_new(int64_t cluster_id, const struct local_options *opt,
                                  struct error_info *ei);
/*
 * Whether replicas get cgroup limits (for the daemon to say so at start), and
 * *ret_detail (may be NULL) where, or why not. b must be local.
 */
bool backend_local_cgroups(const struct backend *b, const char **ret_detail);

#endif
