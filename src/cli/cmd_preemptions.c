/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_preemptions.c: `gpuaas preemptions [list]` and `gpuaas preemptions
 * show ID`, the preemption ledger: who took capacity back from whom, how
 * long the owner waited for it, and how much work the victims lost.
 * Milli-GPU are shown as GPUs, ms as seconds, GPU-ms as GPU-seconds.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

static void preemptions_help(void)
{
    printf("usage: gpuaas preemptions [list] [--project P]\n"
           "       gpuaas preemptions show ID\n\n"
           "The preemption ledger. list: one line per decision: when it was decided, the\n"
           "preemptor (workload id/project), the victims' workload ids, the GPUs reclaimed,\n"
           "RECLAIM_S (seconds from the decision until the victims released the GPUs; -\n"
           "while they still hold them) and LOST_GPU_S (GPU-seconds of work the victims\n"
           "lost). show: one decision in full, with each victim and each project's quota\n"
           "before and after, in GPUs.\n\n"
           "  --project P    only decisions for this project's work (NAME, ORG/NAME or id)\n");
}

/* v (an integer of thousandths) as units with up to 3 decimals, or "-"; caller frees. */
static char *thousandths(json_t *v)
{
    return json_is_integer(v) ? render_milli(json_integer_value(v)) : xstrdup("-");
}

static char *time_cell(json_t *obj, const char *key, bool full)
{
    int64_t ms;

    if (work_time_of(obj, key, &ms) < 0)
        return xstrdup("-");
    return full ? work_time_rfc3339(ms) : work_time_short(ms);
}

/* "42/ml": the preemptor's workload id and project. */
static char *preemptor_text(json_t *p, struct work_names *n)
{
    char *project = work_name(n->projects, json_object_get(p, "project_id"));
    char *id = render_cell(json_object_get(p, "preemptor_id"));
    char *s = xasprintf("%s/%s", id, project);

    free(project);
    free(id);
    return s;
}

static char *victim_ids(json_t *p)
{
    json_t *victims = json_object_get(p, "victims"), *v;
    struct buf b;
    size_t i;

    if (!json_is_array(victims) || json_array_size(victims) == 0)
        return xstrdup("-");
    buf_init(&b, 1 << 20);
    json_array_foreach(victims, i, v)
    {
        char *id = render_cell(json_object_get(v, "workload_id"));
        buf_printf(&b, "%s%s", i ? "," : "", id);
        free(id);
    }
    return buf_detach(&b, NULL);
}

