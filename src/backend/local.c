/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.c: the backend that runs placed work on the machine the daemon runs
 * on (issue 8, docs/local-backend.md). Each replica is `/bin/sh -c <command>`
 * (or `podman run` of the workload's image) in its own session and process
 * group, with the allocated GPUs in CUDA_VISIBLE_DEVICES /
 * NVIDIA_VISIBLE_DEVICES, its output appended to a per-workload log file
 * and, where the daemon may manage cgroups (v2, or v1's cpu and memory
 * hierarchies: cgroup.h), its own cgroup with the flavor's CPU and memory
 * limits. Processes are started by the spawner (spawner.h), never forked
 * from the daemon.
 *
 * The backend owns no clock and no thread: stop() sends SIGTERM and records
 * when SIGKILL is due; poll(), driven by the caller's clock, takes the ends
 * the spawner has told, sends the kills that have come due, enforces max
 * runtimes and reports each workload once all its replicas have ended. Each
 * replica's run file (pid and /proc start time, then exit code and end,
 * written by its keeper) lets a restarted daemon find its work again
 * without mistaking a reused pid for it.
 */
#include "base/common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "backend/backend.h"
#include "backend/cgroup.h"
#include "backend/local-int.h"
#include "backend/spawner.h"
#include "backend/work.h"
#include "base/alloc.h"
#include "base/fdio.h"
#include "base/parse.h"
#include "base/timeutil.h"

#define NEVER INT64_MAX
#define UNKNOWN_EXIT (-1)
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct replica {
    int32_t replica;
    pid_t pid;
    uint64_t start_time; /* /proc/<pid>/stat field 22, in clock ticks since boot */
    bool own;            /* our child: waited for; else adopted, watched through /proc */
    bool ended;
    int exit_code;
    int64_t ended_ms; /* when it ended, from its keeper's exit file; 0: unknown */
    char *cgroup;     /* its cgroup's name (cgroup.h), NULL when none */
    char *container;  /* its podman container's name, NULL when it runs no image */
};

struct lwork {
    int64_t id; /* first: backend/work.h */
    struct replica *reps;
    size_t n_reps;
    int64_t deadline_ms;     /* max runtime reached, NEVER when none */
    int64_t kill_at_ms;      /* SIGKILL due, NEVER when none pending */
    enum backend_end reason; /* 0 while nobody asked it to end, STOPPED or TIMEOUT */
    bool lost;               /* adopt found nothing: report LOST at lost_at_ms */
    int64_t lost_at_ms;
};

struct local {
    struct backend b;
    char *log_dir;
    struct cgroup_place cgroups; /* kind CGROUP_NONE: work runs without limits */
    char *cgroups_why;           /* why there are none, or where they are: for the log */
    char **stale_cgroups;        /* could not be removed yet (processes were leaving) */
    size_t n_stale, cap_stale;
    char *name_prefix; /* of cgroups' and containers' names (backend_instance_prefix) */
    char *podman;      /* for work that names an image; NULL: none here */
    char *podman_nofile, *podman_nproc; /* its --ulimit flags (podman_ulimits()) */
    bool switch_user;
    uid_t uid;
    gid_t gid;
    int64_t timeout_grace_ms;
    struct spawner *spawner; /* opt->spawner, or our own started at the first launch */
    bool own_spawner;        /* ours to stop */

    struct backend_work work; /* struct lwork, in launch order; ends not yet handed out */
    struct local_discovery disc;
};

static struct local *local_of(struct backend *b)
{
    return b->impl;
}

static_assert(offsetof(struct lwork, id) == 0, "backend/work.h wants the id first");

/* ---- files ---- */

static char *log_path(const struct local *s, int64_t id)
{
    return xasprintf("%s/%" PRId64 ".log", s->log_dir, id);
}

/* A replica's run file, written by its keeper (backend/spawner-proto.h). */
static char *run_path(const struct local *s, int64_t id, int32_t replica)
{
    return xasprintf("%s/%" PRId64 ".%" PRId32 ".run", s->log_dir, id, replica);
}

/* What a run file says; each part false/absent until its keeper wrote it. */
struct run_record {
    bool started; /* pid and start time */
    pid_t pid;
    uint64_t start_time;
    bool ended; /* exit code and end time */
    int exit_code;
    int64_t ended_ms;
};

