/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_billing.c: `gpuaas usage` (rated usage of a month, and `usage verify`,
 * the ledger's hash chain) and `gpuaas invoice list|show|draft|issue|pay|
 * credit|export|verify` and `gpuaas cost --by pool|project|org|manager`
 * (showback). Money is shown as the server formats it (the
 * currency's minor unit); hours with three decimals.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/names.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "cli/units.h"
#include "cli/work.h"

static const char *s_of(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "-";
}

/* Renders one table of items: header names and, per column, the member shown. */
static int render_rows(json_t *items, const char *const *header, const char *const *keys,
                       size_t n_cols, struct buf *out)
{
    struct table t;
    size_t i;
    json_t *it;
    int rc;

    table_init(&t, n_cols);
    table_add_row(&t, header);
    json_array_foreach(items, i, it)
    {
        char *cells[16];
        for (size_t c = 0; c < n_cols && c < ARRAY_SIZE(cells); c++)
            cells[c] = render_cell(json_object_get(it, keys[c]));
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < n_cols && c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

/* An organization or project word (name or id) as an id; prints the error. */
static int resolve_word(const char *cmd, const struct resource_def *def, const char *word,
                        int64_t *ret)
{
    struct client c;
    char err[256];
    int rc;

    if (client_open(&c) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    rc = resolve_id(&c, def, word, ret, err, sizeof(err));
    if (rc == ERR_IO)
        rc = client_report(&c);
    else if (rc < 0)
        rc = cli_usage_error(cmd, "%s", err);
    client_release(&c);
    return rc < 0 ? CLI_ERROR : rc;
}

/* ---- usage ---- */

static void usage_help(void)
{
    printf("usage: gpuaas usage [--period YYYY-MM] [--org ORG] [--project PROJECT]\n"
           "       gpuaas usage verify\n\n"
           "Rated usage of a month (default: this one) per project, flavor and class:\n"
           "seconds, replica-hours, GPU-hours and the amount, with totals per currency.\n"
           "While the month runs, work still running counts up to now (provisional).\n"
           "verify recomputes the usage ledger's hash chain (admins): the closed runs'\n"
           "records; runs still open are recorded when they end.\n");
}

static int show_usage(struct client *c, json_t *ans, struct buf *out)
{
    struct names names;
    static const char *const header[] = {"PROJECT",   "FLAVOR", "CLASS",   "HOURS",
                                         "GPU-HOURS", "AMOUNT", "CURRENCY"};
    static const char *const keys[] = {"project",   "flavor", "class",   "hours",
                                       "gpu_hours", "amount", "currency"};
    json_t *totals = json_object_get(ans, "totals"), *t;
    size_t i;
    int rc = buf_printf(out, "usage %s%s\n", s_of(ans, "period"),
                        json_is_true(json_object_get(ans, "provisional")) ? " (provisional)" : "");
    if (json_array_size(json_object_get(ans, "items")) == 0)
        return buf_puts(out, "no usage\n");
    rc |= render_rows(json_object_get(ans, "items"), header, keys, ARRAY_SIZE(header), out);
    names_init(&names, c);
    json_array_foreach(totals, i, t)
    {
        char *org = names_get(&names, &model_organizations,
                              json_integer_value(json_object_get(t, "org_id")));
        rc |= buf_printf(out, "total %s: %s %s\n", org, s_of(t, "amount"), s_of(t, "currency"));
        free(org);
    }
    names_release(&names);
    return rc;
}

static int show_verify(json_t *ans, struct buf *out)
{
    /* The ledger holds closed runs only: say so, or "0 records" reads as a
     * contradiction right after `usage` showed charges of running work. */
    if (json_is_true(json_object_get(ans, "ok")))
        return buf_printf(out,
                          "ledger ok: %" JSON_INTEGER_FORMAT
                          " closed usage records checked (hash chain intact), head %s\n"
                          "runs still open are not in the ledger yet: they are recorded when "
                          "they end ('gpuaas usage' counts them up to now, provisional)\n",
                          json_integer_value(json_object_get(ans, "records")), s_of(ans, "head"));
    return buf_printf(out, "ledger BROKEN at record %" JSON_INTEGER_FORMAT ": %s\n",
                      json_integer_value(json_object_get(ans, "bad_seq")), s_of(ans, "problem"));
}

int cmd_usage(int argc, char **argv)
{
    const char *period = NULL, *org = NULL, *project = NULL;
    struct buf path;
    int64_t id;
    int i = 1, rc;
    bool verify = false;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            usage_help();
            return CLI_OK;
        }
        if (strcmp(argv[i], "verify") == 0 && i == 1) {
            verify = true;
            i++;
            continue;
        }
        if ((rc = cli_take_value_flag("usage", argc, argv, &i, "--period", NULL, &period)) == 1 ||
            (rc == 0 &&
             (rc = cli_take_value_flag("usage", argc, argv, &i, "--org", NULL, &org)) == 1) ||
            (rc == 0 &&
             (rc = cli_take_value_flag("usage", argc, argv, &i, "--project", NULL, &project)) == 1))
            continue;
        if (rc == 0)
            rc = cli_take_global_flag("usage", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("usage", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if (verify) {
        if (period || org || project)
            return cli_usage_error("usage", "usage verify takes no flags");
        return work_show("GET", "/v1/ledger/verify", NULL, show_verify);
    }
    if (period && (rc = work_check_period("usage", period)) != 0)
        return rc;
    buf_init(&path, 1024);
    buf_puts(&path, "/v1/usage?x=1");
    if (period) {
        char *esc = client_escape(period);
        buf_printf(&path, "&period=%s", esc);
        free(esc);
    }
    if (org) {
        if ((rc = resolve_word("usage", &model_organizations, org, &id)) != 0) {
            buf_release(&path);
            return rc;
        }
        buf_printf(&path, "&org_id=%" PRId64, id);
    }
    if (project) {
        struct client c;
        rc = client_open(&c) < 0 ? client_report(&c) : work_project(&c, "usage", project, &id);
        client_release(&c);
        if (rc != 0) {
            buf_release(&path);
            return rc;
        }
        buf_printf(&path, "&project_id=%" PRId64, id);
    }
    rc = work_show_with("GET", path.data, NULL, show_usage);
    buf_release(&path);
    return rc;
}

/* ---- invoices ---- */

/* "12.34" -> 12340000 micro-units; positive, at most 6 decimals, at most 10^12 units. */
static int parse_amount(const char *s, int64_t *ret)
{
    char err[128];

    if (units_parse(UNITS_MICROS, s, INT64_C(1000000000000000000), ret, err, sizeof(err)) < 0)
        return -1;
    return *ret > 0 ? 0 : -1;
}

static void invoice_help(void)
{
    printf("usage: gpuaas invoice list [--org ORG] [--period YYYY-MM]\n"
           "       gpuaas invoice show ID|NUMBER\n"
           "       gpuaas invoice draft --org ORG [--period YYYY-MM]\n"
           "       gpuaas invoice issue --org ORG --period YYYY-MM\n"
           "       gpuaas invoice pay ID|NUMBER\n"
           "       gpuaas invoice credit ID|NUMBER --reason TEXT [--amount 12.34]\n"
           "       gpuaas invoice export ID|NUMBER [--format json|csv|html]\n"
           "       gpuaas invoice verify ID|NUMBER\n\n"
           "Invoices per organization and month. A draft is computed on demand and never\n"
           "stored; issue numbers the finished month and makes it immutable; pay marks it\n"
           "paid; credit issues a credit note (the only correction; without --amount, all\n"
           "that is left); export prints it (html: a printable page); verify re-rates the\n"
           "month and compares it byte for byte. issue, pay and credit are for admins.\n");
}

static int show_invoice(json_t *inv, struct buf *out)
{
    static const char *const header[] = {"PROJECT",   "FLAVOR", "CLASS", "HOURS",
                                         "GPU-HOURS", "UNIT/H", "MULT",  "AMOUNT"};
    static const char *const keys[] = {"project",   "flavor",         "class", "hours",
                                       "gpu_hours", "unit_price_eff", "mult",  "amount"};
    json_t *lines = json_object_get(inv, "lines"), *l;
    size_t k;
    const char *number = json_string_value(json_object_get(inv, "number"));
    char total[48];
    int rc;

    snprintf(total, sizeof(total), "%s",
             json_is_string(json_object_get(inv, "total")) ? s_of(inv, "total") : "");
    rc =
        buf_printf(out, "%s %s  %s  %s (%s)  cost center %s\n", s_of(inv, "kind"),
                   number ? number : "(draft)", s_of(inv, "state"), s_of(inv, "customer"),
                   s_of(inv, "period"), *s_of(inv, "cost_center") ? s_of(inv, "cost_center") : "-");
    /* UNIT/H is what an hour of the line cost (a P2 line's list price times its
     * multiplier: lines of invoices issued before the server said so show the
     * list price), MULT the multiplier: UNIT/H x HOURS is the amount */
    json_array_foreach(lines, k, l)
    {
        json_t *eff = json_object_get(l, "effective_unit_price");
        char *mult = render_micros(json_integer_value(json_object_get(l, "mult_ppm")));
        json_object_set(l, "unit_price_eff", eff ? eff : json_object_get(l, "unit_price"));
        json_object_set_new(l, "mult", json_sprintf("%sx", mult));
        free(mult);
    }
    if (strcmp(s_of(inv, "kind"), "credit-note") == 0)
        rc |= buf_printf(out, "reason: %s\n", s_of(inv, "reason"));
    else
        rc |= render_rows(lines, header, keys, ARRAY_SIZE(header), out);
    {
        char *money = render_micros(json_integer_value(json_object_get(inv, "total_micros")));
        rc |= buf_printf(out, "total %s %s\n", money, s_of(inv, "currency"));
        free(money);
    }
    return rc;
}

static int show_invoices(json_t *ans, struct buf *out)
{
    json_t *items = json_is_array(ans) ? ans : json_object_get(ans, "items"), *it;
    size_t i;
    int rc = 0;
    if (json_array_size(items) == 0)
        return buf_puts(out, "no invoices\n");
    json_array_foreach(items, i, it)
    {
        rc |= show_invoice(it, out);
        if (i + 1 < json_array_size(items))
            rc |= buf_puts(out, "\n");
    }
    return rc;
}

static int show_list(json_t *ans, struct buf *out)
{
    static const char *const header[] = {"ID",     "NUMBER", "KIND",         "ORG",
                                         "PERIOD", "STATE",  "TOTAL_MICROS", "CURRENCY"};
    static const char *const keys[] = {"id",     "number", "kind",         "org_id",
                                       "period", "state",  "total_micros", "currency"};
    json_t *items = json_object_get(ans, "items");
    if (json_array_size(items) == 0)
        return buf_puts(out, "no invoices\n");
    return render_rows(items, header, keys, ARRAY_SIZE(header), out);
}

/* ID or NUMBER (INV-2026-000001) to an id. */
static int invoice_id(const char *word, int64_t *ret)
{
    struct client c;
    json_t *ans = NULL;
    char *esc, *path;
    int rc;

    if (parse_int64(word, 1, INT64_MAX, ret) == 0)
        return 0;
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    esc = client_escape(word);
    path = xasprintf("/v1/invoices?number=%s", esc);
    rc = client_request(&c, "GET", path, NULL, &ans) < 0 ? client_report(&c) : 0;
    free(esc);
    free(path);
    if (rc == 0) {
        json_t *first = json_array_get(json_object_get(ans, "items"), 0);
        if (!first) {
            cli_error("no invoice %s", word);
            rc = CLI_ERROR;
        } else {
            *ret = json_integer_value(json_object_get(first, "id"));
        }
    }
    json_decref(ans);
    client_release(&c);
    return rc;
}

/* A verb invoice knows, or the usage error (with the closest verb), before any request. */
static int check_invoice_verb(const char *verb)
{
    static const char *const verbs[] = {"list",   "show",   "draft",  "issue", "pay",
                                        "credit", "export", "verify", NULL};
    const char *close;

    for (const char *const *v = verbs; *v; v++) {
        if (strcmp(*v, verb) == 0)
            return 0;
    }
    close = cli_closest(verb, verbs);
    if (close)
        return cli_usage_error("invoice", "unknown invoice command '%s'; did you mean '%s'?", verb,
                               close);
    return cli_usage_error("invoice", "unknown invoice command '%s'", verb);
}

int cmd_invoice(int argc, char **argv)
{
    const char *verb = argc > 1 ? argv[1] : NULL, *org = NULL, *period = NULL, *reason = NULL;
    const char *amount = NULL, *format = "json", *target = NULL;
    int64_t org_id = 0, id = 0;
    char path[256];
    int i = 2, rc;

    if (!verb || cli_is_help(verb)) {
        invoice_help();
        return verb ? CLI_OK : CLI_USAGE;
    }
    while (i < argc) {
        if (cli_is_help(argv[i])) {
            invoice_help();
            return CLI_OK;
        }
        rc = cli_take_value_flag("invoice", argc, argv, &i, "--org", NULL, &org);
        if (rc == 0)
            rc = cli_take_value_flag("invoice", argc, argv, &i, "--period", NULL, &period);
        if (rc == 0)
            rc = cli_take_value_flag("invoice", argc, argv, &i, "--reason", NULL, &reason);
        if (rc == 0)
            rc = cli_take_value_flag("invoice", argc, argv, &i, "--amount", NULL, &amount);
        if (rc == 0)
            rc = cli_take_value_flag("invoice", argc, argv, &i, "--format", NULL, &format);
        if (rc == 0)
            rc = cli_take_global_flag("invoice", argc, argv, &i);
        if (rc == 0 && !target && argv[i][0] != '-') {
            target = argv[i++];
            continue;
        }
        if (rc == 0)
            return cli_usage_error("invoice", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if ((rc = check_invoice_verb(verb)) != 0)
        return rc;
    if (period && (rc = work_check_period("invoice", period)) != 0)
        return rc;
    if (org && (rc = resolve_word("invoice", &model_organizations, org, &org_id)) != 0)
        return rc;
    if (strcmp(verb, "list") == 0) {
        int n = snprintf(path, sizeof(path), "/v1/invoices?limit=1000");
        if (org_id)
            n += snprintf(path + n, sizeof(path) - (size_t)n, "&org_id=%" PRId64, org_id);
        if (period && strlen(period) < 16)
            snprintf(path + n, sizeof(path) - (size_t)n, "&period=%s", period);
        return work_show("GET", path, NULL, show_list);
    }
    if (strcmp(verb, "draft") == 0 || strcmp(verb, "issue") == 0) {
        if (!org_id)
            return cli_usage_error("invoice", "invoice %s needs --org", verb);
        if (strcmp(verb, "issue") == 0) {
            if (!period)
                return cli_usage_error("invoice", "invoice issue needs --period YYYY-MM");
            return work_show("POST", "/v1/invoices/issue",
                             json_pack("{s:I,s:s}", "org_id", (json_int_t)org_id, "period", period),
                             show_invoices);
        }
        snprintf(path, sizeof(path), "/v1/invoices/draft?org_id=%" PRId64 "%s%.16s", org_id,
                 period ? "&period=" : "", period ? period : "");
        return work_show("GET", path, NULL, show_invoices);
    }
    if (!target)
        return cli_usage_error("invoice", "invoice %s needs an invoice ID or NUMBER", verb);
    if ((rc = invoice_id(target, &id)) != 0)
        return rc;
    if (strcmp(verb, "show") == 0) {
        snprintf(path, sizeof(path), "/v1/invoices/%" PRId64, id);
        return work_show("GET", path, NULL, show_invoice);
    }
    if (strcmp(verb, "pay") == 0) {
        snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/pay", id);
        return work_show("POST", path, NULL, show_invoice);
    }
    if (strcmp(verb, "credit") == 0) {
        int64_t micros = 0;
        if (!reason)
            return cli_usage_error("invoice", "invoice credit needs --reason");
        if (amount && parse_amount(amount, &micros) < 0)
            return cli_usage_error("invoice", "--amount '%s' is not an amount such as 12.34",
                                   amount);
        snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/credit", id);
        return work_show(
            "POST", path,
            json_pack("{s:s,s:I}", "reason", reason, "amount_micros", (json_int_t)micros),
            show_invoice);
    }
    if (strcmp(verb, "export") == 0) {
        if (strcmp(format, "json") && strcmp(format, "csv") && strcmp(format, "html"))
            return cli_usage_error("invoice", "--format must be json, csv or html");
        snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/export?format=%s", id, format);
        return work_download(path);
    }
    if (strcmp(verb, "verify") == 0) {
        snprintf(path, sizeof(path), "/v1/invoices/%" PRId64 "/verify", id);
        return work_show("GET", path, NULL, NULL);
    }
    return CLI_USAGE; /* not reached: check_invoice_verb knows the verbs */
}

/* ---- cost (showback) ---- */

static void cost_help(void)
{
    printf("usage: gpuaas cost [--by pool|project|org|manager] [--period YYYY-MM]\n\n"
           "Showback of a month (default: this one, up to now): what the pools cost their\n"
           "owners (cost per GPU-hour x capacity), split into USED (charged to the project,\n"
           "organization or manager whose work held the GPUs) and IDLE (charged to the\n"
           "pool's owner). You see the groups you may see; a manager sees their own row.\n");
}

static int show_cost(json_t *ans, struct buf *out)
{
    static const char *const header[] = {"NAME", "CAPACITY_GPU_H", "ALLOCATED_GPU_H", "USED",
                                         "IDLE", "TOTAL",          "CURRENCY"};
    static const char *const keys[] = {
        "name", "capacity_gpu_hours", "allocated_gpu_hours", "used", "idle", "total", "currency"};
    json_t *items = json_object_get(ans, "items");
    if (json_array_size(items) == 0)
        return buf_puts(out, "no costs to show\n");
    return render_rows(items, header, keys, ARRAY_SIZE(header), out);
}

static const char *const cost_by[] = {"pool", "project", "org", "manager", NULL};

int cmd_cost(int argc, char **argv)
{
    const char *by = "pool", *period = NULL;
    char path[128];
    int i = 1, rc;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            cost_help();
            return CLI_OK;
        }
        rc = cli_take_value_flag("cost", argc, argv, &i, "--by", NULL, &by);
        if (rc == 0)
            rc = cli_take_value_flag("cost", argc, argv, &i, "--period", NULL, &period);
        if (rc == 0)
            rc = cli_take_global_flag("cost", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("cost", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if ((rc = cli_check_enum("cost", "--by", by, cost_by)) != 0)
        return rc;
    if (period && (rc = work_check_period("cost", period)) != 0)
        return rc;
    snprintf(path, sizeof(path), "/v1/cost?by=%s%s%s", by, period ? "&period=" : "",
             period ? period : "");
    return work_show("GET", path, NULL, show_cost);
}
