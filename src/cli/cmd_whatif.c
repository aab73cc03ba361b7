/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_whatif.c: `gpuaas whatif` (POST /v1/whatif): a period's recorded
 * work replayed through the scheduler with changes, beside the same replay
 * without them. The server computes everything; this file turns flags into
 * the request's changes (names resolved to ids) and prints both runs side
 * by side, every heading saying SIMULATED.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "cli/work.h"

#define TRACE_FILE_MAX (64u << 20)
#define MAX_CHANGES 32

static void whatif_help(void)
{
    printf(
        "usage: gpuaas whatif (--period YYYY-MM | --from TIME --to TIME) [CHANGE...]\n"
        "                     [--trace FILE.csv]\n\n"
        "Replays the work recorded in a period (its arrivals, shapes, projects, classes and\n"
        "real run times) through the scheduler twice, as it was and with the changes, and\n"
        "prints both side by side: waits, preemptions, GPU time lost, GPU-hours, cost, per\n"
        "project and overall. It is a simulation: nothing live changes.\n\n"
        "Changes (each may be given more than once, at most 32 in all):\n"
        "  --quota PROJECT:CLASS:+N    N more (or -N fewer) guaranteed GPUs of CLASS\n"
        "  --add-nodes CLASS:N[:G]     N more nodes of CLASS (G GPUs each; default: as the\n"
        "                              class's first node)\n"
        "  --remove-nodes CLASS:N      N nodes of CLASS fewer\n"
        "  --lend-to-all POOL          POOL lent to every project\n"
        "  --policy NAME               placement policy (default, bestfit, fgd-fill, ...)\n"
        "  --grace S                   every preemption's grace, seconds\n\n"
        "--trace FILE.csv replays a trace instead of the store's record: a header naming\n"
        "submitted_at, project, flavor, run_s (and optionally priority_class, replicas,\n"
        "priority, started_at), one workload per line. Admins see the whole fleet; organization\n"
        "admins and managers see their organizations' projects.\n");
}

/* Splits "A:B[:C]" into at most 3 parts (in buf); returns how many. */
static int split3(const char *s, char *buf, size_t size, char *parts[3])
{
    int n = 0;
    char *p;
    snprintf(buf, size, "%s", s);
    parts[n++] = buf;
    for (p = buf; *p && n < 3; p++) {
        if (*p == ':') {
            *p = '\0';
            parts[n++] = p + 1;
        }
    }
    return strchr(parts[n - 1], ':') ? 4 : n;
}

static int resolve(struct client *c, const struct resource_def *def, const char *flag,
                   const char *word, int64_t *ret_id)
{
    char err[256];
    int rc = resolve_id(c, def, word, ret_id, err, sizeof(err));
    if (rc == ERR_IO)
        return client_report(c);
    if (rc < 0)
        return cli_usage_error("whatif", "%s: %s", flag, err);
    return 0;
}

/* One change flag into a change object of the request; CLI_USAGE when it is malformed. */
static int change_of(struct client *c, const char *flag, const char *v, json_t **ret)
{
    char buf[512], *p[3];
    int n = split3(v, buf, sizeof(buf), p);
    int64_t a = 0, b = 0, x = 0;
    int rc;

    *ret = NULL;
    if (strcmp(flag, "--quota") == 0) {
        const char *num = p[n - 1];
        if (n != 3 || (num[0] != '+' && num[0] != '-') || parse_int64(num + 1, 1, 100000, &x) != 0)
            return cli_usage_error("whatif", "--quota takes PROJECT:CLASS:+N or :-N, not '%s'", v);
        if ((rc = resolve(c, &model_projects, flag, p[0], &a)) != 0 ||
            (rc = resolve(c, &model_gpu_classes, flag, p[1], &b)) != 0)
            return rc;
        *ret =
            json_pack("{s:s,s:I,s:I,s:I}", "kind", "quota", "project_id", (json_int_t)a,
                      "gpu_class_id", (json_int_t)b, "gpus", (json_int_t)(num[0] == '-' ? -x : x));
    } else if (strcmp(flag, "--add-nodes") == 0 || strcmp(flag, "--remove-nodes") == 0) {
        bool add = flag[2] == 'a';
        int64_t g = 0;
        if (n < 2 || (!add && n != 2) || n > 3 || parse_int64(p[1], 1, 1000, &x) != 0 ||
            (n == 3 && parse_int64(p[2], 1, 64, &g) != 0))
            return cli_usage_error("whatif", "%s takes CLASS:N%s, not '%s'", flag,
                                   add ? "[:GPUS]" : "", v);
        if ((rc = resolve(c, &model_gpu_classes, flag, p[0], &b)) != 0)
            return rc;
        *ret = json_pack("{s:s,s:I,s:I}", "kind", add ? "add_nodes" : "remove_nodes",
                         "gpu_class_id", (json_int_t)b, "count", (json_int_t)x);
        if (g)
            json_object_set_new(*ret, "gpus_per_node", json_integer(g));
    } else if (strcmp(flag, "--lend-to-all") == 0) {
        if ((rc = resolve(c, &model_pools, flag, v, &a)) != 0)
            return rc;
        *ret = json_pack("{s:s,s:I}", "kind", "lend_to_all", "pool_id", (json_int_t)a);
    } else if (strcmp(flag, "--policy") == 0) {
        *ret = json_pack("{s:s,s:s}", "kind", "policy", "policy", v);
    } else {
        if ((rc = work_parse_duration("whatif", flag, v, 0, 31 * 86400, &x)) != 0)
            return rc;
        *ret = json_pack("{s:s,s:I}", "kind", "grace", "grace_s", (json_int_t)x);
    }
    return 0;
}

