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
 */
#include "base/common.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <jansson.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "base/alloc.h"
#include "base/fdio.h"
#include "base/buf.h"
#include "base/parse.h"

#define NEVER INT64_MAX
#define UNKNOWN_EXIT (-1)
#define STATE_MAGIC "gpuaas-slurm-state 1"
#define STATE_MAX 4096
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define SQUEUE_MAX (256u * 1024 * 1024) /* squeue about every job of a very busy cluster */
#define SINFO_MAX (64u * 1024 * 1024)
#define SMALL_MAX (64u * 1024)

enum tool { T_SBATCH, T_SQUEUE, T_SCANCEL, T_SINFO, T_SCONTROL, T_SACCT, N_TOOLS };
static const char *const tool_names[N_TOOLS] = {"sbatch", "squeue",   "scancel",
                                                "sinfo",  "scontrol", "sacct"};

/* Between two looks at the sbatch runs in flight (next_event_ms while there are some). */
#define SUBMIT_LOOK_MS 5
/* More ids than this: squeue is asked about every job and the answer filtered here. */
#define QUERY_MAX_IDS 500
/* What sacct prints per job: the name last, so a '|' in it is harmless. */
#define SACCT_FIELDS "JobID,State,Start,End,ExitCode,JobName"
/* While sacct fails: how long it may (default sacct_patience_ms), how often it is asked. */
#define SACCT_PATIENCE_MS (10 * 60 * 1000)
#define SACCT_RETRY_MS 5000
/* What squeue prints per job (SLURM_TIME_FORMAT=%s: times as seconds since the epoch). */
#define QUEUE_FIELDS "JobID:|,State:|,StartTime:|,EndTime:|,exit_code:|,NodeList:|,Name:|"

/* A tool started and not yet reaped: its output so far, read from non-blocking pipes. */
struct proc {
    pid_t pid;
    int fd[2]; /* stdout, stderr (read ends); -1 once closed */
    struct buf out, err;
    int64_t deadline; /* monotonic ms */
    const char *name; /* the tool's */
};

struct sjob {
    int64_t id;     /* workload */
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
    bool running;       /* Slurm said RUNNING (so a signal reaches it) */
    bool gres_known;    /* info.gres holds what Slurm assigned */
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
    bool running;  /* started and not yet finished with: counted in n_submitting */
    struct proc p; /* valid while running */
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

    struct sjob **work; /* in launch order */
    size_t n_work, cap_work;
    struct backend_ends done; /* ended, not yet handed out by poll() */
    struct slurm_job_devices *devices; /* learnt, not yet taken */
    size_t n_devices, cap_devices;
    int64_t *cancels; /* jobs not started to cancel, in one scancel at the next poll() */
    size_t n_cancels, cap_cancels;
    int64_t cancel_retry_ms; /* the last scancel did not reach Slurm: tried again then; else 0 */
};

static struct slurm *slurm_of(struct backend *b)
{
    return b->impl;
}

static int64_t add_ms(int64_t t, int64_t d)
{
    if (d > 0 && t > NEVER - 1 - d)
        return NEVER;
    return t + (d > 0 ? d : 0);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Copies src into a fixed array, truncating. */
static void copy_str(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

/* ---- running a tool ---- */

struct tool_result {
    int status; /* exit code, or -signal */
    struct buf out;
    struct buf err;
};

static void result_release(struct tool_result *r)
{
    buf_release(&r->out);
    buf_release(&r->err);
}

/* The first line of a tool's complaint, for an error message. */
static const char *first_line(struct tool_result *r, char *line, size_t size)
{
    const char *s = r->err.data && r->err.len ? r->err.data : r->out.data ? r->out.data : "";
    size_t n = strcspn(s, "\n");
    snprintf(line, size, "%.*s", (int)(n < size ? n : size - 1), s);
    return line;
}

static void kill_and_reap(pid_t pid)
{
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void proc_close(struct proc *p)
{
    for (int k = 0; k < 2; k++) {
        if (p->fd[k] >= 0)
            close(p->fd[k]);
        p->fd[k] = -1;
    }
}

/* Kills and reaps the tool, closes its pipes and drops its output. */
static void proc_abort(struct proc *p)
{
    proc_close(p);
    if (p->pid > 0)
        kill_and_reap(p->pid);
    p->pid = 0;
    buf_release(&p->out);
    buf_release(&p->err);
}

/*
 * Starts tool t with args (NULL-terminated, without the program name) and
 * extra environment entries (NULL-terminated, may be NULL), its stdin
 * stdin_fd (< 0: /dev/null). posix_spawn, not
 * fork: glibc's uses CLONE_VFORK, so the daemon's page tables are not copied
 * and its other threads take no copy-on-write faults. The child gets
 * stdout and stderr on pipes, no other descriptor, default signal
 * dispositions and an empty signal mask. Returns 0 with p filled (finish it
 * with proc_wait or proc_abort), or ERR_UNAVAILABLE with ei.
 */
static int proc_start(struct slurm *s, enum tool t, const char *const *args,
                      const char *const *extra_env, int stdin_fd, size_t out_max, struct proc *p,
                      struct error_info *ei)
{
    const char *argv[64];
    char *envp[32];
    size_t n_arg = 0, n_env = 0;
    int out_pipe[2], err_pipe[2], rc;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, none;

    argv[n_arg++] = tool_names[t];
    for (size_t i = 0; args[i]; i++) {
        assert(n_arg + 1 < ARRAY_SIZE(argv));
        argv[n_arg++] = args[i];
    }
    argv[n_arg] = NULL;
    for (size_t i = 0; s->env[i]; i++)
        envp[n_env++] = s->env[i];
    for (size_t i = 0; extra_env && extra_env[i]; i++) {
        assert(n_env + 1 < ARRAY_SIZE(envp));
        envp[n_env++] = (char *)extra_env[i];
    }
    envp[n_env] = NULL;

    memset(p, 0, sizeof(*p));
    p->fd[0] = p->fd[1] = -1;
    p->name = tool_names[t];
    p->deadline = mono_ms() + s->command_timeout_ms;
    buf_init(&p->out, out_max);
    buf_init(&p->err, SMALL_MAX);
    if (pipe2(out_pipe, O_CLOEXEC) < 0)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not run %s: pipe: %s", argv[0],
                           strerror(errno));
    if (pipe2(err_pipe, O_CLOEXEC) < 0) {
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not run %s: pipe: %s", argv[0],
                         strerror(errno));
        close(out_pipe[0]);
        close(out_pipe[1]);
        return rc;
    }
    /* Only our ends are non-blocking: the flag is shared with every dup of a descriptor. */
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    rc = posix_spawn(&p->pid, s->tools[t], &fa, &attr, (char *const *)argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    close(out_pipe[1]);
    close(err_pipe[1]);
    p->fd[0] = out_pipe[0];
    p->fd[1] = err_pipe[0];
    if (rc != 0) {
        p->pid = 0;
        proc_abort(p);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not execute '%s': %s", s->tools[t],
                           strerror(rc));
    }
    return 0;
}

/*
 * Reads what the tool wrote, waiting up to wait_ms for something to read.
 * Returns 1 when both pipes are closed (the tool is done writing), 0 when
 * not yet, ERR_TOO_LARGE (with ei) when stdout went beyond its cap.
 */
static int proc_pump(struct proc *p, int wait_ms, struct error_info *ei)
{
    struct pollfd pfd[2] = {{.fd = p->fd[0], .events = POLLIN}, {.fd = p->fd[1], .events = POLLIN}};
    char chunk[65536];
    int pr = poll(pfd, 2, wait_ms);

    if (pr < 0 && errno != EINTR)
        pr = 0;
    for (int k = 0; k < 2 && pr > 0; k++) {
        for (;;) {
            ssize_t n;
            if (p->fd[k] < 0 || !(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                break;
            n = read(p->fd[k], chunk, sizeof(chunk));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                break;
            if (n <= 0) {
                close(p->fd[k]);
                p->fd[k] = -1;
                break;
            }
            if (k == 1) {
                buf_append(&p->err, chunk, (size_t)n); /* beyond its cap: dropped */
            } else if (buf_append(&p->out, chunk, (size_t)n) < 0) {
                return errinfo_set(ei, ERR_TOO_LARGE, NULL, "%s wrote more than %zu bytes", p->name,
                                   p->out.max);
            }
        }
    }
    return p->fd[0] < 0 && p->fd[1] < 0;
}

/*
 * Reaps the tool without waiting. Returns 1 with ret_status (exit code or
 * -signal), 0 while it runs, -1 when it cannot be waited for (errno).
 */
static int proc_reap(struct proc *p, int *ret_status)
{
    int st;
    pid_t w = waitpid(p->pid, &st, WNOHANG);
    if (w < 0 && errno != EINTR) {
        p->pid = 0;
        return -1;
    }
    if (w != p->pid)
        return 0;
    p->pid = 0;
    *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1;
    return 1;
}

/*
 * Runs tool t to its end (see proc_start), within command_timeout_ms.
 * Returns 0 with r filled (caller releases it, whatever the exit status), or
 * ERR_UNAVAILABLE (could not start, timed out: killed) / ERR_TOO_LARGE
 * (more output than out_max: killed), with ei.
 */
static int run_tool(struct slurm *s, enum tool t, const char *const *args,
                    const char *const *extra_env, size_t out_max, struct tool_result *r,
                    struct error_info *ei)
{
    struct proc p;
    int rc = proc_start(s, t, args, extra_env, -1, out_max, &p, ei);

    if (rc < 0)
        return rc;
    for (;;) {
        int64_t left = p.deadline - mono_ms();
        if (left <= 0) {
            rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s timed out after %" PRId64 " ms", p.name,
                             s->command_timeout_ms);
            break;
        }
        rc = proc_pump(&p, left > INT_MAX ? INT_MAX : (int)left, ei);
        if (rc != 0)
            break;
    }
    if (rc < 0) {
        proc_abort(&p);
        return rc;
    }
    /* Output closed: the exit follows at once; wait for it within the deadline. */
    memset(r, 0, sizeof(*r));
    while ((rc = proc_reap(&p, &r->status)) != 1) {
        if (rc < 0) {
            rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s: waitpid: %s", p.name, strerror(errno));
            proc_abort(&p);
            return rc;
        }
        if (mono_ms() >= p.deadline) {
            proc_abort(&p);
            return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s timed out after %" PRId64 " ms",
                               tool_names[t], s->command_timeout_ms);
        }
        poll(NULL, 0, 1);
    }
    r->out = p.out;
    r->err = p.err;
    return 0;
}

/* ---- files ---- */

static char *state_path(const struct slurm *s, int64_t id)
{
    return xasprintf("%s/%" PRId64 ".slurm", s->log_dir, id);
}

/* Writes path atomically (temporary file, then rename), mode 0600. Returns 0 or -1 (errno). */
static int write_atomic(const char *path, const char *text)
{
    char *tmp = xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc = -1, saved;

    if (fd >= 0) {
        rc = fd_write_all(fd, text, strlen(text));
        if (close(fd) < 0)
            rc = -1;
        if (rc == 0)
            rc = rename(tmp, path);
        saved = errno;
        if (rc < 0)
            unlink(tmp);
        errno = saved;
    }
    free(tmp);
    return rc;
}

/* The state file: the job id (what adopt needs), then what Slurm assigned, for people. */
static int state_write(const struct slurm *s, const struct sjob *w)
{
    char *path = state_path(s, w->id);
    char *text = xasprintf(STATE_MAGIC "\njob %" PRId64 "\nnodes %s\ngres %s\n", w->job_id,
                           w->info.nodes, w->info.gres);
    int rc = write_atomic(path, text);
    free(text);
    free(path);
    return rc;
}

/* Reads the job id from a state file. Returns it, or -1 when missing or not ours. */
static int64_t state_read(const struct slurm *s, int64_t id)
{
    char *path = state_path(s, id), buf[STATE_MAX], *p, *nl;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t len = 0;
    int64_t job = -1;

    free(path);
    if (fd < 0)
        return -1;
    while (len + 1 < sizeof(buf)) {
        ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    if (strncmp(buf, STATE_MAGIC "\njob ", strlen(STATE_MAGIC) + 5) != 0)
        return -1;
    p = buf + strlen(STATE_MAGIC) + 5;
    nl = strchr(p, '\n');
    if (!nl)
        return -1;
    *nl = '\0';
    if (parse_int64(p, 1, INT64_MAX, &job) < 0)
        return -1;
    return job;
}

/* ---- records ---- */

static struct sjob *work_find(const struct slurm *s, int64_t id, size_t *ret_pos)
{
    for (size_t i = 0; i < s->n_work; i++) {
        if (s->work[i]->id == id) {
            if (ret_pos)
                *ret_pos = i;
            return s->work[i];
        }
    }
    return NULL;
}

static bool known(const struct slurm *s, int64_t id)
{
    if (work_find(s, id, NULL))
        return true;
    return backend_ends_has(&s->done, id);
}

static void work_add(struct slurm *s, struct sjob *w)
{
    if (s->n_work == s->cap_work) {
        s->cap_work = s->cap_work ? 2 * s->cap_work : 16;
        s->work = xreallocarray(s->work, s->cap_work, sizeof(*s->work));
    }
    s->work[s->n_work++] = w;
    if (s->n_work == 1)
        s->next_query_ms = 0; /* the first job: the next poll asks Slurm */
}

static void submit_free(struct slurm *s, struct submit *sub)
{
    if (!sub)
        return;
    if (sub->running) {
        sub->running = false;
        s->n_submitting--;
        proc_abort(&sub->p); /* kills it if it still runs */
    }
    for (size_t i = 0; sub->args[i]; i++)
        free(sub->args[i]);
    free(sub->env[0]);
    free(sub->script);
    free(sub->nodelist);
    free(sub);
}

/* Forgets a workload that has been reported: its state file goes, its log stays. */
static void work_finish(struct slurm *s, size_t pos)
{
    struct sjob *w = s->work[pos];
    char *path = state_path(s, w->id);
    submit_free(s, w->sub);
    unlink(path);
    free(path);
    memmove(&s->work[pos], &s->work[pos + 1], (s->n_work - pos - 1) * sizeof(*s->work));
    s->n_work--;
    free(w);
}

/* ---- launch ---- */

/* Whether Slurm (and the shell case in the script) can take this node name as it is. */
static bool node_name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) > 128)
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

