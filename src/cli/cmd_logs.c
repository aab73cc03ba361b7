/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_logs.c: `gpuaas logs ID [-f] [--tail BYTES]` (GET /v1/workloads/{id}/logs):
 * a workload's output; with -f, keeps printing what it writes until it has
 * ended. Work on a simulated cluster runs no command and writes nothing:
 * logs says so rather than print nothing (or, with -f, wait in silence).
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/client.h"

#define LOGS_POLL_US 1000000

static void logs_help(void)
{
    printf("usage: gpuaas logs ID [-f|--follow] [--tail BYTES]\n\n"
           "Prints a workload's output (stdout and stderr), the last 64 KiB unless --tail\n"
           "says otherwise. With -f, keeps printing new output until the workload has ended.\n"
           "The log of work that ended more than the server's log-retention-days ago is\n"
           "removed: then this fails and says when. Work on a simulated cluster (backend\n"
           "sim) runs no command, so it has no output: logs says so, and -f waits for it\n"
           "to end.\n");
}

/* GET /v1/workloads/ID into *ret (new reference). */
static int get_workload(struct client *c, int64_t id, json_t **ret)
{
    char *path = xasprintf("/v1/workloads/%" PRId64, id);
    int rc = client_request(c, "GET", path, NULL, ret);

    free(path);
    return rc;
}

/* Whether w can no longer write: not queued, running or stopping. */
static bool ended(json_t *w)
{
    const char *state = json_string_value(json_object_get(w, "state"));
    return !state || !(strcmp(state, "queued") == 0 || strcmp(state, "admitted") == 0 ||
                       strcmp(state, "running") == 0 || strcmp(state, "preempting") == 0);
}

/*
 * The name of the simulated cluster w was placed on (caller frees), or NULL
 * when it is not placed, or not on a simulated cluster, or the cluster
 * cannot be read (then the log is read as for any work).
 */
static char *sim_cluster(struct client *c, json_t *w)
{
    json_t *cid = json_object_get(w, "cluster_id"), *cluster = NULL;
    const char *backend, *name;
    char *path, *ret = NULL;

    if (!json_is_integer(cid))
        return NULL;
    path = xasprintf("/v1/clusters/%" JSON_INTEGER_FORMAT, json_integer_value(cid));
    if (client_request(c, "GET", path, NULL, &cluster) >= 0) {
        backend = json_string_value(json_object_get(cluster, "backend"));
        name = json_string_value(json_object_get(cluster, "name"));
        if (backend && strcmp(backend, "sim") == 0)
            ret = xstrdup(name ? name : "sim");
    }
    free(path);
    json_decref(cluster);
    return ret;
}

/* Simulated work: says there is no output; with -f, waits for the end and says how it ended. */
static int sim_logs(struct client *c, int64_t id, json_t *w, const char *cluster, bool follow)
{
    json_t *now = json_incref(w);
    int rc = 0;

    fprintf(stderr,
            "workload %" PRId64 " runs on the simulated cluster '%s', which runs no command: "
            "it has no output\n",
            id, cluster);
    while (follow && !ended(now)) {
        usleep(LOGS_POLL_US);
        json_decref(now);
        now = NULL;
        if ((rc = get_workload(c, id, &now)) < 0)
            break;
    }
    if (rc >= 0 && follow)
        fprintf(stderr, "workload %" PRId64 " ended: %s\n", id,
                json_string_value(json_object_get(now, "state")));
    json_decref(now);
    return rc < 0 ? client_report(c) : CLI_OK;
}

int cmd_logs(int argc, char **argv)
{
    struct client c;
    int64_t id = 0, tail = -1, offset = -1;
    bool follow = false, last = false;
    int i = 1, rc;

    memset(&c, 0, sizeof(c));
    while (i < argc) {
        if (cli_is_help(argv[i])) {
            logs_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("logs", argc, argv, &i);
        if (rc == 1)
            continue;
        if (rc != 0)
            return rc;
        if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0) {
            follow = true;
        } else if (strcmp(argv[i], "--tail") == 0) {
            if (i + 1 >= argc || parse_int64(argv[i + 1], 0, 1 << 20, &tail) < 0)
                return cli_usage_error("logs", "--tail needs a number of bytes up to 1048576");
            i++;
        } else if (argv[i][0] == '-' || id != 0) {
            return cli_usage_error("logs", "unexpected argument '%s'", argv[i]);
        } else if (parse_int64(argv[i], 1, INT64_MAX, &id) < 0) {
            return cli_usage_error("logs", "'%s' is not a workload id", argv[i]);
        }
        i++;
    }
    if (id == 0)
        return cli_usage_error("logs", "'logs' needs a workload id; 'gpuaas ps' lists them");
    if (client_open(&c) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    if (cli_opts.output != CLI_OUTPUT_JSON) {
        json_t *w = NULL;
        char *sim = NULL;
        if (get_workload(&c, id, &w) >= 0 && (sim = sim_cluster(&c, w)) != NULL)
            rc = sim_logs(&c, id, w, sim, follow);
        json_decref(w);
        if (sim) {
            free(sim);
            client_release(&c);
            return rc;
        }
    }
    for (;;) {
        char *path =
            offset >= 0 ? xasprintf("/v1/workloads/%" PRId64 "/logs?offset=%" PRId64, id, offset)
            : tail >= 0 ? xasprintf("/v1/workloads/%" PRId64 "/logs?tail=%" PRId64, id, tail)
                        : xasprintf("/v1/workloads/%" PRId64 "/logs", id);
        json_t *j = NULL, *w = NULL;
        rc = client_request(&c, "GET", path, NULL, &j);
        free(path);
        if (rc < 0)
            break;
        if (cli_opts.output == CLI_OUTPUT_JSON && !follow) {
            char *text = json_dumps(j, JSON_INDENT(2));
            printf("%s\n", text ? text : "{}");
            free(text);
        } else {
            const char *log = json_string_value(json_object_get(j, "log"));
            size_t len = json_string_length(json_object_get(j, "log"));
            if (log && len)
                fwrite(log, 1, len, stdout);
            fflush(stdout);
        }
        offset = json_integer_value(json_object_get(j, "next_offset"));
        json_decref(j);
        if (!follow || last)
            break;
        rc = get_workload(&c, id, &w);
        if (rc < 0)
            break;
        /* Ended: one more read for what it wrote since the last one. */
        if (ended(w))
            last = true;
        else
            usleep(LOGS_POLL_US);
        json_decref(w);
    }
    if (rc < 0)
        rc = client_report(&c);
    else
        rc = CLI_OK;
    client_release(&c);
    return rc;
}
