/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store_conformance.c: one suite that every store engine must pass.
 *
 * The engine comes from GPUAAS_TEST_STORE_URL: a postgresql:// URL runs it
 * against that server (each test starts from an empty `public` schema);
 * unset, each test gets a fresh SQLite file in a temporary directory. The
 * suite also checks that migration 1 matches the resource definitions of
 * src/model/resources.c column for column.
 */
#include "base/common.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "store/store-int.h"
#include "store/store.h"

#define T0 INT64_C(1700000000)

struct env {
    char *url; /* what store_open gets */
    char *dir; /* SQLite: the temporary directory, removed afterwards */
    struct store *s;
    struct store_conn *c;
    struct arena a;
};

/* ---- fixtures ---- */

static const char *pg_url(void)
{
    const char *url = getenv("GPUAAS_TEST_STORE_URL");

    if (url && (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0))
        return url;
    return NULL;
}

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* PostgreSQL: every test starts from an empty schema, so migrations run from scratch. */
static void pg_reset(const char *url)
{
    PGconn *pg = PQconnectdb(url);
    PGresult *res;

    if (PQstatus(pg) != CONNECTION_OK)
        fail_msg("cannot connect to %s: %s", url, PQerrorMessage(pg));
    PQsetNoticeProcessor(pg, quiet, NULL);
    res = PQexec(pg, "DROP SCHEMA IF EXISTS public CASCADE; CREATE SCHEMA public;");
    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        fail_msg("cannot reset schema: %s", PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
}

static char *make_temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char *dir = xasprintf("%s/gpuaas-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");

    if (!mkdtemp(dir))
        fail_msg("mkdtemp %s: %s", dir, strerror(errno));
    return dir;
}

static void remove_temp_dir(char *dir)
{
    static const char *const files[] = {"test.db",      "test.db-wal",  "test.db-shm",  "junk.db",
                                        "other.db",     "other.db-wal", "other.db-shm", "empty.db",
                                        "empty.db-wal", "empty.db-shm"};

    if (!dir)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
        char *p = xasprintf("%s/%s", dir, files[i]);
        unlink(p);
        free(p);
    }
    rmdir(dir);
    free(dir);
}

static const struct store_options test_opt = {.n_conns = 4, .busy_timeout_ms = 10000};

static struct store *open_ok(const char *url, const struct store_options *opt)
{
    struct error_info ei = {0};
    struct store *s = NULL;
    int rc = store_open(url, opt, &s, &ei);

    if (rc < 0)
        fail_msg("store_open(%s): %s", url, ei.message);
    return s;
}

/* Closes the test's store and opens e->url again with opt. */
static void reopen(struct env *e, const struct store_options *opt)
{
    store_conn_put(e->c);
    store_close(e->s);
    e->c = NULL;
    e->s = NULL;
    e->s = open_ok(e->url, opt);
    e->c = store_conn_get(e->s);
}

/* Closes the test's store, leaving teardown nothing to close. */
static void close_env_store(struct env *e)
{
    store_conn_put(e->c);
    store_close(e->s);
    e->c = NULL;
    e->s = NULL;
}

static int setup(void **state)
{
    struct env *e = xcalloc(1, sizeof(*e));

    if (pg_url()) {
        pg_reset(pg_url());
        e->url = xstrdup(pg_url());
    } else {
        e->dir = make_temp_dir();
        e->url = xasprintf("sqlite:%s/test.db", e->dir);
    }
    e->s = open_ok(e->url, &test_opt);
    e->c = store_conn_get(e->s);
    arena_init(&e->a);
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    struct env *e = *state;

    store_conn_put(e->c);
    store_close(e->s);
    arena_release(&e->a);
    remove_temp_dir(e->dir);
    free(e->url);
    free(e);
    return 0;
}

/* ---- rows ---- */

static int fi(const struct resource_def *def, const char *name)
{
    int i = model_field_index(def, name);

    if (i < 0)
        fail_msg("%s has no field %s", def->name, name);
    return i;
}

/* A row with every field but id filled with a plausible value; references are 0. */
static struct row new_row(const struct resource_def *def, struct arena *a)
{
    struct row r = model_row_new(def, a);

    for (size_t i = 1; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        int k = (int)i;
        if (f->flags & FF_NULLABLE) {
            model_set_null(&r, k);
            continue;
        }
        switch (f->type) {
        case FT_INT:
        case FT_BOOL:
        case FT_REF:
            model_set_int(&r, k, f->default_int);
            break;
        case FT_TIME:
            model_set_int(&r, k, T0);
            break;
        case FT_ENUM:
            model_set_str(&r, a, k, f->enum_values[0]);
            break;
        case FT_LABELS:
        case FT_JSON:
            model_set_str(&r, a, k, "{}");
            break;
        case FT_REFLIST:
            model_set_str(&r, a, k, "[]");
            break;
        default:
            model_set_str(&r, a, k, f->default_str ? f->default_str : "x");
            break;
        }
    }
    return r;
}

static void set_i(const struct resource_def *def, struct row *r, const char *name, int64_t i)
{
    model_set_int(r, fi(def, name), i);
}

static void set_s(const struct resource_def *def, struct arena *a, struct row *r, const char *name,
                  const char *s)
{
    model_set_str(r, a, fi(def, name), s);
}

static void set_null(const struct resource_def *def, struct row *r, const char *name)
{
    model_set_null(r, fi(def, name));
}

/* Inserts r (which must succeed) and records the new id in it. */
static int64_t ins(struct env *e, const struct resource_def *def, struct row *r)
{
    struct error_info ei = {0};
    int64_t id = 0;
    int rc = store_insert(e->c, def, r, &id, &ei);

    if (rc < 0)
        fail_msg("insert %s: %s (%s)", def->name, ei.message, err_str(rc));
    assert_true(id > 0);
    model_set_int(r, 0, id);
    return id;
}

static struct row get_ok(struct env *e, const struct resource_def *def, int64_t id)
{
    struct error_info ei = {0};
    struct row r = {NULL};
    int rc = store_get(e->c, def, id, &e->a, &r, &ei);

    if (rc < 0)
        fail_msg("get %s %" PRId64 ": %s (%s)", def->name, id, ei.message, err_str(rc));
    return r;
}

static void update_ok(struct env *e, const struct resource_def *def, struct row *r)
{
    struct error_info ei = {0};
    int rc = store_update(e->c, def, model_row_id(r), r, &ei);

    if (rc < 0)
        fail_msg("update %s: %s (%s)", def->name, ei.message, err_str(rc));
}

static void assert_rows_equal(const struct resource_def *def, const struct row *want,
                              const struct row *got)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct value *w = &want->v[i], *g = &got->v[i];
        const char *name = def->fields[i].name;
        if (!g->set)
            fail_msg("%s.%s: not set in the row read back", def->name, name);
        if (w->null != g->null)
            fail_msg("%s.%s: null %d, read back %d", def->name, name, w->null, g->null);
        if (w->null)
            continue;
        if (store__field_is_int(&def->fields[i]) && w->i != g->i)
            fail_msg("%s.%s: %" PRId64 ", read back %" PRId64, def->name, name, w->i, g->i);
        if (!store__field_is_int(&def->fields[i]) && strcmp(w->s, g->s) != 0)
            fail_msg("%s.%s: '%s', read back '%s'", def->name, name, w->s, g->s);
    }
}

static void assert_roundtrip(struct env *e, const struct resource_def *def, const struct row *r)
{
    struct row got = get_ok(e, def, model_row_id(r));
    assert_rows_equal(def, r, &got);
}

/* Expects rc == want and ei's message to contain `part` (when not NULL). */
static void assert_err(int rc, int want, const struct error_info *ei, const char *part)
{
    if (rc != want)
        fail_msg("expected %s, got %s: %s", err_code_name(want), err_code_name(rc), ei->message);
    if (part && !strstr(ei->message, part))
        fail_msg("message '%s' lacks '%s'", ei->message, part);
}

/* ---- a small world with one row of every resource ---- */

struct world {
    struct row user, org, sub_org, project, binding, token, cluster, node, gpu_class, mig_class,
        gpu, pool, flavor, quota, org_quota, audit, workload, allocation, event, preemption,
        price, usage, invoice, budget, alert, item;
};

