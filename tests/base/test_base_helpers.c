/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of src/base: bounded buffers, arenas, parsing, time, the error table. */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/parse.h"
#include "base/timeutil.h"

static void test_buf_respects_its_maximum(void **state)
{
    struct buf b;
    (void)state;
    buf_init(&b, 8);
    assert_int_equal(buf_puts(&b, "1234"), 0);
    assert_int_equal(buf_printf(&b, "%d", 5678), 0);
    assert_string_equal(b.data, "12345678");
    /* One byte over: refused, and the content is unchanged. */
    assert_int_equal(buf_puts(&b, "9"), ERR_TOO_LARGE);
    assert_int_equal(buf_printf(&b, "%s", "x"), ERR_TOO_LARGE);
    assert_int_equal(b.len, 8);
    assert_string_equal(b.data, "12345678");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    buf_release(&b);
}

static void test_buf_detach_hands_over_ownership(void **state)
{
    struct buf b;
    size_t len;
    char *p;
    (void)state;
    buf_init(&b, 100);
    p = buf_detach(&b, &len); /* empty buffer: still a valid string */
    assert_string_equal(p, "");
    assert_int_equal(len, 0);
    free(p);
    buf_append(&b, "abc", 3);
    p = buf_detach(&b, &len);
    assert_string_equal(p, "abc");
    assert_int_equal(len, 3);
    assert_null(b.data);
    free(p);
}

static void test_arena_alignment_and_big_blocks(void **state)
{
    struct arena a;
    (void)state;
    arena_init(&a);
    for (int i = 1; i < 200; i++) {
        void *p = arena_alloc(&a, (size_t)i * 7);
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 0xab, (size_t)i * 7);
    }
    {
        char *big = arena_alloc(&a, 1 << 20);
        char *small = arena_strdup(&a, "after big");
        assert_int_equal(big[0], 0); /* zeroed */
        assert_string_equal(small, "after big");
    }
    assert_null(arena_strdup(&a, NULL));
    assert_string_equal(arena_printf(&a, "%s-%d", "x", 42), "x-42");
    assert_string_equal(arena_strndup(&a, "abcdef", 3), "abc");
    arena_release(&a);
    assert_null(a.head);
}

static void test_parse_int64(void **state)
{
    int64_t v = 7;
    (void)state;
    assert_int_equal(parse_int64("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(parse_int64("-5", -10, 10, &v), 0);
    assert_int_equal(v, -5);
    v = 7;
    assert_int_equal(parse_int64("", 0, 100, &v), ERR_INVALID);
    assert_int_equal(parse_int64(" 4", 0, 100, &v), ERR_INVALID);
    assert_int_equal(parse_int64("4x", 0, 100, &v), ERR_INVALID);
    assert_int_equal(parse_int64("101", 0, 100, &v), ERR_TOO_LARGE);
    assert_int_equal(parse_int64("99999999999999999999", INT64_MIN, INT64_MAX, &v),
                     ERR_TOO_LARGE);
    assert_int_equal(v, 7); /* untouched on failure */
}

static void test_parse_duration(void **state)
{
    int64_t s;
    (void)state;
    assert_int_equal(parse_duration_s("90", &s), 0);
    assert_int_equal(s, 90);
    assert_int_equal(parse_duration_s("15m", &s), 0);
    assert_int_equal(s, 900);
    assert_int_equal(parse_duration_s("2h", &s), 0);
    assert_int_equal(s, 7200);
    assert_int_equal(parse_duration_s("7d", &s), 0);
    assert_int_equal(s, 604800);
    assert_int_equal(parse_duration_s("m", &s), ERR_INVALID);
    assert_int_equal(parse_duration_s("5y", &s), ERR_INVALID);
    assert_int_equal(parse_duration_s("-5s", &s), ERR_INVALID);
}

static void test_rfc3339_round_trip_and_offsets(void **state)
{
    char out[32];
    int64_t t;
    (void)state;
    assert_int_equal(time_parse_rfc3339("2026-11-30T15:49:47Z", &t), 0);
    assert_int_equal(t, 1796053787);
    time_format_rfc3339(t, out, sizeof(out));
    assert_string_equal(out, "2026-11-30T15:49:47Z");
    assert_int_equal(time_parse_rfc3339("2026-11-30T17:49:47.250+02:00", &t), 0);
    assert_int_equal(t, 1796053787);
    time_format_rfc3339_ms(1796053787250, out, sizeof(out));
    assert_string_equal(out, "2026-11-30T15:49:47.250Z");
    assert_int_equal(time_parse_rfc3339("2026-02-30T00:00:00Z", &t), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339("2026-11-30 15:49:47", &t), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339("2026-11-30T25:00:00Z", &t), ERR_INVALID);
    assert_int_equal(time_parse_rfc3339("2026-11-30T15:49:47Zjunk", &t), ERR_INVALID);
}

static void test_error_table(void **state)
{
    struct error_info ei = {0};
    (void)state;
    assert_int_equal(err_http_status(ERR_NOT_FOUND), 404);
    assert_int_equal(err_http_status(ERR_TOO_LARGE), 413);
    assert_int_equal(err_http_status(ERR_BUSY), 503);
    assert_int_equal(err_http_status(0), 200);
    assert_string_equal(err_code_name(ERR_INVALID), "invalid_argument");
    assert_string_equal(err_code_name(-1), "internal"); /* unknown negative values */
    assert_int_equal(err_http_status(-1), 500);
    /* The first, innermost message wins. */
    assert_int_equal(errinfo_set(&ei, ERR_INVALID, "name", "field '%s' is bad", "name"),
                     ERR_INVALID);
    errinfo_set(&ei, ERR_STORE, NULL, "outer");
    assert_int_equal(ei.code, ERR_INVALID);
    assert_string_equal(ei.message, "field 'name' is bad");
    assert_string_equal(ei.field, "name");
    assert_int_equal(errinfo_set(NULL, ERR_IO, NULL, "x"), ERR_IO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_respects_its_maximum),
        cmocka_unit_test(test_buf_detach_hands_over_ownership),
        cmocka_unit_test(test_arena_alignment_and_big_blocks),
        cmocka_unit_test(test_parse_int64),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_rfc3339_round_trip_and_offsets),
        cmocka_unit_test(test_error_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
