/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Prometheus text-format parser and the dcgm-exporter mapping
 * (src/inventory/prom.c, dcgm.c): the shared 2 x H200 fixture (one whole GPU,
 * three MIG instances), the grammar's corners (escapes, timestamps, NaN and
 * infinities, CRLF, blank lines, trailing commas), and every malformed
 * fixture with the line number its error names.
 */
#include "base/common.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#include "base/err.h"
#include "inventory/inventory.h"
#include "inv_test.h"

#define H200_FIXTURE "telemetry/dcgm-exporter-2xh200-mig.prom"
#define GPU0 "GPU-3f1c9a52-7d2e-4b8a-9c41-0e6f2d8b5a17"
#define GPU1 "GPU-8b7d04e1-52a9-4f3c-b6de-71c2a9e0f384"

struct collect {
    int n;
    char names[16][64];
    char values[16][3][64]; /* first three label values */
    size_t n_labels[16];
    double v[16];
    bool has_ts[16];
    int64_t ts[16];
    enum inv_prom_type type[16];
    size_t line[16];
};

static int on_sample(void *ctx, const struct inv_prom_sample *s)
{
    struct collect *c = ctx;
    if (c->n >= 16)
        return 0;
    snprintf(c->names[c->n], 64, "%s", s->name);
    for (size_t i = 0; i < s->n_labels && i < 3; i++)
        snprintf(c->values[c->n][i], 64, "%s", s->labels[i].value);
    c->n_labels[c->n] = s->n_labels;
    c->v[c->n] = s->value;
    c->has_ts[c->n] = s->has_timestamp;
    c->ts[c->n] = s->timestamp_ms;
    c->type[c->n] = s->type;
    c->line[c->n] = s->line;
    c->n++;
    return 0;
}

static int parse_str(const char *text, struct collect *c, struct error_info *ei)
{
    memset(c, 0, sizeof(*c));
    memset(ei, 0, sizeof(*ei));
    return inv_prom_parse(text, strlen(text), NULL, on_sample, c, ei);
}

static void test_grammar(void **state)
{
    struct collect c;
    struct error_info ei;
    (void)state;

    const char *text = "# a plain comment\n"
                       "\n"
                       "   \t\n"
                       "# HELP http_requests_total The total, with \\\\ and \\n.\n"
                       "# TYPE http_requests_total counter\n"
                       "http_requests_total{method=\"post\",code=\"200\",} 1027 1395066363000\n"
                       "http_requests_total{ method = \"a\\\\b\\\"c\\nd\" } 3\n"
                       "  metric_without_labels 12.47\n"
                       "nan_metric NaN\n"
                       "pinf{} +Inf\n"
                       "ninf -Inf -5\n"
                       "sci 1.5e-3\n"
                       "# TYPE rpc_duration_seconds summary\n"
                       "rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
                       "rpc_duration_seconds_sum 1.7560473e+07\n"
                       "rpc_duration_seconds_total 3"; /* no final newline; not the summary */
    assert_int_equal(parse_str(text, &c, &ei), 10);
    assert_string_equal(c.names[0], "http_requests_total");
    assert_int_equal(c.n_labels[0], 2);
    assert_string_equal(c.values[0][0], "post");
    assert_string_equal(c.values[0][1], "200");
    assert_true(c.has_ts[0]);
    assert_int_equal(c.ts[0], 1395066363000);
    assert_int_equal(c.type[0], INV_PROM_COUNTER);
    assert_int_equal(c.line[0], 6);
    assert_string_equal(c.values[1][0], "a\\b\"c\nd");
    assert_false(c.has_ts[1]);
    assert_string_equal(c.names[2], "metric_without_labels");
    assert_int_equal(c.n_labels[2], 0);
    assert_true(fabs(c.v[2] - 12.47) < 1e-12);
    assert_int_equal(c.type[2], INV_PROM_UNTYPED);
    assert_true(isnan(c.v[3]));
    assert_true(isinf(c.v[4]) && c.v[4] > 0);
    assert_true(isinf(c.v[5]) && c.v[5] < 0);
    assert_int_equal(c.ts[5], -5);
    assert_true(fabs(c.v[6] - 0.0015) < 1e-15);
    assert_int_equal(c.type[7], INV_PROM_SUMMARY);
    assert_int_equal(c.type[8], INV_PROM_SUMMARY);
    assert_int_equal(c.type[9], INV_PROM_UNTYPED);
    assert_int_equal(c.line[9], 16);

    /* empty input, only comments */
    assert_int_equal(parse_str("", &c, &ei), 0);
    assert_int_equal(parse_str("# nothing\n\n", &c, &ei), 0);
}

