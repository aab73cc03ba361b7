/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_table.c: the CLI's text output: the table printer (alignment, no
 * trailing spaces, terminal-safe cells, cutting long cells) and the resource
 * views built on it, compared as exact text.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "cli/render.h"
#include "cli/table.h"

static json_t *parse(const char *text)
{
    json_error_t err;
    json_t *j = json_loads(text, 0, &err);
    if (!j)
        fail_msg("bad test JSON: %s", err.text);
    return j;
}

static void assert_no_trailing_spaces(const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\n' && p > text && p[-1] == ' ')
            fail_msg("trailing space before a newline in:\n%s", text);
    }
}

static void test_table_alignment(void **state)
{
    struct table t;
    struct buf b;
    const char *header[] = {"ID", "NAME", "NOTE"};
    const char *row1[] = {"1", "alpha", "x"};
    const char *row2[] = {"1234", "b", NULL};
    const char *row3[] = {"7", "", "last"};
    (void)state;

    table_init(&t, 3);
    table_add_row(&t, header);
    table_add_row(&t, row1);
    table_add_row(&t, row2);
    table_add_row(&t, row3);
    buf_init(&b, 1 << 20);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data, "ID    NAME   NOTE\n"
                                "1     alpha  x\n"
                                "1234  b      -\n"
                                "7     -      last\n");
    assert_no_trailing_spaces(b.data);
    buf_release(&b);
    table_release(&t);
}

static void test_table_utf8_and_control_chars(void **state)
{
    struct table t;
    struct buf b;
    const char *r1[] = {"caf\xc3\xa9", "x"};   /* 4 characters, 5 bytes */
    const char *r2[] = {"a\x1b[31mb\nc", "y"}; /* escape sequence and newline */
    (void)state;

    table_init(&t, 2);
    table_add_row(&t, r1);
    table_add_row(&t, r2);
    buf_init(&b, 1 << 20);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data, "caf\xc3\xa9       x\n"
                                "a?[31mb?c  y\n");
    buf_release(&b);
    table_release(&t);
    assert_int_equal(table_text_width("caf\xc3\xa9"), 4);
}

static void test_table_cut(void **state)
{
    struct table t;
    struct buf b;
    const char *r1[] = {"abcdefghijkl", "z"};
    const char *r2[] = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", "z"};
    const char *r3[] = {"abcdefgh", "z"};
    (void)state;

    table_init(&t, 2);
    t.max_width = 8;
    table_add_row(&t, r1);
    table_add_row(&t, r2);
    table_add_row(&t, r3);
    buf_init(&b, 1 << 20);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data,
                        "abcde...  z\n"
                        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9  z\n"
                        "abcdefgh  z\n");
    buf_release(&b);
    table_release(&t);
}

static void test_formats(void **state)
{
    static const struct {
        int64_t v;
        const char *milli, *micros;
    } cases[] = {
        {0, "0", "0.00"},           {1000, "1", "0.001"},         {1500, "1.5", "0.0015"},
        {125, "0.125", "0.000125"}, {2500000, "2500", "2.50"},    {1234567, "1234.567", "1.234567"},
        {-1500, "-1.5", "-0.0015"}, {-2500000, "-2500", "-2.50"},
    };
    char *s;
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        s = render_milli(cases[i].v);
        assert_string_equal(s, cases[i].milli);
        free(s);
        s = render_micros(cases[i].v);
        assert_string_equal(s, cases[i].micros);
        free(s);
    }
    s = render_micros(INT64_MIN);
    assert_string_equal(s, "-9223372036854.775808");
    free(s);
    s = render_short_time("2026-11-30T15:49:47Z");
    assert_string_equal(s, "2026-11-30 15:49");
    free(s);
    s = render_short_time("soon");
    assert_string_equal(s, "soon");
    free(s);
}

static void test_cells(void **state)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"null", "-"},
        {"true", "yes"},
        {"false", "no"},
        {"42", "42"},
        {"\"text\"", "text"},
        {"{\"site\":\"a\",\"rack\":\"b\"}", "site=a,rack=b"},
        {"{}", ""},
        {"[1,2,3]", "1,2,3"},
        {"[]", ""},
        {"{\"a\":1}", "{\"a\":1}"},
        {"[\"x\"]", "[\"x\"]"},
        {"1.5", "1.5"},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
        char *s = render_cell(j);
        assert_string_equal(s, cases[i].want);
        free(s);
        json_decref(j);
    }
}

static void test_render_list_organizations(void **state)
{
    json_t *items = parse("[{\"id\":1,\"name\":\"acme\",\"display_name\":\"Acme Corp\","
                          "\"parent_id\":null,\"manager_id\":3,\"cost_center\":\"cc-100\","
                          "\"created_at\":\"2026-11-30T15:49:47Z\"},"
                          "{\"id\":12,\"name\":\"ml-research\",\"display_name\":\"\","
                          "\"parent_id\":1,\"manager_id\":null,\"cost_center\":\"\"}]");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_list(&model_organizations, items, &b), 0);
    assert_string_equal(b.data,
                        "ID  NAME         DISPLAY_NAME  PARENT_ID  MANAGER_ID  COST_CENTER\n"
                        "1   acme         Acme Corp     -          3           cc-100\n"
                        "12  ml-research  -             1          -           -\n");
    assert_no_trailing_spaces(b.data);
    buf_release(&b);
    json_decref(items);
}

