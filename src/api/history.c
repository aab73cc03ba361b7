/* SPDX-License-Identifier: Apache-2.0 */
/*
 * history.c: POST /v1/history, the import of finished work of the past
 * (admins). A demo, a test or a migration from another system needs a past
 * month with usage, a ledger and invoices; the daemon's clock only makes
 * the present. The import writes, in one transaction, the workloads (marked
 * imported: they never ran here, and every view labels them simulated),
 * their closed allocations on GPUs of the fleet that were free then, their
 * events, and meters each run into the usage ledger through
 * billing_meter_run, the engine's own path, so the hash chain goes on and
 * the month is invoiced with the ordinary invoice routes.
 *
 * A past month needs a price in force, and a price version may not start in
 * the past through /v1/prices. The import may carry price versions that do:
 * each only where no usage of its flavor lies in the interval it would
 * govern (from its start to the flavor's next version), so no usage already
 * metered is ever re-rated, and never inside an issued period.
 *
 * Everything is checked inside the transaction and any error rolls it all
 * back: a refused import writes nothing. docs/api.md and docs/metering.md
 * state the rules.
 */
#include "base/common.h"

#include "api/api-int.h"
#include "base/timeutil.h"
#include "billing/billing.h"

#define HISTORY_MAX_WORKLOADS 500
#define HISTORY_MAX_PRICES 32
#define HISTORY_MAX_ALLOCATIONS 4096
#define HISTORY_MAX_RUN_S (INT64_C(31) * 86400)  /* one run: at most a month */
#define HISTORY_MAX_AGE_S (INT64_C(400) * 86400) /* how far back it may start */
#define HISTORY_MAX_CLASSES 32

static const char *const end_states[] = {"succeeded", "failed", "cancelled", NULL};
static const char *const pclass_values[] = {"owned", "opportunistic", NULL};

/* One finished workload of the request; decoded by model_decode like any resource. */
static const struct field_def item_fields[] = {
    {"project_id", NULL, FT_REF, FF_REQUIRED, 0, 0, NULL, "projects", 0, NULL,
     "project the work ran for"},
    {"flavor_id", NULL, FT_REF, FF_REQUIRED, 0, 0, NULL, "flavors", 0, NULL,
     "catalog flavor of each replica"},
    {"name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "", "a label for people"},
    {"priority_class", NULL, FT_ENUM, 0, 0, 0, pclass_values, NULL, 0, "owned",
     "owned (P1) or opportunistic (P2): the class it is rated in"},
    {"replicas", NULL, FT_INT, 0, 1, 256, NULL, NULL, 1, NULL, "replicas, all held throughout"},
    {"started_at", NULL, FT_TIME, FF_REQUIRED, 0, 0, NULL, NULL, 0, NULL,
     "when it started: at most 400 days ago"},
    {"finished_at", NULL, FT_TIME, FF_REQUIRED, 0, 0, NULL, NULL, 0, NULL,
     "when it ended: after started_at, at most 31 days later, not after now"},
    {"state", NULL, FT_ENUM, 0, 0, 0, end_states, NULL, 0, "succeeded",
     "how it ended: succeeded, failed or cancelled"},
    {"exit_code", NULL, FT_INT, FF_NULLABLE, -1000, 1000, NULL, NULL, 0, NULL,
     "exit status; null for 0 when it succeeded, 1 when it failed"},
    {"gpu_ids", NULL, FT_REFLIST, 0, 0, 4096, NULL, "gpus", 0, "[]",
     "the GPUs it held, replica after replica (each replica's on one node); empty: placed "
     "first-fit on GPUs of the flavor's class that were free then"},
};

static const struct resource_def item_def = {
    .name = "history",
    .singular = "workload of the history",
    .fields = item_fields,
    .n_fields = ARRAY_SIZE(item_fields),
};

/* An interval a GPU was held, [from, to); to is INT64_MAX while still held. */
struct span {
    int64_t from, to;
};

/* An allocation this import made on a GPU: checked against the store's and each other. */
struct held {
    struct span s;
    struct held *next;
};

struct hgpu {
    int64_t id, node_id;
    bool usable; /* not split into MIG instances (those are scheduled instead) */
    bool loaded; /* busy holds its allocations from the store */
    struct span *busy;
    size_t n_busy;
    struct held *held; /* this import's */
};

struct hclass {
    int64_t class_id;
    struct hgpu *gpus; /* by node, then id: a node's GPUs are together */
    size_t n;
};

struct hist {
    struct req *r;
    struct store_conn *db;
    int64_t now_ms;
    struct hclass classes[HISTORY_MAX_CLASSES];
    size_t n_classes;
    size_t n_held;    /* allocations on GPUs so far, at most HISTORY_MAX_ALLOCATIONS */
    int64_t cpu_node; /* the node CPU-only work is put on; 0 until looked up */
};

/* One replica's placement: its node and GPUs (none for CPU-only work). */
struct placement {
    int64_t node_id;
    struct hgpu **gpus;
    size_t n;
};

/* Names the element of the request an error is about: "workloads[3].flavor_id". */
static int at_item(struct error_info *ei, const char *list, size_t i, int rc)
{
    char field[sizeof(ei->field) + 32], msg[sizeof(ei->message) + 32];
    size_t len;

    if (!ei->code)
        return rc;
    snprintf(field, sizeof(field), "%s[%zu]%s%s", list, i, ei->field[0] ? "." : "", ei->field);
    snprintf(msg, sizeof(msg), "%s[%zu]: %s", list, i, ei->message);
    len = strnlen(field, sizeof(ei->field) - 1);
    memcpy(ei->field, field, len);
    ei->field[len] = '\0';
    len = strnlen(msg, sizeof(ei->message) - 1);
    memcpy(ei->message, msg, len);
    ei->message[len] = '\0';
    return rc;
}

static const char *when(struct hist *h, int64_t ms)
{
    char *s = arena_alloc(&h->r->arena, 40);
    time_format_rfc3339(ms / 1000, s, 40);
    return s;
}

/* A referenced object that does not exist is a bad request, as everywhere in the API. */
static int get_ref(struct hist *h, const struct resource_def *d, int64_t id, const char *field,
                   struct row *ret, struct error_info *ei)
{
    int rc = store_get(h->db, d, id, &h->r->arena, ret, ei);
    if (rc == ERR_NOT_FOUND) {
        *ei = (struct error_info){0};
        return errinfo_set(ei, ERR_INVALID, field, "field '%s': no %s with id %" PRId64, field,
                           d->singular, id);
    }
    return rc;
}

/* ---- price versions that start in the past ---- */

/* The start of the flavor's first version after from_ms (INT64_MAX: none). */
static int next_version_ms(struct hist *h, int64_t flavor, int64_t from_ms, int64_t *ret,
                           struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_PRICES_FLAVOR_ID, flavor);
    rc = store_list_all(h->db, &model_prices, &f, &h->r->arena, &rows, &n, ei);
    *ret = INT64_MAX;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t t = row_int(&rows[i], F_PRICES_EFFECTIVE_FROM) * 1000;
        if (t > from_ms && t < *ret)
            *ret = t;
    }
    return rc;
}

