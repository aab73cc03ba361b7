/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-stop.c: how the Slurm backend takes jobs back: SIGTERM, then
 * SIGKILL at the end of the grace, through scancel; a job Slurm has not
 * started yet is cancelled instead, with the others in one scancel at the
 * next poll(), so taking back many queued jobs costs one run. Also the
 * signals that come due at a poll: kills after a grace, max runtimes.
 */
#include "base/common.h"

#include <signal.h>

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/timeutil.h"

#define CANCEL_BATCH 128 /* job ids in one scancel */

void slurm__cancel_later(struct slurm *s, int64_t job_id)
{
    ALLOC_GROW(s->cancels, s->n_cancels + 1, s->cap_cancels);
    s->cancels[s->n_cancels++] = job_id;
    s->cancel_retry_ms = 0;
}

/*
 * Signals a job: SIGTERM to every process of it (--full: the batch script
 * too, not only its steps), or SIGKILL to its batch script (--batch: Slurm
 * takes --full with SIGKILL for a cancel, which gives the processes
 * SIGTERM and at least 5 more seconds; killing the script ends the job and
 * Slurm then ends its other steps). A job Slurm has not started is
 * cancelled instead: scancel --signal on a pending job waits until it starts.
 */
void slurm__signal_job(struct slurm *s, struct sjob *w, int sig)
{
    const char *args[5];
    char num[32];
    struct run_result r;

    if (w->job_id <= 0)
        return; /* adopted, its job not found yet: the search decides */
    if (!w->running) {
        /*
         * Cancelled with others at the next poll(), which comes at once
         * (next_event_ms): taking back many queued jobs costs one scancel.
         */
        slurm__cancel_later(s, w->job_id);
        return;
    }
    /*
     * Cancels asked for before go first: work queued ahead behind this job
     * is taken back before it is preempted, and must be cancelled before
     * the job can end and Slurm start it.
     */
    slurm__flush_cancels(s);
    snprintf(num, sizeof(num), "%" PRId64, w->job_id);
    args[0] = sig == SIGKILL ? "--batch" : "--full";
    args[1] = sig == SIGKILL ? "--signal=KILL" : "--signal=TERM";
    args[2] = num;
    args[3] = NULL;
    if (slurm__run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) < 0)
        return; /* timed out: the next kill, or Slurm's time limit, follows */
    if (r.status != 0) {
        /* It may have ended, or not be signallable: cancel it outright. */
        run_result_release(&r);
        args[0] = num;
        args[1] = NULL;
        if (slurm__run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) < 0)
            return;
    }
    run_result_release(&r);
}

/* Cancels the jobs stop() queued, CANCEL_BATCH to a scancel (it skips ids Slurm forgot). */
void slurm__flush_cancels(struct slurm *s)
{
    size_t kept = 0;
    for (size_t at = 0; at < s->n_cancels; at += CANCEL_BATCH) {
        size_t n = s->n_cancels - at < CANCEL_BATCH ? s->n_cancels - at : CANCEL_BATCH;
        char nums[CANCEL_BATCH][24];
        const char *args[CANCEL_BATCH + 1];
        struct run_result r;
        bool failed = true;
        for (size_t i = 0; i < n; i++) {
            snprintf(nums[i], sizeof(nums[i]), "%" PRId64, s->cancels[at + i]);
            args[i] = nums[i];
        }
        args[n] = NULL;
        if (slurm__run_tool(s, T_SCANCEL, args, NULL, SMALL_MAX, &r, NULL) >= 0) {
            /* Ids Slurm forgot or that are ending fail too: those are done. */
            failed = r.status != 0 && r.err.data && !strstr(r.err.data, "Invalid job id") &&
                     !strstr(r.err.data, "already completing");
            run_result_release(&r);
        }
        /* Slurm not reached: tried again at the next poll, or a pending job could start. */
        if (failed) {
            memmove(&s->cancels[kept], &s->cancels[at], n * sizeof(*s->cancels));
            kept += n;
        }
    }
    s->n_cancels = kept;
    s->cancel_retry_ms = kept > 0 ? time_add_ms(s->last_now_ms, s->poll_interval_ms) : 0;
}

void slurm__chores(struct slurm *s, int64_t now_ms)
{
    size_t i = 0;
    slurm__flush_cancels(s);
    while (i < s->work.n) {
        struct sjob *w = work_at(s, i);
        if (w->job_id <= 0) {
            i++; /* no job yet (sbatch runs, or adopted and searched for): signals wait for it */
            continue;
        }
        if (!w->reason && w->deadline_ms <= now_ms) {
            w->reason = BACKEND_TIMEOUT;
            w->signalled_ms = now_ms;
            slurm__signal_job(s, w, SIGTERM);
            w->kill_at_ms = time_add_ms(now_ms, s->timeout_grace_ms);
        }
        if (w->kill_at_ms <= now_ms) {
            slurm__signal_job(s, w, SIGKILL);
            w->kill_at_ms = NEVER;
            s->next_query_ms = 0; /* look soon: it ends now */
        }
        i++;
    }
}
