/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm.h: the backend that runs placed work on a real Slurm cluster (issue
 * 8, docs/slurm-backend.md), through Slurm's own command-line tools (sbatch,
 * squeue, scancel, sinfo). Implements struct backend_ops of backend.h, and
 * adds node discovery from Slurm's node records for the engine to refresh
 * nodes and GPUs from.
 */
#ifndef GPUAAS_BACKEND_SLURM_H
#define GPUAAS_BACKEND_SLURM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

struct slurm_options {
    /*
     * Where per-workload files go, created 0700: <id>.log (the job's output,
     * appended) and <id>.slurm (state: the Slurm job id, for adopt); the
     * batch script goes to sbatch on its stdin. Slurm's nodes write the
     * log, so on a real cluster it is on a file system they share with the
     * daemon. A relative path is taken from the daemon's working directory.
     */
    const char *log_dir;
    /* slurm.conf for the tools (SLURM_CONF); NULL or "": the daemon's SLURM_CONF, else theirs. */
    const char *conf;
    /*
     * Where sbatch, squeue, scancel and sinfo are (and, optional, scontrol and
     * sacct); NULL or "": searched in PATH at creation.
     */
    const char *bin_dir;
    /* Partition to submit to; NULL or "": the cluster's default. */
    const char *partition;
    /*
     * jobcomp/filetxt file (JobCompLoc) to learn how jobs ended that Slurm
     * has already forgotten (older than MinJobAge, or a controller started
     * with a clean state), e.g. after a long daemon outage. NULL or "": the
     * cluster's own, from `scontrol show config`, when it is jobcomp/filetxt
     * and this host can read the file; "none": none. Asked after sacct, for
     * the jobs it does not know; without either such jobs are reported LOST.
     */
    const char *jobcomp_path;
    /*
     * How long sacct may keep failing (slurmdbd down) before jobs Slurm no
     * longer lists are concluded without it (jobcomp, else LOST); while it
     * fails they stay unconcluded and sacct is asked again every few
     * seconds. <= 0: 10 minutes.
     */
    int64_t sacct_patience_ms;
    /*
     * Run work as this user id (sbatch --uid) and group id (--gid; <= 0: the
     * same number as the user id) when the daemon is root; <= 0, or a daemon
     * that is not root: as the daemon's own user. The log directory must
     * then be reachable by that user (Slurm opens the work's log as it);
     * backend_slurm_new() refuses one that is not.
     */
    int64_t run_uid, run_gid;
    /* Least time between two squeue runs; <= 0: 500 ms. */
    int64_t poll_interval_ms;
    /* sbatch runs at once (launch() does not wait for sbatch's answer); <= 0: 4. */
    int64_t max_submits;
    /* Longest any one tool may run before it is killed; <= 0: 10 s. */
    int64_t command_timeout_ms;
    /* Between SIGTERM and SIGKILL when work reaches its max runtime; < 0 counts as 0. */
    int64_t timeout_grace_ms;
};