/*
 * A version from from_ms governs [from_ms, next): refused when usage of its
 * flavor already lies there, metered (ledger) or still running, since that
 * usage would be re-rated.
 */
static int check_governs_nothing(struct hist *h, int64_t flavor, int64_t from_ms,
                                 struct error_info *ei)
{
    struct store_filter f;
    struct row *rows = NULL;
    size_t n = 0;
    int64_t next;
    int rc = next_version_ms(h, flavor, from_ms, &next, ei);

    store_filter_init(&f);
    store_filter_eq_int(&f, F_USAGE_FLAVOR_ID, flavor);
    if (rc >= 0)
        rc = store_list_all(h->db, &model_usage, &f, &h->r->arena, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (row_int(&rows[i], F_USAGE_STARTED_MS) < next &&
            row_int(&rows[i], F_USAGE_ENDED_MS) > from_ms)
            return errinfo_set(ei, ERR_CONFLICT, "effective_from",
                               "usage of this flavor is already metered from %s (ledger record "
                               "%" PRId64 "): a price version from %s would re-rate it",
                               when(h, row_int(&rows[i], F_USAGE_STARTED_MS)),
                               row_int(&rows[i], F_USAGE_SEQ), when(h, from_ms));
    }
    store_filter_init(&f);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    if (rc >= 0)
        rc = store_list_all(h->db, &model_allocations, &f, &h->r->arena, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        struct row w;
        int64_t wid = row_int(&rows[i], F_ALLOCATIONS_WORKLOAD_ID);
        if (row_int(&rows[i], F_ALLOCATIONS_STARTED_MS) >= next)
            continue;
        rc = store_get(h->db, &model_workloads, wid, &h->r->arena, &w, ei);
        if (rc >= 0 && row_int(&w, F_WORKLOADS_FLAVOR_ID) == flavor)
            return errinfo_set(ei, ERR_CONFLICT, "effective_from",
                               "workload %" PRId64 " of this flavor is running: a price version "
                               "from %s would re-rate it",
                               wid, when(h, from_ms));
    }
    return rc;
}

