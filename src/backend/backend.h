/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h: what runs placed work (DESIGN.md section 6). A backend is a
 * table of functions over one cluster: launch a workload on the nodes and
 * devices the scheduler chose, stop it (signal, grace, kill), and report
 * what really happened. The engine calls a backend from one thread only.
 * Times are milliseconds since the epoch, given by the caller, so that the
 * simulator can be driven faster than real time and tests are exact.
 *
 * Backends: sim, local, slurm and kubernetes (kube.h); backend_open() makes one of a cluster's
 * kind. What only some backends can do is an optional entry of the table
 * (NULL: not supported, as curl's protocol handlers): the engine asks the
 * table, never a backend's name.
 */
#ifndef GPUAAS_BACKEND_H
#define GPUAAS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
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
    const char *command;    /* "" when none */
    const char *image;      /* "" when none */
    int64_t cpu_milli;      /* per replica */
    int64_t mem_mib;        /* per replica */
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
    /*
     * What people should know, "" when nothing: BACKEND_NOT_STARTED why,
     * BACKEND_EXITED with an exit code not 0 how ("OOMKilled"), BACKEND_LOST what happened.
     */
    char message[200];
};

struct backend;
struct backend_fleet_report;
struct backend_devices;
struct backend_started;
struct backend_log;
struct buf;

struct backend_ops {
    const char *name;  /* the kind, as clusters' rows and log lines say it */
    const char *title; /* how texts for people name it ("Slurm"); NULL: as name */
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

    /* ---- optional: NULL (or 0) where the backend cannot ---- */

    /*
     * > 0: poll() learns of ends only by looking (a process that ends says
     * nothing), so the engine polls at least this often while it runs.
     */
    int64_t look_ms;
    /*
     * Discovery: what the cluster has (nodes, their state, their GPUs), for
     * the engine to bring into the store (struct backend_fleet_report says
     * how). Called every round, at most every b->discover_ms; fleet_loaded:
     * the engine rebuilt its fleet since the last call (a cluster may be
     * new). Returns 1 with *ret filled (its memory in a, the caller's), 0
     * when there is nothing new to report, or an error with ei (the store
     * keeps what it has).
     */
    int (*discover)(struct backend *b, int64_t now_ms, bool fleet_loaded, struct arena *a,
                    struct backend_fleet_report *ret, struct error_info *ei);
    /*
     * Device reports: which GPU indices of a node a running replica really
     * got, where the backend, not the scheduler, picks them (Slurm sets
     * CUDA_VISIBLE_DEVICES itself). Each report is handed out once; returns
     * how many of at most max were written to out.
     */
    size_t (*take_devices)(struct backend *b, struct backend_devices *out, size_t max);
    /*
     * Start reports, for backends whose launch() only asks for the work to
     * be started (Kubernetes: pod creates that a kubelet then runs): which
     * launched workloads now have every replica really running, and since
     * when. Each workload is reported at most once per launch, never for
     * adopted work that was running already, and before its end when poll()
     * hands out both in one call. Returns how many of at most max were
     * written to out.
     */
    size_t (*take_started)(struct backend *b, struct backend_started *out, size_t max);
    /*
     * Output of running work that the cluster keeps, not the daemon's log
     * directory (Kubernetes: replica 0's pod log). Called with the engine's
     * lock held, from any thread, it does no I/O: it hands out a reader
     * that needs nothing of the backend (struct backend_log), for the
     * caller to use outside that lock and free. ERR_NOT_FOUND: not work it
     * follows now.
     */
    int (*log_reader)(struct backend *b, int64_t workload_id, struct backend_log **ret,
                      struct error_info *ei);
    /*
     * At start, after every workload's work was adopted and before anything
     * is launched: ends work of this daemon that no workload claims (left
     * by a crash between a launch or stop and its record). The first max
     * such ids go to ids, how many there were to *ret_n. 0 or an error.
     */
    int (*sweep)(struct backend *b, int64_t *ids, size_t max, size_t *ret_n);
    /*
     * Queue-ahead, all three or none (used when b->queue_ahead): launch_after
     * hands the backend work to start on the devices of running work
     * after_id as soon as that ends (l names those devices; errors as
     * launch); the start is reported by poll() as after_id's end, and a
     * refusal learnt later as a BACKEND_NOT_STARTED of l's workload.
     * followable lists the workloads that work may be queued behind:
     * running or itself queued ahead; the first max go to ids and it returns
     * how many there are (more than max: call again with room for them).
     * holds says whether the
     * backend still follows a workload's work (launched, adopted or queued
     * ahead, its end not yet reported).
     */
    int (*launch_after)(struct backend *b, const struct backend_launch *l, int64_t after_id,
                        int64_t now_ms, struct error_info *ei);
    size_t (*followable)(struct backend *b, int64_t *ids, size_t max);
    bool (*holds)(struct backend *b, int64_t workload_id);
};

/* One GPU of a node as discovery reports it, by identity (a node's whole list). */
struct backend_gpu_report {
    int32_t index;      /* wanted index */
    int32_t min_index;  /* a taken index is replaced by the lowest free one from here */
    char cls[64];       /* its class's name: made when missing */
    const char *uuid;   /* "" when unknown: matched by index then */
    const char *model;  /* vendor string (a class made from it says so); "" when unknown */
    int64_t memory_mib; /* 0: unknown */
    int mig_mode;       /* -1: unknown */
    bool split;         /* a whole GPU whose MIG instances are rows of their own: not scheduled */
};

