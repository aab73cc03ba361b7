/* SPDX-License-Identifier: Apache-2.0 */
/*
 * billing_bench: rating a month of the usage ledger as the service does it
 * (src/billing on a SQLite store, read a page at a time), for 1,000
 * organizations. The records are written straight into the store first
 * (untimed; their hashes are placeholders, the chain is not what is
 * measured). Prints the rating time, invoices, lines and peak RSS.
 *
 *   billing_bench [--records N] [--orgs N] [--db PATH]
 */
#include "base/common.h"

#include <sys/resource.h>

#include "base/timeutil.h"
#include "billing/billing.h"

#define H INT64_C(3600000)
#define NOV1 INT64_C(1793491200000)
#define DEC1 INT64_C(1796083200000)

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void die(const char *what, const struct error_info *ei)
{
    fprintf(stderr, "billing_bench: %s: %s\n", what, ei->message);
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
            row_set_str(&r, a, (int)i, f->enum_values[0]);
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

int main(int argc, char **argv)
{
    int64_t n_records = 1000000, n_orgs = 1000, flavors[8], *workloads, *project_org;
    const char *db = NULL;
    char dir[] = "/tmp/billing-bench-XXXXXX", url[1100];
    struct error_info ei = {0};
    struct store_options so = {.n_conns = 2, .busy_timeout_ms = 5000};
    struct store *s;
    struct store_conn *c;
    struct arena a;
    struct meter_invoices inv;
    struct rusage ru;
    size_t lines = 0;
    int64_t t0, t1, t2;
    struct buf text;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
            n_records = strtoll(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--orgs") == 0 && i + 1 < argc)
            n_orgs = strtoll(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
            db = argv[++i];
        else {
            fprintf(stderr, "usage: billing_bench [--records N] [--orgs N] [--db PATH]\n");
            return 2;
        }
    }
    if (n_records < 1 || n_orgs < 1)
        return 2;
    if (!db && !mkdtemp(dir))
        return 1;
    snprintf(url, sizeof(url), "sqlite:%s%s", db ? db : dir, db ? "" : "/b.db");
    if (store_open(url, &so, &s, &ei) < 0)
        die("open", &ei);
    c = store_conn_get(s);
    arena_init(&a);

    /* tenants, 10 projects each, one workload per project; 8 flavors priced from October */
    t0 = time_mono_ns();
    store_begin(c, &ei);
    workloads = xcalloc((size_t)n_orgs * 10, sizeof(int64_t));
    project_org = xcalloc((size_t)n_orgs * 10, sizeof(int64_t));
    for (int f = 0; f < 8; f++) {
        struct row r = fresh(&model_flavors, &a);
        char name[16];
        snprintf(name, sizeof(name), "f%d", f);
        row_set_str(&r, &a, F_FLAVORS_NAME, name);
        flavors[f] = add(c, &model_flavors, &r);
        r = fresh(&model_prices, &a);
        row_set_int(&r, F_PRICES_FLAVOR_ID, flavors[f]);
        row_set_int(&r, F_PRICES_PRICE_PER_HOUR_MICROS, 1000000 + 250000 * f);
        row_set_int(&r, F_PRICES_EFFECTIVE_FROM, (NOV1 - 31 * 24 * H) / 1000);
        add(c, &model_prices, &r);
    }
    for (int64_t o = 0; o < n_orgs; o++) {
        struct row r = fresh(&model_organizations, &a);
        char name[32];
        int64_t org;
        snprintf(name, sizeof(name), "org-%" PRId64, o);
        row_set_str(&r, &a, F_ORGANIZATIONS_NAME, name);
        org = add(c, &model_organizations, &r);
        for (int p = 0; p < 10; p++) {
            int64_t prj, k = o * 10 + p;
            r = fresh(&model_projects, &a);
            snprintf(name, sizeof(name), "p%d", p);
            row_set_int(&r, F_PROJECTS_ORG_ID, org);
            row_set_str(&r, &a, F_PROJECTS_NAME, name);
            prj = add(c, &model_projects, &r);
            r = fresh(&model_workloads, &a);
            row_set_int(&r, F_WORKLOADS_PROJECT_ID, prj);
            row_set_int(&r, F_WORKLOADS_FLAVOR_ID, flavors[k % 8]);
            workloads[k] = add(c, &model_workloads, &r);
            project_org[k] = prj * 1000000 + org; /* both, packed */
        }
    }
    if (store_commit(c, &ei) < 0)
        die("commit", &ei);
    arena_release(&a);

    for (int64_t i = 0; i < n_records;) {
        arena_init(&a);
        store_begin(c, &ei);
        for (int b = 0; b < 10000 && i < n_records; b++, i++) {
            int64_t k = (int64_t)(next_rand() % (uint64_t)(n_orgs * 10));
            int64_t start = NOV1 + (int64_t)(next_rand() % (uint64_t)(29 * 24 * H));
            int64_t len = 60000 + (int64_t)(next_rand() % (uint64_t)(3 * 24 * H));
            struct row r = fresh(&model_usage, &a);
            row_set_int(&r, F_USAGE_SEQ, i + 1);
            row_set_int(&r, F_USAGE_WORKLOAD_ID, workloads[k]);
            row_set_int(&r, F_USAGE_ORG_ID, project_org[k] % 1000000);
            row_set_int(&r, F_USAGE_PROJECT_ID, project_org[k] / 1000000);
            row_set_int(&r, F_USAGE_FLAVOR_ID, flavors[k % 8]);
            row_set_str(&r, &a, F_USAGE_PRIORITY_CLASS,
                        next_rand() % 3 ? "owned" : "opportunistic");
            row_set_int(&r, F_USAGE_REPLICAS, 1 + (int64_t)(next_rand() % 4));
            row_set_int(&r, F_USAGE_RUN_STARTED_MS, start);
            row_set_int(&r, F_USAGE_STARTED_MS, start + i % 1000); /* unique per workload */
            row_set_int(&r, F_USAGE_ENDED_MS, start + len);
            add(c, &model_usage, &r);
        }
        if (store_commit(c, &ei) < 0)
            die("commit", &ei);
        arena_release(&a);
    }
    t1 = time_mono_ns();
    fprintf(stderr, "wrote %" PRId64 " records for %" PRId64 " organizations in %.1f s\n",
            n_records, n_orgs, (double)(t1 - t0) / 1e9);

    arena_init(&a);
    meter_invoices_init(&inv);
    t1 = time_mono_ns();
    if (billing_rate_period(c, 0, NOV1, DEC1, 0, &a, &inv, &ei) < 0)
        die("rate", &ei);
    t2 = time_mono_ns();
    buf_init(&text, SIZE_MAX / 2);
    for (size_t i = 0; i < inv.n; i++) {
        lines += inv.items[i].n_lines;
        meter_invoice_write(&inv.items[i], &text);
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("records %" PRId64 " orgs %" PRId64 " invoices %zu lines %zu rating_s %.2f "
           "records_per_s %.0f peak_rss_mib %ld text_mb %.1f\n",
           n_records, n_orgs, inv.n, lines, (double)(t2 - t1) / 1e9,
           (double)n_records / ((double)(t2 - t1) / 1e9), ru.ru_maxrss / 1024,
           (double)text.len / 1e6);
    buf_release(&text);
    meter_invoices_release(&inv);
    arena_release(&a);
    free(workloads);
    free(project_org);
    store_conn_put(c);
    store_close(s);
    if (!db) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return 0;
}
