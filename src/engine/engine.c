/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine.c: the scheduler, run for real. One thread loops: take new work
 * from the inbox, collect what backends report, run a scheduling pass,
 * write its decisions to the store in one transaction, then act on them.
 * Everything the engine knows is rebuilt from the store on start (and after
 * configuration changes), since the store holds every transition.
 */
#include "base/common.h"

#include <pthread.h>

#include <jansson.h>

#include "backend/backend.h"
#include "backend/slurm.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/timeutil.h"
#include "billing/billing.h"
#include "collect/collector.h"
#include "engine/engine.h"
#include "model/model.h"
#include "sched/sched.h"

#define MAX_EVENTS 1024

struct node_info {
    int64_t id, cluster_id;
    char *name;
    bool ready; /* state "ready": not drained or down */
};

struct gpu_info {
    int64_t id, node_id, class_id;
    int32_t index;
    char *uuid;
};

struct flavor_info {
    int64_t id, class_id;
    int32_t gpu_milli;
    int64_t cpu_milli, mem_mib;
    int64_t pools[SCHED_MAX_POOLS];
    int n_pools;
    uint32_t selector[SCHED_MAX_SELECTOR];
    int n_selector;
    bool active;
};

struct named {
    int64_t id;
    char *name;
};

/* A victim still releasing, and the ledger entry it belongs to. */
struct pending_victim {
    int64_t victim_id, ledger_id, preemptor_id;
};

struct cluster_backend {
    int64_t cluster_id;
    struct backend *b;
};

/*
 * Queue-ahead: a queued workload its backend (Slurm) holds behind a running
 * one, or behind one so held (a chain of QUEUE_AHEAD_DEPTH at most).
 */
struct staged {
    int64_t id, after_id;
    struct backend *b;
    struct sched_workload_spec spec; /* to find its own successor */
};

/* Taken back from its backend: its end is awaited, then (requeue) it is queued here again. */
struct unstaging {
    int64_t id;
    bool requeue;
};

/* Outcomes counted on /metrics, in this order. */
static const char *const outcomes[] = {"succeeded", "failed", "cancelled", "preempted"};

/* What /metrics reads of the engine; written by the engine thread after each commit. */
struct engine_metrics {
    struct metrics_histogram queue_wait; /* first admission: admitted - submitted */
    struct metrics_histogram reclaim;    /* decided -> the last victim released */
    uint64_t preemptions_reclaim;        /* ledger entries with rule "reclaim" */
    uint64_t outcomes[ARRAY_SIZE(outcomes)];
};

static const int64_t queue_wait_bounds[] = {
    1000000,    5000000,    15000000,    30000000,    60000000,    300000000,  900000000,
    1800000000, 3600000000, 10800000000, 21600000000, 43200000000, 86400000000};
static const int64_t reclaim_bounds[] = {1000000,  2000000,   5000000,   10000000, 30000000,
                                         60000000, 120000000, 300000000, 600000000};

/* A run whose every GPU the telemetry calls idle-allocated, since when, what was done. */
struct idle_track {
    int64_t workload_id;
    int64_t since_ms;
    bool opportunistic, notified, stopped, seen;
};

struct engine {
    struct store *store;
    struct store_conn *db;
    struct engine_options opt;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping, started, reload;
    uint64_t iterations;
    int64_t metered_through; /* month start up to which open runs are cut in the ledger */
    int64_t budgets_checked; /* when budgets were last checked, ms */
    struct idle_track *idle;  /* running work whose GPUs are all idle-allocated */
    size_t n_idle, cap_idle;
    int64_t idle_checked;
    int64_t slurm_synced; /* when Slurm's node records were last read */
    uint64_t local_runs;  /* the collector's good local runs when local GPUs were last synced */
    bool local_due;       /* the fleet was loaded: sync local GPUs on the next round */
    bool local_host_warned;
    struct engine_metrics metrics;

    struct sched *sched;
    struct cluster_backend *backends;
    size_t n_backends, cap_backends;
    struct node_info *nodes;
    size_t n_nodes;
    struct gpu_info *gpus;
    size_t n_gpus;
    struct flavor_info *flavors;
    size_t n_flavors;
    struct named *classes, *projects;
    size_t n_classes, n_projects, cap_classes, cap_projects;
    char **labels;
    size_t n_labels;

    /*
     * Submissions and wake-ups go through wake_lock, never the engine's lock,
     * so an API thread never waits for a pass, a sbatch or a squeue to end.
     */
    pthread_mutex_t wake_lock;
    pthread_cond_t wake_cond;
    bool woken;      /* something for the engine: it does not sleep */
    int64_t *inbox;  /* submitted, not yet given to the scheduler */
    size_t n_inbox, cap_inbox;
    int64_t *cancelling;
    size_t n_cancelling, cap_cancelling;
    struct pending_victim *victims;
    size_t n_victims, cap_victims;
    /*
     * Queue-ahead (Slurm): workloads out of the scheduler's queue because
     * their backend holds them behind a running workload (the store has
     * queued_after), those being taken back, and those never to be queued
     * ahead again (their backend refused it once).
     */
    struct staged *staged;
    size_t n_staged, cap_staged;
    struct unstaging *unstaging;
    size_t n_unstaging, cap_unstaging;
    int64_t *no_stage;
    size_t n_no_stage, cap_no_stage;
    /* Changes to apply in place: copies of the rows, in a's memory. */
    struct change {
        const struct resource_def *def;
        struct row row;
        bool deleted;
    } *changes;
    size_t n_changes, cap_changes;
    struct arena change_arena;

    struct sched_decisions dec;
};

/* ---- small helpers ---- */

#define APPEND(arr, n, cap)                                                                    \
    ((n) == (cap) ? ((cap) = (cap) ? (cap) * 2 : 16,                                           \
                     (arr) = xreallocarray((arr), (cap), sizeof(*(arr))), 0)                   \
                  : 0,                                                                         \
     &(arr)[(n)++])

/* Queue-ahead lists (see struct engine): small, walked linearly. */
static struct staged *staged_find(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_staged; i++) {
        if (e->staged[i].id == id)
            return &e->staged[i];
    }
    return NULL;
}

static struct staged *staged_behind(struct engine *e, int64_t after_id)
{
    for (size_t i = 0; i < e->n_staged; i++) {
        if (e->staged[i].after_id == after_id)
            return &e->staged[i];
    }
    return NULL;
}

static void staged_remove(struct engine *e, int64_t id)
{
    struct staged *st = staged_find(e, id);
    if (st)
        *st = e->staged[--e->n_staged];
}

static struct unstaging *unstaging_find(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_unstaging; i++) {
        if (e->unstaging[i].id == id)
            return &e->unstaging[i];
    }
    return NULL;
}

/*
 * The running workload at the head of a chain of staged work (id itself
 * when not staged); *ret_depth (may be NULL): how many staged links lead there.
 */
static int64_t staged_root(struct engine *e, int64_t id, size_t *ret_depth)
{
    const struct staged *st;
    size_t depth = 0;
    for (; (st = staged_find(e, id)) && depth <= e->n_staged; depth++)
        id = st->after_id;
    if (ret_depth)
        *ret_depth = depth;
    return id;
}

/* Whether the engine holds id out of the scheduler: queued ahead, or being taken back. */
static bool held_aside(struct engine *e, int64_t id)
{
    return staged_find(e, id) || unstaging_find(e, id);
}

static bool no_stage(const struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_no_stage; i++) {
        if (e->no_stage[i] == id)
            return true;
    }
    return false;
}

static const struct value *get(const struct resource_def *def, const struct row *r,
                               const char *f)
{
    return model_get(def, r, f);
}

static int64_t get_i(const struct resource_def *def, const struct row *r, const char *f)
{
    const struct value *v = model_get(def, r, f);
    return v->null ? 0 : v->i;
}

static const char *get_s(const struct resource_def *def, const struct row *r, const char *f)
{
    const struct value *v = model_get(def, r, f);
    return v->null || !v->s ? "" : v->s;
}

static void set_i(const struct resource_def *def, struct row *r, const char *f, int64_t i)
{
    model_set_int(r, model_field_index(def, f), i);
}

static void set_s(const struct resource_def *def, struct arena *a, struct row *r, const char *f,
                  const char *s)
{
    model_set_str(r, a, model_field_index(def, f), s);
}

static void set_null(const struct resource_def *def, struct row *r, const char *f)
{
    model_set_null(r, model_field_index(def, f));
}

/*
 * Sorted-by-id lookup over an array of structs whose first member is their
 * int64 id: the store lists in id order and new rows get higher ids.
 */
static void *find_by_id(const void *base, size_t n, size_t size, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *p = (const char *)base + mid * size;
        int64_t have;
        memcpy(&have, p, sizeof(have));
        if (have == id)
            return (void *)p;
        if (have < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

#define FIND_BY_ID(arr, n, want) find_by_id((arr), (n), sizeof(*(arr)), (want))

static const char *class_name(const struct engine *e, int64_t id)
{
    const struct named *n = FIND_BY_ID(e->classes, e->n_classes, id);
    return n ? n->name : "?";
}

static const char *project_name(const struct engine *e, int64_t id)
{
    const struct named *n = FIND_BY_ID(e->projects, e->n_projects, id);
    return n ? n->name : "?";
}

static uint32_t intern_label(struct engine *e, const char *key, const char *val)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "%s=%s", key, val);
    for (size_t i = 0; i < e->n_labels; i++) {
        if (strcmp(e->labels[i], buf) == 0)
            return (uint32_t)i + 1;
    }
    e->labels = xreallocarray(e->labels, e->n_labels + 1, sizeof(char *));
    e->labels[e->n_labels++] = xstrdup(buf);
    return (uint32_t)e->n_labels;
}

/* Interns a labels JSON object ({"rack":"r1"}) into ids; returns how many fit in max. */
static int intern_labels(struct engine *e, const char *json, uint32_t *out, int max)
{
    json_t *obj = json_loads(json && *json ? json : "{}", 0, NULL), *v;
    const char *k;
    int n = 0;
    json_object_foreach(obj, k, v)
    {
        if (n < max && json_is_string(v))
            out[n++] = intern_label(e, k, json_string_value(v));
    }
    json_decref(obj);
    return n;
}

/* Every row of a resource, or those in one state. */
static int load_all(struct engine *e, const struct resource_def *def, const char *state,
                    struct arena *a, struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    if (state)
        store_filter_eq_str(&f, model_field_index(def, "state"), state);
    return store_list_all(e->db, def, &f, a, ret, ret_n, ei);
}

/* Rows whose field is null (open allocations, unreleased preemptions). */
static int load_open(struct engine *e, const struct resource_def *def, const char *null_field,
                     struct arena *a, struct row **ret, size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    store_filter_eq_null(&f, model_field_index(def, null_field));
    return store_list_all(e->db, def, &f, a, ret, ret_n, ei);
}

/* ---- loading the scheduler from the store ---- */

static void forget_fleet(struct engine *e)
{
    for (size_t i = 0; i < e->n_nodes; i++)
        free(e->nodes[i].name);
    for (size_t i = 0; i < e->n_gpus; i++)
        free(e->gpus[i].uuid);
    for (size_t i = 0; i < e->n_classes; i++)
        free(e->classes[i].name);
    for (size_t i = 0; i < e->n_projects; i++)
        free(e->projects[i].name);
    free(e->nodes);
    free(e->gpus);
    free(e->classes);
    free(e->projects);
    free(e->flavors);
    e->nodes = NULL;
    e->gpus = NULL;
    e->classes = e->projects = NULL;
    e->flavors = NULL;
    e->n_nodes = e->n_gpus = e->n_classes = e->n_projects = e->n_flavors = 0;
    e->cap_classes = e->cap_projects = 0;
    e->n_victims = 0;
    sched_free(e->sched);
    e->sched = NULL;
}

static struct backend *backend_of(struct engine *e, int64_t cluster_id)
{
    for (size_t i = 0; i < e->n_backends; i++) {
        if (e->backends[i].cluster_id == cluster_id)
            return e->backends[i].b;
    }
    return NULL;
}

/* The labels (JSON text) of a node among rows listed in id order. */
static const char *node_labels(const struct row *rows, size_t n, int64_t node_id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t id = model_row_id(&rows[mid]);
        if (id == node_id)
            return get_s(&model_nodes, &rows[mid], "labels");
        if (id < node_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return "{}";
}

static int load_fleet(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *rows, *pools, *node_rows = NULL;
    size_t n, n_pools, n_node_rows = 0;
    int rc;

    rc = load_all(e, &model_gpu_classes, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        sched_add_class(e->sched, id);
        *APPEND(e->classes, e->n_classes, e->cap_classes) =
            (struct named){id, xstrdup(get_s(&model_gpu_classes, &rows[i], "name"))};
    }
    if (rc >= 0)
        rc = load_all(e, &model_clusters, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        const char *kind = get_s(&model_clusters, &rows[i], "backend");
        struct backend *b = NULL;
        if (backend_of(e, id))
            continue;
        if (strcmp(kind, "sim") == 0) {
            struct sim_options so = {e->opt.sim_speed, 2000};
            b = backend_sim_new(id, &so);
        } else if (strcmp(kind, "local") == 0) {
            struct local_options lo = {.log_dir = e->opt.log_dir ? e->opt.log_dir : "gpuaas-logs",
                                       .cgroup_root = e->opt.cgroup_root,
                                       .run_uid = e->opt.run_uid,
                                       .run_gid = e->opt.run_gid,
                                       .timeout_grace_ms = e->opt.default_grace_ms,
                                       .spawner = e->opt.spawner,
                                       .podman = e->opt.podman ? e->opt.podman : ""};
            struct error_info lei = {0};
            const char *detail = NULL;
            b = backend_local_new(id, &lo, &lei);
            if (!b)
                log_error("could not start the local backend", "cluster",
                          get_s(&model_clusters, &rows[i], "name"), "error", lei.message);
            else if (!backend_local_cgroups(b, &detail))
                log_warn("local cluster runs work without cgroup limits", "cluster",
                         get_s(&model_clusters, &rows[i], "name"), "why", detail);
            else
                log_info("local cluster runs work in cgroups with the flavor's limits", "cluster",
                         get_s(&model_clusters, &rows[i], "name"), "cgroups", detail);
        } else if (strcmp(kind, "slurm") == 0) {
            /* The cluster's endpoint is the slurm.conf its tools read ("": their default). */
            struct slurm_options so = {.log_dir = e->opt.log_dir ? e->opt.log_dir : "gpuaas-logs",
                                       .conf = get_s(&model_clusters, &rows[i], "endpoint"),
                                       .poll_interval_ms = e->opt.slurm_poll_ms,
                                       .run_uid = e->opt.run_uid,
                                       .run_gid = e->opt.run_gid,
                                       .timeout_grace_ms = e->opt.default_grace_ms};
            struct error_info sei = {0};
            b = backend_slurm_new(id, &so, &sei);
            if (!b)
                log_error("could not start the slurm backend", "cluster",
                          get_s(&model_clusters, &rows[i], "name"), "error", sei.message);
            else if (backend_slurm_sacct(b))
                log_info("slurm cluster: jobs the controller has forgotten are looked up with "
                         "sacct (slurmdbd), then in its jobcomp file",
                         "cluster", get_s(&model_clusters, &rows[i], "name"), "file",
                         backend_slurm_jobcomp(b) ? backend_slurm_jobcomp(b) : "none");
            else if (backend_slurm_jobcomp(b))
                log_info("slurm cluster: jobs the controller has forgotten are looked up in its "
                         "jobcomp file",
                         "cluster", get_s(&model_clusters, &rows[i], "name"), "file",
                         backend_slurm_jobcomp(b));
            else
                log_warn("slurm cluster: jobs that end while gpuaasd is down longer than the "
                         "controller's MinJobAge will be reported lost (no slurmdbd accounting "
                         "with sacct, no readable jobcomp/filetxt file)",
                         "cluster", get_s(&model_clusters, &rows[i], "name"));
        }
        /* kubernetes backends are not built yet: their nodes take no work. */
        if (b) {
            struct cluster_backend *cb = APPEND(e->backends, e->n_backends, e->cap_backends);
            cb->cluster_id = id;
            cb->b = b;
        }
    }
    if (rc >= 0)
        rc = load_all(e, &model_pools, NULL, a, &pools, &n_pools, ei);
    for (size_t i = 0; rc >= 0 && i < n_pools; i++) {
        const struct row *p = &pools[i];
        json_t *ap = json_loads(get_s(&model_pools, p, "access_project_ids"), 0, NULL);
        json_t *ao = json_loads(get_s(&model_pools, p, "access_org_ids"), 0, NULL);
        int64_t aps[256], aos[256];
        size_t nap = 0, nao = 0, k;
        json_t *v;
        json_array_foreach(ap, k, v) if (nap < 256) aps[nap++] = json_integer_value(v);
        json_array_foreach(ao, k, v) if (nao < 256) aos[nao++] = json_integer_value(v);
        struct sched_pool_spec ps = {.id = model_row_id(p),
                                     .owner_project_id = get_i(&model_pools, p, "owner_project_id"),
                                     .owner_org_id = get_i(&model_pools, p, "owner_org_id"),
                                     .access_project_ids = aps,
                                     .n_access_projects = nap,
                                     .access_org_ids = aos,
                                     .n_access_orgs = nao};
        sched_set_pool(e->sched, &ps);
        json_decref(ap);
        json_decref(ao);
    }
    if (rc >= 0)
        rc = load_all(e, &model_nodes, NULL, a, &node_rows, &n_node_rows, ei);
    e->nodes = xcalloc(n_node_rows + 1, sizeof(*e->nodes));
    for (size_t i = 0; rc >= 0 && i < n_node_rows; i++) {
        const struct row *r = &node_rows[i];
        struct sched_node_spec ns = {.id = model_row_id(r)};
        const char *state = get_s(&model_nodes, r, "state");
        ns.cluster_id = get_i(&model_nodes, r, "cluster_id");
        if (!backend_of(e, ns.cluster_id))
            continue;
        ns.cpu_milli = get_i(&model_nodes, r, "cpu_milli");
        ns.mem_mib = get_i(&model_nodes, r, "memory_mib");
        ns.n_labels = intern_labels(e, get_s(&model_nodes, r, "labels"), ns.labels,
                                    SCHED_MAX_LABELS);
        sched_add_node(e->sched, &ns);
        if (strcmp(state, "ready") != 0)
            sched_set_node_state(e->sched, ns.id,
                                 strcmp(state, "drain") == 0 ? SCHED_NODE_DRAIN : SCHED_NODE_DOWN);
        e->nodes[e->n_nodes++] =
            (struct node_info){ns.id, ns.cluster_id, xstrdup(get_s(&model_nodes, r, "name")),
                               strcmp(state, "ready") == 0};
    }
    if (rc >= 0)
        rc = load_all(e, &model_gpus, NULL, a, &rows, &n, ei);
    e->gpus = xcalloc(n + 1, sizeof(*e->gpus));
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        const struct row *r = &rows[i];
        int64_t node_id = get_i(&model_gpus, r, "node_id"), pool = 0;
        const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, node_id);
        struct gpu_info *gi;
        if (!ni || strcmp(get_s(&model_gpus, r, "health"), "failed") == 0 ||
            strcmp(get_s(&model_gpus, r, "health"), "down") == 0 ||
            strcmp(get_s(&model_gpus, r, "health"), "mig") == 0) /* its instances are rows */
            continue;
        pool = model_pool_of_gpu(pools, n_pools, model_row_id(r), ni->cluster_id,
                                 node_labels(node_rows, n_node_rows, node_id));
        sched_add_gpu(e->sched, node_id, model_row_id(r), get_i(&model_gpus, r, "gpu_class_id"),
                      pool);
        gi = &e->gpus[e->n_gpus++];
        gi->id = model_row_id(r);
        gi->node_id = node_id;
        gi->class_id = get_i(&model_gpus, r, "gpu_class_id");
        gi->index = (int32_t)get_i(&model_gpus, r, "index");
        gi->uuid = xstrdup(get_s(&model_gpus, r, "uuid"));
    }
    e->local_due = true; /* a local cluster may be new */
    return rc;
}

