/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_timeline.c: `gpuaas timeline`, who held which GPU when: one line per
 * allocation, by node, GPU and start, with P1/P2 and preemptions marked.
 * Node, GPU and project names come from one list each.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/table.h"
#include "cli/work.h"

static void timeline_help(void)
{
    printf("usage: gpuaas timeline [--project P] [--node NAME|ID] [--since DUR]\n\n"
           "Who held which GPU when: one line per allocation, sorted by node, GPU and\n"
           "start. NODE is CLUSTER/NODE (one project's work may span clusters). GPU is the\n"
           "device's index on its node, with the share held when it is less than a whole\n"
           "GPU (\"0 (0.5)\"). CLASS is P1 (owned) or P2 (opportunistic).\n"
           "END is \"now\" while the GPU is still held; allocations that ended because\n"
           "their work was preempted are marked \"preempted\".\n\n"
           "  --project P       only this project's work (NAME, ORG/NAME or id)\n"
           "  --node NODE       only this node (NAME, CLUSTER/NAME or id)\n"
           "  --since DUR       only what was held during the last DUR (90s, 15m, 2h, 7d)\n");
}

/* "CLUSTER/NODE" (node names are unique only within a cluster); caller frees. */
static char *node_label(struct work_names *n, json_t *node_id)
{
    char *node = work_name(n->nodes, node_id);
    json_t *obj = work_lookup(n->nodes, node_id);
    char *cluster, *label;

    if (!obj)
        return node;
    cluster = work_name(n->clusters, json_object_get(obj, "cluster_id"));
    label = xasprintf("%s/%s", cluster, node);
    free(cluster);
    free(node);
    return label;
}

struct slot {
    json_t *a;  /* the allocation, borrowed */
    char *node; /* owned */
    int64_t node_id, gpu, start, id;
};

static int by_place_and_time(const void *x, const void *y)
{
    const struct slot *a = x, *b = y;
    int c = strcmp(a->node, b->node);

    if (c != 0)
        return c;
#define CMP(f)                                                                                     \
    if (a->f != b->f)                                                                              \
        return (a->f > b->f) - (a->f < b->f);
    CMP(node_id)
    CMP(gpu)
    CMP(start)
    CMP(id)
#undef CMP
    return 0;
}

/* The GPU's index on its node, or -1 when unknown (its id is shown then). */
static int64_t gpu_index(struct work_names *n, json_t *gpu_id)
{
    json_t *index = json_object_get(work_lookup(n->gpus, gpu_id), "index");
    return json_is_integer(index) ? json_integer_value(index) : -1;
}

static char *gpu_text(struct work_names *n, json_t *a)
{
    json_t *gpu_id = json_object_get(a, "gpu_id"), *milli = json_object_get(a, "milli");
    int64_t index = gpu_index(n, gpu_id);
    char *base, *s;

    if (!json_is_integer(gpu_id))
        return xstrdup("-");
    base = index >= 0 ? xasprintf("%" PRId64, index)
                      : xasprintf("id %" JSON_INTEGER_FORMAT, json_integer_value(gpu_id));
    if (!json_is_integer(milli) || json_integer_value(milli) >= 1000)
        return base;
    s = render_milli(json_integer_value(milli));
    {
        char *both = xasprintf("%s (%s)", base, s);
        free(base);
        free(s);
        return both;
    }
}

static int render_timeline(json_t *allocs, struct work_names *n, int64_t now, struct buf *out)
{
    static const char *const header[] = {"NODE",  "GPU", "WORKLOAD", "PROJECT", "CLASS",
                                         "START", "END", "DURATION", "NOTE"};
    size_t count = json_array_size(allocs), n_slots = 0;
    struct slot *s = xcalloc(count ? count : 1, sizeof(*s));
    struct table t;
    int rc;

    for (size_t i = 0; i < count; i++) {
        json_t *a = json_array_get(allocs, i);
        s[n_slots].a = a;
        s[n_slots].node = node_label(n, json_object_get(a, "node_id"));
        s[n_slots].node_id = json_integer_value(json_object_get(a, "node_id"));
        s[n_slots].gpu = json_is_integer(json_object_get(a, "gpu_id"))
                             ? gpu_index(n, json_object_get(a, "gpu_id"))
                             : INT64_MAX;
        if (s[n_slots].gpu < 0) /* unknown index: after the known ones, by id */
            s[n_slots].gpu = INT64_MAX / 2 + json_integer_value(json_object_get(a, "gpu_id"));
        if (work_time_of(a, "started_ms", &s[n_slots].start) < 0)
            s[n_slots].start = 0;
        s[n_slots].id = json_integer_value(json_object_get(a, "id"));
        n_slots++;
    }
    qsort(s, n_slots, sizeof(*s), by_place_and_time);
    table_init(&t, ARRAY_SIZE(header));
    t.blank_empty = true;
    table_add_row(&t, header);
    for (size_t i = 0; i < n_slots; i++) {
        json_t *a = s[i].a;
        const char *reason = json_string_value(json_object_get(a, "end_reason"));
        bool held = work_time_of(a, "ended_ms", &(int64_t){0}) < 0;
        int64_t end = now, start = s[i].start;
        char *gpu, *workload, *project, *start_s, *end_s, *dur;

        if (!held)
            work_time_of(a, "ended_ms", &end);
        gpu = gpu_text(n, a);
        workload = render_cell(json_object_get(a, "workload_id"));
        project = work_name(n->projects, json_object_get(a, "project_id"));
        start_s = start ? work_time_short(start) : xstrdup("-");
        end_s = held ? xstrdup("now") : work_time_short(end);
        dur = start ? work_duration(end - start) : xstrdup("-");
        {
            const char *cells[] = {
                s[i].node,
                gpu,
                workload,
                project,
                work_class_label(json_string_value(json_object_get(a, "priority_class"))),
                start_s,
                end_s,
                dur,
                reason && strcmp(reason, "preempted") == 0 ? "preempted" : "",
            };
            table_add_row(&t, cells);
        }
        free(gpu);
        free(workload);
        free(project);
        free(start_s);
        free(end_s);
        free(dur);
    }
    rc = table_render(&t, out);
    table_release(&t);
    for (size_t i = 0; i < n_slots; i++)
        free(s[i].node);
    free(s);
    return rc;
}

