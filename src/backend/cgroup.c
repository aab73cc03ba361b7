/* SPDX-License-Identifier: Apache-2.0 */
/* cgroup.c: replicas' control groups on cgroup v2 or v1 machines (cgroup.h). */
#include "base/common.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include "backend/cgroup.h"
#include "base/alloc.h"
#include "base/fdio.h"

#define CPU_PERIOD_US 100000
#define V1_MIN_QUOTA_US 1000 /* the kernel refuses less */
#define KILL_ROUNDS 8        /* a fork bomb outruns one pass over cgroup.procs */

/* ---- finding the hierarchies ---- */

/* Whether the comma-separated list holds word. */
static bool has_option(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, word, len) == 0 && (p[len] == ',' || p[len] == '\0'))
            return true;
    }
    return false;
}

/* Whether the space-separated list (a cgroup.controllers or subtree_control file) holds word. */
static bool has_word(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word)) {
        bool starts = p == list || p[-1] == ' ';
        bool ends = p[len] == '\0' || p[len] == ' ' || p[len] == '\n';
        if (starts && ends)
            return true;
    }
    return false;
}

void cgroup_find_mounts(const char *mountinfo, char **v2, char **v1_cpu, char **v1_memory)
{
    const char *line = mountinfo;

    *v2 = *v1_cpu = *v1_memory = NULL;
    while (line && *line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char *copy = xstrndup(line, len), *save = NULL, *field[6] = {0}, *tok, *type = NULL,
             *super = NULL;
        int n = 0;

        /* id parent dev root mountpoint options [optional...] - type source superoptions */
        for (tok = strtok_r(copy, " ", &save); tok && n < 6; tok = strtok_r(NULL, " ", &save))
            field[n++] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        if (tok) {
            type = strtok_r(NULL, " ", &save);
            if (type && strtok_r(NULL, " ", &save)) /* the source */
                super = strtok_r(NULL, " ", &save);
        }
        /* a mount point with an escaped character (\040 ...) is not ours to guess at */
        if (n == 6 && type && field[4][0] == '/' && !strchr(field[4], '\\')) {
            if (strcmp(type, "cgroup2") == 0 && !*v2)
                *v2 = xstrdup(field[4]);
            if (strcmp(type, "cgroup") == 0 && super && has_option(super, "cpu") && !*v1_cpu)
                *v1_cpu = xstrdup(field[4]);
            if (strcmp(type, "cgroup") == 0 && super && has_option(super, "memory") && !*v1_memory)
                *v1_memory = xstrdup(field[4]);
        }
        free(copy);
        line = eol ? eol + 1 : NULL;
    }
}

/* mkdir that accepts an existing directory. */
static int make_dir(const char *dir)
{
    return mkdir(dir, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

/* Removes the empty children of dir named mine...: what a crash left. Busy ones stay (EBUSY). */
static void sweep(const char *dir, const char *mine)
{
    DIR *d;
    struct dirent *e;
    if (!mine || !mine[0] || !(d = opendir(dir)))
        return;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, mine, strlen(mine)) == 0) {
            char *child = xasprintf("%s/%s", dir, e->d_name);
            rmdir(child);
            free(child);
        }
    }
    closedir(d);
}

/* Whether dir/file can be written. */
static bool writable(const char *dir, const char *file)
{
    char *path = xasprintf("%s/%s", dir, file);
    bool ok = access(path, W_OK) == 0;
    free(path);
    return ok;
}

/* Enables the cpu and memory controllers for dir's children; whether both are. */
static bool enable_controllers(const char *dir)
{
    char *path = xasprintf("%s/cgroup.subtree_control", dir), enabled[256];
    bool ok;
    /*
     * Fails where dir itself holds processes (cgroup v2 has no internal
     * processes except at the root); then limits cannot be set.
     */
    file_write_string(path, "+cpu +memory");
    ok = file_read_small(path, enabled, sizeof(enabled)) >= 0 && has_word(enabled, "cpu") &&
         has_word(enabled, "memory");
    free(path);
    return ok;
}

static int open_v2(const char *dir, struct cgroup_place *place, char *why, size_t why_len)
{
    char *controllers = xasprintf("%s/cgroup.controllers", dir), list[256];
    bool ok = file_read_small(controllers, list, sizeof(list)) >= 0;
    free(controllers);
    if (!ok) {
        snprintf(why, why_len, "'%s' is not a cgroup v2 directory", dir);
        return -1;
    }
    if (!has_word(list, "cpu") || !has_word(list, "memory")) {
        snprintf(why, why_len, "the cpu and memory controllers are not available in '%s'", dir);
        return -1;
    }
    if (access(dir, W_OK) < 0 || !writable(dir, "cgroup.procs") || !enable_controllers(dir)) {
        snprintf(why, why_len, "could not enable the cpu and memory controllers in '%s'", dir);
        return -1;
    }
    place->kind = CGROUP_V2;
    place->dir = xstrdup(dir);
    return 0;
}

