/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 4180 CSV and the inventory spreadsheet (src/inventory/csv.c): quoted
 * fields with commas, doubled quotes and line breaks, CRLF, a BOM, header
 * aliases matched case-insensitively, unknown columns, every bad row
 * reported with its number and nothing returned when one is bad, and
 * import(export(t)) == t on random tables.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "inventory/inventory.h"
#include "inv_test.h"

struct rows {
    size_t n;
    char got[8][8][64];
    size_t n_fields[8];
    size_t line[8];
};

static int collect(void *ctx, char *const *fields, size_t n, size_t row, size_t line)
{
    struct rows *r = ctx;
    assert_int_equal(row, r->n + 1);
    if (r->n < 8) {
        for (size_t i = 0; i < n && i < 8; i++)
            snprintf(r->got[r->n][i], 64, "%s", fields[i]);
        r->n_fields[r->n] = n;
        r->line[r->n] = line;
    }
    r->n++;
    return 0;
}

static void test_reader(void **state)
{
    struct rows r;
    struct error_info ei = {0};
    const char *text = "\xEF\xBB\xBF"
                       "a,b,c\r\n"
                       "\"x,1\",\"say \"\"hi\"\"\",\"two\r\nlines\"\r\n"
                       "\n"
                       ",,\n"
                       "last,\"\",end"; /* no final line break */
    (void)state;

    memset(&r, 0, sizeof(r));
    assert_int_equal(inv_csv_parse(text, strlen(text), collect, &r, &ei), 4);
    assert_string_equal(r.got[0][0], "a");
    assert_int_equal(r.n_fields[0], 3);
    assert_string_equal(r.got[1][0], "x,1");
    assert_string_equal(r.got[1][1], "say \"hi\"");
    assert_string_equal(r.got[1][2], "two\r\nlines");
    assert_int_equal(r.line[1], 2);
    assert_int_equal(r.n_fields[2], 3);
    assert_string_equal(r.got[2][0], "");
    assert_int_equal(r.line[2], 5); /* the quoted line break and the blank line count */
    assert_string_equal(r.got[3][0], "last");
    assert_string_equal(r.got[3][1], "");
    assert_string_equal(r.got[3][2], "end");

    /* a trailing comma is one more empty field */
    memset(&r, 0, sizeof(r));
    assert_int_equal(inv_csv_parse("a,\n", 3, collect, &r, &ei), 1);
    assert_int_equal(r.n_fields[0], 2);
    assert_int_equal(inv_csv_parse("", 0, collect, &r, &ei), 0);
}

static void test_reader_errors(void **state)
{
    static const struct {
        const char *text;
        int err;
        const char *msg;
    } cases[] = {
        {"a,b\n\"x\"y,z\n", ERR_INVALID, "line 2: text after the closing quote of field 1"},
        {"a,b\nx,y\"z\n", ERR_INVALID, "line 2: quote inside unquoted field 2"},
        {"a\n\n\"open\nstill\n", ERR_INVALID, "line 3: quoted field never closed"},
        {"a\rb\n", ERR_INVALID, "line 1: carriage return inside unquoted field 1"},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct error_info ei = {0};
        int rc = inv_csv_parse(cases[i].text, strlen(cases[i].text), NULL, NULL, &ei);
        if (rc != cases[i].err || strcmp(ei.message, cases[i].msg) != 0)
            fail_msg("case %zu: %d '%s'", i, rc, ei.message);
    }
    /* limits: too many fields, too long a field */
    struct buf b;
    buf_init(&b, 1 << 20);
    for (int i = 0; i <= INV_CSV_MAX_FIELDS; i++)
        assert_int_equal(buf_puts(&b, "x,"), 0);
    struct error_info ei = {0};
    assert_int_equal(inv_csv_parse(b.data, b.len, NULL, NULL, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "line 1: more than 64 fields");
    buf_reset(&b);
    for (int i = 0; i <= INV_CSV_MAX_FIELD; i++)
        assert_int_equal(buf_puts(&b, "y"), 0);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_csv_parse(b.data, b.len, NULL, NULL, &ei), ERR_TOO_LARGE);
    assert_string_equal(ei.message, "line 1: field 1 longer than 4096 bytes");
    buf_release(&b);
}

