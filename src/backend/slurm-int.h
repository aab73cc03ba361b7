/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-int.h: what only the files of the Slurm backend share (slurm.c and
 * slurm-*.c; docs/slurm-backend.md lists what each does): the backend's
 * state and its per-workload records, and the functions one file gives the
 * others, prefixed slurm__. slurm.h is the public side.
 */
#ifndef GPUAAS_BACKEND_SLURM_INT_H
#define GPUAAS_BACKEND_SLURM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "backend/work.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/run.h"

#define NEVER INT64_MAX
#define UNKNOWN_EXIT (-1)
#define SQUEUE_MAX (256u * 1024 * 1024) /* squeue about every job of a very busy cluster */
#define SINFO_MAX (64u * 1024 * 1024)
#define SMALL_MAX (64u * 1024)

/* Slurm's tools; the optional ones (scontrol, sacct) may be missing: s->tools[t] NULL. */
enum tool { T_SBATCH, T_SQUEUE, T_SCANCEL, T_SINFO, T_SCONTROL, T_SACCT, N_TOOLS };
extern const char *const slurm__tool_names[N_TOOLS];

/* Between two looks at the sbatch runs in flight (next_event_ms while there are some). */
#define SUBMIT_LOOK_MS 5
/* More ids than this: squeue is asked about every job and the answer filtered here. */
#define QUERY_MAX_IDS 500
/* While sacct fails: how long it may (default sacct_patience_ms), how often it is asked. */
#define SACCT_PATIENCE_MS (10 * 60 * 1000)
#define SACCT_RETRY_MS 5000

struct sjob {
    int64_t id;     /* workload; first: backend/work.h */
    int64_t job_id; /* Slurm's */
    int64_t launched_ms;
    int64_t alive_ms;        /* the last query that saw it not ended (its end is later) */
    int64_t signalled_ms;    /* when stop() or its max runtime first signalled it; 0: never */
    int64_t max_runtime_ms;  /* < 0: none */
    int64_t deadline_ms;     /* max runtime reached: set once Slurm started it; NEVER until */
    int64_t kill_at_ms;      /* SIGKILL due, NEVER when none pending */
    enum backend_end reason; /* 0 while nobody asked it to end, STOPPED or TIMEOUT */
    bool lost;               /* adopt found nothing: report LOST at lost_at_ms */
    bool searching;          /* adopted without a state file: look for its job by name */
    int64_t lost_at_ms;
    bool running;            /* Slurm said RUNNING (so a signal reaches it) */
    bool gres_known;         /* info.gres holds what Slurm assigned */
    int64_t running_seen_ms; /* the first poll that saw it RUNNING; 0: none yet */
    bool devices_done;       /* its devices were handed out, or asking failed too often */
    int devices_tries;
    struct submit *sub; /* its sbatch has not answered yet (queued or running); else NULL */
    struct slurm_job_info info;
};

/* An sbatch waiting for its turn or running: launch() returns before it answers. */
struct submit {
    char *args[32]; /* sbatch's arguments, owned, NULL-terminated */
    char *env[2];   /* GPUAAS_WORKLOAD_ID=<id>, NULL */
    char *script;   /* the batch script, given on sbatch's stdin; freed once it started */
    char *nodelist; /* for messages */
    bool started;
    bool running;      /* started and not yet finished with: counted in n_submitting */
    struct run_proc p; /* valid while running */
};

struct slurm {
    struct backend b;
    char *log_dir;
    bool run_as; /* work runs as uid:gid (sbatch --uid/--gid), not as the daemon's user */
    uid_t uid;
    gid_t gid;
    char *job_prefix; /* jobs are named <job_prefix><workload id>: backend_instance_prefix() */
    char *partition;
    char *jobcomp_path;
    bool accounting;             /* AccountingStorageType is slurmdbd: sacct knows ended jobs */
    int64_t sacct_patience_ms;   /* see slurm_options */
    int64_t sacct_failing_since; /* the first query whose sacct failed, in a row; 0: none */
    int64_t sacct_next_ms;       /* while it fails: when sacct may be asked again */
    char *tools[N_TOOLS];
    char **env; /* the tools' environment */
    int64_t poll_interval_ms, command_timeout_ms, timeout_grace_ms;
    int64_t next_query_ms; /* when poll() may run squeue again */
    size_t max_submits;    /* sbatch runs at once */
    size_t n_submitting;   /* sbatch runs now */
    int64_t last_now_ms;   /* the latest now_ms given to launch() or poll() */

    struct backend_work work;          /* struct sjob, in launch order; ends not yet handed out */
    struct slurm_job_devices *devices; /* learnt, not yet taken */
    size_t n_devices, cap_devices;
    int64_t *cancels; /* jobs not started to cancel, in one scancel at the next poll() */
    size_t n_cancels, cap_cancels;
    int64_t cancel_retry_ms; /* the last scancel did not reach Slurm: tried again then; else 0 */
};

static inline struct slurm *slurm_of(struct backend *b)
{
    return b->impl;
}

/* The workload at pos, in launch order. */
static inline struct sjob *work_at(const struct slurm *s, size_t pos)
{
    return s->work.items[pos];
}

/* Copies src into a fixed array, truncating. */
static inline void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* ---- slurm-run.c: Slurm's tools, on base/run.h ---- */

/*
 * Runs tool t to its end with args (NULL-terminated, without the program
 * name) and extra environment entries (NULL-terminated, may be NULL) added
 * to the tools' own, within command_timeout_ms. Returns 0 with r filled
 * (caller releases it with run_result_release, whatever the exit status),
 * or ERR_UNAVAILABLE (could not start, timed out: killed) / ERR_TOO_LARGE
 * (more output than out_max: killed), with ei.
 */
