/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup.h: the control groups the local backend runs each replica in, with
 * the flavor's CPU and memory limits (issue 8, docs/local-backend.md).
 *
 * Two kinds of machine: cgroup v2 (one hierarchy; cpu.max, memory.max, and
 * cgroup.kill) and cgroup v1 (separate cpu and memory hierarchies;
 * cpu.cfs_quota_us, memory.limit_in_bytes, and no kill file). The setting
 * `cgroup-root` chooses: "" for none, "auto" to find the machine's own
 * hierarchies (v2 with the cpu and memory controllers if there is one, else
 * v1's cpu and memory) and use a `gpuaas` directory in each, or a cgroup v2
 * directory the daemon may write. A replica's cgroup is a child named by
 * the caller, made by the replica's keeper with its limits and joined by
 * the work before it execs, so nothing the work runs escapes it; the keeper
 * kills what is left and removes it when the work has ended.
 */
#ifndef GPUAAS_BACKEND_CGROUP_H
#define GPUAAS_BACKEND_CGROUP_H

#include <stddef.h>
#include <stdint.h>

enum cgroup_kind { CGROUP_NONE, CGROUP_V1, CGROUP_V2 };

struct cgroup_place {
    enum cgroup_kind kind;
    char *dir;     /* v2: where replicas' cgroups are made */
    char *cpu_dir; /* v1: the same in the cpu hierarchy */
    char *mem_dir; /* v1: and in the memory hierarchy */
};

/*
 * Finds where replicas' cgroups go for setting ("", "auto" or a v2
 * directory), making the gpuaas directories "auto" uses and enabling the
 * cpu and memory controllers for their children. Returns 0 with *place
 * usable, or -1 with place->kind CGROUP_NONE and why (a sentence) filled.
 * Empty children whose names start with mine (may be NULL: none), left by
 * a crash of an earlier run, are removed; other daemons' are not touched.
 */
int cgroup_place_open(const char *setting, const char *mine, struct cgroup_place *place, char *why,
                      size_t why_len);
void cgroup_place_close(struct cgroup_place *place);

/* A few words for the log, such as "v2 /sys/fs/cgroup/gpuaas", into buf. */
void cgroup_place_describe(const struct cgroup_place *place, char *buf, size_t len);

/*
 * From the text of /proc/self/mountinfo: the mount point of a cgroup v2
 * hierarchy (the first one), and of the cgroup v1 hierarchies that hold the
 * cpu and the memory controllers. Each is NULL when there is none; caller
 * frees. Pure, for tests.
 */
void cgroup_find_mounts(const char *mountinfo, char **v2, char **v1_cpu, char **v1_memory);

/*
 * The rest is what a replica's keeper does (spawner-helper.c), in a child
 * of a possibly multi-threaded process: system calls and stack buffers
 * only, never malloc or stdio.
 */

/* Makes the child cgroup name with these limits (<= 0: none). 0, or -1 with errno. */
int cgroup_make(const struct cgroup_place *place, const char *name, int64_t cpu_milli,
                int64_t mem_mib);

/* Moves the calling process into child name, in every hierarchy. 0, or -1 with errno. */
int cgroup_join(const struct cgroup_place *place, const char *name);

/* Kills every process still in child name (work that left its process group). */
void cgroup_kill(const struct cgroup_place *place, const char *name);

/* Removes child name. 0 (also when it is gone), or -1 with errno (EBUSY: processes remain). */
int cgroup_remove(const struct cgroup_place *place, const char *name);

/*
 * What the daemon asks a keeper to make: the place, the child's name and
 * its limits, as one string for the spawner's request. The text is
 * "<kind> <cpu_milli> <mem_mib> <name>" then one line per directory. Returns
 * its length, or -1 when it does not fit (or the place is none).
 */
int cgroup_request_format(const struct cgroup_place *place, const char *name, int64_t cpu_milli,
                          int64_t mem_mib, char *buf, size_t len);

struct cgroup_request {
    struct cgroup_place place; /* pointing into the parsed text: never closed */
    const char *name;
    int64_t cpu_milli, mem_mib;
};

/* Parses text made by cgroup_request_format, in place (it is cut into strings). 0 or -1. */
int cgroup_request_parse(char *text, struct cgroup_request *out);

#endif
