/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_run.c: `gpuaas run`, which submits a workload (POST /v1/workloads).
 * Every flag is checked before any request, so a typo is a usage error with
 * nothing sent; then the project and the flavor are looked up by name and
 * the workload is submitted.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/script.h"
#include "cli/work.h"

#define GPUS_PER_REPLICA_MAX 64 /* as many as one node holds (the scheduler's limit) */
#define SCRIPT_MAX 8192         /* a workload's command, which the script becomes */
#define ARRAY_MAX 10000         /* tasks of one --array */

struct run_args {
    const char *flavor, *project, *name, *image, *key;
    const char *pclass; /* "auto", "owned", "opportunistic" or NULL for the server's default */
    bool pclass_from_script; /* a #GPUAAS directive gave it: the command line may change it */
    const char *gpu_class;   /* --gpu-class: with --gpus, the flavors of this class only */
    int64_t replicas, priority, max_runtime, min_runtime, grace, duration, gpus;
    bool has_replicas, has_priority, has_max_runtime, has_min_runtime, has_grace, has_duration,
        has_gpus;
    bool no_requeue, instance, hold;
    int64_t after; /* --after / --after-ok: the workload it waits for (0: none) */
    bool after_ok;
    /* --array: the task indices, and at most how many run at once (0: no bound) */
    int64_t *tasks;
    size_t n_tasks, cap_tasks;
    int64_t array_at_once;
    char *command; /* owned; NULL without "--" */
};

static void run_help(void)
{
    printf(
        "usage: gpuaas run --flavor NAME|ID | --gpus N [--project P] [<flags>] [-- COMMAND "
        "ARGS...]\n"
        "       gpuaas run --script FILE [<flags>] [-- ARGS...]\n\n"
        "Submits a workload: REPLICAS replicas of the flavor, placed all together or not at\n"
        "all. The words after '--' are the command line (words with spaces or quotes are\n"
        "quoted POSIX-shell style). Prints the workload's id and state.\n\n"
        "  --flavor NAME|ID         the flavor of each replica ('gpuaas flavors list')\n"
        "  --gpus N                 instead of --flavor: the cheapest active flavor with N\n"
        "                           GPUs per replica (of --gpu-class NAME when given)\n"
        "  --script FILE            a batch script (sh or bash) as the command; its\n"
        "                           '#GPUAAS --flag value' lines before its first command\n"
        "                           give flags, as #SBATCH lines do for sbatch; flags on\n"
        "                           the command line win; words after '--' are its $1...\n"
        "  --project P              project (NAME, ORG/NAME or id); default: the one project\n"
        "                           your role bindings name\n"
        "  --replicas N             replicas, 1 to 256 (default 1)\n"
        "  --auto                   the default: owned (P1) while the project's owned work\n"
        "                           and this fit its guarantee, else opportunistic (P2);\n"
        "                           decided when it starts, shown in its events\n"
        "  --owned                  P1 only: waits for room within the guarantee, never\n"
        "                           preempted\n"
        "  --opportunistic          P2 only: any idle capacity, preemptible\n"
        "  --priority N             order within the project and class, -1000 to 1000;\n"
        "                           higher first\n"
        "  --max-runtime DUR        stop it after running this long\n"
        "  --min-runtime DUR        do not preempt it before it ran this long (P2)\n"
        "  --grace DUR              time between the stop signal and the kill (at most 1d)\n"
        "  --no-requeue             when preempted, end instead of going back to the queue\n"
        "  --after ID               not before workload ID has ended (as --dependency=afterany)\n"
        "  --after-ok ID            only after workload ID succeeded (afterok); cancelled,\n"
        "                           saying why, if it ends otherwise\n"
        "  --hold                   submit it held: queued, not scheduled until 'gpuaas\n"
        "                           release ID'\n"
        "  --array SPEC             one workload per task: 0-99, 1,3,5-7 or 0-15:4, and %%N\n"
        "                           for at most N at once; each is named NAME[i] and runs\n"
        "                           with GPUAAS_ARRAY_TASK_ID=i and GPUAAS_ARRAY_JOB_ID\n"
        "  --name TEXT              a label for people\n"
        "  --image IMAGE            container image; none runs the command directly\n"
        "  --instance               an instance (runs until stopped) instead of a batch job\n"
        "  --duration DUR           how long it runs: simulated clusters run it that long;\n"
        "                           Kubernetes pods carry it as gpuaas.io/expected-runtime\n"
        "  --idempotency-key KEY    a second run with the same key in the project returns\n"
        "                           the first workload instead of a new one\n\n"
        "DUR is seconds, or a number with s, m, h or d: 90, 90s, 15m, 2h, 7d.\n"
        "Examples:\n"
        "  gpuaas run --flavor h100.1x -- python train.py --epochs 3\n"
        "  gpuaas run --flavor h100.8x --replicas 2 --owned --project acme/ml -- ./train.sh\n"
        "  gpuaas run --gpus 2 -- python train.py\n"
        "  gpuaas run --script train.sbatch -- --epochs 3\n");
}

