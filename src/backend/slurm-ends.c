/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-ends.c: how the Slurm backend learns that jobs ended. squeue,
 * asked only about our job ids and a few fields (every job when there are
 * very many), gives each job's state and, for a final one, its end; jobs
 * Slurm no longer lists (older than MinJobAge, or a controller reset) are
 * asked of sacct when the cluster keeps accounting in slurmdbd, then looked
 * up in the jobcomp/filetxt file, else reported LOST. Adopted work without
 * a state file is looked for by its job's name.
 */
#include "base/common.h"

#include <sys/wait.h>

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/parse.h"
#include "base/timeutil.h"

/* What sacct prints per job: the name last, so a '|' in it is harmless. */
#define SACCT_FIELDS "JobID,State,Start,End,ExitCode,JobName"
/* What squeue prints per job (SLURM_TIME_FORMAT=%s: times as seconds since the epoch). */
#define QUEUE_FIELDS "JobID:|,State:|,StartTime:|,EndTime:|,exit_code:|,NodeList:|,Name:|"

/* Whether a Slurm job state is final (the job holds nothing any more). */
bool slurm__state_final(const char *st)
{
    static const char *const finals[] = {"COMPLETED",     "FAILED",       "CANCELLED", "TIMEOUT",
                                         "NODE_FAIL",     "PREEMPTED",    "BOOT_FAIL", "DEADLINE",
                                         "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"};
    for (size_t i = 0; i < ARRAY_SIZE(finals); i++) {
        if (strcmp(st, finals[i]) == 0)
            return true;
    }
    return false;
}

/* The exit code from Slurm's wait status; -1 (unknown) for a job that did not complete. */
static int exit_code_of(const char *state, int64_t status)
{
    if (status < 0 || status > 0xffff)
        return UNKNOWN_EXIT;
    if (WIFSIGNALED((int)status))
        return -WTERMSIG((int)status);
    if (WIFEXITED((int)status) && WEXITSTATUS((int)status) != 0)
        return WEXITSTATUS((int)status);
    return strcmp(state, "COMPLETED") == 0 ? 0 : UNKNOWN_EXIT;
}

/*
 * The time an end is reported at: Slurm's (whole seconds), no earlier than
 * the launch or the last time the job was seen alive, no later than now.
 */
static int64_t end_at(const struct sjob *w, int64_t end_s, int64_t now_ms)
{
    int64_t at = end_s > 0 && end_s < NEVER / 1000 ? end_s * 1000 : now_ms;
    if (at < w->launched_ms)
        at = w->launched_ms;
    if (at < w->alive_ms)
        at = w->alive_ms;
    /*
     * Signalled work ends after the signal: Slurm's whole seconds would
     * otherwise date a preempted job's end before the preemption.
     */
    if (w->reason && at < w->signalled_ms)
        at = w->signalled_ms;
    if (at > now_ms)
        at = now_ms;
    return at;
}

/* How an ended job is reported: our reason first, then Slurm's own time limit. */
static enum backend_end how_of(const struct sjob *w, const char *state)
{
    if (w->reason)
        return w->reason;
    if (strcmp(state, "TIMEOUT") == 0)
        return BACKEND_TIMEOUT;
    return BACKEND_EXITED;
}

static int cmp_job_id(const void *a, const void *b)
{
    const struct sjob *x = *(const struct sjob *const *)a, *y = *(const struct sjob *const *)b;
    return (x->job_id > y->job_id) - (x->job_id < y->job_id);
}

/* The position of job_id among n jobs sorted by job id, or SIZE_MAX. */
static size_t find_job(struct sjob *const *sorted, size_t n, int64_t job_id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid]->job_id == job_id)
            return mid;
        if (sorted[mid]->job_id < job_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return SIZE_MAX;
}

/* Ended jobs found by one poll, to be reported oldest first. */
struct ended {
    int64_t id, at;
    enum backend_end how;
    int exit_code;
};

static int cmp_ended(const void *a, const void *b)
{
    const struct ended *x = a, *y = b;
    if (x->at != y->at)
        return (x->at > y->at) - (x->at < y->at);
    return (x->id > y->id) - (x->id < y->id);
}

