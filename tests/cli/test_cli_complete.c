/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_complete.c: what the CLI generates from its command table:
 * "did you mean" for mistyped commands, resources and flags, and the
 * completion scripts (the bash one run in bash, completing real words).
 * Every flag the table lists must be in its command's --help, so the
 * completion offers nothing the command does not take.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/args.h"
#include "cli_harness.h"

static void test_did_you_mean(void **state)
{
    static const struct {
        const char *words[4];
        const char *err;
    } cases[] = {
        {{"pss"}, "unknown command or resource 'pss'; did you mean 'ps'?\n"},
        {{"projcts", "list"}, "unknown command or resource 'projcts'; did you mean 'projects'?\n"},
        {{"invoise", "list"}, "did you mean 'invoice'?\n"},
        {{"orgs", "lst"}, "unknown verb 'lst' for organizations; did you mean 'list'?\n"},
        {{"zzzzzz"}, "gpuaas: error: unknown command or resource 'zzzzzz'\nhint"},
        {{"ps", "--stat", "queued"}, "unknown flag '--stat' for 'ps'; did you mean '--state'?\n"},
        {{"run", "--flavour", "x"}, "unknown flag '--flavour' for 'run'; did you mean '--flavor'?"},
        {{"events", "--folow"}, "did you mean '--follow'?"},
        {{"projects", "list", "--orgg", "1"},
         "unknown flag '--orgg' for 'projects list'; did you mean '--org'?"},
    };
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *argv[6] = {"gpuaas"};
        struct result r;
        int n = 1;
        while (n < 5 && cases[i].words[n - 1]) {
            argv[n] = (char *)cases[i].words[n - 1];
            n++;
        }
        argv[n] = NULL;
        r = run(cli_main, argv, "http://127.0.0.1:1", CLI_OUTPUT_TABLE);
        assert_int_equal(r.rc, 2);
        assert_contains(r.err, cases[i].err);
        result_free(&r);
    }
}

/* The text of "gpuaas completion SHELL"; caller frees. */
static char *completion(const char *shell)
{
    struct result r =
        run(cli_main, ARGV("gpuaas", "completion", (char *)shell), NULL, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.err, "");
    free(r.err);
    return r.out;
}

static void test_completion_scripts(void **state)
{
    char *bash = completion("bash"), *zsh = completion("zsh"), *fish = completion("fish");
    struct result r;
    (void)state;

    assert_contains(bash, "complete -F _gpuaas gpuaas\n");
    assert_contains(bash, "ps) verbs=''; flags='--project --user --state --all --limit' ;;\n");
    assert_contains(bash, "invoice) verbs='list show draft issue pay credit export verify';");
    /* resources: their verbs and the model's flags, human unit flags included */
    assert_contains(bash, "flavors|flavor) verbs='list show create update delete'; flags='");
    assert_contains(bash, " --memory-mib --memory ");
    assert_contains(zsh, "#compdef gpuaas\n");
    assert_contains(zsh, "compdef _gpuaas gpuaas");
    assert_contains(fish, "complete -c gpuaas -n '__fish_use_subcommand' -f -a ps\n");
    assert_contains(fish, "complete -c gpuaas -n '__fish_seen_subcommand_from ps' -l user\n");
    free(bash);
    free(zsh);
    free(fish);
    r = run(cli_main, ARGV("gpuaas", "completion", "tcsh"), NULL, CLI_OUTPUT_TABLE);
    assert_int_equal(r.rc, 2);
    assert_contains(r.err, "the shell must be bash, zsh or fish, not 'tcsh'");
    result_free(&r);
}

/* Runs the bash script with COMP_WORDS set to words and returns COMPREPLY as one line. */
static char *bash_complete(const char *script_path, const char *words)
{
    char *cmd = xasprintf("bash -c 'source %s; COMP_WORDS=(%s); "
                          "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _gpuaas; "
                          "echo \"${COMPREPLY[*]}\"'",
                          script_path, words);
    FILE *p = popen(cmd, "r");
    char line[4096] = "";

    assert_non_null(p);
    if (!fgets(line, sizeof(line), p))
        line[0] = '\0';
    assert_int_equal(pclose(p), 0);
    free(cmd);
    return xstrdup(line);
}

static void test_bash_completes(void **state)
{
    static const struct {
        const char *words, *want;
    } cases[] = {
        {"gpuaas inv", "invoice inventory invoices inventory-items\n"},
        {"gpuaas ps --us", "--user\n"},
        {"gpuaas -o json flav", "flavors flavor\n"},
        {"gpuaas invoice d", "draft\n"},
        {"gpuaas quotas update 3 --gua", "--guaranteed-milli --guaranteed\n"},
        {"gpuaas ps --project ml --st", "--state\n"},
    };
    char path[] = "/tmp/test_cli_complete.XXXXXX";
    char *bash = completion("bash");
    int fd = mkstemp(path);
    (void)state;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, bash, strlen(bash)), (ssize_t)strlen(bash));
    close(fd);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *got = bash_complete(path, cases[i].words);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("'%s' completes to '%s', want '%s'", cases[i].words, got, cases[i].want);
        free(got);
    }
    unlink(path);
    free(bash);
}

/* Each flag the table gives a command (as the bash script lists it) is in that command's help. */
static void test_table_flags_are_in_help(void **state)
{
    char *bash = completion("bash"), *p = bash;
    size_t checked = 0;
    (void)state;

    while ((p = strstr(p, ") verbs='")) != NULL) {
        const char *start = p, *flags, *end;
        char *name, *list, *save = NULL;
        struct result r;

        while (start > bash && start[-1] != ' ')
            start--;
        name = xstrndup(start, (size_t)(p - start));
        flags = strstr(p, "flags='") + 7;
        end = strchr(flags, '\'');
        list = xstrndup(flags, (size_t)(end - flags));
        p = (char *)end;
        if (strchr(name, '|') || args_find_resource(name)) {
            free(name); /* a resource: its flags come from the model */
            free(list);
            continue;
        }
        r = run(cli_main, ARGV("gpuaas", name, "--help"), NULL, CLI_OUTPUT_TABLE);
        assert_int_equal(r.rc, 0);
        for (char *w = strtok_r(list, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            if (!strstr(r.out, w))
                fail_msg("'gpuaas %s --help' does not mention %s", name, w);
            checked++;
        }
        result_free(&r);
        free(name);
        free(list);
    }
    assert_true(checked > 40);
    free(bash);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_did_you_mean),
        cmocka_unit_test(test_completion_scripts),
        cmocka_unit_test(test_bash_completes),
        cmocka_unit_test(test_table_flags_are_in_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
