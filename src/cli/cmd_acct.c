/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_acct.c: `gpuaas acct`, finished work as Slurm's sacct shows it: when it
 * ran, for how long, how it ended, and what it used: GPU-hours of every run
 * (from its allocations) and their cost at the flavor's list price. Reads the
 * workload lists of the four end states, the allocations and the flavors:
 * three kinds of list, whatever the number of workloads.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "cli/work.h"

static const char *const ended[] = {"succeeded", "failed", "cancelled", "preempted"};

static void acct_help(void)
{
    printf("usage: gpuaas acct [--project P] [--user U] [--since TIME] [--limit N]\n\n"
           "Lists finished work, newest first, as sacct does: when it started and ended, how\n"
           "long its last run took, how it ended and its exit code, the class it ran as (from\n"
           "its allocations: P1, P2, or both over several runs), and what every run used:\n"
           "GPU-hours, and their cost at the flavor's list price (invoices apply each class's\n"
           "rate: 'gpuaas invoice draft').\n\n"
           "  --project P      only this project (NAME, ORG/NAME or id)\n"
           "  --user U         only work this user submitted (NAME or id)\n"
           "  --since TIME     only work that ended at or after TIME (2026-11-01 or RFC 3339)\n"
           "  --limit N        the newest N (default 100)\n");
}

struct acct_args {
    const char *project, *user, *since;
    int64_t since_ms, limit;
};

static int parse_since(const char *v, int64_t *ret_ms)
{
    int64_t s;
    char *full = NULL;

    if (strlen(v) == 10)
        full = xasprintf("%sT00:00:00Z", v); /* a date: its midnight, UTC */
    if (time_parse_rfc3339(full ? full : v, &s) < 0) {
        free(full);
        return cli_usage_error("acct",
                               "--since must be a date (2026-11-01) or an RFC 3339 time, "
                               "not '%s'",
                               v);
    }
    free(full);
    *ret_ms = s * 1000;
    return 0;
}

static int parse_acct(struct acct_args *a, int argc, char **argv)
{
    int i = 1, rc;
    const char *v;

    a->limit = 100;
    while (i < argc) {
        const char *arg = argv[i];
        if (cli_is_help(arg)) {
            acct_help();
            return -1;
        }
        if ((rc = cli_take_global_flag("acct", argc, argv, &i)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("acct", argc, argv, &i, "--project", NULL, &a->project)) ||
            (rc = cli_take_value_flag("acct", argc, argv, &i, "--user", NULL, &a->user))) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("acct", argc, argv, &i, "--since", NULL, &a->since))) {
            if (rc != 1 || (rc = parse_since(a->since, &a->since_ms)) != 0)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("acct", argc, argv, &i, "--limit", NULL, &v))) {
            if (rc != 1)
                return rc;
            if (parse_int64(v, 1, 1000000, &a->limit) < 0)
                return cli_usage_error("acct",
                                       "--limit must be a number from 1 to 1000000, not '%s'", v);
            continue;
        }
        if (arg[0] == '-')
            return cli_unknown_flag("acct", arg);
        return cli_usage_error("acct", "unexpected argument '%s'", arg);
    }
    return 0;
}

/* What one workload's runs used, from its allocations. */
struct used {
    double milli_ms; /* sum of milli x held ms */
    bool p1, p2;     /* the classes it ran as */
};

static int newest_first(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));
    return (x < y) - (x > y);
}

/* The finished workloads matching filter ("" or "&k=v..."), newest first, since a->since_ms. */
static int fetch_finished(struct client *c, const char *filter, const struct acct_args *a,
                          json_t **ret)
{
    json_t *all = json_array();
    json_t **v;
    size_t n, k = 0;

    for (size_t s = 0; s < ARRAY_SIZE(ended); s++) {
        json_t *items = NULL;
        char *path = xasprintf("/v1/workloads?state=%s%s", ended[s], filter);
        int rc = work_list_all(c, path, &items);
        free(path);
        if (rc < 0) {
            json_decref(all);
            return -1;
        }
        json_array_extend(all, items);
        json_decref(items);
    }
    n = json_array_size(all);
    v = xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        json_t *w = json_array_get(all, i);
        int64_t end;
        if (a->since && (work_time_of(w, "finished_at", &end) < 0 || end < a->since_ms))
            continue;
        v[k++] = json_incref(w);
    }
    qsort(v, k, sizeof(*v), newest_first);
    json_array_clear(all);
    for (size_t i = 0; i < k && (int64_t)i < a->limit; i++)
        json_array_append(all, v[i]);
    for (size_t i = 0; i < k; i++)
        json_decref(v[i]);
    free(v);
    *ret = all;
    return 0;
}

