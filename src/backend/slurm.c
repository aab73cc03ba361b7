/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm.c: the backend that runs placed work on a real Slurm cluster (issue
 * 8, docs/slurm-backend.md). Each workload is one batch job, submitted with
 * sbatch pinned to the nodes the scheduler chose and the number of GPUs it
 * gave each replica; squeue --json tells how it goes and how it ended;
 * scancel signals it (SIGTERM, the grace, SIGKILL: preemption is ours, not
 * Slurm's); sinfo --json gives the nodes and their GPUs.
 *
 * Slurm's command-line tools are the interface, not libslurm or slurmrestd:
 * they are what every Slurm site has, speak the same protocol version as the
 * controller whatever version that is, and need no extra daemon or token; a
 * tool that hangs is killed at a deadline, which a library call inside the
 * daemon could not be. Each tool runs as fork + execve of its full path with
 * its arguments as a vector (no shell) and a minimal environment.
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
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <jansson.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/parse.h"

#define NEVER INT64_MAX
#define UNKNOWN_EXIT (-1)
#define STATE_MAGIC "gpuaas-slurm-state 1"
#define STATE_MAX 4096
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define SQUEUE_MAX (256u * 1024 * 1024) /* squeue --json of a very busy cluster */
#define SINFO_MAX (64u * 1024 * 1024)
#define SMALL_MAX (64u * 1024)

enum tool { T_SBATCH, T_SQUEUE, T_SCANCEL, T_SINFO, N_TOOLS };
static const char *const tool_names[N_TOOLS] = {"sbatch", "squeue", "scancel", "sinfo"};

struct sjob {
    int64_t id;     /* workload */
    int64_t job_id; /* Slurm's */
    int64_t launched_ms;
    int64_t alive_ms;        /* the last query that saw it not ended (its end is later) */
    int64_t max_runtime_ms;  /* < 0: none */
    int64_t deadline_ms;     /* max runtime reached: set once Slurm started it; NEVER until */
    int64_t kill_at_ms;      /* SIGKILL due, NEVER when none pending */
    enum backend_end reason; /* 0 while nobody asked it to end, STOPPED or TIMEOUT */
    bool lost;               /* adopt found nothing: report LOST at lost_at_ms */
    bool searching;          /* adopted without a state file: look for its job by name */
    int64_t lost_at_ms;
    bool running;     /* Slurm said RUNNING (so a signal reaches it) */
    bool gres_stored; /* the state file has what Slurm assigned */
    struct slurm_job_info info;
};

struct slurm {
    struct backend b;
    char *log_dir;
    char *partition;
    char *jobcomp_path;
    char *tools[N_TOOLS];
    char **env; /* the tools' environment */
    int64_t poll_interval_ms, command_timeout_ms, timeout_grace_ms;
    int64_t next_query_ms; /* when poll() may run squeue again */

    struct sjob **work; /* in launch order */
    size_t n_work, cap_work;
    struct backend_event *done; /* ended, not yet handed out by poll() */
    size_t n_done, cap_done;
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

/* Between fork and exec: async-signal-safe calls only (the daemon has threads). */
__attribute__((noreturn)) static void tool_exec(const char *path, char *const *argv,
                                                char *const *envp, int out_fd, int err_fd)
{
    struct sigaction dfl;
    sigset_t none;
    int null_fd;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    null_fd = open("/dev/null", O_RDONLY);
    if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(127);
    if (close_range(3, ~0U, 0) < 0) {
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
    }
    execve(path, argv, envp);
    _exit(127);
}

/*
 * Runs tool t with args (NULL-terminated, without the program name) and
 * extra environment entries (NULL-terminated, may be NULL), with a deadline.
 * Returns 0 with r filled (caller releases it, whatever the exit status), or
 * ERR_UNAVAILABLE (could not start, timed out: killed) / ERR_TOO_LARGE
 * (more output than out_max: killed), with ei.
 */
static int run_tool(struct slurm *s, enum tool t, const char *const *args,
                    const char *const *extra_env, size_t out_max, struct tool_result *r,
                    struct error_info *ei)
{
    const char *argv[64];
    char *envp[32];
    size_t n_arg = 0, n_env = 0;
    int out_pipe[2], err_pipe[2], st, rc = 0;
    int64_t deadline = mono_ms() + s->command_timeout_ms;
    bool out_open = true, err_open = true;
    pid_t pid;

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

    memset(r, 0, sizeof(*r));
    buf_init(&r->out, out_max);
    buf_init(&r->err, SMALL_MAX);
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
    pid = fork();
    if (pid == 0)
        tool_exec(s->tools[t], (char *const *)argv, envp, out_pipe[1], err_pipe[1]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (pid < 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not run %s: fork: %s", argv[0],
                           strerror(errno));
    }
    while (out_open || err_open) {
        struct pollfd pfd[2] = {{.fd = out_open ? out_pipe[0] : -1, .events = POLLIN},
                                {.fd = err_open ? err_pipe[0] : -1, .events = POLLIN}};
        int64_t left = deadline - mono_ms();
        char chunk[65536];
        int pr;

        if (left <= 0) {
            rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s timed out after %" PRId64 " ms",
                             argv[0], s->command_timeout_ms);
            break;
        }
        pr = poll(pfd, 2, left > INT_MAX ? INT_MAX : (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s: poll: %s", argv[0], strerror(errno));
            break;
        }
        for (int k = 0; k < 2 && rc == 0; k++) {
            ssize_t n;
            if (!(pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(pfd[k].fd, chunk, sizeof(chunk));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                if (k == 0)
                    out_open = false;
                else
                    err_open = false;
                continue;
            }
            if (k == 1) {
                buf_append(&r->err, chunk, (size_t)n); /* beyond its cap: dropped */
            } else if (buf_append(&r->out, chunk, (size_t)n) < 0) {
                rc = errinfo_set(ei, ERR_TOO_LARGE, NULL, "%s wrote more than %zu bytes", argv[0],
                                 out_max);
            }
        }
        if (rc < 0)
            break;
    }
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (rc < 0) {
        kill_and_reap(pid);
        result_release(r);
        return rc;
    }
    /* Output closed: the exit follows at once; wait for it within the deadline. */
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            result_release(r);
            return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s: waitpid: %s", argv[0],
                               strerror(errno));
        }
        if (mono_ms() >= deadline) {
            kill_and_reap(pid);
            result_release(r);
            return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "%s timed out after %" PRId64 " ms",
                               argv[0], s->command_timeout_ms);
        }
        poll(NULL, 0, 2);
    }
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1;
    if (r->status == 127 && r->out.len == 0 && r->err.len == 0) {
        result_release(r);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not execute '%s'", s->tools[t]);
    }
    return 0;
}