static int import_price(struct hist *h, json_t *item, int64_t *ret_id, struct error_info *ei)
{
    const struct resource_def *d = &model_prices;
    struct row p, flavor;
    int64_t from_ms;
    int rc = model_decode(d, item, DECODE_CREATE, &h->r->arena, &p, ei);

    if (rc < 0)
        return rc;
    row_set_int(&p, F_PRICES_CREATED_AT, h->r->now);
    from_ms = row_int(&p, F_PRICES_EFFECTIVE_FROM) * 1000;
    rc = model_check_row(d, &p, ei);
    if (rc >= 0)
        rc = get_ref(h, &model_flavors, row_int(&p, F_PRICES_FLAVOR_ID), "flavor_id", &flavor, ei);
    if (rc >= 0 && from_ms > h->now_ms)
        rc = errinfo_set(ei, ERR_INVALID, "effective_from",
                         "effective_from %s is not in the past: a version from now on is "
                         "created with POST /v1/prices",
                         when(h, from_ms));
    if (rc >= 0)
        rc = billing_check_price_list(h->r, &p, ei);
    if (rc >= 0)
        rc = check_governs_nothing(h, model_row_id(&flavor), from_ms, ei);
    if (rc >= 0)
        rc = store_insert(h->db, d, &p, ret_id, ei);
    if (rc >= 0) {
        row_set_int(&p, 0, *ret_id);
        rc = resource_audit(h->r, h->db, "import", d, *ret_id, NULL, &p, ei);
    }
    return rc;
}

/* ---- placement ---- */

static int cmp_node_then_id(const void *pa, const void *pb)
{
    const struct hgpu *a = pa, *b = pb;
    if (a->node_id != b->node_id)
        return a->node_id < b->node_id ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static struct hclass *class_gpus(struct hist *h, int64_t class_id, struct error_info *ei,
                                 int *ret_rc)
{
    struct hclass *k;
    struct store_filter f;
    struct row *rows;
    size_t n;

    *ret_rc = 0;
    for (size_t i = 0; i < h->n_classes; i++) {
        if (h->classes[i].class_id == class_id)
            return &h->classes[i];
    }
    if (h->n_classes == HISTORY_MAX_CLASSES) {
        *ret_rc = errinfo_set(ei, ERR_INVALID, NULL, "at most %d GPU classes in one import",
                              HISTORY_MAX_CLASSES);
        return NULL;
    }
    store_filter_init(&f);
    store_filter_eq_int(&f, F_GPUS_GPU_CLASS_ID, class_id);
    if ((*ret_rc = store_list_all(h->db, &model_gpus, &f, &h->r->arena, &rows, &n, ei)) < 0)
        return NULL;
    k = &h->classes[h->n_classes++];
    k->class_id = class_id;
    k->n = n;
    k->gpus = arena_calloc(&h->r->arena, n + 1, sizeof(*k->gpus));
    for (size_t i = 0; i < n; i++) {
        k->gpus[i].id = model_row_id(&rows[i]);
        k->gpus[i].node_id = row_int(&rows[i], F_GPUS_NODE_ID);
        k->gpus[i].usable = strcmp(row_get(&rows[i], F_GPUS_HEALTH)->s, "mig") != 0;
    }
    qsort(k->gpus, n, sizeof(*k->gpus), cmp_node_then_id);
    return k;
}

/* Loads the intervals the store says a GPU was (or is) held. */
static int load_busy(struct hist *h, struct hgpu *g, struct error_info *ei)
{
    const struct resource_def *d = &model_allocations;
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    if (g->loaded)
        return 0;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ALLOCATIONS_GPU_ID, g->id);
    rc = store_list_all(h->db, d, &f, &h->r->arena, &rows, &n, ei);
    if (rc < 0)
        return rc;
    g->busy = arena_calloc(&h->r->arena, n + 1, sizeof(*g->busy));
    for (size_t i = 0; i < n; i++) {
        const struct value *end = row_get(&rows[i], F_ALLOCATIONS_ENDED_MS);
        g->busy[i].from = row_int(&rows[i], F_ALLOCATIONS_STARTED_MS);
        g->busy[i].to = end->null ? INT64_MAX : end->i;
    }
    g->n_busy = n;
    g->loaded = true;
    return 0;
}

/* 1 when the GPU is free over s (in the store and in this import), 0 when not. */
static int gpu_free(struct hist *h, struct hgpu *g, struct span s, struct error_info *ei)
{
    int rc = load_busy(h, g, ei);

    if (rc < 0)
        return rc;
    for (size_t i = 0; i < g->n_busy; i++) {
        if (g->busy[i].from < s.to && s.from < g->busy[i].to)
            return 0;
    }
    for (const struct held *x = g->held; x; x = x->next) {
        if (x->s.from < s.to && s.from < x->s.to)
            return 0;
    }
    return 1;
}

