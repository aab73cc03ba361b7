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
            row_set_null(&r, k);
            continue;
        }
        switch (f->type) {
        case FT_INT:
        case FT_BOOL:
        case FT_REF:
            row_set_int(&r, k, f->default_int);
            break;
        case FT_TIME:
            row_set_int(&r, k, T0);
            break;
        case FT_ENUM:
            row_set_str(&r, a, k, f->enum_values[0]);
            break;
        case FT_LABELS:
        case FT_JSON:
            row_set_str(&r, a, k, "{}");
            break;
        case FT_REFLIST:
            row_set_str(&r, a, k, "[]");
            break;
        default:
            row_set_str(&r, a, k, f->default_str ? f->default_str : "x");
            break;
        }
    }
    return r;
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
    row_set_int(r, 0, id);
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
    row_set_str(&w->user, a, F_USERS_NAME, "alice");
    row_set_str(&w->user, a, F_USERS_EMAIL, "alice@example.com");
    row_set_str(&w->user, a, F_USERS_DISPLAY_NAME, "Alice O'Brien \"ünïcødé\" ✓");
    row_set_int(&w->user, F_USERS_DISABLED, 1);
    row_set_int(&w->user, F_USERS_UPDATED_AT, T0 + 1);
    ins(e, &model_users, &w->user);

    w->org = new_row(&model_organizations, a);
    row_set_str(&w->org, a, F_ORGANIZATIONS_NAME, "acme");
    row_set_int(&w->org, F_ORGANIZATIONS_MANAGER_ID, model_row_id(&w->user));
    row_set_str(&w->org, a, F_ORGANIZATIONS_COST_CENTER, "cc-42");
    ins(e, &model_organizations, &w->org);

    w->sub_org = new_row(&model_organizations, a);
    row_set_str(&w->sub_org, a, F_ORGANIZATIONS_NAME, "acme-research");
    row_set_int(&w->sub_org, F_ORGANIZATIONS_PARENT_ID, model_row_id(&w->org));
    ins(e, &model_organizations, &w->sub_org);

    w->project = new_row(&model_projects, a);
    row_set_int(&w->project, F_PROJECTS_ORG_ID, model_row_id(&w->org));
    row_set_str(&w->project, a, F_PROJECTS_NAME, "vision");
    row_set_str(&w->project, a, F_PROJECTS_DESCRIPTION, "line one\nline two\ttab; DROP TABLE x;--");
    row_set_int(&w->project, F_PROJECTS_WEIGHT, 7);
    ins(e, &model_projects, &w->project);

    w->binding = new_row(&model_role_bindings, a);
    row_set_int(&w->binding, F_ROLE_BINDINGS_USER_ID, model_row_id(&w->user));
    row_set_str(&w->binding, a, F_ROLE_BINDINGS_ROLE, "org-admin");
    row_set_int(&w->binding, F_ROLE_BINDINGS_ORG_ID, model_row_id(&w->org));
    ins(e, &model_role_bindings, &w->binding);

    w->token = new_row(&model_tokens, a);
    row_set_int(&w->token, F_TOKENS_USER_ID, model_row_id(&w->user));
    row_set_str(&w->token, a, F_TOKENS_PREFIX, "gpa_abc");
    row_set_str(&w->token, a, F_TOKENS_HASH, "sha256:0123abcd");
    row_set_int(&w->token, F_TOKENS_EXPIRES_AT, T0 + 86400);
    ins(e, &model_tokens, &w->token);
}