static void test_render_list_units(void **state)
{
    json_t *flavors = parse("[{\"id\":3,\"name\":\"h100.1x\",\"gpu_class_id\":2,"
                            "\"gpu_milli\":1000,\"vcpus\":16,\"memory_mib\":131072,"
                            "\"price_per_hour_micros\":2500000,\"currency\":\"USD\","
                            "\"active\":true},"
                            "{\"id\":4,\"name\":\"mig.small\",\"gpu_class_id\":5,"
                            "\"gpu_milli\":125,\"vcpus\":2,\"memory_mib\":8192,"
                            "\"price_per_hour_micros\":310000,\"currency\":\"EUR\","
                            "\"active\":false}]");
    json_t *tokens = parse("[{\"id\":9,\"user_id\":1,\"name\":\"ci\",\"prefix\":\"gpa_ab\","
                           "\"expires_at\":\"2027-01-01T00:00:00Z\",\"revoked_at\":null,"
                           "\"created_at\":\"2026-11-30T15:49:47Z\"}]");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_list(&model_flavors, flavors, &b), 0);
    assert_string_equal(b.data,
                        "ID  NAME       CLASS_ID  GPUS   VCPUS  MEMORY   PRICE_PER_HOUR  ACTIVE\n"
                        "3   h100.1x    2         1      16     128 GiB  2.50 USD/h      yes\n"
                        "4   mig.small  5         0.125  2      8 GiB    0.31 EUR/h      no\n");
    buf_reset(&b);
    assert_int_equal(render_list(&model_tokens, tokens, &b), 0);
    assert_string_equal(b.data,
                        "ID  USER_ID  NAME  PREFIX  EXPIRES           REVOKED  CREATED\n"
                        "9   1        ci    gpa_ab  2027-01-01 00:00  -        2026-11-30 15:49\n");
    buf_release(&b);
    json_decref(flavors);
    json_decref(tokens);
}

/* A free-text last column cut to fit a line width; blank cells with no padding after them. */
static void test_table_fit_and_blank(void **state)
{
    struct table t;
    struct buf b;
    const char *header[] = {"ID", "STATE", "REASON"};
    const char *row1[] = {"1", "queued", "waiting for 4 h100: project at its limit 16/16"};
    const char *row2[] = {"22", "running", "running"};
    const char *bh[] = {"A", "NOTE"};
    const char *b1[] = {"x", ""};
    const char *b2[] = {"yy", "preempted"};
    char *cut;
    (void)state;

    table_init(&t, 3);
    table_add_row(&t, header);
    table_add_row(&t, row1);
    table_add_row(&t, row2);
    table_fit_column(&t, 2, 40);
    buf_init(&b, 1 << 20);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data, "ID  STATE    REASON\n"
                                "1   queued   waiting for 4 h100: proj...\n"
                                "22  running  running\n");
    table_release(&t);
    buf_release(&b);

    /* never narrower than 12 characters, whatever the line width */
    table_init(&t, 3);
    table_add_row(&t, header);
    table_add_row(&t, row1);
    table_fit_column(&t, 2, 10);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data, "ID  STATE   REASON\n"
                                "1   queued  waiting f...\n");
    table_release(&t);
    buf_release(&b);

    table_init(&t, 2);
    t.blank_empty = true;
    table_add_row(&t, bh);
    table_add_row(&t, b1);
    table_add_row(&t, b2);
    assert_int_equal(table_render(&t, &b), 0);
    assert_string_equal(b.data, "A   NOTE\n"
                                "x\n"
                                "yy  preempted\n");
    assert_no_trailing_spaces(b.data);
    table_release(&t);
    buf_release(&b);

    cut = table_cut("a\001bcdefghijkl", 8);
    assert_string_equal(cut, "a?bcd...");
    free(cut);
    cut = table_cut(NULL, 8);
    assert_string_equal(cut, "-");
    free(cut);
}

/* A quota without an explicit guarantee has one derived from the pools its project owns. */
static void test_render_quota_guarantee(void **state)
{
    json_t *quotas = parse("[{\"id\":1,\"project_id\":4,\"gpu_class_id\":2,"
                           "\"guaranteed_milli\":null,\"limit_milli\":null},"
                           "{\"id\":2,\"project_id\":4,\"gpu_class_id\":3,"
                           "\"guaranteed_milli\":8000,\"limit_milli\":16500},"
                           "{\"id\":3,\"project_id\":5,\"gpu_class_id\":2,"
                           "\"guaranteed_milli\":null,\"effective_guaranteed_milli\":16000,"
                           "\"limit_milli\":null}]");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_list(&model_quotas, quotas, &b), 0);
    /* Without the server's figure (an older server) it says where it comes from only. */
    assert_string_equal(b.data, "ID  PROJECT_ID  CLASS_ID  GUARANTEED       LIMIT\n"
                                "1   4           2         from pools       -\n"
                                "2   4           3         8                16.5\n"
                                "3   5           2         16 (from pools)  -\n");
    buf_release(&b);
    json_decref(quotas);
}