/* Reads a run file; a part that is missing or not well-formed counts as not written. */
static void read_run(const char *path, struct run_record *rr)
{
    char buf[2 * SPAWN_RUN_END_AT];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
    long long a, b;

    memset(rr, 0, sizeof(*rr));
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (sscanf(buf, "%lld %lld\n", &a, &b) == 2 && a > 0 && a <= INT32_MAX && b >= 0) {
        rr->started = true;
        rr->pid = (pid_t)a;
        rr->start_time = (uint64_t)b;
    }
    if (n > SPAWN_RUN_END_AT && sscanf(buf + SPAWN_RUN_END_AT, "%lld %lld", &a, &b) == 2 && b > 0 &&
        a >= -1000 && a <= 1000) {
        rr->ended = true;
        rr->exit_code = (int)a;
        rr->ended_ms = b;
    }
}

/* ---- /proc ---- */

/*
 * The state (field 3) and start time (field 22) of a process. Returns 0, or
 * -1 when there is no such process. The command name (field 2) may hold
 * spaces and parentheses, so fields are counted from its last ')'.
 */
static int proc_stat(pid_t pid, char *ret_state, uint64_t *ret_start)
{
    char path[64], buf[1024], *p, *end;
    unsigned long long start;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (file_read_small(path, buf, sizeof(buf)) < 0)
        return -1;
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -1;
    p += 2;
    *ret_state = *p;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p)
            return -1;
        p++;
    }
    errno = 0;
    start = strtoull(p, &end, 10);
    if (errno || end == p)
        return -1;
    *ret_start = start;
    return 0;
}

/* Whether pid is still the process that started at start_time (zombies count as ended). */
static bool proc_alive(pid_t pid, uint64_t start_time)
{
    char state;
    uint64_t start;
    if (proc_stat(pid, &state, &start) < 0 || start != start_time)
        return false;
    return state != 'Z' && state != 'X';
}

/* ---- signals ---- */

/* Signals a replica's whole process group (or the process itself before its setsid()). */
static void signal_replica(const struct replica *r, int sig)
{
    if (r->ended)
        return;
    if (!r->own && !proc_alive(r->pid, r->start_time))
        return; /* not ours any more: never signal a reused pid */
    if (kill(-r->pid, sig) < 0 && errno == ESRCH)
        kill(r->pid, sig);
}

static void podman_kill(struct local *s, const char *container, const char *log);

static void signal_work(struct local *s, struct lwork *w, int sig)
{
    for (size_t i = 0; i < w->n_reps; i++) {
        struct replica *r = &w->reps[i];
        bool running = !r->ended;
        signal_replica(r, sig);
        /*
         * podman passes SIGTERM on to the container, but a killed podman
         * leaves its container running: kill that too.
         */
        if (running && sig == SIGKILL && r->container) {
            char *log = log_path(s, w->id);
            podman_kill(s, r->container, log);
            free(log);
        }
    }
}

/* ---- cgroups ---- */

/*
 * Removes a replica's cgroup once it has ended: its keeper did (found gone),
 * or could not (killed at the end of a grace, or processes still leaving):
 * then what is left is killed and the name kept, to try again at each poll.
 */
static void cgroup_drop(struct local *s, char *name)
{
    if (!name)
        return;
    if (cgroup_remove(&s->cgroups, name) == 0) {
        free(name);
        return;
    }
    cgroup_kill(&s->cgroups, name);
    ALLOC_GROW(s->stale_cgroups, s->n_stale + 1, s->cap_stale);
    s->stale_cgroups[s->n_stale++] = name;
}

/*
 * Tries again to remove the cgroups that could not be; reused (may be
 * NULL), about to be made again for a new run of the same replica, is
 * dropped from the list whatever happens, so that no later retry can touch
 * the new run.
 */
static void cgroup_retry(struct local *s, const char *reused)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n_stale; i++) {
        char *name = s->stale_cgroups[i];
        bool reuse = reused && strcmp(name, reused) == 0;
        if (cgroup_remove(&s->cgroups, name) == 0 || reuse) {
            free(name);
            continue;
        }
        cgroup_kill(&s->cgroups, name);
        s->stale_cgroups[kept++] = name;
    }
    s->n_stale = kept;
}

/*
 * gpuaas-<daemon>-<id>-<replica>, a replica's cgroup and container name:
 * daemons with their own stores may share a machine.
 */
static char *replica_name(const struct local *s, int64_t id, int32_t replica)
{
    return xasprintf("%s%" PRId64 "-%" PRId32, s->name_prefix, id, replica);
}

/* ---- records ---- */

