/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm.c: the backend that runs placed work on a real Slurm cluster (issue
 * 8, docs/slurm-backend.md). Each workload is one batch job, submitted with
 * sbatch pinned to the nodes the scheduler chose and the number of GPUs it
 * gave each replica; sbatch runs while the engine goes on (launch() does
 * not wait for its answer, poll() takes it); squeue, asked only about our
 * job ids and a few fields, tells how each goes and how it ended;
 * scancel signals it (SIGTERM, the grace, SIGKILL: preemption is ours, not
 * Slurm's); sinfo --json gives the nodes and their GPUs.
 *
 * Slurm's command-line tools are the interface, not libslurm or slurmrestd:
 * they are what every Slurm site has, speak the same protocol version as the
 * controller whatever version that is, and need no extra daemon or token; a
 * tool that hangs is killed at a deadline, which a library call inside the
 * daemon could not be. Each tool runs through posix_spawn of its full path
 * with its arguments as a vector (no shell) and a minimal environment.
 *
 * Like every backend this one has no clock of its own for events: times come
 * from the caller. poll() runs squeue at most every poll_interval_ms, so the
 * engine may call it as often as it likes. A state file per workload holds
 * the Slurm job id, so that a restarted daemon follows its jobs again.
 *
 * This file is the backend's face: its backend_ops entries, its public
 * functions (slurm.h) and its creation. The rest is one file per job, all
 * sharing slurm-int.h: slurm-run.c (the tools, on base/run.h),
 * slurm-state.c (records and state files), slurm-script.c (the batch job),
 * slurm-submit.c (the sbatch queue), slurm-stop.c (signals and cancels),
 * slurm-ends.c (squeue, sacct, jobcomp), slurm-parse.c (the tools' output),
 * slurm-nodes.c (nodes and the GPUs Slurm gave jobs).
 */
#include "base/common.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "backend/slurm-int.h"
#include "backend/slurm.h"
#include "base/alloc.h"
#include "base/timeutil.h"

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

static int slurm_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                        struct error_info *ei)
{
    return slurm__launch(slurm_of(b), l, 0, now_ms, ei);
}

static const struct backend_ops slurm_ops;

/*
 * Whether a job is one that work can be queued behind: Slurm has it (queued
 * or running: a job that ends within a second must have its follower before
 * it ends) and nobody stops it.
 */
static bool followable(const struct sjob *w)
{
    return w->job_id > 0 && !w->reason && !w->lost && !w->searching && w->kill_at_ms == NEVER;
}

int backend_slurm_launch_after(struct backend *b, const struct backend_launch *l, int64_t after_id,
                               int64_t now_ms, struct error_info *ei)
{
    struct slurm *s = slurm_of(b);
    size_t pos;
    const struct sjob *r;

    assert(b->ops == &slurm_ops);
    r = backend_work_find(&s->work, after_id, &pos);
    if (!r || !followable(r))
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                           "workload %" PRId64 " cannot queue behind workload %" PRId64
                           ": Slurm does not run that one's job, or it is being stopped",
                           l ? l->workload_id : 0, after_id);
    return slurm__launch(s, l, r->job_id, now_ms, ei);
}

size_t backend_slurm_followable(struct backend *b, int64_t *ids, size_t max)
{
    struct slurm *s = slurm_of(b);
    size_t n = 0;

    assert(b->ops == &slurm_ops);
    for (size_t i = 0; i < s->work.n; i++) {
        if (!followable(work_at(s, i)))
            continue;
        if (n < max)
            ids[n] = work_at(s, i)->id;
        n++;
    }
    return n;
}

/* ---- adopt ---- */

static int slurm_adopt(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                       int64_t now_ms, struct error_info *ei)
{
    struct slurm *s = slurm_of(b);
    struct sjob *w;
    int64_t job_id;
    int rc = backend_work_check_adopt(&s->work, l, started_ms, now_ms, "on this cluster", ei);

    if (rc < 0)
        return rc;
    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->launched_ms = started_ms;
    w->kill_at_ms = NEVER;
    w->max_runtime_ms = l->max_runtime_ms;
    w->deadline_ms = NEVER;
    job_id = slurm__state_read(s, l->workload_id);
    if (job_id < 0) {
        /*
         * Never submitted, or the daemon died between sbatch's answer and
         * the state file: the next query looks for a job by its name, and
         * reports the work lost (at this time) when there is none.
         */
        w->searching = true;
        w->lost_at_ms = now_ms;
    } else {
        w->job_id = job_id;
        w->info.job_id = job_id;
    }
    slurm__work_add(s, w);
    return 0;
}