/* The exit code from Slurm's "<code>:<signal>" (negative: the signal). */
static int exit_of_pair(const char *state, int64_t code, int64_t sig)
{
    if (sig)
        return (int)-sig;
    if (code)
        return (int)code;
    return strcmp(state, "COMPLETED") == 0 ? 0 : UNKNOWN_EXIT;
}

/*
 * Parses one line of a jobcomp/filetxt file ("JobId=12 ... JobState=FAILED
 * ... EndTime=2026-01-02T03:04:05 ... ExitCode=3:0"): Slurm writes times in
 * the controller's local time, which is taken to be the daemon's too.
 */
static const char *jobcomp_field(const char *line, const char *key, size_t *ret_len)
{
    size_t klen = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += klen) {
        if ((p == line || p[-1] == ' ') && p[klen] == '=') {
            p += klen + 1;
            *ret_len = strcspn(p, " \n");
            return p;
        }
    }
    return NULL;
}

/*
 * Looks the jobs Slurm no longer lists (missing, sorted by job id) and not
 * yet found up in the jobcomp file. Each found is added to ended and marked
 * in found.
 */
static void jobcomp_lookup(struct slurm *s, struct sjob *const *missing, size_t n_missing,
                           bool *found, struct ended *ended, size_t *n_ended, int64_t now_ms)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0, left = 0;

    for (size_t i = 0; i < n_missing; i++)
        left += !found[i]; /* sacct may have found some */
    if (!s->jobcomp_path || left == 0)
        return;
    f = fopen(s->jobcomp_path, "re");
    if (!f)
        return;
    while (left > 0 && getline(&line, &cap, f) > 0) {
        size_t len;
        const char *v = jobcomp_field(line, "JobId", &len);
        char num[32], name[64], state[32];
        int64_t job_id, end_s, code = 0, sig = 0;
        struct sjob *w;
        size_t pos;

        if (!v || len == 0 || len >= sizeof(num))
            continue;
        memcpy(num, v, len);
        num[len] = '\0';
        if (parse_int64(num, 1, INT64_MAX, &job_id) < 0)
            continue;
        pos = find_job(missing, n_missing, job_id);
        if (pos == SIZE_MAX || found[pos])
            continue;
        w = missing[pos];
        v = jobcomp_field(line, "Name", &len);
        snprintf(name, sizeof(name), "%s%" PRId64, s->job_prefix, w->id);
        if (!v || len != strlen(name) || memcmp(v, name, len) != 0)
            continue; /* a job id Slurm gave again after a reset: not ours */
        v = jobcomp_field(line, "JobState", &len);
        snprintf(state, sizeof(state), "%.*s", v ? (int)(len < 31 ? len : 31) : 0, v ? v : "");
        v = jobcomp_field(line, "EndTime", &len);
        end_s = v ? slurm__jobcomp_time(v, len) : -1;
        v = jobcomp_field(line, "ExitCode", &len);
        if (!v || slurm__exit_pair(v, len, &code, &sig) < 0)
            code = sig = 0; /* unknown: the state decides */
        ended[*n_ended] = (struct ended){
            .id = w->id,
            .at = end_at(w, end_s, now_ms),
            .how = how_of(w, state),
            .exit_code = exit_of_pair(state, code, sig),
        };
        (*n_ended)++;
        found[pos] = true;
        left--;
    }
    free(line);
    fclose(f);
}

/*
 * Asks sacct (slurmdbd's record) about the jobs Slurm no longer lists
 * (missing, sorted by job id), QUERY_MAX_IDS ids a run: --duplicates, since
 * after a controller reset an id may name several jobs and sacct would
 * otherwise show only the newest. A job counts when its name is ours and its
 * state final (slurmdbd may still hold a job a controller reset forgot as
 * RUNNING). Each found is added to ended and marked in found. Returns 0, or
 * < 0 when sacct could not be run or failed (nothing is concluded then).
 */
