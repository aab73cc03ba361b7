/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_inventory.c: `gpuaas inventory` (every GPU you may see: where, class,
 * owner, manager, cost, state, who uses it), `gpuaas inventory import FILE`
 * (a spreadsheet exported as CSV; admins) and `gpuaas inventory export`
 * (the same rows as CSV, to standard output).
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

#define IMPORT_MAX (64u << 20)

static void inventory_help(void)
{
    printf("usage: gpuaas inventory [--org ORG] [--manager USER] [--cluster C] [--class K]\n"
           "                        [--state S] [--owner NAME]\n"
           "       gpuaas inventory export [same filters] > gpus.csv\n"
           "       gpuaas inventory import FILE.csv\n"
           "       gpuaas inventory history --gpu UUID | --node N | --pool P | --workload ID\n"
           "                                | --project ID [--from T] [--to T]\n\n"
           "Every GPU you may see, with where it is, its class, the pool's owner and the\n"
           "owner's manager, its cost per GPU-hour, its state (allocated, free, draining, mig,\n"
           "down; unknown for GPUs only the spreadsheet knows) and who uses it now.\n"
           "--org and --manager include everything under them. import reads a spreadsheet\n"
           "saved as CSV (columns GPU, model, node, cluster, site, owner, manager, intended\n"
           "use, environment; any order, header required) and writes nothing unless every\n"
           "row is valid. export writes the same columns.\n");
}

static char *owner_cell(json_t *it)
{
    json_t *o = json_object_get(it, "owner");
    const char *name = json_string_value(json_object_get(o, "name"));
    return xstrdup(name && *name ? name : "-");
}

