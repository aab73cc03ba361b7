/* SPDX-License-Identifier: Apache-2.0 */
/*
 * whatif.c: POST /v1/whatif, what-if on real history (issue 17). The
 * period's recorded workloads (or a CSV trace) are replayed through the
 * scheduler core twice, as they are and with the request's changes, and
 * both runs are answered side by side, labelled simulated. It reads the
 * store and writes nothing: no live state, no audit entry (nothing
 * changes).
 *
 * Who: admins for the whole fleet; organization admins and managers for
 * their organizations' projects. Every run replays everyone's work (the
 * queues are shared), but a non-admin's figures cover only its own
 * projects: per project rows, the overall figures and the series are of
 * those projects alone, and nothing that sums other tenants' work (idle
 * time, the replay's counters) is shown. Quota changes may name only those
 * projects, pool changes only pools the caller can see.
 *
 * Bounds: a period of at most 31 days, at most WHATIF_API_MAX_WORKLOADS
 * workloads, WHATIF_MAX_CHANGES changes, runs of at most 31 days, one
 * what-if at a time per daemon (503 while one runs).
 */
#include "base/common.h"

#include <jansson.h>
#include <pthread.h>

#include "api/api-int.h"
#include "base/timeutil.h"
#include "billing/billing.h"
#include "engine/engine.h"
#include "sched/policies.h"
#include "whatif/whatif.h"

#define WHATIF_API_MAX_WORKLOADS 200000
#define LABEL "simulated: a replay of recorded work through the scheduler, not what happened"

static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static const char *const kinds[] = {"quota", "add_nodes", "remove_nodes", "lend_to_all", "policy",
                                    "grace", NULL};

/* The request's members; decoded by model_decode like any resource. */
enum { B_PERIOD, B_FROM, B_TO, B_TRACE, B_N };
static const struct field_def body_fields[B_N] = {
    [B_PERIOD] = {"period", NULL, FT_STRING, 0, 0, 7, NULL, NULL, 0, "",
                  "a month (YYYY-MM) to replay; or from and to"},
    [B_FROM] = {"from", NULL, FT_TIME, FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL,
                "start of the period (with to: at most 31 days)"},
    [B_TO] = {"to", NULL, FT_TIME, FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL, "end of the period"},
    [B_TRACE] = {"trace", NULL, FT_STRING, 0, 0, 64 << 20, NULL, NULL, 0, "",
                 "CSV workloads to replay instead of the store's (docs/api.md#what-if)"},
};
static const struct resource_def body_def = {
    .name = "whatif", .singular = "what-if", .fields = body_fields, .n_fields = B_N};

enum { C_KIND, C_PROJECT, C_CLASS, C_GPUS, C_COUNT, C_PER_NODE, C_POOL, C_POLICY, C_GRACE, C_N };
static const struct field_def change_fields[C_N] = {
    [C_KIND] = {"kind", NULL, FT_ENUM, FF_REQUIRED, 0, 0, kinds, NULL, 0, NULL,
                "quota, add_nodes, remove_nodes, lend_to_all, policy or grace"},
    [C_PROJECT] = {"project_id", NULL, FT_INT, 0, 0, INT64_MAX, NULL, NULL, 0, NULL,
                   "quota: the project"},
    [C_CLASS] = {"gpu_class_id", NULL, FT_INT, 0, 0, INT64_MAX, NULL, NULL, 0, NULL,
                 "quota, add_nodes, remove_nodes: the GPU class"},
    [C_GPUS] = {"gpus", NULL, FT_INT, 0, -100000, 100000, NULL, NULL, 0, NULL,
                "quota: GPUs more (or fewer) guaranteed; a set limit moves with it"},
    [C_COUNT] = {"count", NULL, FT_INT, 0, 0, WHATIF_MAX_ADD_NODES, NULL, NULL, 0, NULL,
                 "add_nodes, remove_nodes: how many nodes"},
    [C_PER_NODE] = {"gpus_per_node", NULL, FT_INT, 0, 0, SCHED_MAX_GPUS_PER_NODE, NULL, NULL, 0,
                    NULL, "add_nodes: GPUs each (0: as the class's first node)"},
    [C_POOL] = {"pool_id", NULL, FT_INT, 0, 0, INT64_MAX, NULL, NULL, 0, NULL,
                "lend_to_all: the pool; add_nodes: the new GPUs' pool (0: none)"},
    [C_POLICY] = {"policy", NULL, FT_STRING, 0, 0, 31, NULL, NULL, 0, "",
                  "policy: default or one of " SCHED_POLICY_NAMES},
    [C_GRACE] = {"grace_s", NULL, FT_INT, 0, 0, WHATIF_MAX_RUN_MS / 1000, NULL, NULL, 0, NULL,
                 "grace: every preemption's grace, seconds"},
};
static const struct resource_def change_def = {
    .name = "whatif_change", .singular = "change", .fields = change_fields, .n_fields = C_N};

