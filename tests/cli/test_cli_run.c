/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_run.c: `gpuaas run` against a scripted fake server: durations,
 * the command line's joining and quoting, the project taken from whoami
 * with 0, 1 or 2 projects, the body sent, idempotent replays, and usage
 * errors that must fail before any request.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/work.h"
#include "cli_harness.h"

/* The body of a raw request. */
static const char *body(const char *raw)
{
    const char *p = strstr(raw, "\r\n\r\n");
    assert_non_null(p);
    return p + 4;
}

static void assert_join(char *const *words, const char *want)
{
    int n = 0;
    char *got;

    while (words[n])
        n++;
    got = work_join_command(n, words);
    assert_string_equal(got, want);
    free(got);
}

static void test_join_command(void **state)
{
    (void)state;
    assert_join(ARGV("python", "train.py", "--epochs", "3"), "python train.py --epochs 3");
    assert_join(ARGV("python", "train it.py"), "python 'train it.py'");
    assert_join(ARGV("echo", "it's"), "echo 'it'\\''s'");
    assert_join(ARGV("echo", "\"quoted\""), "echo '\"quoted\"'");
    assert_join(ARGV("sh", "-c", "echo $HOME; ls *"), "sh -c 'echo $HOME; ls *'");
    assert_join(ARGV("x", "", "--lr=0.1", "a@b:c,d/e%f+g"), "x '' --lr=0.1 a@b:c,d/e%f+g");
    assert_join(ARGV("tab\there", "new\nline"), "'tab\there' 'new\nline'");
    assert_join(ARGV("''"), "''\\'''\\'''");
    {
        char *none = work_join_command(0, NULL);
        assert_string_equal(none, "");
        free(none);
    }
}

static const char *const submitted_json =
    "{\"id\":42,\"project_id\":3,\"flavor_id\":5,\"state\":\"queued\","
    "\"reason\":\"submitted\"}";

/* Every flag, in the body as the API names it; durations in seconds. */
static void test_body_and_durations(void **state)
{
    const struct fake_reply replies[] = {
        {201, submitted_json},
        {201, submitted_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_run,
            ARGV("run", "--flavor", "5", "--project", "3", "--replicas", "2", "--owned",
                 "--priority", "-7", "--max-runtime", "2h", "--min-runtime=15m", "--grace", "90",
                 "--no-requeue", "--name", "big one", "--image", "pytorch:2", "--instance",
                 "--duration", "7d", "--idempotency-key", "k-1", "--", "python", "train it.py",
                 "--note", "it's"),
            f.url, CLI_OUTPUT_TABLE);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "workload 42 submitted (queued)\n");
    result_free(&r);
    /* 90s, and flags after the command's "--" belong to the command */
    r = run(cmd_run,
            ARGV("run", "--flavor=5", "--project=3", "--opportunistic", "--grace", "90s", "--",
                 "--grace", "1"),
            f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_int_equal(f.n_requests, 2);
    assert_contains(req(&f, 0), "POST /v1/workloads HTTP/1.1");
    assert_string_equal(body(req(&f, 0)),
                        "{\"project_id\":3,\"flavor_id\":5,\"name\":\"big one\",\"kind\":"
                        "\"instance\",\"replicas\":2,\"command\":\"python 'train it.py' --note "
                        "'it'\\\\''s'\",\"image\":\"pytorch:2\",\"priority_class\":\"owned\","
                        "\"priority\":-7,\"max_runtime_s\":7200,\"min_runtime_s\":900,"
                        "\"grace_s\":90,\"requeue\":false,\"idempotency_key\":\"k-1\","
                        "\"duration_s\":604800}");
    assert_string_equal(body(req(&f, 1)),
                        "{\"project_id\":3,\"flavor_id\":5,\"command\":\"--grace 1\","
                        "\"priority_class\":\"opportunistic\",\"grace_s\":90}");
    result_free(&r);
    fake_free(&f);
}

/* One project bound: it is used; the flavor is looked up by name. */
static void test_project_from_whoami(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"user\":{\"id\":4,\"name\":\"alice\"},\"admin\":false,\"bindings\":["
              "{\"id\":1,\"user_id\":4,\"role\":\"member\",\"org_id\":null,\"project_id\":3},"
              "{\"id\":2,\"user_id\":4,\"role\":\"viewer\",\"org_id\":1,\"project_id\":null},"
              "{\"id\":3,\"user_id\":4,\"role\":\"viewer\",\"org_id\":null,\"project_id\":3}]}"},
        {200, "{\"items\":[{\"id\":5,\"name\":\"h100.1x\"}],\"next_after\":null}"},
        {200, "{\"id\":42,\"project_id\":3,\"state\":\"running\"}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_run,
            ARGV("run", "--flavor", "h100.1x", "--idempotency-key", "k1", "--", "./train.sh"),
            f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "workload 42 already submitted with this key (running)\n");
    assert_int_equal(f.n_requests, 3);
    assert_contains(req(&f, 0), "GET /v1/whoami HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/flavors?name=h100.1x&limit=2 HTTP/1.1");
    assert_string_equal(body(req(&f, 2)),
                        "{\"project_id\":3,\"flavor_id\":5,\"command\":\"./train.sh\","
                        "\"idempotency_key\":\"k1\"}");
    result_free(&r);
    fake_free(&f);
}

