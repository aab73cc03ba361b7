/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_capacity.c: `gpuaas capacity` (GET /v1/capacity): per GPU class the
 * healthy capacity, what is free and what is promised as guarantees, in
 * GPUs, and the server's warning where the guarantees exceed the capacity.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/render.h"
#include "cli/table.h"
#include "cli/work.h"

static void capacity_help(void)
{
    printf("usage: gpuaas capacity\n\n"
           "Shows, per GPU class, the healthy capacity, what is free now and the sum of the\n"
           "projects' guarantees, in GPUs. A warning follows the table for each class whose\n"
           "guarantees exceed its capacity: owned work may then wait.\n");
}

static char *gpus(json_t *v)
{
    return json_is_integer(v) ? render_milli(json_integer_value(v)) : xstrdup("-");
}

static int render_capacity(json_t *items, struct buf *out)
{
    static const char *const header[] = {"CLASS", "CAPACITY", "FREE", "GUARANTEED"};
    struct table t;
    size_t i;
    json_t *it;
    int rc;

    table_init(&t, ARRAY_SIZE(header));
    table_add_row(&t, header);
    json_array_foreach(items, i, it)
    {
        const char *name = json_string_value(json_object_get(it, "gpu_class"));
        char *cls = name ? xstrdup(name) : render_cell(json_object_get(it, "gpu_class_id"));
        char *cells[] = {cls, gpus(json_object_get(it, "capacity_milli")),
                         gpus(json_object_get(it, "free_milli")),
                         gpus(json_object_get(it, "guaranteed_milli"))};
        table_add_row(&t, (const char *const *)cells);
        for (size_t c = 0; c < ARRAY_SIZE(cells); c++)
            free(cells[c]);
    }
    rc = table_render(&t, out);
    table_release(&t);
    json_array_foreach(items, i, it)
    {
        const char *warning = json_string_value(json_object_get(it, "warning"));
        const char *name = json_string_value(json_object_get(it, "gpu_class"));
        char *safe;
        if (!warning || rc != 0)
            continue;
        /* what the server wrote, made safe for a terminal */
        safe = table_cut(warning, 0);
        rc = buf_printf(out, "warning: %s: %s\n", name ? name : "?", safe);
        free(safe);
    }
    return rc;
}

int cmd_capacity(int argc, char **argv)
{
    struct client c;
    struct buf out;
    json_t *cap = NULL, *items;
    int i = 1, rc;

    while (i < argc) {
        if (cli_is_help(argv[i])) {
            capacity_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("capacity", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("capacity", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if (client_open(&c) < 0 || client_request(&c, "GET", "/v1/capacity", NULL, &cap) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    items = json_object_get(cap, "items");
    if (!json_is_array(items)) {
        cli_error("the answer to GET /v1/capacity has no \"items\" array");
        json_decref(cap);
        client_release(&c);
        return CLI_ERROR;
    }
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON)
        render_json(cap, &out);
    else if (json_array_size(items) > 0)
        render_capacity(items, &out);
    rc = work_flush(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE && json_array_size(items) == 0)
        fprintf(stderr, "no GPUs: the fleet has no GPU classes with capacity\n");
    json_decref(cap);
    client_release(&c);
    return rc;
}
