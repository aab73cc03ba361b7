/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of src/base: bounded buffers, arenas, the array-growth helper, mapped tables,
 * parsing, time, the error table.
 */
#include "base/common.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_LSAN 1
#endif
#endif
#ifdef HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

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

/* ALLOC_GROW doubles (16 at first), jumps straight to a larger need, keeps the contents. */
static void test_alloc_grow(void **state)
{
    int64_t *v = NULL;
    int32_t cap = 0; /* a narrower capacity type than size_t, as the scheduler's */
    size_t n = 0, big_cap = 0;
    char *big = NULL;
    (void)state;

    ALLOC_GROW(v, 0, cap); /* nothing needed: nothing allocated */
    assert_null(v);
    assert_int_equal(cap, 0);
    for (int64_t i = 0; i < 100; i++) {
        ALLOC_GROW(v, n + 1, cap);
        v[n++] = i * 3;
    }
    assert_int_equal(cap, 128); /* 16, 32, 64, 128 */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(v[i], (int64_t)i * 3);
    ALLOC_GROW(v, 1000, cap); /* more than twice: exactly what is asked */
    assert_int_equal(cap, 1000);
    ALLOC_GROW(v, 1000, cap); /* enough already: unchanged */
    assert_int_equal(cap, 1000);
    assert_int_equal(v[99], 99 * 3);
    free(v);

    ALLOC_GROW(big, 3, big_cap);
    assert_int_equal(big_cap, 16);
    free(big);
}

/* Puts n fresh heap blocks into table[from..from+n), each holding its index; no other pointer to
 * them is kept. */
static __attribute__((noinline)) void table_fill(char **table, size_t from, size_t n)
{
    for (size_t i = from; i < from + n; i++) {
        table[i] = xmalloc(32);
        snprintf(table[i], 32, "row %zu", i);
    }
}

/* Whether the leak checker would report anything now; false where there is none. */
static bool leaks_now(void)
{
#ifdef HAVE_LSAN
    return __lsan_do_recoverable_leak_check() != 0;
#else
    return false;
#endif
}

/*
 * A table of alloc_table_grow: zero past what it held, kept across a growth
 * that moves it, and the heap blocks it alone points to are not leaks (the
 * scheduler's workload table holds the only pointer to each workload's
 * assignments; a sanitized process that exits with work running reported them).
 */
static void test_alloc_table(void **state)
{
    const size_t small = 4096, large = (size_t)64 << 20, n_small = small / sizeof(char *);
    char **t = alloc_table_grow(NULL, 0, small);
    char expect[32];
    (void)state;

    assert_int_equal((uintptr_t)t % 4096, 0);
    for (size_t i = 0; i < n_small; i++)
        assert_null(t[i]);
    table_fill(t, 0, n_small);
    assert_false(leaks_now());
    t = alloc_table_grow(t, small, large);
    assert_int_equal((uintptr_t)t % 4096, 0);
    for (size_t i = n_small; i < large / sizeof(char *); i += 4099)
        assert_null(t[i]);
    table_fill(t, large / sizeof(char *) - 8, 8); /* the far end, past the first mapping */
    assert_false(leaks_now());
    for (size_t i = 0; i < n_small; i++) {
        snprintf(expect, sizeof(expect), "row %zu", i);
        assert_string_equal(t[i], expect);
        free(t[i]);
    }
    for (size_t i = large / sizeof(char *) - 8; i < large / sizeof(char *); i++)
        free(t[i]);
    alloc_table_free(t, large);
    alloc_table_free(NULL, 0);
}

/* A count past ALLOC_GROW_MAX or below zero aborts, as out-of-memory does: never a short array. */
static void test_alloc_grow_refuses_bad_counts(void **state)
{
    const int64_t bad[] = {-1, ALLOC_GROW_MAX + 1, INT64_MAX};
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        int status = 0;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            char *p = NULL;
            size_t cap = 0;
            if (!freopen("/dev/null", "w", stderr))
                _exit(3);
            ALLOC_GROW(p, bad[i], cap);
            _exit(0); /* not reached */
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
    }
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
        cmocka_unit_test(test_alloc_grow),
        cmocka_unit_test(test_alloc_grow_refuses_bad_counts),
        cmocka_unit_test(test_alloc_table),
        cmocka_unit_test(test_parse_int64),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_rfc3339_round_trip_and_offsets),
        cmocka_unit_test(test_error_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
