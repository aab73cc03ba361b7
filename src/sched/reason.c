/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reason.c: why a workload waits, as the one line people read (the API's
 * pending reason, the CLI). Pure: the caller gives the class's name and the
 * time; amounts are written in GPUs ("0.500" for half of one).
 */
#include "base/common.h"

#include "sched/sched.h"

/* milli-GPU as GPUs: "4", "0.500". */
static const char *gpus(char *buf, size_t size, int64_t milli)
{
    if (milli % 1000 == 0)
        snprintf(buf, size, "%" PRId64, milli / 1000);
    else
        snprintf(buf, size, "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
    return buf;
}

/* Quota and cap reasons: what stands in the way, and "can never" when the need exceeds it. */
static void format_bound(const struct sched_reason *r, const char *cls, char *buf, size_t size)
{
    char need[32], used[32], cap[32];

    gpus(need, sizeof(need), r->need);
    gpus(used, sizeof(used), r->used);
    gpus(cap, sizeof(cap), r->cap);
    if (r->code == SCHED_WAIT_GUARANTEE && r->need > r->cap)
        snprintf(buf, size,
                 "can never run as owned (P1) work: it needs %s %s, more than the project's "
                 "guarantee of %s; submit it as opportunistic or ask for a larger guarantee",
                 need, cls, cap);
    else if (r->code == SCHED_WAIT_GUARANTEE)
        snprintf(buf, size,
                 "waiting for %s %s: owned (P1) work of the project would exceed its "
                 "guarantee (%s in use + %s asked > %s)",
                 need, cls, used, need, cap);
    else if (r->code == SCHED_WAIT_LIMIT && r->need > r->cap)
        snprintf(buf, size, "can never run: it needs %s %s, more than the project's limit of %s",
                 need, cls, cap);
    else if (r->code == SCHED_WAIT_LIMIT)
        snprintf(buf, size, "waiting for %s %s: project at its limit %s/%s", need, cls, used, cap);
    else if (r->need > r->cap)
        snprintf(buf, size, "can never run: it needs %s %s, more than the organization's cap of %s",
                 need, cls, cap);
    else
        snprintf(buf, size, "waiting for %s %s: organization at its cap %s/%s", need, cls, used,
                 cap);
}

/* Automatic work: which class the rule gave it, and the figures behind that. */
static void append_auto(const struct sched_reason *r, char *buf, size_t size)
{
    char held[32], need[32], guar[32];
    size_t len = strlen(buf);

    if (r->auto_as == 0 || r->code == SCHED_WAIT_NONE || r->code == SCHED_WAIT_NEW ||
        r->code == SCHED_WAIT_BEHIND || len + 1 >= size)
        return;
    gpus(held, sizeof(held), r->auto_held);
    gpus(need, sizeof(need), r->need);
    gpus(guar, sizeof(guar), r->auto_guaranteed);
    if (r->auto_as == SCHED_P1)
        snprintf(buf + len, size - len,
                 "; automatic class: owned (P1), within the project's guarantee (%s owned in "
                 "use + %s <= %s)",
                 held, need, guar);
    else
        snprintf(buf + len, size - len,
                 "; automatic class: opportunistic (P2), beyond the project's guarantee (%s "
                 "owned in use + %s > %s)",
                 held, need, guar);
}

/* A half-life as people say it: "7 days", "36 hours", "90 minutes". */
static void period(char *buf, size_t size, int64_t ms)
{
    static const struct {
        int64_t ms;
        const char *one, *many;
    } units[] = {{INT64_C(86400000), "day", "days"},
                 {INT64_C(3600000), "hour", "hours"},
                 {INT64_C(60000), "minute", "minutes"},
                 {INT64_C(1000), "second", "seconds"}};
    for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
        if (ms >= units[i].ms && (ms % units[i].ms == 0 || i + 1 == ARRAY_SIZE(units))) {
            int64_t n = ms / units[i].ms;
            snprintf(buf, size, "%" PRId64 " %s", n, n == 1 ? units[i].one : units[i].many);
            return;
        }
    }
    snprintf(buf, size, "%" PRId64 " ms", ms);
}

