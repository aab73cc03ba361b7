/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spawner-helper.c: the process spawner's side (see spawner.h for why it
 * exists and spawner-proto.h for what it says). It is linked into the small
 * gpuaas-spawner program, whose few mappings make each fork cheap, and into
 * the daemon as a fallback that forks it from the daemon itself. It runs in
 * a child of a multi-threaded process there: system calls and its own
 * static buffers only, never malloc or stdio. It depends on libc alone.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/cgroup.h"
#include "backend/spawner-proto.h"
#include "base/fdio.h"

#define UNKNOWN_EXIT (-1)

/* What a keeper needs between fork and exec, pointing into the request. */
struct child_plan {
    const char *program;
    const char *argv[ARGS_MAX + 1];
    char *envp[ENV_MAX + 1];
    const char *log_path;
    const char *run_path;
    char *cgroup; /* the replica's cgroup request (cgroup.h); NULL: none */
    bool switch_user;
    uid_t uid;
    gid_t gid;
};

static void child_fail_errno(const char *what, int err)
{
    static const char prefix[] = "gpuaas: could not start the command: ";
    const char *why = strerrordesc_np(err); /* untranslated: no locale, no allocation */
    fd_write_all(2, prefix, sizeof(prefix) - 1);
    fd_write_all(2, what, strlen(what));
    fd_write_all(2, ": ", 2);
    fd_write_all(2, why ? why : "unknown error", strlen(why ? why : "unknown error"));
    fd_write_all(2, "\n", 1);
    _exit(127);
}

static void child_fail(const char *what)
{
    static const char prefix[] = "gpuaas: could not start the command: ";
    fd_write_all(2, prefix, sizeof(prefix) - 1);
    fd_write_all(2, what, strlen(what));
    fd_write_all(2, "\n", 1);
    _exit(127);
}

static volatile sig_atomic_t keeper_stopping;

/* The keeper's replica cgroup, parsed from its plan; kind CGROUP_NONE: none. */
static struct cgroup_request keeper_cgroup;

/*
 * In the work's own process, between vfork and exec: into the replica's
 * cgroup, then down to the configured user (the keeper stays the daemon's
 * user, so the work can neither rewrite its run file nor kill its keeper).
 */
static void work_enter(const struct child_plan *cp)
{
    if (keeper_cgroup.place.kind != CGROUP_NONE &&
        cgroup_join(&keeper_cgroup.place, keeper_cgroup.name) < 0)
        child_fail_errno("could not join its cgroup", errno);
    if (cp->switch_user) {
        if (setgroups(1, &cp->gid) < 0 || setgid(cp->gid) < 0 || setuid(cp->uid) < 0)
            child_fail("could not switch to the configured user");
    }
}

/*
 * Once the work and, after a stop, its whole group are done: what is left in
 * its cgroup (a process that left the session) is killed and the cgroup
 * removed, a few times over a few milliseconds while the killed leave. What
 * still cannot be removed is left to the daemon, which tries again.
 */
static void keeper_clean_cgroup(void)
{
    const struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000 * 1000};
    if (keeper_cgroup.place.kind == CGROUP_NONE)
        return;
    for (int attempt = 0; attempt < 20; attempt++) {
        if (cgroup_remove(&keeper_cgroup.place, keeper_cgroup.name) == 0 || errno != EBUSY)
            return;
        if (attempt % 5 == 0)
            cgroup_kill(&keeper_cgroup.place, keeper_cgroup.name);
        nanosleep(&ms, NULL);
    }
}

static void keeper_on_term(int sig)
{
    (void)sig;
    keeper_stopping = 1;
}

/* This process's start time, /proc/self/stat field 22; 0 when unknown. */
static unsigned long long self_start_time(void)
{
    char buf[1024], *p;
    unsigned long long v = 0;
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p)
        return 0;
    for (p++; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (unsigned long long)(*p - '0');
    return v;
}

/*
 * The keeper: the process the daemon signals as a group leader. It writes
 * its pid and start time to its run file (fd 3), runs the work as its child
 * and, when the work ends, writes "<exit code> <end ms>" there too, then
 * ends the same way. It does not die of the
 * stop signals: the work gets them through the process group and decides.
 * After a stop (SIGTERM) the whole group has the grace period, not only the
 * main process: as a child subreaper the keeper inherits the work's
 * orphaned descendants and waits for them too, until they are done or the
 * daemon's SIGKILL at the end of the grace ends them all. Otherwise its
 * exit tells the spawner to kill what is left at once.
 */