int slurm__run_tool(struct slurm *s, enum tool t, const char *const *args,
                    const char *const *extra_env, size_t out_max, struct run_result *r,
                    struct error_info *ei);
/* Starts tool t as slurm__run_tool would, stdin_text on its standard input; p as run_start's. */
int slurm__tool_start(struct slurm *s, enum tool t, const char *const *args,
                      const char *const *extra_env, const char *stdin_text, size_t out_max,
                      struct run_proc *p, struct error_info *ei);
/* The first line of a tool's complaint (stderr, else stdout) into line, for a message. */
const char *slurm__first_line(const struct run_result *r, char *line, size_t size);

/* ---- slurm-state.c: state files and the records ---- */

/* Writes w's state file (job id, nodes, GRES). 0, or -1 with errno. */
int slurm__state_write(const struct slurm *s, const struct sjob *w);
/* The job id in workload id's state file; -1 when missing or not ours. */
int64_t slurm__state_read(const struct slurm *s, int64_t id);
/* Records w (launched or adopted); the first one makes the next poll ask Slurm. */
void slurm__work_add(struct slurm *s, struct sjob *w);
/* Queues the end of the workload at pos and forgets it (its state file goes, its log stays). */
void slurm__report(struct slurm *s, size_t pos, enum backend_end how, int64_t at, int exit_code,
                   const char *message);

/* ---- slurm-script.c: the batch job ---- */

/*
 * Checks what this backend can submit beyond the common shape
 * (backend_check_launch): no image, a command, node names Slurm can take.
 * Returns 0 or ERR_INVALID with ei.
 */
int slurm__check_launch(const struct backend_launch *l, struct error_info *ei);

/*
 * The sbatch run for launch l (after_job > 0: queued behind that job), its
 * script and arguments, not started, into *ret_sub (caller frees with
 * slurm__submit_free). ERR_INVALID with ei when the replicas' layout is one
 * Slurm cannot take or the script is too long.
 */
int slurm__batch_new(const struct slurm *s, const struct backend_launch *l, int64_t after_job,
                     struct submit **ret_sub, struct error_info *ei);

/* ---- slurm-submit.c: the submission queue ---- */

/* launch(), and queue-ahead: after_job > 0 makes the job wait for that one's end. */
int slurm__launch(struct slurm *s, const struct backend_launch *l, int64_t after_job,
                  int64_t now_ms, struct error_info *ei);
/*
 * Takes the answers of the sbatch runs in flight, then starts waiting ones
 * while fewer than max_submits run. Failures are reported as
 * BACKEND_NOT_STARTED at now_ms.
 */
void slurm__submissions(struct slurm *s, int64_t now_ms);
/* Frees a submission (NULL: nothing), killing its sbatch if it still runs. */
void slurm__submit_free(struct slurm *s, struct submit *sub);

/* ---- slurm-stop.c: signals and cancels ---- */

/* SIGTERM or SIGKILL to w's job (cancelled instead while Slurm has not started it). */
void slurm__signal_job(struct slurm *s, struct sjob *w, int sig);
/* A plain scancel of job_id, sent with the others by slurm__flush_cancels(). */
void slurm__cancel_later(struct slurm *s, int64_t job_id);
/* Cancels the jobs queued by slurm__cancel_later; those Slurm was not reached for stay. */
void slurm__flush_cancels(struct slurm *s);
/* Sends cancels, kills and max-runtime signals that are due. */
void slurm__chores(struct slurm *s, int64_t now_ms);

/* ---- slurm-ends.c: how jobs end (squeue, sacct, jobcomp) ---- */

/* Whether a Slurm job state is final (the job holds nothing any more). */
bool slurm__state_final(const char *st);
/*
 * Runs squeue about the given selection (-j ids or -n names; NULL: every
 * job) and parses its answer. Returns 0 with the jobs (caller frees), or
 * < 0 when Slurm could not be asked or answered nonsense.
 */
int slurm__queue_ask(struct slurm *s, const char *select_flag, const char *select,
                     struct slurm_queue_job **ret, size_t *ret_n);
/*
 * Asks squeue about our jobs, updates what is known and reports the ends
 * (asking sacct and jobcomp about jobs Slurm no longer lists). Returns 0,
 * or < 0 when Slurm could not be asked (nothing is concluded).
 */
int slurm__query(struct slurm *s, int64_t now_ms);
/* Reports adopted work found lost. */
void slurm__report_lost(struct slurm *s);

/* ---- slurm-parse.c: parsers shared with slurm-ends.c ---- */

/* Slurm's ExitCode "<code>:<signal>" (len bytes at v): code 0-255, signal 0-127. 0 or -1. */
int slurm__exit_pair(const char *v, size_t len, int64_t *ret_code, int64_t *ret_sig);
/* Local time YYYY-MM-DDTHH:MM:SS (len bytes at v) as seconds since the epoch; -1 if malformed. */
int64_t slurm__jobcomp_time(const char *v, size_t len);

/* ---- slurm-nodes.c: devices Slurm gave jobs ---- */

/* After a squeue: learns which GPUs Slurm gave jobs that have run a while, a few per call. */
void slurm__learn_devices(struct slurm *s, int64_t now_ms);
/* The GRES Slurm assigned to w's running job, into w->info.gres (best effort). */
void slurm__learn_gres(struct slurm *s, struct sjob *w);

#endif