static void set_flavor(struct engine *e, const struct row *r)
{
    struct flavor_info *f = FIND_BY_ID(e->flavors, e->n_flavors, model_row_id(r));
    json_t *pl;
    json_t *v;
    size_t k;
    if (!f) { /* new flavors get higher ids: append keeps the array sorted */
        e->flavors = xreallocarray(e->flavors, e->n_flavors + 1, sizeof(*e->flavors));
        f = &e->flavors[e->n_flavors++];
    }
    memset(f, 0, sizeof(*f));
    f->id = model_row_id(r);
    f->class_id = get_i(&model_flavors, r, "gpu_class_id");
    f->gpu_milli = (int32_t)get_i(&model_flavors, r, "gpu_milli");
    f->cpu_milli = get_i(&model_flavors, r, "vcpus") * 1000;
    f->mem_mib = get_i(&model_flavors, r, "memory_mib");
    f->active = get_i(&model_flavors, r, "active");
    pl = json_loads(get_s(&model_flavors, r, "pool_ids"), 0, NULL);
    json_array_foreach(pl, k, v)
    {
        if (f->n_pools < SCHED_MAX_POOLS)
            f->pools[f->n_pools++] = json_integer_value(v);
    }
    json_decref(pl);
    f->n_selector =
        intern_labels(e, get_s(&model_flavors, r, "node_selector"), f->selector, SCHED_MAX_SELECTOR);
}

static int load_tenants(struct engine *e, struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int rc = load_all(e, &model_projects, NULL, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t id = model_row_id(&rows[i]);
        sched_set_project(e->sched, id, get_i(&model_projects, &rows[i], "org_id"),
                          (int)get_i(&model_projects, &rows[i], "weight"));
        *APPEND(e->projects, e->n_projects, e->cap_projects) =
            (struct named){id, xstrdup(get_s(&model_projects, &rows[i], "name"))};
    }
    if (rc >= 0)
        rc = load_all(e, &model_quotas, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        const struct value *g = get(&model_quotas, &rows[i], "guaranteed_milli");
        const struct value *l = get(&model_quotas, &rows[i], "limit_milli");
        sched_set_quota(e->sched, get_i(&model_quotas, &rows[i], "project_id"),
                        get_i(&model_quotas, &rows[i], "gpu_class_id"), g->null ? -1 : g->i,
                        l->null ? -1 : l->i);
    }
    if (rc >= 0)
        rc = load_all(e, &model_org_quotas, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        sched_set_org_cap(e->sched, get_i(&model_org_quotas, &rows[i], "org_id"),
                          get_i(&model_org_quotas, &rows[i], "gpu_class_id"),
                          get_i(&model_org_quotas, &rows[i], "limit_milli"));
    if (rc >= 0)
        rc = load_all(e, &model_flavors, NULL, a, &rows, &n, ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        set_flavor(e, &rows[i]);
    return rc;
}

/* The scheduler's view of a workload row. */
static int spec_of(struct engine *e, const struct row *w, struct sched_workload_spec *sp)
{
    const struct resource_def *d = &model_workloads;
    const struct flavor_info *f = FIND_BY_ID(e->flavors, e->n_flavors, get_i(d, w, "flavor_id"));
    const struct value *grace = get(d, w, "grace_s");

    if (!f)
        return ERR_INVALID;
    memset(sp, 0, sizeof(*sp));
    sp->id = model_row_id(w);
    sp->project_id = get_i(d, w, "project_id");
    sp->pclass = strcmp(get_s(d, w, "priority_class"), "owned") == 0 ? SCHED_P1 : SCHED_P2;
    sp->priority = (int32_t)get_i(d, w, "priority");
    sp->submit_ms = get_i(d, w, "submitted_ms");
    sp->replicas = (int32_t)get_i(d, w, "replicas");
    sp->class_id = f->class_id;
    sp->gpu_milli = f->gpu_milli;
    sp->cpu_milli = f->cpu_milli;
    sp->mem_mib = f->mem_mib;
    memcpy(sp->selector, f->selector, sizeof(f->selector));
    sp->n_selector = f->n_selector;
    memcpy(sp->pool_ids, f->pools, sizeof(f->pools));
    sp->n_pools = f->n_pools;
    sp->min_runtime_ms = get_i(d, w, "min_runtime_s") * 1000;
    sp->grace_ms = grace->null ? -1 : grace->i * 1000;
    sp->requeue = get_i(d, w, "requeue") != 0;
    return 0;
}

static void launch_of(struct engine *e, const struct row *w, const struct sched_assign *as,
                      size_t n_as, struct arena *a, struct backend_launch *l);

static int record_unstage(struct engine *e, int64_t id, const char *why, int64_t now,
                          struct error_info *ei);
static void unstage(struct engine *e, int64_t id, const char *why, int64_t now);

/* What an allocation row says a replica holds, as the scheduler's assign. */
static struct sched_assign assign_of(const struct row *al)
{
    const struct resource_def *d = &model_allocations;
    return (struct sched_assign){(int32_t)get_i(d, al, "replica"), get_i(d, al, "node_id"),
                                 get_i(d, al, "gpu_id"), (int32_t)get_i(d, al, "milli")};
}

/*
 * Restore of work its backend holds queued behind running work (w's
 * queued_after): staged again behind it, its job adopted after a restart.
 * Should the work it waits for hold nothing any more (its end is recorded
 * together with the hand-over, so only after a failed write or a crash
 * between the two), it is queued here again, with a warning; a job its
 * backend still follows is taken back first (queued again when it ends),
 * one not adopted after a restart is cancelled by the backend's sweep of
 * jobs no workload claims.
 */
static const char *restore_staged(struct engine *e, bool adopt, const struct row *w,
                                  const struct row *allocs, size_t n_allocs, int64_t now,
                                  struct arena *a)
{
    const struct resource_def *ald = &model_allocations;
    int64_t id = model_row_id(w), after = get_i(&model_workloads, w, "queued_after");
    int64_t root = staged_root(e, after, NULL); /* restored first: see restore_workloads */
    struct sched_assign as[SCHED_MAX_GPUS_PER_NODE];
    const struct node_info *ni = NULL;
    struct backend *b = NULL;
    struct sched_workload_spec sp;
    size_t k = 0;

    for (size_t j = 0; j < n_allocs && k < ARRAY_SIZE(as); j++) {
        if (get_i(ald, &allocs[j], "workload_id") != root)
            continue;
        as[k++] = assign_of(&allocs[j]);
    }
    if (k > 0)
        ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    if (ni)
        b = backend_of(e, ni->cluster_id);
    if (!b || strcmp(b->ops->name, "slurm") != 0) {
        struct backend *own = backend_of(e, get_i(&model_workloads, w, "cluster_id"));
        struct slurm_job_info info;
        char wid[24];
        snprintf(wid, sizeof(wid), "%" PRId64, id);
        log_warn("work queued ahead behind work that holds nothing: queued here again", "workload",
                 wid);
        record_unstage(e, id, "the workload it waited for holds no GPUs", now,
                       &(struct error_info){0});
        if (!adopt && own && strcmp(own->ops->name, "slurm") == 0 &&
            backend_slurm_job(own, id, &info) == 0) {
            own->ops->stop(own, id, 0, now);
            *APPEND(e->unstaging, e->n_unstaging, e->cap_unstaging) = (struct unstaging){id, true};
        } else if (spec_of(e, w, &sp) == 0) {
            sched_submit(e->sched, &sp, now);
        }
        return NULL;
    }
    if (adopt) {
        struct backend_launch l;
        struct error_info ei = {0};
        launch_of(e, w, as, k, a, &l);
        b->ops->adopt(b, &l, now, now, &ei);
    }
    if (spec_of(e, w, &sp) < 0)
        memset(&sp, 0, sizeof(sp));
    *APPEND(e->staged, e->n_staged, e->cap_staged) = (struct staged){id, after, b, sp};
    /*
     * Slurm would never start it on a node drained or down, nor could it be
     * recorded running: taken back by the caller once every chain is back,
     * so that what waits behind it goes too.
     */
    if (!ni->ready || sp.id == 0)
        return !ni->ready ? "its node is not ready" : "its flavor is gone";
    return NULL;
}

static int restore_workloads(struct engine *e, bool adopt, int64_t now, struct arena *a,
                             struct error_info *ei)
{
    struct row *rows, *allocs, *ledger, *staged_rows = NULL;
    size_t n, n_allocs, n_ledger, n_staged_rows = 0, cap_staged_rows = 0;
    const char **take_back;
    bool *done;
    int rc;

    rc = load_all(e, &model_workloads, "queued", a, &rows, &n, ei);
    e->n_staged = 0; /* from the store again, below */
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        struct sched_workload_spec sp;
        if (unstaging_find(e, model_row_id(&rows[i])))
            continue; /* queued again once its backend has given it back */
        if (!get(&model_workloads, &rows[i], "queued_after")->null) {
            *APPEND(staged_rows, n_staged_rows, cap_staged_rows) = rows[i];
            continue;
        }
        if (spec_of(e, &rows[i], &sp) == 0)
            sched_submit(e->sched, &sp, now);
    }
    if (rc < 0) {
        free(staged_rows);
        return rc;
    }
    rc = load_open(e, &model_allocations, "ended_ms", a, &allocs, &n_allocs, ei);
    for (int pass = 0; rc >= 0 && pass < 3; pass++) {
        /* Admitted work was launched or is about to be: its backend says which on adopt. */
        const char *state = pass == 0 ? "running" : pass == 1 ? "admitted" : "preempting";
        rc = load_all(e, &model_workloads, state, a, &rows, &n, ei);
        for (size_t i = 0; rc >= 0 && i < n; i++) {
            int64_t wid = model_row_id(&rows[i]);
            struct sched_workload_spec sp;
            int64_t gpus[SCHED_MAX_REPLICAS * 8];
            int32_t milli[SCHED_MAX_REPLICAS * 8], rep[SCHED_MAX_REPLICAS * 8];
            struct sched_assign as[SCHED_MAX_REPLICAS * 8];
            size_t k = 0;
            int64_t started = get_i(&model_workloads, &rows[i], "started_at") * 1000;
            for (size_t j = 0; j < n_allocs && k < ARRAY_SIZE(gpus); j++) {
                const struct row *al = &allocs[j];
                if (get_i(&model_allocations, al, "workload_id") != wid)
                    continue;
                as[k] = assign_of(al);
                gpus[k] = as[k].gpu_id;
                milli[k] = as[k].milli;
                rep[k] = as[k].replica;
                started = get_i(&model_allocations, al, "started_ms");
                k++;
            }
            if (spec_of(e, &rows[i], &sp) < 0 ||
                sched_restore_running(e->sched, &sp, gpus, milli, rep, k, started, pass == 2) < 0)
                continue;
            if (adopt && k > 0) {
                const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
                struct backend *b = ni ? backend_of(e, ni->cluster_id) : NULL;
                struct backend_launch l;
                if (b) {
                    launch_of(e, &rows[i], as, k, a, &l);
                    b->ops->adopt(b, &l, started, now, ei);
                }
            }
        }
    }
    /*
     * Work queued ahead in its backend: followed again, each after the one
     * it waits for (a chain's head first), so that a chain finds its GPUs.
     */
    done = xcalloc(n_staged_rows + 1, sizeof(*done));
    take_back = xcalloc(n_staged_rows + 1, sizeof(*take_back));
    for (size_t round = 0; rc >= 0 && round < n_staged_rows; round++) {
        for (size_t i = 0; i < n_staged_rows; i++) {
            int64_t after = get_i(&model_workloads, &staged_rows[i], "queued_after");
            bool head_waits = false;
            for (size_t k = 0; k < n_staged_rows; k++)
                head_waits |= !done[k] && model_row_id(&staged_rows[k]) == after;
            if (done[i] || (head_waits && round + 1 < n_staged_rows))
                continue;
            take_back[i] = restore_staged(e, adopt, &staged_rows[i], allocs, n_allocs, now, a);
            done[i] = true;
        }
    }
    for (size_t i = 0; i < n_staged_rows; i++) {
        if (take_back[i])
            unstage(e, model_row_id(&staged_rows[i]), take_back[i], now);
    }
    free(take_back);
    free(done);
    free(staged_rows);
    /* Victims still releasing: link them to their preemptor and ledger entry again. */
    if (rc >= 0)
        rc = load_open(e, &model_preemptions, "released_ms", a, &ledger, &n_ledger, ei);
    for (size_t i = 0; rc >= 0 && i < n_ledger; i++) {
        json_t *vs = json_loads(get_s(&model_preemptions, &ledger[i], "victims"), 0, NULL), *v;
        int64_t pre = get_i(&model_preemptions, &ledger[i], "preemptor_id"), ids[256];
        size_t k, n_ids = 0;
        json_array_foreach(vs, k, v)
        {
            struct sched_workload_info info;
            int64_t vid = json_integer_value(json_object_get(v, "workload_id"));
            if (sched_workload_info(e->sched, vid, &info) < 0 || info.state != SCHED_PREEMPTING)
                continue;
            if (n_ids < 256)
                ids[n_ids++] = vid;
            *APPEND(e->victims, e->n_victims, e->cap_victims) =
                (struct pending_victim){vid, model_row_id(&ledger[i]), pre};
        }
        json_decref(vs);
        sched_restore_preemption(e->sched, pre, ids, n_ids);
    }
    return rc;
}

/* (Re)builds the scheduler from the store. adopt: also re-attach running work to backends. */
static int engine_load(struct engine *e, bool adopt, struct error_info *ei)
{
    struct sched_config cfg;
    struct arena a;
    int rc;

    forget_fleet(e);
    sched_config_init(&cfg);
    cfg.reserve_after_ms = e->opt.reserve_after_ms;
    cfg.default_grace_ms = e->opt.default_grace_ms;
    cfg.policy = e->opt.policy;
    e->sched = sched_new(&cfg);
    arena_init(&a);
    rc = load_fleet(e, &a, ei);
    if (rc >= 0)
        rc = load_tenants(e, &a, ei);
    if (rc >= 0)
        rc = restore_workloads(e, adopt, time_now_ms(), &a, ei);
    arena_release(&a);
    return rc;
}

/* ---- acting on decisions ---- */

static void launch_of(struct engine *e, const struct row *w, const struct sched_assign *as,
                      size_t n_as, struct arena *a, struct backend_launch *l)
{
    const struct resource_def *d = &model_workloads;
    const struct flavor_info *f = FIND_BY_ID(e->flavors, e->n_flavors, get_i(d, w, "flavor_id"));
    int32_t replicas = (int32_t)get_i(d, w, "replicas");
    struct backend_replica *reps = arena_calloc(a, (size_t)replicas, sizeof(*reps));
    const struct value *dur = get(d, w, "duration_s"), *maxrt = get(d, w, "max_runtime_s");

    memset(l, 0, sizeof(*l));
    l->workload_id = model_row_id(w);
    l->project_id = get_i(d, w, "project_id");
    l->command = arena_strdup(a, get_s(d, w, "command"));
    l->image = arena_strdup(a, get_s(d, w, "image"));
    l->cpu_milli = f ? f->cpu_milli : 0;
    l->mem_mib = f ? f->mem_mib : 0;
    l->duration_ms = dur->null ? -1 : dur->i * 1000;
    l->max_runtime_ms = maxrt->null ? -1 : maxrt->i * 1000;
    for (int32_t r = 0; r < replicas; r++) {
        struct backend_device *devs = arena_calloc(a, n_as, sizeof(*devs));
        size_t nd = 0;
        reps[r].replica = r;
        for (size_t i = 0; i < n_as; i++) {
            const struct gpu_info *g;
            if (as[i].replica != r)
                continue;
            reps[r].node_id = as[i].node_id;
            g = as[i].gpu_id ? FIND_BY_ID(e->gpus, e->n_gpus, as[i].gpu_id) : NULL;
            if (g)
                devs[nd++] = (struct backend_device){g->id, g->uuid, g->index, as[i].milli,
                                                     class_name(e, g->class_id)};
        }
        {
            const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, reps[r].node_id);
            reps[r].node_name = ni ? ni->name : "";
        }
        reps[r].devices = devs;
        reps[r].n_devices = nd;
    }
    l->replicas = reps;
    l->n_replicas = (size_t)replicas;
}

