/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-run.c: Slurm's command-line tools as the Slurm backend runs them,
 * on the base runner (base/run.h): the full path found at creation, the
 * arguments as a vector (no shell), the tools' minimal environment, and
 * command_timeout_ms as the deadline, past which a tool is killed.
 */
#include "base/common.h"

#include "backend/slurm-int.h"
#include "base/alloc.h"

const char *const slurm__tool_names[N_TOOLS] = {"sbatch", "squeue",   "scancel",
                                                "sinfo",  "scontrol", "sacct"};

const char *slurm__first_line(const struct run_result *r, char *line, size_t size)
{
    const char *s = r->err.data && r->err.len ? r->err.data : r->out.data ? r->out.data : "";
    size_t n = strcspn(s, "\n");
    snprintf(line, size, "%.*s", (int)(n < size ? n : size - 1), s);
    return line;
}

/* Counts a NULL-terminated vector (NULL: 0). */
static size_t count(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

/*
 * The spec of tool t: its argument vector and environment are allocated
 * (scancel takes a batch of job ids), freed with spec_release.
 */
static void spec_make(const struct slurm *s, enum tool t, const char *const *args,
                      const char *const *extra_env, size_t out_max, struct run_spec *spec)
{
    size_t n_args = count(args), n_env = count((const char *const *)s->env), n = 0;
    const char **argv = xcalloc(n_args + 2, sizeof(*argv));
    const char **envp = xcalloc(n_env + count(extra_env) + 1, sizeof(*envp));

    argv[0] = slurm__tool_names[t];
    memcpy(argv + 1, args, n_args * sizeof(*argv));
    for (size_t i = 0; i < n_env; i++)
        envp[n++] = s->env[i];
    for (size_t i = 0; extra_env && extra_env[i]; i++)
        envp[n++] = extra_env[i];
    *spec = (struct run_spec){.path = s->tools[t],
                              .argv = argv,
                              .envp = envp,
                              .out_max = out_max,
                              .err_max = SMALL_MAX,
                              .timeout_ms = s->command_timeout_ms};
}

static void spec_release(struct run_spec *spec)
{
    free((void *)spec->argv);
    free((void *)spec->envp);
}

/* The backend's contract: a tool that could not be run (ERR_IO: no pipe) is unavailable. */
static int unavailable(int rc, struct error_info *ei)
{
    if (rc != ERR_IO)
        return rc;
    if (ei && ei->code == ERR_IO)
        ei->code = ERR_UNAVAILABLE;
    return ERR_UNAVAILABLE;
}

int slurm__tool_start(struct slurm *s, enum tool t, const char *const *args,
                      const char *const *extra_env, const char *stdin_text, size_t out_max,
                      struct run_proc *p, struct error_info *ei)
{
    struct run_spec spec;
    int rc;

    assert(s->tools[t]);
    spec_make(s, t, args, extra_env, out_max, &spec);
    spec.stdin_text = stdin_text;
    rc = run_start(&spec, p, ei);
    spec_release(&spec);
    return unavailable(rc, ei);
}

int slurm__run_tool(struct slurm *s, enum tool t, const char *const *args,
                    const char *const *extra_env, size_t out_max, struct run_result *r,
                    struct error_info *ei)
{
    struct run_spec spec;
    int rc;

    assert(s->tools[t]);
    spec_make(s, t, args, extra_env, out_max, &spec);
    rc = run_command(&spec, r, ei);
    spec_release(&spec);
    return unavailable(rc, ei);
}