struct bad_case {
    const char *text;
    int err;
    const char *message;
};

static void test_malformed_strings(void **state)
{
    static const struct bad_case cases[] = {
        {"x{a=\"1\"} 1\ny{a=\"1\" 2\n", ERR_INVALID, "line 2: expected ',' or '}'"},
        {"x{a=1} 1\n", ERR_INVALID, "line 1: expected '\"' to open the value of label 'a'"},
        {"x{a\"1\"} 1\n", ERR_INVALID, "line 1: expected '=' after label name 'a'"},
        {"x{a=\"1\",a=\"2\"} 1\n", ERR_INVALID, "line 1: duplicate label 'a'"},
        {"x{1a=\"1\"} 1\n", ERR_INVALID, "line 1: expected a label name or '}'"},
        {"x{a=\"1\"}\n", ERR_INVALID, "line 1: missing value"},
        {"x 1 2 3\n", ERR_INVALID, "line 1: text after the timestamp"},
        {"x 1 1.5\n", ERR_INVALID, "line 1: timestamp is not an integer"},
        {"x 0x10\n", ERR_INVALID, "line 1: value '0x10' is not a number"},
        {"x inf\n", ERR_INVALID, "line 1: value 'inf' is not a number"},
        {"x 1..2\n", ERR_INVALID, "line 1: value '1..2' is not a number"},
        {"9x 1\n", ERR_INVALID, "line 1: expected a metric name"},
        {"x-y 1\n", ERR_INVALID, "line 1: expected a space before the value of 'x'"},
        {"# TYPE\n", ERR_INVALID, "line 1: TYPE without a metric name"},
        {"# TYPE x gauge extra\n", ERR_INVALID, "line 1: text after the type in TYPE"},
        {"# HELP x bad \\q escape\n", ERR_INVALID, "line 1: invalid escape in HELP text"},
        {"x 1\n\n\ny\r 1\n", ERR_INVALID, "line 4: NUL byte or stray carriage return"},
        {"x 1e999 1\n", ERR_INVALID, "unused"},
        {"x 1 99999999999999999999\n", ERR_INVALID, "line 1: timestamp is out of range"},
    };
    struct collect c;
    struct error_info ei;
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int rc = parse_str(cases[i].text, &c, &ei);
        if (i == 17) {
            /* an overflowing value is +Inf, as Prometheus parses it */
            assert_int_equal(rc, 1);
            assert_true(isinf(c.v[0]));
            continue;
        }
        if (rc != cases[i].err ||
            strncmp(ei.message, cases[i].message, strlen(cases[i].message)) != 0)
            fail_msg("case %zu: rc %d message '%s', want %d '%s'", i, rc, ei.message, cases[i].err,
                     cases[i].message);
    }
}

static void test_limits(void **state)
{
    struct collect c;
    struct error_info ei;
    struct inv_prom_limits lim = {.max_line = 32, .max_labels = 2};
    char line[128];
    (void)state;

    memset(&ei, 0, sizeof(ei));
    memset(&c, 0, sizeof(c));
    snprintf(line, sizeof(line), "ok 1\nx{a=\"%s\"} 1\n", "0123456789012345678901234567890");
    assert_int_equal(inv_prom_parse(line, strlen(line), &lim, on_sample, &c, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "line 2: longer than 32 bytes");

    memset(&ei, 0, sizeof(ei));
    const char *three = "x{a=\"1\",b=\"2\",c=\"3\"} 1\n";
    assert_int_equal(inv_prom_parse(three, strlen(three), &lim, on_sample, &c, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "line 1: more than 2 labels");
    /* exactly at the limits is fine */
    memset(&ei, 0, sizeof(ei));
    const char *two = "x{a=\"1\",b=\"2\"} 1\n";
    assert_int_equal(inv_prom_parse(two, strlen(two), &lim, on_sample, &c, &ei), 1);

    /* a NUL byte inside a line */
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_prom_parse("x 1\0 2\n", 7, NULL, on_sample, &c, &ei), ERR_INVALID);
}

static int stop_at_second(void *ctx, const struct inv_prom_sample *s)
{
    int *n = ctx;
    (void)s;
    return ++*n == 2 ? ERR_CONFLICT : 0;
}

static void test_callback_stops(void **state)
{
    int n = 0;
    (void)state;
    assert_int_equal(inv_prom_parse("a 1\nb 2\nc 3\n", 12, NULL, stop_at_second, &n, NULL),
                     ERR_CONFLICT);
    assert_int_equal(n, 2);
    /* no callback: counts only */
    assert_int_equal(inv_prom_parse("a 1\nb 2\nc 3\n", 12, NULL, NULL, NULL, NULL), 3);
}

static void test_crlf_fixture(void **state)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, "prom-crlf.prom", &len);
    struct collect c;
    struct error_info ei = {0};
    (void)state;
    memset(&c, 0, sizeof(c));
    assert_int_equal(inv_prom_parse(data, len, NULL, on_sample, &c, &ei), 1);
    assert_string_equal(c.names[0], "up");
    assert_string_equal(c.values[0][0], "a");
    assert_int_equal(c.type[0], INV_PROM_GAUGE);
    free(data);
}