static int open_auto(struct cgroup_place *place, char *why, size_t why_len)
{
    char text[65536], *v2 = NULL, *cpu = NULL, *mem = NULL;
    int rc = -1;

    if (file_read_small("/proc/self/mountinfo", text, sizeof(text)) < 0) {
        snprintf(why, why_len, "could not read /proc/self/mountinfo: %s", strerror(errno));
        return -1;
    }
    cgroup_find_mounts(text, &v2, &cpu, &mem);
    if (v2) {
        char *path = xasprintf("%s/cgroup.controllers", v2), list[256];
        bool has = file_read_small(path, list, sizeof(list)) >= 0 && has_word(list, "cpu") &&
                   has_word(list, "memory");
        free(path);
        if (has) {
            char *dir = xasprintf("%s/gpuaas", v2);
            enable_controllers(v2); /* the root may; a delegated subtree already has them */
            if (make_dir(dir) < 0)
                snprintf(why, why_len, "could not make '%s': %s", dir, strerror(errno));
            else
                rc = open_v2(dir, place, why, why_len);
            free(dir);
            goto out;
        }
    }
    if (cpu && mem) {
        char *cpu_dir = xasprintf("%s/gpuaas", cpu), *mem_dir = xasprintf("%s/gpuaas", mem);
        if (make_dir(cpu_dir) < 0 || make_dir(mem_dir) < 0) {
            snprintf(why, why_len, "could not make '%s' and '%s': %s", cpu_dir, mem_dir,
                     strerror(errno));
        } else if (!writable(cpu_dir, "cpu.cfs_quota_us") ||
                   !writable(mem_dir, "memory.limit_in_bytes")) {
            snprintf(why, why_len, "may not set limits in '%s' and '%s'", cpu_dir, mem_dir);
        } else {
            place->kind = CGROUP_V1;
            place->cpu_dir = cpu_dir;
            place->mem_dir = mem_dir;
            cpu_dir = mem_dir = NULL;
            rc = 0;
        }
        free(cpu_dir);
        free(mem_dir);
        goto out;
    }
    snprintf(why, why_len,
             "this machine mounts neither cgroup v2 with the cpu and memory controllers nor "
             "cgroup v1's cpu and memory hierarchies");
out:
    free(v2);
    free(cpu);
    free(mem);
    return rc;
}

int cgroup_place_open(const char *setting, const char *mine, struct cgroup_place *place, char *why,
                      size_t why_len)
{
    int rc;
    memset(place, 0, sizeof(*place));
    if (!setting || !setting[0]) {
        snprintf(why, why_len, "no cgroup root is set");
        return -1;
    }
    rc = strcmp(setting, "auto") == 0 ? open_auto(place, why, why_len)
                                      : open_v2(setting, place, why, why_len);
    if (rc < 0) {
        cgroup_place_close(place);
        return -1;
    }
    if (place->kind == CGROUP_V2) {
        sweep(place->dir, mine);
    } else {
        sweep(place->cpu_dir, mine);
        sweep(place->mem_dir, mine);
    }
    return 0;
}

void cgroup_place_close(struct cgroup_place *place)
{
    free(place->dir);
    free(place->cpu_dir);
    free(place->mem_dir);
    memset(place, 0, sizeof(*place));
}

void cgroup_place_describe(const struct cgroup_place *place, char *buf, size_t len)
{
    if (place->kind == CGROUP_V2)
        snprintf(buf, len, "v2 %s", place->dir);
    else if (place->kind == CGROUP_V1)
        snprintf(buf, len, "v1 %s and %s", place->cpu_dir, place->mem_dir);
    else
        snprintf(buf, len, "none");
}

/* ---- a replica's cgroup ---- */

/* Writes value to dir/file. 0 or -1 (errno). */
static int set(const char *dir, const char *file, const char *value)
{
    char *path = xasprintf("%s/%s", dir, file);
    int rc = file_write_string(path, value);
    free(path);
    return rc;
}