/* The allocations held at some time since since_ms (all when 0), as a new array. */
static json_t *held_since(json_t *allocs, int64_t since_ms)
{
    json_t *kept = json_array(), *a;
    size_t i;

    json_array_foreach(allocs, i, a)
    {
        int64_t end;
        if (since_ms && work_time_of(a, "ended_ms", &end) == 0 && end < since_ms)
            continue;
        json_array_append(kept, a);
    }
    return kept;
}

static int resolve_node(struct client *c, const char *word, int64_t *ret_id)
{
    char err[512];
    int rc = resolve_id(c, &model_nodes, word, ret_id, err, sizeof(err));

    if (rc == 0)
        return 0;
    if (rc == ERR_INVALID)
        return cli_usage_error("timeline", "--node: %s", err);
    if (rc == ERR_IO)
        return client_report(c);
    cli_error("--node: %s", err);
    cli_hint("'gpuaas nodes list' shows the nodes");
    return CLI_ERROR;
}

int cmd_timeline(int argc, char **argv)
{
    struct work_names names;
    struct client c;
    struct buf out;
    json_t *all = NULL, *items = NULL;
    const char *project = NULL, *node = NULL, *since = NULL;
    int64_t project_id = 0, node_id = 0, since_s = 0, now = cli_now_ms();
    char *path;
    int i = 1, rc;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            timeline_help();
            return CLI_OK;
        }
        if ((rc = cli_take_global_flag("timeline", argc, argv, &i)) != 0 ||
            (rc = cli_take_value_flag("timeline", argc, argv, &i, "--project", NULL, &project)) !=
                0 ||
            (rc = cli_take_value_flag("timeline", argc, argv, &i, "--node", NULL, &node)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("timeline", argc, argv, &i, "--since", NULL, &since))) {
            if (rc != 1 || (rc = work_parse_duration("timeline", "--since", since, 1,
                                                     100LL * 365 * 86400, &since_s)) != 0)
                return rc;
            continue;
        }
        if (argv[i][0] == '-')
            return cli_unknown_flag("timeline", argv[i]);
        return cli_usage_error("timeline", "unexpected argument '%s'", argv[i]);
    }
    if (node && !*node)
        return cli_usage_error("timeline", "--node is empty");
    work_names_init(&names);
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (project && (rc = work_project(&c, "timeline", project, &project_id)) != 0)
        goto out;
    if (node && (rc = resolve_node(&c, node, &node_id)) != 0)
        goto out;
    if (project_id && node_id)
        path = xasprintf("/v1/allocations?project_id=%" PRId64 "&node_id=%" PRId64, project_id,
                         node_id);
    else if (project_id)
        path = xasprintf("/v1/allocations?project_id=%" PRId64, project_id);
    else if (node_id)
        path = xasprintf("/v1/allocations?node_id=%" PRId64, node_id);
    else
        path = xstrdup("/v1/allocations");
    rc = work_list_all(&c, path, &all);
    free(path);
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    items = held_since(all, since_s ? now - since_s * 1000 : 0);
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole = json_pack("{s:O,s:n}", "items", items, "next_after");
        render_json(whole, &out);
        json_decref(whole);
    } else if (json_array_size(items) > 0) {
        work_names_load(&names, &c,
                        WORK_NAMES_PROJECTS | WORK_NAMES_NODES | WORK_NAMES_GPUS |
                            WORK_NAMES_CLUSTERS);
        render_timeline(items, &names, now, &out);
    }
    rc = work_flush(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE && json_array_size(items) == 0)
        fprintf(stderr, "no allocations found\n");
out:
    json_decref(all);
    json_decref(items);
    work_names_release(&names);
    client_release(&c);
    return rc;
}
