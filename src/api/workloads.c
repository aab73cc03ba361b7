/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workloads.c: what the API adds to the generic resource handling for
 * workloads: a submit is checked against its flavor and the operator's
 * bounds on the times it may hold GPUs against a reclaim, answered with the
 * earlier workload when its idempotency key was used before, gets its
 * server-decided fields and a "submitted" event, and is handed to the
 * engine (the workloads' hooks); a cancel goes to the engine and is
 * audited; queued workloads are shown with their live queue position and
 * pending reason; the logs route reads a workload's output.
 */
#include "base/common.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "api/api-int.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "engine/engine.h"
#include "retention/retention.h"

/*
 * The earlier workload submitted with row's idempotency key in its project:
 * 1 with *ret, 0 when there is none (or row has no key), or an error. Also
 * the create_conflict hook: a racing submit with the same key that won the
 * unique index.
 */
static int find_earlier(struct req *r, const struct row *row, struct row *ret,
                        struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    const struct value *key = row_get(row, F_WORKLOADS_IDEMPOTENCY_KEY);
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    if (key->null || !key->s)
        return 0;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_WORKLOADS_PROJECT_ID, row_int(row, F_WORKLOADS_PROJECT_ID));
    store_filter_eq_str(&f, F_WORKLOADS_IDEMPOTENCY_KEY, key->s);
    f.limit = 1;
    rc = store_list(req_db(r), d, &f, &r->arena, &rows, &n, ei);
    if (rc < 0)
        return rc;
    if (n == 0)
        return 0;
    *ret = rows[0];
    return 1;
}

/*
 * The times a submitter chooses that hold GPUs against a reclaim are bounded
 * by the operator, so no borrower can make itself unpreemptible.
 */
static int check_user_times(struct req *r, const struct row *row, struct error_info *ei)
{
    int64_t min_run = row_int(row, F_WORKLOADS_MIN_RUNTIME_S);
    const struct value *grace = row_get(row, F_WORKLOADS_GRACE_S);
    const struct value *max_run = row_get(row, F_WORKLOADS_MAX_RUNTIME_S);

    if (min_run > r->api->opt.max_min_runtime_s)
        return errinfo_set(ei, ERR_INVALID, "min_runtime_s",
                           "min_runtime_s %" PRId64 " is above this server's bound of %" PRId64
                           " s (setting max-min-runtime-s)",
                           min_run, r->api->opt.max_min_runtime_s);
    if (!grace->null && grace->set && grace->i > r->api->opt.max_grace_s)
        return errinfo_set(ei, ERR_INVALID, "grace_s",
                           "grace_s %" PRId64 " is above this server's bound of %" PRId64
                           " s (setting max-grace-s)",
                           grace->i, r->api->opt.max_grace_s);
    if (!max_run->null && max_run->set && min_run > max_run->i)
        return errinfo_set(ei, ERR_INVALID, "min_runtime_s",
                           "min_runtime_s %" PRId64 " is above max_runtime_s %" PRId64, min_run,
                           max_run->i);
    return 0;
}

/*
 * A dependency is a workload the submitter may see; an after-ok one that
 * has already ended otherwise could never be met, and is refused now.
 */
static int check_dependency(struct req *r, const struct row *row, struct error_info *ei)
{
    const struct value *after = row_get(row, F_WORKLOADS_AFTER_ID);
    bool ok_only = row_int(row, F_WORKLOADS_AFTER_OK) != 0;
    struct row dep;
    const char *state;

    if (after->null || !after->set)
        return ok_only ? errinfo_set(ei, ERR_INVALID, "after_ok",
                                     "after_ok needs after_id: the workload to succeed first")
                       : 0;
    if (resource_load_visible(r, &model_workloads, after->i, &dep, NULL) < 0)
        return errinfo_set(ei, ERR_INVALID, "after_id",
                           "after_id %" PRId64 ": no such workload that you may see", after->i);
    state = row_str(&dep, F_WORKLOADS_STATE);
    if (ok_only && model_workload_state_ended(state) && strcmp(state, "succeeded") != 0)
        return errinfo_set(ei, ERR_INVALID, "after_id",
                           "workload %" PRId64 " ended %s: it can never succeed, so work after "
                           "it (after_ok) could never run",
                           after->i, state);
    return 0;
}

