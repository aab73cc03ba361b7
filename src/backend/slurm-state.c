/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-state.c: the Slurm backend's records of its workloads and their
 * state files. A state file, <log_dir>/<id>.slurm, holds a workload's Slurm
 * job id (what adopt needs: a restarted daemon follows its jobs again by
 * id), then what Slurm assigned, for people; it is written atomically and
 * removed once the workload's end has been reported.
 */
#include "base/common.h"

#include <fcntl.h>

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/fdio.h"
#include "base/parse.h"

#define STATE_MAGIC "gpuaas-slurm-state 1"
#define STATE_MAX 4096 /* a state file is read up to this */

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
int slurm__state_write(const struct slurm *s, const struct sjob *w)
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
int64_t slurm__state_read(const struct slurm *s, int64_t id)
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

void slurm__work_add(struct slurm *s, struct sjob *w)
{
    backend_work_add(&s->work, w);
    if (s->work.n == 1)
        s->next_query_ms = 0; /* the first job: the next poll asks Slurm */
}

/* Forgets a workload that has been reported: its state file goes, its log stays. */
static void work_finish(struct slurm *s, size_t pos)
{
    struct sjob *w = backend_work_take(&s->work, pos);
    char *path = state_path(s, w->id);
    slurm__submit_free(s, w->sub);
    unlink(path);
    free(path);
    free(w);
}

void slurm__report(struct slurm *s, size_t pos, enum backend_end how, int64_t at, int exit_code,
                   const char *message)
{
    struct sjob *w = work_at(s, pos);
    struct backend_event ev = {
        .workload_id = w->id, .at_ms = at, .how = how, .exit_code = exit_code};
    copy_str(ev.message, sizeof(ev.message), message);
    backend_ends_push(&s->work.done, &ev);
    work_finish(s, pos);
}
