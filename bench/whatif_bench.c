/* SPDX-License-Identifier: Apache-2.0 */
/*
 * whatif_bench: the what-if benchmark of issue 17. A synthetic month of
 * recorded work (by default 100,000 workloads over 30 days) on a fleet of
 * 1,000 GPUs (125 nodes x 8 in two classes, a third of them in pools owned
 * by projects), 40 projects in 8 organizations with guarantees and limits,
 * and a price list; then the what-if as the API runs it: the replay without
 * changes and the replay with changes (8 more guaranteed GPUs for a
 * project, two more nodes, fgd-fill) through the pure scheduler core.
 * Reports the wall time of each replay and of both (the target: <= 10 s
 * for the whole what-if), --runs times, with the median; --check makes the
 * exit status say whether the median holds.
 *
 * --store also writes the same fleet, tenants, prices and the baseline's
 * replay as the record (workloads with their allocations) into a SQLite
 * store (untimed), then times what POST /v1/whatif does once the request is
 * decoded: the world read from the store (engine_world_read) and both
 * replays.
 *
 * Usage: whatif_bench [--seed N] [--workloads N] [--days N] [--runs N] [--policy NAME]
 *                     [--store] [--check]
 */
#include "base/common.h"

#include "base/err.h"
#include "base/parse.h"
#include "engine/engine.h"
#include "whatif/whatif.h"
#include "bench-util.h"

#define T0 INT64_C(1764547200000) /* 2025-12-01T00:00:00Z */
#define N_NODES 125
#define GPUS_PER_NODE 8
#define N_PROJECTS 40
#define N_ORGS 8
#define N_POOLS 8 /* of 5 nodes each, owned by projects 1..8 */
#define N_SIZES 6
#define N_FLAVORS (2 * N_SIZES) /* one per class and size */

static const int32_t flavor_sizes[N_SIZES] = {250, 500, 1000, 2000, 4000, 8000};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

struct world_mem {
    int64_t classes[2];
    struct whatif_project projects[N_PROJECTS];
    struct sched_pool_spec pools[N_POOLS];
    int64_t pool_orgs[N_POOLS];
    struct whatif_node nodes[N_NODES];
    struct whatif_gpu gpus[N_NODES * GPUS_PER_NODE];
    struct whatif_quota quotas[N_PROJECTS * 2];
    struct meter_price prices[N_FLAVORS];
    struct whatif_workload *wls;
};