/* Appends s to b inside single quotes, for /bin/sh. */
static void shell_quote(struct buf *b, const char *s)
{
    buf_puts(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            buf_puts(b, "'\\''");
        else
            buf_append(b, p, 1);
    }
    buf_puts(b, "'");
}

/*
 * Where the replicas go: Slurm gives every node of a job the same GRES, so
 * the job asks per node for the GPUs of the replicas the scheduler put
 * there (equal on every node) and one task per node, which starts that
 * node's replicas. first[k]: the index of node k's first replica.
 */
#define MAX_JOB_NODES 256 /* a workload's replicas at most (model/workloads.c) */

struct layout {
    size_t n_nodes;
    size_t first[MAX_JOB_NODES];
    size_t per_node_devices; /* GPUs asked for on each node */
    size_t max_per_node;     /* most replicas on one node */
};

static int layout_of(const struct backend_launch *l, struct layout *lo, struct error_info *ei)
{
    memset(lo, 0, sizeof(*lo));
    for (size_t i = 0; i < l->n_replicas; i++) {
        size_t k = 0;
        while (k < lo->n_nodes &&
               strcmp(l->replicas[lo->first[k]].node_name, l->replicas[i].node_name) != 0)
            k++;
        if (k < lo->n_nodes)
            continue;
        if (lo->n_nodes == ARRAY_SIZE(lo->first))
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64 ": more than %zu nodes", l->workload_id,
                               ARRAY_SIZE(lo->first));
        lo->first[lo->n_nodes++] = i;
    }
    for (size_t k = 0; k < lo->n_nodes; k++) {
        const char *node = l->replicas[lo->first[k]].node_name;
        size_t devices = 0, here = 0;
        for (size_t j = 0; j < l->n_replicas; j++) {
            if (strcmp(l->replicas[j].node_name, node) == 0) {
                devices += l->replicas[j].n_devices;
                here++;
            }
        }
        if (here > lo->max_per_node)
            lo->max_per_node = here;
        if (k == 0)
            lo->per_node_devices = devices;
        else if (devices != lo->per_node_devices)
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64
                               ": nodes with different numbers of GPUs (%zu on %s, %zu on %s)"
                               " are not supported on slurm clusters yet",
                               l->workload_id, lo->per_node_devices,
                               l->replicas[lo->first[0]].node_name, devices, node);
    }
    return 0;
}

/*
 * The batch script. Slurm runs it on the first node with the job's
 * CUDA_VISIBLE_DEVICES; one replica runs the command there, several run it
 * through srun, one task per node, each learning its replica number from the
 * node it is on. Where the scheduler put several replicas on one node, that
 * node's task splits the node's GPUs among them in order and starts each
 * with its own CUDA_VISIBLE_DEVICES; it outlives a SIGTERM (the replicas
 * decide), waits for all and exits with the first failure.
 */
static int script_build(const struct backend_launch *l, const struct layout *lo, struct buf *b)
{
    buf_printf(b,
               "#!/bin/sh\n"
               "# gpuaas workload %" PRId64 ", submitted by gpuaasd. Slurm sets"
               " CUDA_VISIBLE_DEVICES.\n"
               "GPUAAS_WORKLOAD_ID=%" PRId64 "\n"
               "export GPUAAS_WORKLOAD_ID\n",
               l->workload_id, l->workload_id);
    if (l->n_replicas == 1) {
        buf_printf(b,
                   "GPUAAS_REPLICA=%" PRId32 "\n"
                   "NVIDIA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES-}\"\n"
                   "export GPUAAS_REPLICA NVIDIA_VISIBLE_DEVICES\n"
                   "exec /bin/sh -c ",
                   l->replicas[0].replica);
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    } else if (lo->max_per_node == 1) {
        buf_printf(b,
                   "exec srun --kill-on-bad-exit=0 --nodes=%zu --ntasks=%zu"
                   " --ntasks-per-node=1 /bin/sh -c 'case \"$SLURMD_NODENAME\" in",
                   l->n_replicas, l->n_replicas);
        for (size_t i = 0; i < l->n_replicas; i++)
            buf_printf(b, " %s) GPUAAS_REPLICA=%" PRId32 ";;", l->replicas[i].node_name,
                       l->replicas[i].replica);
        buf_puts(b, " esac; NVIDIA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES-}\";"
                    " export GPUAAS_REPLICA NVIDIA_VISIBLE_DEVICES; exec /bin/sh -c \"$1\"'"
                    " gpuaas ");
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    } else {
        /* Per node: "replica:GPUs" for each replica there, in replica order. */
        buf_printf(b,
                   "exec srun --kill-on-bad-exit=0 --nodes=%zu --ntasks=%zu"
                   " --ntasks-per-node=1 /bin/sh -c 'cmd=$1; case \"$SLURMD_NODENAME\" in",
                   lo->n_nodes, lo->n_nodes);
        for (size_t k = 0; k < lo->n_nodes; k++) {
            const char *node = l->replicas[lo->first[k]].node_name;
            buf_printf(b, " %s) set --", node);
            for (size_t i = 0; i < l->n_replicas; i++) {
                if (strcmp(l->replicas[i].node_name, node) == 0)
                    buf_printf(b, " %" PRId32 ":%zu", l->replicas[i].replica,
                               l->replicas[i].n_devices);
            }
            buf_puts(b, ";;");
        }
        buf_puts(b, " *) exit 1;; esac;"
                    " trap : TERM; left=\"${CUDA_VISIBLE_DEVICES-}\"; pids=;"
                    " for r in \"$@\"; do n=${r#*:};"
                    " if [ \"$n\" -gt 0 ]; then mine=$(printf %s \"$left\" | cut -d, -f1-$n);"
                    " left=$(printf %s \"$left\" | cut -s -d, -f$((n + 1))-); else mine=; fi;"
                    " (GPUAAS_REPLICA=${r%%:*} CUDA_VISIBLE_DEVICES=$mine"
                    " NVIDIA_VISIBLE_DEVICES=$mine;"
                    " export GPUAAS_REPLICA CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES;"
                    " trap - TERM; exec /bin/sh -c \"$cmd\") & pids=\"$pids $!\"; done;"
                    " rc=0; for p in $pids; do wait $p; s=$?;"
                    " while [ $s -gt 128 ] && kill -0 $p 2>/dev/null; do wait $p; s=$?; done;"
                    " [ $rc -ne 0 ] || rc=$s; done; exit $rc'"
                    " gpuaas ");
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    }
    return b->data ? 0 : -1;
}

