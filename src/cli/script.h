/* SPDX-License-Identifier: Apache-2.0 */
/*
 * script.h: batch scripts for `gpuaas run --script FILE`, as Slurm users
 * write them for sbatch: `#GPUAAS` lines at the top give run flags (as
 * `#SBATCH` lines do), and the script is the work's command.
 */
#ifndef GPUAAS_CLI_SCRIPT_H
#define GPUAAS_CLI_SCRIPT_H

#include <stddef.h>

struct run_script {
    char *text;   /* the script */
    char **words; /* the flags its directives give, in order */
    int n_words, cap_words;
};

/*
 * Reads the script at path (at most max bytes) and its directives: the
 * `#GPUAAS` lines among the comments and blank lines before its first
 * command (after a `#!` line), each split into words as a shell would
 * (quotes, backslashes). 0, or a CLI exit code after saying why.
 */
int script_read(const char *path, size_t max, struct run_script *ret);

/*
 * The command that runs the script with args (already quoted words, or
 * NULL): the script itself for sh (no `#!`, or a `#!` naming sh), else
 * `exec bash -c '<script>' NAME args` for bash. NULL with *ret_interp set
 * to the interpreter when the script is for another one. Caller frees.
 */
char *script_command(const struct run_script *s, const char *name, const char *args,
                     char **ret_interp);

void script_release(struct run_script *s);

#endif