static int render_ledger(json_t *items, struct work_names *n, struct buf *out)
{
    static const char *const header[] = {"ID",   "DECIDED",   "PREEMPTOR", "VICTIMS",
                                         "GPUS", "RECLAIM_S", "LOST_GPU_S"};
    struct table t;
    size_t i;
    json_t *p;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(items, i, p)
    {
        char *cells[] = {
            render_cell(json_object_get(p, "id")),
            time_cell(p, "decided_ms", false),
            preemptor_text(p, n),
            victim_ids(p),
            thousandths(json_object_get(p, "gpu_milli")),
            thousandths(json_object_get(p, "reclaim_ms")),
            thousandths(json_object_get(p, "gpu_ms_lost")),
        };
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static void add_pair(struct table *t, const char *key, char *value)
{
    const char *cells[2] = {key, value};

    table_add_row(t, cells);
    free(value);
}

/* "none" for a negative or missing limit, else GPUs. */
static char *limit_text(json_t *v)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return xstrdup("none");
    return render_milli(json_integer_value(v));
}

/* The entry of list for project_id, or NULL. */
static json_t *quota_of(json_t *list, json_t *project_id)
{
    size_t i;
    json_t *q;

    json_array_foreach(list, i, q)
    {
        if (json_equal(json_object_get(q, "project_id"), project_id))
            return q;
    }
    return NULL;
}

/* "8" when before and after agree, else "8 -> 4". */
static char *change_text(json_t *before, json_t *after, char *(*fmt)(json_t *))
{
    char *b = fmt(before), *a, *s;

    if (!after || json_equal(before, after))
        return b;
    a = fmt(after);
    s = xasprintf("%s -> %s", b, a);
    free(a);
    free(b);
    return s;
}

static int render_quotas(json_t *p, struct work_names *n, struct buf *out)
{
    static const char *const header[] = {"PROJECT", "USED_BEFORE", "USED_AFTER", "GUARANTEED",
                                         "LIMIT"};
    json_t *before = json_object_get(p, "quota_before"), *after = json_object_get(p, "quota_after");
    json_t *q;
    struct table t;
    size_t i;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(before, i, q)
    {
        json_t *pid = json_object_get(q, "project_id");
        json_t *qa = quota_of(after, pid);
        char *cells[] = {
            work_name(n->projects, pid),
            thousandths(json_object_get(q, "used")),
            qa ? thousandths(json_object_get(qa, "used")) : xstrdup("-"),
            change_text(json_object_get(q, "guaranteed"), json_object_get(qa, "guaranteed"),
                        thousandths),
            change_text(json_object_get(q, "limit"), json_object_get(qa, "limit"), limit_text),
        };
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    /* projects only in the after list, if the server ever sends such */
    json_array_foreach(after, i, q)
    {
        json_t *pid = json_object_get(q, "project_id");
        if (quota_of(before, pid))
            continue;
        char *cells[] = {
            work_name(n->projects, pid),
            xstrdup("-"),
            thousandths(json_object_get(q, "used")),
            thousandths(json_object_get(q, "guaranteed")),
            limit_text(json_object_get(q, "limit")),
        };
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static int render_victims(json_t *p, struct work_names *n, struct buf *out)
{
    static const char *const header[] = {"WORKLOAD", "PROJECT", "GPUS", "LOST_S", "LOST_GPU_S"};
    struct table t;
    size_t i;
    json_t *v;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(json_object_get(p, "victims"), i, v)
    {
        json_t *milli = json_object_get(v, "gpu_milli"), *lost = json_object_get(v, "lost_ms");
        /* milli-GPU x ms = GPU-us; GPU-s with 3 decimals is GPU-ms / 1000 */
        json_t *gpu_ms =
            json_is_integer(milli) && json_is_integer(lost)
                ? json_integer(json_integer_value(milli) * json_integer_value(lost) / 1000)
                : json_null();
        char *cells[] = {
            render_cell(json_object_get(v, "workload_id")),
            work_name(n->projects, json_object_get(v, "project_id")),
            thousandths(milli),
            thousandths(lost),
            thousandths(gpu_ms),
        };
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
        json_decref(gpu_ms);
    }
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

static int render_one(json_t *p, struct work_names *n, struct buf *out)
{
    json_t *reclaim = json_object_get(p, "reclaim_ms");
    struct table t;
    char *s, *id;
    int rc;

    table_init(&t, 2);
    add_pair(&t, "id:", render_cell(json_object_get(p, "id")));
    add_pair(&t, "rule:", render_cell(json_object_get(p, "rule")));
    s = work_name(n->projects, json_object_get(p, "project_id"));
    id = render_cell(json_object_get(p, "preemptor_id"));
    add_pair(&t, "preemptor:", xasprintf("workload %s (project %s)", id, s));
    free(id);
    free(s);
    add_pair(&t, "gpu class:", work_name(n->classes, json_object_get(p, "gpu_class_id")));
    add_pair(&t, "gpus:", thousandths(json_object_get(p, "gpu_milli")));
    s = thousandths(json_object_get(p, "grace_ms"));
    add_pair(&t, "grace:", xasprintf("%s s", s));
    free(s);
    add_pair(&t, "decided:", time_cell(p, "decided_ms", true));
    add_pair(&t, "released:",
             json_is_integer(json_object_get(p, "released_ms"))
                 ? time_cell(p, "released_ms", true)
                 : xstrdup("not yet: the victims still hold the GPUs"));
    if (json_is_integer(reclaim)) {
        s = thousandths(reclaim);
        add_pair(&t, "reclaim:", xasprintf("%s s", s));
        free(s);
    } else {
        add_pair(&t, "reclaim:", xstrdup("-"));
    }
    s = thousandths(json_object_get(p, "gpu_ms_lost"));
    add_pair(&t, "lost:", xasprintf("%s GPU-s", s));
    free(s);
    rc = table_render(&t, out);
    table_release(&t);
    if (rc == 0)
        rc = buf_puts(out, "\nvictims:\n");
    if (rc == 0)
        rc = render_victims(p, n, out);
    if (rc == 0)
        rc = buf_puts(out, "\nquota (GPUs):\n");
    if (rc == 0)
        rc = render_quotas(p, n, out);
    return rc;
}

int cmd_preemptions(int argc, char **argv)
{
    struct work_names names;
    struct client c;
    struct buf out;
    json_t *data = NULL;
    const char *project = NULL, *target = NULL;
    bool show = false;
    int64_t project_id = 0, id = 0;
    char *path;
    int i = 1, rc;

    if (i < argc && (strcmp(argv[i], "list") == 0 || strcmp(argv[i], "ls") == 0)) {
        i++;
    } else if (i < argc && (strcmp(argv[i], "show") == 0 || strcmp(argv[i], "get") == 0)) {
        show = true;
        i++;
    }
    while (i < argc) {
        if (cli_is_help(argv[i])) {
            preemptions_help();
            return CLI_OK;
        }
        if ((rc = cli_take_global_flag("preemptions", argc, argv, &i)) != 0 ||
            (!show && (rc = cli_take_value_flag("preemptions", argc, argv, &i, "--project", NULL,
                                                &project)) != 0)) {
            if (rc != 1)
                return rc;
            continue;
        }
        if (argv[i][0] == '-')
            return cli_usage_error("preemptions", "unknown flag '%s' for 'preemptions %s'", argv[i],
                                   show ? "show" : "list");
        if (!show || target)
            return cli_usage_error("preemptions", "unexpected argument '%s'", argv[i]);
        target = argv[i++];
    }
    if (show && !target)
        return cli_usage_error("preemptions", "'preemptions show' needs the id of a preemption");
    if (show && parse_int64(target, 1, INT64_MAX, &id) < 0)
        return cli_usage_error("preemptions", "'%s' is not a preemption id", target);

    work_names_init(&names);
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (project && (rc = work_project(&c, "preemptions", project, &project_id)) != 0)
        goto out;
    if (show) {
        path = xasprintf("/v1/preemptions/%" PRId64, id);
        rc = client_request(&c, "GET", path, NULL, &data);
    } else {
        path = project_id ? xasprintf("/v1/preemptions?project_id=%" PRId64, project_id)
                          : xstrdup("/v1/preemptions");
        rc = work_list_all(&c, path, &data);
    }
    free(path);
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole =
            show ? json_incref(data) : json_pack("{s:O,s:n}", "items", data, "next_after");
        render_json(whole, &out);
        json_decref(whole);
    } else if (show) {
        work_names_load(&names, &c, WORK_NAMES_PROJECTS | WORK_NAMES_CLASSES);
        render_one(data, &names, &out);
    } else if (json_array_size(data) > 0) {
        work_names_load(&names, &c, WORK_NAMES_PROJECTS);
        render_ledger(data, &names, &out);
    }
    rc = work_flush(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE && !show && json_array_size(data) == 0)
        fprintf(stderr, "no preemptions found\n");
out:
    json_decref(data);
    work_names_release(&names);
    client_release(&c);
    return rc;
}
