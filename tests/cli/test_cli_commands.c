/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_commands.c: the CLI's commands run whole against a scripted fake
 * server: the requests each one makes, what it prints, and its exit code,
 * including usage errors that must fail before any request.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli_harness.h"

static void test_create_with_ref_name(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":2,\"name\":\"acme\"}],\"next_after\":null}"},
        {201, "{\"id\":12,\"org_id\":2,\"name\":\"dl\",\"display_name\":\"Deep learning\","
              "\"description\":\"\",\"weight\":3,\"created_at\":\"2026-11-30T15:49:47Z\","
              "\"updated_at\":\"2026-11-30T15:49:47Z\"}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource,
            ARGV("project", "create", "dl", "--org", "acme", "--display-name=Deep learning",
                 "--weight", "3"),
            f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "id:            12\n"
                               "org_id:        2\n"
                               "name:          dl\n"
                               "display_name:  Deep learning\n"
                               "description:   -\n"
                               "weight:        3\n"
                               "created_at:    2026-11-30T15:49:47Z\n"
                               "updated_at:    2026-11-30T15:49:47Z\n");
    assert_int_equal(f.n_requests, 2);
    assert_contains(req(&f, 0), "GET /v1/organizations?name=acme&limit=2 HTTP/1.1");
    assert_contains(req(&f, 1), "POST /v1/projects HTTP/1.1");
    assert_contains(req(&f, 1),
                    "\r\n\r\n{\"org_id\":2,\"display_name\":\"Deep learning\",\"weight\":3,"
                    "\"name\":\"dl\"}");
    result_free(&r);
    fake_free(&f);
}