static int render_inventory(json_t *ans, struct buf *out)
{
    static const char *const header[] = {"UUID",    "NODE",  "CLUSTER", "CLASS", "OWNER",
                                         "MANAGER", "STATE", "USED BY", "SITE"};
    json_t *items = json_object_get(ans, "items"), *it, *states;
    struct table t;
    const char *k;
    json_t *v;
    size_t i;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(items, i, it)
    {
        json_t *used = json_object_get(it, "used_by");
        char *by = json_is_object(used)
                       ? xasprintf("%s (%s)", json_string_value(json_object_get(used, "project")),
                                   json_string_value(json_object_get(used, "priority_class")))
                       : xstrdup("-");
        char *cells[] = {render_cell(json_object_get(it, "uuid")),
                         render_cell(json_object_get(it, "node")),
                         render_cell(json_object_get(it, "cluster")),
                         render_cell(json_object_get(it, "gpu_class")),
                         owner_cell(it),
                         render_cell(json_object_get(it, "manager")),
                         render_cell(json_object_get(it, "state")),
                         by,
                         render_cell(json_object_get(it, "site"))};
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    states = json_object_get(ans, "states");
    rc |= buf_printf(out, "%zu GPUs:", json_array_size(items));
    json_object_foreach(states, k, v)
    {
        rc |= buf_printf(out, " %s %" JSON_INTEGER_FORMAT, k, json_integer_value(v));
    }
    rc |= buf_puts(out, "\n");
    return rc;
}

static int do_import(const char *file)
{
    struct client c;
    struct buf data;
    json_t *ans = NULL;
    int rc = cli_read_file(file, IMPORT_MAX, &data);

    if (rc == CLI_OK) {
        if (client_open(&c) < 0 ||
            client_post_file(&c, "/v1/inventory/import", "text/csv; charset=utf-8",
                             data.data ? data.data : "", data.len, &ans) < 0) {
            rc = client_report(&c);
        } else {
            json_t *unknown = json_object_get(ans, "unknown_columns"), *u;
            size_t i;
            printf("imported %" JSON_INTEGER_FORMAT " rows (%" JSON_INTEGER_FORMAT
                   " new, %" JSON_INTEGER_FORMAT " updated)\n",
                   json_integer_value(json_object_get(ans, "rows")),
                   json_integer_value(json_object_get(ans, "added")),
                   json_integer_value(json_object_get(ans, "updated")));
            json_array_foreach(unknown, i, u)
            {
                cli_warn("column '%s' is not an inventory column: ignored", json_string_value(u));
            }
        }
        json_decref(ans);
        client_release(&c);
    }
    buf_release(&data);
    return rc;
}

static int render_history(json_t *ans, struct buf *out)
{
    static const char *const header[] = {"TIME", "ACTIVITY", "MAX", "MEMORY_MIB", "POWER_W"};
    json_t *points = json_object_get(ans, "points"), *p, *eff = json_object_get(ans, "efficiency");
    struct table t;
    size_t i;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(points, i, p)
    {
        json_t *avg = json_object_get(p, "activity_avg"), *max = json_object_get(p, "activity_max");
        char *cells[] = {
            work_time_short(json_integer_value(json_object_get(p, "t_ms"))),
            json_is_number(avg) ? xasprintf("%.0f%%", json_number_value(avg) * 100) : xstrdup("-"),
            json_is_number(max) ? xasprintf("%.0f%%", json_number_value(max) * 100) : xstrdup("-"),
            xasprintf("%.0f", json_number_value(json_object_get(p, "mem_mib"))),
            xasprintf("%.0f", json_number_value(json_object_get(p, "power_w")))};
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    rc |= buf_printf(out, "%" JSON_INTEGER_FORMAT " GPU(s), %s resolution; efficiency ",
                     json_integer_value(json_object_get(ans, "gpus")),
                     json_string_value(json_object_get(ans, "resolution")));
    rc |= json_is_number(eff)
              ? buf_printf(out, "%.0f%% (busy / allocated)\n", json_number_value(eff) * 100)
              : buf_puts(out, "unknown (no allocated time seen)\n");
    return rc;
}

/*
 * Takes --KEY VALUE for each of keys (into values) and the global flags from
 * argv[i..]; help() on -h. Returns 0 when all were taken, 1 after help, or
 * the usage error.
 */
static int take_flags(int argc, char **argv, int i, const char *const *keys, const char **values,
                      size_t n_keys, void (*help)(void))
{
    int rc;
    while (i < argc) {
        char flag[32];
        bool taken = false;
        if (cli_is_help(argv[i])) {
            help();
            return 1;
        }
        for (size_t k = 0; k < n_keys && !taken; k++) {
            snprintf(flag, sizeof(flag), "--%s", keys[k]);
            rc = cli_take_value_flag("inventory", argc, argv, &i, flag, NULL, &values[k]);
            if (rc < 0 || rc > 1)
                return rc;
            taken = rc == 1;
        }
        if (taken)
            continue;
        rc = cli_take_global_flag("inventory", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("inventory", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    return 0;
}

/* base?key=value&... for the values given, escaped. */
static void query_path(struct buf *path, const char *base, const char *const *keys,
                       const char **values, size_t n_keys)
{
    buf_init(path, 4096);
    buf_puts(path, base);
    for (size_t k = 0; k < n_keys; k++) {
        char *esc;
        if (!values[k])
            continue;
        esc = client_escape(values[k]);
        buf_printf(path, "%c%s=%s", strchr(path->data, '?') ? '&' : '?', keys[k], esc);
        free(esc);
    }
}

static void history_help(void)
{
    printf("usage: gpuaas inventory history (--gpu UUID[,UUID] | --node N | --pool P |\n"
           "                                 --workload ID | --project ID)\n"
           "                                [--from RFC3339] [--to RFC3339]\n\n"
           "GPU activity, memory and power over time (default: the last hour; a\n"
           "workload: its runs) and efficiency, busy / allocated time.\n");
}

static int do_history(int argc, char **argv)
{
    static const char *const keys[] = {"gpu", "node", "pool", "workload", "project", "from", "to"};
    const char *values[ARRAY_SIZE(keys)] = {0};
    struct buf path;
    int rc = take_flags(argc, argv, 2, keys, values, ARRAY_SIZE(keys), history_help);

    if (rc != 0)
        return rc == 1 ? CLI_OK : rc;
    query_path(&path, "/v1/inventory/history", keys, values, ARRAY_SIZE(keys));
    rc = work_show("GET", path.data, NULL, render_history);
    buf_release(&path);
    return rc;
}

/* The states the inventory reports (src/api/inventory.c and src/inventory/classify.c). */
static const char *const gpu_states[] = {"allocated", "busy", "idle-allocated", "free", "draining",
                                         "mig",       "down", "unknown",        NULL};

int cmd_inventory(int argc, char **argv)
{
    static const char *const filters[] = {"org", "manager", "cluster", "class", "state", "owner"};
    const char *values[ARRAY_SIZE(filters)] = {0};
    bool export = false;
    struct buf path;
    int i = 1, rc;

    if (i < argc && strcmp(argv[i], "import") == 0) {
        if (argc == 3 && cli_is_help(argv[2])) {
            inventory_help();
            return CLI_OK;
        }
        if (argc != 3)
            return cli_usage_error("inventory", "inventory import takes one FILE");
        return do_import(argv[2]);
    }
    if (i < argc && strcmp(argv[i], "history") == 0)
        return do_history(argc, argv);
    if (i < argc && strcmp(argv[i], "export") == 0) {
        export = true;
        i++;
    }
    rc = take_flags(argc, argv, i, filters, values, ARRAY_SIZE(filters), inventory_help);
    if (rc != 0)
        return rc == 1 ? CLI_OK : rc;
    /* filters[4] is state: a state the server never reports would match nothing, silently */
    if (values[4] && (rc = cli_check_enum("inventory", "--state", values[4], gpu_states)) != 0)
        return rc;
    query_path(&path, export ? "/v1/inventory/export" : "/v1/inventory", filters, values,
               ARRAY_SIZE(filters));
    rc = export ? work_download(path.data) : work_show("GET", path.data, NULL, render_inventory);
    buf_release(&path);
    return rc;
}
