/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_queue.c: `gpuaas queue`, the queued workloads per project in the
 * order the scheduler will consider them (queue_position), each with the
 * reason it waits.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

#define QUEUE_CELL_MAX 40

static void queue_help(void)
{
    printf("usage: gpuaas queue [--project P]\n\n"
           "Lists queued workloads by project, in queue order (POS, 1 first), with how long\n"
           "each has waited since it was submitted and why it waits. CLASS is P1 (owned)\n"
           "or P2 (opportunistic).\n\n"
           "  --project P    only this project (NAME, ORG/NAME or id)\n");
}

struct entry {
    json_t *w;     /* borrowed */
    char *project; /* its name, owned */
    int64_t project_id, pos, id;
};

static int by_queue_order(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->project, y->project);

    if (c != 0)
        return c;
    if (x->project_id != y->project_id)
        return (x->project_id > y->project_id) - (x->project_id < y->project_id);
    if (x->pos != y->pos)
        return (x->pos > y->pos) - (x->pos < y->pos);
    return (x->id > y->id) - (x->id < y->id);
}

static int render_queue(json_t *items, struct work_names *n, int64_t now, struct buf *out)
{
    static const char *const header[] = {"POS",   "PROJECT", "ID",    "NAME",
                                         "CLASS", "WAITED",  "REASON"};
    size_t count = json_array_size(items);
    struct entry *e = xcalloc(count ? count : 1, sizeof(*e));
    struct table t;
    int rc;

    for (size_t i = 0; i < count; i++) {
        json_t *w = json_array_get(items, i), *pos = json_object_get(w, "queue_position");
        e[i].w = w;
        e[i].project = work_name(n->projects, json_object_get(w, "project_id"));
        e[i].project_id = json_integer_value(json_object_get(w, "project_id"));
        e[i].pos = json_is_integer(pos) ? json_integer_value(pos) : INT64_MAX;
        e[i].id = json_integer_value(json_object_get(w, "id"));
    }
    qsort(e, count, sizeof(*e), by_queue_order);
    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    for (size_t i = 0; i < count; i++) {
        json_t *w = e[i].w;
        int64_t submitted;
        char *pos = render_cell(json_object_get(w, "queue_position"));
        char *id = render_cell(json_object_get(w, "id"));
        char *project = table_cut(e[i].project, QUEUE_CELL_MAX);
        char *name = table_cut(json_string_value(json_object_get(w, "name")), QUEUE_CELL_MAX);
        char *waited = work_time_of(w, "submitted_ms", &submitted) == 0
                           ? work_duration(now - submitted)
                           : NULL;
        const char *cells[] = {
            pos,
            project,
            id,
            name,
            work_class_label(json_string_value(json_object_get(w, "priority_class"))),
            waited,
            json_string_value(json_object_get(w, "reason")),
        };
        table_add_row(&t, cells);
        free(pos);
        free(id);
        free(project);
        free(name);
        free(waited);
    }
    rc = table_render(&t, out);
    table_release(&t);
    for (size_t i = 0; i < count; i++)
        free(e[i].project);
    free(e);
    return rc;
}

int cmd_queue(int argc, char **argv)
{
    struct work_names names;
    struct client c;
    struct buf out;
    json_t *items = NULL;
    const char *project = NULL;
    int64_t project_id = 0;
    char *path;
    int i = 1, rc;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            queue_help();
            return CLI_OK;
        }
        if ((rc = cli_take_global_flag("queue", argc, argv, &i)) != 0 ||
            (rc = cli_take_value_flag("queue", argc, argv, &i, "--project", NULL, &project)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if (argv[i][0] == '-')
            return cli_unknown_flag("queue", argv[i]);
        return cli_usage_error("queue", "unexpected argument '%s'", argv[i]);
    }
    work_names_init(&names);
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (project && (rc = work_project(&c, "queue", project, &project_id)) != 0)
        goto out;
    path = project_id ? xasprintf("/v1/workloads?state=queued&project_id=%" PRId64, project_id)
                      : xstrdup("/v1/workloads?state=queued");
    rc = work_list_all(&c, path, &items);
    free(path);
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole = json_pack("{s:O,s:n}", "items", items, "next_after");
        render_json(whole, &out);
        json_decref(whole);
    } else if (json_array_size(items) > 0) {
        work_names_load(&names, &c, WORK_NAMES_PROJECTS);
        render_queue(items, &names, cli_now_ms(), &out);
    }
    rc = work_flush(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE && json_array_size(items) == 0)
        fprintf(stderr, "no queued workloads\n");
out:
    json_decref(items);
    work_names_release(&names);
    client_release(&c);
    return rc;
}