static void make_tenants(struct env *e, struct world *w)
{
    struct arena *a = &e->a;

    w->user = new_row(&model_users, a);
    set_s(&model_users, a, &w->user, "name", "alice");
    set_s(&model_users, a, &w->user, "email", "alice@example.com");
    set_s(&model_users, a, &w->user, "display_name", "Alice O'Brien \"ünïcødé\" ✓");
    set_i(&model_users, &w->user, "disabled", 1);
    set_i(&model_users, &w->user, "updated_at", T0 + 1);
    ins(e, &model_users, &w->user);

    w->org = new_row(&model_organizations, a);
    set_s(&model_organizations, a, &w->org, "name", "acme");
    set_i(&model_organizations, &w->org, "manager_id", model_row_id(&w->user));
    set_s(&model_organizations, a, &w->org, "cost_center", "cc-42");
    ins(e, &model_organizations, &w->org);

    w->sub_org = new_row(&model_organizations, a);
    set_s(&model_organizations, a, &w->sub_org, "name", "acme-research");
    set_i(&model_organizations, &w->sub_org, "parent_id", model_row_id(&w->org));
    ins(e, &model_organizations, &w->sub_org);

    w->project = new_row(&model_projects, a);
    set_i(&model_projects, &w->project, "org_id", model_row_id(&w->org));
    set_s(&model_projects, a, &w->project, "name", "vision");
    set_s(&model_projects, a, &w->project, "description",
          "line one\nline two\ttab; DROP TABLE x;--");
    set_i(&model_projects, &w->project, "weight", 7);
    ins(e, &model_projects, &w->project);

    w->binding = new_row(&model_role_bindings, a);
    set_i(&model_role_bindings, &w->binding, "user_id", model_row_id(&w->user));
    set_s(&model_role_bindings, a, &w->binding, "role", "org-admin");
    set_i(&model_role_bindings, &w->binding, "org_id", model_row_id(&w->org));
    ins(e, &model_role_bindings, &w->binding);

    w->token = new_row(&model_tokens, a);
    set_i(&model_tokens, &w->token, "user_id", model_row_id(&w->user));
    set_s(&model_tokens, a, &w->token, "prefix", "gpa_abc");
    set_s(&model_tokens, a, &w->token, "hash", "sha256:0123abcd");
    set_i(&model_tokens, &w->token, "expires_at", T0 + 86400);
    ins(e, &model_tokens, &w->token);
}

static void make_fleet(struct env *e, struct world *w)
{
    struct arena *a = &e->a;

    w->cluster = new_row(&model_clusters, a);
    set_s(&model_clusters, a, &w->cluster, "name", "east");
    set_s(&model_clusters, a, &w->cluster, "backend", "slurm");
    set_s(&model_clusters, a, &w->cluster, "labels", "{\"site\":\"east-1\",\"cloud\":\"none\"}");
    ins(e, &model_clusters, &w->cluster);

    w->node = new_row(&model_nodes, a);
    set_i(&model_nodes, &w->node, "cluster_id", model_row_id(&w->cluster));
    set_s(&model_nodes, a, &w->node, "name", "node-001.east");
    set_i(&model_nodes, &w->node, "cpu_milli", INT64_C(1) << 40);
    set_i(&model_nodes, &w->node, "memory_mib", 2048 * 1024);
    set_s(&model_nodes, a, &w->node, "state", "drain");
    ins(e, &model_nodes, &w->node);

    w->gpu_class = new_row(&model_gpu_classes, a);
    set_s(&model_gpu_classes, a, &w->gpu_class, "name", "h100-80gb");
    set_i(&model_gpu_classes, &w->gpu_class, "memory_mib", 81920);
    ins(e, &model_gpu_classes, &w->gpu_class);

    w->mig_class = new_row(&model_gpu_classes, a);
    set_s(&model_gpu_classes, a, &w->mig_class, "name", "h100-80gb/1g.10gb");
    set_i(&model_gpu_classes, &w->mig_class, "parent_id", model_row_id(&w->gpu_class));
    set_i(&model_gpu_classes, &w->mig_class, "milli", 142);
    ins(e, &model_gpu_classes, &w->mig_class);

    w->gpu = new_row(&model_gpus, a);
    set_i(&model_gpus, &w->gpu, "node_id", model_row_id(&w->node));
    set_i(&model_gpus, &w->gpu, "index", 3);
    set_s(&model_gpus, a, &w->gpu, "uuid", "GPU-8f6b2c1e-0000-4a1b-9c3d-123456789abc");
    set_i(&model_gpus, &w->gpu, "gpu_class_id", model_row_id(&w->gpu_class));
    set_i(&model_gpus, &w->gpu, "mig_mode", 1);
    set_s(&model_gpus, a, &w->gpu, "health", "degraded");
    ins(e, &model_gpus, &w->gpu);
}

static void make_catalog(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    char *ids = arena_printf(a, "[%" PRId64 "]", model_row_id(&w->gpu));

    w->pool = new_row(&model_pools, a);
    set_s(&model_pools, a, &w->pool, "name", "acme-h100");
    set_i(&model_pools, &w->pool, "owner_org_id", model_row_id(&w->org));
    set_i(&model_pools, &w->pool, "cost_per_gpu_hour_micros", INT64_C(1) << 53);
    set_i(&model_pools, &w->pool, "cluster_id", model_row_id(&w->cluster));
    set_s(&model_pools, a, &w->pool, "gpu_ids", ids);
    set_s(&model_pools, a, &w->pool, "node_selector", "{\"rack\":\"r1\"}");
    ins(e, &model_pools, &w->pool);

    w->flavor = new_row(&model_flavors, a);
    set_s(&model_flavors, a, &w->flavor, "name", "h100.1x");
    set_i(&model_flavors, &w->flavor, "gpu_class_id", model_row_id(&w->gpu_class));
    set_i(&model_flavors, &w->flavor, "gpu_milli", 1000);
    set_s(&model_flavors, a, &w->flavor, "pool_ids",
          arena_printf(a, "[%" PRId64 "]", model_row_id(&w->pool)));
    set_i(&model_flavors, &w->flavor, "active", 0);
    ins(e, &model_flavors, &w->flavor);

    w->quota = new_row(&model_quotas, a);
    set_i(&model_quotas, &w->quota, "project_id", model_row_id(&w->project));
    set_i(&model_quotas, &w->quota, "gpu_class_id", model_row_id(&w->gpu_class));
    set_i(&model_quotas, &w->quota, "limit_milli", 4000);
    ins(e, &model_quotas, &w->quota);

    w->org_quota = new_row(&model_org_quotas, a);
    set_i(&model_org_quotas, &w->org_quota, "org_id", model_row_id(&w->org));
    set_i(&model_org_quotas, &w->org_quota, "gpu_class_id", model_row_id(&w->gpu_class));
    set_i(&model_org_quotas, &w->org_quota, "limit_milli", 8000);
    ins(e, &model_org_quotas, &w->org_quota);

    w->audit = new_row(&model_audit, a);
    set_s(&model_audit, a, &w->audit, "action", "create");
    set_s(&model_audit, a, &w->audit, "resource", "projects");
    set_i(&model_audit, &w->audit, "object_id", INT64_MAX);
    set_s(&model_audit, a, &w->audit, "after", "{\"name\":\"vision\",\"weight\":7}");
    ins(e, &model_audit, &w->audit);
}

/* Running work: a workload with an allocation, an event and a preemption entry. */
static void make_work(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    const struct resource_def *wd = &model_workloads, *ad = &model_allocations;

    w->workload = new_row(wd, a);
    set_i(wd, &w->workload, "project_id", model_row_id(&w->project));
    set_i(wd, &w->workload, "flavor_id", model_row_id(&w->flavor));
    set_s(wd, a, &w->workload, "command", "python train.py --lr 3e-4 'quoted' \"x\"");
    set_s(wd, a, &w->workload, "priority_class", "owned");
    set_i(wd, &w->workload, "replicas", 4);
    set_i(wd, &w->workload, "max_runtime_s", 3600);
    set_null(wd, &w->workload, "grace_s");
    set_s(wd, a, &w->workload, "idempotency_key", "k-1");
    set_null(wd, &w->workload, "duration_s");
    set_i(wd, &w->workload, "user_id", model_row_id(&w->user));
    set_i(wd, &w->workload, "cluster_id", model_row_id(&w->cluster));
    set_i(wd, &w->workload, "submitted_ms", INT64_C(1796053787250));
    set_null(wd, &w->workload, "finished_at");
    set_i(wd, &w->workload, "exit_code", -9);
    ins(e, wd, &w->workload);

    w->allocation = new_row(ad, a);
    set_i(ad, &w->allocation, "workload_id", model_row_id(&w->workload));
    set_i(ad, &w->allocation, "project_id", model_row_id(&w->project));
    set_i(ad, &w->allocation, "node_id", model_row_id(&w->node));
    set_i(ad, &w->allocation, "gpu_id", model_row_id(&w->gpu));
    set_i(ad, &w->allocation, "gpu_class_id", model_row_id(&w->gpu_class));
    set_i(ad, &w->allocation, "milli", 500);
    set_s(ad, a, &w->allocation, "priority_class", "opportunistic");
    set_i(ad, &w->allocation, "borrowed", 1);
    set_null(ad, &w->allocation, "ended_ms");
    ins(e, ad, &w->allocation);

    w->event = new_row(&model_events, a);
    set_i(&model_events, &w->event, "workload_id", model_row_id(&w->workload));
    set_i(&model_events, &w->event, "project_id", model_row_id(&w->project));
    set_s(&model_events, a, &w->event, "type", "admitted");
    ins(e, &model_events, &w->event);

    w->preemption = new_row(&model_preemptions, a);
    set_i(&model_preemptions, &w->preemption, "preemptor_id", model_row_id(&w->workload));
    set_i(&model_preemptions, &w->preemption, "project_id", model_row_id(&w->project));
    set_i(&model_preemptions, &w->preemption, "gpu_class_id", model_row_id(&w->gpu_class));
    set_s(&model_preemptions, a, &w->preemption, "victims",
          "[{\"workload_id\":1,\"lost_ms\":12}]");
    set_null(&model_preemptions, &w->preemption, "released_ms");
    ins(e, &model_preemptions, &w->preemption);
}

