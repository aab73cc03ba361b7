/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_share.c: `gpuaas share`, the fair-share view (as Slurm's sshare):
 * per project and GPU class what it is guaranteed and holds, how much of it
 * is borrowed, and its share of the class's borrowed capacity for its
 * weight, which is how the scheduler orders projects for idle GPUs: the
 * lowest dominant share for its weight goes next (sched/share.c). With the
 * decayed fair share (gpuaasd --fair-share decayed) the quotas carry each
 * project's decayed past usage: DECAYED shows it, and the share adds its
 * average to what the project borrows now, as the scheduler's key does.
 * Read from the quotas (with the effective guarantee), the projects, the
 * capacity and the open allocations: figures of the moment, of what the
 * caller may see.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

static void share_help(void)
{
    printf("usage: gpuaas share\n\n"
           "Shows, per project and GPU class you may see: the project's weight, its guarantee\n"
           "(set, or what its pools own), limit, what it holds as owned (P1) and opportunistic\n"
           "(P2) work, how much of that is borrowed (beyond the guarantee), and that as a\n"
           "share of the class's GPUs for its weight. NEXT orders the projects as the scheduler\n"
           "does for idle GPUs beyond guarantees: the lowest share for its weight (over its\n"
           "classes) first, then the lower project id. Amounts are GPUs.\n\n"
           "When the daemon runs the decayed fair share (fair-share = decayed), DECAYED is the\n"
           "project's past opportunistic usage of the class in GPU-hours, each hour counting\n"
           "half as much per half-life since, and SHARE adds that usage as GPUs held on\n"
           "average over about the last half-life to what the project borrows now.\n");
}

struct share_row {
    json_t *quota;
    int64_t project_id, class_id, weight, guaranteed, limit, p1, p2, capacity;
    int64_t decayed_milli_hours, decayed_average; /* -1: the current rule */
    double share; /* (borrowed + decayed average) / capacity / weight, this class */
    int next;     /* the project's place for idle GPUs, from 1 */
};

static int64_t int_at(json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static json_t *find_by(json_t *items, const char *key, int64_t value)
{
    size_t i;
    json_t *x;
    json_array_foreach(items, i, x)
    {
        if (int_at(x, key) == value)
            return x;
    }
    return NULL;
}

static char *gpus_cell(int64_t milli)
{
    return render_milli(milli);
}

int cmd_share(int argc, char **argv)
{
    struct client c;
    struct work_names names;
    json_t *quotas = NULL, *projects = NULL, *allocs = NULL, *caps = NULL;
    struct share_row *rows = NULL;
    size_t n = 0, i;
    json_t *q;
    struct buf out;
    int rc = 0;
    bool decayed = false;

    for (int k = 1; k < argc;) {
        if (cli_is_help(argv[k])) {
            share_help();
            return CLI_OK;
        }
        if ((rc = cli_take_global_flag("share", argc, argv, &k)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        return argv[k][0] == '-' ? cli_unknown_flag("share", argv[k])
                                 : cli_usage_error("share", "unexpected argument '%s'", argv[k]);
    }
    if (client_open(&c) < 0)
        return client_report(&c);
    buf_init(&out, WORK_OUTPUT_MAX);
    work_names_init(&names);
    if (work_list_all(&c, "/v1/quotas", &quotas) < 0 ||
        work_list_all(&c, "/v1/projects", &projects) < 0 ||
        work_list_all(&c, "/v1/allocations", &allocs) < 0 ||
        client_request(&c, "GET", "/v1/capacity", NULL, &caps) < 0) {
        rc = client_report(&c);
        goto out;
    }
    rows = xcalloc(json_array_size(quotas) + 1, sizeof(*rows));
    json_array_foreach(quotas, i, q)
    {
        struct share_row *r = &rows[n++];
        json_t *eff = json_object_get(q, "effective_guaranteed_milli");
        json_t *g = json_object_get(q, "guaranteed_milli"),
               *lim = json_object_get(q, "limit_milli");
        json_t *p = find_by(projects, "id", int_at(q, "project_id"));
        json_t *cap =
            find_by(json_object_get(caps, "items"), "gpu_class_id", int_at(q, "gpu_class_id"));
        size_t k;
        json_t *al;
        r->quota = q;
        r->project_id = int_at(q, "project_id");
        r->class_id = int_at(q, "gpu_class_id");
        r->weight = p && int_at(p, "weight") > 0 ? int_at(p, "weight") : 1;
        r->guaranteed = json_is_integer(eff) ? json_integer_value(eff)
                        : json_is_integer(g) ? json_integer_value(g)
                                             : 0;
        r->limit = json_is_integer(lim) ? json_integer_value(lim) : -1;
        r->capacity = cap ? int_at(cap, "capacity_milli") : 0;
        r->decayed_milli_hours = r->decayed_average = -1;
        if (json_is_integer(json_object_get(q, "decayed_usage_milli_hours"))) {
            decayed = true;
            r->decayed_milli_hours = int_at(q, "decayed_usage_milli_hours");
            r->decayed_average = int_at(q, "decayed_average_milli");
        }
        json_array_foreach(allocs, k, al)
        {
            const char *pc = json_string_value(json_object_get(al, "priority_class"));
            if (!json_is_null(json_object_get(al, "ended_ms")) ||
                int_at(al, "project_id") != r->project_id ||
                int_at(al, "gpu_class_id") != r->class_id)
                continue;
            if (pc && strcmp(pc, "owned") == 0)
                r->p1 += int_at(al, "milli");
            else
                r->p2 += int_at(al, "milli");
        }
        {
            int64_t borrowed = r->p1 + r->p2 - r->guaranteed;
            double amount = (borrowed > 0 ? (double)borrowed : 0) +
                            (r->decayed_average > 0 ? (double)r->decayed_average : 0);
            r->share = r->capacity > 0 ? amount / (double)r->capacity / (double)r->weight : 0;
        }
    }
    /* NEXT: projects by their largest share over classes (the scheduler's dominant share). */
    for (size_t a = 0; a < n; a++) {
        double mine = 0, theirs;
        int place = 1;
        for (size_t b = 0; b < n; b++) {
            if (rows[b].project_id == rows[a].project_id && rows[b].share > mine)
                mine = rows[b].share;
        }
        for (size_t b = 0; b < n; b++) {
            bool first = true;
            if (rows[b].project_id == rows[a].project_id)
                continue;
            for (size_t e = 0; e < b; e++)
                first &= rows[e].project_id != rows[b].project_id; /* each project once */
            if (!first)
                continue;
            theirs = 0;
            for (size_t e = 0; e < n; e++) {
                if (rows[e].project_id == rows[b].project_id && rows[e].share > theirs)
                    theirs = rows[e].share;
            }
            place += theirs < mine || (theirs == mine && rows[b].project_id < rows[a].project_id);
        }
        rows[a].next = place;
    }
    work_names_load(&names, &c, WORK_NAMES_PROJECTS | WORK_NAMES_CLASSES);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        json_t *items = json_array();
        for (size_t k = 0; k < n; k++) {
            struct share_row *r = &rows[k];
            json_array_append_new(
                items,
                json_pack(
                    "{s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:f,s:i}", "project_id",
                    (json_int_t)r->project_id, "gpu_class_id", (json_int_t)r->class_id, "weight",
                    (json_int_t)r->weight, "guaranteed_milli", (json_int_t)r->guaranteed,
                    "limit_milli", r->limit < 0 ? json_null() : json_integer(r->limit),
                    "owned_milli", (json_int_t)r->p1, "opportunistic_milli", (json_int_t)r->p2,
                    "borrowed_milli",
                    (json_int_t)(r->p1 + r->p2 > r->guaranteed ? r->p1 + r->p2 - r->guaranteed : 0),
                    "share", r->share, "next", r->next));
            if (r->decayed_milli_hours >= 0) {
                json_t *o = json_array_get(items, json_array_size(items) - 1);
                json_object_set_new(o, "decayed_usage_milli_hours",
                                    json_integer(r->decayed_milli_hours));
                json_object_set_new(o, "decayed_average_milli", json_integer(r->decayed_average));
            }
        }
        json_t *j = json_pack("{s:o}", "items", items);
        render_json(j, &out);
        json_decref(j);
    } else if (n == 0) {
        buf_printf(&out, "no quotas you may see\n");
    } else {
        static const char *const header[] = {
            "NEXT",  "PROJECT",       "CLASS",    "WEIGHT", "GUARANTEED",   "LIMIT",
            "OWNED", "OPPORTUNISTIC", "BORROWED", "SHARE",  "DECAYED GPU-H"};
        /* The decayed column only where the daemon runs that rule. */
        size_t n_cols = decayed ? ARRAY_SIZE(header) : ARRAY_SIZE(header) - 1;
        struct table t;
        table_init(&t, n_cols);
        table_add_row(&t, header);
        for (size_t k = 0; k < n; k++) {
            struct share_row *r = &rows[k];
            json_t *pid = json_integer(r->project_id), *cid = json_integer(r->class_id);
            char *next = xasprintf("%d", r->next), *project = work_name(names.projects, pid),
                 *cls = work_name(names.classes, cid), *weight = xasprintf("%" PRId64, r->weight),
                 *g = gpus_cell(r->guaranteed),
                 *lim = r->limit < 0 ? xstrdup("-") : gpus_cell(r->limit), *p1 = gpus_cell(r->p1),
                 *p2 = gpus_cell(r->p2),
                 *bor =
                     gpus_cell(r->p1 + r->p2 > r->guaranteed ? r->p1 + r->p2 - r->guaranteed : 0),
                 *share = xasprintf("%.1f %%", r->share * 100),
                 *past = gpus_cell(r->decayed_milli_hours > 0 ? r->decayed_milli_hours : 0);
            const char *cells[] = {next, project, cls, weight, g, lim, p1, p2, bor, share, past};
            table_add_row(&t, cells);
            json_decref(pid);
            json_decref(cid);
            free(next);
            free(project);
            free(cls);
            free(weight);
            free(g);
            free(lim);
            free(p1);
            free(p2);
            free(bor);
            free(share);
            free(past);
        }
        table_render(&t, &out);
        table_release(&t);
    }
    rc = work_flush(&out);
out:
    free(rows);
    json_decref(quotas);
    json_decref(projects);
    json_decref(allocs);
    json_decref(caps);
    work_names_release(&names);
    buf_release(&out);
    client_release(&c);
    return rc;
}