static void test_import_good(void **state)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, "inventory-good.csv", &len);
    struct inv_table t;
    struct error_info ei = {0};
    (void)state;

    assert_int_equal(inv_csv_import(data, len, false, &t, NULL, &ei), 3);
    assert_int_equal(t.n_unknown, 1);
    assert_string_equal(t.unknown_cols[0], "Notes");
    assert_string_equal(t.items[0].f[INV_COL_GPU], "GPU-3f1c9a52-7d2e-4b8a-9c41-0e6f2d8b5a17");
    assert_string_equal(t.items[0].f[INV_COL_MODEL], "NVIDIA H200");
    assert_string_equal(t.items[0].f[INV_COL_SITE], "onprem/dc1");
    assert_string_equal(t.items[0].f[INV_COL_OWNER], "team-nlp");
    assert_string_equal(t.items[0].f[INV_COL_MANAGER], "Doe, Jane");
    assert_string_equal(t.items[0].f[INV_COL_INTENDED_USE], "training");
    assert_string_equal(t.items[0].f[INV_COL_ENVIRONMENT], "");
    assert_string_equal(t.items[2].f[INV_COL_GPU], "MIG-8b7d04e1-52a9-4f3c-b6de-71c2a9e0f384");
    assert_string_equal(t.items[2].f[INV_COL_MANAGER], "Kim");
    inv_table_release(&t);

    /* strict: the unknown column is an error */
    memset(&ei, 0, sizeof(ei));
    t.n = 12345; /* untouched on error */
    assert_int_equal(inv_csv_import(data, len, true, &t, NULL, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "row 1: unknown column 'Notes'");
    assert_int_equal(t.n, 12345);
    free(data);

    /* aliases, any case, any spacing */
    const char *alias = "UUID,GPU Model,HOSTNAME,cluster,Location,TEAM,manager,INTENDED-USE,Env\n"
                        "GPU-0abc,m,n,c,s,o,mg,u,prod\n";
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_csv_import(alias, strlen(alias), true, &t, NULL, &ei), 1);
    for (int c = 0; c < INV_N_COLS; c++)
        assert_true(t.items[0].f[c][0] != '\0');
    assert_string_equal(t.items[0].f[INV_COL_ENVIRONMENT], "prod");
    inv_table_release(&t);
}

static void expect_import_error(const char *fixture, const char *message, const char *report)
{
    size_t len;
    char *data = inv_test_read(INV_FIXTURES, fixture, &len);
    struct inv_table t;
    struct error_info ei = {0};
    struct buf rep;
    int rc;

    buf_init(&rep, 1 << 16);
    inv_table_init(&t);
    rc = inv_csv_import(data, len, false, &t, &rep, &ei);
    if (rc != ERR_INVALID || strcmp(ei.message, message) != 0)
        fail_msg("%s: %d '%s'", fixture, rc, ei.message);
    if (report && strcmp(rep.data ? rep.data : "", report) != 0)
        fail_msg("%s: report '%s'", fixture, rep.data);
    assert_int_equal(t.n, 0);
    assert_null(t.items);
    buf_release(&rep);
    free(data);
}