static int add_event(struct engine *e, struct arena *a, int64_t wid, int64_t project, int64_t at,
                     const char *type, const char *msg, struct error_info *ei)
{
    struct row ev = model_row_new(&model_events, a);
    int64_t id;
    set_i(&model_events, &ev, "workload_id", wid);
    set_i(&model_events, &ev, "project_id", project);
    set_i(&model_events, &ev, "at_ms", at);
    set_s(&model_events, a, &ev, "type", type);
    set_s(&model_events, a, &ev, "message", msg);
    return store_insert(e->db, &model_events, &ev, &id, ei);
}

static char *gpus_text(struct arena *a, int64_t milli)
{
    if (milli % 1000 == 0)
        return arena_printf(a, "%" PRId64, milli / 1000);
    return arena_printf(a, "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
}

static int persist_admit(struct engine *e, const struct sched_admit *ad, int64_t now,
                         struct arena *a, struct row *ret_row, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    const struct sched_assign *as = &e->dec.assigns[ad->first_assign];
    struct row w;
    struct buf where;
    const struct node_info *ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    int rc = store_get(e->db, d, ad->workload_id, a, &w, ei);

    if (rc < 0)
        return rc;
    set_s(d, a, &w, "state", "admitted");
    set_s(d, a, &w, "reason", ad->borrowed ? "starting on borrowed capacity" : "starting");
    set_i(d, &w, "started_at", now / 1000);
    set_null(d, &w, "finished_at");
    set_null(d, &w, "exit_code");
    if (ni)
        set_i(d, &w, "cluster_id", ni->cluster_id);
    set_i(d, &w, "updated_at", now / 1000);
    rc = store_update(e->db, d, ad->workload_id, &w, ei);
    buf_init(&where, 4096);
    for (size_t i = 0; rc >= 0 && i < ad->n_assigns; i++) {
        const struct resource_def *ald = &model_allocations;
        struct row al = model_row_new(ald, a);
        const struct gpu_info *g = as[i].gpu_id ? FIND_BY_ID(e->gpus, e->n_gpus, as[i].gpu_id) : NULL;
        const struct node_info *n = FIND_BY_ID(e->nodes, e->n_nodes, as[i].node_id);
        int64_t id;
        set_i(ald, &al, "workload_id", ad->workload_id);
        set_i(ald, &al, "project_id", get_i(d, &w, "project_id"));
        set_i(ald, &al, "replica", as[i].replica);
        set_i(ald, &al, "node_id", as[i].node_id);
        if (g) {
            set_i(ald, &al, "gpu_id", g->id);
            set_i(ald, &al, "gpu_class_id", g->class_id);
        } else {
            set_null(ald, &al, "gpu_id");
            set_null(ald, &al, "gpu_class_id");
        }
        set_i(ald, &al, "milli", as[i].milli);
        set_s(ald, a, &al, "priority_class", get_s(d, &w, "priority_class"));
        set_i(ald, &al, "borrowed", ad->borrowed);
        set_i(ald, &al, "started_ms", now);
        set_null(ald, &al, "ended_ms");
        set_s(ald, a, &al, "end_reason", "");
        rc = store_insert(e->db, ald, &al, &id, ei);
        if (where.len < 3000)
            buf_printf(&where, "%s%s/%d", i ? ", " : "", n ? n->name : "?", g ? g->index : -1);
    }
    if (rc >= 0)
        rc = add_event(e, a, ad->workload_id, get_i(d, &w, "project_id"), now, "admitted",
                       arena_printf(a, "admitted as %s%s on %s",
                                    strcmp(get_s(d, &w, "priority_class"), "owned") == 0
                                        ? "owned (P1) work"
                                        : "opportunistic (P2) work",
                                    ad->borrowed ? ", on borrowed capacity" : "",
                                    where.data ? where.data : "cpu"),
                       ei);
    buf_release(&where);
    *ret_row = w;
    return rc;
}

static int persist_preemption(struct engine *e, const struct sched_preemption *pe,
                              struct arena *a, struct error_info *ei)
{
    const struct sched_victim *vs = &e->dec.victims[pe->first_victim];
    const struct sched_quota_snapshot *qs = &e->dec.quotas[pe->first_quota];
    json_t *victims = json_array(), *before = json_array(), *after = json_array();
    struct row pre, led = model_row_new(&model_preemptions, a);
    int64_t lost = 0, ledger_id, pre_project;
    char *text;
    int rc = store_get(e->db, &model_workloads, pe->preemptor_id, a, &pre, ei);

    if (rc < 0)
        goto out;
    pre_project = get_i(&model_workloads, &pre, "project_id");
    for (size_t i = 0; i < pe->n_victims; i++) {
        json_array_append_new(victims, json_pack("{s:I,s:I,s:I,s:I}", "workload_id",
                                                 (json_int_t)vs[i].workload_id, "project_id",
                                                 (json_int_t)vs[i].project_id, "gpu_milli",
                                                 (json_int_t)vs[i].gpu_milli, "lost_ms",
                                                 (json_int_t)vs[i].lost_ms));
        lost += vs[i].gpu_milli * vs[i].lost_ms / 1000;
    }
    for (size_t i = 0; i < pe->n_quotas; i++) {
        int64_t freed = 0;
        for (size_t k = 0; k < pe->n_victims; k++) {
            if (vs[k].project_id == qs[i].project_id)
                freed += vs[k].gpu_milli;
        }
        json_array_append_new(before, json_pack("{s:I,s:I,s:I,s:I}", "project_id",
                                                (json_int_t)qs[i].project_id, "used",
                                                (json_int_t)qs[i].used, "guaranteed",
                                                (json_int_t)qs[i].guaranteed, "limit",
                                                (json_int_t)qs[i].limit));
        json_array_append_new(after, json_pack("{s:I,s:I,s:I,s:I}", "project_id",
                                               (json_int_t)qs[i].project_id, "used",
                                               (json_int_t)(qs[i].used - freed), "guaranteed",
                                               (json_int_t)qs[i].guaranteed, "limit",
                                               (json_int_t)qs[i].limit));
    }
    set_i(&model_preemptions, &led, "preemptor_id", pe->preemptor_id);
    set_i(&model_preemptions, &led, "project_id", pre_project);
    set_s(&model_preemptions, a, &led, "rule", "reclaim");
    set_i(&model_preemptions, &led, "gpu_class_id", qs[0].class_id);
    text = json_dumps(victims, JSON_COMPACT);
    set_s(&model_preemptions, a, &led, "victims", text);
    free(text);
    text = json_dumps(before, JSON_COMPACT);
    set_s(&model_preemptions, a, &led, "quota_before", text);
    free(text);
    text = json_dumps(after, JSON_COMPACT);
    set_s(&model_preemptions, a, &led, "quota_after", text);
    free(text);
    set_i(&model_preemptions, &led, "gpu_milli", pe->gpu_milli_reclaimed);
    set_i(&model_preemptions, &led, "grace_ms", pe->grace_ms);
    set_i(&model_preemptions, &led, "decided_ms", pe->decided_ms);
    set_null(&model_preemptions, &led, "released_ms");
    set_null(&model_preemptions, &led, "reclaim_ms");
    set_i(&model_preemptions, &led, "gpu_ms_lost", lost);
    rc = store_insert(e->db, &model_preemptions, &led, &ledger_id, ei);
    if (rc >= 0)
        rc = add_event(e, a, pe->preemptor_id, pre_project, pe->decided_ms, "reclaiming",
                       arena_printf(a,
                                    "reclaiming %s %s GPU(s) of its guarantee: preempting %zu "
                                    "workload(s) (ledger entry %" PRId64 ")",
                                    gpus_text(a, pe->gpu_milli_reclaimed),
                                    class_name(e, qs[0].class_id), pe->n_victims, ledger_id),
                       ei);
    for (size_t i = 0; rc >= 0 && i < pe->n_victims; i++) {
        /* The victim's readers may not see the preemptor's tenant (the reason and the event
         * are stored once, for all of them): only work of its own project is named. */
        const char *taker = vs[i].project_id == pre_project
                                ? arena_printf(a, "project %s (workload %" PRId64 ")",
                                               project_name(e, pre_project), pe->preemptor_id)
                                : "the owner of the GPUs it borrowed";
        struct row v;
        rc = store_get(e->db, &model_workloads, vs[i].workload_id, a, &v, ei);
        if (rc < 0)
            break;
        set_s(&model_workloads, a, &v, "state", "preempting");
        set_s(&model_workloads, a, &v, "reason",
              arena_printf(a, "preempted for owned work of %s (ledger entry %" PRId64 ")", taker,
                           ledger_id));
        set_i(&model_workloads, &v, "updated_at", pe->decided_ms / 1000);
        rc = store_update(e->db, &model_workloads, vs[i].workload_id, &v, ei);
        if (rc >= 0)
            rc = add_event(e, a, vs[i].workload_id, vs[i].project_id, pe->decided_ms, "preempting",
                           arena_printf(a,
                                        "preempted (rule reclaim, ledger entry %" PRId64
                                        "): %s takes back its guarantee; stopping within "
                                        "%" PRId64 " s",
                                        ledger_id, taker, pe->grace_ms / 1000),
                           ei);
        *APPEND(e->victims, e->n_victims, e->cap_victims) =
            (struct pending_victim){vs[i].workload_id, ledger_id, pe->preemptor_id};
    }
out:
    json_decref(victims);
    json_decref(before);
    json_decref(after);
    return rc;
}

static void handle_ends(struct engine *e, const struct backend_event *evs, size_t n);

/* Admitted work its backend has started is running: one transaction for the round. */
static int mark_running(struct engine *e, struct row *rows, const bool *started, int64_t now,
                        struct arena *a, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    bool any = false;
    int rc;
    for (size_t i = 0; i < e->dec.n_admits && !any; i++)
        any = started[i];
    if (!any)
        return 0;
    rc = store_begin(e->db, ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_admits; i++) {
        struct row *w = &rows[i];
        if (!started[i])
            continue;
        set_s(d, a, w, "state", "running");
        set_s(d, a, w, "reason",
              e->dec.admits[i].borrowed ? "running on borrowed capacity" : "running");
        rc = store_update(e->db, d, model_row_id(w), w, ei);
        if (rc >= 0)
            rc = add_event(e, a, model_row_id(w), get_i(d, w, "project_id"), now, "running",
                           "started by its backend", ei);
    }
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    return rc;
}

/* Writes one pass's decisions in one transaction, then acts on them. */
static int apply_decisions(struct engine *e, int64_t now, struct error_info *ei)
{
    struct arena a;
    struct row *rows;
    size_t n_victims_before = e->n_victims;
    int rc;

    if (e->dec.n_admits == 0 && e->dec.n_preemptions == 0)
        return 0;
    arena_init(&a);
    rows = arena_calloc(&a, e->dec.n_admits + 1, sizeof(*rows));
    rc = store_begin(e->db, ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_admits; i++)
        rc = persist_admit(e, &e->dec.admits[i], now, &a, &rows[i], ei);
    for (size_t i = 0; rc >= 0 && i < e->dec.n_preemptions; i++)
        rc = persist_preemption(e, &e->dec.preemptions[i], &a, ei);
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0) {
        store_rollback(e->db);
        e->n_victims = n_victims_before;
        arena_release(&a);
        return rc;
    }
    /* Committed: count it, then act, then record what the backends did with it. */
    for (size_t i = 0; i < e->dec.n_admits; i++) {
        if (get_i(&model_workloads, &rows[i], "preemptions") == 0)
            metrics_histogram_observe(&e->metrics.queue_wait,
                                      (now - get_i(&model_workloads, &rows[i], "submitted_ms")) *
                                          1000);
    }
    e->metrics.preemptions_reclaim += e->dec.n_preemptions; /* reclaim is the only rule */
    {
        struct backend_event *failed = arena_calloc(&a, e->dec.n_admits + 1, sizeof(*failed));
        bool *started = arena_calloc(&a, e->dec.n_admits + 1, sizeof(bool));
        size_t n_failed = 0;
        for (size_t i = 0; i < e->dec.n_admits; i++) {
            const struct sched_admit *ad = &e->dec.admits[i];
            const struct node_info *ni =
                FIND_BY_ID(e->nodes, e->n_nodes, e->dec.assigns[ad->first_assign].node_id);
            struct backend *b = ni ? backend_of(e, ni->cluster_id) : NULL;
            struct backend_launch l;
            struct error_info lei = {0};
            launch_of(e, &rows[i], &e->dec.assigns[ad->first_assign], ad->n_assigns, &a, &l);
            if (!b || b->ops->launch(b, &l, now, &lei) < 0) {
                char id[24];
                snprintf(id, sizeof(id), "%" PRId64, ad->workload_id);
                log_error("could not launch workload", "workload", id, "error",
                          lei.code ? lei.message : "no backend for its cluster");
                failed[n_failed++] = (struct backend_event){.workload_id = ad->workload_id,
                                                            .at_ms = now,
                                                            .how = BACKEND_NOT_STARTED,
                                                            .exit_code = -1};
            } else {
                started[i] = true;
            }
        }
        rc = mark_running(e, rows, started, now, &a, ei);
        if (n_failed)
            handle_ends(e, failed, n_failed);
        if (rc < 0)
            log_error("could not record started workloads as running", "error", ei->message);
    }
    for (size_t i = 0; i < e->dec.n_preemptions; i++) {
        const struct sched_preemption *pe = &e->dec.preemptions[i];
        for (size_t k = 0; k < pe->n_victims; k++) {
            int64_t vid = e->dec.victims[pe->first_victim + k].workload_id;
            const struct staged *st = staged_behind(e, vid);
            /* Its GPUs go to the preemptor: what its backend queued behind it comes back first. */
            if (st)
                unstage(e, st->id, "the workload it waited for is being preempted", now);
            for (size_t b = 0; b < e->n_backends; b++)
                e->backends[b].b->ops->stop(e->backends[b].b, vid, pe->grace_ms, now);
        }
    }
    arena_release(&a);
    return 0;
}

/* A workload's allocations not yet ended. */
static int open_allocations(struct engine *e, int64_t wid, struct arena *a, struct row **ret,
                            size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;
    store_filter_init(&f);
    f.limit = 10000;
    store_filter_eq_int(&f, model_field_index(&model_allocations, "workload_id"), wid);
    store_filter_eq_null(&f, model_field_index(&model_allocations, "ended_ms"));
    return store_list(e->db, &model_allocations, &f, a, ret, ret_n, ei);
}

/* ---- queue-ahead (Slurm) ---- */

/*
 * How many workloads deep work is queued ahead behind one running workload.
 * One is not enough for short work: the next must be in Slurm before the
 * running one ends, and gpuaas learns of that end (and so of who runs now)
 * only at its next squeue; two cover that. Each one deeper is a job that a
 * newly submitted, more urgent workload of the same project waits behind.
 */
#define QUEUE_AHEAD_DEPTH 2

/*
 * Why: Slurm starts a batch job at the controller's next scheduling pass,
 * which an idle cluster runs once a second but a job's end triggers at once.
 * gpuaas, the one scheduler, submits work only to free GPUs, i.e. after the
 * end that triggered the pass: each GPU then runs at most one job per
 * second. Where the scheduler's next choice for a running workload's GPUs is
 * certain (sched_successor), that workload is submitted ahead, pinned to the
 * same node and GPU count and waiting for the running one's job
 * (backend_slurm_launch_after): the end's own pass starts it. It stays
 * queued here (queued_after names the one it waits for), out of the
 * scheduler's queue; the end hands it the same GPUs (hand_over). A
 * preemption of the one it waits for, a cancel, or an end of its own first
 * takes it back (unstage): its pending job is cancelled and, once the
 * backend reports that, it is queued here again in its original place.
 */

