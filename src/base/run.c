/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.c: a child process within a deadline (run.h). The pipes' read ends
 * are non-blocking and read with poll(), so a caller can look at a child
 * without waiting (run_poll) or wait for it with the deadline as poll's
 * timeout (run_finish); standard input is a memory file (memfd) holding the
 * whole text, so a child that does not read it cannot block the writer.
 */
#include "base/common.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "base/fdio.h"
#include "base/run.h"
#include "base/timeutil.h"

extern char **environ;

static void close_fds(struct run_proc *p)
{
    for (int k = 0; k < 2; k++) {
        if (p->fd[k] >= 0)
            close(p->fd[k]);
        p->fd[k] = -1;
    }
}

void run_abort(struct run_proc *p)
{
    close_fds(p);
    if (p->pid > 0) {
        if (p->own_group)
            kill(-p->pid, SIGKILL); /* a script's children too */
        kill(p->pid, SIGKILL);
        while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    p->pid = 0;
    buf_release(&p->out);
    buf_release(&p->err);
}

/* A memory file holding text, at offset 0, for the child's standard input. -1 with errno. */
static int stdin_file(const char *text)
{
    int fd = memfd_create("gpuaas-stdin", MFD_CLOEXEC), saved;

    if (fd < 0)
        return -1;
    if (fd_write_all(fd, text, strlen(text)) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* The pipes: out_pipe always, err_pipe when stderr is kept. 0, or -1 with errno (none left open).
 */
static int make_pipes(int out_pipe[2], int err_pipe[2], bool keep_err)
{
    int saved;

    err_pipe[0] = err_pipe[1] = -1;
    if (pipe2(out_pipe, O_CLOEXEC) < 0)
        return -1;
    if (keep_err && pipe2(err_pipe, O_CLOEXEC) < 0) {
        saved = errno;
        close(out_pipe[0]);
        close(out_pipe[1]);
        errno = saved;
        return -1;
    }
    /* Only our ends are non-blocking: the flag is shared with every dup of a descriptor. */
    fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
    if (keep_err)
        fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
    return 0;
}

/* posix_spawn(p) of spec with the given descriptors. Returns 0 or an errno value. */
static int spawn(const struct run_spec *spec, pid_t *ret_pid, int stdin_fd, int out_fd, int err_fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all, none;
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    char *const *argv = (char *const *)spec->argv;
    char *const *envp = spec->envp ? (char *const *)spec->envp : environ;
    int rc;

    posix_spawn_file_actions_init(&fa);
    if (stdin_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, stdin_fd, 0);
    else
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (err_fd >= 0)
        posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    else
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&attr);
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setsigmask(&attr, &none);
    if (spec->own_group) {
        posix_spawnattr_setpgroup(&attr, 0);
        flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr, flags);
    if (strchr(spec->path, '/'))
        rc = posix_spawn(ret_pid, spec->path, &fa, &attr, argv, envp);
    else
        rc = posix_spawnp(ret_pid, spec->path, &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int run_start(const struct run_spec *spec, struct run_proc *p, struct error_info *ei)
{
    int out_pipe[2], err_pipe[2], stdin_fd = -1, rc;
    bool keep_err = spec->err_max > 0;

    assert(spec->path && spec->argv && spec->argv[0]);
    memset(p, 0, sizeof(*p));
    p->fd[0] = p->fd[1] = -1;
    snprintf(p->name, sizeof(p->name), "%s", spec->argv[0]);
    p->timeout_ms = spec->timeout_ms;
    p->deadline_ms = time_add_ms(time_mono_ms(), spec->timeout_ms);
    p->own_group = spec->own_group;
    buf_init(&p->out, spec->out_max);
    buf_init(&p->err, spec->err_max);
    if (spec->stdin_text && (stdin_fd = stdin_file(spec->stdin_text)) < 0)
        return errinfo_set(ei, ERR_IO, NULL, "could not run '%s': its input: %s", spec->path,
                           strerror(errno));
    if (make_pipes(out_pipe, err_pipe, keep_err) < 0) {
        rc = errinfo_set(ei, ERR_IO, NULL, "could not run '%s': pipe: %s", spec->path,
                         strerror(errno));
        if (stdin_fd >= 0)
            close(stdin_fd);
        return rc;
    }
    rc = spawn(spec, &p->pid, stdin_fd, out_pipe[1], err_pipe[1]);
    if (stdin_fd >= 0)
        close(stdin_fd);
    close(out_pipe[1]);
    if (keep_err)
        close(err_pipe[1]);
    p->fd[0] = out_pipe[0];
    p->fd[1] = err_pipe[0];
    if (rc != 0) {
        p->pid = 0;
        run_abort(p);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not run '%s': %s", spec->path,
                           strerror(rc));
    }
    return 0;
}

/*
 * Reads what the child wrote, waiting up to wait_ms for something to read.
 * Returns 1 when both pipes are closed (it is done writing), 0 when not
 * yet, ERR_TOO_LARGE past out_max or ERR_IO, with ei.
 */
static int pump(struct run_proc *p, int wait_ms, struct error_info *ei)
{
    struct pollfd pfd[2] = {{.fd = p->fd[0], .events = POLLIN}, {.fd = p->fd[1], .events = POLLIN}};
    char chunk[65536];
    int pr = poll(pfd, 2, wait_ms);

    if (pr < 0 && errno != EINTR)
        return errinfo_set(ei, ERR_IO, NULL, "'%s': poll: %s", p->name, strerror(errno));
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
            if (n < 0)
                return errinfo_set(ei, ERR_IO, NULL, "'%s': read: %s", p->name, strerror(errno));
            if (n == 0) {
                close(p->fd[k]);
                p->fd[k] = -1;
                break;
            }
            if (k == 1) {
                buf_append(&p->err, chunk, (size_t)n); /* beyond its bound: dropped */
            } else if (buf_append(&p->out, chunk, (size_t)n) < 0) {
                return errinfo_set(ei, ERR_TOO_LARGE, NULL, "'%s' wrote more than %zu bytes",
                                   p->name, p->out.max);
            }
        }
    }
    return p->fd[0] < 0 && p->fd[1] < 0;
}

/* Reaps the child without waiting: 1 with *ret_status, 0 while it runs, ERR_IO with ei. */
static int reap(struct run_proc *p, int *ret_status, struct error_info *ei)
{
    int st;
    pid_t w = waitpid(p->pid, &st, WNOHANG);

    if (w < 0 && errno == EINTR)
        return 0;
    if (w < 0) {
        p->pid = 0; /* never signal a pid that may be someone else's by now */
        return errinfo_set(ei, ERR_IO, NULL, "'%s': waitpid: %s", p->name, strerror(errno));
    }
    if (w != p->pid)
        return 0;
    p->pid = 0;
    *ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1;
    return 1;
}

/* run_poll, waiting up to wait_ms for output. */
static int step(struct run_proc *p, int wait_ms, int *ret_status, struct error_info *ei)
{
    int rc = p->fd[0] >= 0 || p->fd[1] >= 0 ? pump(p, wait_ms, ei) : 1;

    if (rc == 1)
        rc = reap(p, ret_status, ei);
    if (rc == 0 && time_mono_ms() >= p->deadline_ms)
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "'%s' timed out after %" PRId64 " ms", p->name,
                         p->timeout_ms);
    return rc;
}

int run_poll(struct run_proc *p, int *ret_status, struct error_info *ei)
{
    return step(p, 0, ret_status, ei);
}

int run_finish(struct run_proc *p, struct run_result *r, struct error_info *ei)
{
    int status = -1, rc;

    for (;;) {
        bool reading = p->fd[0] >= 0 || p->fd[1] >= 0;
        int64_t left = p->deadline_ms - time_mono_ms();
        int wait_ms = left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;

        rc = step(p, reading ? wait_ms : 0, &status, ei);
        if (rc != 0)
            break;
        if (!reading)
            poll(NULL, 0, 1); /* output closed: its exit follows at once */
    }
    if (rc < 0) {
        run_abort(p);
        return rc;
    }
    r->status = status;
    r->out = p->out;
    r->err = p->err;
    buf_init(&p->out, r->out.max);
    buf_init(&p->err, r->err.max);
    return 0;
}

int run_command(const struct run_spec *spec, struct run_result *r, struct error_info *ei)
{
    struct run_proc p;
    int rc = run_start(spec, &p, ei);

    if (rc < 0)
        return rc;
    return run_finish(&p, r, ei);
}

void run_result_release(struct run_result *r)
{
    buf_release(&r->out);
    buf_release(&r->err);
}