static int make_v2(const char *dir, int64_t cpu_milli, int64_t mem_mib)
{
    char value[64];
    if (cpu_milli > 0 && cpu_milli <= INT64_MAX / 100)
        snprintf(value, sizeof(value), "%" PRId64 " %d", cpu_milli * 100, CPU_PERIOD_US);
    else
        snprintf(value, sizeof(value), "max %d", CPU_PERIOD_US);
    if (set(dir, "cpu.max", value) < 0)
        return -1;
    if (mem_mib > 0 && mem_mib <= INT64_MAX / (1024 * 1024))
        snprintf(value, sizeof(value), "%" PRId64, mem_mib * 1024 * 1024);
    else
        snprintf(value, sizeof(value), "max");
    return set(dir, "memory.max", value);
}

static int make_v1(const char *cpu_dir, const char *mem_dir, int64_t cpu_milli, int64_t mem_mib)
{
    char value[64];
    if (set(cpu_dir, "cpu.cfs_period_us", "100000") < 0)
        return -1;
    if (cpu_milli > 0 && cpu_milli <= INT64_MAX / 100) {
        int64_t quota = cpu_milli * 100;
        snprintf(value, sizeof(value), "%" PRId64,
                 quota < V1_MIN_QUOTA_US ? (int64_t)V1_MIN_QUOTA_US : quota);
    } else {
        snprintf(value, sizeof(value), "-1");
    }
    if (set(cpu_dir, "cpu.cfs_quota_us", value) < 0)
        return -1;
    if (mem_mib > 0 && mem_mib <= INT64_MAX / (1024 * 1024))
        snprintf(value, sizeof(value), "%" PRId64, mem_mib * 1024 * 1024);
    else
        snprintf(value, sizeof(value), "-1");
    return set(mem_dir, "memory.limit_in_bytes", value);
}

char *cgroup_make(const struct cgroup_place *place, const char *name, int64_t cpu_milli,
                  int64_t mem_mib)
{
    char *a = NULL, *b = NULL, *procs = NULL;
    int rc = -1, saved;

    if (place->kind == CGROUP_V2) {
        a = xasprintf("%s/%s", place->dir, name);
        if (make_dir(a) == 0 && make_v2(a, cpu_milli, mem_mib) == 0) {
            procs = xasprintf("%s/cgroup.procs", a);
            rc = 0;
        }
    } else if (place->kind == CGROUP_V1) {
        a = xasprintf("%s/%s", place->cpu_dir, name);
        b = xasprintf("%s/%s", place->mem_dir, name);
        if (make_dir(a) == 0 && make_dir(b) == 0 && make_v1(a, b, cpu_milli, mem_mib) == 0) {
            procs = xasprintf("%s/cgroup.procs\n%s/cgroup.procs", a, b);
            rc = 0;
        }
    } else {
        errno = ENOENT;
    }
    saved = errno;
    if (rc < 0) {
        if (a)
            rmdir(a);
        if (b)
            rmdir(b);
    }
    free(a);
    free(b);
    errno = saved;
    return procs;
}

/* SIGKILLs the processes listed in dir/cgroup.procs, a few rounds; whether it was found empty. */
static bool kill_listed(const char *dir)
{
    char *path = xasprintf("%s/cgroup.procs", dir), list[16384];
    bool empty = false;

    for (int round = 0; round < KILL_ROUNDS && !empty; round++) {
        ssize_t n = file_read_small(path, list, sizeof(list));
        empty = n <= 0;
        for (char *p = list; n > 0 && *p;) {
            char *end;
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            if (pid > 1)
                kill((pid_t)pid, SIGKILL);
            p = end + (*end == '\n');
        }
    }
    free(path);
    return empty;
}

void cgroup_kill(const struct cgroup_place *place, const char *name)
{
    char *dir;
    if (place->kind == CGROUP_V2) {
        char *kill_file;
        dir = xasprintf("%s/%s", place->dir, name);
        kill_file = xasprintf("%s/cgroup.kill", dir);
        /* one write kills the whole cgroup, forks included (kernel 5.14+) */
        if (file_write_string(kill_file, "1") < 0 && errno != ENOENT)
            kill_listed(dir);
        free(kill_file);
        free(dir);
    } else if (place->kind == CGROUP_V1) {
        dir = xasprintf("%s/%s", place->mem_dir, name);
        kill_listed(dir);
        free(dir);
        dir = xasprintf("%s/%s", place->cpu_dir, name);
        kill_listed(dir);
        free(dir);
    }
}

static int remove_dir(const char *parent, const char *name)
{
    char *dir = xasprintf("%s/%s", parent, name);
    int rc = rmdir(dir) < 0 && errno != ENOENT ? -1 : 0, saved = errno;
    free(dir);
    errno = saved;
    return rc;
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