static void test_list_all_pages(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":1,\"name\":\"acme\",\"display_name\":\"Acme\","
              "\"parent_id\":null,\"manager_id\":3,\"cost_center\":\"cc\"}],\"next_after\":1}"},
        {200, "{\"items\":[{\"id\":2,\"name\":\"beta\",\"display_name\":\"\","
              "\"parent_id\":1,\"manager_id\":null,\"cost_center\":\"\"}],\"next_after\":null}"},
        /* the names of the managers and parents, one list each */
        {200, "{\"items\":[{\"id\":3,\"name\":\"carol\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"name\":\"acme\"},{\"id\":2,\"name\":\"beta\"}],"
              "\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"name\":\"acme\"}],\"next_after\":null}"},
        {200, "{\"items\":[],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("orgs", "list", "--all", "--limit", "1"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "ID  NAME  DISPLAY_NAME  PARENT  MANAGER  COST_CENTER\n"
                               "1   acme  Acme          -       carol    cc\n"
                               "2   beta  -             acme    -        -\n");
    assert_string_equal(r.err, "");
    result_free(&r);
    /* a filter given by name resolves first */
    r = run(cmd_resource, ARGV("organizations", "--parent", "acme", "-o", "json"), f.url,
            CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\n  \"items\": [],\n  \"next_after\": null\n}\n");
    assert_int_equal(f.n_requests, 6);
    assert_contains(req(&f, 0), "GET /v1/organizations?limit=1 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/organizations?limit=1&after=1 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/users?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 3), "GET /v1/organizations?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/organizations?name=acme&limit=2 HTTP/1.1");
    assert_contains(req(&f, 5), "GET /v1/organizations?parent_id=1 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

static void test_list_more_hint_and_filters(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":7,\"name\":\"gpu01\",\"cluster_id\":1,\"state\":\"drain\","
              "\"cpu_milli\":64000,\"memory_mib\":515000,\"labels\":{\"rack\":\"r1\"}}],"
              "\"next_after\":7}"},
        /* clusters the caller may not list: their ids show as #N */
        {403, "{\"error\":{\"code\":\"forbidden\",\"message\":\"admins only\"}}"},
        {200, "{\"items\":[],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("nodes", "list", "--cluster", "1", "--state", "drain"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "ID  CLUSTER  NAME   STATE  CPUS  MEMORY      LABELS\n"
                               "7   #1       gpu01  drain  64    515000 MiB  rack=r1\n");
    assert_string_equal(r.err, "(more nodes: add --all, or --after 7 for the next page)\n");
    result_free(&r);
    r = run(cmd_resource, ARGV("flavors", "list", "--active", "false"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "no flavors found\n");
    assert_contains(req(&f, 0), "GET /v1/nodes?cluster_id=1&state=drain HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/clusters?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/flavors?active=false HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* --memory 128GiB, --cost-per-gpu-hour 1.80, --guaranteed 0.5 reach the server as exact integers.
 */
static void test_human_units_in_flags(void **state)
{
    static const struct fake_reply replies[] = {
        {201, "{\"id\":3,\"name\":\"big\"}"},
        {200, "{\"id\":5,\"name\":\"p\"}"},
        {200, "{\"id\":7}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource,
            ARGV("flavors", "create", "big", "--memory", "128GiB", "--gpu", "0.5",
                 "--price-per-hour", "2.50"),
            f.url, CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 0);
    result_free(&r);
    r = run(cmd_resource, ARGV("pools", "update", "5", "--cost-per-gpu-hour=1.80"), f.url,
            CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 0);
    result_free(&r);
    r = run(cmd_resource, ARGV("quotas", "update", "7", "--guaranteed", "16", "--limit", "null"),
            f.url, CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 0);
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 3);
    assert_contains(req(&f, 0), "\"memory_mib\":131072");
    assert_contains(req(&f, 0), "\"gpu_milli\":500");
    assert_contains(req(&f, 0), "\"price_per_hour_micros\":2500000");
    assert_contains(req(&f, 1), "{\"cost_per_gpu_hour_micros\":1800000}");
    assert_contains(req(&f, 2), "\"guaranteed_milli\":16000");
    assert_contains(req(&f, 2), "\"limit_milli\":null");
    fake_free(&f);

    /* bad quantities and mistyped flags are usage errors, before any request */
    fake_start(&f, NULL, 0);
    r = run(cmd_resource, ARGV("flavors", "create", "x", "--memory", "128GB"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err, "gpuaas: error: --memory: '128GB' is not a size; write it as 512MiB, "
                           "128GiB or 1TiB (a plain number is MiB)\n");
    result_free(&r);
    r = run(cmd_resource, ARGV("pools", "update", "5", "--cost-per-gpu-hour", "1.8000001"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err, "'1.8000001' has more than 6 decimals");
    result_free(&r);
    r = run(cmd_resource, ARGV("flavors", "create", "x", "--memroy", "1GiB"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err,
                    "unknown flag '--memroy' for 'flavors create'; did you mean '--memory'?\n");
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    fake_free(&f);
}

/* allocation list names its workload, project, node and class; GPUs have no names: ids. */
static void test_allocations_named(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":9,\"workload_id\":5,\"project_id\":2,\"replica\":0,"
              "\"node_id\":3,\"gpu_id\":17,\"gpu_class_id\":1},"
              "{\"id\":10,\"workload_id\":6,\"project_id\":2,\"replica\":0,"
              "\"node_id\":3,\"gpu_id\":18,\"gpu_class_id\":1}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":5,\"name\":\"train\"},{\"id\":6,\"name\":\"\"}],"
              "\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":2,\"name\":\"ml\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":3,\"name\":\"node-a\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"name\":\"h100\"}],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("allocations", "list"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "ID  WORKLOAD  PROJECT  REPLICA  NODE    GPU_ID  GPU_CLASS\n"
                               "9   train     ml       0        node-a  17      h100\n"
                               "10  6         ml       0        node-a  18      h100\n");
    assert_int_equal(f.n_requests, 5);
    assert_contains(req(&f, 1), "GET /v1/workloads?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/gpu-classes?limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* The API lists the audit log oldest first; the table shows the newest first, from every page. */
static void test_audit_newest_first(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":1,\"time\":\"2026-11-30T10:00:00Z\",\"actor\":\"root\","
              "\"action\":\"create\",\"resource\":\"pools\",\"object_id\":4},"
              "{\"id\":2,\"time\":\"2026-11-30T11:00:00Z\",\"actor\":\"root\","
              "\"action\":\"update\",\"resource\":\"pools\",\"object_id\":4}],\"next_after\":2}"},
        {200, "{\"items\":[{\"id\":3,\"time\":\"2026-11-30T12:00:00Z\",\"actor\":\"root\","
              "\"action\":\"delete\",\"resource\":\"pools\",\"object_id\":4}],"
              "\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("audit", "list", "--limit", "2"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "ID  TIME              ACTOR  ACTION  RESOURCE  OBJECT_ID  REQUEST_ID\n"
                        "3   2026-11-30 12:00  root   delete  pools     4          -\n"
                        "2   2026-11-30 11:00  root   update  pools     4          -\n");
    assert_string_equal(r.err, "(the newest 2 of 3 shown; --limit N for more, --all for all)\n");
    assert_int_equal(f.n_requests, 2);
    assert_contains(req(&f, 0), "GET /v1/audit?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/audit?limit=1000&after=2 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

static void test_token_create_shows_secret(void **state)
{
    static const struct fake_reply replies[] = {
        {201, "{\"id\":9,\"user_id\":1,\"name\":\"ci\",\"prefix\":\"gpa_ab\","
              "\"expires_at\":\"2027-01-01T00:00:00Z\",\"revoked_at\":null,"
              "\"created_at\":\"2026-11-30T15:49:47Z\",\"token\":\"gpa_abcdef0123\"}"},
        {201, "{\"id\":10,\"name\":\"ci\",\"token\":\"gpa_xyz\"}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("token", "create", "ci", "--expires-at", "2027-01-01T00:00:00Z"),
            f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "id:          9\n"
                               "user_id:     1\n"
                               "name:        ci\n"
                               "prefix:      gpa_ab\n"
                               "expires_at:  2027-01-01T00:00:00Z\n"
                               "revoked_at:  -\n"
                               "created_at:  2026-11-30T15:49:47Z\n"
                               "\n"
                               "The token is shown once, now; store it safely, it cannot be shown "
                               "again:\n"
                               "\n"
                               "    gpa_abcdef0123\n"
                               "\n");
    result_free(&r);
    r = run(cmd_resource, ARGV("tokens", "create", "ci"), f.url, CLI_OUTPUT_JSON);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "{\n  \"id\": 10,\n  \"name\": \"ci\",\n  \"token\": \"gpa_xyz\"\n}\n");
    assert_contains(req(&f, 0),
                    "\r\n\r\n{\"expires_at\":\"2027-01-01T00:00:00Z\",\"name\":\"ci\"}");
    result_free(&r);
    fake_free(&f);
}

static void test_show_update_delete(void **state)
{
    static const struct fake_reply replies[] = {
        /* show 4 -o json */
        {200, "{\"id\":4,\"name\":\"alice\"}"},
        /* update alice --disabled --email a@x */
        {200, "{\"items\":[{\"id\":4,\"name\":\"alice\"}],\"next_after\":null}"},
        {200, "{\"id\":4,\"name\":\"alice\",\"disabled\":true}"},
        /* delete alice */
        {200, "{\"items\":[{\"id\":4,\"name\":\"alice\"}],\"next_after\":null}"},
        {204, NULL},
        /* revoke token 9 */
        {204, NULL},
        /* show 99: not found */
        {404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no such object\"}}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_resource, ARGV("users", "show", "4"), f.url, CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\n  \"id\": 4,\n  \"name\": \"alice\"\n}\n");
    result_free(&r);

    r = run(cmd_resource, ARGV("user", "update", "alice", "--disabled", "--email", "a@x"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "id:        4\nname:      alice\ndisabled:  yes\n");
    result_free(&r);

    r = run(cmd_resource, ARGV("users", "rm", "alice"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "deleted user 'alice' (id 4)\n");
    result_free(&r);

    r = run(cmd_resource, ARGV("tokens", "revoke", "9"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "revoked token 9\n");
    result_free(&r);

    r = run(cmd_resource, ARGV("gpus", "show", "99"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "gpuaas: error: no such object (HTTP 404, GET /v1/gpus/99)\n");
    result_free(&r);

    assert_int_equal(f.n_requests, 7);
    assert_contains(req(&f, 0), "GET /v1/users/4 HTTP/1.1");
    assert_contains(req(&f, 2), "PATCH /v1/users/4 HTTP/1.1");
    assert_contains(req(&f, 2), "\r\n\r\n{\"disabled\":true,\"email\":\"a@x\"}");
    assert_contains(req(&f, 4), "DELETE /v1/users/4 HTTP/1.1");
    assert_contains(req(&f, 5), "DELETE /v1/tokens/9 HTTP/1.1");
    fake_free(&f);
}

/* Usage errors exit 2 with a hint, before any request. */
static void test_usage_errors(void **state)
{
    const struct {
        char **argv;
        const char *err;
    } cases[] = {
        {ARGV("projects", "create", "x", "--colour", "red"),
         "gpuaas: error: unknown flag '--colour' for 'projects create'\n"
         "hint: see 'gpuaas projects create --help'\n"},
        {ARGV("projects", "create", "x", "--org", "1", "--weight", "abc"),
         "gpuaas: error: --weight: 'abc' is not an integer\n"
         "hint: see 'gpuaas projects create --help'\n"},
        {ARGV("projects", "create", "x", "--org", "1", "--weight=0"),
         "gpuaas: error: --weight: '0' is out of range (1 to 1000)\n"
         "hint: see 'gpuaas projects create --help'\n"},
        {ARGV("projects", "create", "x"),
         "gpuaas: error: 'projects create' needs --org (owning organization)\n"
         "hint: see 'gpuaas projects create --help'\n"},
        {ARGV("projects", "update", "x", "--org", "2"),
         "gpuaas: error: '--org' cannot be changed after creation\n"
         "hint: see 'gpuaas projects update --help'\n"},
        {ARGV("projects", "update", "x"),
         "gpuaas: error: nothing to change; give the fields as --FIELD VALUE\n"
         "hint: see 'gpuaas projects update --help'\n"},
        {ARGV("projects", "create", "x", "--id", "4"),
         "gpuaas: error: '--id' is set by the server\n"
         "hint: see 'gpuaas projects create --help'\n"},
        {ARGV("projects", "show"), "gpuaas: error: 'projects show' needs the project's id or name\n"
                                   "hint: see 'gpuaas projects show --help'\n"},
        {ARGV("projects", "list", "ml"), "gpuaas: error: unexpected argument 'ml'\n"
                                         "hint: see 'gpuaas projects list --help'\n"},
        {ARGV("projects", "list", "--weight", "1"),
         "gpuaas: error: projects cannot be filtered by '--weight'\n"
         "hint: see 'gpuaas projects list --help'\n"},
        {ARGV("projects", "list", "--limit", "0"),
         "gpuaas: error: --limit must be a number from 1 to 100000, not '0'\n"
         "hint: see 'gpuaas projects list --help'\n"},
        {ARGV("projects", "frob"),
         "gpuaas: error: unknown verb 'frob' for projects; use list, show, create, update or "
         "delete\n"
         "hint: see 'gpuaas projects --help'\n"},
        {ARGV("audit", "create"), "gpuaas: error: audit cannot be created through the API\n"
                                  "hint: see 'gpuaas audit --help'\n"},
        {ARGV("bindings", "update", "3", "--role", "viewer"),
         "gpuaas: error: role-bindings cannot be updated through the API\n"
         "hint: see 'gpuaas role-bindings --help'\n"},
        {ARGV("quotas", "create", "q1", "--project", "1"),
         "gpuaas: error: 'quotas create' takes no NAME; give the fields as --FIELD VALUE\n"
         "hint: see 'gpuaas quotas create --help'\n"},
        {ARGV("orgs", "create", "a", "--name", "b"),
         "gpuaas: error: the name is given twice, as 'a' and --name\n"
         "hint: see 'gpuaas organizations create --help'\n"},
        {ARGV("users", "update", "bob", "--disabled", "maybe"),
         "gpuaas: error: --disabled: 'maybe' is not a boolean; use true or false\n"
         "hint: see 'gpuaas users update --help'\n"},
        {ARGV("nodes", "update", "n1", "--state", "gone"),
         "gpuaas: error: --state: 'gone' is not one of: ready drain down\n"
         "hint: see 'gpuaas nodes update --help'\n"},
        {ARGV("clusters", "create", "c", "--backend", "sim", "--labels", "oops"),
         "gpuaas: error: --labels: 'oops' is not a list of key=value pairs such as "
         "'site=a,rack=b'\n"
         "hint: see 'gpuaas clusters create --help'\n"},
        {ARGV("orgs", "list", "-o", "yaml"),
         "gpuaas: error: output format must be 'table', 'wide' or 'json', not 'yaml'\n"
         "hint: see 'gpuaas organizations list --help'\n"},
        {ARGV("orgs", "create", "a", "--display-name"),
         "gpuaas: error: flag '--display-name' needs a value\n"
         "hint: see 'gpuaas organizations create --help'\n"},
        {ARGV("tokens", "show", "ci"),
         "gpuaas: error: tokens are known by id only, and 'ci' is not an id\n"
         "hint: see 'gpuaas tokens show --help'\n"},
    };
    struct fake_http f;
    (void)state;

    /* a server that expects nothing: any request would find no listener thread */
    fake_start(&f, NULL, 0);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct result r = run(cmd_resource, cases[i].argv, f.url, CLI_OUTPUT_TABLE);
        if (r.rc != 2 || strcmp(r.err, cases[i].err) != 0)
            fail_msg("case %zu (%s %s): rc %d, stderr:\n%s\nwanted:\n%s", i, cases[i].argv[0],
                     cases[i].argv[1], r.rc, r.err, cases[i].err);
        assert_string_equal(r.out, "");
        result_free(&r);
    }
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    fake_free(&f);
}

static void test_help(void **state)
{
    struct result r =
        run(cmd_resource, ARGV("projects", "create", "--help"), NULL, CLI_OUTPUT_TABLE);
    (void)state;
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "usage: gpuaas projects create [NAME] --FIELD VALUE ...\n");
    assert_contains(r.out, "  --org ORG ");
    assert_contains(r.out, "owning organization (required)");
    assert_contains(r.out, "  --weight N ");
    assert_string_equal(r.err, "");
    result_free(&r);

    r = run(cmd_resource, ARGV("audit", "--help"), NULL, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "  list ");
    assert_true(strstr(r.out, "  create ") == NULL);
    result_free(&r);
}

static void test_whoami(void **state)
{
    static const struct fake_reply replies[] = {
        {200, "{\"user\":{\"id\":3,\"name\":\"alice\",\"email\":\"alice@example.com\","
              "\"display_name\":\"Alice\",\"disabled\":false},"
              "\"bindings\":[{\"id\":1,\"user_id\":3,\"role\":\"org-admin\",\"org_id\":2,"
              "\"project_id\":null},{\"id\":5,\"user_id\":3,\"role\":\"member\","
              "\"org_id\":null,\"project_id\":4}],\"admin\":false}"},
        {200, "{\"items\":[{\"id\":2,\"name\":\"acme\"}],\"next_after\":null}"},
        {200, "{\"items\":[],\"next_after\":null}"}, /* a project it cannot see */
        {401, "{\"error\":{\"code\":\"unauthenticated\",\"message\":\"token expired\"}}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_whoami, ARGV("whoami"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "user:          alice (id 3)\n"
                               "display name:  Alice\n"
                               "email:         alice@example.com\n"
                               "admin:         no\n"
                               "\n"
                               "roles:\n"
                               "ID  USER   ROLE       ORG   PROJECT\n"
                               "1   alice  org-admin  acme  -\n"
                               "5   alice  member     -     #4\n");
    result_free(&r);
    r = run(cmd_whoami, ARGV("whoami"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "gpuaas: error: token expired (HTTP 401, GET /v1/whoami)\n"
                               "hint: the token is wrong, expired or revoked; run 'gpuaas "
                               "login' with a valid token\n");
    result_free(&r);
    fake_free(&f);
}

static void test_connection_refused_exit_1(void **state)
{
    char url[64], want[256];
    struct result r;
    (void)state;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake_dead_port());
    r = run(cmd_resource, ARGV("orgs", "list"), url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 1);
    snprintf(want, sizeof(want),
             "gpuaas: error: could not connect to %s: Connection refused\n"
             "hint: is gpuaasd running at %s?\n",
             url, url);
    assert_string_equal(r.err, want);
    result_free(&r);
}

static void test_login_logout(void **state)
{
    static const struct fake_reply replies[] = {
        {401, "{\"error\":{\"code\":\"unauthenticated\",\"message\":\"unknown token\"}}"},
        {200, "{\"user\":{\"id\":1,\"name\":\"root\"},\"bindings\":[],\"admin\":true}"},
    };
    char dir[] = "/tmp/test_cli_login.XXXXXX";
    char *path, *cmd, *text, want[256];
    struct fake_http f;
    struct result r;
    struct stat st;
    FILE *fp;
    (void)state;

    assert_non_null(mkdtemp(dir));
    path = xasprintf("%s/conf/config", dir);
    setenv("GPUAAS_CONFIG", path, 1);
    unsetenv("GPUAAS_TOKEN");
    unsetenv("GPUAAS_SERVER");
    fake_start(&f, replies, ARRAY_SIZE(replies));

    /* a refused token saves nothing */
    r = run(cmd_login, ARGV("login"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 1);
    assert_contains(r.err, "unknown token (HTTP 401, GET /v1/whoami)");
    assert_contains(r.err, "hint: check the token");
    assert_int_equal(stat(path, &st), -1);
    result_free(&r);

    r = run(cmd_login, ARGV("login"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    snprintf(want, sizeof(want),
             "logged in to %s as root (admin)\nsaved the server and token in %s\n", f.url, path);
    assert_string_equal(r.out, want);
    result_free(&r);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    fp = fopen(path, "r");
    assert_non_null(fp);
    text = xcalloc(1, 4096);
    assert_true(fread(text, 1, 4095, fp) > 0);
    fclose(fp);
    snprintf(want, sizeof(want), "server = %s\ntoken = " TOKEN "\n", f.url);
    assert_contains(text, want);
    free(text);

    r = run(cmd_logout, ARGV("logout"), NULL, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    snprintf(want, sizeof(want), "removed the token from %s\n", path);
    assert_string_equal(r.out, want);
    result_free(&r);
    fp = fopen(path, "r");
    text = xcalloc(1, 4096);
    assert_true(fread(text, 1, 4095, fp) > 0);
    fclose(fp);
    assert_null(strstr(text, "token ="));
    assert_non_null(strstr(text, "server = "));
    free(text);

    r = run(cmd_logout, ARGV("logout"), NULL, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "not logged in");
    result_free(&r);

    fake_free(&f);
    unsetenv("GPUAAS_CONFIG");
    cmd = xasprintf("rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_with_ref_name),
        cmocka_unit_test(test_list_all_pages),
        cmocka_unit_test(test_list_more_hint_and_filters),
        cmocka_unit_test(test_human_units_in_flags),
        cmocka_unit_test(test_audit_newest_first),
        cmocka_unit_test(test_allocations_named),
        cmocka_unit_test(test_token_create_shows_secret),
        cmocka_unit_test(test_show_update_delete),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_whoami),
        cmocka_unit_test(test_connection_refused_exit_1),
        cmocka_unit_test(test_login_logout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