/* Sets what the server decides about a new workload; checks its flavor is offered. */
static int prepare(struct req *r, struct row *row, struct error_info *ei)
{
    struct row flavor;
    int rc = check_user_times(r, row, ei);
    if (rc >= 0)
        rc = check_dependency(r, row, ei);
    if (rc >= 0)
        rc = store_get(req_db(r), &model_flavors, row_int(row, F_WORKLOADS_FLAVOR_ID), &r->arena,
                       &flavor, ei);
    if (rc < 0)
        return rc;
    if (!row_int(&flavor, F_FLAVORS_ACTIVE))
        return errinfo_set(ei, ERR_INVALID, "flavor_id", "flavor '%s' is not offered any more",
                           row_get(&flavor, F_FLAVORS_NAME)->s);
    row_set_str(row, &r->arena, F_WORKLOADS_STATE, "queued");
    row_set_str(row, &r->arena, F_WORKLOADS_REASON, "submitted");
    row_set_int(row, F_WORKLOADS_USER_ID, r->who->user_id);
    row_set_null(row, F_WORKLOADS_CLUSTER_ID);
    row_set_int(row, F_WORKLOADS_SUBMITTED_MS, time_now_ms());
    row_set_null(row, F_WORKLOADS_STARTED_AT);
    row_set_null(row, F_WORKLOADS_FINISHED_AT);
    row_set_null(row, F_WORKLOADS_EXIT_CODE);
    row_set_int(row, F_WORKLOADS_PREEMPTIONS, 0);
    row_set_int(row, F_WORKLOADS_IMPORTED, 0);
    return 0;
}

/* In the submit's transaction: its "submitted" event. */
static int submitted_event(struct req *r, enum action act, const struct row *row,
                           struct error_info *ei)
{
    struct row ev = model_row_new(&model_events, &r->arena);
    int64_t id;
    if (act != ACT_CREATE)
        return 0;
    row_set_int(&ev, F_EVENTS_WORKLOAD_ID, model_row_id(row));
    row_set_int(&ev, F_EVENTS_PROJECT_ID, row_int(row, F_WORKLOADS_PROJECT_ID));
    row_set_int(&ev, F_EVENTS_AT_MS, row_int(row, F_WORKLOADS_SUBMITTED_MS));
    row_set_str(&ev, &r->arena, F_EVENTS_TYPE, "submitted");
    row_set_str(&ev, &r->arena, F_EVENTS_MESSAGE,
                arena_printf(&r->arena, "submitted by %s", r->who->name));
    return store_insert(req_db(r), &model_events, &ev, &id, ei);
}

/* POST /v1/workloads/<id>/hold and /release: the engine changes it; the audit says who asked. */
static void hold_or_release(struct req *r, bool hold)
{
    const struct resource_def *d = &model_workloads;
    int64_t id = r->path_id;
    struct error_info ei = {0};
    struct row row, after;
    int rc = resource_load_visible(r, d, id, &row, &ei);

    if (rc >= 0 && rbac_role_on_project(r, row_int(&row, F_WORKLOADS_PROJECT_ID)) < ROLE_MEMBER)
        rc = errinfo_set(&ei, ERR_FORBIDDEN, NULL,
                         "your role does not allow you to %s work of this project",
                         hold ? "hold" : "release");
    if (rc >= 0 && !r->api->opt.engine)
        rc = errinfo_set(&ei, ERR_UNAVAILABLE, NULL, "this server runs no scheduler");
    if (rc >= 0)
        rc = engine_hold(r->api->opt.engine, id, hold, r->who->name, &ei);
    if (rc >= 0) {
        rc = store_begin(req_db(r), &ei);
        if (rc >= 0)
            rc = resource_load_visible(r, d, id, &after, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), hold ? "hold" : "release", d, id, &row, &after, &ei);
        if (rc >= 0)
            rc = store_commit(req_db(r), &ei);
        if (rc < 0)
            store_rollback(req_db(r));
    }
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200, resource_encode(r, d, &after));
}