static int slurm_stop(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms)
{
    struct slurm *s = slurm_of(b);
    size_t pos = 0;
    struct sjob *w = backend_work_find(&s->work, workload_id, &pos);
    int64_t kill_at;

    if (!w || w->lost)
        return 0;
    if (!w->reason) {
        w->reason = BACKEND_STOPPED;
        w->signalled_ms = now_ms;
    }
    if (w->sub && !w->sub->started) {
        /* Its sbatch was still waiting for its turn: there is no job to stop. */
        slurm__report(s, pos, BACKEND_STOPPED, now_ms, UNKNOWN_EXIT, NULL);
        return 0;
    }
    /* With sbatch still running, the job is cancelled when its id comes (submit_done). */
    slurm__signal_job(s, w, SIGTERM);
    kill_at = time_add_ms(now_ms, grace_ms);
    if (kill_at < w->kill_at_ms)
        w->kill_at_ms = kill_at;
    return 0;
}

int backend_slurm_sweep(struct backend *b, int64_t *ids, size_t max, size_t *ret_n)
{
    struct slurm *s = slurm_of(b);
    struct slurm_queue_job *jobs;
    size_t n_jobs, prefix_len = strlen(s->job_prefix);

    *ret_n = 0;
    if (slurm__queue_ask(s, NULL, NULL, &jobs, &n_jobs) < 0)
        return ERR_UNAVAILABLE;
    for (size_t i = 0; i < n_jobs; i++) {
        const struct slurm_queue_job *j = &jobs[i];
        const struct sjob *w;
        char *end;
        long long id;
        if (strncmp(j->name, s->job_prefix, prefix_len) != 0 || slurm__state_final(j->state) ||
            strcmp(j->state, "COMPLETING") == 0)
            continue;
        errno = 0;
        id = strtoll(j->name + prefix_len, &end, 10);
        if (errno || end == j->name + prefix_len || *end || id <= 0)
            continue; /* not a name this daemon gives */
        w = backend_work_find(&s->work, id, NULL);
        if (w && (w->searching || w->job_id == j->job_id))
            continue; /* followed, or its job is being looked for by this name */
        slurm__cancel_later(s, j->job_id);
        if (*ret_n < max)
            ids[*ret_n] = j->job_id;
        (*ret_n)++;
    }
    free(jobs);
    slurm__flush_cancels(s);
    return 0;
}

static size_t slurm_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct slurm *s = slurm_of(b);

    assert(out || max == 0);
    if (now_ms > s->last_now_ms)
        s->last_now_ms = now_ms;
    slurm__submissions(s, now_ms);
    slurm__chores(s, now_ms);
    if (s->work.n > 0 && now_ms >= s->next_query_ms) {
        /* After a failure Slurm is asked again at the next interval all the same. */
        if (slurm__query(s, now_ms) >= 0)
            slurm__learn_devices(s, now_ms);
        s->next_query_ms = time_add_ms(now_ms, s->poll_interval_ms);
    }
    slurm__report_lost(s);
    /* Oldest first (lost work found by adopt and ends Slurm dated earlier come together). */
    for (size_t i = 1; i < s->work.done.n; i++) {
        struct backend_event ev = s->work.done.ev[i];
        size_t k = i;
        while (k > 0 && s->work.done.ev[k - 1].at_ms > ev.at_ms) {
            s->work.done.ev[k] = s->work.done.ev[k - 1];
            k--;
        }
        s->work.done.ev[k] = ev;
    }
    return backend_ends_take(&s->work.done, out, max);
}

static int64_t slurm_next_event_ms(struct backend *b)
{
    struct slurm *s = slurm_of(b);
    int64_t next = NEVER;

    if (s->work.done.n > 0 || (s->n_cancels > 0 && s->cancel_retry_ms == 0))
        return 0;
    if (s->n_cancels > 0)
        next = s->cancel_retry_ms;
    if (s->work.n > 0 && s->next_query_ms < next)
        next = s->next_query_ms; /* ends are learnt only by asking */
    if (s->n_submitting > 0 && time_add_ms(s->last_now_ms, SUBMIT_LOOK_MS) < next)
        next = time_add_ms(s->last_now_ms, SUBMIT_LOOK_MS); /* sbatch's answers */
    for (size_t i = 0; i < s->work.n; i++) {
        const struct sjob *w = work_at(s, i);
        if (w->lost && w->lost_at_ms < next)
            next = w->lost_at_ms;
        if (w->kill_at_ms < next)
            next = w->kill_at_ms;
        if (!w->reason && w->deadline_ms < next)
            next = w->deadline_ms;
    }
    return next;
}