static void make_billing(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    const struct resource_def *d;

    d = &model_prices;
    w->price = new_row(d, a);
    set_i(d, &w->price, "flavor_id", model_row_id(&w->flavor));
    set_s(d, a, &w->price, "currency", "EUR");
    set_i(d, &w->price, "price_per_hour_micros", 2500000);
    ins(e, d, &w->price);

    d = &model_usage;
    w->usage = new_row(d, a);
    set_i(d, &w->usage, "seq", 1);
    set_i(d, &w->usage, "workload_id", model_row_id(&w->workload));
    set_i(d, &w->usage, "org_id", model_row_id(&w->org));
    set_i(d, &w->usage, "project_id", model_row_id(&w->project));
    set_i(d, &w->usage, "flavor_id", model_row_id(&w->flavor));
    set_i(d, &w->usage, "replicas", 2);
    set_i(d, &w->usage, "started_ms", 1000);
    set_i(d, &w->usage, "ended_ms", 61000);
    set_s(d, a, &w->usage, "hash", "ab01");
    ins(e, d, &w->usage);

    d = &model_invoices;
    w->invoice = new_row(d, a);
    set_s(d, a, &w->invoice, "number", "INV-2026-000001");
    set_i(d, &w->invoice, "org_id", model_row_id(&w->org));
    set_s(d, a, &w->invoice, "period", "2026-11");
    set_i(d, &w->invoice, "total_micros", -12340000);
    set_s(d, a, &w->invoice, "lines", "[{\"amount\":\"1.00\"}]");
    set_s(d, a, &w->invoice, "canonical", "invoice org=1\nline x\n");
    ins(e, d, &w->invoice);

    d = &model_budgets;
    w->budget = new_row(d, a);
    set_i(d, &w->budget, "project_id", model_row_id(&w->project));
    set_i(d, &w->budget, "gpu_hours", 100);
    set_i(d, &w->budget, "enforce", 1);
    ins(e, d, &w->budget);

    d = &model_budget_alerts;
    w->alert = new_row(d, a);
    set_i(d, &w->alert, "budget_id", model_row_id(&w->budget));
    set_i(d, &w->alert, "project_id", model_row_id(&w->project));
    set_i(d, &w->alert, "percent", 80);
    set_i(d, &w->alert, "limit", 100000);
    ins(e, d, &w->alert);
}

static void make_inventory(struct env *e, struct world *w)
{
    const struct resource_def *d = &model_inventory_items;
    w->item = new_row(d, &e->a);
    set_s(d, &e->a, &w->item, "uuid", "GPU-00000000-1111-2222-3333-444444444444");
    set_s(d, &e->a, &w->item, "site", "eu-west, \"rack\" 3");
    set_s(d, &e->a, &w->item, "intended_use", "ünïcødé training");
    ins(e, d, &w->item);
}

static void make_world(struct env *e, struct world *w)
{
    make_tenants(e, w);
    make_fleet(e, w);
    make_catalog(e, w);
    make_work(e, w);
    make_billing(e, w);
    make_inventory(e, w);
}

/* ---- schema and migrations ---- */

static void test_migrations_idempotent(void **state)
{
    struct env *e = *state;

    assert_int_equal(store_schema_version(e->s), store_schema_latest());
    assert_true(store_schema_latest() >= 1);
    reopen(e, &test_opt);
    assert_int_equal(store_schema_version(e->s), store_schema_latest());
    /* A second reopen with a different pool size changes nothing either. */
    reopen(e, NULL);
    assert_int_equal(store_schema_version(e->s), store_schema_latest());
}

static void test_refuses_newer_schema(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct store *s = NULL;
    int rc = store__exec(e->c,
                         "INSERT INTO schema_migrations (version, name, applied_at) "
                         "VALUES (100000, 'from the future', 0)",
                         &ei);

    assert_int_equal(rc, 0);
    close_env_store(e);
    rc = store_open(e->url, &test_opt, &s, &ei);
    assert_err(rc, ERR_SCHEMA_NEWER, &ei, "100000 is newer than this binary");
    assert_null(s);
    assert_null(strchr(ei.message, '\n'));
}

/* Migration 1 has exactly the columns of every definition, no more. */
static void test_schema_matches_definitions(void **state)
{
    static const char sqlite_sql[] = "SELECT COUNT(*) FROM pragma_table_info(?)";
    static const char pg_sql[] = "SELECT COUNT(*) FROM information_schema.columns "
                                 "WHERE table_schema = current_schema() AND table_name = ?";
    struct env *e = *state;

    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        struct store__params p = {.n = 0};
        struct store_filter f;
        struct error_info ei = {0};
        struct row *rows;
        size_t n;
        int64_t n_cols = -1;

        store__params_add_text(&p, def->table);
        assert_int_equal(store__run(e->c, store_engine(e->s) == STORE_SQLITE ? sqlite_sql : pg_sql,
                                    &p, &n_cols, &ei),
                         0);
        if (n_cols != (int64_t)def->n_fields)
            fail_msg("table %s has %" PRId64 " columns, its definition %zu fields", def->table,
                     n_cols, def->n_fields);
        /* Every column of the definition exists under its SQL name. */
        store_filter_init(&f);
        if (store_list(e->c, def, &f, &e->a, &rows, &n, &ei) < 0)
            fail_msg("list %s: %s", def->name, ei.message);
        assert_int_equal(n, 0);
    }
}

/* ---- round trips ---- */

static void test_roundtrip_every_resource(void **state)
{
    struct env *e = *state;
    struct world w;
    const struct {
        const struct resource_def *def;
        const struct row *r;
    } all[] = {
        {&model_users, &w.user},
        {&model_organizations, &w.org},
        {&model_organizations, &w.sub_org},
        {&model_projects, &w.project},
        {&model_role_bindings, &w.binding},
        {&model_tokens, &w.token},
        {&model_clusters, &w.cluster},
        {&model_nodes, &w.node},
        {&model_gpu_classes, &w.gpu_class},
        {&model_gpu_classes, &w.mig_class},
        {&model_gpus, &w.gpu},
        {&model_pools, &w.pool},
        {&model_flavors, &w.flavor},
        {&model_quotas, &w.quota},
        {&model_org_quotas, &w.org_quota},
        {&model_audit, &w.audit},
        {&model_workloads, &w.workload},
        {&model_allocations, &w.allocation},
        {&model_events, &w.event},
        {&model_preemptions, &w.preemption},
        {&model_prices, &w.price},
        {&model_usage, &w.usage},
        {&model_invoices, &w.invoice},
        {&model_budgets, &w.budget},
        {&model_budget_alerts, &w.alert},
        {&model_inventory_items, &w.item},
    };
    bool seen[32] = {false};

    make_world(e, &w);
    for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
        assert_roundtrip(e, all[i].def, all[i].r);
        for (size_t k = 0; k < model_n_resources; k++)
            seen[k] |= model_resources[k] == all[i].def;
    }
    for (size_t k = 0; k < model_n_resources; k++) {
        if (!seen[k])
            fail_msg("no round trip covers %s", model_resources[k]->name);
    }
}