static int64_t i_of(json_t *o, const char *k)
{
    return json_integer_value(json_object_get(o, k));
}

static char *hours_of(json_t *o, const char *k)
{
    return xasprintf("%.1f", json_number_value(json_object_get(o, k)));
}

static char *cost_of(json_t *run, json_t *o)
{
    const char *cur = json_string_value(json_object_get(run, "currency"));
    const char *money = json_string_value(json_object_get(o, "cost"));
    return xasprintf("%s%s%s", money ? money : "-", cur && *cur ? " " : "", cur ? cur : "");
}

static char *wait_of(json_t *o, const char *k)
{
    return work_duration(i_of(o, k) * 1000);
}

/* "a -> b", or "a" when both are the same. */
static char *pair(char *a, char *b)
{
    char *s = strcmp(a, b) == 0 ? xstrdup(a) : xasprintf("%s -> %s", a, b);
    free(a);
    free(b);
    return s;
}

static json_t *project_in(json_t *run, int64_t id)
{
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(run, "projects"), i, p)
    {
        if (i_of(p, "project_id") == id)
            return p;
    }
    return NULL;
}

static int render_whatif(json_t *ans, struct buf *out)
{
    static const char *const head[] = {"SIMULATED", "BASELINE", "CHANGED"};
    static const char *const phead[] = {"PROJECT (SIMULATED)", "WAIT P50",  "WAIT P95",
                                        "PREEMPTIONS",         "GPU-HOURS", "COST"};
    json_t *base = json_object_get(ans, "baseline"), *chg = json_object_get(ans, "changed");
    json_t *bo = json_object_get(base, "overall"), *co = json_object_get(chg, "overall");
    json_t *period = json_object_get(ans, "period"), *rep, *p;
    struct table t;
    size_t i;
    int rc;

    rc = buf_printf(out, "SIMULATED what-if, %s .. %s: %" PRId64 " workloads from the %s; %s\n\n",
                    json_string_value(json_object_get(period, "from")),
                    json_string_value(json_object_get(period, "to")), i_of(ans, "workloads"),
                    json_string_value(json_object_get(ans, "source")),
                    json_string_value(json_object_get(ans, "label")));
    table_init(&t, ARRAY_SIZE(head));
    table_add_row(&t, head);
    {
        struct {
            const char *what;
            char *b, *c;
        } rows[] = {
            {"wait p50", wait_of(bo, "wait_p50_s"), wait_of(co, "wait_p50_s")},
            {"wait p95", wait_of(bo, "wait_p95_s"), wait_of(co, "wait_p95_s")},
            {"wait max", wait_of(bo, "wait_max_s"), wait_of(co, "wait_max_s")},
            {"not started", xasprintf("%" PRId64, i_of(bo, "not_started")),
             xasprintf("%" PRId64, i_of(co, "not_started"))},
            {"preemptions", xasprintf("%" PRId64, i_of(bo, "preemptions")),
             xasprintf("%" PRId64, i_of(co, "preemptions"))},
            {"GPU-hours lost", hours_of(bo, "gpu_hours_lost"), hours_of(co, "gpu_hours_lost")},
            {"GPU-hours", hours_of(bo, "gpu_hours"), hours_of(co, "gpu_hours")},
            {"capacity GPUs", xasprintf("%" PRId64, i_of(base, "capacity_gpus")),
             xasprintf("%" PRId64, i_of(chg, "capacity_gpus"))},
            {"idle GPU-hours",
             json_is_number(json_object_get(base, "idle_gpu_hours"))
                 ? hours_of(base, "idle_gpu_hours")
                 : xstrdup("-"),
             json_is_number(json_object_get(chg, "idle_gpu_hours"))
                 ? hours_of(chg, "idle_gpu_hours")
                 : xstrdup("-")},
            {"cost", cost_of(base, bo), cost_of(chg, co)},
        };
        for (size_t k = 0; k < ARRAY_SIZE(rows); k++) {
            const char *cells[] = {rows[k].what, rows[k].b, rows[k].c};
            table_add_row(&t, cells);
            free(rows[k].b);
            free(rows[k].c);
        }
    }
    if (rc == 0)
        rc = table_render(&t, out);
    table_release(&t);
    rep = json_object_get(base, "starts_reproduced");
    if (rc == 0 && i_of(rep, "compared") > 0)
        rc = buf_printf(out,
                        "\nthe baseline reproduces %" PRId64 " of %" PRId64
                        " recorded starts to the second\n",
                        i_of(rep, "same"), i_of(rep, "compared"));
    if (rc == 0 && i_of(base, "recorded_changes") > 0) /* admins' answers say it */
        rc = buf_printf(out,
                        "quotas, caps, pools, nodes and weights changed %" PRId64
                        " times in the period, as recorded\n",
                        i_of(base, "recorded_changes"));
    if (rc != 0 || json_array_size(json_object_get(base, "projects")) == 0)
        return rc;
    rc = buf_puts(out, "\n");
    table_init(&t, ARRAY_SIZE(phead));
    table_add_row(&t, phead);
    json_array_foreach(json_object_get(base, "projects"), i, p)
    {
        json_t *q = project_in(chg, i_of(p, "project_id"));
        char *name = render_cell(json_object_get(p, "project"));
        char *cells[] = {name,
                         pair(wait_of(p, "wait_p50_s"), wait_of(q, "wait_p50_s")),
                         pair(wait_of(p, "wait_p95_s"), wait_of(q, "wait_p95_s")),
                         pair(xasprintf("%" PRId64, i_of(p, "preemptions")),
                              xasprintf("%" PRId64, i_of(q, "preemptions"))),
                         pair(hours_of(p, "gpu_hours"), hours_of(q, "gpu_hours")),
                         pair(cost_of(base, p), cost_of(chg, q))};
        table_add_row(&t, (const char *const *)cells);
        for (size_t k = 0; k < ARRAY_SIZE(cells); k++)
            free(cells[k]);
    }
    if (rc == 0)
        rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static const char *const change_flags[] = {"--quota",       "--add-nodes", "--remove-nodes",
                                           "--lend-to-all", "--policy",    "--grace"};

int cmd_whatif(int argc, char **argv)
{
    const char *period = NULL, *from = NULL, *to = NULL, *trace = NULL, *v;
    const char *flags[MAX_CHANGES], *values[MAX_CHANGES];
    size_t n = 0;
    struct client c = {0};
    struct buf out, data;
    json_t *body, *changes, *ans = NULL;
    int i = 1, rc;

    while (i < argc) {
        bool taken = false;
        if (cli_is_help(argv[i])) {
            whatif_help();
            return CLI_OK;
        }
        if ((rc = cli_take_value_flag("whatif", argc, argv, &i, "--period", NULL, &period)) ||
            (rc = cli_take_value_flag("whatif", argc, argv, &i, "--from", NULL, &from)) ||
            (rc = cli_take_value_flag("whatif", argc, argv, &i, "--to", NULL, &to)) ||
            (rc = cli_take_value_flag("whatif", argc, argv, &i, "--trace", NULL, &trace))) {
            if (rc != 1)
                return rc;
            continue;
        }
        for (size_t k = 0; !taken && k < ARRAY_SIZE(change_flags); k++) {
            rc = cli_take_value_flag("whatif", argc, argv, &i, change_flags[k], NULL, &v);
            if (rc != 0 && rc != 1)
                return rc;
            if (rc == 1) {
                if (n >= MAX_CHANGES)
                    return cli_usage_error("whatif", "at most %d changes", MAX_CHANGES);
                flags[n] = change_flags[k];
                values[n++] = v;
                taken = true;
            }
        }
        if (taken)
            continue;
        rc = cli_take_global_flag("whatif", argc, argv, &i);
        if (rc == 0)
            return argv[i][0] == '-'
                       ? cli_unknown_flag("whatif", argv[i])
                       : cli_usage_error("whatif", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if (!period == !(from || to) || (!period && !(from && to)))
        return cli_usage_error("whatif", "say which period: --period YYYY-MM, or --from and --to");
    if (period && (rc = work_check_period("whatif", period)) != 0)
        return rc;
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    body = period ? json_pack("{s:s}", "period", period)
                  : json_pack("{s:s,s:s}", "from", from, "to", to);
    changes = json_array();
    json_object_set_new(body, "changes", changes);
    rc = CLI_OK;
    for (size_t k = 0; rc == CLI_OK && k < n; k++) {
        json_t *ch = NULL;
        rc = change_of(&c, flags[k], values[k], &ch);
        if (ch)
            json_array_append_new(changes, ch);
    }
    if (rc == CLI_OK && trace) {
        rc = cli_read_file(trace, TRACE_FILE_MAX, &data);
        if (rc == CLI_OK)
            json_object_set_new(body, "trace", json_stringn(data.data ? data.data : "", data.len));
        buf_release(&data);
    }
    if (rc != CLI_OK) {
        json_decref(body);
        client_release(&c);
        return rc;
    }
    if (client_request(&c, "POST", "/v1/whatif", body, &ans) < 0) {
        rc = client_report(&c);
        json_decref(body);
        client_release(&c);
        return rc;
    }
    json_decref(body);
    client_release(&c);
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON)
        render_json(ans, &out);
    else
        render_whatif(ans, &out);
    rc = work_flush(&out);
    json_decref(ans);
    return rc;
}