static void slurm_free(struct backend *b)
{
    struct slurm *s;
    if (!b)
        return;
    s = slurm_of(b);
    /*
     * Jobs outlive the daemon, so sbatch runs are seen through (waiting ones
     * started too) and their state files written: a restarted daemon finds
     * them by id rather than by name. Each run has its deadline.
     */
    while (s->n_submitting > 0) {
        slurm__submissions(s, s->last_now_ms);
        if (s->n_submitting > 0)
            poll(NULL, 0, 1);
    }
    slurm__flush_cancels(s); /* what was stopped must not start later */
    for (size_t i = 0; i < s->work.n; i++) {
        slurm__submit_free(s, work_at(s, i)->sub);
        free(work_at(s, i));
    }
    backend_work_release(&s->work);
    free(s->devices);
    free(s->cancels);
    for (size_t i = 0; i < N_TOOLS; i++)
        free(s->tools[i]);
    for (size_t i = 0; s->env && s->env[i]; i++)
        free(s->env[i]);
    free(s->env);
    free(s->log_dir);
    free(s->job_prefix);
    free(s->partition);
    free(s->jobcomp_path);
    free(s);
}

/* ---- the table's optional entries, over the functions of slurm.h ---- */

/* Discovery: Slurm's node records (sinfo), every node of the cluster, GPUs counted by type. */
static int slurm_discover(struct backend *b, int64_t now_ms, bool fleet_loaded, struct arena *a,
                          struct backend_fleet_report *ret, struct error_info *ei)
{
    struct backend_node_report *out;
    struct slurm_node *nodes = NULL;
    size_t n = 0;

    (void)now_ms;
    (void)fleet_loaded; /* read every b->discover_ms, not on reloads */
    if (backend_slurm_nodes(b, &nodes, &n, ei) < 0)
        return ei->code ? ei->code : ERR_UNAVAILABLE;
    out = arena_calloc(a, n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = (struct backend_node_report){.name = arena_strdup(a, nodes[i].name),
                                              .state = arena_strdup(a, nodes[i].state),
                                              .reason = arena_strdup(a, nodes[i].reason),
                                              .cpu_milli = nodes[i].cpu_milli,
                                              .mem_mib = nodes[i].mem_mib,
                                              .counted_class = arena_strdup(a, nodes[i].gpu_type),
                                              .n_counted = nodes[i].n_gpus};
    slurm_nodes_free(nodes, n);
    *ret = (struct backend_fleet_report){.nodes = out, .n_nodes = n, .complete = true};
    return 1;
}

static size_t slurm_take_devices(struct backend *b, struct backend_devices *out, size_t max)
{
    struct slurm_job_devices devs[8];
    size_t n = backend_slurm_take_devices(b, devs, max < ARRAY_SIZE(devs) ? max : ARRAY_SIZE(devs));

    for (size_t i = 0; i < n; i++) {
        out[i].workload_id = devs[i].workload_id;
        snprintf(out[i].node, sizeof(out[i].node), "%s", devs[i].node);
        out[i].n_indices = devs[i].n_indices;
        memcpy(out[i].indices, devs[i].indices, devs[i].n_indices * sizeof(int32_t));
    }
    return n;
}

static bool slurm_holds(struct backend *b, int64_t workload_id)
{
    struct slurm_job_info info;
    return backend_slurm_job(b, workload_id, &info) == 0;
}

static const struct backend_ops slurm_ops = {
    .name = "slurm",
    .title = "Slurm",
    .launch = slurm_launch,
    .stop = slurm_stop,
    .poll = slurm_poll,
    .next_event_ms = slurm_next_event_ms,
    .adopt = slurm_adopt,
    .free = slurm_free,
    .discover = slurm_discover,
    .take_devices = slurm_take_devices,
    .sweep = backend_slurm_sweep,
    .launch_after = backend_slurm_launch_after,
    .followable = backend_slurm_followable,
    .holds = slurm_holds,
};

int backend_slurm_nodes(struct backend *b, struct slurm_node **ret, size_t *ret_n,
                        struct error_info *ei)
{
    static const char *const args[] = {"--json", NULL};
    struct slurm *s = slurm_of(b);
    struct run_result r;
    int rc;