/* Checks what this backend can submit beyond the common shape. Returns 0 or ERR_INVALID. */
static int check_slurm_launch(const struct backend_launch *l, struct error_info *ei)
{
    if (l->image && l->image[0])
        return errinfo_set(ei, ERR_INVALID, "image",
                           "workload %" PRId64 ": images are not supported on slurm clusters yet",
                           l->workload_id);
    if (!l->command || !l->command[0])
        return errinfo_set(ei, ERR_INVALID, "command", "workload %" PRId64 " has no command",
                           l->workload_id);
    for (size_t i = 0; i < l->n_replicas; i++) {
        const struct backend_replica *r = &l->replicas[i];
        if (!node_name_ok(r->node_name))
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64 ": node name '%s' cannot be given to slurm",
                               l->workload_id, r->node_name ? r->node_name : "");
    }
    return 0;
}

/* The job id sbatch --parsable printed ("<id>" or "<id>;<cluster>"). Returns it or -1. */
static int64_t parse_job_id(const char *out)
{
    char num[32];
    size_t n = strspn(out ? out : "", "0123456789");
    int64_t v;
    if (n == 0 || n >= sizeof(num))
        return -1;
    memcpy(num, out, n);
    num[n] = '\0';
    if (parse_int64(num, 1, INT64_MAX, &v) < 0)
        return -1;
    return v;
}

static void report(struct slurm *s, size_t pos, enum backend_end how, int64_t at, int exit_code,
                   const char *message);

/*
 * Starts the submission's sbatch with the script on its stdin: an
 * anonymous memory file (memfd), not a file in log_dir. Creating and
 * deleting files there per job was most of the daemon's own CPU (ext4
 * inode allocation), and sbatch keeps the script in Slurm anyway.
 * Returns 0 or ERR_UNAVAILABLE with ei.
 */
static int submit_start(struct slurm *s, struct submit *sub, struct error_info *ei)
{
    int fd = memfd_create("gpuaas-sbatch", MFD_CLOEXEC), rc;

    if (fd < 0)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not hold the batch script: %s",
                           strerror(errno));
    if (fd_write_all(fd, sub->script, strlen(sub->script)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not hold the batch script: %s",
                         strerror(errno));
        close(fd);
        return rc;
    }
    rc = proc_start(s, T_SBATCH, (const char *const *)sub->args, (const char *const *)sub->env, fd,
                    SMALL_MAX, &sub->p, ei);
    close(fd);
    if (rc < 0)
        return rc;
    free(sub->script);
    sub->script = NULL;
    sub->started = sub->running = true;
    s->n_submitting++;
    return 0;
}

/* Takes a job back whose launch is given up (best effort; nothing to report). */
static void cancel_job(struct slurm *s, int64_t job_id, int64_t workload_id)
{
    struct tool_result r;
    const char *args[3];
    char arg[64];

    if (job_id > 0)
        snprintf(arg, sizeof(arg), "%" PRId64, job_id);
    else
        snprintf(arg, sizeof(arg), "--name=%s%" PRId64, s->job_prefix, workload_id);
    args[0] = arg;
    args[1] = NULL;
    if (run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) == 0)
        result_release(&r);
}

static void signal_job(struct slurm *s, struct sjob *w, int sig);

/*
 * sbatch has answered (status) for the workload at pos: follow its job, or
 * report the launch failed. Returns whether the workload was reported (and
 * so is gone from the list).
 */
static bool submit_done(struct slurm *s, size_t pos, int status, int64_t now_ms)
{
    struct sjob *w = s->work[pos];
    struct submit *sub = w->sub;
    struct tool_result r = {.status = status, .out = sub->p.out, .err = sub->p.err};
    int64_t job_id = status == 0 ? parse_job_id(sub->p.out.data) : -1;
    char line[160], msg[200];

    if (job_id < 0) {
        snprintf(msg, sizeof(msg), "slurm refused it on %s: %s", sub->nodelist,
                 first_line(&r, line, sizeof(line)));
        report(s, pos, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, msg);
        return true;
    }
    w->job_id = job_id;
    w->info.job_id = job_id;
    if (state_write(s, w) < 0) {
        /* Without its state file a restarted daemon could not find it: take it back. */
        snprintf(msg, sizeof(msg), "could not write its state file in '%s': %s", s->log_dir,
                 strerror(errno));
        cancel_job(s, job_id, w->id);
        report(s, pos, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, msg);
        return true;
    }
    submit_free(s, sub);
    w->sub = NULL;
    if (w->reason)
        signal_job(s, w, SIGTERM); /* stopped while sbatch ran: a cancel, it is not running */
    return false;
}

/*
 * Looks at the sbatch runs in flight without waiting, takes their answers,
 * then starts waiting ones while fewer than max_submits run. Failures are reported as
 * BACKEND_NOT_STARTED at now_ms.
 */
static void submissions(struct slurm *s, int64_t now_ms)
{
    size_t i = 0;

    while (i < s->n_work && s->n_submitting > 0) {
        struct sjob *w = s->work[i];
        struct submit *sub = w->sub;
        struct error_info ei = {0};
        int rc, status;

        if (!sub || !sub->running) {
            i++;
            continue;
        }
        rc = sub->p.fd[0] >= 0 || sub->p.fd[1] >= 0 ? proc_pump(&sub->p, 0, &ei) : 1;
        if (rc == 1) {
            rc = proc_reap(&sub->p, &status);
            if (rc == 1) {
                if (!submit_done(s, i, status, now_ms))
                    i++;
                continue;
            }
            if (rc < 0)
                errinfo_set(&ei, ERR_UNAVAILABLE, NULL, "sbatch: waitpid: %s", strerror(errno));
        }
        if (rc == 0 && mono_ms() >= sub->p.deadline) {
            rc = -1;
            errinfo_set(&ei, ERR_UNAVAILABLE, NULL, "sbatch timed out after %" PRId64 " ms",
                        s->command_timeout_ms);
        }
        if (rc < 0) {
            /* It may have submitted the job: kill it first, then cancel by name. */
            proc_abort(&sub->p);
            cancel_job(s, -1, w->id);
            report(s, i, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, ei.message);
            continue;
        }
        i++;
    }
    for (i = 0; i < s->n_work && s->n_submitting < s->max_submits;) {
        struct sjob *w = s->work[i];
        struct error_info ei = {0};
        if (!w->sub || w->sub->started) {
            i++;
            continue;
        }
        if (submit_start(s, w->sub, &ei) < 0) {
            report(s, i, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, ei.message);
            continue;
        }
        i++;
    }
}

/*
 * The GRES type to ask for: the class of the devices when they all share
 * one that can be a GRES type (the slurm sync names classes after the
 * nodes' GRES types), so that a node with several GPU types gives the ones
 * the scheduler chose. NULL: ask for GPUs of any type.
 */