__attribute__((noreturn)) static void keep(const struct child_plan *cp)
{
    struct sigaction on_term, ign, dfl;
    struct timespec ts;
    char line[64];
    size_t len;
    int status, code;
    pid_t work, got;

    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    len = put_decimal(line, (long long)getpid());
    line[len++] = ' ';
    len += put_decimal(line + len, (long long)self_start_time());
    line[len++] = '\n';
    if (pwrite(3, line, len, 0) != (ssize_t)len)
        child_fail("could not write its run file");
    /* Caught, not ignored: exec resets it for the work. Set first, so no stop is missed. */
    memset(&on_term, 0, sizeof(on_term));
    on_term.sa_handler = keeper_on_term;
    sigaction(SIGTERM, &on_term, NULL);
    /* vfork: the child only execs, and copying the keeper's mappings would cost more */
    work = vfork();
    if (work <= 0) { /* the work itself, or no keeper: then the work leads the group */
        work_enter(cp);
        execve(cp->program, (char *const *)cp->argv, cp->envp);
        child_fail_errno("could not execute it", errno);
    }
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    sigaction(SIGQUIT, &ign, NULL);
    do
        got = waitpid(work, &status, 0);
    while (got < 0 && errno == EINTR);
    code = got != work           ? UNKNOWN_EXIT
           : WIFEXITED(status)   ? WEXITSTATUS(status)
           : WIFSIGNALED(status) ? -WTERMSIG(status)
                                 : UNKNOWN_EXIT;
    clock_gettime(CLOCK_REALTIME, &ts);
    len = put_decimal(line, code);
    line[len++] = ' ';
    len += put_decimal(line + len, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    line[len++] = '\n';
    if (pwrite(3, line, len, SPAWN_RUN_END_AT) != (ssize_t)len)
        _exit(125);
    while (keeper_stopping && (waitpid(-1, NULL, 0) > 0 || errno == EINTR))
        ;
    keeper_clean_cgroup();
    if (code >= 0)
        _exit(code);
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(-code, &dfl, NULL);
    kill(getpid(), -code); /* end as the work did */
    _exit(128 - code);
}

/* Opens close-on-exec at descriptor 3 or above, so a child's dup2() to 0-2 is never a no-op. */
static int open_high(const char *path, int flags, mode_t mode)
{
    int fd = open(path, flags | O_CLOEXEC, mode), high, saved;
    if (fd < 0 || fd > 2)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    saved = errno;
    close(fd);
    errno = saved;
    return high;
}

/* In the keeper, before it starts the work: descriptors, session, the replica's cgroup. */
__attribute__((noreturn)) static void child_exec(const struct child_plan *cp)
{
    struct sigaction dfl;
    sigset_t none;
    int log_fd, null_fd, run_fd;

    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* ignored signals would stay ignored across exec */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /*
     * The files are opened here, in the keeper, not by the spawner: creating
     * a file can take long (ext4 searches past recently deleted inodes), and
     * the spawner would make every launch after this one wait for it.
     * Failing here, the work ends at once with 127, and the reason goes to
     * its log, or to the daemon's own error output when the log cannot be.
     */
    log_fd = open_high(cp->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log_fd < 0)
        child_fail_errno("could not open its log file", errno);
    if (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
        _exit(127);
    null_fd = open_high("/dev/null", O_RDONLY, 0);
    if (null_fd < 0 || dup2(null_fd, 0) < 0)
        child_fail("no /dev/null for stdin");
    run_fd = open_high(cp->run_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (run_fd < 0)
        child_fail_errno("could not open its run file", errno);
    if (setsid() < 0)
        child_fail("setsid failed");
    /* made here, not in the daemon: a keeper's time, not the scheduler's */
    if (cp->cgroup) {
        if (cgroup_request_parse(cp->cgroup, &keeper_cgroup) < 0)
            child_fail("its cgroup request is malformed");
        if (cgroup_make(&keeper_cgroup.place, keeper_cgroup.name, keeper_cgroup.cpu_milli,
                        keeper_cgroup.mem_mib) < 0)
            child_fail_errno("could not make its cgroup", errno);
    }
    /* fd 3: the run file, for the keeper only (close-on-exec for the work) */
    if (dup2(run_fd, 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
        child_fail("no run file");
    if (close_range(4, ~0U, 0) < 0) {
        for (int fd = 4; fd < 65536; fd++)
            close(fd);
    }
    keep(cp);
}

static void helper_send(int sock, const struct spawn_note *n)
{
    while (send(sock, n, sizeof(*n), MSG_NOSIGNAL) < 0) {
        if (errno != EINTR)
            _exit(0); /* the daemon is gone: what was started goes on without us */
    }
}

/* The next NUL-terminated string of [*p, end), or NULL when there is none. */
static char *take_string(char **p, char *end)
{
    char *s = *p, *nul;
    if (s >= end)
        return NULL;
    nul = memchr(s, '\0', (size_t)(end - s));
    if (!nul)
        return NULL;
    *p = nul + 1;
    return s;
}

static void helper_spawn(int sock, char *msg, size_t len)
{
    static struct child_plan cp;
    struct spawn_header h;
    struct spawn_note reply = {.type = MSG_STARTED, .step = STEP_BAD_REQUEST, .err = EINVAL};
    char *p = msg + sizeof(h), *end = msg + len, *program, *log, *runp, *procs;
    pid_t pid;

    memset(&cp, 0, sizeof(cp));
    if (len < sizeof(h))
        goto done;
    memcpy(&h, msg, sizeof(h));
    reply.seq = h.seq;
    program = take_string(&p, end);
    log = take_string(&p, end);
    runp = take_string(&p, end);
    procs = take_string(&p, end);
    if (h.type != MSG_SPAWN || !procs || h.n_args == 0 || h.n_args > ARGS_MAX || h.n_env > ENV_MAX)
        goto done;
    for (uint32_t i = 0; i < h.n_args; i++) {
        cp.argv[i] = take_string(&p, end);
        if (!cp.argv[i])
            goto done;
    }
    cp.argv[h.n_args] = NULL;
    for (uint32_t i = 0; i < h.n_env; i++) {
        cp.envp[i] = take_string(&p, end);
        if (!cp.envp[i])
            goto done;
    }
    cp.envp[h.n_env] = NULL;
    cp.program = program;
    cp.cgroup = procs[0] ? procs : NULL;
    cp.switch_user = h.switch_user != 0;
    cp.uid = (uid_t)h.uid;
    cp.gid = (gid_t)h.gid;

    cp.log_path = log;
    cp.run_path = runp;
    reply.step = STEP_FORK;
    pid = fork();
    if (pid == 0)
        child_exec(&cp);
    if (pid < 0)
        goto failed;
    reply.step = STEP_OK;
    reply.err = 0;
    reply.pid = (int32_t)pid;
    goto done;
failed:
    reply.err = errno;
done:
    helper_send(sock, &reply);
}

/*
 * Reaps every ended keeper. Its leftovers are killed first, while the
 * unreaped zombie still holds the process group id.
 */
static void helper_reap(int sock)
{
    for (;;) {
        siginfo_t si;
        int status;
        pid_t got;

        memset(&si, 0, sizeof(si));
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0)
            return;
        kill(-si.si_pid, SIGKILL);
        do
            got = waitpid(si.si_pid, &status, 0);
        while (got < 0 && errno == EINTR);
        if (got == si.si_pid) {
            struct spawn_note n = {.type = MSG_ENDED, .pid = (int32_t)got, .status = status};
            helper_send(sock, &n);
        }
    }
}

__attribute__((noreturn)) void spawner_helper_main(int sock)
{
    static char msg[MSG_MAX];
    struct sigaction ign;
    sigset_t chld;
    int sigfd;

    prctl(PR_SET_NAME, "gpuaas-spawner", 0, 0, 0);
    /* Ctrl-C in the daemon's terminal is for the daemon: we leave when it does. */
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGTERM, &ign, NULL);
    sigaction(SIGHUP, &ign, NULL);
    sigaction(SIGQUIT, &ign, NULL);
    sigaction(SIGPIPE, &ign, NULL);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_SETMASK, &chld, NULL);
    /* Keep nothing of the daemon's: not its listening socket, not its database. */
    if (dup2(sock, 3) < 0)
        _exit(1);
    sock = 3;
    if (close_range(4, ~0U, 0) < 0) {
        for (int fd = 4; fd < 65536; fd++)
            close(fd);
    }
    sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0)
        _exit(1);
    for (;;) {
        struct pollfd pfd[2] = {{.fd = sock, .events = POLLIN}, {.fd = sigfd, .events = POLLIN}};
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (pfd[1].revents & POLLIN) {
            struct signalfd_siginfo info[16];
            while (read(sigfd, info, sizeof(info)) > 0)
                ;
            helper_reap(sock);
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = recv(sock, msg, sizeof(msg), 0);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
                _exit(0); /* the daemon closed its end or died */
            if (n > 0)
                helper_spawn(sock, msg, (size_t)n);
        }
    }
}