static void test_render_list_empty_and_cut(void **state)
{
    json_t *empty = json_array();
    json_t *users = parse("[{\"id\":1,\"name\":\"bob\",\"email\":\"\",\"display_name\":"
                          "\"Bartholomew Montgomery-Featherstonehaugh the Third of Ely\","
                          "\"disabled\":false}]");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_list(&model_users, empty, &b), 0);
    assert_string_equal(b.data, "ID  NAME  EMAIL  DISPLAY_NAME  DISABLED\n");
    buf_reset(&b);
    cli_opts.tty = 1; /* at a terminal long cells are cut */
    assert_int_equal(render_list(&model_users, users, &b), 0);
    assert_string_equal(
        b.data, "ID  NAME  EMAIL  DISPLAY_NAME                                      DISABLED\n"
                "1   bob   -      Bartholomew Montgomery-Featherstonehaugh the ...  no\n");
    /* ... and not with -o wide, nor in a pipe or a file */
    cli_opts.wide = true;
    buf_reset(&b);
    assert_int_equal(render_list(&model_users, users, &b), 0);
    assert_non_null(strstr(b.data, "the Third of Ely  no\n"));
    cli_opts.wide = false;
    cli_opts.tty = -1;
    buf_reset(&b);
    assert_int_equal(render_list(&model_users, users, &b), 0);
    assert_non_null(strstr(b.data, "the Third of Ely  no\n"));
    cli_opts.tty = 0;
    buf_release(&b);
    json_decref(empty);
    json_decref(users);
}

static void test_render_object(void **state)
{
    json_t *obj = parse("{\"id\":4,\"org_id\":2,\"name\":\"ml\",\"display_name\":\"ML\","
                        "\"description\":\"\",\"weight\":1,"
                        "\"created_at\":\"2026-11-30T15:49:47Z\",\"extra\":[\"x\"]}");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_object(&model_projects, obj, &b), 0);
    assert_string_equal(b.data, "id:            4\n"
                                "org_id:        2\n"
                                "name:          ml\n"
                                "display_name:  ML\n"
                                "description:   -\n"
                                "weight:        1\n"
                                "created_at:    2026-11-30T15:49:47Z\n"
                                "extra:         [\"x\"]\n");
    buf_release(&b);
    json_decref(obj);
}

static void test_render_json(void **state)
{
    json_t *obj = parse("{\"id\":4,\"labels\":{\"a\":\"b\"}}");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_json(obj, &b), 0);
    assert_string_equal(b.data, "{\n  \"id\": 4,\n  \"labels\": {\n    \"a\": \"b\"\n  }\n}\n");
    buf_release(&b);
    json_decref(obj);
}

/* A resource the views do not know still gets sensible columns. */
static void test_render_list_unknown_resource(void **state)
{
    static const struct field_def fields[] = {
        {"id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL, "id"},
        {"name", NULL, FT_NAME, FF_REQUIRED, 0, 63, NULL, NULL, 0, NULL, "name"},
        {"notes", NULL, FT_STRING, 0, 0, 1024, NULL, NULL, 0, "", "long text"},
        {"size_mib", NULL, FT_INT, 0, 0, 100, NULL, NULL, 0, NULL, "size"},
        {"created_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "created"},
    };
    const struct resource_def def = {
        .name = "widgets",
        .singular = "widget",
        .fields = fields,
        .n_fields = ARRAY_SIZE(fields),
    };
    json_t *items = parse("[{\"id\":1,\"name\":\"w\",\"notes\":\"n\",\"size_mib\":5,"
                          "\"created_at\":\"2026-11-30T15:49:47Z\"}]");
    struct buf b;
    (void)state;

    buf_init(&b, 1 << 20);
    assert_int_equal(render_list(&def, items, &b), 0);
    assert_string_equal(b.data, "ID  NAME  SIZE_MIB\n"
                                "1   w     5\n");
    buf_release(&b);
    json_decref(items);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_alignment),
        cmocka_unit_test(test_table_utf8_and_control_chars),
        cmocka_unit_test(test_table_cut),
        cmocka_unit_test(test_table_fit_and_blank),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_render_list_organizations),
        cmocka_unit_test(test_render_list_units),
        cmocka_unit_test(test_render_quota_guarantee),
        cmocka_unit_test(test_render_list_empty_and_cut),
        cmocka_unit_test(test_render_object),
        cmocka_unit_test(test_render_json),
        cmocka_unit_test(test_render_list_unknown_resource),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
