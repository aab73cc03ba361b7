/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h: what every command of the gpuaas client shares: exit codes, the
 * global options (--server, --token, -o), message printing and the command
 * entry points listed in main.c's command table.
 *
 * A command is `int cmd_<name>(int argc, char **argv)` where argv[0] is the
 * command word; it returns the process exit code (enum cli_exit).
 */
#ifndef GPUAAS_CLI_H
#define GPUAAS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define CLI_VERSION "0.1.0"

enum cli_exit {
    CLI_OK = 0,    /* success */
    CLI_ERROR = 1, /* server, network or local failure */
    CLI_USAGE = 2, /* the command line was wrong */
};

enum cli_output { CLI_OUTPUT_TABLE, CLI_OUTPUT_JSON };

/* Global options; main() fills them from the command line before dispatch. */
struct cli_options {
    const char *server; /* --server, NULL when not given */
    const char *token;  /* --token, NULL when not given */
    enum cli_output output;
    int64_t now_ms; /* the time commands take as now; 0 for the clock (tests set it) */
    bool wide;      /* -o wide: a table, with no cell cut to fit a terminal */
    int tty;        /* whether stdout is a terminal: 0 asks isatty, 1 yes, -1 no (tests) */
};
extern struct cli_options cli_opts;

/* "gpuaas: error: <msg>" on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "gpuaas: warning: <msg>" on stderr. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hint: <msg>" on stderr, after an error. */
void cli_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * Prints a usage error and a one-line hint to see 'gpuaas <cmd> --help';
 * cmd is the command as typed ("projects create"), NULL for the top level.
 * Returns CLI_USAGE.
 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct buf;
/*
 * Reads file whole into out, which it initialises to hold at most max bytes (a multiple of
 * 1 MiB, as the message says); the caller releases out with buf_release() either way.
 * CLI_OK, or CLI_ERROR with the reason printed (cannot open, larger than max).
 */
int cli_read_file(const char *file, size_t max, struct buf *out);

/* Parses "table", "wide" (a table; sets cli_opts.wide) or "json"; returns 0 or -1. */
int cli_parse_output(const char *s, enum cli_output *ret);

/*
 * Whether tables cut long cells: only for a person at a terminal, who can
 * ask for everything with -o wide; a pipe or a file gets every character.
 */
bool cli_cut_cells(void);

/*
 * Global flags may also follow the command word (`gpuaas orgs list -o json`).
 * If argv[*i] is one (-o, --output, --server, --token, with the value as the
 * next word or after '='), consumes it and its value into cli_opts, advances
 * *i past them and returns 1. Returns 0 when argv[*i] is not a global flag,
 * or CLI_USAGE (after printing why) when its value is missing or wrong.
 */
int cli_take_global_flag(const char *cmd, int argc, char **argv, int *i);

/*
 * Matches argv[*i] against a flag: "--name VALUE" or "--name=VALUE" (and
 * short, when not NULL, as "-x VALUE"). On a match, sets *ret_value, advances
 * *i past the value and returns 1; returns 0 on no match, CLI_USAGE (after
 * printing why) when the value is missing.
 */
int cli_take_value_flag(const char *cmd, int argc, char **argv, int *i, const char *name,
                        const char *short_name, const char **ret_value);

/*
 * Checks that flag's value is one of values (NULL-terminated). Returns 0,
 * or prints a usage error naming the valid values (and the closest one,
 * when the value looks like a typo of it) and returns CLI_USAGE.
 */
int cli_check_enum(const char *cmd, const char *flag, const char *value, const char *const *values);

/*
 * The word of candidates (NULL-terminated) closest to word by edit
 * distance, when close enough to be a typo of it (at most 1 edit for short
 * words, 2 for longer, never more than a third of the word); else NULL.
 */
const char *cli_closest(const char *word, const char *const *candidates);

/* True for "-h" and "--help". */
bool cli_is_help(const char *arg);

/* Now in ms since the epoch: cli_opts.now_ms when set, else the wall clock. */
int64_t cli_now_ms(void);

/*
 * The whole command line (argv[0] is the program): global flags, then a
 * command of commands.c's table or a resource word. Returns the exit code.
 */
int cli_main(int argc, char **argv);

/*
 * "unknown flag" for a command of the table, naming its closest flag when
 * the word looks like a typo of one. Returns CLI_USAGE.
 */
int cli_unknown_flag(const char *cmd, const char *flag);

/* The commands of commands.c's table. */
int cmd_login(int argc, char **argv);
int cmd_logout(int argc, char **argv);
int cmd_whoami(int argc, char **argv);
/* Generic verbs for any resource of the model; argv[0] is the resource word. */
int cmd_resource(int argc, char **argv);
/* Workloads (cmd_<name>.c each; they share work.c). */
int cmd_run(int argc, char **argv);
int cmd_ps(int argc, char **argv);
int cmd_acct(int argc, char **argv);
int cmd_share(int argc, char **argv);
int cmd_hold(int argc, char **argv);
int cmd_release(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_queue(int argc, char **argv);
int cmd_preemptions(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_timeline(int argc, char **argv);
int cmd_capacity(int argc, char **argv);
int cmd_usage(int argc, char **argv);
int cmd_invoice(int argc, char **argv);
int cmd_cost(int argc, char **argv);
int cmd_inventory(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_whatif(int argc, char **argv);

#endif