void workloads_hold(struct req *r)
{
    hold_or_release(r, true);
}

void workloads_release(struct req *r)
{
    hold_or_release(r, false);
}

void workloads_cancel(struct req *r)
{
    const struct resource_def *d = &model_workloads;
    int64_t id = r->path_id;
    struct error_info ei = {0};
    struct row row;
    int rc = resource_load_visible(r, d, id, &row, &ei);

    if (rc >= 0 && rbac_role_on_project(r, row_int(&row, F_WORKLOADS_PROJECT_ID)) < ROLE_MEMBER)
        rc = errinfo_set(&ei, ERR_FORBIDDEN, NULL,
                         "your role does not allow you to cancel work of this project");
    if (rc >= 0 && !r->api->opt.engine)
        rc = errinfo_set(&ei, ERR_UNAVAILABLE, NULL, "this server runs no scheduler");
    if (rc >= 0)
        rc = engine_cancel(r->api->opt.engine, id, &ei);
    if (rc >= 0) {
        /* The engine wrote the state change; the audit trail records who asked for it. */
        struct row after;
        rc = store_begin(req_db(r), &ei);
        if (rc >= 0)
            rc = resource_load_visible(r, d, id, &after, &ei);
        if (rc >= 0)
            rc = resource_audit(r, req_db(r), "cancel", d, id, &row, &after, &ei);
        if (rc >= 0)
            rc = store_commit(req_db(r), &ei);
        if (rc < 0)
            store_rollback(req_db(r));
        else
            row = after;
    }
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    req_reply_json(r, 202, resource_encode(r, d, &row));
}

/*
 * Before a submit is written: 1 with *ret_earlier when its idempotency key
 * was used before in the project (answer with that one), 0 to go on (the
 * server-decided fields are set), or an error (inactive flavor, ...).
 */
static int prepare_submit(struct req *r, struct row *row, struct row *ret_earlier,
                          struct error_info *ei)
{
    int rc = find_earlier(r, row, ret_earlier, ei);
    if (rc != 0)
        return rc;
    rc = prepare(r, row, ei);
    return rc < 0 ? rc : billing_check_submit(r, row, ei);
}

/* The engine takes a committed submit from its inbox. */
static void after_commit(struct req *r, enum action act, const struct row *row)
{
    if (act == ACT_CREATE && r->api->opt.engine)
        engine_submitted(r->api->opt.engine, model_row_id(row));
}

/*
 * Work waiting for room that pools closed to its project have (DESIGN
 * "lending is explicit"): which, by the names the caller may see, and that
 * their owners have not lent them. Others' pools the caller may not see are
 * only counted.
 */
static const char *closed_pools_text(struct req *r, const struct engine_pending *p)
{
    const char *names = "";
    size_t hidden = 0;

    if (p->n_closed_pools == 0)
        return p->reason;
    for (size_t i = 0; i < p->n_closed_pools; i++) {
        struct row pool;
        if (resource_load_visible(r, &model_pools, p->closed_pools[i], &pool, NULL) < 0)
            hidden++;
        else
            names = arena_printf(&r->arena, "%s%s%s", names, *names ? ", " : "",
                                 row_get(&pool, F_POOLS_NAME)->s);
    }
    if (hidden > 0)
        names = arena_printf(&r->arena, "%s%s%zu pool%s of other owners", names,
                             *names ? " and " : "", hidden, hidden == 1 ? "" : "s");
    if (p->never)
        return arena_printf(&r->arena,
                            "no GPUs this project may use can run it; %s could, but %s not lent "
                            "to this project: their owners can add it to the pool's access list",
                            names, p->n_closed_pools == 1 ? "is" : "are");
    return arena_printf(&r->arena,
                        "%s; %s %s room now but %s not lent to this project: their owners can "
                        "add it to the pool's access list",
                        p->reason, names, p->n_closed_pools == 1 ? "has" : "have",
                        p->n_closed_pools == 1 ? "is" : "are");
}