static void build_world(struct world_mem *m, struct whatif_world *w, int64_t n_wl, int64_t days)
{
    size_t ng = 0, nq = 0;
    memset(w, 0, sizeof(*w));
    m->classes[0] = 1;
    m->classes[1] = 2;
    for (int p = 0; p < N_PROJECTS; p++)
        m->projects[p] = (struct whatif_project){p + 1, 1 + p % N_ORGS, 1 + p % 3};
    for (int i = 0; i < N_POOLS; i++) {
        m->pool_orgs[i] = 1 + i % N_ORGS;
        m->pools[i] = (struct sched_pool_spec){.id = i + 1,
                                               .owner_project_id = i + 1,
                                               .access_org_ids = &m->pool_orgs[i],
                                               .n_access_orgs = 1};
    }
    for (int n = 0; n < N_NODES; n++) {
        int64_t pool = n < N_POOLS * 5 ? 1 + n / 5 : 0;
        int64_t cls = n % 4 == 3 ? 2 : 1; /* a quarter of the fleet is the second class */
        if (pool)
            cls = 1 + (pool - 1) % 2;
        memset(&m->nodes[n], 0, sizeof(m->nodes[n]));
        m->nodes[n].spec.id = n + 1;
        m->nodes[n].spec.cluster_id = 1;
        m->nodes[n].spec.cpu_milli = 128000;
        m->nodes[n].spec.mem_mib = 1024 * 1024;
        m->nodes[n].state = SCHED_NODE_READY;
        for (int g = 0; g < GPUS_PER_NODE; g++, ng++) /* ids as a store gives them: 1, 2, ... */
            m->gpus[ng] = (struct whatif_gpu){(int64_t)ng + 1, n + 1, cls, pool};
    }
    for (int p = 0; p < N_PROJECTS; p++) {
        for (int c = 1; c <= 2; c++) {
            bool owner = p < N_POOLS && 1 + p % 2 == c;
            m->quotas[nq++] = (struct whatif_quota){p + 1, c, owner ? -1 : (p % 5 == 0 ? 8000 : 0),
                                                    owner ? 120000 : 96000};
        }
    }
    for (int f = 0; f < N_FLAVORS; f++) /* 2.50 EUR per GPU-hour */
        m->prices[f] =
            (struct meter_price){.id = f + 1,
                                 .flavor_id = f + 1,
                                 .currency = "EUR",
                                 .minor_digits = 2,
                                 .price_per_hour_micro = 2500 * (int64_t)flavor_sizes[f % N_SIZES],
                                 .mult_ppm = {1000000, 600000},
                                 .effective_from_ms = T0 - 86400000};
    m->wls = calloc((size_t)n_wl + 1, sizeof(*m->wls));
    for (int64_t i = 0; i < n_wl; i++) {
        struct whatif_workload *wl = &m->wls[i];
        int64_t p = rng_range(0, N_PROJECTS - 1), k = rng_range(0, 99);
        static const int32_t sizes[] = {1000, 1000, 1000, 1000, 2000, 2000, 4000, 8000, 500, 250};
        wl->spec.id = i + 1;
        wl->spec.project_id = p + 1;
        wl->spec.pclass = k < 60 ? SCHED_AUTO : k < 90 ? SCHED_P2 : SCHED_P1;
        if (wl->spec.pclass == SCHED_P1 && p >= N_POOLS && p % 5 != 0)
            wl->spec.pclass = SCHED_AUTO; /* owned work only where something is guaranteed */
        wl->spec.priority = (int32_t)rng_range(0, 2);
        wl->spec.submit_ms = T0 + (i * days * 86400000) / n_wl + rng_range(0, 59999);
        if (wl->spec.submit_ms >= T0 + days * 86400000) /* all within the period */
            wl->spec.submit_ms = T0 + days * 86400000 - 1;
        wl->spec.replicas = rng_range(0, 49) == 0 ? 2 : 1;
        wl->spec.class_id = rng_range(0, 3) == 3 ? 2 : 1;
        if (wl->spec.pclass == SCHED_P1 && p < N_POOLS)
            wl->spec.class_id = 1 + p % 2; /* an owner's owned work is in its pool's class */
        wl->spec.gpu_milli = sizes[rng_range(0, 9)];
        wl->spec.cpu_milli = 8000;
        wl->spec.mem_mib = 65536;
        wl->spec.grace_ms = -1;
        wl->spec.requeue = true;
        wl->org_id = 1 + p % N_ORGS;
        for (int f = 0; f < N_SIZES; f++) {
            if (flavor_sizes[f] == wl->spec.gpu_milli)
                wl->flavor_id = (wl->spec.class_id - 1) * N_SIZES + f + 1;
        }
        /* mostly short, some long: 3 min .. 14 h; the fleet is busy, queues form and drain */
        wl->run_ms =
            rng_range(0, 9) < 7 ? rng_range(180, 4500) * 1000 : rng_range(3600, 14 * 3600) * 1000;
    }
    w->classes = m->classes;
    w->n_classes = 2;
    w->projects = m->projects;
    w->n_projects = N_PROJECTS;
    w->pools = m->pools;
    w->n_pools = N_POOLS;
    w->nodes = m->nodes;
    w->n_nodes = N_NODES;
    w->gpus = m->gpus;
    w->n_gpus = ng;
    w->quotas = m->quotas;
    w->n_quotas = nq;
    w->prices = m->prices;
    w->n_prices = N_FLAVORS;
    w->workloads = m->wls;
    w->n_workloads = (size_t)n_wl;
    sched_config_init(&w->cfg);
    w->cfg.default_grace_ms = 30000;
    w->cfg.reserve_after_ms = 600000;
    w->from_ms = T0;
    w->to_ms = T0 + days * 86400000;
}