static void test_import_bad(void **state)
{
    (void)state;
    expect_import_error(
        "inventory-bad-rows.csv", "row 3: the GPU (uuid) is empty (4 bad rows in all)",
        "row 3: the GPU (uuid) is empty\n"
        "row 4: GPU 'GPU-zzzz' is not a GPU-... or MIG-... UUID\n"
        "row 5: has 3 fields, the header has 4\n"
        "row 6: GPU 'GPU-aaaa0000-0000-0000-0000-000000000001' is already on row 2\n");
    expect_import_error("inventory-dup.csv",
                        "row 4: GPU 'GPU-aaaa0000-0000-0000-0000-000000000001' is already on row 2",
                        NULL);
    expect_import_error("inventory-unterminated.csv", "line 2: quoted field never closed", NULL);
    expect_import_error("inventory-stray-quote.csv", "line 2: quote inside unquoted field 2", NULL);
    expect_import_error("inventory-no-gpu.csv", "row 1: the header has no GPU column (gpu or uuid)",
                        NULL);

    struct inv_table t;
    struct error_info ei = {0};
    assert_int_equal(inv_csv_import("", 0, false, &t, NULL, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "row 1: the header row is missing");
    memset(&ei, 0, sizeof(ei));
    const char *twice = "gpu,uuid\nGPU-a,GPU-b\n";
    assert_int_equal(inv_csv_import(twice, strlen(twice), false, &t, NULL, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "row 1: columns 'gpu' and 'uuid' are both the gpu column");
    memset(&ei, 0, sizeof(ei));
    const char *utf = "gpu,owner\nGPU-a,\xC3\x28\n";
    assert_int_equal(inv_csv_import(utf, strlen(utf), false, &t, NULL, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "row 2: owner is not valid UTF-8");
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void random_field(char *out, size_t size)
{
    static const char alphabet[] = "ab ,\"\r\n;x'\t\xC3\xA9";
    size_t n = next() % (size - 1);
    size_t i = 0;
    while (i < n) {
        char c = alphabet[next() % (sizeof(alphabet) - 1)];
        if ((unsigned char)c == 0xC3) {
            if (i + 2 > n)
                break;
            out[i++] = (char)0xC3;
            out[i++] = (char)0xA9;
            continue;
        }
        if ((unsigned char)c == 0xA9)
            c = 'z';
        out[i++] = c;
    }
    out[i] = '\0';
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int round = 0; round < 200; round++) {
        struct inv_table t, back;
        struct buf out;
        struct error_info ei = {0};
        size_t n = next() % 20;

        inv_table_init(&t);
        for (size_t i = 0; i < n; i++) {
            char f[INV_N_COLS][40];
            struct inv_item item;
            snprintf(f[0], sizeof(f[0]), "GPU-%08zx-%04x", i, round);
            for (int c = 1; c < INV_N_COLS; c++)
                random_field(f[c], sizeof(f[c]));
            for (int c = 0; c < INV_N_COLS; c++)
                item.f[c] = f[c];
            inv_table_add(&t, &item);
        }
        buf_init(&out, 1 << 20);
        assert_int_equal(inv_csv_export(&t, &out), 0);
        assert_int_equal(inv_csv_import(out.data, out.len, true, &back, NULL, &ei), (int)n);
        assert_int_equal(back.n, t.n);
        assert_int_equal(back.n_unknown, 0);
        for (size_t i = 0; i < n; i++)
            for (int c = 0; c < INV_N_COLS; c++)
                assert_string_equal(back.items[i].f[c], t.items[i].f[c]);
        inv_table_release(&back);
        inv_table_release(&t);
        buf_release(&out);
    }
}

static void test_export_shape(void **state)
{
    struct inv_table t;
    struct inv_item item = {
        {"GPU-1", "NVIDIA H200", "n", NULL, NULL, "team \"x\"", "A, B", "two\nlines", " padded"}};
    struct buf out;
    (void)state;
    inv_table_init(&t);
    inv_table_add(&t, &item);
    buf_init(&out, 4096);
    assert_int_equal(inv_csv_export(&t, &out), 0);
    assert_string_equal(out.data,
                        "gpu,model,node,cluster,site,owner,manager,intended_use,environment\r\n"
                        "GPU-1,NVIDIA H200,n,,,\"team \"\"x\"\"\",\"A, B\",\"two\nlines\","
                        "\" padded\"\r\n");
    buf_release(&out);
    inv_table_release(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader),      cmocka_unit_test(test_reader_errors),
        cmocka_unit_test(test_import_good), cmocka_unit_test(test_import_bad),
        cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_export_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