static void test_update_roundtrip(void **state)
{
    struct env *e = *state;
    struct arena *a = &e->a;
    struct world w;

    make_world(e, &w);
    set_i(&model_users, &w.user, "disabled", 0);
    set_s(&model_users, a, &w.user, "email", "");
    update_ok(e, &model_users, &w.user);
    assert_roundtrip(e, &model_users, &w.user);

    set_null(&model_organizations, &w.org, "manager_id");
    set_i(&model_organizations, &w.org, "updated_at", T0 + 99);
    update_ok(e, &model_organizations, &w.org);
    assert_roundtrip(e, &model_organizations, &w.org);

    set_i(&model_tokens, &w.token, "revoked_at", T0 + 5);
    update_ok(e, &model_tokens, &w.token);
    assert_roundtrip(e, &model_tokens, &w.token);

    set_null(&model_gpus, &w.gpu, "uuid");
    set_i(&model_gpus, &w.gpu, "mig_mode", 0);
    update_ok(e, &model_gpus, &w.gpu);
    assert_roundtrip(e, &model_gpus, &w.gpu);

    set_null(&model_pools, &w.pool, "owner_org_id");
    set_i(&model_pools, &w.pool, "owner_project_id", model_row_id(&w.project));
    set_s(&model_pools, a, &w.pool, "access_org_ids", "[1,2,3]");
    update_ok(e, &model_pools, &w.pool);
    assert_roundtrip(e, &model_pools, &w.pool);

    set_i(&model_quotas, &w.quota, "guaranteed_milli", 2000);
    set_null(&model_quotas, &w.quota, "limit_milli");
    update_ok(e, &model_quotas, &w.quota);
    assert_roundtrip(e, &model_quotas, &w.quota);

    set_s(&model_audit, a, &w.audit, "before", "[null,true,1.5,\"x\"]");
    update_ok(e, &model_audit, &w.audit);
    assert_roundtrip(e, &model_audit, &w.audit);
}

/* Unset values are written as NULL: fine where nullable, an error naming the field if not. */
static void test_unset_values(void **state)
{
    struct env *e = *state;
    struct world w;
    struct row r;
    struct error_info ei = {0};
    int64_t id = 0;
    int rc;

    make_tenants(e, &w);
    r = new_row(&model_tokens, &e->a);
    set_i(&model_tokens, &r, "user_id", model_row_id(&w.user));
    set_s(&model_tokens, &e->a, &r, "hash", "h-unset");
    r.v[fi(&model_tokens, "expires_at")].set = false;
    ins(e, &model_tokens, &r);
    set_null(&model_tokens, &r, "expires_at");
    assert_roundtrip(e, &model_tokens, &r);

    r = new_row(&model_projects, &e->a);
    set_i(&model_projects, &r, "org_id", model_row_id(&w.org));
    r.v[fi(&model_projects, "name")].set = false;
    rc = store_insert(e->c, &model_projects, &r, &id, &ei);
    assert_err(rc, ERR_INVALID, &ei, "project field 'name' may not be null");
    assert_string_equal(ei.field, "name");
}

static void test_not_found(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct row r = new_row(&model_clusters, &e->a);
    struct row got;
    int rc;

    set_s(&model_clusters, &e->a, &r, "name", "c");
    rc = store_get(e->c, &model_clusters, 424242, &e->a, &got, &ei);
    assert_err(rc, ERR_NOT_FOUND, &ei, "no cluster with id 424242");
    memset(&ei, 0, sizeof(ei));
    rc = store_update(e->c, &model_clusters, 424242, &r, &ei);
    assert_err(rc, ERR_NOT_FOUND, &ei, "424242");
    memset(&ei, 0, sizeof(ei));
    rc = store_delete(e->c, &model_clusters, 424242, &ei);
    assert_err(rc, ERR_NOT_FOUND, &ei, "424242");

    ins(e, &model_clusters, &r);
    assert_int_equal(store_delete(e->c, &model_clusters, model_row_id(&r), &ei), 0);
    rc = store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei);
    assert_int_equal(rc, ERR_NOT_FOUND);
}

/* ---- constraints ---- */

static void expect_insert_err(struct env *e, const struct resource_def *def, struct row *r,
                              int want, const char *part)
{
    struct error_info ei = {0};
    int64_t id = 0;
    int rc = store_insert(e->c, def, r, &id, &ei);

    assert_err(rc, want, &ei, part);
}

static void test_unique_conflicts(void **state)
{
    struct env *e = *state;
    struct arena *a = &e->a;
    struct world w;
    struct row r;

    make_world(e, &w);
    r = new_row(&model_organizations, a);
    set_s(&model_organizations, a, &r, "name", "acme");
    expect_insert_err(e, &model_organizations, &r, ERR_CONFLICT,
                      "an organization with the same name already exists");

    r = new_row(&model_projects, a);
    set_i(&model_projects, &r, "org_id", model_row_id(&w.org));
    set_s(&model_projects, a, &r, "name", "vision");
    expect_insert_err(e, &model_projects, &r, ERR_CONFLICT,
                      "a project with the same org_id and name already exists");
    /* The same name in another organization is fine. */
    set_i(&model_projects, &r, "org_id", model_row_id(&w.sub_org));
    ins(e, &model_projects, &r);

    /* Unique on update too. */
    set_s(&model_projects, a, &r, "name", "vision");
    set_i(&model_projects, &r, "org_id", model_row_id(&w.org));
    {
        struct error_info ei = {0};
        int rc = store_update(e->c, &model_projects, model_row_id(&r), &r, &ei);
        assert_err(rc, ERR_CONFLICT, &ei, "org_id and name");
    }

    /* A global binding has NULL scope columns and must still be unique. */
    r = new_row(&model_role_bindings, a);
    set_i(&model_role_bindings, &r, "user_id", model_row_id(&w.user));
    set_s(&model_role_bindings, a, &r, "role", "admin");
    ins(e, &model_role_bindings, &r);
    expect_insert_err(e, &model_role_bindings, &r, ERR_CONFLICT,
                      "a role binding with the same user_id, role and scope already exists");

    r = new_row(&model_tokens, a);
    set_i(&model_tokens, &r, "user_id", model_row_id(&w.user));
    set_s(&model_tokens, a, &r, "hash", "sha256:0123abcd");
    expect_insert_err(e, &model_tokens, &r, ERR_CONFLICT, "same hash");

    r = new_row(&model_gpus, a);
    set_i(&model_gpus, &r, "node_id", model_row_id(&w.node));
    set_i(&model_gpus, &r, "gpu_class_id", model_row_id(&w.gpu_class));
    set_i(&model_gpus, &r, "index", 3);
    expect_insert_err(e, &model_gpus, &r, ERR_CONFLICT, "a gpu with the same node_id and index");
    set_i(&model_gpus, &r, "index", 4);
    set_s(&model_gpus, a, &r, "uuid", "GPU-8f6b2c1e-0000-4a1b-9c3d-123456789abc");
    expect_insert_err(e, &model_gpus, &r, ERR_CONFLICT, "uuid");
    /* Several GPUs may have no UUID yet. */
    set_null(&model_gpus, &r, "uuid");
    ins(e, &model_gpus, &r);
    set_i(&model_gpus, &r, "index", 5);
    ins(e, &model_gpus, &r);

    r = new_row(&model_quotas, a);
    set_i(&model_quotas, &r, "project_id", model_row_id(&w.project));
    set_i(&model_quotas, &r, "gpu_class_id", model_row_id(&w.gpu_class));
    expect_insert_err(e, &model_quotas, &r, ERR_CONFLICT, "project_id and gpu_class_id");
}

static void test_foreign_keys(void **state)
{
    struct env *e = *state;
    struct arena *a = &e->a;
    struct world w;
    struct row r;
    struct error_info ei = {0};
    int rc;

    make_world(e, &w);
    r = new_row(&model_projects, a);
    set_i(&model_projects, &r, "org_id", 987654);
    set_s(&model_projects, a, &r, "name", "orphan");
    expect_insert_err(e, &model_projects, &r, ERR_INVALID, "a referenced object does not exist");

    r = w.project;
    set_i(&model_projects, &r, "org_id", 987654);
    rc = store_update(e->c, &model_projects, model_row_id(&r), &r, &ei);
    assert_err(rc, ERR_INVALID, &ei, "a referenced object does not exist");

    /* An organization with projects, sub-organizations and pools cannot go. */
    memset(&ei, 0, sizeof(ei));
    rc = store_delete(e->c, &model_organizations, model_row_id(&w.org), &ei);
    assert_err(rc, ERR_CONFLICT, &ei,
               arena_printf(a, "organization %" PRId64 " is still referenced by other objects",
                            model_row_id(&w.org)));
    get_ok(e, &model_organizations, model_row_id(&w.org));

    memset(&ei, 0, sizeof(ei));
    rc = store_delete(e->c, &model_gpu_classes, model_row_id(&w.gpu_class), &ei);
    assert_err(rc, ERR_CONFLICT, &ei, "still referenced");

    /* The audit log keeps no references: it may name anything. */
    r = new_row(&model_audit, a);
    set_i(&model_audit, &r, "actor_id", 555555);
    set_i(&model_audit, &r, "object_id", 666666);
    ins(e, &model_audit, &r);
}

