/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_work.c: the workload views (ps, queue, timeline, preemptions,
 * events, capacity, show) rendered from canned server JSON with the exact
 * text expected, the requests they make (one list per kind of name, not
 * one per row), and cancel's exit codes. "Now" is fixed through
 * cli_opts.now_ms so ages and durations are exact.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/work.h"

#define NOW_MS INT64_C(1796056600000) /* 2026-11-30T16:36:40Z */
#define CLI_HARNESS_NOW_MS NOW_MS
#include "cli_harness.h"

/* Every line of text at most max characters wide. */
static void assert_width(const char *text, size_t max)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        size_t n = nl ? (size_t)(nl - text) : strlen(text);
        if (n > max)
            fail_msg("line '%.*s' is %zu characters wide", (int)n, text, n);
        text += n + (nl ? 1 : 0);
    }
}

static const char *const projects_json =
    "{\"items\":[{\"id\":1,\"name\":\"ml\"},{\"id\":2,\"name\":\"cv\"}],\"next_after\":null}";
static const char *const flavors_json =
    "{\"items\":[{\"id\":1,\"name\":\"h100.1x\"},{\"id\":2,\"name\":\"h100.4x\"}],"
    "\"next_after\":null}";
static const char *const empty_json = "{\"items\":[],\"next_after\":null}";

/* ---- ps ---- */