static const char *gres_type(const struct backend_launch *l)
{
    const char *type = NULL;
    for (size_t i = 0; i < l->n_replicas; i++) {
        for (size_t k = 0; k < l->replicas[i].n_devices; k++) {
            const char *c = l->replicas[i].devices[k].gpu_class;
            if (!c || (type && strcmp(type, c) != 0))
                return NULL;
            type = c;
        }
    }
    if (!type || !type[0] || strlen(type) > 64 ||
        strspn(type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            strlen(type))
        return NULL;
    return type;
}

/*
 * Work run as another user: its log file is made here, owned by that user
 * (Slurm opens it as the user, in the daemon's log directory, which the
 * user may pass through but not write), and appended to if it exists.
 */
static int log_prepare(struct slurm *s, int64_t workload_id, struct error_info *ei)
{
    char *path = xasprintf("%s/%" PRId64 ".log", s->log_dir, workload_id);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = 0;

    if (fd < 0 || fchown(fd, s->uid, s->gid) < 0)
        rc = errinfo_set(ei, ERR_IO, NULL, "could not make the log file '%s' for user id %u: %s",
                         path, (unsigned)s->uid, strerror(errno));
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

/* launch(), and queue-ahead: after_job > 0 makes the job wait for that one's end. */
static int launch(struct slurm *s, const struct backend_launch *l, int64_t after_job,
                  int64_t now_ms, struct error_info *ei)
{
    struct buf script, nodelist;
    struct layout lo;
    struct submit *sub;
    struct sjob *w;
    char **args;
    size_t n = 0;
    int64_t cpus;
    int rc = backend_check_launch(l, ei);

    if (rc == 0)
        rc = check_slurm_launch(l, ei);
    if (rc < 0)
        return rc;
    if (known(s, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL,
                           "workload %" PRId64 " is already running on this cluster",
                           l->workload_id);
    if (now_ms > s->last_now_ms)
        s->last_now_ms = now_ms;

    if ((rc = layout_of(l, &lo, ei)) < 0)
        return rc;
    buf_init(&script, 1024 * 1024);
    if (script_build(l, &lo, &script) < 0) {
        buf_release(&script);
        return errinfo_set(ei, ERR_INVALID, "command",
                           "workload %" PRId64 ": the command is too long", l->workload_id);
    }

    if (s->run_as && log_prepare(s, l->workload_id, ei) < 0) {
        buf_release(&script);
        return ei->code;
    }

    buf_init(&nodelist, 64 * 1024);
    for (size_t k = 0; k < lo.n_nodes; k++)
        buf_printf(&nodelist, "%s%s", k ? "," : "", l->replicas[lo.first[k]].node_name);
    /* One task per node runs that node's replicas: it gets what they all ask for. */
    cpus = (l->cpu_milli > 0 ? (l->cpu_milli + 999) / 1000 : 1) * (int64_t)lo.max_per_node;

    sub = xcalloc(1, sizeof(*sub));
    sub->script = script.data; /* handed over */
    sub->env[0] = xasprintf("GPUAAS_WORKLOAD_ID=%" PRId64, l->workload_id);
    sub->nodelist = xstrdup(nodelist.data ? nodelist.data : "");
    buf_release(&nodelist);
    args = sub->args;
    args[n++] = xstrdup("--parsable");
    args[n++] = xstrdup("--no-requeue");
    args[n++] = xstrdup("--open-mode=append");
    args[n++] = xstrdup("--ntasks-per-node=1");
    args[n++] = xasprintf("--job-name=%s%" PRId64, s->job_prefix, l->workload_id);
    args[n++] = xasprintf("--output=%s/%" PRId64 ".log", s->log_dir, l->workload_id);
    args[n++] = xasprintf("--chdir=%s", s->log_dir);
    args[n++] = xasprintf("--nodes=%zu", lo.n_nodes);
    args[n++] = xasprintf("--nodelist=%s", sub->nodelist);
    args[n++] = xasprintf("--ntasks=%zu", lo.n_nodes);
    args[n++] = xasprintf("--cpus-per-task=%" PRId64, cpus);
    if (l->mem_mib > 0)
        args[n++] = xasprintf("--mem=%" PRId64 "M", l->mem_mib * (int64_t)lo.max_per_node);
    if (lo.per_node_devices > 0) {
        const char *type = gres_type(l);
        if (type)
            args[n++] = xasprintf("--gres=gpu:%s:%zu", type, lo.per_node_devices);
        else
            args[n++] = xasprintf("--gres=gpu:%zu", lo.per_node_devices);
    }
    if (l->max_runtime_ms >= 0) {
        /*
         * Slurm counts whole minutes; ours is the real limit (enforced by
         * poll()), Slurm's a backstop a minute or more later.
         */
        int64_t total = add_ms(l->max_runtime_ms, s->timeout_grace_ms);
        int64_t minutes = total / 60000 + 2;
        if (minutes > 0 && minutes < 365LL * 24 * 60)
            args[n++] = xasprintf("--time=%" PRId64, minutes);
    }
    if (s->partition)
        args[n++] = xasprintf("--partition=%s", s->partition);
    if (s->run_as) {
        args[n++] = xasprintf("--uid=%u", (unsigned)s->uid);
        args[n++] = xasprintf("--gid=%u", (unsigned)s->gid);
    }
    if (after_job > 0)
        args[n++] = xasprintf("--dependency=afterany:%" PRId64, after_job);
    args[n] = NULL; /* no script file: sbatch reads it from stdin */
    assert(n < ARRAY_SIZE(sub->args));

    /*
     * sbatch answers later (poll() takes its answer): the engine thread does
     * not wait for each, and up to max_submits run at once. The first is
     * started now, so a launch the machine refuses outright fails here.
     */
    if (s->n_submitting < s->max_submits && (rc = submit_start(s, sub, ei)) < 0) {
        submit_free(s, sub);
        return rc;
    }
    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->launched_ms = now_ms;
    w->kill_at_ms = NEVER;
    w->max_runtime_ms = l->max_runtime_ms;
    w->deadline_ms = NEVER;
    w->sub = sub;
    work_add(s, w);
    return 0;
}

static int slurm_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                        struct error_info *ei)
{
    return launch(slurm_of(b), l, 0, now_ms, ei);
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
    r = work_find(s, after_id, &pos);
    if (!r || !followable(r))
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                           "workload %" PRId64 " cannot queue behind workload %" PRId64
                           ": Slurm does not run that one's job, or it is being stopped",
                           l ? l->workload_id : 0, after_id);
    return launch(s, l, r->job_id, now_ms, ei);
}

size_t backend_slurm_followable(struct backend *b, int64_t *ids, size_t max)
{
    struct slurm *s = slurm_of(b);
    size_t n = 0;

    assert(b->ops == &slurm_ops);
    for (size_t i = 0; i < s->n_work && n < max; i++) {
        if (followable(s->work[i]))
            ids[n++] = s->work[i]->id;
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
    int rc = backend_check_launch(l, ei);

    if (rc < 0)
        return rc;
    if (started_ms > now_ms)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "workload %" PRId64 " cannot have started after now", l->workload_id);
    if (known(s, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL,
                           "workload %" PRId64 " is already running on this cluster",
                           l->workload_id);
    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->launched_ms = started_ms;
    w->kill_at_ms = NEVER;
    w->max_runtime_ms = l->max_runtime_ms;
    w->deadline_ms = NEVER;
    job_id = state_read(s, l->workload_id);
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
    work_add(s, w);
    return 0;
}

/* ---- stop ---- */

/*
 * Signals a job: SIGTERM to every process of it (--full: the batch script
 * too, not only its steps), or SIGKILL to its batch script (--batch: Slurm
 * takes --full with SIGKILL for a cancel, which gives the processes
 * SIGTERM and at least 5 more seconds; killing the script ends the job and
 * Slurm then ends its other steps). A job Slurm has not started is
 * cancelled instead: scancel --signal on a pending job waits until it starts.
 */
static void flush_cancels(struct slurm *s);

/* A plain scancel of job_id, sent with the others by flush_cancels(). */
static void cancel_later(struct slurm *s, int64_t job_id)
{
    if (s->n_cancels == s->cap_cancels) {
        s->cap_cancels = s->cap_cancels ? 2 * s->cap_cancels : 16;
        s->cancels = xreallocarray(s->cancels, s->cap_cancels, sizeof(*s->cancels));
    }
    s->cancels[s->n_cancels++] = job_id;
    s->cancel_retry_ms = 0;
}

static void signal_job(struct slurm *s, struct sjob *w, int sig)
{
    const char *args[5];
    char num[32];
    struct tool_result r;

    if (w->job_id <= 0)
        return; /* adopted, its job not found yet: the search decides */
    if (!w->running) {
        /*
         * Cancelled with others at the next poll(), which comes at once
         * (next_event_ms): taking back many queued jobs costs one scancel.
         */
        cancel_later(s, w->job_id);
        return;
    }
    /*
     * Cancels asked for before go first: work queued ahead behind this job
     * is taken back before it is preempted, and must be cancelled before
     * the job can end and Slurm start it.
     */
    flush_cancels(s);
    snprintf(num, sizeof(num), "%" PRId64, w->job_id);
    args[0] = sig == SIGKILL ? "--batch" : "--full";
    args[1] = sig == SIGKILL ? "--signal=KILL" : "--signal=TERM";
    args[2] = num;
    args[3] = NULL;
    if (run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) < 0)
        return; /* timed out: the next kill, or Slurm's time limit, follows */
    if (r.status != 0) {
        /* It may have ended, or not be signallable: cancel it outright. */
        result_release(&r);
        args[0] = num;
        args[1] = NULL;
        if (run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) < 0)
            return;
    }
    result_release(&r);
}

static int slurm_stop(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms)
{
    struct slurm *s = slurm_of(b);
    size_t pos = 0;
    struct sjob *w = work_find(s, workload_id, &pos);
    int64_t kill_at;

    if (!w || w->lost)
        return 0;
    if (!w->reason) {
        w->reason = BACKEND_STOPPED;
        w->signalled_ms = now_ms;
    }
    if (w->sub && !w->sub->started) {
        /* Its sbatch was still waiting for its turn: there is no job to stop. */
        report(s, pos, BACKEND_STOPPED, now_ms, UNKNOWN_EXIT, NULL);
        return 0;
    }
    /* With sbatch still running, the job is cancelled when its id comes (submit_done). */
    signal_job(s, w, SIGTERM);
    kill_at = add_ms(now_ms, grace_ms);
    if (kill_at < w->kill_at_ms)
        w->kill_at_ms = kill_at;
    return 0;
}

/* ---- poll ---- */

/* Whether a Slurm job state is final (the job holds nothing any more). */
static bool state_final(const char *st)
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

