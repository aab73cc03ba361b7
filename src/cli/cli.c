/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.c: the global options and the message and flag helpers that every
 * command of the gpuaas client uses, so that errors and usage hints read
 * the same everywhere.
 */
#include "base/common.h"

#include "base/timeutil.h"
#include "cli/cli.h"

struct cli_options cli_opts = {NULL, NULL, CLI_OUTPUT_TABLE, 0};

static void vmessage(const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
    fputs(prefix, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("gpuaas: error: ", fmt, ap);
    va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("gpuaas: warning: ", fmt, ap);
    va_end(ap);
}

void cli_hint(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("hint: ", fmt, ap);
    va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage("gpuaas: error: ", fmt, ap);
    va_end(ap);
    if (cmd)
        cli_hint("see 'gpuaas %s --help'", cmd);
    else
        cli_hint("see 'gpuaas --help'");
    return CLI_USAGE;
}

int cli_parse_output(const char *s, enum cli_output *ret)
{
    if (strcmp(s, "table") == 0)
        *ret = CLI_OUTPUT_TABLE;
    else if (strcmp(s, "json") == 0)
        *ret = CLI_OUTPUT_JSON;
    else
        return -1;
    return 0;
}

bool cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int64_t cli_now_ms(void)
{
    return cli_opts.now_ms ? cli_opts.now_ms : time_now_ms();
}

int cli_take_value_flag(const char *cmd, int argc, char **argv, int *i, const char *name,
                        const char *short_name, const char **ret_value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);

    if (strncmp(arg, name, n) == 0 && arg[n] == '=') {
        *ret_value = arg + n + 1;
        *i += 1;
        return 1;
    }
    if (strcmp(arg, name) != 0 && !(short_name && strcmp(arg, short_name) == 0))
        return 0;
    if (*i + 1 >= argc)
        return cli_usage_error(cmd, "flag '%s' needs a value", arg);
    *ret_value = argv[*i + 1];
    *i += 2;
    return 1;
}

int cli_take_global_flag(const char *cmd, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *v = NULL; /* set whenever rc is 1 */
    int rc;

    if (strncmp(arg, "-o", 2) == 0 && arg[2] != '\0') {
        /* "-ojson", as getopt allows */
        v = arg + 2;
        *i += 1;
        rc = 1;
    } else {
        rc = cli_take_value_flag(cmd, argc, argv, i, "--output", "-o", &v);
    }
    if (rc != 0) {
        if (rc != 1)
            return rc;
        if (cli_parse_output(v, &cli_opts.output) < 0)
            return cli_usage_error(cmd, "output format must be 'table' or 'json', not '%s'", v);
        return 1;
    }
    rc = cli_take_value_flag(cmd, argc, argv, i, "--server", NULL, &v);
    if (rc == 1)
        cli_opts.server = v;
    if (rc != 0)
        return rc;
    rc = cli_take_value_flag(cmd, argc, argv, i, "--token", NULL, &v);
    if (rc == 1)
        cli_opts.token = v;
    return rc;
}