/* No project bound, or two: a usage error after whoami, nothing submitted. */
static void test_project_ambiguous(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"user\":{\"id\":1,\"name\":\"admin\"},\"admin\":true,\"bindings\":[]}"},
        {200, "{\"user\":{\"id\":4,\"name\":\"alice\"},\"admin\":false,\"bindings\":["
              "{\"id\":1,\"role\":\"member\",\"org_id\":null,\"project_id\":3},"
              "{\"id\":2,\"role\":\"member\",\"org_id\":null,\"project_id\":8}]}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_run, ARGV("run", "--flavor", "5"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "gpuaas: error: give --project: your role bindings name no "
                               "project\nhint: see 'gpuaas run --help'\n");
    result_free(&r);
    r = run(cmd_run, ARGV("run", "--flavor", "5", "--", "true"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "gpuaas: error: give --project: you belong to 2 projects\n"
                               "hint: 'gpuaas whoami' lists them; write --project NAME, ORG/NAME "
                               "or an id\n");
    assert_int_equal(f.n_requests, 2);
    assert_contains(req(&f, 0), "GET /v1/whoami HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/whoami HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* A project by ORG/NAME, a flavor that does not exist: exit 1 with a hint. */
static void test_unknown_flavor(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":1,\"name\":\"acme\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":3,\"name\":\"ml\"}],\"next_after\":null}"},
        {200, "{\"items\":[],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_run, ARGV("run", "--project", "acme/ml", "--flavor", "h200.1x"), f.url,
            CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.err, "gpuaas: error: --flavor: no flavor named 'h200.1x'\n"
                               "hint: 'gpuaas flavors list' shows the flavors offered\n");
    assert_int_equal(f.n_requests, 3);
    assert_contains(req(&f, 0), "GET /v1/organizations?name=acme&limit=2 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/projects?name=ml&org_id=1&limit=2 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* Words that are wrong on their own: exit 2 before any request. */
static void test_usage_errors(void **state)
{
    const struct {
        char **argv;
        const char *err;
    } cases[] = {
        {ARGV("run"), "gpuaas: error: 'run' needs --flavor NAME|ID or --gpus N; 'gpuaas flavors "
                      "list' shows the flavors\n"},
        {ARGV("run", "--flavor", "5", "--owned", "--opportunistic"),
         "gpuaas: error: give one of --auto, --owned, --opportunistic\n"},
        {ARGV("run", "--flavor", "5", "python", "x.py"),
         "gpuaas: error: unexpected argument 'python'; put the command after '--': gpuaas run "
         "--flavor F -- python ...\n"},
        {ARGV("run", "--flavor", "5", "--colour", "red"),
         "gpuaas: error: unknown flag '--colour' for 'run'\n"},
        {ARGV("run", "--flavor", "5", "--max-runtime", "1.5h"),
         "gpuaas: error: --max-runtime: '1.5h' is not a duration; write it as 90, 90s, 15m, 2h "
         "or 7d\n"},
        {ARGV("run", "--flavor", "5", "--grace", "-5"),
         "gpuaas: error: --grace: '-5' is not a duration; write it as 90, 90s, 15m, 2h or 7d\n"},
        {ARGV("run", "--flavor", "5", "--grace", "2d"),
         "gpuaas: error: --grace: '2d' is out of range (0 to 86400 seconds)\n"},
        {ARGV("run", "--flavor", "5", "--max-runtime", "0"),
         "gpuaas: error: --max-runtime: '0' is out of range (1 to 1099511627776 seconds)\n"},
        {ARGV("run", "--flavor", "5", "--duration", "2w"),
         "gpuaas: error: --duration: '2w' is not a duration; write it as 90, 90s, 15m, 2h or "
         "7d\n"},
        {ARGV("run", "--flavor", "5", "--duration", ""),
         "gpuaas: error: --duration: '' is not a duration; write it as 90, 90s, 15m, 2h or 7d\n"},
        {ARGV("run", "--flavor", "5", "--replicas", "0"),
         "gpuaas: error: --replicas must be a number from 1 to 256, not '0'\n"},
        {ARGV("run", "--flavor", "5", "--priority", "5000"),
         "gpuaas: error: --priority must be a number from -1000 to 1000, not '5000'\n"},
        {ARGV("run", "--flavor", "5", "--idempotency-key", ""),
         "gpuaas: error: --idempotency-key must be 1 to 128 bytes long, not 0\n"},
        {ARGV("run", "--flavor", "5", "--name"), "gpuaas: error: flag '--name' needs a value\n"},
        {ARGV("run", "--flavor", "5", "--name", "bad\xff"),
         "gpuaas: error: --name is not valid UTF-8\n"},
        {ARGV("run", "--flavor", "5", "-o", "yaml"),
         "gpuaas: error: output format must be 'table', 'wide' or 'json', not 'yaml'\n"},
    };
    struct fake_http f;
    (void)state;

    fake_start(&f, NULL, 0);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct result r = run(cmd_run, cases[i].argv, f.url, CLI_OUTPUT_TABLE);
        char *want = xasprintf("%shint: see 'gpuaas run --help'\n", cases[i].err);
        assert_int_equal(r.rc, 2);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err, want);
        free(want);
        result_free(&r);
    }
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    cli_opts.output = CLI_OUTPUT_TABLE;
    fake_free(&f);
}

/* A refused submit: the server's message, exit 1; -o json: the server's JSON. */
static void test_refused_and_json(void **state)
{
    const struct fake_reply replies[] = {
        {400, "{\"error\":{\"code\":\"invalid\",\"message\":\"flavor 'old' is not offered any "
              "more\"}}"},
        {201, submitted_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_run, ARGV("run", "--flavor", "5", "--project", "3"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "gpuaas: error: flavor 'old' is not offered any more (HTTP 400, "
                               "POST /v1/workloads)\n");
    result_free(&r);
    r = run(cmd_run, ARGV("run", "--flavor", "5", "--project", "3"), f.url, CLI_OUTPUT_JSON);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "{\n  \"id\": 42,\n  \"project_id\": 3,\n  \"flavor_id\": 5,\n"
                               "  \"state\": \"queued\",\n  \"reason\": \"submitted\"\n}\n");
    result_free(&r);
    fake_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_command),        cmocka_unit_test(test_body_and_durations),
        cmocka_unit_test(test_project_from_whoami), cmocka_unit_test(test_project_ambiguous),
        cmocka_unit_test(test_unknown_flavor),      cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_refused_and_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