static void report(struct slurm *s, size_t pos, enum backend_end how, int64_t at, int exit_code,
                   const char *message)
{
    struct sjob *w = s->work[pos];
    struct backend_event ev = {
        .workload_id = w->id, .at_ms = at, .how = how, .exit_code = exit_code};
    copy_str(ev.message, sizeof(ev.message), message);
    backend_ends_push(&s->done, &ev);
    work_finish(s, pos);
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

static int64_t json_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static const char *json_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
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

/* Slurm's ExitCode "<code>:<signal>" (len bytes at v): code 0-255, signal 0-127. 0 or -1. */
static int exit_pair(const char *v, size_t len, int64_t *ret_code, int64_t *ret_sig)
{
    char num[32], *colon;
    if (len == 0 || len >= sizeof(num))
        return -1;
    memcpy(num, v, len);
    num[len] = '\0';
    colon = strchr(num, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    return parse_int64(num, 0, 255, ret_code) < 0 || parse_int64(colon + 1, 0, 127, ret_sig) < 0
               ? -1
               : 0;
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

static int64_t jobcomp_time(const char *v, size_t len)
{
    char tmp[32];
    struct tm tm;
    char *end;
    time_t t;
    if (len == 0 || len >= sizeof(tmp))
        return -1;
    memcpy(tmp, v, len);
    tmp[len] = '\0';
    memset(&tm, 0, sizeof(tm));
    end = strptime(tmp, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end)
        return -1;
    tm.tm_isdst = -1;
    t = mktime(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t;
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
        end_s = v ? jobcomp_time(v, len) : -1;
        v = jobcomp_field(line, "ExitCode", &len);
        if (!v || exit_pair(v, len, &code, &sig) < 0)
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

/* Copies [p, p + len) into dst (size bytes), truncating. */
static void copy_span(char *dst, size_t size, const char *p, size_t len)
{
    snprintf(dst, size, "%.*s", (int)(len < size ? len : size - 1), p);
}

/* A time field: seconds, or 0 for Slurm's words for none. Returns -1 when malformed. */
static int64_t queue_time(const char *p, size_t len)
{
    char tmp[32];
    int64_t v;
    if (len == 0 || (len == 3 && memcmp(p, "N/A", 3) == 0) ||
        (len == 4 && memcmp(p, "NONE", 4) == 0) || (len == 7 && memcmp(p, "Unknown", 7) == 0))
        return 0;
    if (len >= sizeof(tmp))
        return -1;
    memcpy(tmp, p, len);
    tmp[len] = '\0';
    return parse_int64(tmp, 0, INT64_MAX / 1000, &v) < 0 ? -1 : v;
}

/* Parses one line (without its newline). Returns 1 (a job), 0 (not a plain job id: skip), -1. */
static int queue_line(const char *line, size_t len, struct slurm_queue_job *j)
{
    const char *f[7];
    size_t flen[7], n = 0;
    const char *p = line, *end = line + len;
    char num[32];

    /* Six fields end at the first six '|'; the name is what is left, up to the final '|'. */
    while (n < 6) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            return -1;
        f[n] = p;
        flen[n++] = (size_t)(bar - p);
        p = bar + 1;
    }
    if (p >= end || end[-1] != '|')
        return -1;
    f[6] = p;
    flen[6] = (size_t)(end - 1 - p);

    memset(j, 0, sizeof(*j));
    if (flen[0] == 0 || flen[0] >= sizeof(num))
        return -1;
    memcpy(num, f[0], flen[0]);
    num[flen[0]] = '\0';
    if (strspn(num, "0123456789") != flen[0])
        return strspn(num, "0123456789_+[]-,") == flen[0] && num[0] != '_' ? 0 : -1;
    if (parse_int64(num, 1, INT64_MAX, &j->job_id) < 0)
        return -1;
    if (flen[1] == 0 || flen[1] >= sizeof(j->state) ||
        strspn(f[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") < flen[1])
        return -1;
    copy_span(j->state, sizeof(j->state), f[1], flen[1]);
    j->start_s = queue_time(f[2], flen[2]);
    j->end_s = queue_time(f[3], flen[3]);
    if (j->start_s < 0 || j->end_s < 0)
        return -1;
    if (flen[4] == 0 || (flen[4] == 3 && memcmp(f[4], "N/A", 3) == 0)) {
        j->exit_status = -1;
    } else {
        if (flen[4] >= sizeof(num))
            return -1;
        memcpy(num, f[4], flen[4]);
        num[flen[4]] = '\0';
        if (parse_int64(num, 0, INT32_MAX, &j->exit_status) < 0)
            return -1;
    }
    copy_span(j->nodes, sizeof(j->nodes), f[5], flen[5]);
    copy_span(j->name, sizeof(j->name), f[6], flen[6]);
    return 1;
}

/*
 * Parses a tool's output line by line: parse_line gives 1 (a record of
 * rec_size bytes into rec), 0 (a line to skip) or -1 (malformed: the whole
 * answer is refused, naming tool and the line). Empty lines are skipped.
 * Returns 0 with *ret (caller frees; NULL when none) and *ret_n, or
 * ERR_INVALID with ei.
 */
static int parse_lines(const char *text, size_t len, const char *tool,
                       int (*parse_line)(const char *line, size_t len, void *rec), size_t rec_size,
                       void **ret, size_t *ret_n, struct error_info *ei)
{
    _Alignas(max_align_t) char rec[512]; /* one record, of either kind */
    char *recs = NULL;
    size_t n = 0, cap = 0, line_no = 0;
    const char *p = text ? text : "", *end = p + (text ? len : 0);

    assert(rec_size <= sizeof(rec));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        int rc;

        line_no++;
        if (l > 0) {
            rc = parse_line(p, l, rec);
            if (rc < 0) {
                free(recs);
                return errinfo_set(ei, ERR_INVALID, NULL, "%s: line %zu is malformed: '%.*s'", tool,
                                   line_no, (int)(l < 80 ? l : 80), p);
            }
            if (rc > 0) {
                if (n == cap) {
                    cap = cap ? 2 * cap : 64;
                    recs = xreallocarray(recs, cap, rec_size);
                }
                memcpy(recs + n * rec_size, rec, rec_size);
                n++;
            }
        }
        p += l + (nl ? 1 : 0);
    }
    *ret = recs;
    *ret_n = n;
    return 0;
}

static int queue_line_rec(const char *line, size_t len, void *rec)
{
    return queue_line(line, len, rec);
}

int slurm_parse_queue(const char *text, size_t len, struct slurm_queue_job **ret, size_t *ret_n,
                      struct error_info *ei)
{
    void *jobs = NULL;
    int rc = parse_lines(text, len, "squeue", queue_line_rec, sizeof(**ret), &jobs, ret_n, ei);
    *ret = jobs;
    return rc;
}

/* A sacct time: seconds, local YYYY-MM-DDTHH:MM:SS, or 0 for none. -1 when malformed. */
static int64_t sacct_time(const char *p, size_t len)
{
    if ((len == 4 && memcmp(p, "None", 4) == 0) || (len == 7 && memcmp(p, "Unknown", 7) == 0))
        return 0;
    if (len > 0 && strspn(p, "0123456789") >= len)
        return queue_time(p, len);
    return len > 0 && len < 32 && strspn(p, "0123456789-T:") >= len ? jobcomp_time(p, len) : -1;
}

/* Parses one sacct line (without its newline). Returns 1 (a job), 0 (not a plain job: skip), -1. */
static int sacct_line(const char *line, size_t len, struct slurm_acct_job *j)
{
    static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    const char *f[6], *p = line, *end = line + len;
    size_t flen[6], n = 0, word;
    char num[32];
    int64_t code, sig;

    /* Five fields end at the first five '|'; the name is the rest (sacct -P ends none). */
    while (n < 5) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            return -1;
        f[n] = p;
        flen[n++] = (size_t)(bar - p);
        p = bar + 1;
    }
    f[5] = p;
    flen[5] = (size_t)(end - p);

    memset(j, 0, sizeof(*j));
    if (flen[0] == 0 || flen[0] >= sizeof(num))
        return -1;
    memcpy(num, f[0], flen[0]);
    num[flen[0]] = '\0';
    if (strspn(num, "0123456789") != flen[0]) {
        /* 12_3, 12_[4-5], 12+0, 12.batch, 12.0: array, heterogeneous, steps */
        size_t head = strspn(num, "0123456789");
        return head > 0 && strchr("_+.", num[head]) ? 0 : -1;
    }
    if (parse_int64(num, 1, INT64_MAX, &j->job_id) < 0)
        return -1;
    /* "CANCELLED by 0": the word, then who */
    word = strspn(f[1], upper);
    if (word > flen[1])
        word = flen[1];
    if (word == 0 || word >= sizeof(j->state) ||
        (word < flen[1] && (flen[1] - word < 5 || memcmp(f[1] + word, " by ", 4) != 0)))
        return -1;
    copy_span(j->state, sizeof(j->state), f[1], word);
    j->start_s = sacct_time(f[2], flen[2]);
    j->end_s = sacct_time(f[3], flen[3]);
    if (j->start_s < 0 || j->end_s < 0)
        return -1;
    if (exit_pair(f[4], flen[4], &code, &sig) < 0)
        return -1;
    j->exit_code = (int)code;
    j->signal = (int)sig;
    copy_span(j->name, sizeof(j->name), f[5], flen[5]);
    return 1;
}

static int sacct_line_rec(const char *line, size_t len, void *rec)
{
    return sacct_line(line, len, rec);
}

int slurm_parse_sacct(const char *text, size_t len, struct slurm_acct_job **ret, size_t *ret_n,
                      struct error_info *ei)
{
    void *jobs = NULL;
    int rc = parse_lines(text, len, "sacct", sacct_line_rec, sizeof(**ret), &jobs, ret_n, ei);
    *ret = jobs;
    return rc;
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
        struct tool_result r;
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
        rc = run_tool(s, T_SACCT, args, env, SQUEUE_MAX, &r, NULL);
        buf_release(&ids);
        if (rc < 0)
            return rc;
        rc = r.status == 0 ? slurm_parse_sacct(r.out.data, r.out.len, &jobs, &n_jobs, NULL)
                           : ERR_UNAVAILABLE;
        result_release(&r);
        if (rc < 0)
            return rc;
        for (size_t k = 0; k < n_jobs; k++) {
            const struct slurm_acct_job *j = &jobs[k];
            size_t pos = find_job(missing, n_missing, j->job_id);
            struct sjob *w;
            char name[64];

            if (pos == SIZE_MAX || found[pos] || !state_final(j->state))
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
            s->sacct_next_ms = add_ms(now_ms, SACCT_RETRY_MS);
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
static int queue_ask(struct slurm *s, const char *select_flag, const char *select,
                     struct slurm_queue_job **ret, size_t *ret_n)
{
    static const char *const env[] = {"SLURM_TIME_FORMAT=%s", NULL};
    const char *args[8];
    struct tool_result r;
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
    rc = run_tool(s, T_SQUEUE, args, env, SQUEUE_MAX, &r, NULL);
    if (rc < 0)
        return rc;
    if (r.status != 0) {
        /* None of the ids asked about is known any more: 22.05 says so and fails. */
        bool none = select && strcmp(select_flag, "--jobs") == 0 && r.err.data &&
                    strstr(r.err.data, "Invalid job id specified");
        result_release(&r);
        if (!none)
            return ERR_UNAVAILABLE;
        *ret = NULL;
        *ret_n = 0;
        return 0;
    }
    rc = slurm_parse_queue(r.out.data, r.out.len, ret, ret_n, NULL);
    result_release(&r);
    return rc;
}

/* Adopted work without a state file: its newest job named gpuaas-<id>, or lost. */
static void search_by_name(struct slurm *s)
{
    struct slurm_queue_job *jobs;
    struct buf names;
    size_t n_jobs, i;

    buf_init(&names, 1024 * 1024);
    for (i = 0; i < s->n_work; i++) {
        if (s->work[i]->searching)
            buf_printf(&names, "%s%s%" PRId64, names.len ? "," : "", s->job_prefix, s->work[i]->id);
    }
    if (!names.len || queue_ask(s, "--name", names.data, &jobs, &n_jobs) < 0) {
        buf_release(&names);
        return; /* nothing to look for, or try again at the next query */
    }
    buf_release(&names);
    for (i = 0; i < s->n_work; i++) {
        struct sjob *w = s->work[i];
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
        state_write(s, w); /* best effort: found again next time by name anyway */
    }
    free(jobs);
}

int backend_slurm_sweep(struct backend *b, int64_t *ids, size_t max, size_t *ret_n)
{
    struct slurm *s = slurm_of(b);
    struct slurm_queue_job *jobs;
    size_t n_jobs, prefix_len = strlen(s->job_prefix);

    *ret_n = 0;
    if (queue_ask(s, NULL, NULL, &jobs, &n_jobs) < 0)
        return ERR_UNAVAILABLE;
    for (size_t i = 0; i < n_jobs; i++) {
        const struct slurm_queue_job *j = &jobs[i];
        const struct sjob *w;
        char *end;
        long long id;
        if (strncmp(j->name, s->job_prefix, prefix_len) != 0 || state_final(j->state) ||
            strcmp(j->state, "COMPLETING") == 0)
            continue;
        errno = 0;
        id = strtoll(j->name + prefix_len, &end, 10);
        if (errno || end == j->name + prefix_len || *end || id <= 0)
            continue; /* not a name this daemon gives */
        w = work_find(s, id, NULL);
        if (w && (w->searching || w->job_id == j->job_id))
            continue; /* followed, or its job is being looked for by this name */
        cancel_later(s, j->job_id);
        if (*ret_n < max)
            ids[*ret_n] = j->job_id;
        (*ret_n)++;
    }
    free(jobs);
    flush_cancels(s);
    return 0;
}

/*
 * Asks squeue about our jobs (their ids, a few fields; every job when
 * there are very many), updates what is known and finds the ends.
 * Returns 0, or < 0 when Slurm could not be asked (nothing is concluded).
 */
static int query(struct slurm *s, int64_t now_ms)
{
    struct slurm_queue_job *jobs = NULL;
    struct sjob **sorted, **missing;
    struct ended *ended;
    struct buf ids;
    size_t n_sorted = 0, n_missing = 0, n_ended = 0, n_jobs = 0, i;
    bool *seen;
    int rc = 0;

    for (i = 0; i < s->n_work; i++) {
        if (s->work[i]->searching) {
            search_by_name(s);
            break;
        }
    }
    sorted = xcalloc(s->n_work + 1, sizeof(*sorted));
    for (i = 0; i < s->n_work; i++) {
        if (!s->work[i]->lost && s->work[i]->job_id > 0)
            sorted[n_sorted++] = s->work[i];
    }
    if (n_sorted == 0) {
        free(sorted);
        return 0;
    }
    qsort(sorted, n_sorted, sizeof(*sorted), cmp_job_id);
    buf_init(&ids, 1024 * 1024);
    for (i = 0; i < n_sorted && n_sorted <= QUERY_MAX_IDS; i++)
        buf_printf(&ids, "%s%" PRId64, i ? "," : "", sorted[i]->job_id);
    rc = queue_ask(s, "--jobs", ids.len ? ids.data : NULL, &jobs, &n_jobs);
    buf_release(&ids);
    if (rc < 0) {
        free(sorted);
        return rc;
    }

    seen = xcalloc(n_sorted + 1, sizeof(*seen));
    ended = xcalloc(n_sorted + 1, sizeof(*ended));
    for (i = 0; i < n_jobs; i++) {
        const struct slurm_queue_job *j = &jobs[i];
        size_t pos = find_job(sorted, n_sorted, j->job_id);
        struct sjob *w;
        char name[64];

        if (pos == SIZE_MAX)
            continue;
        w = sorted[pos];
        snprintf(name, sizeof(name), "%s%" PRId64, s->job_prefix, w->id);
        if (strcmp(j->name, name) != 0)
            continue; /* that job id is someone else's now */
        seen[pos] = true;
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
                int64_t from =
                    w->info.start_ms > w->launched_ms ? w->info.start_ms : w->launched_ms;
                w->deadline_ms = add_ms(from, w->max_runtime_ms);
            }
        }
        if (!state_final(j->state)) {
            w->alive_ms = now_ms;
        } else {
            ended[n_ended++] = (struct ended){
                .id = w->id,
                .at = end_at(w, j->end_s, now_ms),
                .how = how_of(w, j->state),
                .exit_code = exit_code_of(j->state, j->exit_status),
            };
        }
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
        if (work_find(s, ended[i].id, &pos))
            report(s, pos, ended[i].how, ended[i].at, ended[i].exit_code, NULL);
    }
    free(missing);
    free(ended);
    free(seen);
    free(sorted);
    return 0;
}

/* Reports adopted work found lost. */
static void report_lost(struct slurm *s)
{
    size_t i = 0;
    while (i < s->n_work) {
        struct sjob *w = s->work[i];
        if (w->lost)
            report(s, i, BACKEND_LOST, w->lost_at_ms, UNKNOWN_EXIT, NULL);
        else
            i++;
    }
}

/* Cancels the jobs stop() queued, CANCEL_BATCH to a scancel (it skips ids Slurm forgot). */
#define CANCEL_BATCH 128
static void flush_cancels(struct slurm *s)
{
    size_t kept = 0;
    for (size_t at = 0; at < s->n_cancels; at += CANCEL_BATCH) {
        size_t n = s->n_cancels - at < CANCEL_BATCH ? s->n_cancels - at : CANCEL_BATCH;
        char nums[CANCEL_BATCH][24];
        const char *args[CANCEL_BATCH + 1];
        struct tool_result r;
        bool failed = true;
        for (size_t i = 0; i < n; i++) {
            snprintf(nums[i], sizeof(nums[i]), "%" PRId64, s->cancels[at + i]);
            args[i] = nums[i];
        }
        args[n] = NULL;
        if (run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) >= 0) {
            /* Ids Slurm forgot or that are ending fail too: those are done. */
            failed = r.status != 0 && r.err.data && !strstr(r.err.data, "Invalid job id") &&
                     !strstr(r.err.data, "already completing");
            result_release(&r);
        }
        /* Slurm not reached: tried again at the next poll, or a pending job could start. */
        if (failed) {
            memmove(&s->cancels[kept], &s->cancels[at], n * sizeof(*s->cancels));
            kept += n;
        }
    }
    s->n_cancels = kept;
    s->cancel_retry_ms = kept > 0 ? add_ms(s->last_now_ms, s->poll_interval_ms) : 0;
}

/* Sends cancels, kills and max-runtime signals that are due. */
static void chores(struct slurm *s, int64_t now_ms)
{
    size_t i = 0;
    flush_cancels(s);
    while (i < s->n_work) {
        struct sjob *w = s->work[i];
        if (w->job_id <= 0) {
            i++; /* no job yet (sbatch runs, or adopted and searched for): signals wait for it */
            continue;
        }
        if (!w->reason && w->deadline_ms <= now_ms) {
            w->reason = BACKEND_TIMEOUT;
            w->signalled_ms = now_ms;
            signal_job(s, w, SIGTERM);
            w->kill_at_ms = add_ms(now_ms, s->timeout_grace_ms);
        }
        if (w->kill_at_ms <= now_ms) {
            signal_job(s, w, SIGKILL);
            w->kill_at_ms = NEVER;
            s->next_query_ms = 0; /* look soon: it ends now */
        }
        i++;
    }
}

static void learn_devices(struct slurm *s, int64_t now_ms);

static size_t slurm_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct slurm *s = slurm_of(b);

    assert(out || max == 0);
    if (now_ms > s->last_now_ms)
        s->last_now_ms = now_ms;
    submissions(s, now_ms);
    chores(s, now_ms);
    if (s->n_work > 0 && now_ms >= s->next_query_ms) {
        /* After a failure Slurm is asked again at the next interval all the same. */
        if (query(s, now_ms) >= 0)
            learn_devices(s, now_ms);
        s->next_query_ms = add_ms(now_ms, s->poll_interval_ms);
    }
    report_lost(s);
    /* Oldest first (lost work found by adopt and ends Slurm dated earlier come together). */
    for (size_t i = 1; i < s->done.n; i++) {
        struct backend_event ev = s->done.ev[i];
        size_t k = i;
        while (k > 0 && s->done.ev[k - 1].at_ms > ev.at_ms) {
            s->done.ev[k] = s->done.ev[k - 1];
            k--;
        }
        s->done.ev[k] = ev;
    }
    return backend_ends_take(&s->done, out, max);
}

static int64_t slurm_next_event_ms(struct backend *b)
{
    struct slurm *s = slurm_of(b);
    int64_t next = NEVER;

    if (s->done.n > 0 || (s->n_cancels > 0 && s->cancel_retry_ms == 0))
        return 0;
    if (s->n_cancels > 0)
        next = s->cancel_retry_ms;
    if (s->n_work > 0 && s->next_query_ms < next)
        next = s->next_query_ms; /* ends are learnt only by asking */
    if (s->n_submitting > 0 && add_ms(s->last_now_ms, SUBMIT_LOOK_MS) < next)
        next = add_ms(s->last_now_ms, SUBMIT_LOOK_MS); /* sbatch's answers */
    for (size_t i = 0; i < s->n_work; i++) {
        const struct sjob *w = s->work[i];
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
        submissions(s, s->last_now_ms);
        if (s->n_submitting > 0)
            poll(NULL, 0, 1);
    }
    flush_cancels(s); /* what was stopped must not start later */
    for (size_t i = 0; i < s->n_work; i++) {
        submit_free(s, s->work[i]->sub);
        free(s->work[i]);
    }
    free(s->work);
    free(s->devices);
    free(s->cancels);
    backend_ends_release(&s->done);
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

/* ---- node discovery ---- */

void slurm_nodes_free(struct slurm_node *nodes, size_t n)
{
    if (!nodes)
        return;
    for (size_t i = 0; i < n; i++) {
        free(nodes[i].name);
        free(nodes[i].state);
        free(nodes[i].reason);
        free(nodes[i].gpu_type);
    }
    free(nodes);
}

/*
 * Sums the GPUs of a GRES string ("gpu:h100:8", "gpu:4(S:0-1)",
 * "gpu:a100:2,gpu:h100:2(IDX:0-1),shard:4") and gives the first GPU type.
 */
static void gres_gpus(const char *gres, int32_t *ret_n, char *type, size_t type_size)
{
    const char *p = gres;
    int64_t total = 0;

    if (type_size)
        type[0] = '\0';
    while (p && *p) {
        size_t len = strcspn(p, ",");
        char item[256], *paren, *fields[3] = {NULL, NULL, NULL};
        size_t n_fields = 0;
        char *q;

        if (len < sizeof(item)) {
            memcpy(item, p, len);
            item[len] = '\0';
            paren = strchr(item, '(');
            if (paren)
                *paren = '\0';
            q = item;
            while (n_fields < 3) {
                fields[n_fields++] = q;
                q = strchr(q, ':');
                if (!q)
                    break;
                *q++ = '\0';
            }
            if (n_fields >= 2 && strcmp(fields[0], "gpu") == 0) {
                int64_t count;
                const char *num = fields[n_fields - 1];
                if (parse_int64(num, 0, 1 << 20, &count) == 0) {
                    total += count;
                    if (n_fields == 3 && type_size && !type[0])
                        snprintf(type, type_size, "%s", fields[1]);
                }
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
    *ret_n = total > INT32_MAX ? INT32_MAX : (int32_t)total;
}

static bool has_flag(json_t *flags, const char *flag)
{
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), flag) == 0)
            return true;
    }
    return false;
}

int slurm_parse_nodes(const char *json, size_t len, struct slurm_node **ret, size_t *ret_n,
                      struct error_info *ei)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr), *nodes, *n;
    struct slurm_node *out;
    size_t i, count = 0;

    nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        json_decref(root);
        return errinfo_set(ei, ERR_INVALID, NULL, "sinfo --json gave no node list%s%s",
                           root ? "" : ": ", root ? "" : jerr.text);
    }
    out = xcalloc(json_array_size(nodes) + 1, sizeof(*out));
    json_array_foreach(nodes, i, n)
    {
        struct slurm_node *o = &out[count];
        const char *name = json_str(n, "name"), *base = json_str(n, "state");
        json_t *flags = json_object_get(n, "state_flags");
        char type[64];
        int64_t cpus = json_int(n, "cpus"), mem = json_int(n, "real_memory");
        bool down, drain;

        if (!name[0])
            continue;
        down = strcmp(base, "down") == 0 || strcmp(base, "unknown") == 0 ||
               strcmp(base, "future") == 0 || has_flag(flags, "NOT_RESPONDING") ||
               has_flag(flags, "POWERED_DOWN") || has_flag(flags, "POWER_DOWN");
        drain = has_flag(flags, "DRAIN") || has_flag(flags, "FAIL") ||
                has_flag(flags, "MAINTENANCE") || has_flag(flags, "REBOOT_REQUESTED");
        o->name = xstrdup(name);
        o->state = xstrdup(down ? "down" : drain ? "drain" : "ready");
        o->reason = xstrdup(json_str(n, "reason"));
        o->cpu_milli = cpus > 0 && cpus < INT64_MAX / 1000 ? cpus * 1000 : 0;
        o->mem_mib = mem > 0 ? mem : 0;
        gres_gpus(json_str(n, "gres"), &o->n_gpus, type, sizeof(type));
        o->gpu_type = xstrdup(type);
        gres_gpus(json_str(n, "gres_used"), &o->n_gpus_used, type, 0);
        count++;
    }
    json_decref(root);
    *ret = out;
    *ret_n = count;
    return 0;
}