static int64_t count_rows(struct env *e, const struct resource_def *def, const char *field,
                          int64_t value)
{
    struct store_filter f;
    struct error_info ei = {0};
    struct row *rows;
    size_t n = 0;

    store_filter_init(&f);
    f.limit = 10000;
    if (field)
        store_filter_eq_int(&f, fi(def, field), value);
    if (store_list(e->c, def, &f, &e->a, &rows, &n, &ei) < 0)
        fail_msg("list %s: %s", def->name, ei.message);
    return (int64_t)n;
}

static void delete_ok(struct env *e, const struct resource_def *def, int64_t id)
{
    struct error_info ei = {0};
    int rc = store_delete(e->c, def, id, &ei);

    if (rc < 0)
        fail_msg("delete %s %" PRId64 ": %s", def->name, id, ei.message);
}

static void test_cascades(void **state)
{
    struct env *e = *state;
    struct world w;
    struct row org;
    int64_t uid;

    make_world(e, &w);
    uid = model_row_id(&w.user);
    assert_int_equal(count_rows(e, &model_tokens, "user_id", uid), 1);
    assert_int_equal(count_rows(e, &model_role_bindings, "user_id", uid), 1);

    /* A user takes its tokens and bindings along; organizations lose their manager. */
    delete_ok(e, &model_users, uid);
    assert_int_equal(count_rows(e, &model_tokens, "user_id", uid), 0);
    assert_int_equal(count_rows(e, &model_role_bindings, "user_id", uid), 0);
    org = get_ok(e, &model_organizations, model_row_id(&w.org));
    assert_true(org.v[fi(&model_organizations, "manager_id")].null);

    /* Work keeps its history: a project that ran work cannot go, until the work rows do. */
    {
        struct error_info ei = {0};
        assert_int_equal(store_delete(e->c, &model_projects, model_row_id(&w.project), &ei),
                         ERR_CONFLICT);
        assert_int_equal(store_delete(e->c, &model_nodes, model_row_id(&w.node), &ei),
                         ERR_CONFLICT);
    }
    delete_ok(e, &model_preemptions, model_row_id(&w.preemption));
    delete_ok(e, &model_events, model_row_id(&w.event));
    delete_ok(e, &model_allocations, model_row_id(&w.allocation));
    delete_ok(e, &model_usage, model_row_id(&w.usage));
    delete_ok(e, &model_workloads, model_row_id(&w.workload));

    /* A project takes its quotas, budgets and their alerts along, once no pool is owned by it. */
    delete_ok(e, &model_projects, model_row_id(&w.project));
    assert_int_equal(count_rows(e, &model_quotas, NULL, 0), 0);
    assert_int_equal(count_rows(e, &model_budgets, NULL, 0), 0);
    assert_int_equal(count_rows(e, &model_budget_alerts, NULL, 0), 0);

    /* Invoices and prices are history: they hold their organization and flavor. */
    {
        struct error_info ei = {0};
        assert_int_equal(store_delete(e->c, &model_flavors, model_row_id(&w.flavor), &ei),
                         ERR_CONFLICT);
    }
    delete_ok(e, &model_prices, model_row_id(&w.price));
    delete_ok(e, &model_invoices, model_row_id(&w.invoice));

    /* An organization takes its org quotas along once nothing else holds it. */
    delete_ok(e, &model_flavors, model_row_id(&w.flavor));
    delete_ok(e, &model_pools, model_row_id(&w.pool));
    delete_ok(e, &model_organizations, model_row_id(&w.sub_org));
    delete_ok(e, &model_organizations, model_row_id(&w.org));
    assert_int_equal(count_rows(e, &model_org_quotas, NULL, 0), 0);
}

/* ---- lists ---- */

struct list_result {
    struct row *rows;
    size_t n;
};

static struct list_result list_ok(struct env *e, const struct resource_def *def,
                                  const struct store_filter *f)
{
    struct list_result lr = {NULL, 0};
    struct error_info ei = {0};

    if (store_list(e->c, def, f, &e->a, &lr.rows, &lr.n, &ei) < 0)
        fail_msg("list %s: %s", def->name, ei.message);
    for (size_t i = 1; i < lr.n; i++)
        assert_true(model_row_id(&lr.rows[i - 1]) < model_row_id(&lr.rows[i]));
    return lr;
}

/* Two organizations: "a" with ten projects p00..p09, "b" with five q00..q04. */
static void make_projects(struct env *e, int64_t *ret_org_a, int64_t *ret_org_b,
                          int64_t *ret_first_a)
{
    struct arena *a = &e->a;
    int64_t orgs[2];

    for (int k = 0; k < 2; k++) {
        struct row o = new_row(&model_organizations, a);
        set_s(&model_organizations, a, &o, "name", k ? "b" : "a");
        if (k)
            set_i(&model_organizations, &o, "parent_id", orgs[0]);
        orgs[k] = ins(e, &model_organizations, &o);
    }
    for (int i = 0; i < 15; i++) {
        struct row p = new_row(&model_projects, a);
        int64_t id;
        set_i(&model_projects, &p, "org_id", orgs[i >= 10]);
        set_s(&model_projects, a, &p, "name",
              arena_printf(a, "%c%02d", i < 10 ? 'p' : 'q', i % 10));
        set_i(&model_projects, &p, "weight", i % 3 + 1);
        id = ins(e, &model_projects, &p);
        if (i == 0)
            *ret_first_a = id;
    }
    *ret_org_a = orgs[0];
    *ret_org_b = orgs[1];
}

static void test_list_filters(void **state)
{
    struct env *e = *state;
    const struct resource_def *P = &model_projects, *O = &model_organizations;
    int64_t org_a, org_b, first_a;
    struct store_filter f;
    struct list_result lr;
    int64_t ids_b[1];

    make_projects(e, &org_a, &org_b, &first_a);
    ids_b[0] = org_b;

    store_filter_init(&f);
    store_filter_eq_int(&f, fi(P, "org_id"), org_a);
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 10);
    assert_int_equal(model_row_id(&lr.rows[0]), first_a);

    store_filter_eq_int(&f, fi(P, "weight"), 2);
    assert_int_equal(list_ok(e, P, &f).n, 3); /* p01, p04, p07 */

    store_filter_init(&f);
    store_filter_eq_str(&f, fi(P, "name"), "q03");
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 1);
    assert_string_equal(lr.rows[0].v[fi(P, "name")].s, "q03");
    assert_int_equal(lr.rows[0].v[fi(P, "org_id")].i, org_b);

    store_filter_init(&f);
    store_filter_eq_str(&f, fi(P, "name"), "nope' OR '1'='1");
    assert_int_equal(list_ok(e, P, &f).n, 0);

    /* NULL matches with IS NULL. */
    store_filter_init(&f);
    store_filter_eq_null(&f, fi(O, "parent_id"));
    lr = list_ok(e, O, &f);
    assert_int_equal(lr.n, 1);
    assert_int_equal(model_row_id(&lr.rows[0]), org_a);
    store_filter_init(&f);
    store_filter_eq_int(&f, fi(O, "parent_id"), org_a);
    assert_int_equal(list_ok(e, O, &f).n, 1);

    /* any-of: one list, an empty list, and an OR of two. */
    store_filter_init(&f);
    store_filter_any(&f, fi(P, "org_id"), ids_b, 1);
    assert_int_equal(list_ok(e, P, &f).n, 5);

    store_filter_init(&f);
    store_filter_any(&f, fi(P, "org_id"), NULL, 0);
    assert_int_equal(list_ok(e, P, &f).n, 0);

    store_filter_init(&f);
    store_filter_any(&f, fi(P, "org_id"), ids_b, 1);
    store_filter_any(&f, 0, &first_a, 1);
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 6);
    assert_int_equal(model_row_id(&lr.rows[0]), first_a);

    /* any-of combines with equalities by AND. */
    store_filter_eq_int(&f, fi(P, "weight"), 1);
    assert_int_equal(list_ok(e, P, &f).n, 2); /* p00 and q02 */
}