/* Who the caller may ask about: NULL scope for admins, else its projects (in the arena). */
struct who {
    bool admin;
    int64_t *projects;
    size_t n_projects;
};

static bool has(const int64_t *v, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] == id)
            return true;
    }
    return false;
}

/* Organization admins' and managers' projects; none for other roles. */
static int scope_of(struct req *r, const struct engine_world *ew, struct who *ret,
                    struct error_info *ei)
{
    int64_t *orgs = NULL;
    size_t n_orgs = 0;
    struct store_filter f;
    struct row *managed = NULL;
    size_t n_managed = 0;
    int rc;

    memset(ret, 0, sizeof(*ret));
    if (r->who->admin) {
        ret->admin = true;
        return 0;
    }
    rbac_orgs_with(r, ROLE_ORG_ADMIN, &orgs, &n_orgs);
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ORGANIZATIONS_MANAGER_ID, r->who->user_id);
    rc = store_list_all(req_db(r), &model_organizations, &f, &r->arena, &managed, &n_managed, ei);
    if (rc < 0)
        return rc;
    ret->projects = arena_calloc(&r->arena, ew->w.n_projects + 1, sizeof(*ret->projects));
    for (size_t i = 0; i < ew->w.n_projects; i++) {
        int64_t org = ew->w.projects[i].org_id;
        bool mine = has(orgs, n_orgs, org);
        for (size_t k = 0; !mine && k < n_managed; k++)
            mine = model_row_id(&managed[k]) == org;
        if (mine)
            ret->projects[ret->n_projects++] = ew->w.projects[i].id;
    }
    if (ret->n_projects == 0)
        return errinfo_set(ei, ERR_FORBIDDEN, NULL,
                           "only admins, organization admins and managers may run a what-if: it "
                           "replays every tenant's work");
    return 0;
}

/* One change of the request, checked against what the caller may name. */
static int decode_change(struct req *r, const struct who *who, json_t *item,
                         struct whatif_change *c, struct error_info *ei)
{
    struct row row;
    const char *kind;
    int rc = model_decode(&change_def, item, DECODE_CREATE, &r->arena, &row, ei);

    if (rc < 0)
        return rc;
    memset(c, 0, sizeof(*c));
    kind = row_str(&row, C_KIND);
    c->project_id = row_int(&row, C_PROJECT);
    c->class_id = row_int(&row, C_CLASS);
    c->milli = row_int(&row, C_GPUS) * 1000;
    c->count = row_int(&row, C_COUNT);
    c->gpus_per_node = (int32_t)row_int(&row, C_PER_NODE);
    c->pool_id = row_int(&row, C_POOL);
    c->grace_ms = row_int(&row, C_GRACE) * 1000;
    snprintf(c->policy, sizeof(c->policy), "%s", row_str(&row, C_POLICY));
    c->kind = strcmp(kind, "quota") == 0          ? WHATIF_QUOTA
              : strcmp(kind, "add_nodes") == 0    ? WHATIF_ADD_NODES
              : strcmp(kind, "remove_nodes") == 0 ? WHATIF_REMOVE_NODES
              : strcmp(kind, "lend_to_all") == 0  ? WHATIF_LEND_TO_ALL
              : strcmp(kind, "policy") == 0       ? WHATIF_POLICY
                                                  : WHATIF_GRACE;
    /* another tenant's project or pool reads as one that does not exist */
    if (c->kind == WHATIF_QUOTA && !who->admin &&
        !has(who->projects, who->n_projects, c->project_id))
        return errinfo_set(ei, ERR_INVALID, "project_id", "no project with id %" PRId64,
                           c->project_id);
    if (c->pool_id && !who->admin) {
        struct row pool;
        if (resource_load_visible(r, &model_pools, c->pool_id, &pool, NULL) < 0)
            return errinfo_set(ei, ERR_INVALID, "pool_id", "no pool with id %" PRId64, c->pool_id);
    }
    return 0;
}