static void work_free(struct lwork *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_reps; i++) {
        free(w->reps[i].cgroup);
        free(w->reps[i].container);
    }
    free(w->reps);
    free(w);
}

/* ---- launch ---- */

/* The devices of one replica as the CUDA runtime wants them: uuids, else indices. */
static char *device_list(const struct backend_replica *r)
{
    size_t cap = 1;
    char *out, *p;

    for (size_t i = 0; i < r->n_devices; i++)
        cap += (r->devices[i].uuid ? strlen(r->devices[i].uuid) : 0) + 16;
    out = xmalloc(cap);
    p = out;
    *p = '\0';
    for (size_t i = 0; i < r->n_devices; i++) {
        const struct backend_device *d = &r->devices[i];
        size_t left = cap - (size_t)(p - out);
        int n;
        if (d->uuid && d->uuid[0])
            n = snprintf(p, left, "%s%s", i ? "," : "", d->uuid);
        else
            n = snprintf(p, left, "%s%" PRId32, i ? "," : "", d->index);
        assert(n >= 0 && (size_t)n < left);
        p += n;
    }
    return out;
}

/*
 * The child's environment: a minimal one (the daemon's own may hold
 * secrets), the device lists and who it is. Caller frees with env_free().
 */
static char **env_build(const struct local *s, const struct backend_launch *l,
                        const struct backend_replica *r)
{
    static const char *const carried[] = {"LANG", "LC_ALL", "TZ"};
    char **env = xcalloc(16, sizeof(*env));
    char *devices = device_list(r);
    const char *path = getenv("PATH"), *home = getenv("HOME");
    size_t n = 0;

    env[n++] = xasprintf("PATH=%s", path && path[0] ? path : DEFAULT_PATH);
    if (!s->switch_user && home)
        env[n++] = xasprintf("HOME=%s", home);
    for (size_t i = 0; i < ARRAY_SIZE(carried); i++) {
        const char *v = getenv(carried[i]);
        if (v)
            env[n++] = xasprintf("%s=%s", carried[i], v);
    }
    env[n++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", devices);
    env[n++] = xasprintf("NVIDIA_VISIBLE_DEVICES=%s", devices);
    env[n++] = xasprintf("GPUAAS_WORKLOAD_ID=%" PRId64, l->workload_id);
    env[n++] = xasprintf("GPUAAS_REPLICA=%" PRId32, r->replica);
    assert(n < 16);
    free(devices);
    return env;
}

static void env_free(char **env)
{
    if (!env)
        return;
    for (char **p = env; *p; p++)
        free(*p);
    free(env);
}

/* Kills replicas started by a launch that then failed (the spawner reaps them). */
static void undo_launch(struct local *s, struct lwork *w)
{
    signal_work(s, w, SIGKILL);
    for (size_t i = 0; i < w->n_reps; i++) {
        struct replica *r = &w->reps[i];
        if (r->pid > 0)
            spawner_forget(s->spawner, r->pid);
        cgroup_drop(s, r->cgroup);
        r->cgroup = NULL;
    }
}

/* A NULL-terminated list of strings being built. */
struct argv_buf {
    char **v;
    size_t n, cap;
};

static void argv_add(struct argv_buf *a, char *owned)
{
    ALLOC_GROW(a->v, a->n + 2, a->cap); /* the argument and the NULL after it */
    a->v[a->n++] = owned;
    a->v[a->n] = NULL;
}

/*
 * The program a replica runs: `/bin/sh -c <command>`, or, for work that
 * names an image, podman running that command in a container of it with
 * the replica's devices (CDI names nvidia.com/gpu=<uuid or index>), its CPU
 * and memory limits and the same variables. The container is named
 * gpuaas-<daemon>-<id>-<replica> (replacing a leftover of an earlier run),
 * so that it can be killed by name. `--init` puts a small init (catatonit) in front
 * of the command, so that SIGTERM ends a command that does not trap it, as
 * it does without a container (PID 1 ignores signals it has no handler
 * for). Caller frees with env_free().
 */
static char **replica_argv(const struct local *s, const struct backend_launch *l,
                           const struct backend_replica *br, const char *container)
{
    struct argv_buf a = {0};
    char *devices;

    if (!l->image || !l->image[0]) {
        argv_add(&a, xstrdup("sh"));
        argv_add(&a, xstrdup("-c"));
        argv_add(&a, xstrdup(l->command));
        return a.v;
    }
    devices = device_list(br);
    argv_add(&a, xstrdup("podman"));
    argv_add(&a, xstrdup("run"));
    argv_add(&a, xstrdup("--rm"));
    argv_add(&a, xstrdup("--replace"));
    argv_add(&a, xasprintf("--name=%s", container));
    argv_add(&a, xstrdup("--init"));
    argv_add(&a, xstrdup(s->podman_nofile));
    argv_add(&a, xstrdup(s->podman_nproc));
    if (l->cpu_milli > 0)
        argv_add(&a, xasprintf("--cpus=%" PRId64 ".%03" PRId64, l->cpu_milli / 1000,
                               l->cpu_milli % 1000));
    if (l->mem_mib > 0)
        argv_add(&a, xasprintf("--memory=%" PRId64 "m", l->mem_mib));
    for (size_t i = 0; i < br->n_devices; i++) {
        const struct backend_device *d = &br->devices[i];
        if (d->uuid && d->uuid[0])
            argv_add(&a, xasprintf("--device=nvidia.com/gpu=%s", d->uuid));
        else
            argv_add(&a, xasprintf("--device=nvidia.com/gpu=%" PRId32, d->index));
    }
    argv_add(&a, xasprintf("--env=CUDA_VISIBLE_DEVICES=%s", devices));
    argv_add(&a, xasprintf("--env=NVIDIA_VISIBLE_DEVICES=%s", devices));
    argv_add(&a, xasprintf("--env=GPUAAS_WORKLOAD_ID=%" PRId64, l->workload_id));
    argv_add(&a, xasprintf("--env=GPUAAS_REPLICA=%" PRId32, br->replica));
    argv_add(&a, xstrdup(l->image));
    argv_add(&a, xstrdup("/bin/sh"));
    argv_add(&a, xstrdup("-c"));
    argv_add(&a, xstrdup(l->command));
    free(devices);
    return a.v;
}

/*
 * The open-file and process limits a container gets: this process's hard
 * limits (what work without a container may raise its own to), the process
 * limit at most kernel.pid_max. podman's defaults (1048576 of each, for
 * root) need CAP_SYS_RESOURCE where they are above what podman itself was
 * given, and podman lowers its own process limit to pid_max first; these
 * values never do. Sets two "--ulimit=..." strings; the caller frees them.
 */
static void podman_ulimits(char **ret_nofile, char **ret_nproc)
{
    struct rlimit nofile = {RLIM_INFINITY, RLIM_INFINITY}, nproc = {RLIM_INFINITY, RLIM_INFINITY};
    char buf[32];
    int64_t pid_max = -1;

    getrlimit(RLIMIT_NOFILE, &nofile);
    getrlimit(RLIMIT_NPROC, &nproc);
    if (file_read_small("/proc/sys/kernel/pid_max", buf, sizeof(buf)) > 0) {
        buf[strcspn(buf, "\n")] = '\0';
        if (parse_int64(buf, 1, INT64_MAX, &pid_max) < 0)
            pid_max = -1;
    }
    if (pid_max > 0 && (nproc.rlim_max == RLIM_INFINITY || nproc.rlim_max > (rlim_t)pid_max))
        nproc.rlim_max = (rlim_t)pid_max;
    /* -1: unlimited, for podman */
    if (nofile.rlim_max == RLIM_INFINITY)
        *ret_nofile = xstrdup("--ulimit=nofile=-1:-1");
    else
        *ret_nofile = xasprintf("--ulimit=nofile=%llu:%llu", (unsigned long long)nofile.rlim_max,
                                (unsigned long long)nofile.rlim_max);
    if (nproc.rlim_max == RLIM_INFINITY)
        *ret_nproc = xstrdup("--ulimit=nproc=-1:-1");
    else
        *ret_nproc = xasprintf("--ulimit=nproc=%llu:%llu", (unsigned long long)nproc.rlim_max,
                               (unsigned long long)nproc.rlim_max);
}

/* Runs `podman kill --signal KILL <container>`, not waited for; its output goes to log. */
static void podman_kill(struct local *s, const char *container, const char *log)
{
    const char *const argv[] = {"podman", "kill", "--signal", "KILL", container, NULL};
    char *const env[] = {"PATH=" DEFAULT_PATH, NULL};
    struct spawn_request rq = {
        .program = s->podman, .argv = argv, .envp = env, .log_path = log, .run_path = "/dev/null"};
    pid_t pid;

    if (s->spawner && spawner_spawn(s->spawner, &rq, &pid, NULL) == 0)
        spawner_forget(s->spawner, pid);
}

/*
 * Reads what the spawner has said. When it is gone, what it started is
 * watched through /proc and exit files from now on, and the next launch
 * starts another.
 */
static void spawner_check(struct local *s)
{
    if (!s->spawner || spawner_alive(s->spawner))
        return;
    for (size_t i = 0; i < s->work.n; i++) {
        struct lwork *w = s->work.items[i];
        for (size_t k = 0; k < w->n_reps; k++)
            w->reps[k].own = false;
    }
    if (s->own_spawner)
        spawner_stop(s->spawner);
    s->spawner = NULL;
}

static int local_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                        struct error_info *ei)
{
    struct local *s = local_of(b);
    struct spawner *sp;
    struct lwork *w;
    char *logp;
    int rc = backend_check_launch(l, ei);

    if (rc < 0)
        return rc;
    if (!l->command || !l->command[0])
        return errinfo_set(ei, ERR_INVALID, "command", "workload %" PRId64 " has no command to run",
                           l->workload_id);
    if (l->image && l->image[0] && !s->podman)
        return errinfo_set(ei, ERR_INVALID, "image",
                           "workload %" PRId64
                           " names an image, and podman is not installed on this machine",
                           l->workload_id);
    if ((rc = backend_work_check_free(&s->work, l->workload_id, "on this machine", ei)) < 0)
        return rc;
    spawner_check(s);
    if (!s->spawner) {
        if (spawner_start(NULL, &s->spawner, ei) < 0)
            return ERR_UNAVAILABLE;
        s->own_spawner = true;
    }
    sp = s->spawner;

    logp = log_path(s, l->workload_id);
    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->reps = xcalloc(l->n_replicas, sizeof(*w->reps));
    w->n_reps = l->n_replicas;
    w->kill_at_ms = NEVER;
    w->deadline_ms = l->max_runtime_ms >= 0 ? time_add_ms(now_ms, l->max_runtime_ms) : NEVER;

    for (size_t i = 0; i < l->n_replicas && rc == 0; i++) {
        const struct backend_replica *br = &l->replicas[i];
        struct replica *r = &w->reps[i];
        bool image = l->image && l->image[0];
        struct spawn_request rq = {.program = image ? s->podman : "/bin/sh",
                                   .log_path = logp,
                                   .switch_user = s->switch_user,
                                   .uid = s->uid,
                                   .gid = s->gid};
        struct error_info sei = {0};
        char cgroup[3 * PATH_MAX], *runp, **env, **args, state;
        pid_t pid;

        r->replica = br->replica;
        r->own = true;
        if (s->cgroups.kind != CGROUP_NONE) {
            /* made by the replica's keeper, with its limits: its time, not the engine's */
            r->cgroup = replica_name(s, l->workload_id, br->replica);
            if (s->n_stale > 0)
                cgroup_retry(s, r->cgroup);
            if (cgroup_request_format(&s->cgroups, r->cgroup, l->cpu_milli, l->mem_mib, cgroup,
                                      sizeof(cgroup)) < 0) {
                rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                                 "workload %" PRId64 " replica %" PRId32
                                 ": its cgroup's path is too long",
                                 l->workload_id, br->replica);
                break;
            }
        }
        runp = run_path(s, l->workload_id, br->replica);
        env = env_build(s, l, br);
        if (image)
            r->container = replica_name(s, l->workload_id, br->replica);
        args = replica_argv(s, l, br, r->container);
        rq.argv = (const char *const *)args;
        rq.run_path = runp;
        rq.cgroup = r->cgroup ? cgroup : NULL;
        rq.envp = env;
        rc = spawner_spawn(sp, &rq, &pid, &sei);
        if (rc == 0) {
            r->pid = pid;
            /* The keeper's start time is set by fork, so it can be read at once. */
            if (proc_stat(pid, &state, &r->start_time) < 0)
                r->start_time = 0;
        } else {
            errinfo_set(ei, rc, NULL, "workload %" PRId64 " replica %" PRId32 ": %s",
                        l->workload_id, br->replica, sei.message);
        }
        env_free(env);
        env_free(args);
        free(runp);
    }
    free(logp);
    if (rc < 0) {
        undo_launch(s, w);
        work_free(w);
        return rc;
    }
    backend_work_add(&s->work, w);
    return 0;
}