static void report(const char *what, const struct whatif_run *r)
{
    printf("  %-8s started %" PRId64 "/%" PRId64 ", wait p50 %.0f s p95 %.0f s, %" PRId64
           " preemptions, %.0f GPU-h, utilisation %.1f%%, cost %.2f EUR; %" PRId64 " passes\n",
           what, r->overall.started, r->overall.workloads, (double)r->overall.wait_p50_ms / 1e3,
           (double)r->overall.wait_p95_ms / 1e3, r->overall.preemptions,
           (double)r->overall.gpu_milli_ms / 3.6e9,
           100.0 * (double)r->allocated_milli_ms /
               (double)(r->allocated_milli_ms + r->idle_milli_ms + 1),
           (double)r->overall.cost_micros / 1e6, r->passes);
}

/* ---- --store: the same month as a store's record ---- */

static void die(const char *what, const struct error_info *ei)
{
    fprintf(stderr, "whatif_bench: %s: %s\n", what, ei->message);
    exit(1);
}

static int64_t add(struct store_conn *c, const struct resource_def *d, struct row *r)
{
    struct error_info ei = {0};
    int64_t id;
    if (store_insert(c, d, r, &id, &ei) < 0)
        die(d->name, &ei);
    return id;
}

/* A row with every field at its default, like a create through the API. */
static struct row fresh(const struct resource_def *d, struct arena *a)
{
    struct row r = model_row_new(d, a);
    for (size_t i = 1; i < d->n_fields; i++) {
        const struct field_def *f = &d->fields[i];
        if (f->flags & FF_NULLABLE)
            row_set_null(&r, (int)i);
        else if (f->type == FT_ENUM)
            row_set_str(&r, a, (int)i, f->default_str ? f->default_str : f->enum_values[0]);
        else if (f->type == FT_LABELS || f->type == FT_JSON)
            row_set_str(&r, a, (int)i, "{}");
        else if (f->type == FT_REFLIST)
            row_set_str(&r, a, (int)i, "[]");
        else if (f->type == FT_INT || f->type == FT_BOOL || f->type == FT_REF || f->type == FT_TIME)
            row_set_int(&r, (int)i, f->default_int);
        else
            row_set_str(&r, a, (int)i, f->default_str ? f->default_str : "");
    }
    return r;
}

static const char *const class_text[] = {"", "owned", "opportunistic", "auto"};

/*
 * Writes the world and, as its record, the baseline's starts: ids are given
 * in order from 1, so the store's ids are the world's (GPUs map by order).
 */