static void test_ps_unfinished(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":3,\"project_id\":1,\"name\":\"\",\"flavor_id\":2,"
              "\"priority_class\":\"opportunistic\",\"replicas\":4,\"state\":\"queued\","
              "\"reason\":\"waiting for 4 h100: project at its limit 16/16, and the "
              "organization acme is at its cap 32/32 as well\",\"queue_position\":1,"
              "\"submitted_ms\":1796056509194,\"started_at\":null}],\"next_after\":null}"},
        {200, "{\"items\":[],\"next_after\":null}"}, /* admitted: none */
        {200, "{\"items\":[{\"id\":1,\"project_id\":1,\"name\":\"train\",\"flavor_id\":1,"
              "\"priority_class\":\"owned\",\"replicas\":1,\"state\":\"running\","
              "\"reason\":\"running\",\"submitted_ms\":1796052000000,"
              "\"started_at\":\"2026-11-30T15:20:00Z\"},"
              "{\"id\":2,\"project_id\":2,\"name\":\"a-very-long-name-for-a-workload\","
              "\"flavor_id\":2,\"priority_class\":\"opportunistic\",\"replicas\":2,"
              "\"state\":\"running\",\"reason\":\"running on borrowed capacity\","
              "\"started_at\":\"2026-11-30T16:26:40Z\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":4,\"project_id\":9,\"flavor_id\":7,"
              "\"priority_class\":\"opportunistic\",\"replicas\":1,\"state\":\"preempting\","
              "\"reason\":\"preempted for workload 9\",\"started_at\":\"2026-11-30T16:36:10Z\"}],"
              "\"next_after\":null}"},
        {200, projects_json},
        {200, flavors_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    cli_opts.tty = 1; /* a person at a terminal: long cells are cut */
    r = run(cmd_ps, ARGV("ps"), f.url, CLI_OUTPUT_TABLE);
    cli_opts.tty = 0;
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(
        r.out,
        "ID  NAME                  PROJECT  FLAVOR   CLASS  REPLICAS  STATE       AGE/RUNTIME  "
        "REASON\n"
        "1   train                 ml       h100.1x  P1     1         running     1h16m        "
        "running\n"
        "2   a-very-long-name-...  cv       h100.4x  P2     2         running     10m00s       "
        "running on borrowed capacity\n"
        "3   -                     ml       h100.4x  P2     4         queued      1m30s        "
        "waiting for 4 h100: project at ...\n"
        "4   -                     #9       #7       P2     1         preempting  30s          "
        "preempted for workload 9\n");
    assert_width(r.out, 120);
    assert_int_equal(f.n_requests, 6);
    assert_contains(req(&f, 0), "GET /v1/workloads?state=queued&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/workloads?state=admitted&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/workloads?state=running&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 3), "GET /v1/workloads?state=preempting&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/projects?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 5), "GET /v1/flavors?limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

static void test_ps_all_pages_limit_and_state(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":[{\"id\":5,\"project_id\":2,\"name\":\"gone\",\"flavor_id\":2,"
              "\"priority_class\":\"opportunistic\",\"replicas\":1,\"state\":\"cancelled\","
              "\"reason\":\"cancelled while queued\",\"started_at\":null,"
              "\"finished_at\":\"2026-11-30T16:30:00Z\"}],\"next_after\":5}"},
        {200, "{\"items\":[{\"id\":6,\"project_id\":1,\"name\":\"done\",\"flavor_id\":1,"
              "\"priority_class\":\"owned\",\"replicas\":1,\"state\":\"succeeded\","
              "\"reason\":\"exit 0\",\"started_at\":\"2026-11-30T15:20:00Z\","
              "\"finished_at\":\"2026-11-30T16:20:00Z\"}],\"next_after\":null}"},
        {200, projects_json},
        {200, flavors_json},
        {200, empty_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_ps, ARGV("ps", "--all", "--limit", "1"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "ID  NAME  PROJECT  FLAVOR   CLASS  REPLICAS  STATE      AGE/RUNTIME  "
                        "REASON\n"
                        "6   done  ml       h100.1x  P1     1         succeeded  1h00m        "
                        "exit 0\n");
    assert_string_equal(r.err, "(the newest 1 of 2 shown; raise --limit to see more)\n");
    result_free(&r);
    r = run(cmd_ps, ARGV("ps", "--project", "2", "--state", "failed"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "no workloads found\n");
    assert_int_equal(f.n_requests, 5);
    assert_contains(req(&f, 0), "GET /v1/workloads?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/workloads?limit=1000&after=5 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/workloads?project_id=2&state=failed&limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* In a pipe nothing is cut (scripts and grep see every word); -o wide does the same at a terminal.
 */
static void test_ps_piped_wide_and_user(void **state)
{
    static const char *const reason = "waiting for 4 h100: project at its limit 16/16, and the "
                                      "organization acme is at its cap 32/32 as well";
    char *one = xasprintf("{\"items\":[{\"id\":3,\"project_id\":1,\"name\":\"a-very-long-name-"
                          "for-a-workload\",\"flavor_id\":2,\"priority_class\":\"owned\","
                          "\"replicas\":4,\"state\":\"queued\",\"reason\":\"%s\","
                          "\"submitted_ms\":1796056509194}],\"next_after\":null}",
                          reason);
    const struct fake_reply replies[] = {
        {200, one},
        {200, projects_json},
        {200, flavors_json},
        {200, one},
        {200, projects_json},
        {200, flavors_json},
        {200, "{\"items\":[{\"id\":7,\"name\":\"alice\"}],\"next_after\":null}"},
        {200, empty_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_ps, ARGV("ps", "--state", "queued"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, reason);
    assert_contains(r.out, "a-very-long-name-for-a-workload");
    result_free(&r);
    cli_opts.tty = 1;
    r = run(cmd_ps, ARGV("ps", "--state", "queued", "-o", "wide"), f.url, CLI_OUTPUT_TABLE);
    cli_opts.tty = 0;
    cli_opts.wide = false;
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, reason);
    result_free(&r);
    r = run(cmd_ps, ARGV("ps", "--user", "alice", "--state", "running"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "no workloads found\n");
    assert_int_equal(f.n_requests, 8);
    assert_contains(req(&f, 6), "GET /v1/users?name=alice&limit=2 HTTP/1.1");
    assert_contains(req(&f, 7), "GET /v1/workloads?user_id=7&state=running&limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
    free(one);
}

/* usage names the organization of each total; bad values are usage errors before any request. */
static void test_usage_totals_and_bad_values(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"period\":\"2026-11\",\"provisional\":true,\"items\":[{\"project\":\"ml\","
              "\"flavor\":\"h100.1x\",\"class\":\"owned\",\"hours\":\"2.0\","
              "\"gpu_hours\":\"2.0\",\"amount\":\"12.00\",\"currency\":\"USD\","
              "\"org_id\":1}],\"totals\":[{\"org_id\":1,\"currency\":\"USD\","
              "\"amount\":\"12.00\"}]}"},
        {200, "{\"items\":[{\"id\":1,\"name\":\"acme\"}],\"next_after\":null}"},
    };
    const struct {
        char **argv;
        int (*fn)(int, char **);
        const char *err;
    } bad[] = {
        {ARGV("usage", "--period", "2026-13"), cmd_usage,
         "gpuaas: error: --period must be a month written YYYY-MM (2026-11), not '2026-13'\n"},
        {ARGV("invoice", "list", "--period", "nov"), cmd_invoice,
         "gpuaas: error: --period must be a month written YYYY-MM (2026-11), not 'nov'\n"},
        {ARGV("inventory", "--state", "bogus"), cmd_inventory,
         "gpuaas: error: --state must be allocated, busy, idle-allocated, free, draining, mig, "
         "down or unknown, not 'bogus'\n"},
        {ARGV("invoice", "lst"), cmd_invoice,
         "gpuaas: error: unknown invoice command 'lst'; did you mean 'list'?\n"},
        {ARGV("cost", "--by", "projet"), cmd_cost,
         "gpuaas: error: --by must be pool, project, org or manager, not 'projet'; did you "
         "mean 'project'?\n"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_usage, ARGV("usage"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_contains(r.out, "\ntotal acme: 12.00 USD\n");
    result_free(&r);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        r = run(bad[i].fn, bad[i].argv, f.url, CLI_OUTPUT_TABLE);
        assert_int_equal(r.rc, 2);
        assert_contains(r.err, bad[i].err);
        result_free(&r);
    }
    fake_wait(&f);
    assert_int_equal(f.n_requests, 2); /* none for the bad values */
    assert_contains(req(&f, 1), "GET /v1/organizations?limit=1000 HTTP/1.1");
    fake_free(&f);

    /* a credit's amount is read exactly into micro-units */
    fake_start(&f, (const struct fake_reply[]){{201, "{\"id\":3}"}}, 1);
    r = run(cmd_invoice, ARGV("invoice", "credit", "3", "--reason", "outage", "--amount", "0.1"),
            f.url, CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 0);
    result_free(&r);
    r = run(cmd_invoice,
            ARGV("invoice", "credit", "3", "--reason", "outage", "--amount", "0.0000001"), f.url,
            CLI_OUTPUT_JSON);
    assert_int_equal(r.rc, 2);
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 1);
    assert_contains(req(&f, 0), "\"amount_micros\":100000");
    fake_free(&f);
}

/* Simulated work has no output: logs says so, and -f ends when the work does. */
static void test_logs_of_simulated_work(void **state)
{
    static const char *const sim = "{\"id\":2,\"name\":\"sim-eu\",\"backend\":\"sim\"}";
    const struct fake_reply replies[] = {
        {200, "{\"id\":5,\"state\":\"running\",\"cluster_id\":2}"},
        {200, sim},
        {200, "{\"id\":5,\"state\":\"running\",\"cluster_id\":2}"},
        {200, sim},
        {200, "{\"id\":5,\"state\":\"succeeded\",\"cluster_id\":2}"},
        /* work on a real cluster: its log */
        {200, "{\"id\":6,\"state\":\"succeeded\",\"cluster_id\":1}"},
        {200, "{\"id\":1,\"name\":\"gpu-lab\",\"backend\":\"local\"}"},
        {200, "{\"log\":\"hello\\n\",\"next_offset\":6}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_logs, ARGV("logs", "5"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "workload 5 runs on the simulated cluster 'sim-eu', which runs no "
                               "command: it has no output\n");
    result_free(&r);
    r = run(cmd_logs, ARGV("logs", "5", "-f"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_contains(r.err, "it has no output\nworkload 5 ended: succeeded\n");
    result_free(&r);
    r = run(cmd_logs, ARGV("logs", "6"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "hello\n");
    assert_string_equal(r.err, "");
    assert_int_equal(f.n_requests, 8);
    assert_contains(req(&f, 0), "GET /v1/workloads/5 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/clusters/2 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/workloads/5 HTTP/1.1");
    assert_contains(req(&f, 7), "GET /v1/workloads/6/logs HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

static void test_ps_usage_errors(void **state)
{
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, NULL, 0);
    r = run(cmd_ps, ARGV("ps", "--state", "done"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.err, "gpuaas: error: --state must be queued, admitted, running, "
                               "preempting, succeeded, failed, cancelled or preempted, not 'done'\n"
                               "hint: see 'gpuaas ps --help'\n");
    result_free(&r);
    r = run(cmd_ps, ARGV("ps", "--state", "runing"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err, "not 'runing'; did you mean 'running'?\n");
    result_free(&r);
    r = run(cmd_ps, ARGV("ps", "--limit", "0"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    result_free(&r);
    r = run(cmd_ps, ARGV("ps", "42"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err, "unexpected argument '42'");
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    fake_free(&f);
}

/* ---- queue ---- */

static void test_queue(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":["
              "{\"id\":11,\"project_id\":2,\"name\":\"b\",\"priority_class\":\"opportunistic\","
              "\"state\":\"queued\",\"reason\":\"waiting for 8 h100: no room now\","
              "\"queue_position\":2,\"submitted_ms\":1796056000000},"
              "{\"id\":12,\"project_id\":1,\"name\":\"own\",\"priority_class\":\"owned\","
              "\"state\":\"queued\",\"reason\":\"waiting for 4 h100: owned (P1) work of the "
              "project is at its guarantee 4/4\",\"queue_position\":1,"
              "\"submitted_ms\":1796056540000},"
              "{\"id\":13,\"project_id\":2,\"name\":\"a\",\"priority_class\":\"opportunistic\","
              "\"state\":\"queued\",\"reason\":\"waiting for 1 h100: project at its limit 8/8\","
              "\"queue_position\":1,\"submitted_ms\":1796056590000}],\"next_after\":null}"},
        {200, projects_json},
        {200, "{\"items\":[{\"id\":1,\"name\":\"ml\"}],\"next_after\":null}"},
        {200, empty_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_queue, ARGV("queue"), f.url, CLI_OUTPUT_TABLE);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(
        r.out, "POS  PROJECT  ID  NAME  CLASS  WAITED  REASON\n"
               "1    cv       13  a     P2     10s     waiting for 1 h100: project at its "
               "limit 8/8\n"
               "2    cv       11  b     P2     10m00s  waiting for 8 h100: no room now\n"
               "1    ml       12  own   P1     1m00s   waiting for 4 h100: owned (P1) work "
               "of the project is at its guarantee 4/4\n");
    result_free(&r);
    r = run(cmd_queue, ARGV("queue", "--project", "ml"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "no queued workloads\n");
    assert_int_equal(f.n_requests, 4);
    assert_contains(req(&f, 0), "GET /v1/workloads?state=queued&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/projects?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/projects?name=ml&limit=2 HTTP/1.1");
    assert_contains(req(&f, 3), "GET /v1/workloads?state=queued&project_id=1&limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* ---- timeline ---- */

static void test_timeline(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":["
              "{\"id\":1,\"workload_id\":5,\"project_id\":1,\"replica\":0,\"node_id\":2,"
              "\"gpu_id\":12,\"milli\":1000,\"priority_class\":\"owned\","
              "\"started_ms\":1796052000000,\"ended_ms\":null,\"end_reason\":\"\"},"
              "{\"id\":2,\"workload_id\":3,\"project_id\":2,\"replica\":0,\"node_id\":1,"
              "\"gpu_id\":2,\"milli\":1000,\"priority_class\":\"opportunistic\","
              "\"started_ms\":1796055000000,\"ended_ms\":1796056000000,"
              "\"end_reason\":\"preempted\"},"
              "{\"id\":3,\"workload_id\":7,\"project_id\":1,\"replica\":1,\"node_id\":1,"
              "\"gpu_id\":1,\"milli\":500,\"priority_class\":\"opportunistic\","
              "\"started_ms\":1796056000000,\"ended_ms\":null,\"end_reason\":\"\"},"
              "{\"id\":4,\"workload_id\":2,\"project_id\":1,\"replica\":0,\"node_id\":1,"
              "\"gpu_id\":2,\"milli\":1000,\"priority_class\":\"opportunistic\","
              "\"started_ms\":1796056100000,\"ended_ms\":1796056500000,"
              "\"end_reason\":\"succeeded\"},"
              "{\"id\":5,\"workload_id\":1,\"project_id\":1,\"replica\":0,\"node_id\":1,"
              "\"gpu_id\":1,\"milli\":1000,\"priority_class\":\"owned\","
              "\"started_ms\":1796040000000,\"ended_ms\":1796050000000,"
              "\"end_reason\":\"succeeded\"}],\"next_after\":null}"},
        {200, projects_json},
        {200, "{\"items\":[{\"id\":1,\"cluster_id\":1,\"name\":\"node-a\"},"
              "{\"id\":2,\"cluster_id\":1,\"name\":\"node-b\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"node_id\":1,\"index\":0},{\"id\":2,\"node_id\":1,"
              "\"index\":1},{\"id\":12,\"node_id\":2,\"index\":0}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"name\":\"lab\"}],\"next_after\":null}"},
        /* --node node-b --project cv */
        {200, "{\"items\":[{\"id\":2,\"name\":\"cv\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":2,\"name\":\"node-b\"}],\"next_after\":null}"},
        {200, empty_json},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_timeline, ARGV("timeline", "--since", "1h"), f.url, CLI_OUTPUT_TABLE);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(
        r.out,
        "NODE        GPU      WORKLOAD  PROJECT  CLASS  START                END                  "
        "DURATION  NOTE\n"
        "lab/node-a  0 (0.5)  7         ml       P2     2026-11-30 16:26:40  now                  "
        "10m00s\n"
        "lab/node-a  1        3         cv       P2     2026-11-30 16:10:00  2026-11-30 16:26:40  "
        "16m40s    preempted\n"
        "lab/node-a  1        2         ml       P2     2026-11-30 16:28:20  2026-11-30 16:35:00  "
        "6m40s\n"
        "lab/node-b  0        5         ml       P1     2026-11-30 15:20:00  now                  "
        "1h16m\n");
    result_free(&r);
    r = run(cmd_timeline, ARGV("timeline", "--node", "node-b", "--project", "cv"), f.url,
            CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "no allocations found\n");
    assert_int_equal(f.n_requests, 8);
    assert_contains(req(&f, 0), "GET /v1/allocations?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/projects?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/nodes?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 3), "GET /v1/gpus?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/clusters?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 5), "GET /v1/projects?name=cv&limit=2 HTTP/1.1");
    assert_contains(req(&f, 6), "GET /v1/nodes?name=node-b&limit=2 HTTP/1.1");
    assert_contains(req(&f, 7), "GET /v1/allocations?project_id=2&node_id=2&limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* ---- preemptions ---- */

static const char *const ledger_1 =
    "{\"id\":1,\"preemptor_id\":5,\"project_id\":1,\"rule\":\"reclaim\",\"gpu_class_id\":1,"
    "\"victims\":[{\"workload_id\":2,\"project_id\":2,\"gpu_milli\":1000,\"lost_ms\":27},"
    "{\"workload_id\":1,\"project_id\":2,\"gpu_milli\":3000,\"lost_ms\":3581}],"
    "\"quota_before\":[{\"project_id\":1,\"used\":0,\"guaranteed\":4000,\"limit\":8000},"
    "{\"project_id\":2,\"used\":6000,\"guaranteed\":2000,\"limit\":-1}],"
    "\"quota_after\":[{\"project_id\":1,\"used\":0,\"guaranteed\":4000,\"limit\":8000},"
    "{\"project_id\":2,\"used\":2000,\"guaranteed\":2000,\"limit\":-1}],"
    "\"gpu_milli\":4000,\"grace_ms\":2000,\"decided_ms\":1796056500000,"
    "\"released_ms\":1796056502004,\"reclaim_ms\":2004,\"gpu_ms_lost\":10770}";

static void test_preemptions(void **state)
{
    char *list = xasprintf(
        "{\"items\":[%s,{\"id\":2,\"preemptor_id\":9,\"project_id\":3,\"rule\":\"reclaim\","
        "\"gpu_class_id\":1,\"victims\":[{\"workload_id\":4,\"project_id\":1,\"gpu_milli\":500,"
        "\"lost_ms\":60000}],\"quota_before\":[],\"quota_after\":[],\"gpu_milli\":500,"
        "\"grace_ms\":30000,\"decided_ms\":1796056590000,\"released_ms\":null,"
        "\"reclaim_ms\":null,\"gpu_ms_lost\":30000}],\"next_after\":null}",
        ledger_1);
    const struct fake_reply replies[] = {
        {200, list},
        {200, projects_json},
        {200, ledger_1},
        {200, projects_json},
        {200, "{\"items\":[{\"id\":1,\"name\":\"h100\"}],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_preemptions, ARGV("preemptions"), f.url, CLI_OUTPUT_TABLE);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "ID  DECIDED              PREEMPTOR  VICTIMS  GPUS  RECLAIM_S  LOST_GPU_S\n"
                        "1   2026-11-30 16:35:00  5/ml       2,1      4     2.004      10.77\n"
                        "2   2026-11-30 16:36:30  9/#3       4        0.5   -          30\n");
    result_free(&r);
    r = run(cmd_preemptions, ARGV("preemptions", "show", "1"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "id:         1\n"
                               "rule:       reclaim\n"
                               "preemptor:  workload 5 (project ml)\n"
                               "gpu class:  h100\n"
                               "gpus:       4\n"
                               "grace:      2 s\n"
                               "decided:    2026-11-30T16:35:00Z\n"
                               "released:   2026-11-30T16:35:02Z\n"
                               "reclaim:    2.004 s\n"
                               "lost:       10.77 GPU-s\n"
                               "\n"
                               "victims:\n"
                               "WORKLOAD  PROJECT  GPUS  LOST_S  LOST_GPU_S\n"
                               "2         cv       1     0.027   0.027\n"
                               "1         cv       3     3.581   10.743\n"
                               "\n"
                               "quota (GPUs):\n"
                               "PROJECT  USED_BEFORE  USED_AFTER  GUARANTEED  LIMIT\n"
                               "ml       0            0           4           8\n"
                               "cv       6            2           2           none\n");
    assert_int_equal(f.n_requests, 5);
    assert_contains(req(&f, 0), "GET /v1/preemptions?limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/preemptions/1 HTTP/1.1");
    assert_contains(req(&f, 4), "GET /v1/gpu-classes?limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
    free(list);

    fake_start(&f, NULL, 0);
    r = run(cmd_preemptions, ARGV("preemptions", "show"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    result_free(&r);
    r = run(cmd_preemptions, ARGV("preemptions", "show", "1", "--project", "ml"), f.url,
            CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    fake_free(&f);
}

/* ---- events, capacity ---- */

static void test_events_and_capacity(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"items\":["
              "{\"id\":1,\"workload_id\":5,\"project_id\":1,\"at_ms\":1796056509194,"
              "\"type\":\"submitted\",\"message\":\"submitted by admin\"},"
              "{\"id\":3,\"workload_id\":5,\"project_id\":1,\"at_ms\":1796056511000,"
              "\"type\":\"admitted\",\"message\":\"admitted (owned) on node-a/0, node-a/1\"},"
              "{\"id\":2,\"workload_id\":5,\"project_id\":1,\"at_ms\":1796056509194,"
              "\"type\":\"reclaiming\",\"message\":\"reclaiming 2 h100 GPU(s)\"}],"
              "\"next_after\":null}"},
        {200, "{\"items\":[{\"gpu_class_id\":1,\"gpu_class\":\"h100\",\"capacity_milli\":8000,"
              "\"free_milli\":2500,\"guaranteed_milli\":10000,\"warning\":\"guarantees (10000 "
              "milli-GPU) exceed healthy capacity (8000): owned work may wait\"},"
              "{\"gpu_class_id\":2,\"gpu_class\":\"a100-1g.10gb\",\"capacity_milli\":14000,"
              "\"free_milli\":14000,\"guaranteed_milli\":0}]}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_events, ARGV("events", "--workload", "5", "-n", "2"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "TIME                 WORKLOAD  TYPE        MESSAGE\n"
                        "2026-11-30 16:35:09  5         reclaiming  reclaiming 2 h100 GPU(s)\n"
                        "2026-11-30 16:35:11  5         admitted    admitted (owned) on node-a/0, "
                        "node-a/1\n");
    assert_string_equal(r.err, "(the last 2 of 3 events; -n 0 shows all)\n");
    result_free(&r);
    r = run(cmd_capacity, ARGV("capacity"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "CLASS         CAPACITY  FREE  GUARANTEED\n"
                               "h100          8         2.5   10\n"
                               "a100-1g.10gb  14        14    0\n"
                               "warning: h100: guarantees (10000 milli-GPU) exceed healthy "
                               "capacity (8000): owned work may wait\n");
    assert_contains(req(&f, 0), "GET /v1/events?workload_id=5&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/capacity HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* ---- show ---- */

static void test_show(void **state)
{
    const struct fake_reply replies[] = {
        {200, "{\"id\":3,\"project_id\":2,\"name\":\"cv-big\",\"flavor_id\":2,\"kind\":\"batch\","
              "\"replicas\":2,\"command\":\"python 'train it.py'\",\"image\":\"\","
              "\"priority_class\":\"opportunistic\",\"priority\":0,\"max_runtime_s\":null,"
              "\"state\":\"running\",\"reason\":\"running on borrowed capacity\","
              "\"submitted_ms\":1796055000000,\"started_at\":\"2026-11-30T16:36:00Z\","
              "\"preemptions\":1,\"queue_note\":\"extra\"}"},
        {200, "{\"items\":["
              "{\"id\":2,\"workload_id\":3,\"project_id\":2,\"replica\":0,\"node_id\":1,"
              "\"gpu_id\":2,\"milli\":1000,\"started_ms\":1796055000000,"
              "\"ended_ms\":1796056000000,\"end_reason\":\"preempted\"},"
              "{\"id\":6,\"workload_id\":3,\"project_id\":2,\"replica\":1,\"node_id\":1,"
              "\"gpu_id\":1,\"milli\":500,\"started_ms\":1796056560000,\"ended_ms\":null,"
              "\"end_reason\":\"\"}],\"next_after\":null}"},
        {200, "{\"items\":["
              "{\"id\":7,\"at_ms\":1796056560000,\"type\":\"admitted\","
              "\"message\":\"admitted (borrowed) on node-a/1\"},"
              "{\"id\":5,\"at_ms\":1796055000000,\"type\":\"submitted\","
              "\"message\":\"submitted by admin\"},"
              "{\"id\":6,\"at_ms\":1796056000000,\"type\":\"preempting\","
              "\"message\":\"preempted (rule reclaim)\"}],\"next_after\":null}"},
        {200, projects_json},
        {200, flavors_json},
        {200, "{\"items\":[{\"id\":1,\"name\":\"node-a\"}],\"next_after\":null}"},
        {200, "{\"items\":[{\"id\":1,\"node_id\":1,\"index\":0},{\"id\":2,\"node_id\":1,"
              "\"index\":1}],\"next_after\":null}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_show, ARGV("show", "3"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_string_equal(r.err, "");
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out,
                        "id:              3\n"
                        "project_id:      2 (cv)\n"
                        "name:            cv-big\n"
                        "flavor_id:       2 (h100.4x)\n"
                        "kind:            batch\n"
                        "replicas:        2\n"
                        "command:         python 'train it.py'\n"
                        "image:           -\n"
                        "priority_class:  opportunistic (P2)\n"
                        "priority:        0\n"
                        "max_runtime_s:   -\n"
                        "state:           running\n"
                        "reason:          running on borrowed capacity\n"
                        "submitted:       2026-11-30T16:10:00Z\n"
                        "started_at:      2026-11-30T16:36:00Z\n"
                        "preemptions:     1\n"
                        "queue_note:      extra\n"
                        "\n"
                        "allocations:\n"
                        "REPLICA  NODE    GPU  GPUS  START                END                  "
                        "END_REASON\n"
                        "0        node-a  1    1     2026-11-30 16:10:00  2026-11-30 16:26:40  "
                        "preempted\n"
                        "1        node-a  0    0.5   2026-11-30 16:36:00  now                  -\n"
                        "\n"
                        "events:\n"
                        "TIME                 TYPE        MESSAGE\n"
                        "2026-11-30 16:10:00  submitted   submitted by admin\n"
                        "2026-11-30 16:26:40  preempting  preempted (rule reclaim)\n"
                        "2026-11-30 16:36:00  admitted    admitted (borrowed) on node-a/1\n");
    assert_int_equal(f.n_requests, 7);
    assert_contains(req(&f, 0), "GET /v1/workloads/3 HTTP/1.1");
    assert_contains(req(&f, 1), "GET /v1/allocations?workload_id=3&limit=1000 HTTP/1.1");
    assert_contains(req(&f, 2), "GET /v1/events?workload_id=3&limit=1000 HTTP/1.1");
    result_free(&r);
    fake_free(&f);
}

/* ---- cancel ---- */

static void test_cancel_exit_codes(void **state)
{
    const struct fake_reply replies[] = {
        {202, "{\"id\":1,\"state\":\"cancelled\"}"},
        {409, "{\"error\":{\"code\":\"conflict\",\"message\":\"workload 2 has already "
              "ended\"}}"},
        {202, "{\"id\":3,\"state\":\"running\"}"},
        {202, "{\"id\":4,\"state\":\"cancelled\"}"},
        {404, "{\"error\":{\"code\":\"not_found\",\"message\":\"no workload with id 5\"}}"},
    };
    struct fake_http f;
    struct result r;
    (void)state;

    fake_start(&f, replies, ARRAY_SIZE(replies));
    r = run(cmd_cancel, ARGV("cancel", "1", "2", "3"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "workload 1: cancelled\n"
                               "workload 3: stopping (running); cancelled once it has ended\n");
    assert_string_equal(r.err, "gpuaas: error: workload 2 has already ended (HTTP 409, POST "
                               "/v1/workloads/2/cancel)\n"
                               "gpuaas: error: 1 of 3 workloads could not be cancelled\n");
    result_free(&r);
    r = run(cmd_cancel, ARGV("cancel", "4"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.out, "workload 4: cancelled\n");
    assert_string_equal(r.err, "");
    result_free(&r);
    r = run(cmd_cancel, ARGV("cancel", "5"), f.url, CLI_OUTPUT_TABLE);
    fake_wait(&f);
    assert_int_equal(r.rc, 1);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "gpuaas: error: no workload with id 5 (HTTP 404, POST "
                               "/v1/workloads/5/cancel)\n");
    assert_int_equal(f.n_requests, 5);
    assert_contains(req(&f, 0), "POST /v1/workloads/1/cancel HTTP/1.1");
    assert_contains(req(&f, 2), "POST /v1/workloads/3/cancel HTTP/1.1");
    result_free(&r);
    fake_free(&f);

    /* a word that is no id: exit 2 before any request, even after good ids */
    fake_start(&f, NULL, 0);
    r = run(cmd_cancel, ARGV("cancel", "6", "x"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_string_equal(r.err, "gpuaas: error: 'x' is not a workload id\n"
                               "hint: see 'gpuaas cancel --help'\n");
    result_free(&r);
    r = run(cmd_cancel, ARGV("cancel"), f.url, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    result_free(&r);
    fake_wait(&f);
    assert_int_equal(f.n_requests, 0);
    fake_free(&f);
}

/* ---- shared helpers ---- */

static void test_durations_and_times(void **state)
{
    static const struct {
        int64_t ms;
        const char *text;
    } cases[] = {
        {-5, "0s"},          {999, "0s"},           {59999, "59s"},       {60000, "1m00s"},
        {3599000, "59m59s"}, {3600000, "1h00m"},    {86399000, "23h59m"}, {86400000, "1d00h"},
        {90061000, "1d01h"}, {864000000, "10d00h"},
    };
    char *s;
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        s = work_duration(cases[i].ms);
        assert_string_equal(s, cases[i].text);
        free(s);
    }
    s = work_time_short(NOW_MS + 999);
    assert_string_equal(s, "2026-11-30 16:36:40");
    free(s);
    s = work_time_rfc3339(NOW_MS);
    assert_string_equal(s, "2026-11-30T16:36:40Z");
    free(s);
    assert_string_equal(work_class_label("owned"), "P1");
    assert_string_equal(work_class_label("opportunistic"), "P2");
    assert_string_equal(work_class_label(NULL), "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ps_unfinished),
        cmocka_unit_test(test_ps_all_pages_limit_and_state),
        cmocka_unit_test(test_ps_piped_wide_and_user),
        cmocka_unit_test(test_ps_usage_errors),
        cmocka_unit_test(test_logs_of_simulated_work),
        cmocka_unit_test(test_usage_totals_and_bad_values),
        cmocka_unit_test(test_queue),
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_preemptions),
        cmocka_unit_test(test_events_and_capacity),
        cmocka_unit_test(test_show),
        cmocka_unit_test(test_cancel_exit_codes),
        cmocka_unit_test(test_durations_and_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