/* The store's record of a taking back: queued_after cleared, an "unstaged" event. */
static int record_unstage(struct engine *e, int64_t id, const char *why, int64_t now,
                          struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    struct arena a;
    struct row w;
    int rc;

    arena_init(&a);
    rc = store_begin(e->db, ei);
    if (rc >= 0)
        rc = store_get(e->db, d, id, &a, &w, ei);
    if (rc >= 0 && !get(d, &w, "queued_after")->null) {
        set_null(d, &w, "queued_after");
        set_s(d, &a, &w, "reason", "queued");
        set_i(d, &w, "updated_at", now / 1000);
        rc = store_update(e->db, d, id, &w, ei);
        if (rc >= 0)
            rc = add_event(e, &a, id, get_i(d, &w, "project_id"), now, "unstaged",
                           arena_printf(&a, "taken back from its cluster's queue: %s", why), ei);
    }
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    arena_release(&a);
    return rc;
}

/* Takes staged work back from its backend; it is queued here again once the backend says so. */
static void unstage(struct engine *e, int64_t id, const char *why, int64_t now)
{
    struct staged *st = staged_find(e, id);
    struct error_info ei = {0};
    struct backend *b;
    char wid[24];

    if (!st)
        return;
    b = st->b;
    staged_remove(e, id);
    /* What waits behind it would start in its place once its job is cancelled: back too. */
    while ((st = staged_behind(e, id)))
        unstage(e, st->id, why, now);
    snprintf(wid, sizeof(wid), "%" PRId64, id);
    if (record_unstage(e, id, why, now, &ei) < 0)
        log_error("could not record work taken back from its cluster's queue", "workload", wid,
                  "error", ei.message);
    b->ops->stop(b, id, 0, now);
    *APPEND(e->unstaging, e->n_unstaging, e->cap_unstaging) = (struct unstaging){id, true};
    log_info("work taken back from its cluster's queue", "workload", wid, "why", why);
}

/* The backend reports the end of staged work, or of work being taken back. */
static void side_end(struct engine *e, const struct backend_event *ev)
{
    struct unstaging *u = unstaging_find(e, ev->workload_id);
    struct arena a;
    struct row w;
    struct error_info ei = {0};
    bool requeue;

    if (!u && staged_find(e, ev->workload_id)) {
        /* Its job ended before the one it waited for: Slurm refused it, or someone cancelled it. */
        const char *why = ev->how == BACKEND_NOT_STARTED ? "its cluster refused it"
                                                         : "its job there ended before it ran";
        if (ev->how == BACKEND_NOT_STARTED) /* launched normally from now on */
            *APPEND(e->no_stage, e->n_no_stage, e->cap_no_stage) = ev->workload_id;
        unstage(e, ev->workload_id, ev->message[0] ? ev->message : why, ev->at_ms);
        u = unstaging_find(e, ev->workload_id);
    }
    if (!u)
        return;
    requeue = u->requeue;
    *u = e->unstaging[--e->n_unstaging];
    if (!requeue)
        return;
    arena_init(&a);
    if (store_get(e->db, &model_workloads, ev->workload_id, &a, &w, &ei) >= 0 &&
        strcmp(get_s(&model_workloads, &w, "state"), "queued") == 0) {
        struct sched_workload_spec sp;
        if (spec_of(e, &w, &sp) == 0)
            sched_submit(e->sched, &sp, ev->at_ms); /* its original place: submitted_ms */
    }
    arena_release(&a);
}

/* Hands backend b queued work `id` to start on the GPUs of running work `after_id` when it ends. */
static void stage(struct engine *e, struct backend *b, int64_t after_id, int64_t id, int64_t now)
{
    const struct resource_def *d = &model_workloads;
    struct sched_assign as[SCHED_MAX_GPUS_PER_NODE];
    struct backend_launch l;
    struct error_info ei = {0};
    const struct node_info *ni;
    struct row w, *held;
    size_t n_held = 0;
    struct arena a;
    struct sched_workload_spec sp;
    char wid[24];
    int rc;

    snprintf(wid, sizeof(wid), "%" PRId64, id);
    arena_init(&a);
    rc = store_get(e->db, d, id, &a, &w, &ei);
    if (rc >= 0)
        rc = spec_of(e, &w, &sp);
    /* The GPUs of the running work at the head of the chain: where it all runs. */
    if (rc >= 0)
        rc = open_allocations(e, staged_root(e, after_id, NULL), &a, &held, &n_held, &ei);
    if (rc < 0 || n_held == 0 || n_held > ARRAY_SIZE(as)) {
        arena_release(&a);
        return;
    }
    for (size_t i = 0; i < n_held; i++)
        as[i] = assign_of(&held[i]);
    ni = FIND_BY_ID(e->nodes, e->n_nodes, as[0].node_id);
    if (!ni || !ni->ready) {
        arena_release(&a);
        return; /* Slurm would hold it until the node is back */
    }
    launch_of(e, &w, as, n_held, &a, &l);
    /*
     * Recorded before its job is submitted: after a crash in between, the
     * restart adopts it, finds no job by its name and queues it again; the
     * other way round its job would run unrecorded.
     */
    set_i(d, &w, "queued_after", after_id);
    set_s(d, &a, &w, "reason",
          arena_printf(&a,
                       "queued in Slurm behind workload %" PRId64 " on %s: starts on its GPUs"
                       " when it ends",
                       after_id, ni->name));
    set_i(d, &w, "cluster_id", ni->cluster_id);
    set_i(d, &w, "updated_at", now / 1000);
    rc = store_begin(e->db, &ei);
    if (rc >= 0)
        rc = store_update(e->db, d, id, &w, &ei);
    if (rc >= 0)
        rc = add_event(e, &a, id, get_i(d, &w, "project_id"), now, "staged", get_s(d, &w, "reason"),
                       &ei);
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc < 0) {
        store_rollback(e->db);
        log_error("could not record work queued ahead; it waits here", "workload", wid, "error",
                  ei.message);
    } else if (backend_slurm_launch_after(b, &l, after_id, now, &ei) < 0) {
        struct error_info undo = {0};
        log_warn("could not queue work ahead in its cluster; it waits here", "workload", wid,
                 "error", ei.message);
        *APPEND(e->no_stage, e->n_no_stage, e->cap_no_stage) = id;
        if (record_unstage(e, id, "its cluster did not take it", now, &undo) < 0)
            log_error("could not record work taken back from its cluster's queue", "workload", wid,
                      "error", undo.message);
    } else {
        /* Out of the scheduler's queue from now; the store says where it waits. */
        sched_cancel(e->sched, id, now);
        *APPEND(e->staged, e->n_staged, e->cap_staged) = (struct staged){id, after_id, b, sp};
    }
    arena_release(&a);
}

/* After a pass: queues ahead in Slurm the next work for running work's GPUs, where certain. */
static void stage_successors(struct engine *e, int64_t now)
{
    if (!e->opt.slurm_queue_ahead)
        return;
    /*
     * Another project now waits for that class, or work of its own project
     * that comes first: the scheduler, not Slurm's queue, decides.
     */
    for (size_t i = 0; i < e->n_staged;) {
        const struct staged *st = &e->staged[i];
        if (sched_others_wait(e->sched, st->spec.project_id, st->spec.class_id))
            unstage(e, st->id, "other work now waits for this GPU class", now);
        else if (sched_ranked_before(e->sched, &st->spec))
            unstage(e, st->id, "work of its project that comes first now waits", now);
        else
            i++;
    }
    for (size_t b = 0; b < e->n_backends; b++) {
        int64_t ids[256];
        size_t n;
        if (strcmp(e->backends[b].b->ops->name, "slurm") != 0)
            continue;
        /* Running work, and work already queued ahead (whose job Slurm has too). */
        n = backend_slurm_followable(e->backends[b].b, ids, ARRAY_SIZE(ids));
        for (size_t i = 0; i < n; i++) {
            const struct staged *st = staged_find(e, ids[i]);
            size_t depth;
            int64_t next;
            if (staged_behind(e, ids[i]))
                continue; /* it has its follower */
            staged_root(e, ids[i], &depth);
            if (depth >= QUEUE_AHEAD_DEPTH)
                continue;
            if ((st ? sched_successor_like(e->sched, &st->spec, &next)
                    : sched_successor(e->sched, ids[i], &next)) < 0 ||
                no_stage(e, next))
                continue;
            stage(e, e->backends[b].b, ids[i], next, now);
        }
    }
}

/* ---- ends reported by backends ---- */

static bool take_cancelling(struct engine *e, int64_t id)
{
    for (size_t i = 0; i < e->n_cancelling; i++) {
        if (e->cancelling[i] == id) {
            e->cancelling[i] = e->cancelling[--e->n_cancelling];
            return true;
        }
    }
    return false;
}

/*
 * Ends a workload's open allocations at `at` and meters the run. at < 0:
 * the work never ran (its backend could not start it, maybe after it was
 * recorded running): each allocation ends where it started, so nothing is
 * used and nothing billed.
 */
static int close_allocations(struct engine *e, int64_t wid, int64_t at, const char *why,
                             struct arena *a, struct error_info *ei)
{
    struct row *rows;
    size_t n;
    int64_t run_started = 0;
    int replicas = 0;
    int rc = open_allocations(e, wid, a, &rows, &n, ei);

    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t started = get_i(&model_allocations, &rows[i], "started_ms");
        int64_t rep = get_i(&model_allocations, &rows[i], "replica");
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= get_i(&model_allocations, &rows[k], "replica") == rep;
        replicas += !seen;
        if (i == 0 || started < run_started)
            run_started = started;
        set_i(&model_allocations, &rows[i], "ended_ms", at < 0 ? started : at);
        set_s(&model_allocations, a, &rows[i], "end_reason", why);
        rc = store_update(e->db, &model_allocations, model_row_id(&rows[i]), &rows[i], ei);
    }
    /* The run's usage goes to the ledger in the same transaction: never lost, never twice. */
    if (rc >= 0 && n > 0 && at >= 0)
        rc = billing_meter_run(e->db, wid, run_started, replicas, at, time_now_ms(), a, ei);
    return rc;
}

/* A victim has released: when it was the last of its ledger entry, close the entry. */
static int victim_released(struct engine *e, int64_t vid, int64_t at, struct arena *a,
                           int64_t *ret_reclaim_ms, struct error_info *ei)
{
    int64_t ledger = 0;
    bool others = false;
    for (size_t i = 0; i < e->n_victims; i++) {
        if (e->victims[i].victim_id == vid) {
            ledger = e->victims[i].ledger_id;
            e->victims[i] = e->victims[--e->n_victims];
            break;
        }
    }
    if (!ledger)
        return 0;
    for (size_t i = 0; i < e->n_victims; i++)
        others |= e->victims[i].ledger_id == ledger;
    if (!others) {
        struct row led;
        int rc = store_get(e->db, &model_preemptions, ledger, a, &led, ei);
        if (rc < 0)
            return rc;
        set_i(&model_preemptions, &led, "released_ms", at);
        *ret_reclaim_ms = at - get_i(&model_preemptions, &led, "decided_ms");
        set_i(&model_preemptions, &led, "reclaim_ms", *ret_reclaim_ms);
        return store_update(e->db, &model_preemptions, ledger, &led, ei);
    }
    return 0;
}

/* What to tell the scheduler about an end once it is committed. */
struct end_action {
    int64_t workload_id, at_ms;
    bool cancel, skip;
    int outcome;        /* index into outcomes */
    int64_t reclaim_ms; /* its release closed a preemption after this long; -1: it did not */
    /* Queue-ahead: the workload its backend starts on these GPUs now (0: none)... */
    int64_t successor_id;
    struct sched_workload_spec successor;
    size_t n_held;
    int64_t gpus[SCHED_MAX_GPUS_PER_NODE];
    int32_t milli[SCHED_MAX_GPUS_PER_NODE], replica[SCHED_MAX_GPUS_PER_NODE];
    /* ...or the one queued behind it that must be taken back (0: none). */
    int64_t unstage_id;
};

/*
 * Queue-ahead: the workload queued in its backend behind a running one has
 * started there on that one's GPUs as it ended (at): in the caller's
 * transaction it is admitted and running on the same devices from `at`
 * (held: the ended one's allocations, read before they were closed), and
 * act says what to tell the scheduler once committed.
 */
static int hand_over(struct engine *e, const struct staged *st, const struct row *held,
                     size_t n_held, int64_t at, struct arena *a, struct end_action *act,
                     struct error_info *ei)
{
    const struct resource_def *d = &model_workloads, *ald = &model_allocations;
    const struct node_info *ni;
    struct row w;
    struct buf where;
    bool borrowed = false;
    int rc;

    if (n_held == 0 || n_held > ARRAY_SIZE(act->gpus))
        return errinfo_set(ei, ERR_INTERNAL, NULL, "workload %" PRId64 " held %zu devices",
                           st->after_id, n_held);
    rc = store_get(e->db, d, st->id, a, &w, ei);
    if (rc < 0)
        return rc;
    act->successor = st->spec;
    buf_init(&where, 4096);
    for (size_t i = 0; rc >= 0 && i < n_held; i++) {
        struct row al = model_row_new(ald, a);
        const struct gpu_info *g = FIND_BY_ID(e->gpus, e->n_gpus, get_i(ald, &held[i], "gpu_id"));
        const struct node_info *n =
            FIND_BY_ID(e->nodes, e->n_nodes, get_i(ald, &held[i], "node_id"));
        int64_t id;
        set_i(ald, &al, "workload_id", st->id);
        set_i(ald, &al, "project_id", get_i(d, &w, "project_id"));
        set_i(ald, &al, "replica", get_i(ald, &held[i], "replica"));
        set_i(ald, &al, "node_id", get_i(ald, &held[i], "node_id"));
        set_i(ald, &al, "gpu_id", get_i(ald, &held[i], "gpu_id"));
        set_i(ald, &al, "gpu_class_id", get_i(ald, &held[i], "gpu_class_id"));
        set_i(ald, &al, "milli", get_i(ald, &held[i], "milli"));
        set_s(ald, a, &al, "priority_class", get_s(d, &w, "priority_class"));
        borrowed |= get_i(ald, &held[i], "borrowed") != 0;
        set_i(ald, &al, "borrowed", get_i(ald, &held[i], "borrowed"));
        set_i(ald, &al, "started_ms", at);
        set_null(ald, &al, "ended_ms");
        set_s(ald, a, &al, "end_reason", "");
        rc = store_insert(e->db, ald, &al, &id, ei);
        act->gpus[i] = get_i(ald, &held[i], "gpu_id");
        act->milli[i] = (int32_t)get_i(ald, &held[i], "milli");
        act->replica[i] = (int32_t)get_i(ald, &held[i], "replica");
        if (where.len < 3000)
            buf_printf(&where, "%s%s/%d", i ? ", " : "", n ? n->name : "?", g ? g->index : -1);
    }
    ni = FIND_BY_ID(e->nodes, e->n_nodes, get_i(ald, &held[0], "node_id"));
    set_s(d, a, &w, "state", "running");
    set_s(d, a, &w, "reason", borrowed ? "running on borrowed capacity" : "running");
    set_i(d, &w, "started_at", at / 1000);
    set_null(d, &w, "finished_at");
    set_null(d, &w, "exit_code");
    set_null(d, &w, "queued_after");
    if (ni)
        set_i(d, &w, "cluster_id", ni->cluster_id);
    set_i(d, &w, "updated_at", at / 1000);
    if (rc >= 0)
        rc = store_update(e->db, d, st->id, &w, ei);
    if (rc >= 0)
        rc = add_event(e, a, st->id, get_i(d, &w, "project_id"), at, "admitted",
                       arena_printf(a,
                                    "admitted as %s%s on %s: the GPUs of workload %" PRId64
                                    ", which it waited behind in its cluster's queue",
                                    strcmp(get_s(d, &w, "priority_class"), "owned") == 0
                                        ? "owned (P1) work"
                                        : "opportunistic (P2) work",
                                    borrowed ? ", on borrowed capacity" : "",
                                    where.data ? where.data : "?", st->after_id),
                       ei);
    if (rc >= 0)
        rc = add_event(
            e, a, st->id, get_i(d, &w, "project_id"), at, "running",
            arena_printf(a, "started by its backend as workload %" PRId64 " ended", st->after_id),
            ei);
    buf_release(&where);
    act->successor_id = st->id;
    act->n_held = n_held;
    return rc;
}

/*
 * Writes the end of a workload (state, allocations closed, event, ledger) in
 * the caller's transaction, and says what the scheduler must then be told.
 */