static void test_list_pagination(void **state)
{
    struct env *e = *state;
    int64_t org_a, org_b, first_a, last = 0;
    struct store_filter f;
    size_t total = 0;
    int pages = 0;

    make_projects(e, &org_a, &org_b, &first_a);
    for (;;) {
        struct list_result lr;
        store_filter_init(&f);
        f.limit = 4;
        f.after_id = last;
        lr = list_ok(e, &model_projects, &f);
        if (lr.n == 0)
            break;
        assert_true(lr.n <= 4);
        assert_true(model_row_id(&lr.rows[0]) > last);
        last = model_row_id(&lr.rows[lr.n - 1]);
        total += lr.n;
        pages++;
    }
    assert_int_equal(total, 15);
    assert_int_equal(pages, 4);
}

static void test_list_invalid_filters(void **state)
{
    struct env *e = *state;
    const struct resource_def *P = &model_projects;
    struct store_filter f;
    struct error_info ei = {0};
    struct row *rows;
    size_t n;
    int64_t one = 1;
    int rc;

    store_filter_init(&f);
    f.limit = 0;
    rc = store_list(e->c, P, &f, &e->a, &rows, &n, &ei);
    assert_err(rc, ERR_INVALID, &ei, "limit");

    store_filter_init(&f);
    f.limit = 10001;
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_list(e->c, P, &f, &e->a, &rows, &n, &ei), ERR_INVALID);

    store_filter_init(&f);
    store_filter_any(&f, fi(P, "name"), &one, 1);
    memset(&ei, 0, sizeof(ei));
    rc = store_list(e->c, P, &f, &e->a, &rows, &n, &ei);
    assert_err(rc, ERR_INVALID, &ei, "'name' is not an id field");

    store_filter_init(&f);
    store_filter_eq_str(&f, fi(P, "org_id"), "1");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_list(e->c, P, &f, &e->a, &rows, &n, &ei), ERR_INVALID);

    store_filter_init(&f);
    store_filter_eq_int(&f, fi(P, "name"), 1);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_list(e->c, P, &f, &e->a, &rows, &n, &ei), ERR_INVALID);
}

/* ---- transactions ---- */

static struct row cluster_row(struct env *e, const char *name)
{
    struct row r = new_row(&model_clusters, &e->a);
    set_s(&model_clusters, &e->a, &r, "name", name);
    return r;
}

static void test_transactions(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct row r1 = cluster_row(e, "rolled-back"), r2 = cluster_row(e, "committed");
    struct row got;

    assert_int_equal(store_begin(e->c, &ei), 0);
    ins(e, &model_clusters, &r1);
    store_rollback(e->c);
    assert_int_equal(store_get(e->c, &model_clusters, model_row_id(&r1), &e->a, &got, &ei),
                     ERR_NOT_FOUND);

    assert_int_equal(store_begin(e->c, &ei), 0);
    ins(e, &model_clusters, &r2);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_begin(e->c, &ei), ERR_INTERNAL); /* not nestable */
    assert_int_equal(store_commit(e->c, &ei), 0);
    assert_roundtrip(e, &model_clusters, &r2);

    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_commit(e->c, &ei), ERR_INTERNAL); /* none open */
    store_rollback(e->c);                                    /* harmless */
}

static void test_conn_put_rolls_back(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct row r = cluster_row(e, "left-open");
    struct row got;

    assert_int_equal(store_begin(e->c, &ei), 0);
    ins(e, &model_clusters, &r);
    store_conn_put(e->c);
    e->c = store_conn_get(e->s);
    assert_int_equal(store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei),
                     ERR_NOT_FOUND);
    /* The connection is usable afterwards: a new transaction starts. */
    assert_int_equal(store_begin(e->c, &ei), 0);
    store_rollback(e->c);
}

/* Others do not see uncommitted rows, and do see them once committed. */
static void test_isolation(void **state)
{
    struct env *e = *state;
    struct store_conn *other = store_conn_get(e->s);
    struct error_info ei = {0};
    struct row r = cluster_row(e, "isolated");
    struct row got;

    assert_int_equal(store_begin(e->c, &ei), 0);
    ins(e, &model_clusters, &r);
    assert_int_equal(store_get(other, &model_clusters, model_row_id(&r), &e->a, &got, &ei),
                     ERR_NOT_FOUND);
    assert_int_equal(store_commit(e->c, &ei), 0);
    assert_int_equal(store_get(other, &model_clusters, model_row_id(&r), &e->a, &got, &ei), 0);
    store_conn_put(other);
}

/* After an error inside a transaction, rolling back leaves a usable connection. */
static void test_error_in_transaction(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct row r = cluster_row(e, "dup"), keep = cluster_row(e, "kept");
    int64_t id;

    ins(e, &model_clusters, &r);
    assert_int_equal(store_begin(e->c, &ei), 0);
    assert_int_equal(store_insert(e->c, &model_clusters, &r, &id, &ei), ERR_CONFLICT);
    store_rollback(e->c);
    ins(e, &model_clusters, &keep);
    assert_roundtrip(e, &model_clusters, &keep);
}

/* ---- meta ---- */

static void test_meta(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    char *v = NULL;
    int rc;

    rc = store_meta_get(e->c, "bootstrap", &e->a, &v, &ei);
    assert_err(rc, ERR_NOT_FOUND, &ei, "bootstrap");
    assert_null(v);
    assert_int_equal(store_meta_set(e->c, "bootstrap", "done", &ei), 0);
    assert_int_equal(store_meta_get(e->c, "bootstrap", &e->a, &v, &ei), 0);
    assert_string_equal(v, "done");
    assert_int_equal(store_meta_set(e->c, "bootstrap", "again ✓", &ei), 0);
    assert_int_equal(store_meta_get(e->c, "bootstrap", &e->a, &v, &ei), 0);
    assert_string_equal(v, "again ✓");
    assert_int_equal(store_meta_set(e->c, "empty", "", &ei), 0);
    assert_int_equal(store_meta_get(e->c, "empty", &e->a, &v, &ei), 0);
    assert_string_equal(v, "");
}

/* ---- concurrency ---- */

#define N_WRITERS 4
#define ROWS_PER_WRITER 200
#define ROWS_PER_TX 10

struct writer {
    struct store *s;
    int n;
    int rc;
    char message[256];
};

static int write_batch(struct store_conn *c, int writer, int from, struct arena *a,
                       struct error_info *ei)
{
    int rc = store_begin(c, ei);

    for (int i = from; rc == 0 && i < from + ROWS_PER_TX; i++) {
        struct row r = new_row(&model_organizations, a);
        int64_t id;
        set_s(&model_organizations, a, &r, "name", arena_printf(a, "w%d-%03d", writer, i));
        rc = store_insert(c, &model_organizations, &r, &id, ei);
    }
    if (rc == 0)
        rc = store_commit(c, ei);
    store_rollback(c);
    return rc;
}

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct store_conn *c = store_conn_get(w->s);
    struct error_info ei = {0};
    struct arena a;

    arena_init(&a);
    for (int i = 0; i < ROWS_PER_WRITER && w->rc == 0; i += ROWS_PER_TX)
        w->rc = write_batch(c, w->n, i, &a, &ei);
    snprintf(w->message, sizeof(w->message), "%s", ei.message);
    arena_release(&a);
    store_conn_put(c);
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    struct env *e = *state;
    struct writer w[N_WRITERS];
    pthread_t t[N_WRITERS];

    /* The test holds one connection; the writers need their own. */
    reopen(e, &(struct store_options){.n_conns = N_WRITERS + 1, .busy_timeout_ms = 10000});
    for (int i = 0; i < N_WRITERS; i++) {
        w[i] = (struct writer){.s = e->s, .n = i};
        assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
    }
    for (int i = 0; i < N_WRITERS; i++) {
        pthread_join(t[i], NULL);
        if (w[i].rc < 0)
            fail_msg("writer %d: %s: %s", i, err_code_name(w[i].rc), w[i].message);
    }
    assert_int_equal(count_rows(e, &model_organizations, NULL, 0), N_WRITERS * ROWS_PER_WRITER);
}

struct waiter {
    struct store *s;
    atomic_bool got;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct store_conn *c = store_conn_get(w->s);

    atomic_store(&w->got, true);
    store_conn_put(c);
    return NULL;
}