/* ---- adopt ---- */

/* A replica that ended unseen: how and when, from its keeper's run file when it says. */
static void ended_unseen(const struct local *s, int64_t id, struct replica *r)
{
    char *path = run_path(s, id, r->replica);
    struct run_record rr;
    read_run(path, &rr);
    r->ended = true;
    r->exit_code = rr.ended ? rr.exit_code : UNKNOWN_EXIT;
    r->ended_ms = rr.ended ? rr.ended_ms : 0;
    free(path);
}

/*
 * Finds one replica again from its run file: still running, or ended (a
 * pid whose start time differs is another process). False when its keeper
 * never wrote the file: nothing of it can be found.
 */
static bool adopt_replica(const struct local *s, int64_t id, struct replica *r)
{
    char *path = run_path(s, id, r->replica), state;
    struct run_record rr;
    uint64_t start;

    read_run(path, &rr);
    free(path);
    if (!rr.started)
        return false;
    r->pid = rr.pid;
    r->start_time = rr.start_time;
    if (proc_stat(r->pid, &state, &start) < 0 || start != r->start_time) {
        ended_unseen(s, id, r);
    } else if (state == 'Z' || state == 'X') {
        ended_unseen(s, id, r);
        kill(-r->pid, SIGKILL); /* its group's leftovers: the id cannot be reused meanwhile */
    }
    return true;
}