/*
 * The Slurm backend's rules (src/backend/slurm.c, docs/slurm-backend.md):
 *  - launch: one batch job per workload, `sbatch --parsable --no-requeue
 *    --job-name=gpuaas-<id> --nodelist=<its nodes> --gres=gpu:<n> ...`, its
 *    output appended to <log_dir>/<id>.log; the command runs as `/bin/sh -c`
 *    with the CUDA_VISIBLE_DEVICES Slurm sets (NVIDIA_VISIBLE_DEVICES made
 *    equal to it), GPUAAS_WORKLOAD_ID and GPUAAS_REPLICA. One srun task per
 *    node starts the replicas placed there, splitting the node's GPUs among
 *    them; every node must hold the same number of GPUs (Slurm asks one GRES
 *    of each). launch() does not wait for sbatch: it builds the script and
 *    starts sbatch with it on stdin (or queues it while max_submits run); poll() takes the
 *    answer and writes the job id to <log_dir>/<id>.slurm. When sbatch
 *    fails, times out or its state file cannot be written (the job is then
 *    cancelled), poll() reports BACKEND_NOT_STARTED at its now_ms with a
 *    message. ERR_INVALID: the shape (see backend_check_launch), an empty
 *    command, an image, a node name Slurm cannot take, an unsupported
 *    replica layout; ERR_CONFLICT: the id is still known; ERR_UNAVAILABLE:
 *    sbatch could not be started.
 *  - stop: a job Slurm runs gets SIGTERM (`scancel --full --signal=TERM`),
 *    one not yet running is cancelled; at now + grace the first poll() at or
 *    after it sends SIGKILL (`scancel --batch --signal=KILL`, or a plain
 *    cancel). Work whose sbatch is still running is cancelled when its job
 *    id comes; work whose sbatch waits for its turn is never submitted and
 *    is reported STOPPED (exit -1) at now_ms. Unknown or ended work: a
 *    no-op. Returns 0.
 *  - poll: takes sbatch's answers, starts waiting sbatch runs, then runs
 *    squeue about our job ids at most every poll_interval_ms (and sends
 *    kills and max-runtime signals that have come due: max runtime counts
 *    from the start Slurm reports, Slurm's --time is a backstop minutes
 *    later); a job in a final state is reported once, at Slurm's end time
 *    (clamped to [launch, now], and no earlier than the signal for
 *    signalled work): STOPPED after stop(), TIMEOUT after its max runtime (or Slurm's time limit),
 *    EXITED otherwise; exit_code from Slurm's wait status (negative: the
 *    signal), -1 when Slurm has none for a job that did not complete. Jobs
 *    Slurm no longer lists (older than MinJobAge, or a controller reset) are
 *    asked of sacct when the cluster keeps accounting in slurmdbd (one run
 *    for all of them, each matched by job id and name), then looked up in
 *    jobcomp_path, else LOST at now; while sacct fails they wait, at most
 *    sacct_patience_ms.
 *  - adopt: reads <log_dir>/<id>.slurm and follows that job again (checking
 *    its name is gpuaas-<id>); a job that ended meanwhile is reported with
 *    Slurm's real end time; without a state file the newest job named
 *    gpuaas-<id> is followed, and when there is none it is LOST at the
 *    adopt's now_ms.
 *  - free: cancels nothing (work outlives the daemon); sbatch runs still
 *    waiting or running are seen through, so their state files exist.
 */
/* A Slurm cluster. NULL with ei on error (log_dir not creatable, tools not found). */
struct backend *backend_slurm_new(int64_t cluster_id, const struct slurm_options *opt,
                                  struct error_info *ei);

/* What the backend last learnt from Slurm about a workload's job. */
struct slurm_job_info {
    int64_t job_id;
    char state[32];   /* Slurm's job_state: PENDING, RUNNING, COMPLETED, ...; "" until seen */
    char nodes[256];  /* Slurm's node list */
    char gres[256];   /* GPUs Slurm assigned while it ran, e.g. gpu:h100:2(IDX:0-1) */
    int64_t start_ms; /* 0 until it started */
};
/* Fills ret for a workload the backend knows; ERR_NOT_FOUND otherwise. b must be slurm. */
int backend_slurm_job(struct backend *b, int64_t workload_id, struct slurm_job_info *ret);

/*
 * One job as the backend asks squeue about it: `squeue --noheader
 * --states=all --Format=JobID:|,State:|,StartTime:|,EndTime:|,exit_code:|,
 * NodeList:|,Name:|` with SLURM_TIME_FORMAT=%s, one line per job, each field
 * followed by '|' (the name last, so a '|' in it is harmless).
 */
struct slurm_queue_job {
    int64_t job_id;
    char state[32];      /* RUNNING, COMPLETED, ... */
    int64_t start_s;     /* seconds since the epoch; 0 when none (N/A, NONE, Unknown) */
    int64_t end_s;       /* likewise */
    int64_t exit_status; /* Slurm's wait status of the batch script (768: exit 3); -1: none */
    char nodes[256];     /* truncated */
    char name[128];      /* truncated */
};
/*
 * Parses that output (len bytes, need not end in a newline). Lines whose
 * job id is an array or heterogeneous job's (123_4, 123+0) are skipped;
 * empty lines too. Returns 0 with *ret (caller frees; NULL when none) and
 * *ret_n, or ERR_INVALID with ei when a line is malformed (missing fields,
 * a state that is not upper-case letters, a time that is not seconds or
 * N/A/NONE/Unknown, an exit status that is not a number).
 */