    assert(b->ops == &slurm_ops);
    rc = slurm__run_tool(s, T_SINFO, args, NULL, SINFO_MAX, &r, ei);
    if (rc < 0)
        return rc;
    if (r.status != 0) {
        char line[200];
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "sinfo failed: %s",
                         slurm__first_line(&r, line, sizeof(line)));
    } else {
        rc = slurm_parse_nodes(r.out.data ? r.out.data : "", r.out.len, ret, ret_n, ei);
    }
    run_result_release(&r);
    return rc;
}

size_t backend_slurm_take_devices(struct backend *b, struct slurm_job_devices *out, size_t max)
{
    struct slurm *s = slurm_of(b);
    size_t n;

    assert(b->ops == &slurm_ops);
    assert(out || max == 0);
    n = s->n_devices < max ? s->n_devices : max;
    if (n == 0)
        return 0;
    memcpy(out, s->devices, n * sizeof(*out));
    memmove(s->devices, s->devices + n, (s->n_devices - n) * sizeof(*s->devices));
    s->n_devices -= n;
    return n;
}

int backend_slurm_job(struct backend *b, int64_t workload_id, struct slurm_job_info *ret)
{
    struct slurm *s = slurm_of(b);
    struct sjob *w;
    assert(b->ops == &slurm_ops);
    w = backend_work_find(&s->work, workload_id, NULL);
    if (!w)
        return ERR_NOT_FOUND;
    if (w->running && !w->gres_known)
        slurm__learn_gres(s, w);
    *ret = w->info;
    return 0;
}

/* ---- creation ---- */

/* The full path of a tool: in bin_dir, else the first in PATH. Caller frees; NULL if none. */
static char *find_tool(const char *bin_dir, const char *name)
{
    const char *path = bin_dir && bin_dir[0] ? bin_dir : getenv("PATH");
    const char *p = path && path[0] ? path : DEFAULT_PATH;

    while (*p) {
        size_t len = strcspn(p, ":");
        char *full = xasprintf("%.*s/%s", (int)len, p, name);
        if (len > 0 && access(full, X_OK) == 0)
            return full;
        free(full);
        p += len;
        if (*p == ':')
            p++;
    }
    return NULL;
}

/* The tools' environment: minimal (the daemon's may hold secrets), plus SLURM_CONF. */
static char **env_build(const char *conf)
{
    static const char *const carried[] = {"LANG", "LC_ALL", "TZ", "HOME"};
    char **env = xcalloc(16, sizeof(*env));
    const char *path = getenv("PATH"), *daemon_conf = getenv("SLURM_CONF");
    size_t n = 0;

    env[n++] = xasprintf("PATH=%s", path && path[0] ? path : DEFAULT_PATH);
    for (size_t i = 0; i < ARRAY_SIZE(carried); i++) {
        const char *v = getenv(carried[i]);
        if (v)
            env[n++] = xasprintf("%s=%s", carried[i], v);
    }
    if (conf && conf[0])
        env[n++] = xasprintf("SLURM_CONF=%s", conf);
    else if (daemon_conf && daemon_conf[0])
        env[n++] = xasprintf("SLURM_CONF=%s", daemon_conf);
    return env;
}

static char *dup_or_null(const char *v)
{
    return v && v[0] ? xstrdup(v) : NULL;
}

/*
 * Where the cluster records finished jobs, asked of `scontrol show config`
 * once at creation: sets s->accounting (slurmdbd), and returns its
 * jobcomp/filetxt file when this host can read it (caller frees); NULL
 * otherwise (scontrol missing or failing, another JobCompType, the file on
 * the controller's host only).
 */
static char *read_config(struct slurm *s)
{
    const char *args[] = {"show", "config", NULL};
    struct run_result r;
    char path[4096];
    int found = 0;

    if (!s->tools[T_SCONTROL] ||
        slurm__run_tool(s, T_SCONTROL, args, NULL, SMALL_MAX, &r, NULL) < 0)
        return NULL;
    if (r.status == 0 && r.out.data) {
        found = slurm_parse_jobcomp_config(r.out.data, r.out.len, path, sizeof(path));
        s->accounting = slurm_parse_accounting_config(r.out.data, r.out.len) == 1;
    }
    run_result_release(&r);
    return found == 1 && access(path, R_OK) == 0 ? xstrdup(path) : NULL;
}