static int hold(struct hist *h, struct hgpu *g, struct span s, struct error_info *ei)
{
    struct held *x;

    if (h->n_held == HISTORY_MAX_ALLOCATIONS)
        return errinfo_set(ei, ERR_INVALID, NULL, "at most %d allocations in one import",
                           HISTORY_MAX_ALLOCATIONS);
    x = arena_alloc(&h->r->arena, sizeof(*x));
    *x = (struct held){s, g->held};
    g->held = x;
    h->n_held++;
    return 0;
}

/* First fit: the first node (by id) with `per` GPUs of the class free over s; 1 when found. */
static int place_first_fit(struct hist *h, struct hclass *k, size_t per, struct span s,
                           struct placement *p, struct error_info *ei)
{
    for (size_t i = 0; i < k->n;) {
        int64_t node = k->gpus[i].node_id;
        p->n = 0;
        for (; i < k->n && k->gpus[i].node_id == node; i++) {
            int rc = 0;
            if (p->n < per && k->gpus[i].usable && (rc = gpu_free(h, &k->gpus[i], s, ei)) < 0)
                return rc;
            if (rc)
                p->gpus[p->n++] = &k->gpus[i];
        }
        if (p->n == per) {
            int rc = 0;
            p->node_id = node;
            for (size_t j = 0; rc >= 0 && j < per; j++)
                rc = hold(h, p->gpus[j], s, ei);
            return rc < 0 ? rc : 1;
        }
    }
    return 0;
}

/* The GPUs the request named for one replica: of the flavor's class, on one node, free. */
static int place_named(struct hist *h, struct hclass *k, const int64_t *ids, size_t per,
                       struct span s, struct placement *p, struct error_info *ei)
{
    p->n = 0;
    for (size_t i = 0; i < per; i++) {
        struct hgpu *g = NULL;
        int rc;
        for (size_t j = 0; j < k->n && !g; j++)
            g = k->gpus[j].id == ids[i] ? &k->gpus[j] : NULL;
        if (!g)
            return errinfo_set(ei, ERR_INVALID, "gpu_ids",
                               "gpu %" PRId64 " is no GPU of the flavor's class", ids[i]);
        if (i > 0 && g->node_id != p->node_id)
            return errinfo_set(ei, ERR_INVALID, "gpu_ids",
                               "the GPUs of one replica must be on one node (gpu %" PRId64
                               " is not on node %" PRId64 ")",
                               ids[i], p->node_id);
        p->node_id = g->node_id;
        if ((rc = gpu_free(h, g, s, ei)) < 0)
            return rc;
        if (!rc)
            return errinfo_set(ei, ERR_CONFLICT, "gpu_ids",
                               "gpu %" PRId64 " was held by other work between %s and %s", ids[i],
                               when(h, s.from), when(h, s.to));
        /* held at once: the same GPU named twice is refused as held */
        if ((rc = hold(h, g, s, ei)) < 0)
            return rc;
        p->gpus[p->n++] = g;
    }
    return 0;
}

/* CPU-only work: on the fleet's first node (CPUs are not accounted in time). */
static int place_cpu(struct hist *h, struct placement *p, struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc = 0;

    if (!h->cpu_node) {
        store_filter_init(&f);
        f.limit = 1;
        rc = store_list(h->db, &model_nodes, &f, &h->r->arena, &rows, &n, ei);
        if (rc >= 0 && n == 0)
            return errinfo_set(ei, ERR_CONFLICT, NULL, "the fleet has no node to put work on");
        if (rc >= 0)
            h->cpu_node = model_row_id(&rows[0]);
    }
    p->node_id = h->cpu_node;
    p->n = 0;
    return rc;
}

/* Parses gpu_ids (JSON text from model_decode) into ids; *ret_n 0 when empty. */
static int named_gpus(struct hist *h, const char *text, int64_t **ret, size_t *ret_n)
{
    json_t *a = json_loads(text ? text : "[]", 0, NULL), *v;
    size_t i;

    *ret_n = json_array_size(a);
    *ret = arena_calloc(&h->r->arena, *ret_n + 1, sizeof(**ret));
    json_array_foreach(a, i, v)
    {
        (*ret)[i] = json_integer_value(v);
    }
    json_decref(a);
    return 0;
}