static void write_store(struct store_conn *c, const struct world_mem *m,
                        const struct whatif_world *w, const struct whatif_run *base)
{
    struct error_info ei = {0};
    struct arena a;
    struct row r;
    char buf[4096];
    int64_t gpu_ids[N_NODES * GPUS_PER_NODE], cluster;

    arena_init(&a);
    if (store_begin(c, &ei) < 0)
        die("begin", &ei);
    for (int o = 0; o < N_ORGS; o++) {
        r = fresh(&model_organizations, &a);
        snprintf(buf, sizeof(buf), "org-%d", o + 1);
        row_set_str(&r, &a, F_ORGANIZATIONS_NAME, buf);
        add(c, &model_organizations, &r);
    }
    for (int p = 0; p < N_PROJECTS; p++) {
        r = fresh(&model_projects, &a);
        snprintf(buf, sizeof(buf), "project-%d", p + 1);
        row_set_str(&r, &a, F_PROJECTS_NAME, buf);
        row_set_int(&r, F_PROJECTS_ORG_ID, m->projects[p].org_id);
        row_set_int(&r, F_PROJECTS_WEIGHT, m->projects[p].weight);
        add(c, &model_projects, &r);
    }
    r = fresh(&model_clusters, &a);
    row_set_str(&r, &a, F_CLUSTERS_NAME, "sim");
    row_set_str(&r, &a, F_CLUSTERS_BACKEND, "sim");
    cluster = add(c, &model_clusters, &r);
    for (int k = 0; k < 2; k++) {
        r = fresh(&model_gpu_classes, &a);
        row_set_str(&r, &a, F_GPU_CLASSES_NAME, k ? "a100" : "h100");
        add(c, &model_gpu_classes, &r);
    }
    for (int n = 0; n < N_NODES; n++) {
        r = fresh(&model_nodes, &a);
        snprintf(buf, sizeof(buf), "node-%d", n + 1);
        row_set_str(&r, &a, F_NODES_NAME, buf);
        row_set_int(&r, F_NODES_CLUSTER_ID, cluster);
        row_set_int(&r, F_NODES_CPU_MILLI, m->nodes[n].spec.cpu_milli);
        row_set_int(&r, F_NODES_MEMORY_MIB, m->nodes[n].spec.mem_mib);
        row_set_str(&r, &a, F_NODES_STATE, "ready");
        add(c, &model_nodes, &r);
    }
    for (size_t g = 0; g < w->n_gpus; g++) {
        r = fresh(&model_gpus, &a);
        row_set_int(&r, F_GPUS_NODE_ID, m->gpus[g].node_id);
        row_set_int(&r, F_GPUS_INDEX, (int64_t)(g % GPUS_PER_NODE));
        snprintf(buf, sizeof(buf), "GPU-bench-%06zu", g);
        row_set_str(&r, &a, F_GPUS_UUID, buf);
        row_set_int(&r, F_GPUS_GPU_CLASS_ID, m->gpus[g].class_id);
        gpu_ids[g] = add(c, &model_gpus, &r);
    }
    for (int i = 0; i < N_POOLS; i++) {
        size_t len = 0;
        len += (size_t)snprintf(buf, sizeof(buf), "[");
        for (size_t g = 0; g < w->n_gpus; g++) {
            if (m->gpus[g].pool_id == i + 1)
                len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%" PRId64,
                                        buf[len - 1] == '[' ? "" : ",", gpu_ids[g]);
        }
        snprintf(buf + len, sizeof(buf) - len, "]");
        r = fresh(&model_pools, &a);
        row_set_str(&r, &a, F_POOLS_NAME, arena_printf(&a, "pool-%d", i + 1));
        row_set_int(&r, F_POOLS_OWNER_PROJECT_ID, i + 1);
        row_set_str(&r, &a, F_POOLS_GPU_IDS, buf);
        row_set_str(&r, &a, F_POOLS_ACCESS_ORG_IDS,
                    arena_printf(&a, "[%" PRId64 "]", m->pool_orgs[i]));
        add(c, &model_pools, &r);
    }
    for (size_t q = 0; q < w->n_quotas; q++) {
        r = fresh(&model_quotas, &a);
        row_set_int(&r, F_QUOTAS_PROJECT_ID, m->quotas[q].project_id);
        row_set_int(&r, F_QUOTAS_GPU_CLASS_ID, m->quotas[q].class_id);
        if (m->quotas[q].guaranteed >= 0)
            row_set_int(&r, F_QUOTAS_GUARANTEED_MILLI, m->quotas[q].guaranteed);
        row_set_int(&r, F_QUOTAS_LIMIT_MILLI, m->quotas[q].limit);
        add(c, &model_quotas, &r);
    }
    for (int f = 0; f < N_FLAVORS; f++) {
        int32_t milli = flavor_sizes[f % N_SIZES];
        r = fresh(&model_flavors, &a);
        row_set_str(&r, &a, F_FLAVORS_NAME, arena_printf(&a, "flavor-%d", f + 1));
        row_set_int(&r, F_FLAVORS_GPU_CLASS_ID, 1 + f / N_SIZES);
        row_set_int(&r, F_FLAVORS_GPU_MILLI, milli);
        row_set_int(&r, F_FLAVORS_VCPUS, 8);
        row_set_int(&r, F_FLAVORS_MEMORY_MIB, 65536);
        row_set_int(&r, F_FLAVORS_PRICE_PER_HOUR_MICROS, m->prices[f].price_per_hour_micro);
        add(c, &model_flavors, &r);
        r = fresh(&model_prices, &a);
        row_set_int(&r, F_PRICES_FLAVOR_ID, f + 1);
        row_set_str(&r, &a, F_PRICES_CURRENCY, "EUR");
        row_set_int(&r, F_PRICES_MINOR_DIGITS, 2);
        row_set_int(&r, F_PRICES_PRICE_PER_HOUR_MICROS, m->prices[f].price_per_hour_micro);
        row_set_int(&r, F_PRICES_OWNED_MULT_PPM, 1000000);
        row_set_int(&r, F_PRICES_OPPORTUNISTIC_MULT_PPM, 600000);
        row_set_int(&r, F_PRICES_EFFECTIVE_FROM, m->prices[f].effective_from_ms / 1000);
        add(c, &model_prices, &r);
    }
    for (size_t i = 0; i < w->n_workloads; i++) {
        const struct whatif_workload *wl = &w->workloads[i];
        int64_t start = base->start_ms[i], wid;
        r = fresh(&model_workloads, &a);
        row_set_int(&r, F_WORKLOADS_PROJECT_ID, wl->spec.project_id);
        row_set_int(&r, F_WORKLOADS_FLAVOR_ID, wl->flavor_id);
        row_set_int(&r, F_WORKLOADS_REPLICAS, wl->spec.replicas);
        row_set_str(&r, &a, F_WORKLOADS_PRIORITY_CLASS, class_text[wl->spec.pclass]);
        row_set_int(&r, F_WORKLOADS_PRIORITY, wl->spec.priority);
        row_set_int(&r, F_WORKLOADS_REQUEUE, 1);
        row_set_int(&r, F_WORKLOADS_SUBMITTED_MS, wl->spec.submit_ms);
        row_set_str(&r, &a, F_WORKLOADS_STATE, start ? "succeeded" : "queued");
        if (start) {
            row_set_int(&r, F_WORKLOADS_STARTED_AT, start / 1000);
            row_set_int(&r, F_WORKLOADS_FINISHED_AT, (start + wl->run_ms) / 1000);
        }
        wid = add(c, &model_workloads, &r);
        for (int32_t k = 0; start && k < wl->spec.replicas; k++) {
            r = fresh(&model_allocations, &a);
            row_set_int(&r, F_ALLOCATIONS_WORKLOAD_ID, wid);
            row_set_int(&r, F_ALLOCATIONS_PROJECT_ID, wl->spec.project_id);
            row_set_int(&r, F_ALLOCATIONS_REPLICA, k);
            row_set_int(&r, F_ALLOCATIONS_NODE_ID, m->gpus[(i + (size_t)k) % w->n_gpus].node_id);
            row_set_int(&r, F_ALLOCATIONS_GPU_ID, gpu_ids[(i + (size_t)k) % w->n_gpus]);
            row_set_int(&r, F_ALLOCATIONS_GPU_CLASS_ID, wl->spec.class_id);
            row_set_int(&r, F_ALLOCATIONS_MILLI, wl->spec.gpu_milli);
            row_set_str(&r, &a, F_ALLOCATIONS_PRIORITY_CLASS, "opportunistic");
            row_set_int(&r, F_ALLOCATIONS_STARTED_MS, start);
            row_set_int(&r, F_ALLOCATIONS_ENDED_MS, start + wl->run_ms);
            add(c, &model_allocations, &r);
        }
        if (i % 10000 == 9999) { /* the arena holds a batch's rows only */
            arena_release(&a);
            arena_init(&a);
        }
    }
    if (store_commit(c, &ei) < 0)
        die("commit", &ei);
    arena_release(&a);
}