static int record_end(struct engine *e, const struct backend_event *ev, struct arena *a,
                      struct end_action *act, struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    struct sched_workload_info info;
    struct row w, *held = NULL;
    size_t n_held = 0;
    const struct staged *next;
    const char *state, *reason, *alloc_reason;
    bool cancel, preempted, requeue;
    int rc;

    memset(act, 0, sizeof(*act));
    act->workload_id = ev->workload_id;
    act->at_ms = ev->at_ms;
    act->skip = true;
    act->reclaim_ms = -1;
    if (sched_workload_info(e->sched, ev->workload_id, &info) < 0 ||
        info.state == SCHED_QUEUED)
        return 0; /* not ours, or already dealt with */
    rc = store_get(e->db, d, ev->workload_id, a, &w, ei);
    if (rc < 0)
        return rc;
    cancel = take_cancelling(e, ev->workload_id);
    preempted = info.state == SCHED_PREEMPTING && !cancel;
    requeue = preempted && get_i(d, &w, "requeue");
    if (cancel) {
        state = "cancelled";
        reason = "cancelled while running";
    } else if (preempted) {
        state = requeue ? "queued" : "preempted";
        reason = requeue ? "preempted; queued again in its original place" : "preempted";
    } else if (ev->how == BACKEND_TIMEOUT) {
        state = "failed";
        reason = "killed at its maximum runtime";
    } else if (ev->how == BACKEND_LOST) {
        state = "failed";
        reason = "lost: its backend no longer knows it";
    } else if (ev->how == BACKEND_NOT_STARTED) {
        state = "failed";
        reason = ev->message[0] ? arena_printf(a, "its backend could not start it: %s", ev->message)
                                : "its backend could not start it";
    } else if (ev->how == BACKEND_EXITED && ev->exit_code == 0) {
        state = "succeeded";
        reason = "exited 0";
    } else {
        state = "failed";
        reason = arena_printf(a, "exited with status %d", ev->exit_code);
    }
    alloc_reason = preempted ? "preempted" : state;
    set_s(d, a, &w, "state", state);
    set_s(d, a, &w, "reason", reason);
    set_i(d, &w, "exit_code", ev->exit_code);
    if (requeue) {
        set_null(d, &w, "finished_at");
        set_null(d, &w, "exit_code");
    } else {
        set_i(d, &w, "finished_at", ev->at_ms / 1000);
    }
    if (preempted)
        set_i(d, &w, "preemptions", get_i(d, &w, "preemptions") + 1);
    set_i(d, &w, "updated_at", ev->at_ms / 1000);
    rc = store_update(e->db, d, ev->workload_id, &w, ei);
    /*
     * Work queued behind it in its backend starts there now, on its GPUs:
     * unless it ended in a way Slurm's own queue does not follow (preempted:
     * taken back before the stop; lost or never started).
     */
    next = staged_behind(e, ev->workload_id);
    if (next && (preempted || ev->how == BACKEND_LOST || ev->how == BACKEND_NOT_STARTED ||
                 next->spec.id == 0)) {
        act->unstage_id = next->id;
        next = NULL;
    }
    if (rc >= 0 && next)
        rc = open_allocations(e, ev->workload_id, a, &held, &n_held, ei);
    if (rc >= 0)
        rc = close_allocations(e, ev->workload_id, ev->how == BACKEND_NOT_STARTED ? -1 : ev->at_ms,
                               alloc_reason, a, ei);
    if (rc >= 0)
        rc = add_event(e, a, ev->workload_id, get_i(d, &w, "project_id"), ev->at_ms,
                       requeue ? "requeued" : preempted ? "preempted" : state, reason, ei);
    if (rc >= 0 && next)
        rc = hand_over(e, next, held, n_held, ev->at_ms, a, act, ei);
    if (rc >= 0 && info.state == SCHED_PREEMPTING)
        rc = victim_released(e, ev->workload_id, ev->at_ms, a, &act->reclaim_ms, ei);
    act->outcome = preempted ? 3 : cancel ? 2 : strcmp(state, "succeeded") == 0 ? 0 : 1;
    act->cancel = cancel;
    act->skip = false;
    return rc;
}

static void apply_end(struct engine *e, const struct end_action *act)
{
    if (act->skip)
        return;
    e->metrics.outcomes[act->outcome]++;
    if (act->reclaim_ms >= 0)
        metrics_histogram_observe(&e->metrics.reclaim, act->reclaim_ms * 1000);
    if (act->cancel)
        sched_cancel(e->sched, act->workload_id, act->at_ms);
    else
        sched_released(e->sched, act->workload_id, act->at_ms);
    if (act->successor_id) {
        staged_remove(e, act->successor_id);
        metrics_histogram_observe(&e->metrics.queue_wait,
                                  (act->at_ms - act->successor.submit_ms) * 1000);
        if (sched_restore_running(e->sched, &act->successor, act->gpus, act->milli, act->replica,
                                  act->n_held, act->at_ms, false) < 0) {
            log_error("the scheduler refused work its backend started in another's place; "
                      "rebuilding from the store");
            e->reload = true;
        }
    }
    if (act->unstage_id)
        unstage(e, act->unstage_id, "the workload it waited for did not end normally", act->at_ms);
}

/*
 * Records a batch of ends in one transaction (one commit, not one per end:
 * the store has one writer), then tells the scheduler. If the batch fails,
 * the engine's own lists are put back and each end is tried on its own, so
 * one bad record cannot hold back the others.
 */
static void handle_batch(struct engine *e, const struct backend_event *evs, size_t n)
{
    struct end_action *acts;
    int64_t *cancelling = xcalloc(e->n_cancelling + 1, sizeof(int64_t));
    struct pending_victim *victims = xcalloc(e->n_victims + 1, sizeof(*victims));
    size_t n_cancelling = e->n_cancelling, n_victims = e->n_victims;
    struct error_info ei = {0};
    struct arena a;
    int rc;

    if (n == 0) {
        free(cancelling);
        free(victims);
        return;
    }
    acts = xcalloc(n + 1, sizeof(*acts));
    if (n_cancelling)
        memcpy(cancelling, e->cancelling, n_cancelling * sizeof(int64_t));
    if (n_victims)
        memcpy(victims, e->victims, n_victims * sizeof(*victims));
    arena_init(&a);
    rc = store_begin(e->db, &ei);
    for (size_t i = 0; rc >= 0 && i < n; i++)
        rc = record_end(e, &evs[i], &a, &acts[i], &ei);
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc >= 0) {
        for (size_t i = 0; i < n; i++)
            apply_end(e, &acts[i]);
    } else {
        store_rollback(e->db);
        memcpy(e->cancelling, cancelling, n_cancelling * sizeof(int64_t));
        e->n_cancelling = n_cancelling;
        memcpy(e->victims, victims, n_victims * sizeof(*victims));
        e->n_victims = n_victims;
        for (size_t i = 0; i < n; i++) {
            struct end_action act;
            ei.code = 0;
            rc = store_begin(e->db, &ei);
            if (rc >= 0)
                rc = record_end(e, &evs[i], &a, &act, &ei);
            if (rc >= 0)
                rc = store_commit(e->db, &ei);
            if (rc >= 0) {
                apply_end(e, &act);
            } else {
                store_rollback(e->db);
                log_error("could not record the end of a workload", "error", ei.message);
            }
        }
    }
    arena_release(&a);
    free(acts);
    free(cancelling);
    free(victims);
}

/*
 * Records ends. Those of work out of the scheduler because its backend holds
 * it queued behind other work (or is giving it back) take another path, in
 * order: what comes before them is recorded first, since the end of the
 * work such a one waits for hands it its GPUs; and its own end always comes
 * after that one's, whatever Slurm's whole-second times say.
 */
static void handle_ends(struct engine *e, const struct backend_event *evs, size_t n)
{
    struct backend_event *order;
    size_t start = 0;

    if (e->n_staged == 0 && e->n_unstaging == 0) {
        handle_batch(e, evs, n);
        return;
    }
    order = xcalloc(n + 1, sizeof(*order));
    memcpy(order, evs, n * sizeof(*order));
    for (size_t i = 0; i < n; i++) {
        const struct staged *st = staged_find(e, order[i].workload_id);
        for (size_t j = n; st && j-- > i + 1;) {
            if (order[j].workload_id == st->after_id) {
                struct backend_event ev = order[i];
                memmove(&order[i], &order[i + 1], (j - i) * sizeof(*order));
                order[j] = ev;
                i--; /* look at what moved into place i */
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (!held_aside(e, order[i].workload_id))
            continue;
        handle_batch(e, order + start, i - start);
        start = i;
        if (held_aside(e, order[i].workload_id)) {
            side_end(e, &order[i]);
            start = i + 1;
        }
    }
    handle_batch(e, order + start, n - start);
    free(order);
}

/* ---- the loop ---- */

/*
 * Applies queued changes in place. Deleting a project, quota or flavor can
 * strand what the scheduler holds: those rebuild from the store instead.
 */
static void apply_changes(struct engine *e)
{
    for (size_t i = 0; i < e->n_changes && !e->reload; i++) {
        const struct change *c = &e->changes[i];
        const struct row *r = &c->row;
        if (c->deleted) {
            e->reload = true;
        } else if (c->def == &model_projects) {
            struct named *n = FIND_BY_ID(e->projects, e->n_projects, model_row_id(r));
            sched_set_project(e->sched, model_row_id(r), get_i(c->def, r, "org_id"),
                              (int)get_i(c->def, r, "weight"));
            if (n) {
                free(n->name);
                n->name = xstrdup(get_s(c->def, r, "name"));
            } else {
                *APPEND(e->projects, e->n_projects, e->cap_projects) =
                    (struct named){model_row_id(r), xstrdup(get_s(c->def, r, "name"))};
            }
        } else if (c->def == &model_quotas) {
            const struct value *g = get(c->def, r, "guaranteed_milli");
            const struct value *l = get(c->def, r, "limit_milli");
            sched_set_quota(e->sched, get_i(c->def, r, "project_id"),
                            get_i(c->def, r, "gpu_class_id"), g->null ? -1 : g->i,
                            l->null ? -1 : l->i);
        } else if (c->def == &model_org_quotas) {
            sched_set_org_cap(e->sched, get_i(c->def, r, "org_id"), get_i(c->def, r, "gpu_class_id"),
                              get_i(c->def, r, "limit_milli"));
        } else if (c->def == &model_flavors) {
            set_flavor(e, r);
        }
    }
    e->n_changes = 0;
    arena_release(&e->change_arena);
}


/* Wakes the engine thread (it may be asleep or busy: either way it goes round again). */
static void wake(struct engine *e)
{
    pthread_mutex_lock(&e->wake_lock);
    e->woken = true;
    pthread_cond_signal(&e->wake_cond);
    pthread_mutex_unlock(&e->wake_lock);
}

/* The submissions so far, taken out of the inbox (caller frees); *ret_n of them. */
static int64_t *drain_inbox(struct engine *e, size_t *ret_n)
{
    int64_t *ids;
    pthread_mutex_lock(&e->wake_lock);
    ids = e->inbox;
    *ret_n = e->n_inbox;
    e->inbox = NULL;
    e->n_inbox = e->cap_inbox = 0;
    pthread_mutex_unlock(&e->wake_lock);
    return ids;
}

static void take_inbox(struct engine *e, int64_t now)
{
    struct arena a;
    size_t n;
    int64_t *ids = drain_inbox(e, &n);

    arena_init(&a);
    for (size_t i = 0; i < n; i++) {
        struct row w;
        struct sched_workload_spec sp;
        struct error_info ei = {0};
        if (store_get(e->db, &model_workloads, ids[i], &a, &w, &ei) < 0 ||
            strcmp(get_s(&model_workloads, &w, "state"), "queued") != 0)
            continue;
        if (spec_of(e, &w, &sp) == 0)
            sched_submit(e->sched, &sp, now);
    }
    free(ids);
    arena_release(&a);
}

static void rebuild(struct engine *e, const char *why)
{
    struct error_info ei = {0};
    if (engine_load(e, false, &ei) < 0)
        log_error("could not reload the scheduler from the store", "why", why, "error",
                  ei.message);
}

/*
 * Metering chores: at a month boundary, runs still open are cut there so
 * the month is complete in the ledger; every minute, budgets are checked
 * and alerts raised. Each is one transaction; a failure is retried later.
 */
#define BUDGET_CHECK_MS 60000

static void meter_chores(struct engine *e, int64_t now)
{
    struct meter_period_rule months = {0};
    struct error_info ei = {0};
    int64_t month, end;
    struct arena a;
    int rc;

    meter_period_of(&months, now, &month, &end);
    if (month <= e->metered_through && now - e->budgets_checked < BUDGET_CHECK_MS)
        return;
    arena_init(&a);
    rc = store_begin(e->db, &ei);
    if (rc >= 0 && month > e->metered_through)
        rc = billing_cut_open_runs(e->db, month, now, &a, &ei);
    if (rc >= 0 && now - e->budgets_checked >= BUDGET_CHECK_MS) {
        rc = billing_check_budgets(e->db, now, &a, &ei);
        if (rc > 0)
            log_info("budget alerts raised", "count", arena_printf(&a, "%d", rc));
    }
    if (rc >= 0)
        rc = store_commit(e->db, &ei);
    if (rc >= 0) {
        e->metered_through = month;
        e->budgets_checked = now;
    } else {
        store_rollback(e->db);
        e->budgets_checked = now; /* retry in a minute, not every tick */
        log_error("could not meter open work or check budgets", "error", ei.message);
    }
    arena_release(&a);
}

/*
 * Idle policies (DESIGN.md section 5): work whose GPUs have all been
 * idle-allocated (allocated, activity under the threshold over the window)
 * gets one "idle" event after idle_notify_ms, and opportunistic work is
 * stopped after idle_stop_p2_ms. Owned work is never stopped. Checked every
 * few seconds from the collector's view of each GPU.
 */
#define IDLE_CHECK_MS 5000

static int stop_running(struct engine *e, int64_t workload_id, const char *why,
                        struct error_info *ei);

static struct idle_track *idle_of(struct engine *e, int64_t wid)
{
    for (size_t i = 0; i < e->n_idle; i++) {
        if (e->idle[i].workload_id == wid)
            return &e->idle[i];
    }
    return NULL;
}

static void idle_chores(struct engine *e, int64_t now)
{
    struct store_filter f;
    struct error_info ei = {0};
    struct row *rows;
    struct arena a;
    size_t n;

    if (!e->opt.collector || now - e->idle_checked < IDLE_CHECK_MS)
        return;
    e->idle_checked = now;
    arena_init(&a);
    store_filter_init(&f);
    store_filter_eq_null(&f, model_field_index(&model_allocations, "ended_ms"));
    if (store_list_all(e->db, &model_allocations, &f, &a, &rows, &n, &ei) < 0) {
        arena_release(&a);
        return;
    }
    /* The telemetry counts these GPUs' samples as allocated time (efficiency). */
    {
        const char **uuids = arena_calloc(&a, n + 1, sizeof(char *));
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            const struct gpu_info *g =
                FIND_BY_ID(e->gpus, e->n_gpus, get_i(&model_allocations, &rows[i], "gpu_id"));
            if (g && g->uuid && *g->uuid)
                uuids[k++] = g->uuid;
        }
        collector_set_allocated(e->opt.collector, uuids, k);
    }
    if (e->opt.idle_notify_ms <= 0 && e->opt.idle_stop_p2_ms <= 0) {
        arena_release(&a);
        return;
    }
    for (size_t i = 0; i < e->n_idle; i++)
        e->idle[i].seen = false;
    /* A run is idle when every one of its GPUs is idle-allocated. */
    {
        struct run_idle {
            int64_t wid;
            bool idle, p2;
        } *runs = arena_calloc(&a, n + 1, sizeof(*runs));
        size_t n_runs = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t wid = get_i(&model_allocations, &rows[i], "workload_id");
            const struct gpu_info *g =
                FIND_BY_ID(e->gpus, e->n_gpus, get_i(&model_allocations, &rows[i], "gpu_id"));
            struct collector_gpu cg;
            bool idle = g && g->uuid && collector_gpu(e->opt.collector, g->uuid, true, now, &cg) &&
                        cg.state == INV_STATE_IDLE_ALLOCATED;
            size_t k = 0;
            while (k < n_runs && runs[k].wid != wid)
                k++;
            if (k == n_runs)
                runs[n_runs++] = (struct run_idle){
                    wid, true,
                    strcmp(get_s(&model_allocations, &rows[i], "priority_class"),
                           "opportunistic") == 0};
            runs[k].idle &= idle;
        }
        for (size_t k = 0; k < n_runs; k++) {
            struct idle_track *t = idle_of(e, runs[k].wid);
            if (!runs[k].idle)
                continue;
            if (!t) {
                t = APPEND(e->idle, e->n_idle, e->cap_idle);
                *t = (struct idle_track){runs[k].wid, now, runs[k].p2, false, false, false};
            }
            t->seen = true;
        }
    }
    for (size_t i = 0; i < e->n_idle;) {
        struct idle_track *t = &e->idle[i];
        if (!t->seen) { /* ended, or busy again */
            *t = e->idle[--e->n_idle];
            continue;
        }
        {
            struct inv_idle_policy pol = {e->opt.idle_notify_ms, e->opt.idle_stop_p2_ms};
            struct inv_idle_alloc al = {t->workload_id, t->opportunistic, now - t->since_ms,
                                        t->notified};
            int act = 0;
            char why[160], idle_for[32];
            int64_t idle_s = (now - t->since_ms) / 1000;
            if (idle_s < 120)
                snprintf(idle_for, sizeof(idle_for), "%" PRId64 " s", idle_s);
            else
                snprintf(idle_for, sizeof(idle_for), "%" PRId64 " min", idle_s / 60);
            inv_idle_apply(&pol, &al, 1, &act);
            if ((act & INV_IDLE_NOTIFY) && !t->notified) {
                struct row w;
                snprintf(why, sizeof(why),
                         "idle for %s: its GPUs are allocated but unused (reclaimable)",
                         idle_for);
                if (store_get(e->db, &model_workloads, t->workload_id, &a, &w, &ei) >= 0)
                    add_event(e, &a, t->workload_id, get_i(&model_workloads, &w, "project_id"),
                              now, "idle", why, &ei);
                t->notified = true;
            }
            if ((act & INV_IDLE_STOP) && !t->stopped) {
                snprintf(why, sizeof(why),
                         "stopping: opportunistic work idle for %s (the idle-stop setting)",
                         idle_for);
                stop_running(e, t->workload_id, why, &ei);
                t->stopped = true;
            }
        }
        i++;
    }
    arena_release(&a);
}