static int local_adopt(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                       int64_t now_ms, struct error_info *ei)
{
    struct local *s = local_of(b);
    struct lwork *w;
    size_t n_alive = 0;
    bool all_known;
    int rc = backend_work_check_adopt(&s->work, l, started_ms, now_ms, "on this machine", ei);

    if (rc < 0)
        return rc;

    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->kill_at_ms = NEVER;
    w->deadline_ms = l->max_runtime_ms >= 0 ? time_add_ms(started_ms, l->max_runtime_ms) : NEVER;
    w->reps = xcalloc(l->n_replicas, sizeof(*w->reps));
    for (size_t i = 0; i < l->n_replicas; i++) {
        struct replica r = {.replica = l->replicas[i].replica};
        if (!adopt_replica(s, w->id, &r))
            continue;
        if (!r.ended)
            n_alive++;
        if (s->cgroups.kind != CGROUP_NONE)
            r.cgroup = replica_name(s, w->id, r.replica);
        if (l->image && l->image[0])
            r.container = replica_name(s, w->id, r.replica);
        w->reps[w->n_reps++] = r;
    }
    all_known = w->n_reps > 0;
    for (size_t i = 0; i < w->n_reps; i++)
        all_known = all_known && w->reps[i].ended_ms > 0;
    if (n_alive == 0 && !all_known) {
        /* Nothing of it runs and no keeper said how it ended: lost, not exited. */
        for (size_t i = 0; i < w->n_reps; i++) {
            cgroup_drop(s, w->reps[i].cgroup);
            w->reps[i].cgroup = NULL;
        }
        w->lost = true;
        w->lost_at_ms = now_ms;
    }
    backend_work_add(&s->work, w);
    return 0;
}