int backend_slurm_nodes(struct backend *b, struct slurm_node **ret, size_t *ret_n,
                        struct error_info *ei)
{
    static const char *const args[] = {"--json", NULL};
    struct slurm *s = slurm_of(b);
    struct tool_result r;
    int rc;

    assert(b->ops == &slurm_ops);
    rc = run_tool(s, T_SINFO, args, NULL, SINFO_MAX, &r, ei);
    if (rc < 0)
        return rc;
    if (r.status != 0) {
        char line[200];
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "sinfo failed: %s",
                         first_line(&r, line, sizeof(line)));
    } else {
        rc = slurm_parse_nodes(r.out.data ? r.out.data : "", r.out.len, ret, ret_n, ei);
    }
    result_release(&r);
    return rc;
}

/* ---- the GPU indices Slurm gave a job ---- */

#define HOSTLIST_MAX 4096

/* Appends an entry for node with the indices in idx (a set), unless it has none. */
static void devices_add(struct slurm_job_devices **arr, size_t *n, size_t *cap, const char *node,
                        size_t node_len, const bool *idx)
{
    struct slurm_job_devices *d;
    size_t k = 0;

    for (int32_t i = 0; i <= SLURM_MAX_DEVICE_INDEX; i++)
        k += idx[i];
    if (k == 0)
        return;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        *arr = xreallocarray(*arr, *cap, sizeof(**arr));
    }
    d = &(*arr)[(*n)++];
    memset(d, 0, sizeof(*d));
    memcpy(d->node, node, node_len);
    d->node[node_len] = '\0';
    for (int32_t i = 0; i <= SLURM_MAX_DEVICE_INDEX; i++) {
        if (idx[i])
            d->indices[d->n_indices++] = i;
    }
}