/*
 * Slurm clusters: nodes and GPUs come from Slurm's node records (sinfo),
 * read every slurm_sync_ms. A node Slurm has and the store lacks is added
 * with its GPUs (class = the GRES type, made when missing); a node's state
 * follows Slurm's (drain, down); GPUs Slurm counts beyond the store's are
 * added; a node Slurm no longer lists is marked down, never deleted
 * (history points at it). Any change rebuilds the scheduler's fleet.
 */
/* A new row of def from JSON (defaults applied, times set); 0 or an error. */
static int new_row(const struct resource_def *def, json_t *j, struct arena *a, int64_t now,
                   struct row *ret, struct error_info *ei)
{
    int rc = model_decode(def, j, DECODE_CREATE, a, ret, ei);
    json_decref(j);
    if (rc < 0)
        return rc;
    if (model_field_index(def, "created_at") >= 0)
        set_i(def, ret, "created_at", now / 1000);
    if (model_field_index(def, "updated_at") >= 0)
        set_i(def, ret, "updated_at", now / 1000);
    return model_check_row(def, ret, ei);
}

/*
 * The id of the GPU class called name, made when missing; model and
 * memory_mib (NULL and 0 when unknown) describe a class made from what a
 * collector read.
 */
static int class_id_of(struct engine *e, const char *name, const char *model, int64_t memory_mib,
                       struct arena *a, int64_t now, int64_t *ret, struct error_info *ei)
{
    struct store_filter f;
    struct row *rows, r;
    size_t n;
    json_t *j;
    int rc;

    store_filter_init(&f);
    store_filter_eq_str(&f, model_field_index(&model_gpu_classes, "name"), name);
    rc = store_list(e->db, &model_gpu_classes, &f, a, &rows, &n, ei);
    if (rc >= 0 && n) {
        *ret = model_row_id(&rows[0]);
        return 0;
    }
    if (rc < 0)
        return rc;
    j = json_pack("{s:s}", "name", name);
    if (model && *model) {
        json_object_set_new(j, "model", json_string(model));
        json_object_set_new(j, "vendor", json_string("nvidia"));
    }
    if (memory_mib > 0)
        json_object_set_new(j, "memory_mib", json_integer(memory_mib));
    rc = new_row(&model_gpu_classes, j, a, now, &r, ei);
    return rc < 0 ? rc : store_insert(e->db, &model_gpu_classes, &r, ret, ei);
}

/* Sets a row's text field (a state, a health) and writes it; 1 (one row changed) or an error. */
static int set_state(struct engine *e, const struct resource_def *def, struct row *r,
                     const char *field, const char *value, struct arena *a, int64_t now,
                     struct error_info *ei)
{
    int rc;
    set_s(def, a, r, field, value);
    set_i(def, r, "updated_at", now / 1000);
    rc = store_update(e->db, def, model_row_id(r), r, ei);
    return rc < 0 ? rc : 1;
}

/*
 * The node called name among a cluster's nodes (rows), added with state
 * when missing (cpu_milli, mem_mib < 0: not set); a listed node whose state
 * differs takes state unless keep_state. *ret_id is its id. Returns how
 * many rows changed (0 or 1), or an error.
 */
static int sync_node(struct engine *e, int64_t cluster_id, struct row *rows, size_t n_rows,
                     const char *name, int64_t cpu_milli, int64_t mem_mib, const char *state,
                     bool keep_state, const char *backend, const char *reason, struct arena *a,
                     int64_t now, int64_t *ret_id, struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes;
    struct row *have = NULL, r;
    json_t *j;
    int rc;

    for (size_t i = 0; i < n_rows && !have; i++)
        have = strcmp(get_s(nd, &rows[i], "name"), name) == 0 ? &rows[i] : NULL;
    if (have) {
        *ret_id = model_row_id(have);
        if (keep_state || strcmp(get_s(nd, have, "state"), state) == 0)
            return 0;
        log_info("node state", "backend", backend, "node", name, "state", state, "reason", reason);
        return set_state(e, nd, have, "state", state, a, now, ei);
    }
    j = json_pack("{s:I,s:s,s:s}", "cluster_id", (json_int_t)cluster_id, "name", name, "state",
                  state);
    if (cpu_milli >= 0)
        json_object_set_new(j, "cpu_milli", json_integer(cpu_milli));
    if (mem_mib >= 0)
        json_object_set_new(j, "memory_mib", json_integer(mem_mib));
    rc = new_row(nd, j, a, now, &r, ei);
    if (rc >= 0)
        rc = store_insert(e->db, nd, &r, ret_id, ei);
    if (rc >= 0)
        log_info("node added", "backend", backend, "node", name, "state", state);
    return rc < 0 ? rc : 1;
}

/* Brings one Slurm cluster's nodes and GPUs into the store; returns how many rows changed. */
static int slurm_apply(struct engine *e, int64_t cluster_id, const struct slurm_node *nodes,
                       size_t n_nodes, int64_t now, struct arena *a, struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes, *gd = &model_gpus;
    struct store_filter f;
    struct row *rows, *gpus, r;
    size_t n_rows, n_gpus;
    int changed = 0, rc;

    store_filter_init(&f);
    f.limit = 10000;
    store_filter_eq_int(&f, model_field_index(nd, "cluster_id"), cluster_id);
    if ((rc = store_list(e->db, nd, &f, a, &rows, &n_rows, ei)) < 0)
        return rc;
    for (size_t k = 0; rc >= 0 && k < n_nodes; k++) {
        const struct slurm_node *sn = &nodes[k];
        int64_t node_id = 0, class_id = 0;
        rc = sync_node(e, cluster_id, rows, n_rows, sn->name, sn->cpu_milli, sn->mem_mib, sn->state,
                       false, "slurm", sn->reason, a, now, &node_id, ei);
        if (rc > 0)
            changed += rc;
        if (rc < 0 || sn->n_gpus <= 0 || !model_valid_name(sn->gpu_type, 63))
            continue;
        store_filter_init(&f);
        f.limit = 10000;
        store_filter_eq_int(&f, model_field_index(gd, "node_id"), node_id);
        if ((rc = store_list(e->db, gd, &f, a, &gpus, &n_gpus, ei)) < 0 ||
            (int32_t)n_gpus >= sn->n_gpus ||
            (rc = class_id_of(e, sn->gpu_type, NULL, 0, a, now, &class_id, ei)) < 0)
            continue;
        for (int32_t i = 0; rc >= 0 && i < sn->n_gpus; i++) {
            bool exists = false;
            int64_t id;
            for (size_t g = 0; g < n_gpus; g++)
                exists |= get_i(gd, &gpus[g], "index") == i;
            if (exists)
                continue;
            rc = new_row(gd,
                         json_pack("{s:I,s:i,s:I}", "node_id", (json_int_t)node_id, "index", i,
                                   "gpu_class_id", (json_int_t)class_id),
                         a, now, &r, ei);
            if (rc >= 0)
                rc = store_insert(e->db, gd, &r, &id, ei);
            changed++;
        }
    }
    /* Nodes Slurm no longer lists: down, kept. */
    for (size_t i = 0; rc >= 0 && i < n_rows; i++) {
        bool listed = false;
        for (size_t k = 0; k < n_nodes; k++)
            listed |= strcmp(get_s(nd, &rows[i], "name"), nodes[k].name) == 0;
        if (listed || strcmp(get_s(nd, &rows[i], "state"), "down") == 0)
            continue;
        rc = set_state(e, nd, &rows[i], "state", "down", a, now, ei);
        changed++;
    }
    return rc < 0 ? rc : changed;
}

static void slurm_sync(struct engine *e, int64_t now)
{
    if (now - e->slurm_synced < e->opt.slurm_sync_ms)
        return;
    e->slurm_synced = now;
    for (size_t b = 0; b < e->n_backends; b++) {
        struct slurm_node *nodes = NULL;
        struct error_info ei = {0};
        struct arena a;
        size_t n = 0;
        int rc;
        if (strcmp(e->backends[b].b->ops->name, "slurm") != 0)
            continue;
        if (backend_slurm_nodes(e->backends[b].b, &nodes, &n, &ei) < 0) {
            log_warn("could not read Slurm's nodes; keeping what the store has", "error",
                     ei.message);
            continue;
        }
        arena_init(&a);
        rc = store_begin(e->db, &ei);
        if (rc >= 0)
            rc = slurm_apply(e, e->backends[b].cluster_id, nodes, n, now, &a, &ei);
        if (rc >= 0 && store_commit(e->db, &ei) >= 0) {
            if (rc > 0)
                e->reload = true; /* the fleet changed: rebuild on the next round */
        } else {
            store_rollback(e->db);
            log_error("could not record Slurm's nodes", "error", ei.message);
        }
        arena_release(&a);
        slurm_nodes_free(nodes, n);
    }
}

/*
 * Slurm picks which of a node's GPUs a job gets (CUDA_VISIBLE_DEVICES); the
 * scheduler picked GPU rows. They differ when something gpuaas does not
 * know holds a GPU (a job submitted to Slurm directly). The backend tells
 * which indices Slurm gave (backend_slurm_take_devices, once per job and
 * node); here each of the workload's open allocations on that node whose
 * GPU Slurm did not give moves to one it did, in one transaction with a
 * "devices" event. When that GPU has an open whole-GPU allocation of other
 * work (which Slurm must then have put elsewhere), the two rows swap GPUs:
 * Slurm's view is consistent, so swaps converge as the other jobs' reports
 * come. Shares (milli < 1000), GPUs of another class, a count that differs
 * and unknown nodes or indices are skipped with a log line. Returns how many
 * rows moved (the caller then rebuilds the scheduler, which holds GPU ids:
 * rare, never per job), 0, or an error.
 */
static int reconcile_devices(struct engine *e, int64_t cluster_id,
                             const struct slurm_job_devices *d, int64_t now, struct arena *a,
                             struct error_info *ei)
{
    const struct resource_def *ad = &model_allocations;
    const struct node_info *node = NULL;
    int64_t given[SLURM_MAX_NODE_DEVICES], project = 0;
    struct store_filter f;
    struct row *mine, *moved[SLURM_MAX_NODE_DEVICES];
    size_t n_mine, n_moved = 0;
    struct buf was, got;
    const char *skip = NULL;
    char wid[24];
    int rc;

    snprintf(wid, sizeof(wid), "%" PRId64, d->workload_id);
    for (size_t i = 0; i < e->n_nodes && !node; i++) {
        if (e->nodes[i].cluster_id == cluster_id && strcmp(e->nodes[i].name, d->node) == 0)
            node = &e->nodes[i];
    }
    if (!node) {
        log_warn("slurm devices: node unknown; allocation kept", "workload", wid, "node", d->node);
        return 0;
    }
    for (size_t k = 0; k < d->n_indices; k++) {
        const struct gpu_info *g = NULL;
        for (size_t i = 0; i < e->n_gpus && !g; i++) {
            if (e->gpus[i].node_id == node->id && e->gpus[i].index == d->indices[k])
                g = &e->gpus[i];
        }
        if (!g) {
            log_warn("slurm devices: Slurm gave a GPU index the store lacks; allocation kept",
                     "workload", wid, "node", d->node);
            return 0;
        }
        given[k] = g->id;
    }

    store_filter_init(&f);
    f.limit = 1000;
    store_filter_eq_int(&f, model_field_index(ad, "workload_id"), d->workload_id);
    store_filter_eq_int(&f, model_field_index(ad, "node_id"), node->id);
    store_filter_eq_null(&f, model_field_index(ad, "ended_ms"));
    rc = store_list(e->db, ad, &f, a, &mine, &n_mine, ei);
    if (rc < 0 || n_mine == 0)
        return rc; /* ended meanwhile, or not on that node */
    for (size_t i = 0; i < n_mine && !skip; i++) {
        const struct value *g = get(ad, &mine[i], "gpu_id");
        if (g->null || get_i(ad, &mine[i], "milli") < 1000)
            skip = "a share or a GPU-less allocation";
    }
    if (!skip && n_mine != d->n_indices)
        skip = "Slurm gave another number of GPUs";
    if (skip) {
        log_warn("slurm devices: allocation kept", "workload", wid, "node", d->node, "why", skip);
        return 0;
    }

    /* Mine on a GPU Slurm did not give -> a given GPU none of mine is on. */
    buf_init(&was, 4096);
    buf_init(&got, 4096);
    for (size_t i = 0; i < n_mine && rc >= 0 && !skip; i++) {
        int64_t old = get_i(ad, &mine[i], "gpu_id"), target = 0;
        const struct gpu_info *og = FIND_BY_ID(e->gpus, e->n_gpus, old), *tg;
        struct row *others;
        size_t n_others;
        bool ok = false;

        for (size_t k = 0; k < d->n_indices && !ok; k++)
            ok = given[k] == old;
        if (ok)
            continue;
        for (size_t k = 0; k < d->n_indices && !target; k++) {
            bool taken = false;
            for (size_t j = 0; j < n_mine; j++)
                taken |= get_i(ad, &mine[j], "gpu_id") == given[k];
            for (size_t j = 0; j < n_moved; j++)
                taken |= get_i(ad, moved[j], "gpu_id") == given[k];
            if (!taken)
                target = given[k];
        }
        tg = target ? FIND_BY_ID(e->gpus, e->n_gpus, target) : NULL;
        if (!og || !tg) {
            skip = "its allocations do not match Slurm's GPUs one to one";
            break;
        }
        if (og->class_id != tg->class_id) {
            skip = "the GPUs are of different classes";
            break;
        }
        store_filter_init(&f);
        f.limit = 100;
        store_filter_eq_int(&f, model_field_index(ad, "gpu_id"), target);
        store_filter_eq_null(&f, model_field_index(ad, "ended_ms"));
        rc = store_list(e->db, ad, &f, a, &others, &n_others, ei);
        if (rc < 0)
            break;
        if (n_others > 1 || (n_others == 1 && get_i(ad, &others[0], "milli") < 1000)) {
            skip = "the GPU Slurm gave is shared by other work";
            break;
        }
        if (n_others == 1) {
            /* other work's row on the GPU Slurm gave us takes ours; its own report fixes it */
            set_i(ad, &others[0], "gpu_id", old);
            rc = store_update(e->db, ad, model_row_id(&others[0]), &others[0], ei);
            if (rc >= 0)
                log_info("slurm devices: allocations swapped", "workload", wid, "node", d->node);
        }
        set_i(ad, &mine[i], "gpu_id", target);
        if (rc >= 0)
            rc = store_update(e->db, ad, model_row_id(&mine[i]), &mine[i], ei);
        moved[n_moved++] = &mine[i];
        buf_printf(&was, "%s%d", was.len ? "," : "", (int)og->index);
        buf_printf(&got, "%s%d", got.len ? "," : "", (int)tg->index);
        project = get_i(ad, &mine[i], "project_id");
    }
    if (rc >= 0 && skip) {
        log_warn("slurm devices: allocation kept", "workload", wid, "node", d->node, "why", skip);
        rc = ERR_CONFLICT; /* roll back what moved */
        errinfo_set(ei, rc, NULL, "%s", skip);
    }
    if (rc >= 0 && n_moved > 0) {
        char *msg = arena_printf(a, "Slurm gave GPUs %s of %s, not %s: allocation moved", got.data,
                                 d->node, was.data);
        rc = add_event(e, a, d->workload_id, project, now, "devices", msg, ei);
        if (rc >= 0)
            log_info("slurm devices: allocation moved", "workload", wid, "node", d->node, "gpus",
                     got.data, "was", was.data);
    }
    buf_release(&was);
    buf_release(&got);
    return rc < 0 ? rc : (int)n_moved;
}

/* Takes what Slurm's backends learnt of devices and reconciles allocations; rebuilds on a move. */
static void slurm_devices(struct engine *e, int64_t now)
{
    bool moved = false;

    for (size_t b = 0; b < e->n_backends; b++) {
        struct slurm_job_devices devs[8];
        size_t n;
        if (strcmp(e->backends[b].b->ops->name, "slurm") != 0)
            continue;
        while ((n = backend_slurm_take_devices(e->backends[b].b, devs, ARRAY_SIZE(devs))) > 0) {
            for (size_t i = 0; i < n; i++) {
                struct error_info ei = {0};
                struct arena a;
                int rc;
                arena_init(&a);
                rc = store_begin(e->db, &ei);
                if (rc >= 0)
                    rc = reconcile_devices(e, e->backends[b].cluster_id, &devs[i], now, &a, &ei);
                if (rc >= 0) {
                    /* A failed commit has rolled back. */
                    if (store_commit(e->db, &ei) >= 0)
                        moved |= rc > 0;
                    else
                        log_error("could not reconcile Slurm's devices", "error", ei.message);
                } else {
                    store_rollback(e->db);
                    if (ei.code != ERR_CONFLICT)
                        log_error("could not reconcile Slurm's devices", "error", ei.message);
                }
                arena_release(&a);
            }
        }
    }
    if (moved)
        rebuild(e, "allocations moved to Slurm's devices");
}

/*
 * Local clusters: this machine's GPUs, from the NVML or nvidia-smi collector
 * when one reports any, else from the declared list (local-gpus). Each
 * local cluster gets a node named after this host, and on it one GPU row
 * per device, found by UUID (a row without one, by index). A GPU no longer
 * reported turns health "down" (the scheduler leaves it out), never
 * deleted; reported again it is "ok" again. The host's node is the
 * discovery's: a GPU on it that is not reported turns down, whoever made
 * it. Other nodes of a local cluster (made through the API) are left alone.
 * A GPU with MIG instances reported is scheduled as its instances: each is
 * a row of its own (its MIG-... UUID, class "<parent class>/<profile>"),
 * and the parent row turns health "mig", which the scheduler leaves out
 * like "down", so the same memory is never offered twice. Without
 * instances the parent is "ok" again and the instances' rows go down.
 */
