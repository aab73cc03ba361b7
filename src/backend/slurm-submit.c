/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-submit.c: the Slurm backend's submission queue. launch() does not
 * wait for sbatch: it builds the batch job (slurm-script.c) and starts
 * sbatch with its script on stdin, or queues it while max_submits run;
 * poll() takes each answer without waiting (base/run.h's run_poll), writes
 * the job id to the state file, and starts the waiting runs. An sbatch that
 * fails, times out, or whose job cannot be recorded is reported
 * BACKEND_NOT_STARTED, its job (if any) cancelled.
 */
#include "base/common.h"

#include <fcntl.h>
#include <signal.h>

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/parse.h"

void slurm__submit_free(struct slurm *s, struct submit *sub)
{
    if (!sub)
        return;
    if (sub->running) {
        sub->running = false;
        s->n_submitting--;
        run_abort(&sub->p); /* kills it if it still runs */
    }
    for (size_t i = 0; sub->args[i]; i++)
        free(sub->args[i]);
    free(sub->env[0]);
    free(sub->script);
    free(sub->nodelist);
    free(sub);
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

/*
 * Starts the submission's sbatch with the script on its stdin (the base
 * runner holds it in an anonymous memory file), not a file in log_dir:
 * creating and deleting files there per job was most of the daemon's own
 * CPU (ext4 inode allocation), and sbatch keeps the script in Slurm anyway.
 * Returns 0 or ERR_UNAVAILABLE with ei.
 */
static int submit_start(struct slurm *s, struct submit *sub, struct error_info *ei)
{
    int rc = slurm__tool_start(s, T_SBATCH, (const char *const *)sub->args,
                               (const char *const *)sub->env, sub->script, SMALL_MAX, &sub->p, ei);

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
    struct run_result r;
    const char *args[3];
    char arg[64];

    if (job_id > 0)
        snprintf(arg, sizeof(arg), "%" PRId64, job_id);
    else
        snprintf(arg, sizeof(arg), "--name=%s%" PRId64, s->job_prefix, workload_id);
    args[0] = arg;
    args[1] = NULL;
    if (slurm__run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) == 0)
        run_result_release(&r);
}

/*
 * sbatch has answered (status) for the workload at pos: follow its job, or
 * report the launch failed. Returns whether the workload was reported (and
 * so is gone from the list).
 */
static bool submit_done(struct slurm *s, size_t pos, int status, int64_t now_ms)
{
    struct sjob *w = work_at(s, pos);
    struct submit *sub = w->sub;
    struct run_result r = {.status = status, .out = sub->p.out, .err = sub->p.err};
    int64_t job_id = status == 0 ? parse_job_id(sub->p.out.data) : -1;
    char line[160], msg[200];

    if (job_id < 0) {
        snprintf(msg, sizeof(msg), "slurm refused it on %s: %s", sub->nodelist,
                 slurm__first_line(&r, line, sizeof(line)));
        slurm__report(s, pos, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, msg);
        return true;
    }
    w->job_id = job_id;
    w->info.job_id = job_id;
    if (slurm__state_write(s, w) < 0) {
        /* Without its state file a restarted daemon could not find it: take it back. */
        snprintf(msg, sizeof(msg), "could not write its state file in '%s': %s", s->log_dir,
                 strerror(errno));
        cancel_job(s, job_id, w->id);
        slurm__report(s, pos, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, msg);
        return true;
    }
    slurm__submit_free(s, sub);
    w->sub = NULL;
    if (w->reason)
        slurm__signal_job(s, w,
                          SIGTERM); /* stopped while sbatch ran: a cancel, it is not running */
    return false;
}

/* Looks at the sbatch runs in flight without waiting; see slurm-int.h. */
void slurm__submissions(struct slurm *s, int64_t now_ms)
{
    size_t i = 0;

    while (i < s->work.n && s->n_submitting > 0) {
        struct sjob *w = work_at(s, i);
        struct submit *sub = w->sub;
        struct error_info ei = {0};
        int rc, status;

        if (!sub || !sub->running) {
            i++;
            continue;
        }
        rc = run_poll(&sub->p, &status, &ei); /* the answer, a timeout, an error */
        if (rc == 1) {
            if (!submit_done(s, i, status, now_ms))
                i++;
            continue;
        }
        if (rc < 0) {
            /* It may have submitted the job: kill it first, then cancel by name. */
            run_abort(&sub->p);
            cancel_job(s, -1, w->id);
            slurm__report(s, i, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, ei.message);
            continue;
        }
        i++;
    }
    for (i = 0; i < s->work.n && s->n_submitting < s->max_submits;) {
        struct sjob *w = work_at(s, i);
        struct error_info ei = {0};
        if (!w->sub || w->sub->started) {
            i++;
            continue;
        }
        if (submit_start(s, w->sub, &ei) < 0) {
            slurm__report(s, i, BACKEND_NOT_STARTED, now_ms, UNKNOWN_EXIT, ei.message);
            continue;
        }
        i++;
    }
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

int slurm__launch(struct slurm *s, const struct backend_launch *l, int64_t after_job,
                  int64_t now_ms, struct error_info *ei)
{
    struct submit *sub;
    struct sjob *w;
    int rc = backend_check_launch(l, ei);

    if (rc == 0)
        rc = slurm__check_launch(l, ei);
    if (rc == 0)
        rc = backend_work_check_free(&s->work, l->workload_id, "on this cluster", ei);
    if (rc < 0)
        return rc;
    if (now_ms > s->last_now_ms)
        s->last_now_ms = now_ms;

    if ((rc = slurm__batch_new(s, l, after_job, &sub, ei)) < 0)
        return rc;
    if (s->run_as && (rc = log_prepare(s, l->workload_id, ei)) < 0) {
        slurm__submit_free(s, sub);
        return rc;
    }

    /*
     * sbatch answers later (poll() takes its answer): the engine thread does
     * not wait for each, and up to max_submits run at once. The first is
     * started now, so a launch the machine refuses outright fails here.
     */
    if (s->n_submitting < s->max_submits && (rc = submit_start(s, sub, ei)) < 0) {
        slurm__submit_free(s, sub);
        return rc;
    }
    w = xcalloc(1, sizeof(*w));
    w->id = l->workload_id;
    w->launched_ms = now_ms;
    w->kill_at_ms = NEVER;
    w->max_runtime_ms = l->max_runtime_ms;
    w->deadline_ms = NEVER;
    w->sub = sub;
    slurm__work_add(s, w);
    return 0;
}