/* Every replica's placement, or the reason there is none. */
static int place(struct hist *h, const struct row *it, const struct row *flavor, struct span s,
                 struct placement *ps, struct error_info *ei)
{
    const struct value *cls = row_get(flavor, F_FLAVORS_GPU_CLASS_ID);
    int64_t milli = row_int(flavor, F_FLAVORS_GPU_MILLI);
    int64_t replicas = model_get_int(&item_def, it, "replicas");
    size_t per = milli >= 1000 ? (size_t)(milli / 1000) : 1, n_named;
    struct hclass *k = NULL;
    int64_t *named;
    int rc = named_gpus(h, model_get(&item_def, it, "gpu_ids")->s, &named, &n_named);

    if (cls->null || milli == 0) {
        if (n_named)
            return errinfo_set(ei, ERR_INVALID, "gpu_ids", "a CPU-only flavor holds no GPUs");
        for (int64_t i = 0; rc >= 0 && i < replicas; i++)
            rc = place_cpu(h, &ps[i], ei);
        return rc;
    }
    if (n_named && n_named != (size_t)replicas * per)
        return errinfo_set(ei, ERR_INVALID, "gpu_ids",
                           "gpu_ids names %zu GPUs; %" PRId64 " replicas of this flavor hold %zu",
                           n_named, replicas, (size_t)replicas * per);
    k = class_gpus(h, cls->i, ei, &rc);
    for (int64_t i = 0; rc >= 0 && i < replicas; i++) {
        ps[i].gpus = arena_calloc(&h->r->arena, per, sizeof(*ps[i].gpus));
        if (n_named) {
            rc = place_named(h, k, named + i * (int64_t)per, per, s, &ps[i], ei);
        } else {
            rc = place_first_fit(h, k, per, s, &ps[i], ei);
            if (rc == 0)
                rc = errinfo_set(ei, ERR_CONFLICT, "started_at",
                                 "no node had %zu GPUs of the flavor's class free from %s to %s "
                                 "for replica %" PRId64 " (held by other work then)",
                                 per, when(h, s.from), when(h, s.to), i);
        }
    }
    return rc;
}

/* ---- workloads ---- */

/* Checks the times, the price in force and that no issued invoice covers them. */
static int check_item(struct hist *h, const struct row *it, int64_t org, struct span s,
                      struct error_info *ei)
{
    const struct resource_def *d = &model_invoices;
    int64_t flavor = model_get_int(&item_def, it, "flavor_id");
    struct store_filter f;
    struct row *rows = NULL;
    size_t n = 0;
    bool priced = false;
    int rc;

    if (s.to <= s.from)
        return errinfo_set(ei, ERR_INVALID, "finished_at", "finished_at must be after started_at");
    if (s.to - s.from > HISTORY_MAX_RUN_S * 1000)
        return errinfo_set(ei, ERR_INVALID, "finished_at",
                           "a run of the history lasts at most 31 days");
    if (s.to > h->now_ms)
        return errinfo_set(ei, ERR_INVALID, "finished_at",
                           "finished_at %s is in the future: only finished work is history",
                           when(h, s.to));
    if (s.from < h->now_ms - HISTORY_MAX_AGE_S * 1000)
        return errinfo_set(ei, ERR_INVALID, "started_at", "started_at %s is more than 400 days ago",
                           when(h, s.from));
    store_filter_init(&f);
    store_filter_eq_int(&f, F_PRICES_FLAVOR_ID, flavor);
    rc = store_list_all(h->db, &model_prices, &f, &h->r->arena, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        priced |= row_int(&rows[i], F_PRICES_EFFECTIVE_FROM) * 1000 <= s.from;
    if (rc >= 0 && !priced)
        return errinfo_set(ei, ERR_INVALID, "flavor_id",
                           "the flavor has no price in force at %s: add a version effective from "
                           "then or earlier in \"prices\"",
                           when(h, s.from));
    store_filter_init(&f);
    store_filter_eq_int(&f, F_INVOICES_ORG_ID, org);
    store_filter_eq_str(&f, F_INVOICES_KIND, "invoice");
    if (rc >= 0)
        rc = store_list_all(h->db, d, &f, &h->r->arena, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (row_int(&rows[i], F_INVOICES_PERIOD_START_MS) < s.to &&
            s.from < row_int(&rows[i], F_INVOICES_PERIOD_END_MS))
            return errinfo_set(ei, ERR_CONFLICT, "started_at",
                               "period %s of this organization is already invoiced (%s): its "
                               "invoice must stay reproducible",
                               row_get(&rows[i], F_INVOICES_PERIOD)->s,
                               row_get(&rows[i], F_INVOICES_NUMBER)->s);
    }
    return rc;
}

static int add_event(struct hist *h, int64_t wid, int64_t project, int64_t at_ms, const char *type,
                     const char *msg, struct error_info *ei)
{
    const struct resource_def *d = &model_events;
    struct row ev = model_row_new(d, &h->r->arena);
    int64_t id;

    row_set_int(&ev, F_EVENTS_WORKLOAD_ID, wid);
    row_set_int(&ev, F_EVENTS_PROJECT_ID, project);
    row_set_int(&ev, F_EVENTS_AT_MS, at_ms);
    row_set_str(&ev, &h->r->arena, F_EVENTS_TYPE, type);
    row_set_str(&ev, &h->r->arena, F_EVENTS_MESSAGE, msg);
    return store_insert(h->db, d, &ev, &id, ei);
}

static struct row workload_row(struct hist *h, const struct row *it, int64_t cluster, struct span s)
{
    const struct resource_def *d = &model_workloads;
    struct arena *a = &h->r->arena;
    struct row w = model_row_new(d, a);
    const char *state = model_get(&item_def, it, "state")->s;
    const struct value *code = model_get(&item_def, it, "exit_code");