/* Adds each allocation of the listed workloads to its workload's use (by index into items). */
static void add_allocations(json_t *items, json_t *allocs, struct used *use, int64_t now)
{
    json_t *index = json_object();
    size_t i;
    json_t *w, *al;

    json_array_foreach(items, i, w)
    {
        char key[24];
        snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(w, "id")));
        json_object_set_new(index, key, json_integer((json_int_t)i));
    }
    json_array_foreach(allocs, i, al)
    {
        char key[24];
        json_t *at;
        json_t *end = json_object_get(al, "ended_ms");
        const char *pclass = json_string_value(json_object_get(al, "priority_class"));
        int64_t from = json_integer_value(json_object_get(al, "started_ms"));
        int64_t to = json_is_integer(end) ? json_integer_value(end) : now;
        struct used *u;
        snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(al, "workload_id")));
        if (!(at = json_object_get(index, key)))
            continue;
        u = &use[json_integer_value(at)];
        u->milli_ms += (double)json_integer_value(json_object_get(al, "milli")) *
                       (double)(to > from ? to - from : 0);
        if (pclass && strcmp(pclass, "owned") == 0)
            u->p1 = true;
        else if (pclass)
            u->p2 = true;
    }
    json_decref(index);
}

/* GPU-hours as "12.50"; the list cost of them in micro-units (-1: unknown). */
static double gpu_hours(const struct used *u)
{
    return u->milli_ms / 1000.0 / 3600000.0;
}

static int64_t list_cost(const struct used *u, json_t *flavor)
{
    int64_t milli, price;
    if (!flavor)
        return -1; /* a flavor the caller may not see */
    milli = json_integer_value(json_object_get(flavor, "gpu_milli"));
    price = json_integer_value(json_object_get(flavor, "price_per_hour_micros"));
    if (milli <= 0)
        return -1;
    /* price is per replica-hour: replica-hours = milli-hours / milli per replica */
    return (int64_t)(u->milli_ms / 3600000.0 / (double)milli * (double)price + 0.5);
}

static const char *ran_as(const struct used *u)
{
    return u->p1 && u->p2 ? "P1+P2" : u->p1 ? "P1" : u->p2 ? "P2" : "-";
}

static char *elapsed(json_t *w)
{
    int64_t start, end;
    if (work_time_of(w, "started_at", &start) < 0 || work_time_of(w, "finished_at", &end) < 0)
        return xstrdup("-");
    return work_duration(end - start);
}

static char *when(json_t *w, const char *key)
{
    int64_t t;
    return work_time_of(w, key, &t) < 0 ? xstrdup("-") : work_time_short(t);
}

