/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_cancel.c: the actions on workloads by id: `gpuaas cancel|hold|release
 * ID [ID...]` (POST /v1/workloads/{id}/cancel, /hold, /release for each).
 * A failure is reported and the others still go; the exit code is 1 when
 * any failed.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/work.h"

#define CANCEL_MAX_IDS 10000

static void cancel_help(void)
{
    printf("usage: gpuaas cancel ID [ID...]\n\n"
           "Cancels workloads. Queued work is cancelled at once; running work is sent the\n"
           "stop signal and becomes cancelled when it has ended (after its grace period at\n"
           "most). Prints the new state of each; the exit status is 1 if any could not be\n"
           "cancelled (work that already ended, for one), after trying them all.\n");
}

static void hold_help(void)
{
    printf("usage: gpuaas hold ID [ID...]\n\n"
           "Holds queued workloads (as scontrol hold): they keep their place in the queue but\n"
           "are not scheduled until released ('gpuaas release'). 'gpuaas run --hold' submits\n"
           "work held. Only queued work can be held.\n");
}

static void release_help(void)
{
    printf("usage: gpuaas release ID [ID...]\n\n"
           "Releases held workloads: they are scheduled again in their original place (or\n"
           "wait for their dependency, if it has not ended yet).\n");
}

/* One line about the workload the server sent back. */
static void describe(struct buf *out, int64_t id, json_t *w)
{
    const char *state = json_string_value(json_object_get(w, "state"));

    if (!state)
        buf_printf(out, "workload %" PRId64 ": cancel requested\n", id);
    else if (strcmp(state, "cancelled") == 0)
        buf_printf(out, "workload %" PRId64 ": cancelled\n", id);
    else if (strcmp(state, "running") == 0 || strcmp(state, "preempting") == 0)
        buf_printf(out, "workload %" PRId64 ": stopping (%s); cancelled once it has ended\n", id,
                   state);
    else
        buf_printf(out, "workload %" PRId64 ": %s\n", id, state);
}

static void describe_held(struct buf *out, int64_t id, json_t *w)
{
    buf_printf(out, "workload %" PRId64 ": %s\n", id,
               json_is_true(json_object_get(w, "held")) ? "held" : "released");
}

struct id_action {
    const char *verb; /* the command, and the route's last word */
    const char *past; /* "could not be <past>" */
    void (*help)(void);
    void (*describe)(struct buf *out, int64_t id, json_t *w);
};

static int act_on_ids(const struct id_action *act, int argc, char **argv)
{
    int64_t *ids = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(*ids));
    json_t *done = json_array();
    size_t n = 0;
    struct client c;
    int i = 1, rc = 0, failed = 0;

    memset(&c, 0, sizeof(c));
    while (i < argc) {
        if (cli_is_help(argv[i])) {
            act->help();
            goto out;
        }
        rc = cli_take_global_flag(act->verb, argc, argv, &i);
        if (rc == 1) {
            rc = 0;
            continue;
        }
        if (rc != 0)
            goto out;
        if (argv[i][0] == '-') {
            rc = cli_usage_error(act->verb, "unknown flag '%s' for '%s'", argv[i], act->verb);
            goto out;
        }
        if (parse_int64(argv[i], 1, INT64_MAX, &ids[n]) < 0) {
            rc = cli_usage_error(act->verb, "'%s' is not a workload id", argv[i]);
            goto out;
        }
        n++;
        i++;
    }
    if (n == 0) {
        rc = cli_usage_error(act->verb, "'%s' needs workload ids; 'gpuaas ps' lists them",
                             act->verb);
        goto out;
    }
    if (n > CANCEL_MAX_IDS) {
        rc = cli_usage_error(act->verb, "at most %d ids at a time", CANCEL_MAX_IDS);
        goto out;
    }
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        char *path = xasprintf("/v1/workloads/%" PRId64 "/%s", ids[k], act->verb);
        json_t *w = NULL;
        struct buf line;

        if (client_request(&c, "POST", path, NULL, &w) < 0) {
            client_report(&c);
            failed++;
            free(path);
            continue;
        }
        free(path);
        if (cli_opts.output == CLI_OUTPUT_JSON) {
            json_array_append(done, w);
        } else {
            /* line by line, so the output keeps pace with the errors on stderr */
            buf_init(&line, 1 << 16);
            act->describe(&line, ids[k], w);
            if (work_flush(&line) != CLI_OK)
                failed++;
        }
        json_decref(w);
    }
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        struct buf out;
        json_t *whole = json_pack("{s:O}", "items", done);
        buf_init(&out, WORK_OUTPUT_MAX);
        render_json(whole, &out);
        json_decref(whole);
        if (work_flush(&out) != CLI_OK)
            failed++;
    }
    if (failed && n > 1)
        cli_error("%d of %zu workloads could not be %s", failed, n, act->past);
    rc = failed ? CLI_ERROR : CLI_OK;
out:
    json_decref(done);
    client_release(&c);
    free(ids);
    return rc;
}

int cmd_cancel(int argc, char **argv)
{
    static const struct id_action act = {"cancel", "cancelled", cancel_help, describe};
    return act_on_ids(&act, argc, argv);
}

int cmd_hold(int argc, char **argv)
{
    static const struct id_action act = {"hold", "held", hold_help, describe_held};
    return act_on_ids(&act, argc, argv);
}

int cmd_release(int argc, char **argv)
{
    static const struct id_action act = {"release", "released", release_help, describe_held};
    return act_on_ids(&act, argc, argv);
}
