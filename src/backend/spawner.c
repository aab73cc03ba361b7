/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spawner.c: the daemon's side of the process spawner (spawner.h; the
 * helper's side is spawner-helper.c, the messages spawner-proto.h). The
 * daemon sends one SPAWN at a time and reads until its STARTED comes,
 * keeping the ENDED notes it reads meanwhile for spawner_take_end().
 */
#include "base/common.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "backend/spawner-proto.h"
#include "backend/spawner.h"
#include "base/alloc.h"

#define REPLY_WAIT_MS 10000 /* the helper answers in microseconds; this is for a wedged one */

struct spawn_end {
    pid_t pid;
    int status;
};

struct spawner {
    int fd;
    pid_t pid;
    bool alive;
    uint32_t seq;
    struct spawn_end *ends; /* told, not yet taken */
    size_t n_ends, cap_ends;
    pid_t *unwanted; /* forgotten before their end was told */
    size_t n_unwanted, cap_unwanted;
};

/* ==== the daemon's side ==== */

/* Starts program with sock as its descriptor 3. Returns its pid, or -1 (errno). */
static pid_t spawn_program(const char *program, int sock)
{
    posix_spawn_file_actions_t fa;
    char *const argv[] = {"gpuaas-spawner", NULL};
    char *const envp[] = {NULL};
    pid_t pid = -1;
    int high = fcntl(sock, F_DUPFD_CLOEXEC, 10), rc; /* never 3 itself: dup2 to 3 must act */

    if (high < 0)
        return -1;
    rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawn_file_actions_adddup2(&fa, high, 3);
        if (rc == 0)
            rc = posix_spawn(&pid, program, &fa, NULL, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
    }
    close(high);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

int spawner_start(const char *program, struct spawner **ret, struct error_info *ei)
{
    struct spawner *sp;
    int sv[2];
    pid_t pid;

    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not start the process spawner: %s",
                           strerror(errno));
    if (program) {
        pid = spawn_program(program, sv[1]);
    } else {
        pid = fork();
        if (pid == 0) {
            close(sv[0]);
            spawner_helper_main(sv[1]);
        }
    }
    close(sv[1]);
    if (pid < 0) {
        int saved = errno;
        close(sv[0]);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not start the process spawner%s%s: %s",
                           program ? " " : "", program ? program : "", strerror(saved));
    }
    sp = xcalloc(1, sizeof(*sp));
    sp->fd = sv[0];
    sp->pid = pid;
    sp->alive = true;
    *ret = sp;
    return 0;
}

static void keep_end(struct spawner *sp, pid_t pid, int status)
{
    for (size_t i = 0; i < sp->n_unwanted; i++) {
        if (sp->unwanted[i] == pid) {
            sp->unwanted[i] = sp->unwanted[--sp->n_unwanted];
            return;
        }
    }
    ALLOC_GROW(sp->ends, sp->n_ends + 1, sp->cap_ends);
    sp->ends[sp->n_ends++] = (struct spawn_end){pid, status};
}

/*
 * Reads the helper's notes. Without want_seq (0) it takes what is there and
 * returns; with it, it waits until that STARTED comes (copied to *ret).
 * Returns 0, or -1 when the helper is gone or wedged (then marked dead).
 */
static int read_notes(struct spawner *sp, uint32_t want_seq, struct spawn_note *ret)
{
    while (sp->alive) {
        struct spawn_note n;
        ssize_t got;
        if (want_seq) {
            struct pollfd pfd = {.fd = sp->fd, .events = POLLIN};
            int ready = poll(&pfd, 1, REPLY_WAIT_MS);
            if (ready < 0 && errno == EINTR)
                continue;
            if (ready <= 0) {
                sp->alive = false; /* silent for too long, or poll failed */
                kill(sp->pid, SIGKILL);
                break;
            }
        }
        got = recv(sp->fd, &n, sizeof(n), MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!want_seq)
                return 0;
            continue;
        }
        if (got != (ssize_t)sizeof(n)) {
            sp->alive = false; /* closed or failed */
            kill(sp->pid, SIGKILL);
            break;
        }
        if (n.type == MSG_ENDED)
            keep_end(sp, (pid_t)n.pid, n.status);
        else if (n.type == MSG_STARTED && want_seq && n.seq == want_seq) {
            *ret = n;
            return 0;
        }
    }
    return -1;
}