int slurm_parse_queue(const char *text, size_t len, struct slurm_queue_job **ret, size_t *ret_n,
                      struct error_info *ei);

/* One node as Slurm describes it. */
struct slurm_node {
    char *name;
    char *state;  /* gpuaas' node state: "ready", "drain" or "down" */
    char *reason; /* why drained or down, "" when none */
    int64_t cpu_milli;
    int64_t mem_mib;
    char *gpu_type; /* GRES type of its GPUs, e.g. "h100"; "" when untyped */
    int32_t n_gpus;
    int32_t n_gpus_used;
};

/*
 * Nodes and GPUs from Slurm's node records (`sinfo --json`), for the engine
 * to refresh the store on a schedule. *ret (caller frees with
 * slurm_nodes_free) holds *ret_n nodes in Slurm's order. ERR_UNAVAILABLE:
 * sinfo failed; ERR_INVALID: its output is not what Slurm 22.05 writes.
 */
int backend_slurm_nodes(struct backend *b, struct slurm_node **ret, size_t *ret_n,
                        struct error_info *ei);
/* Parses the JSON `sinfo --json` writes (pure; for tests). As backend_slurm_nodes. */
int slurm_parse_nodes(const char *json, size_t len, struct slurm_node **ret, size_t *ret_n,
                      struct error_info *ei);
void slurm_nodes_free(struct slurm_node *nodes, size_t n);

/* The most GPU indices one node's entry holds, and the highest index taken. */
#define SLURM_MAX_NODE_DEVICES 64
#define SLURM_MAX_DEVICE_INDEX 1023

/* The GPUs Slurm gave a job on one node (what it set CUDA_VISIBLE_DEVICES from). */
struct slurm_job_devices {
    int64_t workload_id; /* 0 from the parser */
    int64_t job_id;      /* Slurm's; 0 from the parser */
    char node[128];
    size_t n_indices;
    int32_t indices[SLURM_MAX_NODE_DEVICES]; /* ascending, distinct */
};

/*
 * Parses `scontrol --details --oneliner show job <id>` output (len bytes;
 * the multi-line form too): each per-node group "Nodes=<hostlist> CPU_IDs=..
 * Mem=.. GRES=gpu:h100:2(IDX:0-1,3)" gives one entry per node of the
 * hostlist (node[1-2,5], a1,b[01-03]: zero padding kept) with the indices
 * of its "gpu" GRES entries (other GRES, IDX:N/A and groups without GRES
 * give none; a node with no index is left out). The job-level JOB_GRES= is
 * not a group. Returns 0 with *ret (caller frees; NULL when none) and
 * *ret_n, or ERR_INVALID with ei: a bad hostlist (unclosed bracket, two
 * brackets, a bad range, a name over 127 bytes, more than 4096 nodes), a GPU
 * entry whose parenthesis is not closed, a bad index list (not numbers,
 * a range going down, an index above SLURM_MAX_DEVICE_INDEX, more than
 * SLURM_MAX_NODE_DEVICES on a node). Pure, for tests.
 */
int slurm_parse_job_devices(const char *text, size_t len, struct slurm_job_devices **ret,
                            size_t *ret_n, struct error_info *ei);

/*
 * The GPUs Slurm gave running jobs, each job's nodes handed out once, at
 * most max into out; returns how many. poll() learns them (one scontrol
 * per job) for jobs Slurm has run for at least a second and at most a few
 * jobs per squeue, so short jobs cost nothing; a job whose answer cannot be
 * read is asked again at later polls, three times at most. b must be slurm.
 */
size_t backend_slurm_take_devices(struct backend *b, struct slurm_job_devices *out, size_t max);

