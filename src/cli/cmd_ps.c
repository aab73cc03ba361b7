/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_ps.c: `gpuaas ps`, the caller's workloads as a table. By default only
 * unfinished work (queued, running, preempting), fetched with one list per
 * state; project and flavor names come from one list each.
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

#define PS_CELL_MAX 20

static const char *const unfinished[] = {"queued", "admitted", "running", "preempting"};

static void ps_help(void)
{
    printf("usage: gpuaas ps [--project P] [--user U] [--state STATE] [--all] [--limit N]\n\n"
           "Lists workloads you can see: by default the unfinished ones (queued, running,\n"
           "preempting), oldest first. AGE/RUNTIME is how long queued work has waited since\n"
           "it was submitted, and how long other work has run. CLASS is P1 (owned), P2\n"
           "(opportunistic) or auto (P1 within the guarantee, else P2; REASON says which).\n"
           "REASON says why queued work waits, or how work ended; at a terminal long cells\n"
           "are cut to fit (-o wide shows them whole), in a pipe never.\n\n"
           "  --project P      only this project (NAME, ORG/NAME or id)\n"
           "  --user U         only work this user submitted (NAME or id)\n"
           "  --state STATE    only this state: queued, running, preempting, succeeded,\n"
           "                   failed, cancelled or preempted\n"
           "  -a, --all        every state, finished work included\n"
           "  --limit N        only the newest N\n");
}

static int by_id(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "id"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "id"));
    return (x > y) - (x < y);
}

/* How long it waited (queued) or ran (the rest); caller frees. */
static char *age_or_runtime(json_t *w, int64_t now)
{
    const char *state = json_string_value(json_object_get(w, "state"));
    int64_t start, end;

    if (!state)
        return xstrdup("-");
    if (strcmp(state, "queued") == 0)
        return work_time_of(w, "submitted_ms", &start) == 0 ? work_duration(now - start)
                                                            : xstrdup("-");
    if (work_time_of(w, "started_at", &start) < 0)
        return xstrdup("-");
    if (strcmp(state, "running") == 0 || strcmp(state, "preempting") == 0 ||
        strcmp(state, "admitted") == 0)
        return work_duration(now - start);
    return work_time_of(w, "finished_at", &end) == 0 ? work_duration(end - start) : xstrdup("-");
}

static int render_ps(json_t *items, struct work_names *n, int64_t now, struct buf *out)
{
    static const char *const header[] = {"ID",       "NAME",  "PROJECT",     "FLAVOR", "CLASS",
                                         "REPLICAS", "STATE", "AGE/RUNTIME", "REASON"};
    size_t cell_max = cli_cut_cells() ? PS_CELL_MAX : 0;
    struct table t;
    size_t i;
    json_t *w;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(items, i, w)
    {
        char *id = render_cell(json_object_get(w, "id"));
        char *name = table_cut(json_string_value(json_object_get(w, "name")), cell_max);
        char *project = work_name(n->projects, json_object_get(w, "project_id"));
        char *flavor = work_name(n->flavors, json_object_get(w, "flavor_id"));
        char *project_cut = table_cut(project, cell_max);
        char *flavor_cut = table_cut(flavor, cell_max);
        char *replicas = render_cell(json_object_get(w, "replicas"));
        char *age = age_or_runtime(w, now);
        const char *cells[] = {
            id,
            name,
            project_cut,
            flavor_cut,
            work_class_label(json_string_value(json_object_get(w, "priority_class"))),
            replicas,
            json_string_value(json_object_get(w, "state")),
            age,
            json_string_value(json_object_get(w, "reason")),
        };
        table_add_row(&t, cells);
        free(id);
        free(name);
        free(project);
        free(flavor);
        free(project_cut);
        free(flavor_cut);
        free(replicas);
        free(age);
    }
    if (cell_max)
        table_fit_column(&t, t.n_cols - 1, WORK_LINE_WIDTH);
    rc = table_render(&t, out);
    table_release(&t);
    return rc;
}

struct ps_args {
    const char *project, *user, *state;
    bool all;
    int64_t limit;
};

static int parse_ps(struct ps_args *a, int argc, char **argv)
{
    int i = 1, rc;
    const char *v;

    while (i < argc) {
        const char *arg = argv[i];
        if (cli_is_help(arg)) {
            ps_help();
            return -1;
        }
        if ((rc = cli_take_global_flag("ps", argc, argv, &i)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("ps", argc, argv, &i, "--project", NULL, &a->project))) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("ps", argc, argv, &i, "--user", NULL, &a->user))) {
            if (rc != 1)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("ps", argc, argv, &i, "--state", NULL, &a->state))) {
            if (rc != 1)
                return rc;
            if ((rc = cli_check_enum("ps", "--state", a->state, model_workload_states)) != 0)
                return rc;
            continue;
        }
        if ((rc = cli_take_value_flag("ps", argc, argv, &i, "--limit", NULL, &v))) {
            if (rc != 1)
                return rc;
            if (parse_int64(v, 1, 1000000, &a->limit) < 0)
                return cli_usage_error("ps", "--limit must be a number from 1 to 1000000, not '%s'",
                                       v);
            continue;
        }
        if (strcmp(arg, "--all") == 0 || strcmp(arg, "-a") == 0) {
            a->all = true;
            i++;
            continue;
        }
        if (arg[0] == '-')
            return cli_unknown_flag("ps", arg);
        return cli_usage_error("ps", "unexpected argument '%s'", arg);
    }
    return 0;
}