/* ---- files ---- */

static char *state_path(const struct slurm *s, int64_t id)
{
    return xasprintf("%s/%" PRId64 ".slurm", s->log_dir, id);
}

static char *script_path(const struct slurm *s, int64_t id)
{
    return xasprintf("%s/%" PRId64 ".sbatch", s->log_dir, id);
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes path atomically (temporary file, then rename), mode 0600. Returns 0 or -1 (errno). */
static int write_atomic(const char *path, const char *text)
{
    char *tmp = xasprintf("%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), rc = -1, saved;

    if (fd >= 0) {
        rc = write_all(fd, text, strlen(text));
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
    for (size_t i = 0; i < s->n_done; i++) {
        if (s->done[i].workload_id == id)
            return true;
    }
    return false;
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

static void done_push(struct slurm *s, struct backend_event ev)
{
    if (s->n_done == s->cap_done) {
        s->cap_done = s->cap_done ? 2 * s->cap_done : 16;
        s->done = xreallocarray(s->done, s->cap_done, sizeof(*s->done));
    }
    s->done[s->n_done++] = ev;
}

/* Forgets a workload that has been reported: its state and script go, its log stays. */
static void work_finish(struct slurm *s, size_t pos)
{
    struct sjob *w = s->work[pos];
    char *path = state_path(s, w->id);
    unlink(path);
    free(path);
    path = script_path(s, w->id);
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
 * The batch script. Slurm runs it on the first node with the job's
 * CUDA_VISIBLE_DEVICES; one replica runs the command there, several run it
 * once per node through srun, each learning its replica number from the
 * node it is on.
 */
static int script_build(const struct backend_launch *l, struct buf *b)
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
    } else {
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
        if (r->n_devices != l->replicas[0].n_devices)
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64
                               ": replicas with different numbers of GPUs are not supported on"
                               " slurm clusters yet",
                               l->workload_id);
        for (size_t k = 0; k < i; k++) {
            if (strcmp(l->replicas[k].node_name, r->node_name) == 0)
                return errinfo_set(ei, ERR_INVALID, "replicas",
                                   "workload %" PRId64
                                   ": two replicas on node '%s' are not supported on slurm"
                                   " clusters yet",
                                   l->workload_id, r->node_name);
        }
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

static int slurm_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                        struct error_info *ei)
{
    struct slurm *s = slurm_of(b);
    struct buf script, nodelist;
    struct tool_result r;
    struct sjob *w;
    char *spath, *owned[16], *env_id;
    size_t n_owned = 0;
    const char *args[32];
    const char *env[2];
    size_t n = 0;
    int64_t job_id = -1, cpus;
    int rc = backend_check_launch(l, ei);

    if (rc == 0)
        rc = check_slurm_launch(l, ei);
    if (rc < 0)
        return rc;
    if (known(s, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL,
                           "workload %" PRId64 " is already running on this cluster",
                           l->workload_id);

    buf_init(&script, 1024 * 1024);
    if (script_build(l, &script) < 0) {
        buf_release(&script);
        return errinfo_set(ei, ERR_INVALID, "command",
                           "workload %" PRId64 ": the command is too long", l->workload_id);
    }
    spath = script_path(s, l->workload_id);
    if (write_atomic(spath, script.data) < 0) {
        rc = errinfo_set(ei, ERR_IO, NULL, "could not write the batch script '%s': %s", spath,
                         strerror(errno));
        buf_release(&script);
        free(spath);
        return rc;
    }
    buf_release(&script);

    buf_init(&nodelist, 64 * 1024);
    for (size_t i = 0; i < l->n_replicas; i++)
        buf_printf(&nodelist, "%s%s", i ? "," : "", l->replicas[i].node_name);
    cpus = l->cpu_milli > 0 ? (l->cpu_milli + 999) / 1000 : 1;

#define OWN(str) (owned[n_owned++] = (str))
    env_id = OWN(xasprintf("GPUAAS_WORKLOAD_ID=%" PRId64, l->workload_id));
    args[n++] = "--parsable";
    args[n++] = "--no-requeue";
    args[n++] = "--open-mode=append";
    args[n++] = "--ntasks-per-node=1";
    args[n++] = OWN(xasprintf("--job-name=gpuaas-%" PRId64, l->workload_id));
    args[n++] = OWN(xasprintf("--output=%s/%" PRId64 ".log", s->log_dir, l->workload_id));
    args[n++] = OWN(xasprintf("--chdir=%s", s->log_dir));
    args[n++] = OWN(xasprintf("--nodes=%zu", l->n_replicas));
    args[n++] = OWN(xasprintf("--nodelist=%s", nodelist.data ? nodelist.data : ""));
    args[n++] = OWN(xasprintf("--ntasks=%zu", l->n_replicas));
    args[n++] = OWN(xasprintf("--cpus-per-task=%" PRId64, cpus));
    if (l->mem_mib > 0)
        args[n++] = OWN(xasprintf("--mem=%" PRId64 "M", l->mem_mib));
    if (l->replicas[0].n_devices > 0)
        args[n++] = OWN(xasprintf("--gres=gpu:%zu", l->replicas[0].n_devices));
    if (l->max_runtime_ms >= 0) {
        /*
         * Slurm counts whole minutes; ours is the real limit (enforced by
         * poll()), Slurm's a backstop a minute or more later.
         */
        int64_t total = add_ms(l->max_runtime_ms, s->timeout_grace_ms);
        int64_t minutes = total / 60000 + 2;
        if (minutes > 0 && minutes < 365LL * 24 * 60)
            args[n++] = OWN(xasprintf("--time=%" PRId64, minutes));
    }
    if (s->partition)
        args[n++] = OWN(xasprintf("--partition=%s", s->partition));
#undef OWN
    args[n++] = spath;
    args[n] = NULL;
    assert(n < ARRAY_SIZE(args) && n_owned <= ARRAY_SIZE(owned));
    env[0] = env_id;
    env[1] = NULL;

    rc = run_tool(s, T_SBATCH, args, env, SMALL_MAX, &r, ei);
    if (rc == 0) {
        job_id = r.status == 0 ? parse_job_id(r.out.data) : -1;
        if (job_id < 0) {
            char line[200];
            rc =
                errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                            "slurm refused workload %" PRId64 " on %s: %s", l->workload_id,
                            nodelist.data ? nodelist.data : "", first_line(&r, line, sizeof(line)));
        }
        result_release(&r);
    }
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    buf_release(&nodelist);
    if (rc < 0) {
        unlink(spath);
        free(spath);
        return rc;
    }
    free(spath);

    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->job_id = job_id;
    w->launched_ms = now_ms;
    w->kill_at_ms = NEVER;
    w->max_runtime_ms = l->max_runtime_ms;
    w->deadline_ms = NEVER;
    w->info.job_id = job_id;
    if (state_write(s, w) < 0) {
        /* Without its state file a restarted daemon could not find it: take it back. */
        const char *cargs[3];
        char num[32];
        rc = errinfo_set(ei, ERR_IO, NULL,
                         "could not write the state file of workload %" PRId64 " in '%s': %s",
                         l->workload_id, s->log_dir, strerror(errno));
        snprintf(num, sizeof(num), "%" PRId64, job_id);
        cargs[0] = num;
        cargs[1] = NULL;
        if (run_tool(s, T_SCANCEL, cargs, NULL, SMALL_MAX, &r, NULL) == 0)
            result_release(&r);
        free(w);
        return rc;
    }
    work_add(s, w);
    return 0;
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
        w->gres_stored = true; /* keep the file as the previous daemon wrote it */
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
static void signal_job(struct slurm *s, struct sjob *w, int sig)
{
    const char *args[5];
    char num[32];
    struct tool_result r;
    size_t n = 0;
    bool cancel = !w->running;

    if (w->job_id <= 0)
        return; /* adopted, its job not found yet: the search decides */
    snprintf(num, sizeof(num), "%" PRId64, w->job_id);
    if (!cancel) {
        args[n++] = sig == SIGKILL ? "--batch" : "--full";
        args[n++] = sig == SIGKILL ? "--signal=KILL" : "--signal=TERM";
    }
    args[n++] = num;
    args[n] = NULL;
    if (run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) < 0)
        return; /* timed out: the next kill, or Slurm's time limit, follows */
    if (r.status != 0 && !cancel) {
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
    struct sjob *w = work_find(s, workload_id, NULL);
    int64_t kill_at;

    if (!w || w->lost)
        return 0;
    if (!w->reason)
        w->reason = BACKEND_STOPPED;
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
    if (at > now_ms)
        at = now_ms;
    return at;
}

static void report(struct slurm *s, size_t pos, enum backend_end how, int64_t at, int exit_code)
{
    struct sjob *w = s->work[pos];
    done_push(s, (struct backend_event){
                     .workload_id = w->id, .at_ms = at, .how = how, .exit_code = exit_code});
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

/* Joins a JSON array of strings with ';' into dst (truncating). */
static void json_join(json_t *arr, char *dst, size_t size)
{
    size_t i, used = 0;
    json_t *v;
    dst[0] = '\0';
    json_array_foreach(arr, i, v)
    {
        int m;
        if (!json_is_string(v) || used >= size)
            continue;
        m = snprintf(dst + used, size - used, "%s%s", used ? ";" : "", json_string_value(v));
        used = m < 0 ? size : used + (size_t)m;
    }
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
 * Looks the jobs Slurm no longer lists (missing, sorted by job id) up in the
 * jobcomp file. Each found is added to ended and marked in found.
 */
static void jobcomp_lookup(struct slurm *s, struct sjob *const *missing, size_t n_missing,
                           bool *found, struct ended *ended, size_t *n_ended, int64_t now_ms)
{
    FILE *f;
    char *line = NULL;
    size_t cap = 0, left = n_missing;

    if (!s->jobcomp_path || n_missing == 0)
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
        snprintf(name, sizeof(name), "gpuaas-%" PRId64, w->id);
        if (!v || len != strlen(name) || memcmp(v, name, len) != 0)
            continue; /* a job id Slurm gave again after a reset: not ours */
        v = jobcomp_field(line, "JobState", &len);
        snprintf(state, sizeof(state), "%.*s", v ? (int)(len < 31 ? len : 31) : 0, v ? v : "");
        v = jobcomp_field(line, "EndTime", &len);
        end_s = v ? jobcomp_time(v, len) : -1;
        v = jobcomp_field(line, "ExitCode", &len);
        if (v) {
            char ec[32];
            char *colon;
            snprintf(ec, sizeof(ec), "%.*s", (int)(len < 31 ? len : 31), v);
            colon = strchr(ec, ':');
            if (colon) {
                *colon = '\0';
                if (parse_int64(ec, 0, 255, &code) < 0 || parse_int64(colon + 1, 0, 127, &sig) < 0)
                    code = sig = 0;
            }
        }
        ended[*n_ended] = (struct ended){
            .id = w->id,
            .at = end_at(w, end_s, now_ms),
            .how = how_of(w, state),
            .exit_code = sig                               ? (int)-sig
                         : code                            ? (int)code
                         : strcmp(state, "COMPLETED") == 0 ? 0
                                                           : UNKNOWN_EXIT,
        };
        (*n_ended)++;
        found[pos] = true;
        left--;
    }
    free(line);
    fclose(f);
}

/* Adopted work without a state file: its newest job named gpuaas-<id>, or lost. */
static void search_by_name(struct slurm *s, struct sjob *w, json_t *jobs)
{
    char name[64];
    int64_t best = -1;
    size_t i;
    json_t *j;

    snprintf(name, sizeof(name), "gpuaas-%" PRId64, w->id);
    json_array_foreach(jobs, i, j)
    {
        int64_t id = json_int(j, "job_id");
        if (id > best && strcmp(json_str(j, "name"), name) == 0)
            best = id;
    }
    w->searching = false;
    if (best <= 0) {
        w->lost = true; /* reported by this poll, at the adopt's time */
        return;
    }
    w->job_id = best;
    w->info.job_id = best;
    state_write(s, w); /* best effort: found again next time by name anyway */
}

/*
 * Asks squeue about every job, updates what is known and finds the ends.
 * Returns 0, or < 0 when Slurm could not be asked (nothing is concluded).
 */
static int query(struct slurm *s, int64_t now_ms)
{
    static const char *const args[] = {"--json", NULL};
    struct tool_result r;
    struct sjob **sorted, **missing;
    struct ended *ended;
    size_t n_sorted = 0, n_missing = 0, n_ended = 0, i;
    json_t *root, *jobs, *j;
    json_error_t jerr;
    bool *seen;
    int rc = run_tool(s, T_SQUEUE, args, NULL, SQUEUE_MAX, &r, NULL);

    if (rc < 0)
        return rc;
    if (r.status != 0 || !r.out.data) {
        result_release(&r);
        return ERR_UNAVAILABLE;
    }
    root = json_loadb(r.out.data, r.out.len, 0, &jerr);
    result_release(&r);
    jobs = json_object_get(root, "jobs");
    if (!json_is_array(jobs)) {
        json_decref(root);
        return ERR_UNAVAILABLE;
    }

    for (i = 0; i < s->n_work; i++) {
        if (s->work[i]->searching)
            search_by_name(s, s->work[i], jobs);
    }
    sorted = xcalloc(s->n_work + 1, sizeof(*sorted));
    for (i = 0; i < s->n_work; i++) {
        if (!s->work[i]->lost && s->work[i]->job_id > 0)
            sorted[n_sorted++] = s->work[i];
    }
    qsort(sorted, n_sorted, sizeof(*sorted), cmp_job_id);
    seen = xcalloc(n_sorted + 1, sizeof(*seen));
    ended = xcalloc(n_sorted + 1, sizeof(*ended));
    json_array_foreach(jobs, i, j)
    {
        size_t pos = find_job(sorted, n_sorted, json_int(j, "job_id"));
        const char *state = json_str(j, "job_state");
        struct sjob *w;
        char name[64];

        if (pos == SIZE_MAX)
            continue;
        w = sorted[pos];
        snprintf(name, sizeof(name), "gpuaas-%" PRId64, w->id);
        if (strcmp(json_str(j, "name"), name) != 0)
            continue; /* that job id is someone else's now */
        seen[pos] = true;
        copy_str(w->info.state, sizeof(w->info.state), state);
        copy_str(w->info.nodes, sizeof(w->info.nodes), json_str(j, "nodes"));
        if (strcmp(state, "RUNNING") == 0) {
            json_t *gres = json_object_get(j, "gres_detail");
            int64_t start = json_int(j, "start_time");
            w->running = true;
            if (start > 0 && start < NEVER / 1000)
                w->info.start_ms = start * 1000;
            if (w->max_runtime_ms >= 0 && w->deadline_ms == NEVER) {
                /* Max runtime counts from when Slurm started it, not from the queue. */
                int64_t from =
                    w->info.start_ms > w->launched_ms ? w->info.start_ms : w->launched_ms;
                w->deadline_ms = add_ms(from, w->max_runtime_ms);
            }
            if (json_is_array(gres) && json_array_size(gres) > 0 && !w->gres_stored) {
                json_join(gres, w->info.gres, sizeof(w->info.gres));
                w->gres_stored = state_write(s, w) == 0;
            }
        }
        if (!state_final(state)) {
            w->alive_ms = now_ms;
        } else {
            ended[n_ended++] = (struct ended){
                .id = w->id,
                .at = end_at(w, json_int(j, "end_time"), now_ms),
                .how = how_of(w, state),
                .exit_code = exit_code_of(state, json_int(j, "exit_code")),
            };
        }
    }
    json_decref(root);

    /* Jobs Slurm does not list any more: in the jobcomp file, or lost. */
    missing = xcalloc(n_sorted + 1, sizeof(*missing));
    for (i = 0; i < n_sorted; i++) {
        if (!seen[i])
            missing[n_missing++] = sorted[i]; /* still sorted by job id */
    }
    memset(seen, 0, (n_sorted + 1) * sizeof(*seen)); /* now: found in the jobcomp file */
    jobcomp_lookup(s, missing, n_missing, seen, ended, &n_ended, now_ms);
    for (i = 0; i < n_missing; i++) {
        if (!seen[i])
            ended[n_ended++] = (struct ended){
                .id = missing[i]->id, .at = now_ms, .how = BACKEND_LOST, .exit_code = UNKNOWN_EXIT};
    }
    qsort(ended, n_ended, sizeof(*ended), cmp_ended);
    for (i = 0; i < n_ended; i++) {
        size_t pos;
        if (work_find(s, ended[i].id, &pos))
            report(s, pos, ended[i].how, ended[i].at, ended[i].exit_code);
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
            report(s, i, BACKEND_LOST, w->lost_at_ms, UNKNOWN_EXIT);
        else
            i++;
    }
}

/* Sends kills and max-runtime signals that are due. */
static void chores(struct slurm *s, int64_t now_ms)
{
    size_t i = 0;
    while (i < s->n_work) {
        struct sjob *w = s->work[i];
        if (!w->reason && w->deadline_ms <= now_ms) {
            w->reason = BACKEND_TIMEOUT;
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

static size_t slurm_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct slurm *s = slurm_of(b);
    size_t n;

    assert(out || max == 0);
    chores(s, now_ms);
    if (s->n_work > 0 && now_ms >= s->next_query_ms) {
        /* After a failure Slurm is asked again at the next interval all the same. */
        query(s, now_ms);
        s->next_query_ms = add_ms(now_ms, s->poll_interval_ms);
    }
    report_lost(s);
    /* Oldest first (lost work found by adopt and ends Slurm dated earlier come together). */
    for (size_t i = 1; i < s->n_done; i++) {
        struct backend_event ev = s->done[i];
        size_t k = i;
        while (k > 0 && s->done[k - 1].at_ms > ev.at_ms) {
            s->done[k] = s->done[k - 1];
            k--;
        }
        s->done[k] = ev;
    }
    n = s->n_done < max ? s->n_done : max;
    if (n > 0) {
        memcpy(out, s->done, n * sizeof(*out));
        memmove(s->done, s->done + n, (s->n_done - n) * sizeof(*s->done));
        s->n_done -= n;
    }
    return n;
}

static int64_t slurm_next_event_ms(struct backend *b)
{
    struct slurm *s = slurm_of(b);
    int64_t next = NEVER;

    if (s->n_done > 0)
        return 0;
    if (s->n_work > 0)
        next = s->next_query_ms; /* ends are learnt only by asking */
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
    for (size_t i = 0; i < s->n_work; i++)
        free(s->work[i]);
    free(s->work);
    free(s->done);
    for (size_t i = 0; i < N_TOOLS; i++)
        free(s->tools[i]);
    for (size_t i = 0; s->env && s->env[i]; i++)
        free(s->env[i]);
    free(s->env);
    free(s->log_dir);
    free(s->partition);
    free(s->jobcomp_path);
    free(s);
}

static const struct backend_ops slurm_ops = {
    .name = "slurm",
    .launch = slurm_launch,
    .stop = slurm_stop,
    .poll = slurm_poll,
    .next_event_ms = slurm_next_event_ms,
    .adopt = slurm_adopt,
    .free = slurm_free,
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
        char item[256], *paren, *fields[3];
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

int backend_slurm_job(struct backend *b, int64_t workload_id, struct slurm_job_info *ret)
{
    struct slurm *s = slurm_of(b);
    struct sjob *w;
    assert(b->ops == &slurm_ops);
    w = work_find(s, workload_id, NULL);
    if (!w)
        return ERR_NOT_FOUND;
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

struct backend *backend_slurm_new(int64_t cluster_id, const struct slurm_options *opt,
                                  struct error_info *ei)
{
    struct slurm *s;
    char *log_dir;

    if (!opt || !opt->log_dir || !opt->log_dir[0]) {
        errinfo_set(ei, ERR_INVALID, "log_dir", "the slurm backend needs a log directory");
        return NULL;
    }
    if (mkdir(opt->log_dir, 0700) < 0 && errno != EEXIST) {
        errinfo_set(ei, ERR_IO, "log_dir", "could not create log directory '%s': %s", opt->log_dir,
                    strerror(errno));
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
        if (!s->tools[i]) {
            errinfo_set(ei, ERR_UNAVAILABLE, "bin_dir", "slurm's '%s' was not found in '%s'",
                        tool_names[i], opt->bin_dir && opt->bin_dir[0] ? opt->bin_dir : "PATH");
            slurm_free(&s->b);
            free(log_dir);
            return NULL;
        }
    }
    s->log_dir = log_dir;
    s->partition = dup_or_null(opt->partition);
    s->jobcomp_path = dup_or_null(opt->jobcomp_path);
    s->env = env_build(opt->conf);
    s->poll_interval_ms = opt->poll_interval_ms > 0 ? opt->poll_interval_ms : 500;
    s->command_timeout_ms = opt->command_timeout_ms > 0 ? opt->command_timeout_ms : 10000;
    s->timeout_grace_ms = opt->timeout_grace_ms > 0 ? opt->timeout_grace_ms : 0;
    return &s->b;
}