/* Times the world read from the store and both replays; returns the median of runs (s). */
static double store_runs(const struct world_mem *m, const struct whatif_world *w,
                         const struct whatif_change *ch, size_t n_ch, int64_t runs)
{
    char dir[] = "/tmp/whatif-bench-XXXXXX", url[1100];
    struct error_info ei = {0};
    struct store_options so = {.n_conns = 2, .busy_timeout_ms = 5000};
    struct whatif_run base;
    struct store *st;
    struct store_conn *c;
    int64_t *t_all = calloc((size_t)runs, sizeof(*t_all)), t0;
    double med;

    if (!mkdtemp(dir))
        return -1;
    snprintf(url, sizeof(url), "sqlite:%s/w.db", dir);
    if (store_open(url, &so, &st, &ei) < 0)
        die("open", &ei);
    c = store_conn_get(st);
    if (whatif_replay(w, NULL, 0, NULL, &base, &ei) < 0)
        die("the record's replay", &ei);
    t0 = now_ns();
    write_store(c, m, w, &base);
    printf("store: wrote the month (%zu workloads and their allocations) in %.1f s\n",
           w->n_workloads, (double)(now_ns() - t0) / 1e9);
    whatif_run_release(&base);
    for (int64_t k = 0; k < runs; k++) {
        struct engine_world ew;
        struct whatif_run b, x;
        struct arena a;
        int64_t t1, t2;
        arena_init(&a);
        t0 = now_ns();
        if (engine_world_read(NULL, c, w->from_ms, w->to_ms, true, 200000,
                              w->to_ms + WHATIF_DRAIN_MS, &a, &ew, &ei) < 0)
            die("engine_world_read", &ei);
        t1 = now_ns();
        if (whatif_replay(&ew.w, NULL, 0, NULL, &b, &ei) < 0 ||
            whatif_replay(&ew.w, ch, n_ch, NULL, &x, &ei) < 0)
            die("replay", &ei);
        t2 = now_ns();
        t_all[k] = t2 - t0;
        printf("store run %" PRId64
               ": read %.2f s (%zu workloads), replays %.2f s, what-if %.2f s; "
               "baseline reproduces %" PRId64 "/%" PRId64 " recorded starts\n",
               k + 1, (double)(t1 - t0) / 1e9, ew.w.n_workloads, (double)(t2 - t1) / 1e9,
               (double)(t2 - t0) / 1e9, b.starts_same, b.starts_compared);
        whatif_run_release(&b);
        whatif_run_release(&x);
        engine_world_release(&ew);
        arena_release(&a);
    }
    qsort(t_all, (size_t)runs, sizeof(*t_all), cmp_i64);
    med = (double)t_all[runs / 2] / 1e9;
    free(t_all);
    store_conn_put(c);
    store_close(st);
    snprintf(url, sizeof(url), "%s/w.db", dir);
    unlink(url);
    snprintf(url, sizeof(url), "%s/w.db-wal", dir);
    unlink(url);
    snprintf(url, sizeof(url), "%s/w.db-shm", dir);
    unlink(url);
    rmdir(dir);
    return med;
}

