/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_harness.h: what the CLI's tests share on top of fake_http.h: the
 * token they log in with, running one command with its output captured, and
 * reading back the requests the fake server saw. Include after cmocka.h.
 * A test that needs a fixed "now" defines CLI_HARNESS_NOW_MS before the
 * include; otherwise commands read the wall clock.
 */
#ifndef GPUAAS_TEST_CLI_HARNESS_H
#define GPUAAS_TEST_CLI_HARNESS_H

#include "cli/cli.h"
#include "fake_http.h"

#define TOKEN "gpa_s3cret_token"

#ifndef CLI_HARNESS_NOW_MS
#define CLI_HARNESS_NOW_MS 0 /* 0: the wall clock */
#endif

/* A NULL-terminated argv from string literals. */
#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})

static FAKE_UNUSED void assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("'%s' does not contain '%s'", text, part);
}

/* The raw text of the fake server's request i. */
static FAKE_UNUSED const char *req(const struct fake_http *f, size_t i)
{
    assert_true(i < f->n_requests);
    return f->requests[i];
}

/* What one command did: its exit code and everything it printed. */
struct result {
    int rc;
    char *out;
    char *err;
};

static FAKE_UNUSED void result_free(struct result *r)
{
    free(r->out);
    free(r->err);
}

/* Runs a command against server with the given output format, capturing its output. */
static FAKE_UNUSED struct result run(int (*fn)(int, char **), char **argv, const char *server,
                                     enum cli_output output)
{
    struct capture out, err;
    struct result r;
    int argc = 0;

    while (argv[argc])
        argc++;
    cli_opts.server = server;
    cli_opts.token = TOKEN;
    cli_opts.output = output;
    cli_opts.now_ms = CLI_HARNESS_NOW_MS;
    capture_start(&out, stdout);
    capture_start(&err, stderr);
    r.rc = fn(argc, argv);
    r.err = capture_end(&err);
    r.out = capture_end(&out);
    return r;
}

#endif