static void expect_fixture_error(const char *name, int err, const char *message)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, name, &len);
    struct inv_readings rs;
    struct error_info ei = {0};
    int rc;

    inv_readings_init(&rs, 0);
    rc = inv_dcgm_parse(data, len, &rs, NULL, &ei);
    if (rc != err || strcmp(ei.message, message) != 0)
        fail_msg("%s: rc %d '%s', want %d '%s'", name, rc, ei.message, err, message);
    inv_readings_release(&rs);
    free(data);
}

static void test_malformed_fixtures(void **state)
{
    (void)state;
    expect_fixture_error("prom-bad-escape.prom", ERR_INVALID,
                         "line 4: invalid escape '\\q' in label value");
    expect_fixture_error("prom-unterminated.prom", ERR_INVALID, "line 2: unterminated label value");
    expect_fixture_error("prom-bad-value.prom", ERR_INVALID,
                         "line 3: value 'sixty' is not a number");
    expect_fixture_error("prom-bad-type.prom", ERR_INVALID,
                         "line 2: unknown metric type 'gauge_ish'");
    expect_fixture_error("dcgm-bad-gi.prom", ERR_INVALID,
                         "line 2: label GPU_I_ID=\"nine\" is not an integer 0..9999");
}

static void test_dcgm_h200_fixture(void **state)
{
    size_t len;
    char *data = inv_test_read(GPUAAS_DATA_DIR, H200_FIXTURE, &len);
    struct inv_readings rs;
    struct inv_dcgm_stats st;
    struct error_info ei = {0};
    struct inv_reading *r;
    char key[INV_KEY_MAX];
    (void)state;

    inv_readings_init(&rs, 0);
    /* GPU 0 whole, GPU 1 (MIG parent) and its instances 2, 3 and 9 */
    assert_int_equal(inv_dcgm_parse(data, len, &rs, &st, &ei), 5);
    assert_int_equal(st.n_no_uuid, 0);
    assert_true(st.n_samples > st.n_used && st.n_used > 0);

    r = inv_readings_find(&rs, GPU0, -1);
    assert_non_null(r);
    assert_int_equal(r->index, 0);
    assert_int_equal(r->source, INV_SRC_DCGM);
    assert_string_equal(r->model, "NVIDIA H200");
    assert_string_equal(r->host, "gpu-node-07");
    assert_string_equal(r->pci_bus_id, "00000000:1A:00.0");
    assert_string_equal(r->pod, "llm-finetune-worker-0");
    assert_string_equal(r->namespace_, "team-nlp");
    assert_string_equal(r->container, "trainer");
    assert_string_equal(r->mig_profile, "");
    assert_true(r->util_pct == 97);
    assert_true(fabs(r->gr_active - 0.962317) < 1e-9);
    assert_true(fabs(inv_reading_activity(r) - 0.962317) < 1e-9);
    assert_true(r->fb_used_mib == 130286 && r->fb_free_mib == 12871);
    assert_true(fabs(r->power_w - 612.384) < 1e-9);
    assert_true(r->temp_c == 61);
    assert_true(r->fb_total_mib >= r->fb_used_mib + r->fb_free_mib);
    inv_reading_key(r, key, sizeof(key));
    assert_string_equal(key, GPU0);

    r = inv_readings_find(&rs, GPU1, -1);
    assert_non_null(r);
    assert_int_equal(r->mig_mode, 1);
    assert_int_equal(r->index, 1);
    assert_string_equal(r->model, "NVIDIA H200");
    assert_false(inv_has(r->gr_active));

    r = inv_readings_find(&rs, GPU1, 2);
    assert_non_null(r);
    assert_string_equal(r->mig_profile, "3g.71gb");
    assert_string_equal(r->pod, "embed-svc-7c9f6d5b8-qx2lm");
    assert_false(inv_has(r->util_pct)); /* not reported for MIG instances */
    assert_true(fabs(inv_reading_activity(r) - 0.418902) < 1e-9);
    assert_true(r->fb_used_mib == 31214);
    inv_reading_key(r, key, sizeof(key));
    assert_string_equal(key, GPU1 "/2");

    r = inv_readings_find(&rs, GPU1, 3);
    assert_non_null(r);
    assert_string_equal(r->mig_profile, "2g.35gb");
    assert_string_equal(r->namespace_, "team-vision");

    r = inv_readings_find(&rs, GPU1, 9);
    assert_non_null(r);
    assert_string_equal(r->mig_profile, "1g.18gb");
    assert_string_equal(r->pod, ""); /* idle instance, no pod */
    assert_true(r->gr_active == 0);
    assert_true(r->fb_used_mib == 9);

    assert_null(inv_readings_find(&rs, GPU1, 4));
    inv_readings_release(&rs);
    free(data);
}

