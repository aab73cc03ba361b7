/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_config.c: the CLI's config file: where it is, that it is written
 * with mode 0600 in a 0700 directory whatever the umask, and that what is
 * written reads back; also the reader's handling of comments, unknown keys
 * and malformed lines.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "cli/config.h"

struct fixture {
    char dir[64];
};

static int setup(void **state)
{
    struct fixture *fx = xcalloc(1, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_cli_config.XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    *state = fx;
    return 0;
}

static void remove_tree(const char *path)
{
    char *cmd = xasprintf("rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", path);
    free(cmd);
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    remove_tree(fx->dir);
    free(fx);
    return 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    chmod(path, mode);
}

static void test_save_mode_and_read_back(void **state)
{
    struct fixture *fx = *state;
    char *path = xasprintf("%s/a/b/config", fx->dir);
    char *dir_a = xasprintf("%s/a", fx->dir), *dir_b = xasprintf("%s/a/b", fx->dir);
    struct cli_config cfg = {.server = xstrdup("http://127.0.0.1:8080"),
                             .token = xstrdup("gpa_0123456789abcdef")};
    struct cli_config back = {0};
    char err[256] = "";
    struct stat st;
    mode_t old_umask = umask(0); /* the file must still be 0600 */

    assert_int_equal(config_save(path, &cfg, err, sizeof(err)), 0);
    umask(old_umask);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(stat(dir_a, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(stat(dir_b, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);

    assert_int_equal(config_load(path, &back, err, sizeof(err)), 0);
    assert_string_equal(back.server, "http://127.0.0.1:8080");
    assert_string_equal(back.token, "gpa_0123456789abcdef");
    assert_false(back.loose_mode);
    config_release(&back);

    /* logout: the token goes, the server stays, the mode stays 0600 */
    free(cfg.token);
    cfg.token = NULL;
    chmod(path, 0644);
    assert_int_equal(config_save(path, &cfg, err, sizeof(err)), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(config_load(path, &back, err, sizeof(err)), 0);
    assert_string_equal(back.server, "http://127.0.0.1:8080");
    assert_null(back.token);
    config_release(&back);

    config_release(&cfg);
    free(path);
    free(dir_a);
    free(dir_b);
}

static void test_no_temp_file_left(void **state)
{
    struct fixture *fx = *state;
    char *path = xasprintf("%s/config", fx->dir);
    char *cmd = xasprintf("test $(ls -A '%s' | wc -l) -eq 1", fx->dir);
    struct cli_config cfg = {.server = xstrdup("https://gpu.example.com")};
    char err[256];

    assert_int_equal(config_save(path, &cfg, err, sizeof(err)), 0);
    assert_int_equal(config_save(path, &cfg, err, sizeof(err)), 0);
    assert_int_equal(system(cmd), 0);
    config_release(&cfg);
    free(cmd);
    free(path);
}

static void test_load_missing_is_empty(void **state)
{
    struct fixture *fx = *state;
    char *path = xasprintf("%s/nope/config", fx->dir);
    struct cli_config cfg = {0};
    char err[256];

    assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
    assert_null(cfg.server);
    assert_null(cfg.token);
    config_release(&cfg);
    free(path);
}

static void test_load_syntax(void **state)
{
    struct fixture *fx = *state;
    char *path = xasprintf("%s/config", fx->dir);
    struct cli_config cfg = {0};
    char err[256] = "";

    write_file(path,
               "# comment\n"
               "\n"
               "   server   =   http://h:1   \r\n"
               "color = blue\n"
               "token=gpa_x\n"
               "\t# indented comment\n",
               0600);
    assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
    assert_string_equal(cfg.server, "http://h:1");
    assert_string_equal(cfg.token, "gpa_x");
    config_release(&cfg);

    write_file(path, "server = http://h:1\ntoken gpa_x\n", 0600);
    assert_int_equal(config_load(path, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "line 2"));
    assert_null(cfg.server);

    write_file(path, "token = gpa_x\n", 0644);
    assert_int_equal(config_load(path, &cfg, err, sizeof(err)), 0);
    assert_true(cfg.loose_mode);
    config_release(&cfg);
    free(path);
}

static void test_save_refuses_control_chars(void **state)
{
    struct fixture *fx = *state;
    char *path = xasprintf("%s/config", fx->dir);
    struct cli_config cfg = {.server = xstrdup("http://h"),
                             .token = xstrdup("gpa_x\nserver = evil")};
    char err[256] = "";
    struct stat st;

    assert_int_equal(config_save(path, &cfg, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "control characters"));
    assert_int_equal(stat(path, &st), -1);
    config_release(&cfg);
    free(path);
}

static void test_default_path(void **state)
{
    char *p;
    (void)state;

    setenv("GPUAAS_CONFIG", "/x/gpuaas.conf", 1);
    setenv("XDG_CONFIG_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    p = config_default_path();
    assert_string_equal(p, "/x/gpuaas.conf");
    free(p);

    unsetenv("GPUAAS_CONFIG");
    p = config_default_path();
    assert_string_equal(p, "/xdg/gpuaas/config");
    free(p);

    setenv("XDG_CONFIG_HOME", "", 1);
    p = config_default_path();
    assert_string_equal(p, "/home/u/.config/gpuaas/config");
    free(p);

    unsetenv("XDG_CONFIG_HOME");
    unsetenv("HOME");
    assert_null(config_default_path());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_save_mode_and_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_temp_file_left, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_missing_is_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_syntax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_save_refuses_control_chars, setup, teardown),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
