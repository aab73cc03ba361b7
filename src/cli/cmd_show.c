/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_show.c: `gpuaas show ID`, one workload in full: its fields, the
 * allocations it held (which GPU of which node, when) and its events, in
 * time order.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

static void show_help(void)
{
    printf("usage: gpuaas show ID\n\n"
           "Shows a workload: its fields (times in UTC, RFC 3339), the allocations it held\n"
           "(node, GPU, share, start, end and why it ended) and its events in time order.\n"
           "-o json prints {\"workload\": ..., \"allocations\": [...], \"events\": [...]} as\n"
           "the server sent them.\n");
}

/* "7 (name)" for a reference whose name is known, else the id; caller frees. */
static char *ref_text(json_t *map, json_t *idv)
{
    char *name = work_name(map, idv);
    char *s;

    if (!json_is_integer(idv) || !work_lookup(map, idv))
        return name;
    s = xasprintf("%" JSON_INTEGER_FORMAT " (%s)", json_integer_value(idv), name);
    free(name);
    return s;
}

static void add_pair(struct table *t, const char *key, char *value)
{
    char *label = xasprintf("%s:", key);
    const char *cells[2] = {label, value};

    table_add_row(t, cells);
    free(label);
    free(value);
}

static int render_fields(json_t *w, struct work_names *n, struct buf *out)
{
    struct table t;
    const char *key;
    json_t *v;
    int rc;

    table_init(&t, 2);
    for (size_t i = 0; i < model_workloads.n_fields; i++) {
        const char *name = model_workloads.fields[i].name;
        size_t len = strlen(name);
        int64_t ms;

        v = json_object_get(w, name);
        if (!v)
            continue;
        if (strcmp(name, "project_id") == 0) {
            add_pair(&t, name, ref_text(n->projects, v));
        } else if (strcmp(name, "flavor_id") == 0) {
            add_pair(&t, name, ref_text(n->flavors, v));
        } else if (strcmp(name, "priority_class") == 0 && json_is_string(v)) {
            add_pair(
                &t, name,
                xasprintf("%s (%s)", json_string_value(v), work_class_label(json_string_value(v))));
        } else if (len > 3 && strcmp(name + len - 3, "_ms") == 0 && json_is_integer(v)) {
            /* submitted_ms: shown as a time, under its name without _ms */
            char *key_s = xstrndup(name, len - 3);
            work_time_of(w, name, &ms);
            add_pair(&t, key_s, work_time_rfc3339(ms));
            free(key_s);
        } else {
            add_pair(&t, name, render_cell(v));
        }
    }
    json_object_foreach(w, key, v)
    {
        if (model_field_index(&model_workloads, key) < 0)
            add_pair(&t, key, render_cell(v));
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

/* The GPU of an allocation: its index on the node, else its id; "-" for none. */
static char *gpu_text(struct work_names *n, json_t *gpu_id)
{
    json_t *gpu = work_lookup(n->gpus, gpu_id);
    json_t *index = json_object_get(gpu, "index");

    if (json_is_integer(index))
        return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(index));
    return render_cell(gpu_id);
}

static char *end_text(json_t *obj, const char *key)
{
    int64_t ms;
    return work_time_of(obj, key, &ms) == 0 ? work_time_short(ms) : xstrdup("now");
}

static int render_allocations(json_t *allocs, struct work_names *n, struct buf *out)
{
    static const char *const header[] = {"REPLICA", "NODE", "GPU",       "GPUS",
                                         "START",   "END",  "END_REASON"};
    struct table t;
    size_t i;
    json_t *a;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(allocs, i, a)
    {
        json_t *milli = json_object_get(a, "milli");
        int64_t ms = 0;
        char *replica = render_cell(json_object_get(a, "replica"));
        char *node = work_name(n->nodes, json_object_get(a, "node_id"));
        char *gpu = gpu_text(n, json_object_get(a, "gpu_id"));
        char *gpus = json_is_integer(milli) ? render_milli(json_integer_value(milli)) : NULL;
        char *start = work_time_of(a, "started_ms", &ms) == 0 ? work_time_short(ms) : NULL;
        char *end = end_text(a, "ended_ms");
        const char *cells[] = {replica,
                               node,
                               gpu,
                               gpus,
                               start,
                               end,
                               json_string_value(json_object_get(a, "end_reason"))};
        table_add_row(&t, cells);
        free(replica);
        free(node);
        free(gpu);
        free(gpus);
        free(start);
        free(end);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static int by_time(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t tx = json_integer_value(json_object_get(x, "at_ms"));
    json_int_t ty = json_integer_value(json_object_get(y, "at_ms"));
    json_int_t ix = json_integer_value(json_object_get(x, "id"));
    json_int_t iy = json_integer_value(json_object_get(y, "id"));

    if (tx != ty)
        return (tx > ty) - (tx < ty);
    return (ix > iy) - (ix < iy);
}

static int render_events(json_t *events, struct buf *out)
{
    static const char *const header[] = {"TIME", "TYPE", "MESSAGE"};
    size_t n = json_array_size(events);
    json_t **v = xcalloc(n ? n : 1, sizeof(*v));
    struct table t;
    int rc;

    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(events, i);
    qsort(v, n, sizeof(*v), by_time);
    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    for (size_t i = 0; i < n; i++) {
        int64_t ms = 0;
        char *time = work_time_of(v[i], "at_ms", &ms) == 0 ? work_time_short(ms) : NULL;
        const char *cells[] = {time, json_string_value(json_object_get(v[i], "type")),
                               json_string_value(json_object_get(v[i], "message"))};
        table_add_row(&t, cells);
        free(time);
    }
    free(v);
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static int render_show(json_t *w, json_t *allocs, json_t *events, struct work_names *n,
                       struct buf *out)
{
    int rc = render_fields(w, n, out);

    if (rc == 0)
        rc = buf_puts(out, "\nallocations:\n");
    if (rc == 0 && json_array_size(allocs) == 0)
        rc = buf_puts(out, "  none\n");
    else if (rc == 0)
        rc = render_allocations(allocs, n, out);
    if (rc == 0)
        rc = buf_puts(out, "\nevents:\n");
    if (rc == 0 && json_array_size(events) == 0)
        rc = buf_puts(out, "  none\n");
    else if (rc == 0)
        rc = render_events(events, out);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    struct work_names names;
    struct client c;
    struct buf out;
    json_t *w = NULL, *allocs = NULL, *events = NULL;
    const char *target = NULL;
    int64_t id = 0;
    char *path;
    int i = 1, rc;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            show_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("show", argc, argv, &i);
        if (rc == 1)
            continue;
        if (rc != 0)
            return rc;
        if (argv[i][0] == '-')
            return cli_usage_error("show", "unknown flag '%s' for 'show'", argv[i]);
        if (target)
            return cli_usage_error("show", "'show' takes one workload id, not '%s' too", argv[i]);
        target = argv[i++];
    }
    if (!target)
        return cli_usage_error("show", "'show' needs a workload id; 'gpuaas ps' lists them");
    if (parse_int64(target, 1, INT64_MAX, &id) < 0)
        return cli_usage_error("show", "'%s' is not a workload id", target);

    work_names_init(&names);
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    path = xasprintf("/v1/workloads/%" PRId64, id);
    rc = client_request(&c, "GET", path, NULL, &w);
    free(path);
    if (rc >= 0) {
        path = xasprintf("/v1/allocations?workload_id=%" PRId64, id);
        rc = work_list_all(&c, path, &allocs);
        free(path);
    }
    if (rc >= 0) {
        path = xasprintf("/v1/events?workload_id=%" PRId64, id);
        rc = work_list_all(&c, path, &events);
        free(path);
    }
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole =
            json_pack("{s:O,s:O,s:O}", "workload", w, "allocations", allocs, "events", events);
        render_json(whole, &out);
        json_decref(whole);
    } else {
        work_names_load(&names, &c,
                        WORK_NAMES_PROJECTS | WORK_NAMES_FLAVORS |
                            (json_array_size(allocs) ? WORK_NAMES_NODES | WORK_NAMES_GPUS : 0));
        render_show(w, allocs, events, &names, &out);
    }
    rc = work_flush(&out);
out:
    json_decref(w);
    json_decref(allocs);
    json_decref(events);
    work_names_release(&names);
    client_release(&c);
    return rc;
}