static void field_range(const char *field, int64_t *ret_min, int64_t *ret_max)
{
    int idx = model_field_index(&model_workloads, field);

    assert(idx >= 0);
    *ret_min = model_workloads.fields[idx].min;
    *ret_max = model_workloads.fields[idx].max;
}

static int take_int(const char *flag, const char *field, const char *v, int64_t *ret)
{
    int64_t min, max;

    field_range(field, &min, &max);
    if (parse_int64(v, min, max, ret) < 0)
        return cli_usage_error("run",
                               "%s must be a number from %" PRId64 " to %" PRId64 ", not '%s'",
                               flag, min, max, v);
    return 0;
}

static int take_gpus(const char *flag, const char *field, const char *v, int64_t *ret)
{
    (void)field;
    if (parse_int64(v, 1, GPUS_PER_REPLICA_MAX, ret) < 0)
        return cli_usage_error("run", "%s must be a whole number of GPUs from 1 to %d, not '%s'",
                               flag, GPUS_PER_REPLICA_MAX, v);
    return 0;
}

/*
 * --array SPEC as sbatch takes it: "0-99", "1,3,5-7", "0-15:4" (a step),
 * with "%N" at the end for at most N tasks at once.
 */
static int take_array(struct run_args *a, const char *spec)
{
    char *copy = xstrdup(spec), *pct = strchr(copy, '%'), *save = NULL, *part;
    int rc = 0;

    if (pct) {
        *pct = '\0';
        if (parse_int64(pct + 1, 1, ARRAY_MAX, &a->array_at_once) < 0)
            rc = cli_usage_error("run",
                                 "--array %s: after %% comes how many tasks may run at "
                                 "once, 1 to %d",
                                 spec, ARRAY_MAX);
    }
    for (part = strtok_r(copy, ",", &save); part && rc == 0; part = strtok_r(NULL, ",", &save)) {
        int64_t lo, hi, step = 1;
        char *dash = strchr(part, '-'), *colon = strchr(part, ':');
        if (colon) {
            *colon = '\0';
            if (parse_int64(colon + 1, 1, ARRAY_MAX, &step) < 0)
                rc = -1;
        }
        if (dash)
            *dash = '\0';
        if (rc == 0 && (parse_int64(part, 0, 1000000, &lo) < 0 ||
                        parse_int64(dash ? dash + 1 : part, 0, 1000000, &hi) < 0 || hi < lo))
            rc = -1;
        for (int64_t t = lo; rc == 0 && t <= hi; t += step) {
            if (a->n_tasks >= ARRAY_MAX) {
                rc = cli_usage_error("run", "--array %s: more than %d tasks", spec, ARRAY_MAX);
                break;
            }
            ALLOC_GROW(a->tasks, a->n_tasks + 1, a->cap_tasks);
            a->tasks[a->n_tasks++] = t;
        }
    }
    if (rc == -1 || (rc == 0 && a->n_tasks == 0))
        rc = cli_usage_error("run",
                             "--array %s: give task indices as 0-99, 1,3,5-7 or 0-15:4, with %%N "
                             "for at most N at once",
                             spec);
    free(copy);
    return rc;
}

/* --after ID / --after-ok ID (ok). */
static int take_after(struct run_args *a, const char *v, bool ok)
{
    if (a->after)
        return cli_usage_error("run", "give one --after or --after-ok");
    if (parse_int64(v, 1, INT64_MAX, &a->after) < 0)
        return cli_usage_error("run", "--after%s needs a workload id, not '%s'", ok ? "-ok" : "",
                               v);
    a->after_ok = ok;
    return 0;
}

static int take_duration(const char *flag, const char *field, const char *v, int64_t *ret)
{
    int64_t min, max;

    field_range(field, &min, &max);
    return work_parse_duration("run", flag, v, min, max, ret);
}

