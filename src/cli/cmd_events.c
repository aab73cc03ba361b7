/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_events.c: `gpuaas events`, what happened to workloads (submitted,
 * admitted, preempting, requeued, ...) in time order, the latest last; with
 * -f it then follows new events as the server streams them (server-sent
 * events on /v1/events), one line each, until interrupted.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

#define EVENTS_DEFAULT_N 50

static void events_help(void)
{
    printf("usage: gpuaas events [--workload ID] [--project P] [-n N] [-f]\n\n"
           "Shows workload events in time order, the latest last: every state change and\n"
           "scheduling decision, with its message.\n\n"
           "  -f, --follow     then print new events as they happen, until interrupted\n"
           "  --workload ID    only this workload's events\n"
           "  --project P      only this project's (NAME, ORG/NAME or id)\n"
           "  -n, --lines N    the last N events (default %d; 0 for all)\n",
           EVENTS_DEFAULT_N);
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

/* The last n of items (0: all) in time order, as a new array. */
static json_t *last_events(json_t *items, size_t n)
{
    size_t count = json_array_size(items), from;
    json_t **v = xcalloc(count ? count : 1, sizeof(*v));
    json_t *out = json_array();

    for (size_t i = 0; i < count; i++)
        v[i] = json_array_get(items, i);
    qsort(v, count, sizeof(*v), by_time);
    from = n && count > n ? count - n : 0;
    for (size_t i = from; i < count; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

static int render_events(json_t *events, struct buf *out)
{
    static const char *const header[] = {"TIME", "WORKLOAD", "TYPE", "MESSAGE"};
    struct table t;
    size_t i;
    json_t *e;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(events, i, e)
    {
        int64_t ms = 0;
        char *time = work_time_of(e, "at_ms", &ms) == 0 ? work_time_short(ms) : NULL;
        char *workload = render_cell(json_object_get(e, "workload_id"));
        const char *cells[] = {time, workload, json_string_value(json_object_get(e, "type")),
                               json_string_value(json_object_get(e, "message"))};
        table_add_row(&t, cells);
        free(time);
        free(workload);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

/* One streamed event as a line (or its JSON with -o json), printed at once. */
static int print_streamed(void *ctx, const char *id, const char *type, const char *data)
{
    int64_t *last_id = ctx, ms = 0;
    json_t *e = json_loads(data, 0, NULL);

    parse_int64(id, 0, INT64_MAX, last_id);
    if (!e)
        return 0;
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        char *text = json_dumps(e, JSON_COMPACT);
        printf("%s\n", text ? text : "{}");
        free(text);
    } else {
        const char *m = json_string_value(json_object_get(e, "message"));
        char *time = work_time_of(e, "at_ms", &ms) == 0 ? work_time_short(ms) : xstrdup("-");
        char *workload = render_cell(json_object_get(e, "workload_id"));
        char *msg = table_cut(m ? m : "", 0), *kind = table_cut(type, 0);
        printf("%s  %s  %s  %s\n", time, workload, kind, msg);
        free(time);
        free(workload);
        free(msg);
        free(kind);
    }
    json_decref(e);
    return fflush(stdout) == 0 ? 0 : -1;
}

/*
 * Follows the stream from after the last event shown. The server ends a
 * stream after a while (so that it checks the token again): go on from the
 * last event received. Returns only on an error.
 */
static int follow(struct client *c, int64_t project_id, int64_t workload_id, int64_t last_id)
{
    for (;;) {
        char path[160];
        int n = snprintf(path, sizeof(path), "/v1/events?after=%" PRId64, last_id);
        if (project_id)
            n += snprintf(path + n, sizeof(path) - (size_t)n, "&project_id=%" PRId64, project_id);
        if (workload_id)
            snprintf(path + n, sizeof(path) - (size_t)n, "&workload_id=%" PRId64, workload_id);
        if (client_stream(c, path, print_streamed, &last_id) < 0)
            return client_report(c);
    }
}

int cmd_events(int argc, char **argv)
{
    struct client c;
    struct buf out;
    json_t *items = NULL, *shown = NULL;
    const char *project = NULL, *workload = NULL, *v;
    int64_t project_id = 0, workload_id = 0, n = EVENTS_DEFAULT_N, last_id = 0;
    bool following = false;
    char *path;
    int i = 1, rc;

    if (i < argc && (strcmp(argv[i], "list") == 0 || strcmp(argv[i], "ls") == 0))
        i++;
    while (i < argc) {
        if (cli_is_help(argv[i])) {
            events_help();
            return CLI_OK;
        }
        if ((rc = cli_take_global_flag("events", argc, argv, &i)) != 0 ||
            (rc = cli_take_value_flag("events", argc, argv, &i, "--project", NULL, &project)) !=
                0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("events", argc, argv, &i, "--workload", NULL, &workload))) {
            if (rc != 1)
                return rc;
            if (parse_int64(workload, 1, INT64_MAX, &workload_id) < 0)
                return cli_usage_error("events", "--workload must be a workload id, not '%s'",
                                       workload);
            continue;
        }
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            following = true;
            i++;
            continue;
        }
        if ((rc = cli_take_value_flag("events", argc, argv, &i, "--lines", "-n", &v))) {
            if (rc != 1)
                return rc;
            if (parse_int64(v, 0, 1000000, &n) < 0)
                return cli_usage_error("events", "-n must be a number from 0 to 1000000, not '%s'",
                                       v);
            continue;
        }
        if (argv[i][0] == '-')
            return cli_unknown_flag("events", argv[i]);
        return cli_usage_error("events", "unexpected argument '%s'", argv[i]);
    }
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (project && (rc = work_project(&c, "events", project, &project_id)) != 0)
        goto out;
    if (workload_id && project_id)
        path = xasprintf("/v1/events?workload_id=%" PRId64 "&project_id=%" PRId64, workload_id,
                         project_id);
    else if (workload_id)
        path = xasprintf("/v1/events?workload_id=%" PRId64, workload_id);
    else if (project_id)
        path = xasprintf("/v1/events?project_id=%" PRId64, project_id);
    else
        path = xstrdup("/v1/events");
    rc = work_list_all(&c, path, &items);
    free(path);
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    shown = last_events(items, (size_t)n);
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole = json_pack("{s:O,s:n}", "items", shown, "next_after");
        render_json(whole, &out);
        json_decref(whole);
    } else if (json_array_size(shown) > 0) {
        render_events(shown, &out);
    }
    rc = work_flush(&out);
    if (following && rc == CLI_OK) {
        size_t k;
        json_t *e;
        json_array_foreach(items, k, e)
        {
            int64_t id = json_integer_value(json_object_get(e, "id"));
            if (id > last_id)
                last_id = id;
        }
        rc = follow(&c, project_id, workload_id, last_id);
        goto out;
    }
    if (cli_opts.output == CLI_OUTPUT_TABLE && json_array_size(shown) == 0)
        fprintf(stderr, "no events found\n");
    else if (cli_opts.output == CLI_OUTPUT_TABLE && json_array_size(shown) < json_array_size(items))
        fprintf(stderr, "(the last %zu of %zu events; -n 0 shows all)\n", json_array_size(shown),
                json_array_size(items));
out:
    json_decref(items);
    json_decref(shown);
    client_release(&c);
    return rc;
}
