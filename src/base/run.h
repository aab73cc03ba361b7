/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run.h: runs a program as a child process within a deadline: an argument
 * vector (no shell), an environment, text on its standard input, its
 * standard output and error captured up to a bound each, then its exit
 * status or the signal that ended it. Past the deadline the child is killed
 * (SIGKILL) and reaped, so no tool that hangs can hold its caller. Used for
 * Slurm's command-line tools (backend) and nvidia-smi (inventory).
 *
 * Either to its end in one call (run_command), or started and looked at
 * without blocking (run_start, run_poll, run_abort) by a caller that goes on
 * with other work meanwhile, as the Slurm backend does with sbatch.
 */
#ifndef GPUAAS_RUN_H
#define GPUAAS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/err.h"

struct run_spec {
    const char *path;        /* the program; a name without '/' is looked up in PATH */
    const char *const *argv; /* NULL-terminated; argv[0] names the program in messages */
    const char *const *envp; /* NULL-terminated; NULL: the caller's own environment */
    const char *stdin_text;  /* its whole standard input; NULL: /dev/null */
    size_t out_max;          /* standard output beyond this fails the run (ERR_TOO_LARGE) */
    size_t err_max;          /* standard error beyond this is dropped; 0: to /dev/null */
    int64_t timeout_ms;      /* the deadline, from the start */
    bool own_group;          /* its own process group, all killed at the deadline */
};

/* A child started and not yet finished with: embed it, fill it with run_start. */
struct run_proc {
    pid_t pid;           /* 0 once reaped or killed */
    int fd[2];           /* standard output and error (read ends); -1 once closed */
    struct buf out, err; /* what it wrote so far */
    int64_t deadline_ms; /* on time_mono_ms()'s clock */
    int64_t timeout_ms;
    bool own_group;
    char name[64]; /* argv[0], for messages */
};

struct run_result {
    int status;          /* exit code 0-255, or minus the signal that ended it */
    struct buf out, err; /* data NULL when nothing was written; release with run_result_release */
};

/*
 * Starts spec's program with posix_spawn, not fork: glibc's spawns with
 * CLONE_VFORK, so the caller's page tables are not copied and its other
 * threads take no copy-on-write faults. The child gets the pipes and its
 * standard input, no other descriptor, default signal dispositions and an
 * empty signal mask. Returns 0 with p filled (finish it with run_poll to
 * its end, run_finish or run_abort), or with ei: ERR_UNAVAILABLE when the
 * program could not be run ("could not run '<path>': <why>", a missing
 * program included), ERR_IO when a pipe or the input could not be made.
 */
int run_start(const struct run_spec *spec, struct run_proc *p, struct error_info *ei);

/*
 * Looks at p without waiting: reads what it wrote, reaps it once its output
 * is closed, checks its deadline. Returns 1 with *ret_status (exit code, or
 * minus the signal) when it has ended, 0 while it runs, or with ei:
 * ERR_UNAVAILABLE when the deadline passed ("'<name>' timed out after N
 * ms"), ERR_TOO_LARGE past out_max ("'<name>' wrote more than N bytes"),
 * ERR_IO when it could not be read or waited for. On an error it is still
 * to be run_abort()ed (which kills it). Its output stays in p->out, p->err.
 */
int run_poll(struct run_proc *p, int *ret_status, struct error_info *ei);

/*
 * Waits for p to end, within its deadline. Returns 0 with r (p's output is
 * handed over; the caller releases r whatever the exit status), or the
 * errors of run_poll (p is then killed). p is finished with either way.
 */
int run_finish(struct run_proc *p, struct run_result *r, struct error_info *ei);

/* Kills p (its process group too, when it has one), reaps it, closes its pipes, drops its output.
 * Does nothing the second time. */
void run_abort(struct run_proc *p);

/* run_start, then run_finish: 0 with r (caller releases), or their errors with ei. */
int run_command(const struct run_spec *spec, struct run_result *r, struct error_info *ei);

void run_result_release(struct run_result *r);

#endif
