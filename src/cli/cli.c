/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.c: the global options and the message and flag helpers that every
 * command of the gpuaas client uses, so that errors and usage hints read
 * the same everywhere.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/timeutil.h"
#include "cli/cli.h"

struct cli_options cli_opts = {NULL, NULL, CLI_OUTPUT_TABLE, 0, false, 0};

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

int cli_read_file(const char *file, size_t max, struct buf *out)
{
    FILE *f;
    char chunk[65536];
    size_t got;
    int rc = CLI_OK;

    buf_init(out, max);
    if (!(f = fopen(file, "rb"))) {
        cli_error("cannot read '%s': %s", file, strerror(errno));
        return CLI_ERROR;
    }
    while (rc == CLI_OK && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (buf_append(out, chunk, got) < 0) {
            cli_error("'%s' is larger than %zu MiB", file, max >> 20);
            rc = CLI_ERROR;
        }
    }
    fclose(f);
    return rc;
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
    if (strcmp(s, "table") == 0 || strcmp(s, "wide") == 0) {
        *ret = CLI_OUTPUT_TABLE;
        cli_opts.wide = strcmp(s, "wide") == 0;
    } else if (strcmp(s, "json") == 0)
        *ret = CLI_OUTPUT_JSON;
    else
        return -1;
    return 0;
}

bool cli_cut_cells(void)
{
    if (cli_opts.wide)
        return false;
    if (cli_opts.tty)
        return cli_opts.tty > 0;
    return isatty(STDOUT_FILENO) == 1;
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
            return cli_usage_error(cmd, "output format must be 'table', 'wide' or 'json', not '%s'",
                                   v);
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

/* Levenshtein distance of a and b, or more than cap when it exceeds cap. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t na = strlen(a), nb = strlen(b), *row, d;

    if (na > 64 || nb > 64)
        return cap + 1; /* no typo of a word this long is worth the work */
    row = xcalloc(nb + 1, sizeof(*row));
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    d = row[nb];
    free(row);
    return d;
}

const char *cli_closest(const char *word, const char *const *candidates)
{
    size_t len = strlen(word), cap = len <= 4 ? 1 : 2, best_d = cap + 1;
    const char *best = NULL;

    if (cap > len / 3 + 1)
        cap = len / 3 + 1;
    for (const char *const *c = candidates; c && *c; c++) {
        size_t d = edit_distance(word, *c, cap);
        if (d <= cap && d < best_d) {
            best_d = d;
            best = *c;
        }
    }
    return best;
}

int cli_check_enum(const char *cmd, const char *flag, const char *value, const char *const *values)
{
    const char *close;
    struct buf b;

    for (const char *const *v = values; *v; v++) {
        if (strcmp(*v, value) == 0)
            return 0;
    }
    buf_init(&b, 4096);
    for (const char *const *v = values; *v; v++)
        buf_printf(&b, "%s%s", v == values ? "" : (v[1] ? ", " : " or "), *v);
    close = cli_closest(value, values);
    if (close)
        cli_usage_error(cmd, "%s must be %s, not '%s'; did you mean '%s'?", flag, b.data, value,
                        close);
    else
        cli_usage_error(cmd, "%s must be %s, not '%s'", flag, b.data, value);
    buf_release(&b);
    return CLI_USAGE;
}