static int render_acct(json_t *items, const struct used *use, struct work_names *n, struct buf *out)
{
    static const char *const header[] = {"ID",     "NAME",  "PROJECT",   "FLAVOR",
                                         "RAN AS", "START", "END",       "ELAPSED",
                                         "STATE",  "EXIT",  "GPU-HOURS", "LIST COST"};
    struct table t;
    size_t i;
    json_t *w;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(items, i, w)
    {
        json_t *flavor = work_lookup(n->flavors, json_object_get(w, "flavor_id"));
        int64_t cost = list_cost(&use[i], flavor);
        char *id = render_cell(json_object_get(w, "id"));
        char *project = work_name(n->projects, json_object_get(w, "project_id"));
        char *flavor_name = work_name(n->flavors, json_object_get(w, "flavor_id"));
        char *start = when(w, "started_at"), *end = when(w, "finished_at"), *el = elapsed(w);
        char *exit_code = render_cell(json_object_get(w, "exit_code"));
        char *hours = xasprintf("%.2f", gpu_hours(&use[i]));
        char *money = cost < 0 ? xstrdup("-") : render_micros(cost);
        const char *currency = json_string_value(json_object_get(flavor, "currency"));
        char *money_cur =
            cost < 0 ? xstrdup("-") : xasprintf("%s %s", money, currency ? currency : "");
        const char *cells[] = {id,
                               json_string_value(json_object_get(w, "name")),
                               project,
                               flavor_name,
                               ran_as(&use[i]),
                               start,
                               end,
                               el,
                               json_string_value(json_object_get(w, "state")),
                               exit_code,
                               hours,
                               money_cur};
        table_add_row(&t, cells);
        free(id);
        free(project);
        free(flavor_name);
        free(start);
        free(end);
        free(el);
        free(exit_code);
        free(hours);
        free(money);
        free(money_cur);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

/* -o json: each workload with what acct computed beside it. */
static json_t *as_json(json_t *items, const struct used *use, struct work_names *n)
{
    json_t *out = json_array();
    size_t i;
    json_t *w;

    json_array_foreach(items, i, w)
    {
        json_t *flavor = work_lookup(n->flavors, json_object_get(w, "flavor_id"));
        int64_t cost = list_cost(&use[i], flavor);
        json_t *o = json_deep_copy(w);
        json_object_set_new(o, "gpu_hours", json_real(gpu_hours(&use[i])));
        json_object_set_new(o, "ran_as", json_string(ran_as(&use[i])));
        json_object_set_new(o, "list_cost_micros", cost < 0 ? json_null() : json_integer(cost));
        json_array_append_new(out, o);
    }
    return out;
}

int cmd_acct(int argc, char **argv)
{
    struct acct_args a = {0};
    struct client c;
    struct work_names names;
    json_t *items = NULL, *allocs = NULL;
    struct buf filter, out;
    struct used *use = NULL;
    int rc = parse_acct(&a, argc, argv);

    if (rc != 0)
        return rc < 0 ? CLI_OK : rc;
    if (client_open(&c) < 0)
        return client_report(&c);
    buf_init(&filter, 256);
    buf_init(&out, WORK_OUTPUT_MAX);
    work_names_init(&names);
    buf_printf(&filter, "%s", ""); /* "" or "&key=value...", appended to each list's path */
    if (a.project) {
        int64_t id;
        if ((rc = work_project(&c, "acct", a.project, &id)) != 0)
            goto out;
        buf_printf(&filter, "&project_id=%" PRId64, id);
    }
    if (a.user) {
        char err[512];
        int64_t id;
        rc = resolve_id(&c, &model_users, a.user, &id, err, sizeof(err));
        if (rc < 0) {
            rc = rc == ERR_IO ? client_report(&c) : cli_usage_error("acct", "--user: %s", err);
            goto out;
        }
        buf_printf(&filter, "&user_id=%" PRId64, id);
    }
    if (fetch_finished(&c, filter.data, &a, &items) < 0 ||
        work_list_all(&c, "/v1/allocations", &allocs) < 0) {
        rc = client_report(&c);
        goto out;
    }
    use = xcalloc(json_array_size(items) + 1, sizeof(*use));
    add_allocations(items, allocs, use, time_now_ms());
    work_names_load(&names, &c, WORK_NAMES_PROJECTS | WORK_NAMES_FLAVORS);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *j = json_pack("{s:o}", "items", as_json(items, use, &names));
        render_json(j, &out);
        json_decref(j);
    } else if (json_array_size(items) == 0) {
        buf_printf(&out, "no finished work%s\n", a.since ? " since then" : "");
    } else {
        render_acct(items, use, &names, &out);
    }
    rc = work_flush(&out);
out:
    free(use);
    json_decref(items);
    json_decref(allocs);
    work_names_release(&names);
    buf_release(&filter);
    buf_release(&out);
    client_release(&c);
    return rc;
}