/*
 * A queued workload's live queue position and reason; a requeued victim's
 * reason says it was preempted, so that its wait is not a mystery.
 */
static void decorate(struct req *r, const struct row *row, json_t *j)
{
    struct engine_pending pending;
    int64_t preempted = row_int(row, F_WORKLOADS_PREEMPTIONS);
    if (r->api->opt.engine && strcmp(row_get(row, F_WORKLOADS_STATE)->s, "queued") == 0 &&
        engine_pending(r->api->opt.engine, model_row_id(row), &pending) == 0 && pending.queued) {
        const char *reason;
        struct row ahead;
        /* The project the fair share put first is named only to those who may see it. */
        if (pending.ahead_project_id &&
            resource_load_visible(r, &model_projects, pending.ahead_project_id, &ahead, NULL) < 0)
            memcpy(pending.reason, pending.reason_anon, sizeof(pending.reason));
        reason = closed_pools_text(r, &pending);
        if (preempted > 0)
            json_object_set_new(j, "reason",
                                json_sprintf("%s; back in its place in the queue after %" PRId64
                                             " preemption%s (gpuaas preemptions)",
                                             reason, preempted, preempted == 1 ? "" : "s"));
        else
            json_object_set_new(j, "reason", json_string(reason));
        if (pending.position > 0)
            json_object_set_new(j, "queue_position", json_integer(pending.position));
    }
}

#define LOG_READ_MAX (1 << 20)
#define LOG_TAIL_DEFAULT (64 << 10)
/* The most of a cluster-kept output read per call (it is read from its start each time). */
#define LOG_CLUSTER_MAX (16 << 20)

/*
 * A log that is not there: ERR_GONE when the retention removed it (the
 * workload ended long enough ago), saying when and why; else 0 (there is no
 * output yet, or its backend keeps none: an empty log).
 */
static int log_removed(struct req *r, int64_t id, const struct row *row, struct error_info *ei)
{
    const char *prefix = "log removed: ", *msg = NULL;
    int64_t at_ms = 0;
    char when[40];
    int rc;

    if (!model_workload_state_ended(row_get(row, F_WORKLOADS_STATE)->s))
        return 0;
    rc = retention_find_removal(req_db(r), id, &r->arena, &at_ms, &msg, ei);
    if (rc <= 0)
        return rc;
    time_format_rfc3339(at_ms / 1000, when, sizeof(when));
    if (strncmp(msg, prefix, strlen(prefix)) == 0)
        return errinfo_set(ei, ERR_GONE, NULL, "workload %" PRId64 ": log removed at %s: %s", id,
                           when, msg + strlen(prefix));
    return errinfo_set(ei, ERR_GONE, NULL, "workload %" PRId64 ": log removed at %s (%s)", id, when,
                       msg);
}

/*
 * GET /v1/workloads/<id>/logs[?offset=N|tail=N]: the workload's output as
 * {"log": text, "offset", "next_offset", "size"}; viewers of its project may
 * read it. With offset, the bytes from there (to follow a running workload);
 * else the last `tail` bytes. At most 1 MiB per call. 410 when the log of
 * ended work was removed by the retention (log-retention-days).
 */
/*
 * Output its cluster keeps (a pod's log: engine_log_reader) into *out; false
 * when the work has none there (its output is then the log file's).
 * ERR_UNAVAILABLE in *rc when the cluster could not say.
 */