/* Text flags: checked against the field's length, and for UTF-8 by jansson. */
static int check_text(const char *flag, const char *field, const char *v)
{
    int64_t min, max;
    json_t *j = json_string(v);
    size_t n = strlen(v);

    field_range(field, &min, &max);
    json_decref(j);
    if (!j)
        return cli_usage_error("run", "%s is not valid UTF-8", flag);
    if ((int64_t)n < min || (int64_t)n > max)
        return cli_usage_error("run", "%s must be %" PRId64 " to %" PRId64 " bytes long, not %zu",
                               flag, min, max, n);
    return 0;
}

/*
 * Pass 1: the words alone; those before index `directives` came from a
 * script's #GPUAAS lines. Returns 0, -1 after printing help, or an exit code.
 */
static int parse_run(struct run_args *a, int argc, char **argv, int directives)
{
    int i = 1, rc;

    while (i < argc) {
        const char *arg = argv[i], *v;

        if (strcmp(arg, "--") == 0) {
            a->command = work_join_command(argc - i - 1, argv + i + 1);
            break;
        }
        if (cli_is_help(arg)) {
            run_help();
            return -1;
        }
        if ((rc = cli_take_global_flag("run", argc, argv, &i)) != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
        if (arg[0] != '-')
            return cli_usage_error("run",
                                   "unexpected argument '%s'; put the command after '--': "
                                   "gpuaas run --flavor F -- %s ...",
                                   arg, arg);
        if (strcmp(arg, "--owned") == 0 || strcmp(arg, "--opportunistic") == 0 ||
            strcmp(arg, "--auto") == 0) {
            const char *want = arg + 2;
            if (a->pclass && strcmp(a->pclass, want) != 0 &&
                !(a->pclass_from_script && i >= directives))
                return cli_usage_error("run", "give one of --auto, --owned, --opportunistic");
            a->pclass = want;
            a->pclass_from_script = i < directives;
            i++;
            continue;
        }
        if (strcmp(arg, "--no-requeue") == 0) {
            a->no_requeue = true;
            i++;
            continue;
        }
        if (strcmp(arg, "--instance") == 0) {
            a->instance = true;
            i++;
            continue;
        }
        if ((rc = cli_take_value_flag("run", argc, argv, &i, "--array", NULL, &v)) != 0) {
            if (rc != 1 || (rc = take_array(a, v)) != 0)
                return rc;
            continue;
        }
        if (strcmp(arg, "--hold") == 0) {
            a->hold = true;
            i++;
            continue;
        }
        rc = 0;
        for (int ok = 0; ok < 2 && rc == 0; ok++) {
            rc =
                cli_take_value_flag("run", argc, argv, &i, ok ? "--after-ok" : "--after", NULL, &v);
            if (rc == 1 && (rc = take_after(a, v, ok)) == 0)
                rc = 1;
        }
        if (rc != 0) {
            if (rc != 1)
                return rc;
            continue;
        }
#define STR_FLAG(flag, member)                                                                     \
    if ((rc = cli_take_value_flag("run", argc, argv, &i, flag, NULL, &v)) != 0) {                  \
        if (rc != 1)                                                                               \
            return rc;                                                                             \
        a->member = v;                                                                             \
        continue;                                                                                  \
    }
#define NUM_FLAG(flag, take, field, member)                                                        \
    if ((rc = cli_take_value_flag("run", argc, argv, &i, flag, NULL, &v)) != 0) {                  \
        if (rc != 1 || (rc = take(flag, field, v, &a->member)) != 0)                               \
            return rc;                                                                             \
        a->has_##member = true;                                                                    \
        continue;                                                                                  \
    }
        STR_FLAG("--flavor", flavor)
        STR_FLAG("--project", project)
        STR_FLAG("--name", name)
        STR_FLAG("--image", image)
        STR_FLAG("--idempotency-key", key)
        STR_FLAG("--gpu-class", gpu_class)
        NUM_FLAG("--gpus", take_gpus, "", gpus)
        NUM_FLAG("--replicas", take_int, "replicas", replicas)
        NUM_FLAG("--priority", take_int, "priority", priority)
        NUM_FLAG("--max-runtime", take_duration, "max_runtime_s", max_runtime)
        NUM_FLAG("--min-runtime", take_duration, "min_runtime_s", min_runtime)
        NUM_FLAG("--grace", take_duration, "grace_s", grace)
        NUM_FLAG("--duration", take_duration, "duration_s", duration)
#undef STR_FLAG
#undef NUM_FLAG
        return cli_unknown_flag("run", arg);
    }
    if (a->flavor && a->has_gpus)
        return cli_usage_error("run", "give --flavor or --gpus, not both");
    if (a->gpu_class && !a->has_gpus)
        return cli_usage_error("run", "--gpu-class goes with --gpus");
    if ((!a->flavor || !*a->flavor) && !a->has_gpus)
        return cli_usage_error("run", "'run' needs --flavor NAME|ID or --gpus N; 'gpuaas flavors "
                                      "list' shows the flavors");
    if (a->project && !*a->project)
        return cli_usage_error("run", "--project is empty");
    if ((a->name && (rc = check_text("--name", "name", a->name)) != 0) ||
        (a->image && (rc = check_text("--image", "image", a->image)) != 0) ||
        (a->key && (rc = check_text("--idempotency-key", "idempotency_key", a->key)) != 0) ||
        (a->command && (rc = check_text("the command", "command", a->command)) != 0))
        return rc;
    return 0;
}

static json_t *build_body(const struct run_args *a, int64_t project_id, int64_t flavor_id)
{
    json_t *body = json_pack("{s:I,s:I}", "project_id", (json_int_t)project_id, "flavor_id",
                             (json_int_t)flavor_id);

    if (a->name)
        json_object_set_new(body, "name", json_string(a->name));
    if (a->instance)
        json_object_set_new(body, "kind", json_string("instance"));
    if (a->has_replicas)
        json_object_set_new(body, "replicas", json_integer(a->replicas));
    if (a->command)
        json_object_set_new(body, "command", json_string(a->command));
    if (a->image)
        json_object_set_new(body, "image", json_string(a->image));
    if (a->pclass)
        json_object_set_new(body, "priority_class", json_string(a->pclass));
    if (a->has_priority)
        json_object_set_new(body, "priority", json_integer(a->priority));
    if (a->has_max_runtime)
        json_object_set_new(body, "max_runtime_s", json_integer(a->max_runtime));
    if (a->has_min_runtime)
        json_object_set_new(body, "min_runtime_s", json_integer(a->min_runtime));
    if (a->has_grace)
        json_object_set_new(body, "grace_s", json_integer(a->grace));
    if (a->no_requeue)
        json_object_set_new(body, "requeue", json_false());
    if (a->key)
        json_object_set_new(body, "idempotency_key", json_string(a->key));
    if (a->has_duration)
        json_object_set_new(body, "duration_s", json_integer(a->duration));
    if (a->after)
        json_object_set_new(body, "after_id", json_integer(a->after));
    if (a->after_ok)
        json_object_set_new(body, "after_ok", json_true());
    if (a->hold)
        json_object_set_new(body, "held", json_true());
    return body;
}

static int resolve_flavor(struct client *c, const char *word, int64_t *ret_id)
{
    char err[512];
    int rc = resolve_id(c, &model_flavors, word, ret_id, err, sizeof(err));

    if (rc == 0)
        return 0;
    if (rc == ERR_INVALID)
        return cli_usage_error("run", "--flavor: %s", err);
    if (rc == ERR_IO)
        return client_report(c);
    cli_error("--flavor: %s", err);
    cli_hint("'gpuaas flavors list' shows the flavors offered");
    return CLI_ERROR;
}

/*
 * --gpus N: the cheapest active flavor with N whole GPUs per replica (of
 * --gpu-class when given; ties: the name), said on stderr so that nobody
 * wonders which it took.
 */
static int pick_flavor(struct client *c, const struct run_args *a, int64_t *ret_id)
{
    char err[512];
    int64_t class_id = 0;
    json_t *list = NULL, *f, *best = NULL;
    size_t i;
    struct buf offered;
    bool seen[GPUS_PER_REPLICA_MAX + 1] = {false};
    int rc;

    if (a->gpu_class &&
        (rc = resolve_id(c, &model_gpu_classes, a->gpu_class, &class_id, err, sizeof(err))) != 0) {
        if (rc == ERR_IO)
            return client_report(c);
        return cli_usage_error("run", "--gpu-class: %s", err);
    }
    if (client_request(c, "GET", "/v1/flavors?active=true&limit=1000", NULL, &list) < 0)
        return client_report(c);
    buf_init(&offered, 1024);
    json_array_foreach(json_object_get(list, "items"), i, f)
    {
        json_int_t milli = json_integer_value(json_object_get(f, "gpu_milli"));
        if (class_id && json_integer_value(json_object_get(f, "gpu_class_id")) != class_id)
            continue;
        if (milli > 0 && milli % 1000 == 0 && milli / 1000 <= GPUS_PER_REPLICA_MAX)
            seen[milli / 1000] = true;
        if (milli != a->gpus * 1000)
            continue;
        if (!best ||
            json_integer_value(json_object_get(f, "price_per_hour_micros")) <
                json_integer_value(json_object_get(best, "price_per_hour_micros")) ||
            (json_integer_value(json_object_get(f, "price_per_hour_micros")) ==
                 json_integer_value(json_object_get(best, "price_per_hour_micros")) &&
             strcmp(json_string_value(json_object_get(f, "name")),
                    json_string_value(json_object_get(best, "name"))) < 0))
            best = f;
    }
    for (int k = 1; k <= GPUS_PER_REPLICA_MAX; k++) {
        if (seen[k])
            buf_printf(&offered, "%s%d", offered.len ? ", " : "", k);
    }
    if (!best) {
        cli_error("--gpus %" PRId64 ": no active flavor%s%s has %" PRId64 " GPUs per replica",
                  a->gpus, a->gpu_class ? " of class " : "", a->gpu_class ? a->gpu_class : "",
                  a->gpus);
        cli_hint(offered.len ? "GPUs per replica of the flavors offered: %s" : "%s",
                 offered.len ? offered.data : "no flavor with whole GPUs is offered");
        buf_release(&offered);
        json_decref(list);
        return CLI_ERROR;
    }
    *ret_id = json_integer_value(json_object_get(best, "id"));
    fprintf(stderr, "gpuaas: using flavor %s (the cheapest with %" PRId64 " GPUs per replica)\n",
            json_string_value(json_object_get(best, "name")), a->gpus);
    buf_release(&offered);
    json_decref(list);
    return 0;
}

/*
 * --array: one workload per task, named NAME[i], its command run with
 * GPUAAS_ARRAY_TASK_ID=i and GPUAAS_ARRAY_JOB_ID (the first task's id), as
 * Slurm's SLURM_ARRAY_*; with %N, task k waits for task k-N to end, so that
 * at most N run at once. Stops at the first refusal, saying which tasks were
 * submitted.
 */
static int submit_array(struct client *c, struct run_args *a, int64_t project_id, int64_t flavor_id)
{
    int64_t *ids = xcalloc(a->n_tasks, sizeof(*ids));
    const char *command = a->command ? a->command : "";
    const char *name = a->name ? a->name : "array";
    json_t *items = json_array();
    struct buf out;
    int rc = 0;

    buf_init(&out, WORK_OUTPUT_MAX);
    for (size_t k = 0; k < a->n_tasks && rc == 0; k++) {
        char *cmd =
            xasprintf("export GPUAAS_ARRAY_TASK_ID=%" PRId64 " GPUAAS_ARRAY_JOB_ID=%" PRId64 "\n%s",
                      a->tasks[k], k ? ids[0] : (int64_t)0, command);
        char *task_name = xasprintf("%s[%" PRId64 "]", name, a->tasks[k]);
        char *task_key = a->key ? xasprintf("%s-%" PRId64, a->key, a->tasks[k]) : NULL;
        json_t *body, *w = NULL;
        struct run_args t = *a;
        t.command = cmd;
        t.name = task_name;
        t.key = task_key;
        /* at most N at once: task k after task k - N (the first N after what --after says) */
        if (a->array_at_once > 0 && k >= (size_t)a->array_at_once) {
            t.after = ids[k - (size_t)a->array_at_once];
            t.after_ok = false;
        }
        body = build_body(&t, project_id, flavor_id);
        if (client_request(c, "POST", "/v1/workloads", body, &w) < 0) {
            rc = client_report(c);
            if (k > 0)
                cli_error("--array: tasks %" PRId64 " to %" PRId64 " were submitted (workloads "
                          "%" PRId64 " to %" PRId64 "); the rest were not",
                          a->tasks[0], a->tasks[k - 1], ids[0], ids[k - 1]);
        } else {
            ids[k] = json_integer_value(json_object_get(w, "id"));
            json_array_append(items, w);
        }
        json_decref(body);
        json_decref(w);
        free(cmd);
        free(task_name);
        free(task_key);
    }
    if (rc == 0) {
        if (cli_opts.output == CLI_OUTPUT_JSON) {
            json_t *j = json_pack("{s:O}", "items", items);
            render_json(j, &out);
            json_decref(j);
        } else {
            buf_printf(&out, "array of %zu submitted: workloads %" PRId64 " to %" PRId64 "\n",
                       a->n_tasks, ids[0], ids[a->n_tasks - 1]);
        }
        rc = work_flush(&out);
    }
    buf_release(&out);
    json_decref(items);
    free(ids);
    return rc;
}

static int print_submitted(json_t *w, int status)
{
    json_t *id = json_object_get(w, "id");
    const char *state = json_string_value(json_object_get(w, "state"));
    struct buf out;

    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON)
        render_json(w, &out);
    else
        buf_printf(&out, "workload %" JSON_INTEGER_FORMAT " %s (%s)\n",
                   json_is_integer(id) ? json_integer_value(id) : (json_int_t)0,
                   status == 200 ? "already submitted with this key" : "submitted",
                   state ? state : "?");
    return work_flush(&out);
}

