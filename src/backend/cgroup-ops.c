/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup-ops.c: what is done to one replica's cgroup (cgroup.h): made with
 * its limits, joined, emptied, removed. A replica's keeper does this in a
 * child of the spawner, or of the daemon itself where there is no spawner
 * program, so only system calls and stack buffers: no malloc, no stdio.
 * Libc alone, so that the gpuaas-spawner program links it too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "backend/cgroup.h"
#include "base/fdio.h"

#define CPU_PERIOD "100000"  /* microseconds: quotas are per 100 ms */
#define V1_MIN_QUOTA_US 1000 /* the kernel refuses less */
#define KILL_ROUNDS 8        /* a fork bomb outruns one pass over cgroup.procs */
#define NUM_MAX 24           /* room for any int64_t in decimal */

/* dir/name[/file] into buf (PATH_MAX). 0, or -1 with ENAMETOOLONG. */
static int path_of(char *buf, const char *dir, const char *name, const char *file)
{
    size_t a = strlen(dir), b = strlen(name), c = file ? strlen(file) + 1 : 0;
    if (a + 1 + b + c + 1 > PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, dir, a);
    buf[a] = '/';
    memcpy(buf + a + 1, name, b);
    if (file) {
        buf[a + 1 + b] = '/';
        memcpy(buf + a + 2 + b, file, c - 1);
    }
    buf[a + 1 + b + c] = '\0';
    return 0;
}

/* v as decimal into out (NUM_MAX bytes), NUL-terminated. */
static void put_num(char *out, int64_t v)
{
    out[put_decimal(out, (long long)v)] = '\0';
}

/* Writes value to dir/name/file. 0 or -1 (errno). */
static int set(const char *dir, const char *name, const char *file, const char *value)
{
    char path[PATH_MAX];
    return path_of(path, dir, name, file) < 0 ? -1 : file_write_string(path, value);
}

static int make_dir(const char *dir, const char *name)
{
    char path[PATH_MAX];
    if (path_of(path, dir, name, NULL) < 0)
        return -1;
    return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int remove_dir(const char *dir, const char *name)
{
    char path[PATH_MAX];
    if (path_of(path, dir, name, NULL) < 0)
        return -1;
    return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
}

/* CPU quota per period in microseconds for cpu_milli thousandths of a CPU; 0: none. */
static int64_t quota_us(int64_t cpu_milli)
{
    return cpu_milli > 0 && cpu_milli <= INT64_MAX / 100 ? cpu_milli * 100 : 0;
}

static int64_t limit_bytes(int64_t mem_mib)
{
    return mem_mib > 0 && mem_mib <= INT64_MAX / (1024 * 1024) ? mem_mib * 1024 * 1024 : 0;
}

static int make_v2(const char *dir, const char *name, int64_t cpu_milli, int64_t mem_mib)
{
    char value[2 * NUM_MAX];
    int64_t quota = quota_us(cpu_milli), bytes = limit_bytes(mem_mib);
    size_t len;

    if (quota > 0)
        put_num(value, quota);
    else
        memcpy(value, "max", 4);
    len = strlen(value);
    value[len] = ' ';
    memcpy(value + len + 1, CPU_PERIOD, sizeof(CPU_PERIOD));
    if (set(dir, name, "cpu.max", value) < 0)
        return -1;
    if (bytes > 0)
        put_num(value, bytes);
    else
        memcpy(value, "max", 4);
    return set(dir, name, "memory.max", value);
}

static int make_v1(const char *cpu_dir, const char *mem_dir, const char *name, int64_t cpu_milli,
                   int64_t mem_mib)
{
    char value[NUM_MAX];
    int64_t quota = quota_us(cpu_milli), bytes = limit_bytes(mem_mib);

    if (set(cpu_dir, name, "cpu.cfs_period_us", CPU_PERIOD) < 0)
        return -1;
    put_num(value, quota <= 0 ? -1 : quota < V1_MIN_QUOTA_US ? V1_MIN_QUOTA_US : quota);
    if (set(cpu_dir, name, "cpu.cfs_quota_us", value) < 0)
        return -1;
    put_num(value, bytes > 0 ? bytes : -1);
    return set(mem_dir, name, "memory.limit_in_bytes", value);
}

int cgroup_make(const struct cgroup_place *place, const char *name, int64_t cpu_milli,
                int64_t mem_mib)
{
    int rc = -1, saved;

    if (place->kind == CGROUP_V2) {
        rc = make_dir(place->dir, name) == 0 && make_v2(place->dir, name, cpu_milli, mem_mib) == 0
                 ? 0
                 : -1;
    } else if (place->kind == CGROUP_V1) {
        rc = make_dir(place->cpu_dir, name) == 0 && make_dir(place->mem_dir, name) == 0 &&
                     make_v1(place->cpu_dir, place->mem_dir, name, cpu_milli, mem_mib) == 0
                 ? 0
                 : -1;
    } else {
        errno = ENOENT;
        return -1;
    }
    if (rc < 0) {
        saved = errno;
        cgroup_remove(place, name);
        errno = saved;
    }
    return rc;
}

int cgroup_join(const struct cgroup_place *place, const char *name)
{
    /* "0": the writing process itself */
    if (place->kind == CGROUP_V2)
        return set(place->dir, name, "cgroup.procs", "0");
    if (place->kind == CGROUP_V1) {
        return set(place->cpu_dir, name, "cgroup.procs", "0") == 0 &&
                       set(place->mem_dir, name, "cgroup.procs", "0") == 0
                   ? 0
                   : -1;
    }
    errno = ENOENT;
    return -1;
}

/* SIGKILLs the processes listed in dir/name/cgroup.procs, a few rounds, until it is empty. */
static void kill_listed(const char *dir, const char *name)
{
    char path[PATH_MAX], list[16384];

    if (path_of(path, dir, name, "cgroup.procs") < 0)
        return;
    for (int round = 0; round < KILL_ROUNDS; round++) {
        ssize_t n = file_read_small(path, list, sizeof(list));
        if (n <= 0)
            return;
        for (char *p = list, *end; *p; p = end + (*end == '\n')) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (pid > 1)
                kill((pid_t)pid, SIGKILL);
        }
    }
}