static void make_fleet(struct env *e, struct world *w)
{
    struct arena *a = &e->a;

    w->cluster = new_row(&model_clusters, a);
    row_set_str(&w->cluster, a, F_CLUSTERS_NAME, "east");
    row_set_str(&w->cluster, a, F_CLUSTERS_BACKEND, "slurm");
    row_set_str(&w->cluster, a, F_CLUSTERS_LABELS, "{\"site\":\"east-1\",\"cloud\":\"none\"}");
    ins(e, &model_clusters, &w->cluster);

    w->node = new_row(&model_nodes, a);
    row_set_int(&w->node, F_NODES_CLUSTER_ID, model_row_id(&w->cluster));
    row_set_str(&w->node, a, F_NODES_NAME, "node-001.east");
    row_set_int(&w->node, F_NODES_CPU_MILLI, INT64_C(1) << 40);
    row_set_int(&w->node, F_NODES_MEMORY_MIB, 2048 * 1024);
    row_set_str(&w->node, a, F_NODES_STATE, "drain");
    ins(e, &model_nodes, &w->node);

    w->gpu_class = new_row(&model_gpu_classes, a);
    row_set_str(&w->gpu_class, a, F_GPU_CLASSES_NAME, "h100-80gb");
    row_set_int(&w->gpu_class, F_GPU_CLASSES_MEMORY_MIB, 81920);
    ins(e, &model_gpu_classes, &w->gpu_class);

    w->mig_class = new_row(&model_gpu_classes, a);
    row_set_str(&w->mig_class, a, F_GPU_CLASSES_NAME, "h100-80gb/1g.10gb");
    row_set_int(&w->mig_class, F_GPU_CLASSES_PARENT_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->mig_class, F_GPU_CLASSES_MILLI, 142);
    ins(e, &model_gpu_classes, &w->mig_class);

    w->gpu = new_row(&model_gpus, a);
    row_set_int(&w->gpu, F_GPUS_NODE_ID, model_row_id(&w->node));
    row_set_int(&w->gpu, F_GPUS_INDEX, 3);
    row_set_str(&w->gpu, a, F_GPUS_UUID, "GPU-8f6b2c1e-0000-4a1b-9c3d-123456789abc");
    row_set_int(&w->gpu, F_GPUS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->gpu, F_GPUS_MIG_MODE, 1);
    row_set_str(&w->gpu, a, F_GPUS_HEALTH, "degraded");
    ins(e, &model_gpus, &w->gpu);
}

static void make_catalog(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    char *ids = arena_printf(a, "[%" PRId64 "]", model_row_id(&w->gpu));

    w->pool = new_row(&model_pools, a);
    row_set_str(&w->pool, a, F_POOLS_NAME, "acme-h100");
    row_set_int(&w->pool, F_POOLS_OWNER_ORG_ID, model_row_id(&w->org));
    row_set_int(&w->pool, F_POOLS_COST_PER_GPU_HOUR_MICROS, INT64_C(1) << 53);
    row_set_int(&w->pool, F_POOLS_CLUSTER_ID, model_row_id(&w->cluster));
    row_set_str(&w->pool, a, F_POOLS_GPU_IDS, ids);
    row_set_str(&w->pool, a, F_POOLS_NODE_SELECTOR, "{\"rack\":\"r1\"}");
    ins(e, &model_pools, &w->pool);

    w->flavor = new_row(&model_flavors, a);
    row_set_str(&w->flavor, a, F_FLAVORS_NAME, "h100.1x");
    row_set_int(&w->flavor, F_FLAVORS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->flavor, F_FLAVORS_GPU_MILLI, 1000);
    row_set_str(&w->flavor, a, F_FLAVORS_POOL_IDS,
                arena_printf(a, "[%" PRId64 "]", model_row_id(&w->pool)));
    row_set_int(&w->flavor, F_FLAVORS_ACTIVE, 0);
    ins(e, &model_flavors, &w->flavor);

    w->quota = new_row(&model_quotas, a);
    row_set_int(&w->quota, F_QUOTAS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->quota, F_QUOTAS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->quota, F_QUOTAS_LIMIT_MILLI, 4000);
    ins(e, &model_quotas, &w->quota);

    w->org_quota = new_row(&model_org_quotas, a);
    row_set_int(&w->org_quota, F_ORG_QUOTAS_ORG_ID, model_row_id(&w->org));
    row_set_int(&w->org_quota, F_ORG_QUOTAS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->org_quota, F_ORG_QUOTAS_LIMIT_MILLI, 8000);
    ins(e, &model_org_quotas, &w->org_quota);

    w->audit = new_row(&model_audit, a);
    row_set_str(&w->audit, a, F_AUDIT_ACTION, "create");
    row_set_str(&w->audit, a, F_AUDIT_RESOURCE, "projects");
    row_set_int(&w->audit, F_AUDIT_OBJECT_ID, INT64_MAX);
    row_set_str(&w->audit, a, F_AUDIT_AFTER, "{\"name\":\"vision\",\"weight\":7}");
    ins(e, &model_audit, &w->audit);
}