struct local_gpu {
    int32_t index;     /* wanted index */
    int32_t min_index; /* a taken index is replaced by the lowest free one from here */
    char cls[64];
    const char *uuid;   /* "" when unknown */
    const char *model;  /* vendor string; "" when declared */
    int64_t memory_mib; /* 0: unknown */
    int mig_mode;       /* -1: unknown */
    bool split;         /* a whole GPU whose MIG instances are rows of their own */
    const char *parent; /* a MIG instance's parent's UUID; NULL for a whole GPU */
};

/* Where MIG instances' rows are numbered: GPU p's instance i at 100 x (p + 1) + i. */
#define LOCAL_MIG_INDEX_BASE 100

/* Index of the row of gpus that is f: same UUID, or same index when f has no UUID. */
static struct row *local_match(struct row *gpus, size_t n, const struct local_gpu *f)
{
    const struct resource_def *gd = &model_gpus;
    for (size_t i = 0; i < n; i++) {
        if (*f->uuid && strcmp(get_s(gd, &gpus[i], "uuid"), f->uuid) == 0)
            return &gpus[i];
    }
    /* a row made without a UUID (by hand, or declared) at the same index takes it on */
    for (size_t i = 0; i < n; i++) {
        if (get_i(gd, &gpus[i], "index") == f->index &&
            (!*f->uuid || !*get_s(gd, &gpus[i], "uuid")))
            return &gpus[i];
    }
    return NULL;
}

static bool index_used(const struct row *gpus, size_t n, int32_t index)
{
    for (size_t k = 0; k < n; k++) {
        if (get_i(&model_gpus, &gpus[k], "index") == index)
            return true;
    }
    return false;
}

/*
 * An index no row of gpus has: want when free, else the lowest free one
 * (a new GPU at the index of one that went away: CUDA numbers devices
 * anew); -1 when none is. Work is pinned by UUID, so the number is only a
 * label then.
 */
static int32_t local_free_index(const struct row *gpus, size_t n, int32_t want, int32_t from)
{
    if (want >= from && want < 1024 && !index_used(gpus, n, want))
        return want;
    for (int32_t i = from; i < 1024; i++) {
        if (!index_used(gpus, n, i))
            return i;
    }
    return -1;
}

/* Updates row r to describe f; how many rows changed (0 or 1), or an error. */
static int local_update(struct engine *e, int64_t class_id, struct row *r,
                        const struct local_gpu *f, struct arena *a, int64_t now,
                        struct error_info *ei)
{
    const struct resource_def *gd = &model_gpus;
    const struct value *mig = get(gd, r, "mig_mode");
    const char *health, *want;
    bool change = false;
    int rc;

    if (*f->uuid && strcmp(get_s(gd, r, "uuid"), f->uuid) != 0) {
        set_s(gd, a, r, "uuid", f->uuid);
        change = true;
    }
    if (get_i(gd, r, "gpu_class_id") != class_id) {
        set_i(gd, r, "gpu_class_id", class_id);
        change = true;
    }
    if (f->memory_mib > 0 && get_i(gd, r, "memory_mib") != f->memory_mib) {
        set_i(gd, r, "memory_mib", f->memory_mib);
        change = true;
    }
    if (f->mig_mode >= 0 && (mig->null || mig->i != f->mig_mode)) {
        set_i(gd, r, "mig_mode", f->mig_mode);
        change = true;
    }
    /* down (not reported), mig (split) and ok follow the readings; failed, degraded stay */
    health = get_s(gd, r, "health");
    want = f->split ? "mig" : "ok";
    if ((strcmp(health, "down") == 0 || strcmp(health, "ok") == 0 || strcmp(health, "mig") == 0) &&
        strcmp(health, want) != 0) {
        char idx[16];
        snprintf(idx, sizeof(idx), "%d", f->index);
        if (f->split)
            log_info("local GPU split into MIG instances; they are scheduled instead", "uuid",
                     f->uuid, "index", idx);
        else if (strcmp(health, "mig") == 0)
            log_info("local GPU has no MIG instances; scheduled whole again", "uuid", f->uuid,
                     "index", idx);
        else
            log_info("local GPU reported again", "uuid", f->uuid, "index", idx);
        set_s(gd, a, r, "health", want);
        change = true;
    }
    if (!change)
        return 0;
    set_i(gd, r, "updated_at", now / 1000);
    rc = store_update(e->db, gd, model_row_id(r), r, ei);
    return rc < 0 ? rc : 1;
}

/* Brings one local cluster's node and GPUs up to date with found; how many rows changed. */
static int local_apply(struct engine *e, int64_t cluster_id, const char *host,
                       const struct local_gpu *found, size_t n_found, int64_t now, struct arena *a,
                       struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes, *gd = &model_gpus;
    struct store_filter f;
    struct row *nodes, *listed, *gpus, r;
    size_t n_nodes, n_gpus;
    int64_t node_id = 0;
    bool *seen;
    int changed = 0, rc;

    store_filter_init(&f);
    f.limit = 10000;
    store_filter_eq_int(&f, model_field_index(nd, "cluster_id"), cluster_id);
    if ((rc = store_list(e->db, nd, &f, a, &nodes, &n_nodes, ei)) < 0)
        return rc;
    /* an admin's drain or down of the host's node stays */
    rc = sync_node(e, cluster_id, nodes, n_nodes, host, -1, -1, "ready", true, "local", "", a, now,
                   &node_id, ei);
    if (rc < 0)
        return rc;
    changed += rc;
    store_filter_init(&f);
    f.limit = 10000;
    store_filter_eq_int(&f, model_field_index(gd, "node_id"), node_id);
    if ((rc = store_list(e->db, gd, &f, a, &listed, &n_gpus, ei)) < 0)
        return rc;
    /* room for the GPUs added here, so later ones do not take their index */
    gpus = arena_calloc(a, n_gpus + n_found + 1, sizeof(*gpus));
    if (n_gpus)
        memcpy(gpus, listed, n_gpus * sizeof(*gpus));
    seen = arena_calloc(a, n_gpus + n_found + 1, sizeof(*seen));
    for (size_t k = 0; rc >= 0 && k < n_found; k++) {
        const struct local_gpu *fg = &found[k];
        struct row *have = local_match(gpus, n_gpus, fg);
        int64_t class_id, id;
        int32_t index;

        if ((rc = class_id_of(e, fg->cls, fg->model, fg->memory_mib, a, now, &class_id, ei)) < 0)
            break;
        if (have) {
            seen[have - gpus] = true;
            if ((rc = local_update(e, class_id, have, fg, a, now, ei)) > 0)
                changed += rc;
            continue;
        }
        if (*fg->uuid) { /* UUIDs are unique: one held elsewhere (another cluster) stays there */
            struct row *other;
            size_t n_other;
            store_filter_init(&f);
            store_filter_eq_str(&f, model_field_index(gd, "uuid"), fg->uuid);
            if ((rc = store_list(e->db, gd, &f, a, &other, &n_other, ei)) < 0)
                break;
            if (n_other) {
                log_debug("local GPU already in another node; left there", "uuid", fg->uuid);
                continue;
            }
        }
        if ((index = local_free_index(gpus, n_gpus, fg->index, fg->min_index)) < 0)
            continue;
        {
            json_t *j = json_pack("{s:I,s:i,s:I}", "node_id", (json_int_t)node_id, "index", index,
                                  "gpu_class_id", (json_int_t)class_id);
            if (*fg->uuid)
                json_object_set_new(j, "uuid", json_string(fg->uuid));
            if (fg->memory_mib > 0)
                json_object_set_new(j, "memory_mib", json_integer(fg->memory_mib));
            if (fg->mig_mode >= 0)
                json_object_set_new(j, "mig_mode", json_boolean(fg->mig_mode));
            if (fg->split)
                json_object_set_new(j, "health", json_string("mig"));
            rc = new_row(gd, j, a, now, &r, ei);
        }
        if (rc >= 0)
            rc = store_insert(e->db, gd, &r, &id, ei);
        if (rc < 0)
            break;
        log_info("local GPU added", "node", host, "uuid", fg->uuid, "class", fg->cls);
        changed++;
        gpus[n_gpus] = r;
        seen[n_gpus++] = true;
    }
    /* GPUs of this host no longer reported: down, kept. */
    for (size_t i = 0; rc >= 0 && i < n_gpus; i++) {
        const char *health = get_s(gd, &gpus[i], "health");
        if (seen[i] || strcmp(health, "down") == 0 || strcmp(health, "failed") == 0)
            continue;
        log_warn("local GPU no longer reported; marked down", "node", host, "uuid",
                 get_s(gd, &gpus[i], "uuid"));
        rc = set_state(e, gd, &gpus[i], "health", "down", a, now, ei);
        changed++;
    }
    return rc < 0 ? rc : changed;
}

/*
 * The GPUs to record: the collector's readings (whole GPUs, and MIG
 * instances with their own UUID, which make their parent split), else the
 * declared list; false: none known.
 */
static bool local_found(struct engine *e, const struct inv_readings *rs, uint64_t runs,
                        struct arena *a, struct local_gpu **ret, size_t *ret_n)
{
    struct local_gpu *found = arena_calloc(a, rs->n + e->opt.n_local_gpus + 1, sizeof(*found));
    size_t n = 0;

    for (size_t i = 0; i < rs->n; i++) {
        const struct inv_reading *r = &rs->v[i];
        const bool inst = r->mig_instance >= 0;
        struct local_gpu *f = &found[n];
        if (inst && !r->mig_uuid[0])
            continue;
        if (inv_model_class(r->model, inst ? r->mig_profile : NULL, f->cls, sizeof(f->cls)) < 0)
            snprintf(f->cls, sizeof(f->cls), "unknown%s%.32s", inst ? "/" : "",
                     inst ? r->mig_profile : "");
        if (inst ? !model_valid_ident(f->cls, 63) || !strchr(f->cls, '/')
                 : !model_valid_name(f->cls, 63))
            continue; /* the store would refuse it */
        if (!model_valid_ident(inst ? r->mig_uuid : r->uuid, 128))
            continue;
        f->index = r->index;
        f->uuid = inst ? r->mig_uuid : r->uuid;
        f->model = r->model;
        f->memory_mib = inv_has(r->fb_total_mib) ? (int64_t)r->fb_total_mib : 0;
        f->mig_mode = r->mig_mode;
        if (inst) {
            /* an index no physical GPU has: GPU 0's instance 3 is 103 */
            f->min_index = LOCAL_MIG_INDEX_BASE;
            f->index = r->index >= 0 && r->mig_instance < LOCAL_MIG_INDEX_BASE
                           ? LOCAL_MIG_INDEX_BASE * (r->index + 1) + r->mig_instance
                           : -1;
            f->mig_mode = 1;
            f->parent = r->uuid;
        }
        n++;
    }
    /* parents of the instances kept: split */
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; found[i].parent && k < n; k++)
            found[k].split |= !found[k].parent && strcmp(found[k].uuid, found[i].parent) == 0;
    }
    for (size_t i = 0; rs->n == 0 && i < e->opt.n_local_gpus; i++) {
        const struct inv_declared_gpu *d = &e->opt.local_gpus[i];
        struct local_gpu *f = &found[n++];
        f->index = d->index;
        snprintf(f->cls, sizeof(f->cls), "%s", d->cls);
        f->uuid = d->uuid;
        f->model = "";
        f->mig_mode = -1;
    }
    *ret = found;
    *ret_n = n;
    /* sources that ran and found nothing, with nothing declared: every GPU is gone */
    return n > 0 || runs > 0;
}

/*
 * Local clusters' GPUs, after each good run of the NVML or nvidia-smi
 * collector and whenever the fleet is reloaded (a local cluster may be new).
 */
static void local_sync(struct engine *e, int64_t now)
{
    struct inv_readings rs;
    struct local_gpu *found;
    size_t n_found;
    uint64_t runs = 0;
    char host[256];
    struct arena a;
    bool any = false;

    for (size_t b = 0; b < e->n_backends && !any; b++)
        any = strcmp(e->backends[b].b->ops->name, "local") == 0;
    if (!any || (!e->opt.collector && e->opt.n_local_gpus == 0))
        return;
    inv_readings_init(&rs, 0);
    collector_local_gpus(e->opt.collector, &rs, &runs);
    if (runs == e->local_runs && !e->local_due) {
        inv_readings_release(&rs);
        return;
    }
    e->local_runs = runs;
    e->local_due = false;
    if (gethostname(host, sizeof(host)) != 0)
        host[0] = '\0';
    host[sizeof(host) - 1] = '\0';
    if (!model_valid_ident(host, 128)) {
        if (!e->local_host_warned)
            log_error("this host's name cannot name a node; local GPUs are not discovered", "host",
                      host);
        e->local_host_warned = true;
        inv_readings_release(&rs);
        return;
    }
    arena_init(&a);
    if (local_found(e, &rs, runs, &a, &found, &n_found)) {
        for (size_t b = 0; b < e->n_backends; b++) {
            struct error_info ei = {0};
            int rc;
            if (strcmp(e->backends[b].b->ops->name, "local") != 0)
                continue;
            rc = store_begin(e->db, &ei);
            if (rc >= 0)
                rc = local_apply(e, e->backends[b].cluster_id, host, found, n_found, now, &a, &ei);
            if (rc >= 0 && store_commit(e->db, &ei) >= 0) {
                if (rc > 0)
                    e->reload = true; /* the fleet changed: rebuild on the next round */
            } else {
                store_rollback(e->db);
                log_error("could not record this machine's GPUs", "error", ei.message);
            }
        }
    }
    arena_release(&a);
    inv_readings_release(&rs);
}

/* One round: new work, backend ends, a pass, its decisions. Called with the lock held. */
static void iterate(struct engine *e)
{
    int64_t now = time_now_ms();
    struct backend_event evs[512];
    struct error_info ei = {0};

    apply_changes(e);
    if (e->reload) {
        e->reload = false;
        size_t n;
        free(drain_inbox(e, &n)); /* the reload reads queued work from the store */
        rebuild(e, "configuration changed");
    }
    take_inbox(e, now);
    for (size_t b = 0; b < e->n_backends; b++) {
        size_t n;
        while ((n = e->backends[b].b->ops->poll(e->backends[b].b, now, evs, ARRAY_SIZE(evs))) > 0) {
            for (size_t i = 0; i < n; i++) {
                char id[24];
                if (evs[i].how != BACKEND_NOT_STARTED)
                    continue;
                snprintf(id, sizeof(id), "%" PRId64, evs[i].workload_id);
                log_error("could not launch workload", "workload", id, "error",
                          evs[i].message[0] ? evs[i].message : "its backend could not start it");
            }
            handle_ends(e, evs, n);
            if (n < ARRAY_SIZE(evs))
                break;
        }
    }
    slurm_devices(e, now);
    sched_decisions_reset(&e->dec);
    sched_pass(e->sched, now, &e->dec);
    if (apply_decisions(e, now, &ei) < 0) {
        log_error("could not write scheduling decisions; rebuilding from the store", "error",
                  ei.message);
        rebuild(e, "decisions not written");
    }
    stage_successors(e, now);
    meter_chores(e, now);
    idle_chores(e, now);
    slurm_sync(e, now);
    local_sync(e, now);
    e->iterations++;
    pthread_cond_broadcast(&e->cond);
}

#define LOCAL_LOOK_MS 20