static int sacct_lookup(struct slurm *s, struct sjob *const *missing, size_t n_missing, bool *found,
                        struct ended *ended, size_t *n_ended, int64_t now_ms)
{
    static const char *const env[] = {"SLURM_TIME_FORMAT=%s", NULL};

    for (size_t from = 0; from < n_missing; from += QUERY_MAX_IDS) {
        size_t to = n_missing - from > QUERY_MAX_IDS ? from + QUERY_MAX_IDS : n_missing;
        const char *args[8];
        struct slurm_acct_job *jobs;
        struct run_result r;
        struct buf ids;
        size_t n_jobs;
        int rc;

        buf_init(&ids, 1024 * 1024);
        buf_printf(&ids, "--jobs=");
        for (size_t i = from; i < to; i++)
            buf_printf(&ids, "%s%" PRId64, i > from ? "," : "", missing[i]->job_id);
        args[0] = "--noheader";
        args[1] = "--parsable2";
        args[2] = "--allocations";
        args[3] = "--duplicates";
        args[4] = ids.data;
        args[5] = "--format=" SACCT_FIELDS;
        args[6] = NULL;
        rc = slurm__run_tool(s, T_SACCT, args, env, SQUEUE_MAX, &r, NULL);
        buf_release(&ids);
        if (rc < 0)
            return rc;
        rc = r.status == 0 ? slurm_parse_sacct(r.out.data, r.out.len, &jobs, &n_jobs, NULL)
                           : ERR_UNAVAILABLE;
        run_result_release(&r);
        if (rc < 0)
            return rc;
        for (size_t k = 0; k < n_jobs; k++) {
            const struct slurm_acct_job *j = &jobs[k];
            size_t pos = find_job(missing, n_missing, j->job_id);
            struct sjob *w;
            char name[64];

            if (pos == SIZE_MAX || found[pos] || !slurm__state_final(j->state))
                continue;
            w = missing[pos];
            snprintf(name, sizeof(name), "%s%" PRId64, s->job_prefix, w->id);
            if (strcmp(j->name, name) != 0)
                continue; /* a job id Slurm gave again after a reset: not ours */
            ended[(*n_ended)++] = (struct ended){
                .id = w->id,
                .at = end_at(w, j->end_s, now_ms),
                .how = how_of(w, j->state),
                .exit_code = exit_of_pair(j->state, j->exit_code, j->signal),
            };
            found[pos] = true;
        }
        free(jobs);
    }
    return 0;
}

/*
 * Looks up how the jobs Slurm no longer lists ended: sacct when the cluster
 * keeps accounting, then the jobcomp file; the rest are LOST. While sacct
 * fails (slurmdbd down) nothing is concluded, for sacct_patience_ms at most.
 * Each concluded job is added to ended.
 */
static void history_lookup(struct slurm *s, struct sjob *const *missing, size_t n_missing,
                           bool *found, struct ended *ended, size_t *n_ended, int64_t now_ms)
{
    if (n_missing == 0)
        return;
    if (s->accounting && s->tools[T_SACCT]) {
        bool wait = false;
        if (s->sacct_failing_since && now_ms < s->sacct_next_ms) {
            wait = true; /* failed a moment ago: not again yet */
        } else if (sacct_lookup(s, missing, n_missing, found, ended, n_ended, now_ms) < 0) {
            if (!s->sacct_failing_since)
                s->sacct_failing_since = now_ms;
            s->sacct_next_ms = time_add_ms(now_ms, SACCT_RETRY_MS);
            wait = true;
        } else {
            s->sacct_failing_since = 0;
        }
        if (wait && now_ms - s->sacct_failing_since < s->sacct_patience_ms)
            return; /* asked again at a later query; what sacct found meanwhile stays found */
    }
    jobcomp_lookup(s, missing, n_missing, found, ended, n_ended, now_ms);
    for (size_t i = 0; i < n_missing; i++) {
        if (!found[i])
            ended[(*n_ended)++] = (struct ended){
                .id = missing[i]->id, .at = now_ms, .how = BACKEND_LOST, .exit_code = UNKNOWN_EXIT};
    }
}