    row_set_int(&w, F_WORKLOADS_PROJECT_ID, model_get_int(&item_def, it, "project_id"));
    row_set_str(&w, a, F_WORKLOADS_NAME, model_get(&item_def, it, "name")->s);
    row_set_int(&w, F_WORKLOADS_FLAVOR_ID, model_get_int(&item_def, it, "flavor_id"));
    row_set_str(&w, a, F_WORKLOADS_KIND, "batch");
    row_set_int(&w, F_WORKLOADS_REPLICAS, model_get_int(&item_def, it, "replicas"));
    row_set_str(&w, a, F_WORKLOADS_COMMAND, "");
    row_set_str(&w, a, F_WORKLOADS_IMAGE, "");
    row_set_str(&w, a, F_WORKLOADS_PRIORITY_CLASS, model_get(&item_def, it, "priority_class")->s);
    row_set_int(&w, F_WORKLOADS_PRIORITY, 0);
    row_set_null(&w, F_WORKLOADS_MAX_RUNTIME_S);
    row_set_int(&w, F_WORKLOADS_MIN_RUNTIME_S, 0);
    row_set_null(&w, F_WORKLOADS_GRACE_S);
    row_set_int(&w, F_WORKLOADS_REQUEUE, 0);
    row_set_null(&w, F_WORKLOADS_IDEMPOTENCY_KEY);
    row_set_int(&w, F_WORKLOADS_DURATION_S, (s.to - s.from) / 1000);
    row_set_str(&w, a, F_WORKLOADS_STATE, state);
    row_set_str(&w, a, F_WORKLOADS_REASON,
                arena_printf(a, "imported history (simulated): %s", state));
    row_set_int(&w, F_WORKLOADS_USER_ID, h->r->who->user_id);
    if (cluster)
        row_set_int(&w, F_WORKLOADS_CLUSTER_ID, cluster);
    else
        row_set_null(&w, F_WORKLOADS_CLUSTER_ID);
    row_set_int(&w, F_WORKLOADS_SUBMITTED_MS, s.from);
    row_set_int(&w, F_WORKLOADS_STARTED_AT, s.from / 1000);
    row_set_int(&w, F_WORKLOADS_FINISHED_AT, s.to / 1000);
    if (!code->null)
        row_set_int(&w, F_WORKLOADS_EXIT_CODE, code->i);
    else if (strcmp(state, "cancelled") == 0)
        row_set_null(&w, F_WORKLOADS_EXIT_CODE);
    else
        row_set_int(&w, F_WORKLOADS_EXIT_CODE, strcmp(state, "failed") == 0);
    row_set_int(&w, F_WORKLOADS_PREEMPTIONS, 0);
    row_set_null(&w, F_WORKLOADS_QUEUED_AFTER);
    row_set_int(&w, F_WORKLOADS_IMPORTED, 1);
    row_set_null(&w, F_WORKLOADS_AFTER_ID);
    row_set_int(&w, F_WORKLOADS_AFTER_OK, 0);
    row_set_int(&w, F_WORKLOADS_HELD, 0);
    row_set_int(&w, F_WORKLOADS_CREATED_AT, h->r->now);
    row_set_int(&w, F_WORKLOADS_UPDATED_AT, h->r->now);
    return w;
}

static int add_allocations(struct hist *h, const struct row *w, int64_t wid, int64_t class_id,
                           int64_t milli, const struct placement *ps, struct span s,
                           struct error_info *ei)
{
    const struct resource_def *d = &model_allocations;
    const char *pclass = row_get(w, F_WORKLOADS_PRIORITY_CLASS)->s;
    int64_t replicas = row_int(w, F_WORKLOADS_REPLICAS);
    int rc = 0;