static bool cluster_log(struct req *r, int64_t id, struct buf *out, int *rc, struct error_info *ei)
{
    struct backend_log *lr = NULL;

    if (!r->api->opt.engine || engine_log_reader(r->api->opt.engine, id, &lr, ei) < 0) {
        memset(ei, 0, sizeof(*ei));
        return false;
    }
    *rc = lr->read(lr, out, ei);
    lr->free(lr);
    return true;
}

/*
 * GET /v1/workloads/<id>/logs[?offset=N|tail=N]: the workload's output as
 * {"log": text, "offset", "next_offset", "size"}; viewers of its project may
 * read it. With offset, the bytes from there (to follow a running workload);
 * else the last `tail` bytes. At most 1 MiB per call. 410 when the log of
 * ended work was removed by the retention (log-retention-days). Running
 * work whose cluster keeps its output (Kubernetes: its pod log) is read
 * from there, its first LOG_CLUSTER_MAX bytes.
 */
void workloads_logs(struct req *r)
{
    int64_t id = r->path_id;
    struct error_info ei = {0};
    struct row row;
    char path[1100];
    const char *off_s = req_arg(r, "offset"), *tail_s = req_arg(r, "tail");
    int64_t offset = -1, tail = LOG_TAIL_DEFAULT, size = 0;
    char *text = NULL;
    ssize_t got = 0;
    struct stat st;
    struct buf held;
    bool from_cluster;
    int fd = -1;
    int rc = resource_load_visible(r, &model_workloads, id, &row, &ei);

    if (rc >= 0 && off_s && parse_int64(off_s, 0, INT64_MAX, &offset) < 0)
        rc = errinfo_set(&ei, ERR_INVALID, "offset", "offset must be a byte offset");
    if (rc >= 0 && tail_s && parse_int64(tail_s, 0, LOG_READ_MAX, &tail) < 0)
        rc = errinfo_set(&ei, ERR_INVALID, "tail", "tail must be 0 to %d bytes", LOG_READ_MAX);
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    buf_init(&held, LOG_CLUSTER_MAX);
    from_cluster = cluster_log(r, id, &held, &rc, &ei);
    if (from_cluster && rc < 0) {
        buf_release(&held);
        req_reply_error(r, rc, &ei);
        return;
    }
    if (from_cluster) {
        size = (int64_t)held.len;
    } else if (r->api->opt.engine && engine_log_path(r->api->opt.engine, id, path, sizeof(path))) {
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && fstat(fd, &st) == 0)
            size = (int64_t)st.st_size;
        else if (fd < 0 && errno == ENOENT && (rc = log_removed(r, id, &row, &ei)) < 0) {
            req_reply_error(r, rc, &ei);
            return;
        }
    }
    if (offset < 0)
        offset = size > tail ? size - tail : 0;
    if (offset > size)
        offset = size;
    {
        int64_t want = size - offset < LOG_READ_MAX ? size - offset : LOG_READ_MAX;
        text = arena_alloc(&r->arena, (size_t)want + 1);
        if (from_cluster && want > 0)
            memcpy(text, held.data + offset, (size_t)(got = want));
        else if (fd >= 0 && want > 0)
            got = pread(fd, text, (size_t)want, (off_t)offset);
        if (got < 0)
            got = 0;
        text[got] = '\0';
    }
    if (fd >= 0)
        close(fd);
    buf_release(&held);
    req_reply_json(r, 200,
                   json_pack("{s:I,s:s%,s:I,s:I,s:I}", "workload_id", (json_int_t)id, "log", text,
                             (size_t)got, "offset", (json_int_t)offset, "next_offset",
                             (json_int_t)(offset + got), "size", (json_int_t)size));
}

const struct resource_hooks workloads_hooks = {
    .after_commit = after_commit,
    .decorate = decorate,
    .check_create = prepare_submit,
    .create_conflict = find_earlier,
    .in_tx = submitted_event,
    .same_create = "the earlier workload: the idempotency key was used before in the project",
    .computed = {"queue_position", "integer", "place in the queue, while queued"},
};