/*
 * Runs squeue about the given selection (-j ids or -n names; NULL: every
 * job) and parses its answer. Returns 0 with the jobs (caller frees), or
 * < 0 when Slurm could not be asked or answered nonsense.
 */
int slurm__queue_ask(struct slurm *s, const char *select_flag, const char *select,
                     struct slurm_queue_job **ret, size_t *ret_n)
{
    static const char *const env[] = {"SLURM_TIME_FORMAT=%s", NULL};
    const char *args[8];
    struct run_result r;
    size_t n = 0;
    int rc;

    args[n++] = "--noheader";
    args[n++] = "--states=all";
    if (select) {
        args[n++] = select_flag;
        args[n++] = select;
    }
    args[n++] = "--Format=" QUEUE_FIELDS;
    args[n] = NULL;
    rc = slurm__run_tool(s, T_SQUEUE, args, env, SQUEUE_MAX, &r, NULL);
    if (rc < 0)
        return rc;
    if (r.status != 0) {
        /* None of the ids asked about is known any more: 22.05 says so and fails. */
        bool none = select && strcmp(select_flag, "--jobs") == 0 && r.err.data &&
                    strstr(r.err.data, "Invalid job id specified");
        run_result_release(&r);
        if (!none)
            return ERR_UNAVAILABLE;
        *ret = NULL;
        *ret_n = 0;
        return 0;
    }
    rc = slurm_parse_queue(r.out.data, r.out.len, ret, ret_n, NULL);
    run_result_release(&r);
    return rc;
}

/* Adopted work without a state file: its newest job named gpuaas-<id>, or lost. */
static void search_by_name(struct slurm *s)
{
    struct slurm_queue_job *jobs;
    struct buf names;
    size_t n_jobs, i;

    buf_init(&names, 1024 * 1024);
    for (i = 0; i < s->work.n; i++) {
        if (work_at(s, i)->searching)
            buf_printf(&names, "%s%s%" PRId64, names.len ? "," : "", s->job_prefix,
                       work_at(s, i)->id);
    }
    if (!names.len || slurm__queue_ask(s, "--name", names.data, &jobs, &n_jobs) < 0) {
        buf_release(&names);
        return; /* nothing to look for, or try again at the next query */
    }
    buf_release(&names);
    for (i = 0; i < s->work.n; i++) {
        struct sjob *w = work_at(s, i);
        char name[64];
        int64_t best = -1;
        if (!w->searching)
            continue;
        snprintf(name, sizeof(name), "%s%" PRId64, s->job_prefix, w->id);
        for (size_t k = 0; k < n_jobs; k++) {
            if (jobs[k].job_id > best && strcmp(jobs[k].name, name) == 0)
                best = jobs[k].job_id;
        }
        w->searching = false;
        if (best <= 0) {
            w->lost = true; /* reported by this poll, at the adopt's time */
            continue;
        }
        w->job_id = best;
        w->info.job_id = best;
        slurm__state_write(s, w); /* best effort: found again next time by name anyway */
    }
    free(jobs);
}

/*
 * What squeue said about w's job j: its state and nodes, when it started
 * (its max runtime counts from then). Returns 1 with its end in *ret_end
 * when final, 0 while it is not, -1 when j is someone else's job now.
 */
static int job_seen(struct slurm *s, struct sjob *w, const struct slurm_queue_job *j,
                    struct ended *ret_end, int64_t now_ms)
{
    char name[64];

    snprintf(name, sizeof(name), "%s%" PRId64, s->job_prefix, w->id);
    if (strcmp(j->name, name) != 0)
        return -1; /* that job id is someone else's now */
    copy_str(w->info.state, sizeof(w->info.state), j->state);
    copy_str(w->info.nodes, sizeof(w->info.nodes), j->nodes);
    if (strcmp(j->state, "RUNNING") == 0) {
        w->running = true;
        if (!w->running_seen_ms)
            w->running_seen_ms = now_ms;
        if (j->start_s > 0)
            w->info.start_ms = j->start_s * 1000;
        if (w->max_runtime_ms >= 0 && w->deadline_ms == NEVER) {
            /* Max runtime counts from when Slurm started it, not from the queue. */
            int64_t from = w->info.start_ms > w->launched_ms ? w->info.start_ms : w->launched_ms;
            w->deadline_ms = time_add_ms(from, w->max_runtime_ms);
        }
    }
    if (!slurm__state_final(j->state)) {
        w->alive_ms = now_ms;
        return 0;
    }
    *ret_end = (struct ended){
        .id = w->id,
        .at = end_at(w, j->end_s, now_ms),
        .how = how_of(w, j->state),
        .exit_code = exit_code_of(j->state, j->exit_status),
    };
    return 1;
}