static void test_dcgm_lowercase_host_and_old_pod_labels(void **state)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, "dcgm-lowercase-host.prom", &len);
    struct inv_readings rs;
    struct inv_dcgm_stats st;
    struct error_info ei = {0};
    struct inv_reading *r;
    (void)state;

    inv_readings_init(&rs, 0);
    assert_int_equal(inv_dcgm_parse(data, len, &rs, &st, &ei), 1);
    assert_int_equal(st.n_no_uuid, 0);
    assert_int_equal(st.n_samples, 7);
    assert_int_equal(st.n_used, 5);
    r = inv_readings_find(&rs, "GPU-11111111-2222-3333-4444-555555555555", -1);
    assert_non_null(r);
    assert_string_equal(r->host, "node-a");
    assert_string_equal(r->pod, "p \"quoted\"\\slash");
    assert_string_equal(r->namespace_, "ns1");
    assert_string_equal(r->container, "c1");
    assert_string_equal(r->model, "NVIDIA H100 80GB HBM3");
    assert_true(r->util_pct == 42);
    assert_true(fabs(inv_reading_activity(r) - 0.42) < 1e-12);
    assert_true(r->fb_total_mib == 81024);
    assert_false(inv_has(r->power_w)); /* NaN is "not reported" */
    assert_true(isinf(r->temp_c));
    inv_readings_release(&rs);
    free(data);
}

static void test_readings_limits(void **state)
{
    struct inv_readings rs;
    struct inv_reading *r;
    char uuid[200];
    (void)state;

    inv_readings_init(&rs, 3);
    assert_int_equal(inv_readings_get(&rs, "", -1, &r), ERR_INVALID);
    memset(uuid, 'a', sizeof(uuid) - 1);
    uuid[sizeof(uuid) - 1] = '\0';
    assert_int_equal(inv_readings_get(&rs, uuid, -1, &r), ERR_INVALID);
    assert_int_equal(inv_readings_get(&rs, "GPU-a", -1, &r), 0);
    assert_int_equal(inv_readings_get(&rs, "GPU-a", 1, &r), 0);
    assert_int_equal(inv_readings_get(&rs, "GPU-b", -1, &r), 0);
    assert_int_equal(inv_readings_get(&rs, "GPU-a", 1, &r), 0); /* existing */
    assert_int_equal(inv_readings_get(&rs, "GPU-c", -1, &r), ERR_TOO_LARGE);
    inv_readings_release(&rs);

    /* many readings: the index grows and finds every one */
    inv_readings_init(&rs, 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(uuid, sizeof(uuid), "GPU-%d", i / 2);
        assert_int_equal(inv_readings_get(&rs, uuid, i % 2 ? 7 : -1, &r), 0);
    }
    assert_int_equal(rs.n, 5000);
    for (int i = 0; i < 5000; i++) {
        snprintf(uuid, sizeof(uuid), "GPU-%d", i / 2);
        r = inv_readings_find(&rs, uuid, i % 2 ? 7 : -1);
        assert_non_null(r);
        assert_string_equal(r->uuid, uuid);
    }
    inv_readings_release(&rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grammar),
        cmocka_unit_test(test_malformed_strings),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_callback_stops),
        cmocka_unit_test(test_crlf_fixture),
        cmocka_unit_test(test_malformed_fixtures),
        cmocka_unit_test(test_dcgm_h200_fixture),
        cmocka_unit_test(test_dcgm_lowercase_host_and_old_pod_labels),
        cmocka_unit_test(test_readings_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