/* Names the element of the request an error is about: "changes[3].project_id". */
static int at_change(struct error_info *ei, size_t i, int rc)
{
    char field[sizeof(ei->field) + 32], msg[sizeof(ei->message) + 32];
    size_t len;
    if (!ei->code)
        return rc;
    snprintf(field, sizeof(field), "changes[%zu]%s%s", i, ei->field[0] ? "." : "", ei->field);
    snprintf(msg, sizeof(msg), "changes[%zu]: %s", i, ei->message);
    len = strnlen(field, sizeof(ei->field) - 1);
    memcpy(ei->field, field, len);
    ei->field[len] = '\0';
    len = strnlen(msg, sizeof(ei->message) - 1);
    memcpy(ei->message, msg, len);
    ei->message[len] = '\0';
    return rc;
}

static int decode_changes(struct req *r, const struct who *who, json_t *list,
                          struct whatif_change **ret, size_t *ret_n, struct error_info *ei)
{
    size_t n = json_array_size(list);
    struct whatif_change *c;
    if (list && !json_is_array(list))
        return errinfo_set(ei, ERR_INVALID, "changes", "field 'changes' must be an array");
    if (n > WHATIF_MAX_CHANGES)
        return errinfo_set(ei, ERR_INVALID, "changes", "at most %d changes in one what-if",
                           WHATIF_MAX_CHANGES);
    c = arena_calloc(&r->arena, n + 1, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        int rc = decode_change(r, who, json_array_get(list, i), &c[i], ei);
        if (rc < 0)
            return at_change(ei, i, rc);
    }
    *ret = c;
    *ret_n = n;
    return 0;
}

/* [from, to) of the request: a month, or from and to. */
static int period_of(const struct row *b, int64_t *ret_from, int64_t *ret_to, struct error_info *ei)
{
    const char *month = row_str(b, B_PERIOD);
    bool ranged = !row_is_null(b, B_FROM) || !row_is_null(b, B_TO);
    if (*month && ranged)
        return errinfo_set(ei, ERR_INVALID, "period", "give either period or from and to");
    if (*month)
        return billing_parse_period(month, ret_from, ret_to, ei);
    if (row_is_null(b, B_FROM) || row_is_null(b, B_TO))
        return errinfo_set(ei, ERR_INVALID, "period",
                           "say which period to replay: period (YYYY-MM), or from and to");
    *ret_from = row_int(b, B_FROM) * 1000;
    *ret_to = row_int(b, B_TO) * 1000;
    if (*ret_to <= *ret_from || *ret_to - *ret_from > WHATIF_MAX_PERIOD_MS)
        return errinfo_set(ei, ERR_INVALID, "to",
                           "the period must end after it starts, within "
                           "31 days");
    return 0;
}

static const char *name_of(const struct engine_name *v, size_t n, int64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].id == id)
            return v[i].name;
    }
    return "?";
}

static json_t *hours(int64_t milli_ms)
{
    return json_real((double)(milli_ms / 3600) / 1e6); /* GPU-hours to 0.001 */
}

