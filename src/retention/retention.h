/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retention.h: how long the per-workload files in log-dir are kept
 * (log-retention-days). The local backend writes each workload's output to
 * <log-dir>/<id>.log and each replica's run file to <id>.<replica>.run; the
 * Slurm backend writes <id>.log and its job-id file <id>.slurm. Once a
 * workload has ended (succeeded, failed, cancelled, preempted) longer ago than
 * the retention, these files are removed; nothing else is.
 *
 * Two layers: a pure decision (which names of a list to remove, given the
 * workloads' states and end times and the time now: no clock, no I/O), and
 * the pruner, a thread of its own that reads log-dir a bounded number of
 * entries at a time, asks the store about the workloads named there, records
 * a "logs-removed" event for each workload before removing its files, and
 * removes them (docs/local-backend.md, "Retention").
 */
#ifndef GPUAAS_RETENTION_H
#define GPUAAS_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/err.h"

struct store;
struct store_conn;

/* The type of the event that says a workload's files were removed. */
#define RETENTION_EVENT "logs-removed"

/*
 * Whether name (a directory entry, no '/') is one of the per-workload files:
 * "<id>.log", "<id>.<replica>.run" or "<id>.slurm", where id is 1..INT64_MAX
 * and replica 0..INT32_MAX, both plain decimal without sign or leading zero
 * (as the backends write them). Then *ret_id is the workload id; otherwise
 * false and *ret_id is untouched.
 */
bool retention_parse_name(const char *name, int64_t *ret_id);

/* What the store says of a workload named in log-dir. */
struct retention_workload {
    int64_t id;
    const char *state;   /* its state; not owned */
    int64_t finished_ms; /* when it ended, ms since the epoch; < 0: not recorded */
};

/*
 * The decision, pure: for each of names[0..n_names), ret_remove[i] says
 * whether to remove it. A name is removed only when it is one of ours
 * (retention_parse_name), its workload is in ws (n_ws entries, sorted by id,
 * ids unique), is in an ended state, has an end time, and ended at least
 * keep_ms before now_ms. Anything else is kept: other files, workloads the
 * store does not know, queued (also requeued after a preemption), admitted,
 * running or preempting work, and everything when keep_ms <= 0 (kept for
 * ever). Returns the number of names to remove.
 */
size_t retention_decide(const char *const *names, size_t n_names,
                        const struct retention_workload *ws, size_t n_ws, int64_t now_ms,
                        int64_t keep_ms, bool *ret_remove);

/*
 * Whether workload_id's files were removed by the retention: then *ret_at_ms
 * is when and *ret_message (in a) what the event says ("log removed: logs are
 * kept 30 days after work ends"). Returns 1 when removed, 0 when not, < 0 on
 * a store error.
 */
int retention_find_removal(struct store_conn *c, int64_t workload_id, struct arena *a,
                           int64_t *ret_at_ms, const char **ret_message, struct error_info *ei);

struct retention_options {
    const char *log_dir;   /* the directory of the files; copied */
    int64_t keep_days;     /* retention after the end; <= 0: keep for ever (nothing starts) */
    int64_t sweep_ms;      /* a sweep of log_dir starts this long after the last one started */
    int64_t pass_pause_ms; /* pause between two bounded passes of a sweep */
    size_t pass_entries;   /* directory entries read per pass (1..RETENTION_PASS_MAX) */
};

#define RETENTION_PASS_MAX 4096

/* Defaults: sweep hourly (the first at start), 1000 entries per pass, 100 ms apart. */
void retention_options_init(struct retention_options *opt);

struct retention;

/*
 * Starts the pruner thread: a sweep of log_dir at once and then every
 * sweep_ms. With keep_days <= 0 nothing starts and *ret is NULL. The store
 * must outlive the pruner. Stop and free with retention_stop().
 */
int retention_start(struct store *store, const struct retention_options *opt,
                    struct retention **ret, struct error_info *ei);
/* Stops the thread (a pass in progress finishes first) and frees. NULL is fine. */
void retention_stop(struct retention *r);

#endif
