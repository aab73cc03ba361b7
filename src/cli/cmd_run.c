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
#include "cli/work.h"

struct run_args {
    const char *flavor, *project, *name, *image, *key;
    const char *pclass; /* "auto", "owned", "opportunistic" or NULL for the server's default */
    int64_t replicas, priority, max_runtime, min_runtime, grace, duration;
    bool has_replicas, has_priority, has_max_runtime, has_min_runtime, has_grace, has_duration;
    bool no_requeue, instance;
    char *command; /* owned; NULL without "--" */
};

static void run_help(void)
{
    printf(
        "usage: gpuaas run --flavor NAME|ID [--project P] [<flags>] [-- COMMAND ARGS...]\n\n"
        "Submits a workload: REPLICAS replicas of the flavor, placed all together or not at\n"
        "all. The words after '--' are the command line (words with spaces or quotes are\n"
        "quoted POSIX-shell style). Prints the workload's id and state.\n\n"
        "  --flavor NAME|ID         the flavor of each replica (required; 'gpuaas flavors list')\n"
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
        "  gpuaas run --flavor h100.8x --replicas 2 --owned --project acme/ml -- ./train.sh\n");
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

/* Pass 1: the words alone. Returns 0, -1 after printing help, or an exit code. */
static int parse_run(struct run_args *a, int argc, char **argv)
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
            if (a->pclass && strcmp(a->pclass, want) != 0)
                return cli_usage_error("run", "give one of --auto, --owned, --opportunistic");
            a->pclass = want;
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
    if (!a->flavor || !*a->flavor)
        return cli_usage_error("run", "'run' needs --flavor NAME|ID; 'gpuaas flavors list' shows "
                                      "them");
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

int cmd_run(int argc, char **argv)
{
    struct run_args a;
    struct client c;
    json_t *body = NULL, *w = NULL;
    int64_t project_id = 0, flavor_id = 0;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = parse_run(&a, argc, argv);
    if (rc != 0) {
        free(a.command);
        return rc < 0 ? CLI_OK : rc;
    }
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    rc = work_project(&c, "run", a.project, &project_id);
    if (rc == 0)
        rc = resolve_flavor(&c, a.flavor, &flavor_id);
    if (rc != 0)
        goto out;
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
    return rc;
}