/* Running work: a workload with an allocation, an event and a preemption entry. */
static void make_work(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    const struct resource_def *wd = &model_workloads, *ad = &model_allocations;

    w->workload = new_row(wd, a);
    row_set_int(&w->workload, F_WORKLOADS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->workload, F_WORKLOADS_FLAVOR_ID, model_row_id(&w->flavor));
    row_set_str(&w->workload, a, F_WORKLOADS_COMMAND, "python train.py --lr 3e-4 'quoted' \"x\"");
    row_set_str(&w->workload, a, F_WORKLOADS_PRIORITY_CLASS, "owned");
    row_set_int(&w->workload, F_WORKLOADS_REPLICAS, 4);
    row_set_int(&w->workload, F_WORKLOADS_MAX_RUNTIME_S, 3600);
    row_set_null(&w->workload, F_WORKLOADS_GRACE_S);
    row_set_str(&w->workload, a, F_WORKLOADS_IDEMPOTENCY_KEY, "k-1");
    row_set_null(&w->workload, F_WORKLOADS_DURATION_S);
    row_set_int(&w->workload, F_WORKLOADS_USER_ID, model_row_id(&w->user));
    row_set_int(&w->workload, F_WORKLOADS_CLUSTER_ID, model_row_id(&w->cluster));
    row_set_int(&w->workload, F_WORKLOADS_SUBMITTED_MS, INT64_C(1796053787250));
    row_set_null(&w->workload, F_WORKLOADS_FINISHED_AT);
    row_set_int(&w->workload, F_WORKLOADS_EXIT_CODE, -9);
    ins(e, wd, &w->workload);

    w->allocation = new_row(ad, a);
    row_set_int(&w->allocation, F_ALLOCATIONS_WORKLOAD_ID, model_row_id(&w->workload));
    row_set_int(&w->allocation, F_ALLOCATIONS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->allocation, F_ALLOCATIONS_NODE_ID, model_row_id(&w->node));
    row_set_int(&w->allocation, F_ALLOCATIONS_GPU_ID, model_row_id(&w->gpu));
    row_set_int(&w->allocation, F_ALLOCATIONS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_int(&w->allocation, F_ALLOCATIONS_MILLI, 500);
    row_set_str(&w->allocation, a, F_ALLOCATIONS_PRIORITY_CLASS, "opportunistic");
    row_set_int(&w->allocation, F_ALLOCATIONS_BORROWED, 1);
    row_set_null(&w->allocation, F_ALLOCATIONS_ENDED_MS);
    ins(e, ad, &w->allocation);

    w->event = new_row(&model_events, a);
    row_set_int(&w->event, F_EVENTS_WORKLOAD_ID, model_row_id(&w->workload));
    row_set_int(&w->event, F_EVENTS_PROJECT_ID, model_row_id(&w->project));
    row_set_str(&w->event, a, F_EVENTS_TYPE, "admitted");
    ins(e, &model_events, &w->event);

    w->preemption = new_row(&model_preemptions, a);
    row_set_int(&w->preemption, F_PREEMPTIONS_PREEMPTOR_ID, model_row_id(&w->workload));
    row_set_int(&w->preemption, F_PREEMPTIONS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->preemption, F_PREEMPTIONS_GPU_CLASS_ID, model_row_id(&w->gpu_class));
    row_set_str(&w->preemption, a, F_PREEMPTIONS_VICTIMS, "[{\"workload_id\":1,\"lost_ms\":12}]");
    row_set_null(&w->preemption, F_PREEMPTIONS_RELEASED_MS);
    ins(e, &model_preemptions, &w->preemption);
}

static void make_billing(struct env *e, struct world *w)
{
    struct arena *a = &e->a;
    const struct resource_def *d;

    d = &model_prices;
    w->price = new_row(d, a);
    row_set_int(&w->price, F_PRICES_FLAVOR_ID, model_row_id(&w->flavor));
    row_set_str(&w->price, a, F_PRICES_CURRENCY, "EUR");
    row_set_int(&w->price, F_PRICES_PRICE_PER_HOUR_MICROS, 2500000);
    ins(e, d, &w->price);

    d = &model_usage;
    w->usage = new_row(d, a);
    row_set_int(&w->usage, F_USAGE_SEQ, 1);
    row_set_int(&w->usage, F_USAGE_WORKLOAD_ID, model_row_id(&w->workload));
    row_set_int(&w->usage, F_USAGE_ORG_ID, model_row_id(&w->org));
    row_set_int(&w->usage, F_USAGE_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->usage, F_USAGE_FLAVOR_ID, model_row_id(&w->flavor));
    row_set_int(&w->usage, F_USAGE_REPLICAS, 2);
    row_set_int(&w->usage, F_USAGE_STARTED_MS, 1000);
    row_set_int(&w->usage, F_USAGE_ENDED_MS, 61000);
    row_set_str(&w->usage, a, F_USAGE_HASH, "ab01");
    ins(e, d, &w->usage);

    d = &model_invoices;
    w->invoice = new_row(d, a);
    row_set_str(&w->invoice, a, F_INVOICES_NUMBER, "INV-2026-000001");
    row_set_int(&w->invoice, F_INVOICES_ORG_ID, model_row_id(&w->org));
    row_set_str(&w->invoice, a, F_INVOICES_PERIOD, "2026-11");
    row_set_int(&w->invoice, F_INVOICES_TOTAL_MICROS, -12340000);
    row_set_str(&w->invoice, a, F_INVOICES_LINES, "[{\"amount\":\"1.00\"}]");
    row_set_str(&w->invoice, a, F_INVOICES_CANONICAL, "invoice org=1\nline x\n");
    ins(e, d, &w->invoice);

    d = &model_budgets;
    w->budget = new_row(d, a);
    row_set_int(&w->budget, F_BUDGETS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->budget, F_BUDGETS_GPU_HOURS, 100);
    row_set_int(&w->budget, F_BUDGETS_ENFORCE, 1);
    ins(e, d, &w->budget);

    d = &model_budget_alerts;
    w->alert = new_row(d, a);
    row_set_int(&w->alert, F_BUDGET_ALERTS_BUDGET_ID, model_row_id(&w->budget));
    row_set_int(&w->alert, F_BUDGET_ALERTS_PROJECT_ID, model_row_id(&w->project));
    row_set_int(&w->alert, F_BUDGET_ALERTS_PERCENT, 80);
    row_set_int(&w->alert, F_BUDGET_ALERTS_LIMIT, 100000);
    ins(e, d, &w->alert);
}

static void make_inventory(struct env *e, struct world *w)
{
    const struct resource_def *d = &model_inventory_items;
    w->item = new_row(d, &e->a);
    row_set_str(&w->item, &e->a, F_INVENTORY_ITEMS_UUID,
                "GPU-00000000-1111-2222-3333-444444444444");
    row_set_str(&w->item, &e->a, F_INVENTORY_ITEMS_SITE, "eu-west, \"rack\" 3");
    row_set_str(&w->item, &e->a, F_INVENTORY_ITEMS_INTENDED_USE, "ünïcødé training");
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

/*
 * A store made before migration 9 (a reclaim's first try after its victims
 * released) loads: its released ledger entries count as tried, its open
 * ones wait for their first try.
 */
static void test_migration_first_try(void **state)
{
    struct env *e = *state;
    struct error_info ei = {0};
    struct world w;
    struct row done, got;

    make_world(e, &w); /* its ledger entry is open */
    done = new_row(&model_preemptions, &e->a);
    row_set_int(&done, F_PREEMPTIONS_PREEMPTOR_ID, model_row_id(&w.workload));
    row_set_int(&done, F_PREEMPTIONS_PROJECT_ID, model_row_id(&w.project));
    row_set_str(&done, &e->a, F_PREEMPTIONS_VICTIMS, "[]");
    row_set_int(&done, F_PREEMPTIONS_RELEASED_MS, 5000);
    ins(e, &model_preemptions, &done);
    /* Back to the schema migration 8 left. */
    assert_int_equal(store__exec(e->c, "ALTER TABLE preemptions DROP COLUMN first_try_ms", &ei), 0);
    assert_int_equal(store__exec(e->c, "DELETE FROM schema_migrations WHERE version = 9", &ei), 0);
    reopen(e, &test_opt);
    assert_int_equal(store_schema_version(e->s), store_schema_latest());
    assert_int_equal(store_get(e->c, &model_preemptions, model_row_id(&done), &e->a, &got, &ei), 0);
    assert_int_equal(row_int(&got, F_PREEMPTIONS_FIRST_TRY_MS), 5000);
    assert_int_equal(
        store_get(e->c, &model_preemptions, model_row_id(&w.preemption), &e->a, &got, &ei), 0);
    assert_true(row_is_null(&got, F_PREEMPTIONS_FIRST_TRY_MS));
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
    row_set_int(&w.user, F_USERS_DISABLED, 0);
    row_set_str(&w.user, a, F_USERS_EMAIL, "");
    update_ok(e, &model_users, &w.user);
    assert_roundtrip(e, &model_users, &w.user);

    row_set_null(&w.org, F_ORGANIZATIONS_MANAGER_ID);
    row_set_int(&w.org, F_ORGANIZATIONS_UPDATED_AT, T0 + 99);
    update_ok(e, &model_organizations, &w.org);
    assert_roundtrip(e, &model_organizations, &w.org);

    row_set_int(&w.token, F_TOKENS_REVOKED_AT, T0 + 5);
    update_ok(e, &model_tokens, &w.token);
    assert_roundtrip(e, &model_tokens, &w.token);

    row_set_null(&w.gpu, F_GPUS_UUID);
    row_set_int(&w.gpu, F_GPUS_MIG_MODE, 0);
    update_ok(e, &model_gpus, &w.gpu);
    assert_roundtrip(e, &model_gpus, &w.gpu);

    row_set_null(&w.pool, F_POOLS_OWNER_ORG_ID);
    row_set_int(&w.pool, F_POOLS_OWNER_PROJECT_ID, model_row_id(&w.project));
    row_set_str(&w.pool, a, F_POOLS_ACCESS_ORG_IDS, "[1,2,3]");
    update_ok(e, &model_pools, &w.pool);
    assert_roundtrip(e, &model_pools, &w.pool);

    row_set_int(&w.quota, F_QUOTAS_GUARANTEED_MILLI, 2000);
    row_set_null(&w.quota, F_QUOTAS_LIMIT_MILLI);
    update_ok(e, &model_quotas, &w.quota);
    assert_roundtrip(e, &model_quotas, &w.quota);

    row_set_str(&w.audit, a, F_AUDIT_BEFORE, "[null,true,1.5,\"x\"]");
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
    row_set_int(&r, F_TOKENS_USER_ID, model_row_id(&w.user));
    row_set_str(&r, &e->a, F_TOKENS_HASH, "h-unset");
    r.v[F_TOKENS_EXPIRES_AT].set = false;
    ins(e, &model_tokens, &r);
    row_set_null(&r, F_TOKENS_EXPIRES_AT);
    assert_roundtrip(e, &model_tokens, &r);

    r = new_row(&model_projects, &e->a);
    row_set_int(&r, F_PROJECTS_ORG_ID, model_row_id(&w.org));
    r.v[F_PROJECTS_NAME].set = false;
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

    row_set_str(&r, &e->a, F_CLUSTERS_NAME, "c");
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
    row_set_str(&r, a, F_ORGANIZATIONS_NAME, "acme");
    expect_insert_err(e, &model_organizations, &r, ERR_CONFLICT,
                      "an organization with the same name already exists");

    r = new_row(&model_projects, a);
    row_set_int(&r, F_PROJECTS_ORG_ID, model_row_id(&w.org));
    row_set_str(&r, a, F_PROJECTS_NAME, "vision");
    expect_insert_err(e, &model_projects, &r, ERR_CONFLICT,
                      "a project with the same org_id and name already exists");
    /* The same name in another organization is fine. */
    row_set_int(&r, F_PROJECTS_ORG_ID, model_row_id(&w.sub_org));
    ins(e, &model_projects, &r);

    /* Unique on update too. */
    row_set_str(&r, a, F_PROJECTS_NAME, "vision");
    row_set_int(&r, F_PROJECTS_ORG_ID, model_row_id(&w.org));
    {
        struct error_info ei = {0};
        int rc = store_update(e->c, &model_projects, model_row_id(&r), &r, &ei);
        assert_err(rc, ERR_CONFLICT, &ei, "org_id and name");
    }

    /* A global binding has NULL scope columns and must still be unique. */
    r = new_row(&model_role_bindings, a);
    row_set_int(&r, F_ROLE_BINDINGS_USER_ID, model_row_id(&w.user));
    row_set_str(&r, a, F_ROLE_BINDINGS_ROLE, "admin");
    ins(e, &model_role_bindings, &r);
    expect_insert_err(e, &model_role_bindings, &r, ERR_CONFLICT,
                      "a role binding with the same user_id, role and scope already exists");

    r = new_row(&model_tokens, a);
    row_set_int(&r, F_TOKENS_USER_ID, model_row_id(&w.user));
    row_set_str(&r, a, F_TOKENS_HASH, "sha256:0123abcd");
    expect_insert_err(e, &model_tokens, &r, ERR_CONFLICT, "same hash");

    r = new_row(&model_gpus, a);
    row_set_int(&r, F_GPUS_NODE_ID, model_row_id(&w.node));
    row_set_int(&r, F_GPUS_GPU_CLASS_ID, model_row_id(&w.gpu_class));
    row_set_int(&r, F_GPUS_INDEX, 3);
    expect_insert_err(e, &model_gpus, &r, ERR_CONFLICT, "a gpu with the same node_id and index");
    row_set_int(&r, F_GPUS_INDEX, 4);
    row_set_str(&r, a, F_GPUS_UUID, "GPU-8f6b2c1e-0000-4a1b-9c3d-123456789abc");
    expect_insert_err(e, &model_gpus, &r, ERR_CONFLICT, "uuid");
    /* Several GPUs may have no UUID yet. */
    row_set_null(&r, F_GPUS_UUID);
    ins(e, &model_gpus, &r);
    row_set_int(&r, F_GPUS_INDEX, 5);
    ins(e, &model_gpus, &r);

    r = new_row(&model_quotas, a);
    row_set_int(&r, F_QUOTAS_PROJECT_ID, model_row_id(&w.project));
    row_set_int(&r, F_QUOTAS_GPU_CLASS_ID, model_row_id(&w.gpu_class));
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
    row_set_int(&r, F_PROJECTS_ORG_ID, 987654);
    row_set_str(&r, a, F_PROJECTS_NAME, "orphan");
    expect_insert_err(e, &model_projects, &r, ERR_INVALID, "a referenced object does not exist");

    r = w.project;
    row_set_int(&r, F_PROJECTS_ORG_ID, 987654);
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
    row_set_int(&r, F_AUDIT_ACTOR_ID, 555555);
    row_set_int(&r, F_AUDIT_OBJECT_ID, 666666);
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
    assert_true(org.v[F_ORGANIZATIONS_MANAGER_ID].null);

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
        row_set_str(&o, a, F_ORGANIZATIONS_NAME, k ? "b" : "a");
        if (k)
            row_set_int(&o, F_ORGANIZATIONS_PARENT_ID, orgs[0]);
        orgs[k] = ins(e, &model_organizations, &o);
    }
    for (int i = 0; i < 15; i++) {
        struct row p = new_row(&model_projects, a);
        int64_t id;
        row_set_int(&p, F_PROJECTS_ORG_ID, orgs[i >= 10]);
        row_set_str(&p, a, F_PROJECTS_NAME, arena_printf(a, "%c%02d", i < 10 ? 'p' : 'q', i % 10));
        row_set_int(&p, F_PROJECTS_WEIGHT, i % 3 + 1);
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
    store_filter_eq_int(&f, F_PROJECTS_ORG_ID, org_a);
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 10);
    assert_int_equal(model_row_id(&lr.rows[0]), first_a);

    store_filter_eq_int(&f, F_PROJECTS_WEIGHT, 2);
    assert_int_equal(list_ok(e, P, &f).n, 3); /* p01, p04, p07 */

    store_filter_init(&f);
    store_filter_eq_str(&f, F_PROJECTS_NAME, "q03");
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 1);
    assert_string_equal(lr.rows[0].v[F_PROJECTS_NAME].s, "q03");
    assert_int_equal(lr.rows[0].v[F_PROJECTS_ORG_ID].i, org_b);

    store_filter_init(&f);
    store_filter_eq_str(&f, F_PROJECTS_NAME, "nope' OR '1'='1");
    assert_int_equal(list_ok(e, P, &f).n, 0);

    /* NULL matches with IS NULL. */
    store_filter_init(&f);
    store_filter_eq_null(&f, F_ORGANIZATIONS_PARENT_ID);
    lr = list_ok(e, O, &f);
    assert_int_equal(lr.n, 1);
    assert_int_equal(model_row_id(&lr.rows[0]), org_a);
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ORGANIZATIONS_PARENT_ID, org_a);
    assert_int_equal(list_ok(e, O, &f).n, 1);

    /* any-of: one list, an empty list, and an OR of two. */
    store_filter_init(&f);
    store_filter_any(&f, F_PROJECTS_ORG_ID, ids_b, 1);
    assert_int_equal(list_ok(e, P, &f).n, 5);

    store_filter_init(&f);
    store_filter_any(&f, F_PROJECTS_ORG_ID, NULL, 0);
    assert_int_equal(list_ok(e, P, &f).n, 0);

    store_filter_init(&f);
    store_filter_any(&f, F_PROJECTS_ORG_ID, ids_b, 1);
    store_filter_any(&f, 0, &first_a, 1);
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 6);
    assert_int_equal(model_row_id(&lr.rows[0]), first_a);

    /* any-of combines with equalities by AND. */
    store_filter_eq_int(&f, F_PROJECTS_WEIGHT, 1);
    assert_int_equal(list_ok(e, P, &f).n, 2); /* p00 and q02 */

    /* A range: lo <= field < hi, with equalities by AND; empty when lo == hi. */
    store_filter_init(&f);
    store_filter_eq_int(&f, F_PROJECTS_ORG_ID, org_a);
    store_filter_range(&f, F_PROJECTS_WEIGHT, 2, 3);
    assert_int_equal(list_ok(e, P, &f).n, 3); /* p01, p04, p07 */
    store_filter_init(&f);
    store_filter_range(&f, 0, first_a + 1, first_a + 4);
    lr = list_ok(e, P, &f);
    assert_int_equal(lr.n, 3);
    assert_int_equal(model_row_id(&lr.rows[0]), first_a + 1);
    store_filter_init(&f);
    store_filter_range(&f, 0, first_a, first_a);
    assert_int_equal(list_ok(e, P, &f).n, 0);
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
    store_filter_any(&f, F_PROJECTS_NAME, &one, 1);
    memset(&ei, 0, sizeof(ei));
    rc = store_list(e->c, P, &f, &e->a, &rows, &n, &ei);
    assert_err(rc, ERR_INVALID, &ei, "'name' is not an id field");

    store_filter_init(&f);
    store_filter_eq_str(&f, F_PROJECTS_ORG_ID, "1");
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_list(e->c, P, &f, &e->a, &rows, &n, &ei), ERR_INVALID);

    store_filter_init(&f);
    store_filter_range(&f, F_PROJECTS_NAME, 0, 1);
    memset(&ei, 0, sizeof(ei));
    rc = store_list(e->c, P, &f, &e->a, &rows, &n, &ei);
    assert_err(rc, ERR_INVALID, &ei, "a range needs an integer field");

    store_filter_init(&f);
    store_filter_eq_int(&f, F_PROJECTS_NAME, 1);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(store_list(e->c, P, &f, &e->a, &rows, &n, &ei), ERR_INVALID);
}

/* ---- transactions ---- */

static struct row cluster_row(struct env *e, const char *name)
{
    struct row r = new_row(&model_clusters, &e->a);
    row_set_str(&r, &e->a, F_CLUSTERS_NAME, name);
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
        row_set_str(&r, a, F_ORGANIZATIONS_NAME, arena_printf(a, "w%d-%03d", writer, i));
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
        T(test_migration_first_try),
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