/* A decimal number of p[0..len) into *ret (at most max). -1 when not one. */
static int span_number(const char *p, size_t len, int64_t max, int64_t *ret)
{
    char tmp[24];
    if (len == 0 || len >= sizeof(tmp))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
    }
    memcpy(tmp, p, len);
    tmp[len] = '\0';
    return parse_int64(tmp, 0, max, ret) < 0 ? -1 : 0;
}

/* "0-1,3" into the set idx. -1 when malformed or too many. */
static int index_list(const char *p, size_t len, bool *idx)
{
    const char *end = p + len;
    size_t count = 0;

    for (const char *q = p; q <= end;) {
        const char *comma = memchr(q, ',', (size_t)(end - q));
        const char *item_end = comma ? comma : end, *dash;
        int64_t lo, hi;

        dash = memchr(q, '-', (size_t)(item_end - q));
        if (span_number(q, (size_t)((dash ? dash : item_end) - q), SLURM_MAX_DEVICE_INDEX, &lo) < 0)
            return -1;
        hi = lo;
        if (dash &&
            span_number(dash + 1, (size_t)(item_end - dash - 1), SLURM_MAX_DEVICE_INDEX, &hi) < 0)
            return -1;
        if (hi < lo)
            return -1;
        for (int64_t i = lo; i <= hi; i++) {
            count += !idx[i];
            idx[i] = true;
        }
        if (count > SLURM_MAX_NODE_DEVICES)
            return -1;
        if (!comma)
            break;
        q = comma + 1;
    }
    return 0;
}

/*
 * The indices of the gpu entries of a GRES value, e.g.
 * "gpu:h100:2(IDX:0-1),gpu:a100:1(IDX:3),shard:2(0/4)", into the set idx.
 * -1 when malformed.
 */
static int gres_indices(const char *p, size_t len, bool *idx)
{
    const char *end = p + len;

    while (p < end) {
        const char *q = p, *open = NULL, *close = NULL;
        int depth = 0;
        size_t name;

        /* One entry: up to a comma outside parentheses. */
        for (; q < end && (depth > 0 || *q != ','); q++) {
            if (*q == '(') {
                if (depth++ == 0 && !open)
                    open = q;
            } else if (*q == ')') {
                if (--depth < 0)
                    return -1;
                if (depth == 0 && !close)
                    close = q;
            }
        }
        if (depth != 0)
            return -1;
        for (name = 0; p + name < q && p[name] != ':' && p[name] != '('; name++)
            ;
        if (name == 3 && memcmp(p, "gpu", 3) == 0 && open) {
            const char *in = open + 1;
            size_t in_len = (size_t)(close - in);
            if (in_len >= 4 && memcmp(in, "IDX:", 4) == 0 &&
                !(in_len == 7 && memcmp(in + 4, "N/A", 3) == 0) &&
                index_list(in + 4, in_len - 4, idx) < 0)
                return -1;
        }
        p = q < end ? q + 1 : end;
    }
    return 0;
}

/*
 * Expands a hostlist ("node[1-2,5]", "a1,b[01-03]") and adds an entry per
 * node with the indices idx. -1 when malformed or too long.
 */
static int hostlist_add(const char *p, size_t len, const bool *idx, struct slurm_job_devices **arr,
                        size_t *n, size_t *cap, size_t *count)
{
    const char *end = p + len;
    char name[sizeof((*arr)->node)];

    while (p < end) {
        const char *q = p, *lb, *rb;
        int depth = 0;

        for (; q < end && (depth > 0 || *q != ','); q++) {
            if (*q == '[' && ++depth > 1)
                return -1;
            if (*q == ']' && --depth < 0)
                return -1;
        }
        if (depth != 0 || q == p)
            return -1;
        lb = memchr(p, '[', (size_t)(q - p));
        if (!lb) {
            if ((size_t)(q - p) >= sizeof(name) || ++*count > HOSTLIST_MAX)
                return -1;
            devices_add(arr, n, cap, p, (size_t)(q - p), idx);
        } else {
            const char *suffix, *r;
            rb = memchr(lb, ']', (size_t)(q - lb));
            suffix = rb + 1;
            if (memchr(suffix, '[', (size_t)(q - suffix)) || rb == lb + 1)
                return -1;
            for (r = lb + 1; r < rb;) {
                const char *comma = memchr(r, ',', (size_t)(rb - r));
                const char *item_end = comma ? comma : rb;
                const char *dash = memchr(r, '-', (size_t)(item_end - r));
                size_t lo_len = (size_t)((dash ? dash : item_end) - r);
                int width = r[0] == '0' && lo_len > 1 ? (int)lo_len : 0;
                int64_t lo, hi;

                if (span_number(r, lo_len, 999999999, &lo) < 0)
                    return -1;
                hi = lo;
                if (dash &&
                    span_number(dash + 1, (size_t)(item_end - dash - 1), 999999999, &hi) < 0)
                    return -1;
                if (hi < lo || hi - lo >= HOSTLIST_MAX)
                    return -1;
                for (int64_t i = lo; i <= hi; i++) {
                    int m = snprintf(name, sizeof(name), "%.*s%0*" PRId64 "%.*s", (int)(lb - p), p,
                                     width, i, (int)(q - suffix), suffix);
                    if (m < 0 || (size_t)m >= sizeof(name) || ++*count > HOSTLIST_MAX)
                        return -1;
                    devices_add(arr, n, cap, name, (size_t)m, idx);
                }
                if (!comma)
                    break;
                r = comma + 1;
            }
        }
        p = q < end ? q + 1 : end;
    }
    return 0;
}