/*
 * Asks squeue about our jobs (their ids, a few fields; every job when
 * there are very many), updates what is known and finds the ends.
 * Returns 0, or < 0 when Slurm could not be asked (nothing is concluded).
 */
int slurm__query(struct slurm *s, int64_t now_ms)
{
    struct slurm_queue_job *jobs = NULL;
    struct sjob **sorted, **missing;
    struct ended *ended;
    struct buf ids;
    size_t n_sorted = 0, n_missing = 0, n_ended = 0, n_jobs = 0, i;
    bool *seen;
    int rc = 0;

    for (i = 0; i < s->work.n; i++) {
        if (work_at(s, i)->searching) {
            search_by_name(s);
            break;
        }
    }
    sorted = xcalloc(s->work.n + 1, sizeof(*sorted));
    for (i = 0; i < s->work.n; i++) {
        struct sjob *w = work_at(s, i);
        if (!w->lost && w->job_id > 0)
            sorted[n_sorted++] = w;
    }
    if (n_sorted == 0) {
        free(sorted);
        return 0;
    }
    qsort(sorted, n_sorted, sizeof(*sorted), cmp_job_id);
    buf_init(&ids, 1024 * 1024);
    for (i = 0; i < n_sorted && n_sorted <= QUERY_MAX_IDS; i++)
        buf_printf(&ids, "%s%" PRId64, i ? "," : "", sorted[i]->job_id);
    rc = slurm__queue_ask(s, "--jobs", ids.len ? ids.data : NULL, &jobs, &n_jobs);
    buf_release(&ids);
    if (rc < 0) {
        free(sorted);
        return rc;
    }

    seen = xcalloc(n_sorted + 1, sizeof(*seen));
    ended = xcalloc(n_sorted + 1, sizeof(*ended));
    for (i = 0; i < n_jobs; i++) {
        size_t pos = find_job(sorted, n_sorted, jobs[i].job_id);
        int how =
            pos != SIZE_MAX ? job_seen(s, sorted[pos], &jobs[i], &ended[n_ended], now_ms) : -1;
        if (how >= 0)
            seen[pos] = true;
        n_ended += how == 1;
    }
    free(jobs);

    /* Jobs Slurm does not list any more: in sacct, in the jobcomp file, or lost. */
    missing = xcalloc(n_sorted + 1, sizeof(*missing));
    for (i = 0; i < n_sorted; i++) {
        if (!seen[i])
            missing[n_missing++] = sorted[i]; /* still sorted by job id */
    }
    memset(seen, 0, (n_sorted + 1) * sizeof(*seen)); /* now: found in Slurm's history */
    history_lookup(s, missing, n_missing, seen, ended, &n_ended, now_ms);
    qsort(ended, n_ended, sizeof(*ended), cmp_ended);
    for (i = 0; i < n_ended; i++) {
        size_t pos;
        if (backend_work_find(&s->work, ended[i].id, &pos))
            slurm__report(s, pos, ended[i].how, ended[i].at, ended[i].exit_code, NULL);
    }
    free(missing);
    free(ended);
    free(seen);
    free(sorted);
    return 0;
}

/* Reports adopted work found lost. */
void slurm__report_lost(struct slurm *s)
{
    size_t i = 0;
    while (i < s->work.n) {
        struct sjob *w = work_at(s, i);
        if (w->lost)
            slurm__report(s, i, BACKEND_LOST, w->lost_at_ms, UNKNOWN_EXIT, NULL);
        else
            i++;
    }
}