/* Every workload of the states asked for, oldest first, in *ret (a new array). */
static int fetch(struct client *c, const struct ps_args *a, const char *filter, json_t **ret)
{
    const char *const *states = unfinished;
    size_t n_states = ARRAY_SIZE(unfinished);
    const char *one[1] = {a->state};
    json_t *all = json_array();
    json_t **v;
    size_t n;

    if (a->state) {
        states = one;
        n_states = 1;
    } else if (a->all) {
        states = one; /* one list, no state filter */
        n_states = 1;
    }
    for (size_t s = 0; s < n_states; s++) {
        json_t *items = NULL;
        char *path;
        int rc;

        /* filter is "" or "&key=value..." */
        if (states[s])
            path = xasprintf("/v1/workloads?%s%sstate=%s", *filter ? filter + 1 : "",
                             *filter ? "&" : "", states[s]);
        else if (*filter)
            path = xasprintf("/v1/workloads?%s", filter + 1);
        else
            path = xstrdup("/v1/workloads");
        rc = work_list_all(c, path, &items);
        free(path);
        if (rc < 0) {
            json_decref(all);
            return -1;
        }
        json_array_extend(all, items);
        json_decref(items);
    }
    /* the states' lists interleave: put them back in id order */
    n = json_array_size(all);
    v = xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(all, i));
    qsort(v, n, sizeof(*v), by_id);
    json_array_clear(all);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(all, v[i]);
    free(v);
    *ret = all;
    return 0;
}

/* The id of the user --user names; prints why not and returns the exit code. */
static int find_user(struct client *c, const char *word, int64_t *ret_id)
{
    char err[512];
    int rc = resolve_id(c, &model_users, word, ret_id, err, sizeof(err));

    if (rc == ERR_IO)
        return client_report(c);
    if (rc == ERR_INVALID)
        return cli_usage_error("ps", "--user: %s", err);
    if (rc < 0) {
        cli_error("--user: %s", err);
        return CLI_ERROR;
    }
    return 0;
}

int cmd_ps(int argc, char **argv)
{
    struct ps_args a;
    struct work_names names;
    struct client c;
    struct buf out;
    json_t *items = NULL;
    int64_t project_id = 0, user_id = 0;
    struct buf filter;
    size_t n_all = 0;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = parse_ps(&a, argc, argv);
    if (rc != 0)
        return rc < 0 ? CLI_OK : rc;
    work_names_init(&names);
    buf_init(&filter, 1024);
    buf_puts(&filter, "");
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    if (a.project && (rc = work_project(&c, "ps", a.project, &project_id)) != 0)
        goto out;
    if (a.user && (rc = find_user(&c, a.user, &user_id)) != 0)
        goto out;
    if (project_id)
        buf_printf(&filter, "&project_id=%" PRId64, project_id);
    if (user_id)
        buf_printf(&filter, "&user_id=%" PRId64, user_id);
    if (fetch(&c, &a, filter.data, &items) < 0) {
        rc = client_report(&c);
        goto out;
    }
    n_all = json_array_size(items);
    if (a.limit && n_all > (size_t)a.limit) {
        /* the newest N */
        json_t *newest = json_array();
        for (size_t i = n_all - (size_t)a.limit; i < n_all; i++)
            json_array_append(newest, json_array_get(items, i));
        json_decref(items);
        items = newest;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *whole = json_pack("{s:O,s:n}", "items", items, "next_after");
        render_json(whole, &out);
        json_decref(whole);
    } else if (json_array_size(items) > 0) {
        work_names_load(&names, &c, WORK_NAMES_PROJECTS | WORK_NAMES_FLAVORS);
        render_ps(items, &names, cli_now_ms(), &out);
    }
    rc = work_flush(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE) {
        if (n_all == 0)
            fprintf(stderr, "no %sworkloads found%s\n", a.state || a.all ? "" : "unfinished ",
                    a.state || a.all ? "" : "; --all shows finished ones too");
        else if (json_array_size(items) < n_all)
            fprintf(stderr, "(the newest %zu of %zu shown; raise --limit to see more)\n",
                    json_array_size(items), n_all);
    }
out:
    buf_release(&filter);
    json_decref(items);
    work_names_release(&names);
    client_release(&c);
    return rc;
}