int slurm_parse_job_devices(const char *text, size_t len, struct slurm_job_devices **ret,
                            size_t *ret_n, struct error_info *ei)
{
    struct slurm_job_devices *arr = NULL;
    size_t n = 0, cap = 0, count = 0;
    const char *end = text + len, *group = NULL;
    size_t group_len = 0;
    bool *idx = xcalloc(SLURM_MAX_DEVICE_INDEX + 1, sizeof(*idx));

    /* Whitespace-separated key=value words; a group starts at Nodes= and ends at its GRES=. */
    for (const char *p = text; p < end;) {
        size_t wlen;
        const char *eq;

        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        wlen = 0;
        while (p + wlen < end && p[wlen] != ' ' && p[wlen] != '\t' && p[wlen] != '\n' &&
               p[wlen] != '\r')
            wlen++;
        eq = wlen ? memchr(p, '=', wlen) : NULL;
        if (eq && eq - p == 5 && memcmp(p, "Nodes", 5) == 0) {
            group = eq + 1;
            group_len = wlen - 6;
        } else if (eq && eq - p == 4 && memcmp(p, "GRES", 4) == 0 && group) {
            memset(idx, 0, (SLURM_MAX_DEVICE_INDEX + 1) * sizeof(*idx));
            if (gres_indices(eq + 1, wlen - 5, idx) < 0) {
                free(idx);
                free(arr);
                return errinfo_set(ei, ERR_INVALID, NULL, "scontrol: bad GRES '%.*s'",
                                   (int)(wlen - 5 > 200 ? 200 : wlen - 5), eq + 1);
            }
            if (hostlist_add(group, group_len, idx, &arr, &n, &cap, &count) < 0) {
                free(idx);
                free(arr);
                return errinfo_set(ei, ERR_INVALID, NULL, "scontrol: bad node list '%.*s'",
                                   (int)(group_len > 200 ? 200 : group_len), group);
            }
            group = NULL;
        }
        p += wlen;
    }
    free(idx);
    *ret = arr;
    *ret_n = n;
    return 0;
}

/* `scontrol --details --oneliner show job <id>` of w's job into *r; < 0 when it could not run. */
static int show_job(struct slurm *s, const struct sjob *w, struct tool_result *r)
{
    const char *args[6] = {"--details", "--oneliner", "show", "job", NULL, NULL};
    char num[32];

    if (!s->tools[T_SCONTROL] || w->job_id <= 0)
        return ERR_UNAVAILABLE;
    snprintf(num, sizeof(num), "%" PRId64, w->job_id);
    args[4] = num;
    return run_tool(s, T_SCONTROL, args, NULL, SMALL_MAX, r, NULL);
}

/* Keeps the GRES strings of show_job's output (one "GRES=" per node group, joined with ';'). */
static void keep_gres(struct slurm *s, struct sjob *w, const char *text)
{
    char gres[sizeof(w->info.gres)] = "";
    size_t used = 0;

    for (const char *p = text; (p = strstr(p, " GRES=")) != NULL;) {
        size_t len;
        p += strlen(" GRES=");
        len = strcspn(p, " \n");
        if (len > 0 && used < sizeof(gres)) {
            int m =
                snprintf(gres + used, sizeof(gres) - used, "%s%.*s", used ? ";" : "", (int)len, p);
            used = m < 0 ? sizeof(gres) : used + (size_t)m;
        }
        p += len;
    }
    if (gres[0]) {
        copy_str(w->info.gres, sizeof(w->info.gres), gres);
        w->gres_known = true;
        state_write(s, w); /* for people: best effort */
    }
}

/*
 * The GPUs Slurm assigned to a running job, from `scontrol -d -o show job`.
 * Asked only when someone wants them: squeue's narrow format has no such
 * field, and one more tool run per job would cost as much as its sbatch.
 */
static void learn_gres(struct slurm *s, struct sjob *w)
{
    struct tool_result r;

    if (show_job(s, w, &r) < 0)
        return;
    if (r.status == 0 && r.out.data)
        keep_gres(s, w, r.out.data);
    result_release(&r);
}

/* Jobs asked about per squeue, and how long a job must have run first. */
#define DEVICES_PER_POLL 4
#define DEVICES_AFTER_MS 1000
#define DEVICES_TRIES 3

/*
 * After a squeue: learns which GPUs Slurm gave jobs that have run for
 * DEVICES_AFTER_MS, a few per call, so that work of a second or less (the
 * benchmark's 2,000 `true` jobs) never costs an scontrol.
 */
static void learn_devices(struct slurm *s, int64_t now_ms)
{
    size_t asked = 0;

    for (size_t i = 0; i < s->n_work && asked < DEVICES_PER_POLL; i++) {
        struct sjob *w = s->work[i];
        struct slurm_job_devices *devs = NULL;
        struct tool_result r;
        size_t n = 0;

        if (!w->running || w->devices_done || w->reason || w->job_id <= 0 || !w->running_seen_ms ||
            now_ms - w->running_seen_ms < DEVICES_AFTER_MS)
            continue;
        asked++;
        if (show_job(s, w, &r) < 0) {
            w->devices_done = ++w->devices_tries >= DEVICES_TRIES;
            continue;
        }
        if (r.status == 0 && r.out.data &&
            slurm_parse_job_devices(r.out.data, r.out.len, &devs, &n, NULL) == 0 && n > 0) {
            if (!w->gres_known)
                keep_gres(s, w, r.out.data);
            for (size_t k = 0; k < n; k++) {
                devs[k].workload_id = w->id;
                devs[k].job_id = w->job_id;
                if (s->n_devices == s->cap_devices) {
                    s->cap_devices = s->cap_devices ? s->cap_devices * 2 : 8;
                    s->devices = xreallocarray(s->devices, s->cap_devices, sizeof(*s->devices));
                }
                s->devices[s->n_devices++] = devs[k];
            }
            w->devices_done = true;
        } else {
            w->devices_done = ++w->devices_tries >= DEVICES_TRIES;
        }
        free(devs);
        result_release(&r);
    }
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
    w = work_find(s, workload_id, NULL);
    if (!w)
        return ERR_NOT_FOUND;
    if (w->running && !w->gres_known)
        learn_gres(s, w);
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
 * The value of key in `scontrol show config` output ("AccountingStorageType
 * = accounting_storage/slurmdbd", one setting a line), the last if several,
 * trimmed: 1 with *ret and *ret_len, 0 when absent.
 */
static int config_value(const char *text, size_t len, const char *key, const char **ret,
                        size_t *ret_len)
{
    const char *end = text + len;
    int found = 0;

    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line)), *v, *ve;
        size_t n = eol ? (size_t)(eol - line) : (size_t)(end - line);
        size_t k = strcspn(line, " =");
        if (k > n)
            k = n;
        v = line + k;
        ve = line + n;
        while (v < ve && (*v == ' ' || *v == '='))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\r'))
            ve--;
        if (k == strlen(key) && memcmp(line, key, k) == 0) {
            *ret = v;
            *ret_len = (size_t)(ve - v);
            found = 1;
        }
        line = eol ? eol + 1 : end;
    }
    return found;
}

int slurm_parse_accounting_config(const char *text, size_t len)
{
    static const char dbd[] = "accounting_storage/slurmdbd";
    const char *v;
    size_t n;
    return text && config_value(text, len, "AccountingStorageType", &v, &n) && n == strlen(dbd) &&
           memcmp(v, dbd, n) == 0;
}

int slurm_parse_jobcomp_config(const char *text, size_t len, char *out, size_t out_len)
{
    static const char filetxt[] = "jobcomp/filetxt";
    const char *type, *loc;
    size_t type_len, loc_len;

    /* "JobCompLoc              = /var/log/slurm/jobcomp.txt" */
    if (!text || !config_value(text, len, "JobCompType", &type, &type_len) ||
        type_len != strlen(filetxt) || memcmp(type, filetxt, type_len) != 0 ||
        !config_value(text, len, "JobCompLoc", &loc, &loc_len) || loc_len == 0 || loc[0] != '/')
        return 0;
    if (loc_len >= out_len)
        return -1;
    memcpy(out, loc, loc_len);
    out[loc_len] = '\0';
    return 1;
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
    struct tool_result r;
    char path[4096];
    int found = 0;

    if (!s->tools[T_SCONTROL] || run_tool(s, T_SCONTROL, args, NULL, SMALL_MAX, &r, NULL) < 0)
        return NULL;
    if (r.status == 0 && r.out.data) {
        found = slurm_parse_jobcomp_config(r.out.data, r.out.len, path, sizeof(path));
        s->accounting = slurm_parse_accounting_config(r.out.data, r.out.len) == 1;
    }
    result_release(&r);
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
        s->tools[i] = find_tool(opt->bin_dir, tool_names[i]);
        /* optional: scontrol (GPU indices, the config), sacct (ended jobs) */
        if (!s->tools[i] && i != T_SCONTROL && i != T_SACCT) {
            errinfo_set(ei, ERR_UNAVAILABLE, "bin_dir", "slurm's '%s' was not found in '%s'",
                        tool_names[i], opt->bin_dir && opt->bin_dir[0] ? opt->bin_dir : "PATH");
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
