/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_history.c: `gpuaas history import FILE.json` (admins): finished work
 * of the past, and the price versions it is rated at, put into the store
 * through POST /v1/history (labelled simulated, metered into the ledger),
 * so a past month can be invoiced. The file is the request body as it is;
 * the server checks all of it and writes nothing unless all of it is valid.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/work.h"

#define HISTORY_FILE_MAX (16u << 20)

static void history_help(void)
{
    printf("usage: gpuaas history import FILE.json\n\n"
           "Imports finished work of the past (admins): {\"prices\": [...], \"workloads\":\n"
           "[{\"project_id\", \"flavor_id\", \"started_at\", \"finished_at\", \"replicas\",\n"
           "\"priority_class\", \"state\", \"gpu_ids\"}, ...]}. The workloads are labelled\n"
           "simulated, placed on GPUs that were free then and metered into the usage ledger,\n"
           "so their month can be invoiced (gpuaas invoice issue). The price versions may\n"
           "start in the past where no usage of their flavor is metered yet. Nothing is\n"
           "written unless everything is valid. docs/api.md has the rules.\n");
}

static int do_import(const char *file)
{
    struct client c = {0};
    struct buf data, out;
    json_t *ans = NULL;
    int rc;

    rc = cli_read_file(file, HISTORY_FILE_MAX, &data);
    if (rc == CLI_OK &&
        (client_open(&c) < 0 || client_post_file(&c, "/v1/history", "application/json",
                                                 data.data ? data.data : "", data.len, &ans) < 0))
        rc = client_report(&c);
    client_release(&c);
    buf_release(&data);
    if (rc != CLI_OK || !ans) {
        json_decref(ans);
        return rc;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        render_json(ans, &out);
    } else {
        size_t n_w = json_array_size(json_object_get(ans, "workload_ids"));
        size_t n_p = json_array_size(json_object_get(ans, "price_ids"));
        buf_printf(&out,
                   "imported %zu workload%s (labelled simulated) and %zu price version%s; "
                   "their usage is in the ledger\n",
                   n_w, n_w == 1 ? "" : "s", n_p, n_p == 1 ? "" : "s");
    }
    rc = work_flush(&out);
    json_decref(ans);
    return rc;
}

int cmd_history(int argc, char **argv)
{
    if (argc == 2 && cli_is_help(argv[1])) {
        history_help();
        return CLI_OK;
    }
    if (argc < 2 || strcmp(argv[1], "import") != 0)
        return cli_usage_error("history", "history takes import FILE.json");
    if (argc == 3 && cli_is_help(argv[2])) {
        history_help();
        return CLI_OK;
    }
    if (argc != 3)
        return cli_usage_error("history", "history import takes one FILE.json");
    return do_import(argv[2]);
}