bool backend_slurm_sacct(const struct backend *b)
{
    const struct slurm *s = b->impl;
    assert(b->ops == &slurm_ops);
    return s->accounting && s->tools[T_SACCT];
}

const char *backend_slurm_jobcomp(const struct backend *b)
{
    const struct slurm *s = b->impl;
    assert(b->ops == &slurm_ops);
    return s->jobcomp_path;
}

struct backend *backend_slurm_new(int64_t cluster_id, const struct slurm_options *opt,
                                  struct error_info *ei)
{
    struct slurm *s;
    char *log_dir;
    bool run_as;
    uid_t uid = 0;
    gid_t gid = 0;

    if (!opt || !opt->log_dir || !opt->log_dir[0]) {
        errinfo_set(ei, ERR_INVALID, "log_dir", "the slurm backend needs a log directory");
        return NULL;
    }
    run_as = geteuid() == 0 && opt->run_uid > 0 && opt->run_uid < INT32_MAX;
    /* Work run as another user must pass through it to its log (search, not list). */
    if (mkdir(opt->log_dir, run_as ? 0711 : 0700) < 0 && errno != EEXIST) {
        errinfo_set(ei, ERR_IO, "log_dir", "could not create log directory '%s': %s", opt->log_dir,
                    strerror(errno));
        return NULL;
    }
    if (run_as) {
        uid = (uid_t)opt->run_uid;
        gid = (gid_t)(opt->run_gid > 0 && opt->run_gid < INT32_MAX ? opt->run_gid : opt->run_uid);
        if (backend_dir_reachable(opt->log_dir, uid, gid, ei) < 0)
            return NULL;
    }
    /* Slurm's nodes write the logs and sbatch runs elsewhere: the path must be absolute. */
    if (opt->log_dir[0] == '/') {
        log_dir = xstrdup(opt->log_dir);
    } else {
        char cwd[4096];
        if (!getcwd(cwd, sizeof(cwd))) {
            errinfo_set(ei, ERR_IO, "log_dir", "could not resolve log directory '%s': %s",
                        opt->log_dir, strerror(errno));
            return NULL;
        }
        log_dir = xasprintf("%s/%s", cwd, opt->log_dir);
    }
    s = xcalloc(1, sizeof(*s));
    s->b = (struct backend){.ops = &slurm_ops, .cluster_id = cluster_id, .impl = s};
    for (size_t i = 0; i < N_TOOLS; i++) {
        s->tools[i] = find_tool(opt->bin_dir, slurm__tool_names[i]);
        /* optional: scontrol (GPU indices, the config), sacct (ended jobs) */
        if (!s->tools[i] && i != T_SCONTROL && i != T_SACCT) {
            errinfo_set(ei, ERR_UNAVAILABLE, "bin_dir", "slurm's '%s' was not found in '%s'",
                        slurm__tool_names[i],
                        opt->bin_dir && opt->bin_dir[0] ? opt->bin_dir : "PATH");
            slurm_free(&s->b);
            free(log_dir);
            return NULL;
        }
    }
    s->log_dir = log_dir;
    s->run_as = run_as;
    s->uid = uid;
    s->gid = gid;
    s->job_prefix = backend_instance_prefix(log_dir);
    s->partition = dup_or_null(opt->partition);
    s->env = env_build(opt->conf);
    s->poll_interval_ms = opt->poll_interval_ms > 0 ? opt->poll_interval_ms : 500;
    s->command_timeout_ms = opt->command_timeout_ms > 0 ? opt->command_timeout_ms : 10000;
    s->timeout_grace_ms = opt->timeout_grace_ms > 0 ? opt->timeout_grace_ms : 0;
    s->max_submits = opt->max_submits > 0 ? (size_t)opt->max_submits : 4;
    s->sacct_patience_ms = opt->sacct_patience_ms > 0 ? opt->sacct_patience_ms : SACCT_PATIENCE_MS;
    s->jobcomp_path = read_config(s);
    if (opt->jobcomp_path && opt->jobcomp_path[0]) {
        free(s->jobcomp_path);
        s->jobcomp_path =
            strcmp(opt->jobcomp_path, "none") != 0 ? xstrdup(opt->jobcomp_path) : NULL;
    }
    return &s->b;
}