static int usage(void)
{
    fprintf(stderr, "usage: whatif_bench [--seed N] [--workloads N] [--days N] [--runs N] "
                    "[--policy NAME] [--store] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int64_t seed = 1, n_wl = 100000, days = 30, runs = 5;
    bool check = false, store = false;
    struct world_mem *m = calloc(1, sizeof(*m));
    struct whatif_world w;
    struct whatif_change ch[3] = {
        {.kind = WHATIF_QUOTA, .project_id = 12, .class_id = 1, .milli = 8000},
        {.kind = WHATIF_ADD_NODES, .class_id = 1, .count = 2},
        {.kind = WHATIF_POLICY}};
    size_t n_ch = 2;
    int64_t *t_both, *t_base, *t_changed;

    for (int i = 1; i < argc; i++) {
        int64_t *dst = NULL, lo = 1, hi = 10000000;
        if (strcmp(argv[i], "--check") == 0) {
            check = true;
            continue;
        }
        if (strcmp(argv[i], "--store") == 0) {
            store = true;
            continue;
        }
        if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            snprintf(ch[2].policy, sizeof(ch[2].policy), "%s", argv[++i]);
            n_ch = 3;
            continue;
        }
        if (strcmp(argv[i], "--seed") == 0) {
            dst = &seed;
            lo = 0;
            hi = INT64_MAX;
        } else if (strcmp(argv[i], "--workloads") == 0) {
            dst = &n_wl;
        } else if (strcmp(argv[i], "--days") == 0) {
            dst = &days;
            hi = 31;
        } else if (strcmp(argv[i], "--runs") == 0) {
            dst = &runs;
            hi = 100;
        }
        if (!dst || i + 1 >= argc || parse_int64(argv[i + 1], lo, hi, dst) != 0)
            return usage();
        i++;
    }
    rng_state = (uint64_t)seed;
    build_world(m, &w, n_wl, days);
    t_both = calloc((size_t)runs, sizeof(*t_both));
    t_base = calloc((size_t)runs, sizeof(*t_base));
    t_changed = calloc((size_t)runs, sizeof(*t_changed));
    printf("whatif_bench (simulated; seed %" PRId64 "): %" PRId64 " workloads over %" PRId64
           " days, %d GPUs (%d nodes x %d), %d projects; changes: project 12 +8 GPUs "
           "guaranteed, 2 nodes added%s%s\n",
           seed, n_wl, days, N_NODES * GPUS_PER_NODE, N_NODES, GPUS_PER_NODE, N_PROJECTS,
           n_ch > 2 ? ", placement " : "", n_ch > 2 ? ch[2].policy : "");
    for (int64_t k = 0; !store && k < runs; k++) {
        struct whatif_run base, changed;
        struct error_info ei = {0};
        int64_t t0 = now_ns(), t1, t2;
        if (whatif_replay(&w, NULL, 0, NULL, &base, &ei) < 0) {
            fprintf(stderr, "baseline: %s\n", ei.message);
            return 1;
        }
        t1 = now_ns();
        if (whatif_replay(&w, ch, n_ch, NULL, &changed, &ei) < 0) {
            fprintf(stderr, "changed: %s\n", ei.message);
            return 1;
        }
        t2 = now_ns();
        t_base[k] = t1 - t0;
        t_changed[k] = t2 - t1;
        t_both[k] = t2 - t0;
        printf("run %" PRId64 ": baseline %.2f s, changed %.2f s, what-if %.2f s\n", k + 1,
               (double)t_base[k] / 1e9, (double)t_changed[k] / 1e9, (double)t_both[k] / 1e9);
        if (k == 0) {
            report("baseline", &base);
            report("changed", &changed);
        }
        whatif_run_release(&base);
        whatif_run_release(&changed);
    }
    if (store) {
        double med = store_runs(m, &w, ch, n_ch, runs);
        printf("median of %" PRId64
               ": from the store, what-if (read + both) %.2f s  [target <= 10 s: "
               "%s]\n",
               runs, med, med <= 10.0 ? "ok" : "MISSED");
        free(m->wls);
        free(m);
        return check && med > 10.0 ? 1 : 0;
    }
    qsort(t_both, (size_t)runs, sizeof(*t_both), cmp_i64);
    qsort(t_base, (size_t)runs, sizeof(*t_base), cmp_i64);
    qsort(t_changed, (size_t)runs, sizeof(*t_changed), cmp_i64);
    double med = (double)t_both[runs / 2] / 1e9;
    printf("median of %" PRId64 ": baseline %.2f s, changed %.2f s, what-if (both) %.2f s  "
           "[target <= 10 s: %s]\n",
           runs, (double)t_base[runs / 2] / 1e9, (double)t_changed[runs / 2] / 1e9, med,
           med <= 10.0 ? "ok" : "MISSED");
    free(t_both);
    free(t_base);
    free(t_changed);
    free(m->wls);
    free(m);
    return check && med > 10.0 ? 1 : 0;
}