/* The value of --script (before any '--'), or NULL; *ret_at is its flag's index. */
static const char *script_flag(int argc, char **argv, int *ret_at, int *ret_words)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--script") == 0 && i + 1 < argc) {
            *ret_at = i;
            *ret_words = 2;
            return argv[i + 1];
        }
        if (strncmp(argv[i], "--script=", 9) == 0) {
            *ret_at = i;
            *ret_words = 1;
            return argv[i] + 9;
        }
    }
    return NULL;
}

/*
 * The words to parse: the script's directives first (so that the command
 * line's flags, coming later, win), then the command line without --script.
 */
static char **with_directives(const struct run_script *s, int argc, char **argv, int at, int words,
                              int *ret_argc)
{
    char **all = xcalloc((size_t)(argc + s->n_words + 1), sizeof(*all));
    int n = 0;
    all[n++] = argv[0];
    for (int i = 0; i < s->n_words; i++)
        all[n++] = s->words[i];
    for (int i = 1; i < argc; i++) {
        if (i < at || i >= at + words)
            all[n++] = argv[i];
    }
    *ret_argc = n;
    return all;
}

/* Makes the script the command, with the words after '--' as its arguments. */
static int script_as_command(struct run_args *a, const struct run_script *s, const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char *interp, *cmd = script_command(s, base, a->command, &interp);
    int rc;

    if (!cmd) {
        rc = cli_usage_error("run",
                             "--script %s is for %s: --script runs sh and bash scripts; run "
                             "other programs with -- %s %s",
                             path, interp, interp, path);
        free(interp);
        return rc;
    }
    free(a->command);
    a->command = cmd;
    return check_text("the script", "command", cmd);
}