/* With every connection taken, store_conn_get waits for one to come back. */
static void test_pool_waits(void **state)
{
    struct env *e = *state;
    struct waiter w;
    pthread_t t;

    reopen(e, &(struct store_options){.n_conns = 1, .busy_timeout_ms = 1000});
    w.s = e->s;
    atomic_init(&w.got, false);
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
    usleep(100 * 1000);
    assert_false(atomic_load(&w.got));
    store_conn_put(e->c);
    pthread_join(t, NULL);
    assert_true(atomic_load(&w.got));
    e->c = store_conn_get(e->s);
}

/* Daemons starting together on an empty store: one migrates, all open. */
struct opener {
    const char *url;
    struct store *s;
    int rc;
    char message[256];
};

static void *opener_main(void *arg)
{
    struct opener *o = arg;
    struct error_info ei = {0};

    o->rc = store_open(o->url, &test_opt, &o->s, &ei);
    snprintf(o->message, sizeof(o->message), "%s", ei.message);
    return NULL;
}

static void empty_store(struct env *e)
{
    static const char *const files[] = {"test.db", "test.db-wal", "test.db-shm"};

    if (pg_url()) {
        pg_reset(e->url);
        return;
    }
    for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
        char *p = xasprintf("%s/%s", e->dir, files[i]);
        unlink(p);
        free(p);
    }
}

static void test_concurrent_open(void **state)
{
    struct env *e = *state;
    struct opener o[N_WRITERS];
    pthread_t t[N_WRITERS];

    close_env_store(e);
    empty_store(e);
    for (int i = 0; i < N_WRITERS; i++) {
        o[i] = (struct opener){.url = e->url};
        assert_int_equal(pthread_create(&t[i], NULL, opener_main, &o[i]), 0);
    }
    for (int i = 0; i < N_WRITERS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N_WRITERS; i++) {
        if (o[i].rc == 0)
            o[i].rc = store_schema_version(o[i].s);
        store_close(o[i].s);
    }
    for (int i = 0; i < N_WRITERS; i++) {
        if (o[i].rc < 0)
            fail_msg("opener %d: %s: %s", i, err_code_name(o[i].rc), o[i].message);
        assert_int_equal(o[i].rc, store_schema_latest());
    }
    e->s = open_ok(e->url, &test_opt);
    e->c = store_conn_get(e->s);
}

/* ---- opening ---- */

static void test_open_errors(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct store *s = NULL;
    char *dir = make_temp_dir();
    char *junk = xasprintf("%s/junk.db", dir);
    FILE *fp;
    int rc;

    (void)e;
    rc = store_open("/nonexistent-gpuaas-dir/sub/x.db", NULL, &s, &ei);
    assert_int_equal(rc, ERR_STORE);
    assert_string_equal(ei.message, "could not open database '/nonexistent-gpuaas-dir/sub/x.db': "
                                    "unable to open database file");
    assert_null(s);

    fp = fopen(junk, "w");
    assert_non_null(fp);
    fputs("this is not a database, just text that is long enough to be a header........\n"
          "................................................................................\n",
          fp);
    fclose(fp);
    memset(&ei, 0, sizeof(ei));
    rc = store_open(junk, NULL, &s, &ei);
    assert_int_equal(rc, ERR_STORE);
    assert_string_equal(
        ei.message,
        arena_printf(&e->a, "could not open database '%s': file is not a database", junk));

    memset(&ei, 0, sizeof(ei));
    rc = store_open("mysql://db/x", NULL, &s, &ei);
    assert_err(rc, ERR_INVALID, &ei, "unsupported store URL scheme 'mysql'");

    memset(&ei, 0, sizeof(ei));
    rc = store_open("", NULL, &s, &ei);
    assert_int_equal(rc, ERR_INVALID);

    memset(&ei, 0, sizeof(ei));
    rc = store_open("sqlite:x.db", &(struct store_options){.n_conns = 0}, &s, &ei);
    assert_err(rc, ERR_INVALID, &ei, "connections");

    /* Nothing listens on port 1; the message is one line and hides the password. */
    memset(&ei, 0, sizeof(ei));
    rc = store_open("postgresql://gpuaas:s3cr3t-pw@127.0.0.1:1/gpuaas?connect_timeout=2", NULL, &s,
                    &ei);
    assert_err(rc, ERR_UNAVAILABLE, &ei, "could not connect to postgresql: ");
    assert_null(strstr(ei.message, "s3cr3t-pw"));
    assert_null(strchr(ei.message, '\n'));
    assert_null(s);

    free(junk);
    remove_temp_dir(dir);
}

/* An in-memory SQLite store works, with a pool of one. */
static void test_sqlite_memory(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct store *s = NULL;
    struct store_conn *c;
    struct row r = cluster_row(e, "mem"), got;
    int64_t id;

    assert_int_equal(store_open("sqlite::memory:", NULL, &s, &ei), ERR_INVALID);
    s = open_ok("sqlite::memory:", &(struct store_options){.n_conns = 1});
    c = store_conn_get(s);
    assert_int_equal(store_insert(c, &model_clusters, &r, &id, &ei), 0);
    assert_int_equal(store_get(c, &model_clusters, id, &e->a, &got, &ei), 0);
    store_conn_put(c);
    store_close(s);
}

/* Kills every other session of the test database, as a server restart would. */
static void pg_kill_sessions(const char *url)
{
    PGconn *pg = PQconnectdb(url);
    PGresult *res = PQexec(pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()");

    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fail_msg("cannot terminate sessions: %s", PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
    usleep(200 * 1000); /* termination is asynchronous */
}

/*
 * PostgreSQL: a session the server dropped is re-established. The statement
 * that finds it dead may fail (ERR_UNAVAILABLE); the next one works, and the
 * cached prepared statements are prepared again. Inside a transaction the
 * loss is always an error, since the transaction is gone.
 */
static void test_pg_reconnects(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct row r = cluster_row(e, "survivor"), got;
    int rc;

    if (!pg_url())
        skip();
    ins(e, &model_clusters, &r);
    get_ok(e, &model_clusters, model_row_id(&r));
    pg_kill_sessions(e->url);
    rc = store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei);
    if (rc != 0)
        assert_err(rc, ERR_UNAVAILABLE, &ei, NULL);
    assert_roundtrip(e, &model_clusters, &r);

    assert_int_equal(store_begin(e->c, &ei), 0);
    pg_kill_sessions(e->url);
    memset(&ei, 0, sizeof(ei));
    rc = store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei);
    assert_err(rc, ERR_UNAVAILABLE, &ei, NULL);
    memset(&ei, 0, sizeof(ei));
    rc = store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei);
    assert_err(rc, ERR_UNAVAILABLE, &ei, "during a transaction");
    store_rollback(e->c);
    assert_roundtrip(e, &model_clusters, &r);
}

/* ---- fault injection through the engine table ---- */

static struct store_engine_ops faulty_ops;
static int commit_faults;

static int faulty_commit(struct store_conn *c, struct error_info *ei)
{
    if (commit_faults > 0) {
        commit_faults--;
        return errinfo_set(ei, ERR_BUSY, NULL, "injected commit failure");
    }
    return (pg_url() ? store__pg_ops : store__sqlite_ops).commit(c, ei);
}

/* A failed commit ends the transaction: its rows are gone and the connection works. */
static void test_failed_commit_rolls_back(void **state)
{
    struct env *e = *state;
    const char *target = pg_url() ? e->url : e->url + strlen("sqlite:");
    struct error_info ei = {0};
    struct row r = cluster_row(e, "never");
    struct row got;

    close_env_store(e);
    faulty_ops = pg_url() ? store__pg_ops : store__sqlite_ops;
    faulty_ops.commit = faulty_commit;
    commit_faults = 1;
    assert_int_equal(store__open_with(&faulty_ops, target, &test_opt, &e->s, &ei), 0);
    e->c = store_conn_get(e->s);

    assert_int_equal(store_begin(e->c, &ei), 0);
    ins(e, &model_clusters, &r);
    assert_int_equal(store_commit(e->c, &ei), ERR_BUSY);
    assert_int_equal(store_get(e->c, &model_clusters, model_row_id(&r), &e->a, &got, &ei),
                     ERR_NOT_FOUND);
    assert_int_equal(store_begin(e->c, &ei), 0);
    assert_int_equal(store_commit(e->c, &ei), 0);
}

/* ---- what is a gpuaas store ---- */

/* Runs sql on the PostgreSQL test database outside any store. */
static void pg_exec(const char *sql)
{
    PGconn *pg = PQconnectdb(pg_url());
    PGresult *res = PQexec(pg, sql);

    if (PQresultStatus(res) != PGRES_COMMAND_OK)
        fail_msg("'%s': %s", sql, PQerrorMessage(pg));
    PQclear(res);
    PQfinish(pg);
}