void cgroup_kill(const struct cgroup_place *place, const char *name)
{
    if (place->kind == CGROUP_V2) {
        /* one write kills the whole cgroup, forks included (kernel 5.14+) */
        if (set(place->dir, name, "cgroup.kill", "1") < 0 && errno != ENOENT)
            kill_listed(place->dir, name);
    } else if (place->kind == CGROUP_V1) {
        kill_listed(place->mem_dir, name);
        kill_listed(place->cpu_dir, name);
    }
}

int cgroup_remove(const struct cgroup_place *place, const char *name)
{
    if (place->kind == CGROUP_V2)
        return remove_dir(place->dir, name);
    if (place->kind == CGROUP_V1) {
        int a = remove_dir(place->cpu_dir, name), saved = errno;
        int b = remove_dir(place->mem_dir, name);
        if (a < 0)
            errno = saved;
        return a < 0 || b < 0 ? -1 : 0;
    }
    return 0;
}

/* The next line of *p (cut at its '\n'), or NULL at the end. */
static char *next_line(char **p)
{
    char *line = *p, *nl;
    if (!line || !*line)
        return NULL;
    nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = NULL;
    }
    return line;
}

int cgroup_request_parse(char *text, struct cgroup_request *out)
{
    char *rest = text, *head = next_line(&rest), *end;
    long kind;

    memset(out, 0, sizeof(*out));
    if (!head)
        return -1;
    kind = strtol(head, &end, 10);
    if (end == head || *end != ' ')
        return -1;
    out->cpu_milli = strtoll(end + 1, &end, 10);
    if (*end != ' ')
        return -1;
    out->mem_mib = strtoll(end + 1, &end, 10);
    if (*end != ' ' || !end[1] || strchr(end + 1, ' ') || strchr(end + 1, '/'))
        return -1;
    out->name = end + 1;
    if (kind == 2) {
        out->place.kind = CGROUP_V2;
        out->place.dir = next_line(&rest);
        return out->place.dir && !rest ? 0 : -1;
    }
    if (kind == 1) {
        out->place.kind = CGROUP_V1;
        out->place.cpu_dir = next_line(&rest);
        out->place.mem_dir = next_line(&rest);
        return out->place.cpu_dir && out->place.mem_dir && !rest ? 0 : -1;
    }
    return -1;
}