/* ---- stop, poll ---- */

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return -WTERMSIG(status);
    return UNKNOWN_EXIT;
}

/*
 * Notices that a replica has ended: told by the spawner for what it started
 * (it has killed the group's leftovers), else looked up in /proc.
 */
static void check_replica(const struct local *s, int64_t id, struct replica *r)
{
    if (r->ended)
        return;
    if (r->own) {
        int status;
        if (!spawner_take_end(s->spawner, r->pid, &status))
            return; /* still running */
        r->ended = true;
        r->exit_code = exit_code_of(status);
    } else {
        char state;
        uint64_t start;
        int found = proc_stat(r->pid, &state, &start);
        if (found == 0 && start == r->start_time && state != 'Z' && state != 'X')
            return;
        ended_unseen(s, id, r);
        if (found < 0 || start == r->start_time)
            kill(-r->pid, SIGKILL); /* no other process holds that id */
    }
    /* the keeper emptied and removed its cgroup, or work_finish() will */
}

static int local_stop(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms)
{
    struct local *s = local_of(b);
    struct lwork *w = backend_work_find(&s->work, workload_id, NULL);
    int64_t kill_at;

    if (!w || w->lost)
        return 0;
    if (!w->reason)
        w->reason = BACKEND_STOPPED;
    /* Never signal a replica that has ended: its pid may be another's by now. */
    spawner_check(s);
    for (size_t i = 0; i < w->n_reps; i++)
        check_replica(s, w->id, &w->reps[i]);
    signal_work(s, w, SIGTERM);
    kill_at = time_add_ms(now_ms, grace_ms);
    if (kill_at < w->kill_at_ms)
        w->kill_at_ms = kill_at;
    return 0;
}