/* An SQLite file made by another program: sql run on it, attached to the test store as f. */
static char *foreign_sqlite(struct env *e, const char *sql)
{
    char *path = xasprintf("%s/other.db", e->dir);
    char *script = xasprintf("ATTACH DATABASE '%s' AS f; %s; DETACH DATABASE f;", path, sql);
    struct error_info ei = {0};

    if (store__exec(e->c, script, &ei) < 0)
        fail_msg("%s: %s", script, ei.message);
    free(script);
    return path;
}

static int64_t sqlite_int(struct store_conn *c, const char *sql)
{
    struct store__params none = {.n = 0};
    struct error_info ei = {0};
    int64_t v = -1;

    if (store__run(c, sql, &none, &v, &ei) < 0)
        fail_msg("%s: %s", sql, ei.message);
    return v;
}

/* Another program's database (tables, application_id, schema_migrations) is refused, untouched. */
static void test_refuses_foreign_database(void **state)
{
    struct env *e = *state;
    static const char *const kinds[][2] = {
        {"CREATE TABLE f.notes (id INTEGER PRIMARY KEY, body TEXT)", "tables of another program"},
        {"PRAGMA f.application_id = 42; CREATE TABLE f.t (x)", "application_id is 42"},
        {"CREATE TABLE f.schema_migrations (version TEXT PRIMARY KEY)",
         "schema_migrations table is another program's"},
    };

    for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
        struct error_info ei = {0};
        struct store *s = NULL;
        char *url;
        int rc;

        if (pg_url()) {
            if (i == 1)
                continue; /* no application_id on PostgreSQL */
            pg_reset(pg_url());
            pg_exec(i == 0 ? "CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)"
                           : "CREATE TABLE schema_migrations (version TEXT PRIMARY KEY)");
            url = xstrdup(pg_url());
        } else {
            char *path = xasprintf("%s/other.db", e->dir);
            unlink(path);
            free(path);
            path = foreign_sqlite(e, kinds[i][0]);
            url = xasprintf("sqlite:%s", path);
            free(path);
        }
        rc = store_open(url, &test_opt, &s, &ei);
        assert_err(rc, ERR_STORE, &ei, "is not a gpuaas store");
        assert_err(rc, ERR_STORE, &ei, kinds[i][1]);
        assert_null(s);
        if (!pg_url()) {
            /* untouched: still none of our tables */
            char *path = xasprintf("%s/other.db", e->dir);
            char *script = xasprintf("ATTACH DATABASE '%s' AS f", path);
            assert_int_equal(store__exec(e->c, script, NULL), 0);
            assert_int_equal(sqlite_int(e->c, "SELECT COUNT(*) FROM f.sqlite_master WHERE name = "
                                              "'users' OR name = 'meta'"),
                             0);
            assert_int_equal(store__exec(e->c, "DETACH DATABASE f", NULL), 0);
            free(script);
            free(path);
        }
        free(url);
    }
    if (pg_url()) /* the fixture's teardown closes a store of its own */
        pg_reset(pg_url());
}

/* A new SQLite store carries gpuaas' application_id; one made before it had one gets it. */
static void test_sqlite_application_id(void **state)
{
    struct env *e = *state;

    if (pg_url())
        return;
    assert_int_equal(sqlite_int(e->c, "PRAGMA application_id"), 0x47504153);
    assert_int_equal(store__exec(e->c, "PRAGMA application_id = 0", NULL), 0);
    reopen(e, &test_opt);
    assert_int_equal(sqlite_int(e->c, "PRAGMA application_id"), 0x47504153);
}

/* A file of 0 bytes holds nothing to lose: it is taken as a new store (a pre-made, owned file). */
static void test_sqlite_empty_file_is_new(void **state)
{
    struct env *e = *state;
    char *path = xasprintf("%s/empty.db", e->dir);
    char *url = xasprintf("sqlite:%s", path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    struct store *s;
    struct store_conn *c;

    if (pg_url()) {
        close(fd);
        unlink(path);
        free(path);
        free(url);
        return;
    }
    assert_true(fd >= 0);
    close(fd);
    s = open_ok(url, &test_opt);
    c = store_conn_get(s);
    assert_int_equal(sqlite_int(c, "PRAGMA application_id"), 0x47504153);
    assert_int_equal(store_schema_version(s), store_schema_latest());
    store_conn_put(c);
    store_close(s);
    free(url);
    free(path);
}

static unsigned mode_of(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    struct stat st;

    if (stat(p, &st) != 0)
        fail_msg("stat %s: %s", p, strerror(errno));
    free(p);
    return (unsigned)(st.st_mode & 0777);
}

/* The store's files are 0600 whatever the umask; an existing store's looser modes are tightened. */
static void test_sqlite_files_private(void **state)
{
    struct env *e = *state;
    char *p;

    if (pg_url())
        return;
    /* a write, so the -wal and -shm files exist */
    assert_int_equal(store_meta_set(e->c, "k", "v", NULL), 0);
    assert_int_equal(mode_of(e->dir, "test.db"), 0600);
    assert_int_equal(mode_of(e->dir, "test.db-wal"), 0600);
    assert_int_equal(mode_of(e->dir, "test.db-shm"), 0600);
    close_env_store(e);
    p = xasprintf("%s/test.db", e->dir);
    assert_int_equal(chmod(p, 0644), 0);
    free(p);
    reopen(e, &test_opt);
    assert_int_equal(mode_of(e->dir, "test.db"), 0600);
}

/* A store file removed or replaced under an open store: every change is refused. */
static void test_sqlite_file_removed_or_replaced(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    char *path = xasprintf("%s/test.db", e->dir);
    char *other = xasprintf("%s/other.db", e->dir);
    struct store *s = NULL;

    if (pg_url()) {
        assert_int_equal(store_check(e->s, &ei), 0);
        free(path);
        free(other);
        return;
    }
    assert_int_equal(store_check(e->s, &ei), 0);
    assert_int_equal(rename(path, other), 0);
    assert_err(store_check(e->s, &ei), ERR_UNAVAILABLE, &ei, "was removed");
    memset(&ei, 0, sizeof(ei));
    assert_err(store_begin(e->c, &ei), ERR_UNAVAILABLE, &ei, "test.db' was removed");

    /* another file in its place */
    {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fclose(f);
    }
    memset(&ei, 0, sizeof(ei));
    assert_err(store_begin(e->c, &ei), ERR_UNAVAILABLE, &ei, "was replaced");

    /* with the file gone but its write-ahead log still there, no empty store is started */
    close_env_store(e);
    unlink(path);
    {
        char *wal = xasprintf("%s-wal", path);
        FILE *f = fopen(wal, "w");
        assert_non_null(f);
        fputs("left over", f);
        fclose(f);
        free(wal);
    }
    memset(&ei, 0, sizeof(ei));
    assert_err(store_open(e->url, &test_opt, &s, &ei), ERR_STORE, &ei, "write-ahead log");
    assert_null(s);
    assert_int_equal(access(path, F_OK), -1);
    /* the fixture's teardown wants a store */
    assert_int_equal(rename(other, path), 0);
    {
        char *wal = xasprintf("%s-wal", path);
        unlink(wal);
        free(wal);
    }
    e->s = open_ok(e->url, &test_opt);
    e->c = store_conn_get(e->s);
    free(path);
    free(other);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_migrations_idempotent),
        T(test_refuses_newer_schema),
        T(test_schema_matches_definitions),
        T(test_roundtrip_every_resource),
        T(test_update_roundtrip),
        T(test_unset_values),
        T(test_not_found),
        T(test_unique_conflicts),
        T(test_foreign_keys),
        T(test_cascades),
        T(test_list_filters),
        T(test_list_pagination),
        T(test_list_invalid_filters),
        T(test_transactions),
        T(test_conn_put_rolls_back),
        T(test_isolation),
        T(test_error_in_transaction),
        T(test_meta),
        T(test_concurrent_writers),
        T(test_pool_waits),
        T(test_concurrent_open),
        T(test_open_errors),
        T(test_sqlite_memory),
        T(test_pg_reconnects),
        T(test_failed_commit_rolls_back),
        T(test_refuses_foreign_database),
        T(test_sqlite_application_id),
        T(test_sqlite_empty_file_is_new),
        T(test_sqlite_files_private),
        T(test_sqlite_file_removed_or_replaced),
    };
#undef T

    fprintf(stderr, "store conformance: %s\n",
            pg_url() ? "postgresql" : "sqlite (temporary files)");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