/*
 * One node as discovery reports it. A node the store lacks is added with
 * its state; a listed node's state follows unless keep_state (an admin's
 * drain stays). Its GPUs are either counted or identified:
 *  - counted (gpus NULL): n_counted GPUs of class counted_class, indices
 *    0..n-1; when the store has fewer, the missing indices are added;
 *  - identified (gpus set): the node's complete list, matched by UUID (else
 *    index): rows are updated, added, and those not reported turn health
 *    "down" (never deleted); health follows the report only between "ok",
 *    "down" and "mig", so an admin's "failed" or "degraded" stays.
 */
struct backend_node_report {
    const char *name;
    const char *state;          /* "ready", "drain" or "down" */
    const char *reason;         /* why drained or down; "" */
    int64_t cpu_milli, mem_mib; /* < 0: not known, not set */
    bool keep_state;
    const char *counted_class; /* "" or invalid as a class name: GPUs not counted */
    int32_t n_counted;
    const struct backend_gpu_report *gpus;
    size_t n_gpus;
};

struct backend_fleet_report {
    const struct backend_node_report *nodes;
    size_t n_nodes;
    /* The cluster's every node: one the store has and the report lacks turns "down", kept. */
    bool complete;
};

/* The most GPU indices one device report holds. */
#define BACKEND_MAX_NODE_DEVICES 64

/* A reader of a workload's output (ops->log_reader); usable from any thread. */
struct backend_log {
    /*
     * The output so far, from its start, into out (appended; out's own
     * maximum and the reader's bound what is read: an output past them is
     * cut). 0, or ERR_UNAVAILABLE with ei when the cluster cannot say; an
     * output not there (yet, or any more) is empty.
     */
    int (*read)(struct backend_log *l, struct buf *out, struct error_info *ei);
    void (*free)(struct backend_log *l);
};

/* A workload whose every replica is running (take_started). */
struct backend_started {
    int64_t workload_id;
    int64_t at_ms; /* when the backend saw the last of its replicas running */
};

/* The GPU indices a workload's replica got on one node (take_devices). */
struct backend_devices {
    int64_t workload_id;
    char node[128];
    size_t n_indices;
    int32_t indices[BACKEND_MAX_NODE_DEVICES]; /* ascending, distinct */
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
    /* Set by backend_open() from the settings, read by the engine: */
    int64_t discover_ms; /* least time between two ops->discover calls; 0: every round */
    bool queue_ahead;    /* queue work ahead in it (needs ops->launch_after) */
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

struct collector;
struct inv_declared_gpu;

/* Who a backend is made for: a cluster's row. */
struct backend_cluster {
    int64_t id;
    const char *name;
    const char *endpoint; /* slurm: the slurm.conf its tools read ("": their default) */
};

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
    /*
     * Discovery (ops->discover): this machine's GPUs from the collector's
     * NVML or nvidia-smi readings when they report any, else the declared
     * list; the node is named after this host. Not owned; NULL/0: none.
     */
    struct collector *collector;
    const struct inv_declared_gpu *gpus;
    size_t n_gpus;
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

/*
 * What backends are made with (backend_open), per kind; the daemon fills it
 * from its configuration, backend_settings_init() gives the defaults.
 */
struct backend_settings {
    /* local and slurm: per-workload logs (<id>.log) and state files; NULL: "gpuaas-logs" */
    const char *log_dir;
    int64_t run_uid, run_gid; /* local and slurm: who work runs as; < 0: the daemon's user */
    int64_t timeout_grace_ms; /* SIGTERM to SIGKILL when work reaches its max runtime */
    struct {
        int64_t speed; /* how much faster than real time */
    } sim;
    struct {
        const char *cgroup_root; /* cgroup v2 directory for limits, NULL for none */
        struct spawner *spawner; /* starts processes; NULL: each backend its own. Not owned */
        const char *podman;      /* runs work naming an image; NULL/"": refused */
        /*
         * Discovery of this machine's GPUs: the collector's NVML or
         * nvidia-smi readings, else the declared list. Not owned; NULL/0: none.
         * The kubernetes backend reads its dcgm-exporter pod labels too.
         */
        struct collector *collector;
        const struct inv_declared_gpu *gpus;
        size_t n_gpus;
    } local;
    struct {
        int64_t sync_ms; /* how often nodes and GPUs are read from Slurm */
        int64_t poll_ms; /* least time between two squeue runs */
        /* queue the next workload for a running one's GPUs in Slurm behind it */
        bool queue_ahead;
    } slurm;
    struct {
        int64_t sync_ms;           /* how often nodes and GPUs are read from the apiserver */
        const char *default_image; /* for work that names no image; NULL/"": refused */
        const char *tolerate;      /* taint keys the pods tolerate, comma-separated */
    } kube;
    /*
     * Tests: makes every cluster's backend instead of the kinds above (a
     * fake table), given open_arg; NULL: the built-in kinds.
     */
    struct backend *(*open)(const char *kind, const struct backend_cluster *c, void *open_arg,
                            struct error_info *ei);
    void *open_arg;
};

void backend_settings_init(struct backend_settings *s);

/*
 * Makes the backend of a cluster of that kind ("sim", "local", "slurm",
 * "kubernetes"), and logs what it says of itself (limits, accounting).
 * NULL with ei on error: that cluster's nodes take no work until it can be
 * made. Caller frees with b->ops->free(b).
 */
struct backend *backend_open(const char *kind, const struct backend_cluster *c,
                             const struct backend_settings *s, struct error_info *ei);

/* Where a workload's log is kept (local and slurm clusters); false when logs are not kept. */
bool backend_log_path(const struct backend_settings *s, int64_t workload_id, char *out,
                      size_t size);

#endif