/*
 * When the workload ended: the last replica's end from the keepers' exit
 * files when every one is known (work that ended while the daemon was down),
 * else now, when it was noticed.
 */
static int64_t ended_at(const struct lwork *w, int64_t now_ms)
{
    int64_t last = 0;
    for (size_t i = 0; i < w->n_reps; i++) {
        if (w->reps[i].ended_ms <= 0 || w->reps[i].own)
            return now_ms;
        if (w->reps[i].ended_ms > last)
            last = w->reps[i].ended_ms;
    }
    return last > 0 && last <= now_ms ? last : now_ms;
}

/* The workload's exit code: the lowest-numbered replica that failed, else 0. */
static int work_exit_code(const struct lwork *w)
{
    const struct replica *best = NULL;
    for (size_t i = 0; i < w->n_reps; i++) {
        const struct replica *r = &w->reps[i];
        if (r->exit_code != 0 && (!best || r->replica < best->replica))
            best = r;
    }
    return best ? best->exit_code : 0;
}

/*
 * Forgets an ended workload: its cgroups go. Its log, state file and exit
 * files stay, the record of where it ran and how each replica ended; they
 * go together with the log. Deleting them here cost more than running the
 * work: ext4 searches past every recently deleted inode to create a file,
 * so at hundreds of launches a second a create took milliseconds.
 */
static void work_finish(struct local *s, size_t pos)
{
    struct lwork *w = backend_work_take(&s->work, pos);
    for (size_t i = 0; i < w->n_reps; i++) {
        cgroup_drop(s, w->reps[i].cgroup);
        w->reps[i].cgroup = NULL;
    }
    work_free(w);
}

/* Looks at every known workload at now_ms and queues the ones that have ended. */
static void scan(struct local *s, int64_t now_ms)
{
    size_t i = 0;

    spawner_check(s);
    while (i < s->work.n) {
        struct lwork *w = s->work.items[i];
        bool all_ended = true;

        if (w->lost) {
            backend_ends_push(&s->work.done, &(struct backend_event){.workload_id = w->id,
                                                                     .at_ms = w->lost_at_ms,
                                                                     .how = BACKEND_LOST,
                                                                     .exit_code = UNKNOWN_EXIT});
            work_finish(s, i);
            continue;
        }
        for (size_t k = 0; k < w->n_reps; k++) {
            check_replica(s, w->id, &w->reps[k]);
            all_ended = all_ended && w->reps[k].ended;
        }
        if (all_ended) {
            backend_ends_push(&s->work.done,
                              &(struct backend_event){.workload_id = w->id,
                                                      .at_ms = ended_at(w, now_ms),
                                                      .how = w->reason ? w->reason : BACKEND_EXITED,
                                                      .exit_code = work_exit_code(w)});
            work_finish(s, i);
            continue;
        }
        if (!w->reason && w->deadline_ms <= now_ms) {
            w->reason = BACKEND_TIMEOUT;
            signal_work(s, w, SIGTERM);
            w->kill_at_ms = time_add_ms(now_ms, s->timeout_grace_ms);
        }
        if (w->kill_at_ms <= now_ms) {
            signal_work(s, w, SIGKILL);
            w->kill_at_ms = NEVER;
        }
        i++;
    }
}

static size_t local_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct local *s = local_of(b);

    assert(out || max == 0);
    scan(s, now_ms);
    if (s->n_stale > 0)
        cgroup_retry(s, NULL);
    return backend_ends_take(&s->work.done, out, max);
}

static int64_t local_next_event_ms(struct backend *b)
{
    struct local *s = local_of(b);
    int64_t next = NEVER;

    if (s->work.done.n > 0)
        return 0; /* queued already: any poll has them */
    for (size_t i = 0; i < s->work.n; i++) {
        const struct lwork *w = s->work.items[i];
        if (w->lost && w->lost_at_ms < next)
            next = w->lost_at_ms;
        if (w->kill_at_ms < next)
            next = w->kill_at_ms;
        if (!w->reason && w->deadline_ms < next)
            next = w->deadline_ms;
    }
    return next;
}