int cmd_run(int argc, char **argv)
{
    struct run_args a;
    struct run_script script = {0};
    struct client c;
    json_t *body = NULL, *w = NULL;
    int64_t project_id = 0, flavor_id = 0;
    int at = 0, words = 0, n_words = argc, rc;
    const char *script_path = script_flag(argc, argv, &at, &words);
    char **all = argv;

    memset(&a, 0, sizeof(a));
    if (script_path) {
        if ((rc = script_read(script_path, SCRIPT_MAX, &script)) != 0)
            return rc;
        all = with_directives(&script, argc, argv, at, words, &n_words);
    }
    rc = parse_run(&a, n_words, all, 1 + script.n_words);
    if (rc == 0 && script_path)
        rc = script_as_command(&a, &script, script_path);
    if (all != argv)
        free(all);
    if (rc != 0) {
        free(a.command);
        script_release(&script);
        return rc < 0 ? CLI_OK : rc;
    }
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    rc = work_project(&c, "run", a.project, &project_id);
    if (rc == 0)
        rc =
            a.has_gpus ? pick_flavor(&c, &a, &flavor_id) : resolve_flavor(&c, a.flavor, &flavor_id);
    if (rc != 0)
        goto out;
    if (a.n_tasks > 0) {
        rc = submit_array(&c, &a, project_id, flavor_id);
        goto out;
    }
    body = build_body(&a, project_id, flavor_id);
    rc = client_request(&c, "POST", "/v1/workloads", body, &w);
    if (rc < 0) {
        rc = client_report(&c);
        goto out;
    }
    rc = print_submitted(w, rc);
out:
    json_decref(body);
    json_decref(w);
    client_release(&c);
    free(a.command);
    script_release(&script); /* the flags' values point into its words */
    free(a.tasks);
    return rc;
}