/* The request as one message; NULL when it would be larger than the helper takes. */
static char *pack(const struct spawn_request *rq, uint32_t seq, size_t *ret_len)
{
    const char *fixed[4] = {rq->program, rq->log_path, rq->run_path, rq->cgroup ? rq->cgroup : ""};
    struct spawn_header h = {.type = MSG_SPAWN,
                             .seq = seq,
                             .switch_user = rq->switch_user,
                             .uid = (uint32_t)rq->uid,
                             .gid = (uint32_t)rq->gid};
    size_t len = sizeof(h);
    char *msg, *p;

    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
        len += strlen(fixed[i]) + 1;
    for (const char *const *a = rq->argv; a && *a; a++, h.n_args++)
        len += strlen(*a) + 1;
    for (char *const *e = rq->envp; e && *e; e++, h.n_env++)
        len += strlen(*e) + 1;
    if (len > MSG_MAX || h.n_args == 0 || h.n_args > ARGS_MAX || h.n_env > ENV_MAX)
        return NULL;
    msg = xmalloc(len);
    memcpy(msg, &h, sizeof(h));
    p = msg + sizeof(h);
    for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
        p = stpcpy(p, fixed[i]) + 1;
    for (const char *const *a = rq->argv; a && *a; a++)
        p = stpcpy(p, *a) + 1;
    for (char *const *e = rq->envp; e && *e; e++)
        p = stpcpy(p, *e) + 1;
    *ret_len = len;
    return msg;
}

int spawner_spawn(struct spawner *sp, const struct spawn_request *rq, pid_t *ret_pid,
                  struct error_info *ei)
{
    struct spawn_note reply = {0}; /* read_notes fills it in when it returns 0 */
    size_t len = 0;
    char *msg;
    ssize_t sent;

    if (!sp->alive)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "the process spawner is gone");
    if (++sp->seq == 0)
        sp->seq = 1;
    msg = pack(rq, sp->seq, &len);
    if (!msg)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "the command line and its environment exceed %d bytes or %d entries",
                           MSG_MAX, ARGS_MAX);
    do
        sent = send(sp->fd, msg, len, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    free(msg);
    if (sent != (ssize_t)len) {
        sp->alive = false;
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "the process spawner is gone: %s",
                           strerror(errno));
    }
    if (read_notes(sp, sp->seq, &reply) < 0)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "the process spawner stopped answering");
    if (reply.step == STEP_FORK)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not start the command: fork: %s",
                           strerror(reply.err));
    if (reply.step != STEP_OK)
        return errinfo_set(ei, ERR_INVALID, NULL, "the process spawner refused the request");
    *ret_pid = (pid_t)reply.pid;
    return 0;
}

bool spawner_take_end(struct spawner *sp, pid_t pid, int *ret_status)
{
    for (size_t i = 0; i < sp->n_ends; i++) {
        if (sp->ends[i].pid == pid) {
            *ret_status = sp->ends[i].status;
            sp->ends[i] = sp->ends[--sp->n_ends];
            return true;
        }
    }
    return false;
}

void spawner_forget(struct spawner *sp, pid_t pid)
{
    int status;
    if (spawner_take_end(sp, pid, &status))
        return;
    ALLOC_GROW(sp->unwanted, sp->n_unwanted + 1, sp->cap_unwanted);
    sp->unwanted[sp->n_unwanted++] = pid;
}

bool spawner_alive(struct spawner *sp)
{
    read_notes(sp, 0, NULL);
    return sp->alive;
}

void spawner_stop(struct spawner *sp)
{
    if (!sp)
        return;
    close(sp->fd); /* the helper reads end-of-file and leaves */
    while (waitpid(sp->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    free(sp->ends);
    free(sp->unwanted);
    free(sp);
}