/* Opportunistic work the decayed fair share put behind another project. */
static void append_ahead(const struct sched_reason *r, const char *project_name, char *buf,
                         size_t size)
{
    char when[40], id[40];
    size_t len = strlen(buf);
    if (r->ahead_project_id == 0 || len + 1 >= size)
        return;
    if (!project_name) {
        snprintf(id, sizeof(id), "project %" PRId64, r->ahead_project_id);
        project_name = id;
    }
    period(when, sizeof(when), r->ahead_period_ms);
    snprintf(buf + len, size - len, "; behind %s, which used less over the last %s", project_name,
             when);
}

void sched_reason_format(const struct sched_reason *r, const char *class_name, int64_t now_ms,
                         char *buf, size_t size)
{
    sched_reason_format_named(r, class_name, NULL, now_ms, buf, size);
}

void sched_reason_format_named(const struct sched_reason *r, const char *class_name,
                               const char *project_name, int64_t now_ms, char *buf, size_t size)
{
    char cls_buf[40], need[32], cap[32];
    const char *cls = class_name;

    if (size == 0)
        return;
    if (!cls) {
        snprintf(cls_buf, sizeof(cls_buf), "class %" PRId64, r->class_id);
        cls = cls_buf;
    }
    gpus(need, sizeof(need), r->need);
    gpus(cap, sizeof(cap), r->cap);
    buf[0] = '\0';
    switch (r->code) {
    case SCHED_WAIT_NONE:
        snprintf(buf, size, "not waiting");
        break;
    case SCHED_WAIT_NEW:
        snprintf(buf, size, "waiting for the scheduler to look at it");
        break;
    case SCHED_WAIT_GUARANTEE:
    case SCHED_WAIT_LIMIT:
    case SCHED_WAIT_ORG_CAP:
        format_bound(r, cls, buf, size);
        break;
    case SCHED_WAIT_CAPACITY:
        if (r->preemptible_at_ms > 0)
            snprintf(
                buf, size,
                "waiting for %s %s: no room now (the most one replica could get is %s); "
                "borrowed work in its way becomes preemptible in %" PRId64 " s (minimum runtime)",
                need, cls, cap,
                r->preemptible_at_ms > now_ms ? (r->preemptible_at_ms - now_ms + 999) / 1000 : 0);
        else
            snprintf(buf, size,
                     "waiting for %s %s: no room now (the most one replica could get is %s)", need,
                     cls, cap);
        break;
    case SCHED_WAIT_RECLAIM:
        snprintf(buf, size,
                 "reclaiming capacity for %s %s: %" PRId64 " preempted workload(s) are stopping",
                 need, cls, r->count);
        break;
    case SCHED_WAIT_BEHIND:
        snprintf(buf, size, "queued behind %" PRId64 " earlier workload(s) of its project",
                 r->count);
        break;
    case SCHED_WAIT_RESERVED:
        snprintf(buf, size, "%s capacity is held for workload %" PRId64 ", which waited longest",
                 cls, r->other_id);
        break;
    case SCHED_WAIT_FAIR_SHARE:
        snprintf(buf, size,
                 "waiting for its fair share of borrowed class %" PRId64
                 ": other projects borrow less for their weight",
                 r->class_id);
        break;
    case SCHED_WAIT_NO_NODES:
        gpus(need, sizeof(need), r->per_replica);
        snprintf(buf, size,
                 "no node can ever run it: %s %s per replica with its labels and pools does not "
                 "exist in the fleet",
                 need, cls);
        break;
    }
    if (r->code == SCHED_WAIT_CAPACITY)
        append_ahead(r, project_name, buf, size);
    append_auto(r, buf, size);
}