    for (int64_t i = 0; rc >= 0 && i < replicas; i++) {
        for (size_t j = 0; rc >= 0 && j < (ps[i].n ? ps[i].n : 1); j++) {
            struct row al = model_row_new(d, &h->r->arena);
            int64_t id;
            row_set_int(&al, F_ALLOCATIONS_WORKLOAD_ID, wid);
            row_set_int(&al, F_ALLOCATIONS_PROJECT_ID, row_int(w, F_WORKLOADS_PROJECT_ID));
            row_set_int(&al, F_ALLOCATIONS_REPLICA, i);
            row_set_int(&al, F_ALLOCATIONS_NODE_ID, ps[i].node_id);
            if (ps[i].n) {
                row_set_int(&al, F_ALLOCATIONS_GPU_ID, ps[i].gpus[j]->id);
                row_set_int(&al, F_ALLOCATIONS_GPU_CLASS_ID, class_id);
            } else {
                row_set_null(&al, F_ALLOCATIONS_GPU_ID);
                row_set_null(&al, F_ALLOCATIONS_GPU_CLASS_ID);
            }
            row_set_int(&al, F_ALLOCATIONS_MILLI, ps[i].n ? (milli < 1000 ? milli : 1000) : 0);
            row_set_str(&al, &h->r->arena, F_ALLOCATIONS_PRIORITY_CLASS, pclass);
            row_set_int(&al, F_ALLOCATIONS_BORROWED, strcmp(pclass, "opportunistic") == 0);
            row_set_int(&al, F_ALLOCATIONS_STARTED_MS, s.from);
            row_set_int(&al, F_ALLOCATIONS_ENDED_MS, s.to);
            row_set_str(&al, &h->r->arena, F_ALLOCATIONS_END_REASON,
                        row_get(w, F_WORKLOADS_STATE)->s);
            rc = store_insert(h->db, d, &al, &id, ei);
        }
    }
    return rc;
}

/*
 * Writes one finished workload: checked, placed, its rows, its events, and
 * its run metered into the ledger as the engine meters a run that ends.
 */
static int import_workload(struct hist *h, json_t *item, int64_t *ret_id, struct error_info *ei)
{
    struct row it, prj, flavor, w, node;
    struct placement *ps;
    struct span s;
    int64_t wid, project, replicas;
    const char *state;
    int rc = model_decode(&item_def, item, DECODE_CREATE, &h->r->arena, &it, ei);

    if (rc < 0)
        return rc;
    project = model_get_int(&item_def, &it, "project_id");
    replicas = model_get_int(&item_def, &it, "replicas");
    s = (struct span){model_get_int(&item_def, &it, "started_at") * 1000,
                      model_get_int(&item_def, &it, "finished_at") * 1000};
    if ((rc = get_ref(h, &model_projects, project, "project_id", &prj, ei)) < 0 ||
        (rc = get_ref(h, &model_flavors, model_get_int(&item_def, &it, "flavor_id"), "flavor_id",
                      &flavor, ei)) < 0 ||
        (rc = check_item(h, &it, row_int(&prj, F_PROJECTS_ORG_ID), s, ei)) < 0)
        return rc;
    ps = arena_calloc(&h->r->arena, (size_t)replicas, sizeof(*ps));
    if ((rc = place(h, &it, &flavor, s, ps, ei)) < 0 ||
        (rc = store_get(h->db, &model_nodes, ps[0].node_id, &h->r->arena, &node, ei)) < 0)
        return rc;
    w = workload_row(h, &it, row_int(&node, F_NODES_CLUSTER_ID), s);
    state = row_get(&w, F_WORKLOADS_STATE)->s;
    if ((rc = store_insert(h->db, &model_workloads, &w, &wid, ei)) < 0)
        return rc;
    row_set_int(&w, 0, wid);
    rc = add_allocations(h, &w, wid, row_int(&flavor, F_FLAVORS_GPU_CLASS_ID),
                         row_int(&flavor, F_FLAVORS_GPU_MILLI), ps, s, ei);
    if (rc >= 0)
        rc = add_event(
            h, wid, project, s.from, "submitted",
            arena_printf(&h->r->arena, "imported as history by %s (simulated)", h->r->who->name),
            ei);
    if (rc >= 0)
        rc = add_event(h, wid, project, s.from, "admitted",
                       arena_printf(&h->r->arena, "imported: placed on node %s",
                                    row_get(&node, F_NODES_NAME)->s),
                       ei);
    if (rc >= 0)
        rc = add_event(h, wid, project, s.to, state, "imported history (simulated)", ei);
    if (rc >= 0)
        rc = billing_meter_run(h->db, wid, s.from, (int)replicas,
                               row_get(&w, F_WORKLOADS_PRIORITY_CLASS)->s, s.to, h->now_ms,
                               &h->r->arena, ei);
    if (rc >= 0)
        rc = resource_audit(h->r, h->db, "import", &model_workloads, wid, NULL, &w, ei);
    *ret_id = wid;
    return rc;
}

/* The body's two lists, bounded; anything else in it is an error. */
static int body_lists(json_t *body, json_t **ret_prices, json_t **ret_workloads,
                      struct error_info *ei)
{
    const char *key;
    json_t *v;