static json_t *stats_json(const struct whatif_stats *s, const struct engine_world *ew, int digits)
{
    char money[48];
    json_t *o;
    meter_format_money(meter_round_money(s->cost_micros, digits), digits, money, sizeof(money));
    o = json_pack(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:o,s:I,s:s}", "workloads", (json_int_t)s->workloads,
        "started", (json_int_t)s->started, "not_started", (json_int_t)s->not_started, "cancelled",
        (json_int_t)s->cancelled, "wait_p50_s", (json_int_t)(s->wait_p50_ms / 1000), "wait_p95_s",
        (json_int_t)(s->wait_p95_ms / 1000), "wait_max_s", (json_int_t)(s->wait_max_ms / 1000),
        "preemptions", (json_int_t)s->preemptions, "gpu_hours_lost", hours(s->lost_milli_ms),
        "gpu_hours", hours(s->gpu_milli_ms), "cost_micros",
        (json_int_t)meter_round_money(s->cost_micros, digits), "cost", money);
    if (s->id) {
        json_object_set_new(o, "project_id", json_integer(s->id));
        json_object_set_new(o, "project",
                            json_string(name_of(ew->projects, ew->n_projects, s->id)));
    }
    return o;
}

static json_t *run_json(const struct whatif_run *run, const struct engine_world *ew,
                        const struct who *who, int digits)
{
    json_t *projects = json_array(), *series = json_array(), *o;
    int64_t period = ew->w.to_ms - ew->w.from_ms;
    for (size_t i = 0; i < run->n_projects; i++)
        json_array_append_new(projects, stats_json(&run->projects[i], ew, digits));
    for (size_t i = 0; i < run->n_series; i++)
        json_array_append_new(series, json_real((double)run->series_milli[i] / 1000.0));
    o = json_pack("{s:b,s:o,s:o,s:I,s:o,s:{s:I,s:o},s:{s:I,s:I},s:s,s:I}", "simulated", 1,
                  "overall", stats_json(&run->overall, ew, digits), "projects", projects,
                  "capacity_gpus", (json_int_t)(run->capacity_milli / 1000), "allocated_gpu_hours",
                  hours(run->allocated_milli_ms), "series", "step_s",
                  (json_int_t)(run->series_step_ms / 1000), "allocated_gpus", series,
                  "starts_reproduced", "compared", (json_int_t)run->starts_compared, "same",
                  (json_int_t)run->starts_same, "currency", run->currency, "unpriced_runs",
                  (json_int_t)run->unpriced);
    /* idle time and the replay's counters sum every tenant's work: admins only */
    json_object_set_new(o, "idle_gpu_hours", who->admin ? hours(run->idle_milli_ms) : json_null());
    json_object_set_new(
        o, "utilisation_ppm",
        who->admin && run->capacity_milli_ms > 0 && period > 0
            ? json_integer((json_int_t)((__int128)(run->capacity_milli_ms - run->idle_milli_ms) *
                                        1000000 / run->capacity_milli_ms))
            : json_null());
    if (who->admin) {
        json_object_set_new(o, "passes", json_integer(run->passes));
        json_object_set_new(o, "skipped", json_integer(run->skipped));
        json_object_set_new(o, "recorded_changes", json_integer(run->recorded_applied));
    }
    return o;
}

static int minor_digits(const struct whatif_world *w)
{
    return w->n_prices > 0 ? w->prices[0].minor_digits : 2;
}