/*
 * At start, once every workload's job has been adopted: cancels the jobs
 * named as this daemon names them (backend_instance_prefix) that are not
 * over and that no adopted workload claims, pending or running. They are
 * left by a crash between a job's submission or cancel and the store's
 * record of it (work queued ahead, then taken back or cancelled; work
 * queued ahead whose record never committed): left alone they would run
 * unrecorded, or twice. A job whose workload is still looked for by name is
 * kept. Sets *ret_n to how many were cancelled, their ids in ids (at most
 * max). ERR_UNAVAILABLE when squeue could not be asked. b must be slurm.
 */
int backend_slurm_sweep(struct backend *b, int64_t *ids, size_t max, size_t *ret_n);

/*
 * Queue-ahead (the engine's, docs/slurm-backend.md): launches l like
 * launch(), but its job waits in Slurm's queue for the end of the job of
 * workload after_id (sbatch --dependency=afterany:<that job>), pinned to the
 * nodes and GPU count of l, so that Slurm starts it on those GPUs the
 * moment that job ends, in the pass that end triggers. ERR_UNAVAILABLE when
 * after_id's job is not one backend_slurm_followable() lists; else as
 * launch(). b must be slurm.
 */
int backend_slurm_launch_after(struct backend *b, const struct backend_launch *l, int64_t after_id,
                               int64_t now_ms, struct error_info *ei);

/*
 * Workloads that work could be queued behind: their jobs Slurm runs (seen
 * RUNNING), not being stopped, in launch order: the first max go to ids;
 * returns how many there are. b must be slurm.
 */
size_t backend_slurm_followable(struct backend *b, int64_t *ids, size_t max);

/*
 * One job as sacct reports it: `sacct --noheader --parsable2 --allocations
 * --duplicates --jobs=<ids> --format=JobID,State,Start,End,ExitCode,JobName`
 * (SLURM_TIME_FORMAT=%s), fields separated by '|', the name last.
 */
struct slurm_acct_job {
    int64_t job_id;
    char state[32];  /* the state's first word: "CANCELLED by 0" gives CANCELLED */
    int64_t start_s; /* seconds since the epoch; 0 when none (Unknown, None) */
    int64_t end_s;   /* likewise */
    int exit_code;   /* ExitCode's code, 0-255 */
    int signal;      /* ExitCode's signal, 0-127 */
    char name[128];  /* truncated */
};
/*
 * Parses that output (len bytes, need not end in a newline). Times are
 * seconds, or local time as YYYY-MM-DDTHH:MM:SS (sacct's default format).
 * Lines of array or heterogeneous jobs and of steps (123_4, 123+0, 123.batch)
 * are skipped; empty lines too. Returns 0 with *ret (caller frees; NULL when
 * none) and *ret_n, or ERR_INVALID with ei when a line is malformed (fewer
 * than six fields, a job id that is not a number, a state that is not
 * upper-case letters (optionally followed by " by <uid>"), a bad time, an
 * exit code that is not <code>:<signal>). Pure, for tests.
 */
int slurm_parse_sacct(const char *text, size_t len, struct slurm_acct_job **ret, size_t *ret_n,
                      struct error_info *ei);

/* Whether the backend asks sacct about jobs Slurm no longer lists. b must be slurm. */
bool backend_slurm_sacct(const struct backend *b);

/*
 * From `scontrol show config` output (len bytes): 1 when the cluster keeps
 * accounting in slurmdbd (AccountingStorageType = accounting_storage/
 * slurmdbd), so that sacct can tell how finished jobs ended; 0 otherwise.
 * Pure, for tests.
 */
int slurm_parse_accounting_config(const char *text, size_t len);

/* The jobcomp/filetxt file the backend reads for forgotten jobs; NULL when none. */
const char *backend_slurm_jobcomp(const struct backend *b);

/*
 * From `scontrol show config` output (len bytes): the JobCompLoc of a
 * cluster whose JobCompType is jobcomp/filetxt, into out. Returns 1 when
 * found, 0 when the cluster records finished jobs otherwise (or not at all),
 * -1 when it does not fit in out. Pure, for tests.
 */
int slurm_parse_jobcomp_config(const char *text, size_t len, char *out, size_t out_len);

#endif