static void local_free(struct backend *b)
{
    struct local *s;
    if (!b)
        return;
    s = local_of(b);
    if (s->own_spawner)
        spawner_stop(s->spawner);
    for (size_t i = 0; i < s->work.n; i++)
        work_free(s->work.items[i]);
    backend_work_release(&s->work);
    free(s->log_dir);
    cgroup_place_close(&s->cgroups);
    for (size_t i = 0; i < s->n_stale; i++)
        free(s->stale_cgroups[i]);
    free(s->stale_cgroups);
    free(s->cgroups_why);
    free(s->name_prefix);
    free(s->podman);
    free(s->podman_nofile);
    free(s->podman_nproc);
    free(s);
}

static int local_discover_op(struct backend *b, int64_t now_ms, bool fleet_loaded, struct arena *a,
                             struct backend_fleet_report *ret, struct error_info *ei)
{
    (void)now_ms;
    (void)ei;
    return local_discover(&local_of(b)->disc, fleet_loaded, a, ret);
}

/*
 * A process that ends says nothing: the engine looks at local work often,
 * so its GPUs go to the next job within this long, not a tick.
 */
#define LOCAL_LOOK_MS 20

static const struct backend_ops local_ops = {
    .name = "local",
    .launch = local_launch,
    .stop = local_stop,
    .poll = local_poll,
    .next_event_ms = local_next_event_ms,
    .adopt = local_adopt,
    .free = local_free,
    .look_ms = LOCAL_LOOK_MS,
    .discover = local_discover_op,
};

/* The full path of program (a path, or a name looked up in PATH); NULL when not executable. */
static char *find_program(const char *program)
{
    const char *path = getenv("PATH");
    if (!program || !program[0])
        return NULL;
    if (strchr(program, '/'))
        return access(program, X_OK) == 0 ? xstrdup(program) : NULL;
    if (!path || !path[0])
        path = DEFAULT_PATH;
    while (*path) {
        size_t len = strcspn(path, ":");
        char *candidate = xasprintf("%.*s/%s", (int)len, path, program);
        if (len > 0 && access(candidate, X_OK) == 0)
            return candidate;
        free(candidate);
        path += len + (path[len] == ':');
    }
    return NULL;
}

struct backend *backend_local_new(int64_t cluster_id, const struct local_options *opt,
                                  struct error_info *ei)
{
    struct local *s;

    if (!opt || !opt->log_dir || !opt->log_dir[0]) {
        errinfo_set(ei, ERR_INVALID, "log_dir", "the local backend needs a log directory");
        return NULL;
    }
    if (mkdir(opt->log_dir, 0700) < 0 && errno != EEXIST) {
        errinfo_set(ei, ERR_IO, "log_dir", "could not create log directory '%s': %s", opt->log_dir,
                    strerror(errno));
        return NULL;
    }
    s = xcalloc(1, sizeof(*s));
    s->log_dir = xstrdup(opt->log_dir);
    {
        char why[700];
        s->name_prefix = backend_instance_prefix(s->log_dir);
        if (cgroup_place_open(opt->cgroup_root, s->name_prefix, &s->cgroups, why, sizeof(why)) == 0)
            cgroup_place_describe(&s->cgroups, why, sizeof(why));
        s->cgroups_why = xstrdup(why);
    }
    if (geteuid() == 0 && opt->run_uid >= 0 && opt->run_uid < INT32_MAX) {
        s->switch_user = true;
        s->uid = (uid_t)opt->run_uid;
        s->gid =
            (gid_t)(opt->run_gid >= 0 && opt->run_gid < INT32_MAX ? opt->run_gid : opt->run_uid);
    }
    s->timeout_grace_ms = opt->timeout_grace_ms > 0 ? opt->timeout_grace_ms : 0;
    s->spawner = opt->spawner;
    s->podman = find_program(opt->podman ? opt->podman : "podman");
    if (s->podman)
        podman_ulimits(&s->podman_nofile, &s->podman_nproc);
    s->disc = (struct local_discovery){
        .collector = opt->collector, .gpus = opt->gpus, .n_gpus = opt->gpus ? opt->n_gpus : 0};
    s->b = (struct backend){.ops = &local_ops, .cluster_id = cluster_id, .impl = s};
    return &s->b;
}

bool backend_local_cgroups(const struct backend *b, const char **ret_detail)
{
    const struct local *s = b->impl;
    assert(b->ops == &local_ops);
    if (ret_detail)
        *ret_detail = s->cgroups_why;
    return s->cgroups.kind != CGROUP_NONE;
}