void whatif_route(struct req *r)
{
    struct error_info ei = {0};
    json_t *body = NULL, *changes_json = NULL, *reply = NULL;
    struct row b = {0};
    struct engine_world ew;
    struct who who = {0};
    struct whatif_change *changes = NULL;
    struct whatif_options opt = {0};
    struct whatif_run base, changed;
    size_t n_changes = 0;
    int64_t from = 0, to = 0;
    bool locked = false, have_world = false, have_runs = false;
    const char *trace;
    int rc;

    memset(&ew, 0, sizeof(ew));
    rc = req_json_body(r, &body, &ei);
    if (rc >= 0) {
        changes_json = json_incref(json_object_get(body, "changes"));
        json_object_del(body, "changes");
        rc = model_decode(&body_def, body, DECODE_CREATE, &r->arena, &b, &ei);
    }
    json_decref(body);
    if (rc >= 0)
        rc = period_of(&b, &from, &to, &ei);
    if (rc >= 0) {
        locked = pthread_mutex_trylock(&one_at_a_time) == 0;
        if (!locked)
            rc = errinfo_set(&ei, ERR_BUSY, NULL, "a what-if is running; try again shortly");
    }
    trace = rc >= 0 ? row_str(&b, B_TRACE) : "";
    if (rc >= 0) {
        /* with a trace, the store's workloads are not read (an empty range) */
        rc = engine_world_read(r->api->opt.engine, req_db(r), from, *trace ? from : to, !*trace,
                               WHATIF_API_MAX_WORKLOADS, time_now_ms(), &r->arena, &ew, &ei);
        have_world = rc >= 0;
        ew.w.to_ms = to;
    }
    if (rc >= 0 && *trace)
        rc =
            engine_world_trace(&ew, trace, strlen(trace), WHATIF_API_MAX_WORKLOADS, &r->arena, &ei);
    for (size_t i = 0; rc >= 0 && *trace && i < ew.w.n_workloads; i++) {
        if (ew.w.workloads[i].spec.submit_ms < from || ew.w.workloads[i].spec.submit_ms >= to)
            rc = errinfo_set(&ei, ERR_INVALID, "trace",
                             "trace line %zu: submitted_at is outside the period", i + 2);
    }
    if (rc >= 0)
        rc = scope_of(r, &ew, &who, &ei);
    if (rc >= 0)
        rc = decode_changes(r, &who, changes_json, &changes, &n_changes, &ei);
    if (rc >= 0 && !who.admin) {
        opt.scope = who.projects;
        opt.n_scope = who.n_projects;
    }
    if (rc >= 0)
        rc = whatif_check_changes(&ew.w, changes, n_changes, &ei);
    if (rc >= 0)
        rc = whatif_replay(&ew.w, NULL, 0, &opt, &base, &ei);
    if (rc >= 0) {
        rc = whatif_replay(&ew.w, changes, n_changes, &opt, &changed, &ei);
        if (rc < 0)
            whatif_run_release(&base);
        have_runs = rc >= 0;
    }
    if (rc >= 0) {
        char f[40], t[40];
        int digits = minor_digits(&ew.w);
        time_format_rfc3339(from / 1000, f, sizeof(f));
        time_format_rfc3339(to / 1000, t, sizeof(t));
        reply = json_pack("{s:b,s:s,s:{s:s,s:s},s:s,s:I,s:o,s:o,s:o}", "simulated", 1, "label",
                          LABEL, "period", "from", f, "to", t, "source", *trace ? "trace" : "store",
                          "workloads", (json_int_t)ew.w.n_workloads, "changes",
                          changes_json ? json_deep_copy(changes_json) : json_array(), "baseline",
                          run_json(&base, &ew, &who, digits), "changed",
                          run_json(&changed, &ew, &who, digits));
        if (who.admin) {
            json_object_set_new(reply, "not_replayed", json_integer(ew.not_replayed));
            json_object_set_new(reply, "still_running", json_integer(ew.still_running));
            json_object_set_new(reply, "never_started", json_integer(ew.never_started));
        }
    }
    if (have_runs) {
        whatif_run_release(&base);
        whatif_run_release(&changed);
    }
    if (have_world)
        engine_world_release(&ew);
    if (locked)
        pthread_mutex_unlock(&one_at_a_time);
    json_decref(changes_json);
    if (rc < 0) {
        req_reply_error(r, rc, &ei);
        return;
    }
    req_reply_json(r, 200, reply);
}

/* ---- the OpenAPI description ---- */

json_t *whatif_openapi_body(void)
{
    json_t *schema = openapi_object_schema(body_fields, B_N, NULL);
    json_object_set_new(json_object_get(schema, "properties"), "changes",
                        json_pack("{s:s,s:i,s:o,s:s}", "type", "array", "maxItems",
                                  WHATIF_MAX_CHANGES, "items",
                                  openapi_object_schema(change_fields, C_N, NULL), "description",
                                  "what to change in the replay"));
    return json_pack("{s:b,s:{s:{s:o}}}", "required", 1, "content", "application/json", "schema",
                     schema);
}