    json_object_foreach(body, key, v)
    {
        if (strcmp(key, "prices") != 0 && strcmp(key, "workloads") != 0)
            return errinfo_set(ei, ERR_INVALID, key,
                               "unknown field '%.60s': the history takes prices and workloads",
                               key);
        if (!json_is_array(v))
            return errinfo_set(ei, ERR_INVALID, key, "field '%s' must be an array, not %s", key,
                               model_json_kind(v));
    }
    *ret_prices = json_object_get(body, "prices");
    *ret_workloads = json_object_get(body, "workloads");
    if (json_array_size(*ret_workloads) < 1 ||
        json_array_size(*ret_workloads) > HISTORY_MAX_WORKLOADS)
        return errinfo_set(ei, ERR_INVALID, "workloads",
                           "field 'workloads' must hold 1 to %d finished workloads",
                           HISTORY_MAX_WORKLOADS);
    if (json_array_size(*ret_prices) > HISTORY_MAX_PRICES)
        return errinfo_set(ei, ERR_INVALID, "prices",
                           "field 'prices' holds at most %d price versions", HISTORY_MAX_PRICES);
    return 0;
}

static int import_all(struct hist *h, json_t *prices, json_t *workloads, json_t *ret_prices,
                      json_t *ret_workloads, struct error_info *ei)
{
    json_t *item;
    size_t i;
    int rc = 0;

    json_array_foreach(prices, i, item)
    {
        int64_t id = 0;
        if ((rc = import_price(h, item, &id, ei)) < 0)
            return at_item(ei, "prices", i, rc);
        json_array_append_new(ret_prices, json_integer(id));
    }
    json_array_foreach(workloads, i, item)
    {
        int64_t id = 0;
        if ((rc = import_workload(h, item, &id, ei)) < 0)
            return at_item(ei, "workloads", i, rc);
        json_array_append_new(ret_workloads, json_integer(id));
    }
    return rc;
}

void history_route_import(struct req *r)
{
    struct error_info ei = {0};
    struct hist h = {.r = r, .now_ms = time_now_ms()};
    json_t *body = NULL, *prices = NULL, *workloads = NULL;
    json_t *price_ids = json_array(), *workload_ids = json_array();
    int rc = 0;

    if (!r->who->admin)
        rc = errinfo_set(&ei, ERR_FORBIDDEN, NULL, "only admins may import history");
    if (rc >= 0)
        rc = req_json_body(r, &body, &ei);
    if (rc >= 0)
        rc = body_lists(body, &prices, &workloads, &ei);
    if (rc >= 0) {
        h.db = req_db(r);
        rc = store_begin(h.db, &ei);
    }
    if (rc >= 0)
        rc = import_all(&h, prices, workloads, price_ids, workload_ids, &ei);
    if (rc >= 0)
        rc = store_commit(h.db, &ei);
    json_decref(body);
    if (rc < 0) {
        if (h.db)
            store_rollback(h.db);
        json_decref(price_ids);
        json_decref(workload_ids);
        req_reply_error(r, rc, &ei);
        return;
    }
    req_reply_json(r, 201,
                   json_pack("{s:o,s:o,s:b}", "price_ids", price_ids, "workload_ids", workload_ids,
                             "simulated", 1));
}

/* ---- the OpenAPI description ---- */

json_t *history_openapi_body(void)
{
    /* the price versions are POST /v1/prices' bodies, but may start in the past */
    json_t *price = json_pack("{s:s}", "$ref", "#/components/schemas/prices");
    json_t *schema = json_pack(
        "{s:s,s:b,s:[s],s:{s:{s:s,s:i,s:o,s:s},s:{s:s,s:i,s:i,s:o}}}", "type", "object",
        "additionalProperties", 0, "required", "workloads", "properties", "prices", "type", "array",
        "maxItems", HISTORY_MAX_PRICES, "items", price, "description",
        "price versions of the past to rate the history at (effective_from before now; none "
        "where usage of the flavor is already metered)",
        "workloads", "type", "array", "minItems", 1, "maxItems", HISTORY_MAX_WORKLOADS, "items",
        openapi_object_schema(item_fields, ARRAY_SIZE(item_fields), NULL));
    return json_pack("{s:b,s:{s:{s:o}}}", "required", 1, "content", "application/json", "schema",
                     schema);
}
