/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_whoami.c: `gpuaas whoami`, the user the token belongs to, whether it
 * is an admin, and its role bindings (GET /v1/whoami).
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/names.h"
#include "cli/render.h"
#include "cli/table.h"

#define OUTPUT_MAX ((size_t)1 << 30)

static void whoami_help(void)
{
    printf("usage: gpuaas whoami\n\n"
           "Shows the user the token belongs to, whether it is an admin, and its role\n"
           "bindings. -o json prints the server's answer.\n");
}

static void add_pair(struct table *t, const char *key, const char *value)
{
    const char *cells[2] = {key, value};
    table_add_row(t, cells);
}

/* The human view of a whoami answer. */
static int render_whoami(json_t *who, struct names *names, struct buf *out)
{
    struct render_names rn = names_for_render(names);
    json_t *user = json_object_get(who, "user");
    json_t *bindings = json_object_get(who, "bindings");
    const char *name = json_string_value(json_object_get(user, "name"));
    json_t *id = json_object_get(user, "id");
    struct table t;
    char *line;
    int rc;

    table_init(&t, 2);
    line = xasprintf("%s (id %" JSON_INTEGER_FORMAT ")", name ? name : "?",
                     json_is_integer(id) ? json_integer_value(id) : (json_int_t)0);
    add_pair(&t, "user:", line);
    free(line);
    add_pair(&t, "display name:", json_string_value(json_object_get(user, "display_name")));
    add_pair(&t, "email:", json_string_value(json_object_get(user, "email")));
    add_pair(&t, "admin:", json_is_true(json_object_get(who, "admin")) ? "yes" : "no");
    if (json_array_size(bindings) == 0)
        add_pair(&t, "roles:", "none");
    rc = table_render(&t, out);
    table_release(&t);
    if (rc == 0 && json_array_size(bindings) > 0) {
        rc = buf_puts(out, "\nroles:\n");
        if (rc == 0)
            rc = render_list_named(&model_role_bindings, bindings, &rn, out);
    }
    return rc;
}

int cmd_whoami(int argc, char **argv)
{
    struct client c;
    struct buf out;
    json_t *who = NULL;
    int rc;

    for (int i = 1; i < argc;) {
        if (cli_is_help(argv[i])) {
            whoami_help();
            return CLI_OK;
        }
        rc = cli_take_global_flag("whoami", argc, argv, &i);
        if (rc == 0)
            return cli_usage_error("whoami", "unexpected argument '%s'", argv[i]);
        if (rc != 1)
            return rc;
    }
    if (client_open(&c) < 0 || client_request(&c, "GET", "/v1/whoami", NULL, &who) < 0) {
        rc = client_report(&c);
        client_release(&c);
        return rc;
    }
    buf_init(&out, OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON)
        render_json(who, &out);
    else {
        struct names names;
        names_init(&names, &c);
        /* the bindings are the caller's own: no need to list users (which it may not) */
        names_add(&names, &model_users, json_object_get(who, "user"));
        render_whoami(who, &names, &out);
        names_release(&names);
    }
    rc = render_flush(&out);
    buf_release(&out);
    json_decref(who);
    client_release(&c);
    return rc;
}