static void *engine_main(void *arg)
{
    struct engine *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stopping) {
        int64_t now = time_now_ms(), due = now + e->opt.tick_ms;
        struct timespec ts;
        bool idle;
        for (size_t b = 0; b < e->n_backends; b++) {
            int64_t t = e->backends[b].b->ops->next_event_ms(e->backends[b].b);
            /*
             * A process that ends says nothing: look at local work often, so
             * its GPUs go to the next job within LOCAL_LOOK_MS, not a tick.
             */
            if (strcmp(e->backends[b].b->ops->name, "local") == 0 && now + LOCAL_LOOK_MS < t)
                t = now + LOCAL_LOOK_MS;
            if (t < due)
                due = t;
        }
        idle = e->n_changes == 0 && !e->reload && due > now;
        pthread_mutex_unlock(&e->lock);
        /* Sleep until due or woken, holding only the wake lock. */
        ts.tv_sec = (time_t)(due / 1000);
        ts.tv_nsec = (long)(due % 1000) * 1000000;
        pthread_mutex_lock(&e->wake_lock);
        while (idle && !e->woken && pthread_cond_timedwait(&e->wake_cond, &e->wake_lock, &ts) == 0)
            ;
        e->woken = false;
        pthread_mutex_unlock(&e->wake_lock);
        pthread_mutex_lock(&e->lock);
        if (!e->stopping)
            iterate(e);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- the public side ---- */

void engine_options_init(struct engine_options *opt)
{
    memset(opt, 0, sizeof(*opt)); /* what is not set below is off */
    opt->sim_speed = 1;
    opt->reserve_after_ms = 10 * 60 * 1000;
    opt->default_grace_ms = 30 * 1000;
    opt->tick_ms = 1000;
    opt->log_dir = "gpuaas-logs";
    opt->cgroup_root = NULL;
    opt->run_uid = opt->run_gid = -1;
    opt->collector = NULL;
    opt->idle_notify_ms = opt->idle_stop_p2_ms = 0;
    opt->slurm_sync_ms = 30000;
    opt->slurm_poll_ms = 200;
    opt->policy = NULL;
    opt->local_gpus = NULL;
    opt->n_local_gpus = 0;
}

/*
 * At start, after every workload's job was adopted: Slurm jobs of this
 * daemon that no workload claims (left by a crash between a submission or
 * cancel and its record) are cancelled before anything is launched again.
 */
static void sweep_slurm(struct engine *e)
{
    for (size_t i = 0; i < e->n_backends; i++) {
        struct backend *b = e->backends[i].b;
        char cluster[24], count[24], first[24];
        int64_t ids[1];
        size_t n;
        if (strcmp(b->ops->name, "slurm") != 0)
            continue;
        snprintf(cluster, sizeof(cluster), "%" PRId64, e->backends[i].cluster_id);
        if (backend_slurm_sweep(b, ids, ARRAY_SIZE(ids), &n) < 0) {
            log_warn("could not look for Slurm jobs no workload claims", "cluster", cluster);
            continue;
        }
        if (n == 0)
            continue;
        snprintf(count, sizeof(count), "%zu", n);
        snprintf(first, sizeof(first), "%" PRId64, ids[0]);
        log_warn("cancelled Slurm jobs of this daemon that no workload claims", "cluster", cluster,
                 "jobs", count, "first", first);
    }
}

int engine_start(struct store *store, const struct engine_options *opt, struct engine **ret,
                 struct error_info *ei)
{
    struct engine *e = xcalloc(1, sizeof(*e));
    int rc;

    e->store = store;
    e->opt = *opt;
    metrics_histogram_init(&e->metrics.queue_wait, queue_wait_bounds,
                           ARRAY_SIZE(queue_wait_bounds));
    metrics_histogram_init(&e->metrics.reclaim, reclaim_bounds, ARRAY_SIZE(reclaim_bounds));
    e->db = store_conn_get(store);
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    pthread_mutex_init(&e->wake_lock, NULL);
    pthread_cond_init(&e->wake_cond, NULL);
    arena_init(&e->change_arena);
    sched_decisions_init(&e->dec);
    rc = engine_load(e, true, ei);
    if (rc < 0) {
        engine_stop(e);
        return rc;
    }
    sweep_slurm(e);
    if (pthread_create(&e->thread, NULL, engine_main, e) != 0) {
        engine_stop(e);
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not start the scheduler thread");
    }
    e->started = true;
    *ret = e;
    return 0;
}

void engine_stop(struct engine *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->lock);
        e->stopping = true;
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        wake(e);
        pthread_join(e->thread, NULL);
    }
    forget_fleet(e);
    for (size_t i = 0; i < e->n_backends; i++)
        e->backends[i].b->ops->free(e->backends[i].b);
    for (size_t i = 0; i < e->n_labels; i++)
        free(e->labels[i]);
    free(e->labels);
    free(e->idle);
    free(e->backends);
    free(e->inbox);
    free(e->cancelling);
    free(e->victims);
    free(e->staged);
    free(e->unstaging);
    free(e->no_stage);
    free(e->changes);
    arena_release(&e->change_arena);
    sched_decisions_release(&e->dec);
    if (e->db)
        store_conn_put(e->db);
    pthread_cond_destroy(&e->cond);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake_cond);
    pthread_mutex_destroy(&e->wake_lock);
    free(e);
}

void engine_submitted(struct engine *e, int64_t workload_id)
{
    pthread_mutex_lock(&e->wake_lock);
    *APPEND(e->inbox, e->n_inbox, e->cap_inbox) = workload_id;
    e->woken = true;
    pthread_cond_signal(&e->wake_cond);
    pthread_mutex_unlock(&e->wake_lock);
}

void engine_config_changed(struct engine *e, const struct resource_def *def, const struct row *row,
                           bool deleted)
{
    pthread_mutex_lock(&e->lock);
    if (def == &model_projects || def == &model_quotas || def == &model_org_quotas ||
        def == &model_flavors) {
        struct change *c = APPEND(e->changes, e->n_changes, e->cap_changes);
        c->def = def;
        c->deleted = deleted;
        c->row = model_row_new(def, &e->change_arena);
        for (size_t i = 0; i < def->n_fields; i++) {
            c->row.v[i] = row->v[i];
            if (row->v[i].s)
                c->row.v[i].s = arena_strdup(&e->change_arena, row->v[i].s);
        }
    } else {
        e->reload = true;
    }
    pthread_mutex_unlock(&e->lock);
    wake(e);
}

static int cancel_queued(struct engine *e, int64_t id, struct error_info *ei)
{
    struct arena a;
    struct row w;
    int64_t now = time_now_ms();
    int rc;

    arena_init(&a);
    rc = store_begin(e->db, ei);
    if (rc >= 0)
        rc = store_get(e->db, &model_workloads, id, &a, &w, ei);
    if (rc >= 0) {
        set_s(&model_workloads, &a, &w, "state", "cancelled");
        set_s(&model_workloads, &a, &w, "reason", "cancelled while queued");
        set_null(&model_workloads, &w, "queued_after");
        set_i(&model_workloads, &w, "finished_at", now / 1000);
        set_i(&model_workloads, &w, "updated_at", now / 1000);
        rc = store_update(e->db, &model_workloads, id, &w, ei);
    }
    if (rc >= 0)
        rc = add_event(e, &a, id, get_i(&model_workloads, &w, "project_id"), now, "cancelled",
                       "cancelled while queued", ei);
    if (rc >= 0)
        rc = store_commit(e->db, ei);
    if (rc < 0)
        store_rollback(e->db);
    else
        sched_cancel(e->sched, id, now);
    arena_release(&a);
    return rc;
}

/*
 * Cancels queued work the scheduler does not hold: queued ahead in its
 * backend (its pending job is cancelled there) or being taken back from it.
 */
static int cancel_aside(struct engine *e, int64_t id, struct error_info *ei)
{
    struct staged *st = staged_find(e, id);
    struct unstaging *u;
    int rc = cancel_queued(e, id, ei); /* the store's record; the scheduler does not know it */

    if (rc < 0)
        return rc;
    if (st) {
        struct backend *b = st->b;
        struct staged *next;
        staged_remove(e, id);
        /* What waits behind it would start once its job is cancelled: taken back first. */
        while ((next = staged_behind(e, id)))
            unstage(e, next->id, "the workload it waited for was cancelled", time_now_ms());
        b->ops->stop(b, id, 0, time_now_ms());
        *APPEND(e->unstaging, e->n_unstaging, e->cap_unstaging) = (struct unstaging){id, false};
    } else if ((u = unstaging_find(e, id))) {
        u->requeue = false;
    }
    return 0;
}

/*
 * Stops running work for good (signal, its grace, kill): it ends cancelled,
 * with a "cancelling" event saying why. Called with the lock held.
 */
static int stop_running(struct engine *e, int64_t workload_id, const char *why,
                        struct error_info *ei)
{
    int64_t now = time_now_ms(), grace = e->opt.default_grace_ms;
    struct arena a;
    struct row w;
    bool already = false;
    int rc;

    for (size_t i = 0; i < e->n_cancelling; i++)
        already |= e->cancelling[i] == workload_id;
    if (!already)
        *APPEND(e->cancelling, e->n_cancelling, e->cap_cancelling) = workload_id;
    arena_init(&a);
    rc = store_get(e->db, &model_workloads, workload_id, &a, &w, ei);
    if (rc >= 0) {
        const struct value *g = get(&model_workloads, &w, "grace_s");
        if (!g->null)
            grace = g->i * 1000; /* the workload's own grace, as for a preemption */
        rc = add_event(e, &a, workload_id, get_i(&model_workloads, &w, "project_id"), now,
                       "cancelling", why, ei);
    }
    for (size_t b = 0; b < e->n_backends; b++)
        e->backends[b].b->ops->stop(e->backends[b].b, workload_id, grace, now);
    arena_release(&a);
    return rc;
}

int engine_cancel(struct engine *e, int64_t workload_id, struct error_info *ei)
{
    struct sched_workload_info info;
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    /* Work submitted a moment ago may still be in the inbox. */
    take_inbox(e, time_now_ms());
    if (staged_find(e, workload_id) || unstaging_find(e, workload_id)) {
        rc = cancel_aside(e, workload_id, ei);
    } else if (sched_workload_info(e->sched, workload_id, &info) < 0) {
        rc = errinfo_set(ei, ERR_CONFLICT, NULL, "workload %" PRId64 " has already ended",
                         workload_id);
    } else if (info.state == SCHED_QUEUED) {
        rc = cancel_queued(e, workload_id, ei);
    } else {
        rc = stop_running(e, workload_id, "cancel requested: stopping", ei);
    }
    pthread_mutex_unlock(&e->lock);
    wake(e);
    return rc;
}

static void reason_text(const struct engine *e, const struct sched_reason *r, int64_t now,
                        char *buf, size_t size)
{
    struct arena a;
    const char *cls = class_name(e, r->class_id);
    arena_init(&a);
    switch (r->code) {
    case SCHED_WAIT_GUARANTEE:
        if (r->need > r->cap)
            snprintf(buf, size,
                     "can never run as owned (P1) work: it needs %s %s, more than the project's "
                     "guarantee of %s; submit it as opportunistic or ask for a larger guarantee",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->cap));
        else
            snprintf(buf, size,
                     "waiting for %s %s: owned (P1) work of the project would exceed its "
                     "guarantee (%s in use + %s asked > %s)",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->used), gpus_text(&a, r->need),
                     gpus_text(&a, r->cap));
        break;
    case SCHED_WAIT_LIMIT:
        if (r->need > r->cap)
            snprintf(buf, size,
                     "can never run: it needs %s %s, more than the project's limit of %s",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->cap));
        else
            snprintf(buf, size, "waiting for %s %s: project at its limit %s/%s",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->used), gpus_text(&a, r->cap));
        break;
    case SCHED_WAIT_ORG_CAP:
        if (r->need > r->cap)
            snprintf(buf, size,
                     "can never run: it needs %s %s, more than the organization's cap of %s",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->cap));
        else
            snprintf(buf, size, "waiting for %s %s: organization at its cap %s/%s",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->used), gpus_text(&a, r->cap));
        break;
    case SCHED_WAIT_CAPACITY:
        if (r->preemptible_at_ms > 0)
            snprintf(buf, size,
                     "waiting for %s %s: no room now (the most one replica could get is %s); "
                     "borrowed work in its way becomes preemptible in %" PRId64
                     " s (minimum runtime)",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->cap),
                     r->preemptible_at_ms > now ? (r->preemptible_at_ms - now + 999) / 1000 : 0);
        else
            snprintf(buf, size,
                     "waiting for %s %s: no room now (the most one replica could get is %s)",
                     gpus_text(&a, r->need), cls, gpus_text(&a, r->cap));
        break;
    case SCHED_WAIT_RECLAIM:
        snprintf(buf, size,
                 "reclaiming capacity for %s %s: %" PRId64 " preempted workload(s) are stopping",
                 gpus_text(&a, r->need), cls, r->count);
        break;
    case SCHED_WAIT_RESERVED:
        snprintf(buf, size, "%s capacity is held for workload %" PRId64 ", which waited longest",
                 cls, r->other_id);
        break;
    case SCHED_WAIT_NO_NODES:
        snprintf(buf, size,
                 "no node can ever run it: %s %s per replica with its labels and pools does not "
                 "exist in the fleet",
                 gpus_text(&a, r->per_replica), cls);
        break;
    default:
        sched_reason_format(r, buf, size);
    }
    arena_release(&a);
}

int engine_pending(struct engine *e, int64_t workload_id, struct engine_pending *ret)
{
    struct sched_workload_info info;
    int rc;
    const struct staged *st;
    memset(ret, 0, sizeof(*ret));
    pthread_mutex_lock(&e->lock);
    if ((st = staged_find(e, workload_id))) {
        size_t depth;
        staged_root(e, workload_id, &depth);
        ret->queued = true;
        /* next on those GPUs (or after the ones before it), ahead of the scheduler's queue */
        ret->position = (int)depth;
        snprintf(ret->reason, sizeof(ret->reason),
                 "queued in Slurm behind workload %" PRId64 ": starts on its GPUs when it ends",
                 st->after_id);
        pthread_mutex_unlock(&e->lock);
        return 0;
    }
    if (unstaging_find(e, workload_id)) {
        ret->queued = true; /* no place yet: it has none until Slurm gives it back */
        snprintf(ret->reason, sizeof(ret->reason),
                 "being taken back from its cluster's queue: queued here again once it is");
        pthread_mutex_unlock(&e->lock);
        return 0;
    }
    rc = sched_workload_info(e->sched, workload_id, &info);
    if (rc == 0 && info.state == SCHED_QUEUED) {
        ret->queued = true;
        ret->position = info.queue_position;
        reason_text(e, &info.reason, time_now_ms(), ret->reason, sizeof(ret->reason));
    }
    pthread_mutex_unlock(&e->lock);
    return rc < 0 ? ERR_NOT_FOUND : 0;
}

size_t engine_capacity(struct engine *e, struct engine_capacity *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&e->lock);
    for (size_t i = 0; i < e->n_classes && n < max; i++) {
        struct engine_capacity *c = &out[n++];
        c->class_id = e->classes[i].id;
        sched_class_capacity(e->sched, c->class_id, &c->capacity, &c->free);
        c->guaranteed = sched_class_guaranteed(e->sched, c->class_id);
    }
    pthread_mutex_unlock(&e->lock);
    return n;
}

int engine_metrics_write(struct engine *e, struct buf *b)
{
    static const char *const states[] = {NULL, "queued", "running", "preempting"};
    int64_t counts[SCHED_PREEMPTING + 1];
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    sched_count_states(e->sched, counts);
    counts[SCHED_QUEUED] += (int64_t)e->n_staged;
    rc |= metrics_header(b, "gpuaas_workloads", "gauge",
                         "Workloads the scheduler holds, by state (admitted work counts as "
                         "running; queued, work queued ahead in a Slurm cluster's own queue).");
    for (int st = SCHED_QUEUED; st <= SCHED_PREEMPTING; st++)
        rc |= metrics_sample(b, "gpuaas_workloads", (const char *[]){"state", states[st], NULL},
                             counts[st]);
    rc |= metrics_header(b, "gpuaas_workload_outcomes_total", "counter",
                         "Runs that ended since the daemon started, by outcome.");
    for (size_t i = 0; i < ARRAY_SIZE(outcomes); i++)
        rc |= metrics_sample(b, "gpuaas_workload_outcomes_total",
                             (const char *[]){"outcome", outcomes[i], NULL},
                             (int64_t)e->metrics.outcomes[i]);
    rc |= metrics_header(b, "gpuaas_queue_wait_seconds", "histogram",
                         "Time from submit to first admission.");
    rc |= metrics_histogram_write(b, "gpuaas_queue_wait_seconds", NULL, &e->metrics.queue_wait);
    rc |= metrics_header(b, "gpuaas_preemptions_total", "counter",
                         "Preemption decisions since the daemon started, by rule.");
    rc |= metrics_sample(b, "gpuaas_preemptions_total", (const char *[]){"rule", "reclaim", NULL},
                         (int64_t)e->metrics.preemptions_reclaim);
    rc |= metrics_header(b, "gpuaas_reclaim_latency_seconds", "histogram",
                         "Time from a reclaim decision until its last victim released the GPUs.");
    rc |= metrics_histogram_write(b, "gpuaas_reclaim_latency_seconds", NULL, &e->metrics.reclaim);

    /* Quotas: what each project holds of each class against its guarantee and limit. */
    rc |= metrics_header(b, "gpuaas_quota_gpus", "gauge",
                         "Per project and GPU class, in GPUs: guaranteed (owned capacity), "
                         "limit (-1: none), used (P1 + P2) and borrowed (used beyond the "
                         "guarantee).");
    for (size_t p = 0; p < e->n_projects; p++) {
        for (size_t c = 0; c < e->n_classes; c++) {
            struct sched_usage u;
            char prj[24];
            int64_t used;
            if (sched_project_usage(e->sched, e->projects[p].id, e->classes[c].id, &u) < 0 ||
                (u.guaranteed == 0 && u.p1 + u.p2 == 0 && u.limit < 0))
                continue;
            snprintf(prj, sizeof(prj), "%" PRId64, e->projects[p].id);
            used = u.p1 + u.p2;
            const char *l_g[] = {"project", e->projects[p].name, "project_id",
                                 prj,       "gpu_class",         e->classes[c].name,
                                 "kind",    "guaranteed",        NULL};
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, u.guaranteed);
            l_g[7] = "limit";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, u.limit < 0 ? -1000 : u.limit);
            l_g[7] = "used";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g, used);
            l_g[7] = "borrowed";
            rc |= metrics_sample_milli(b, "gpuaas_quota_gpus", l_g,
                                       used > u.guaranteed ? used - u.guaranteed : 0);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return rc ? ERR_TOO_LARGE : 0;
}

bool engine_log_path(const struct engine *e, int64_t workload_id, char *out, size_t size)
{
    const char *dir = e->opt.log_dir;
    if (!dir || !*dir)
        return false;
    return snprintf(out, size, "%s/%" PRId64 ".log", dir, workload_id) < (int)size;
}

void engine_sync(struct engine *e)
{
    uint64_t target;
    pthread_mutex_lock(&e->lock);
    target = e->iterations + 2;
    wake(e); /* lock order: the engine's, then the wake lock; never the other way */
    while (e->iterations < target && !e->stopping)
        pthread_cond_wait(&e->cond, &e->lock);
    pthread_mutex_unlock(&e->lock);
}
