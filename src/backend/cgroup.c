/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup.c: finding where replicas' control groups go, on cgroup v2 or v1
 * machines (cgroup.h); the daemon's side. What a keeper does to a replica's
 * cgroup is in cgroup-ops.c, which the spawner program links too.
 */
#include "base/common.h"

#include <dirent.h>
#include <sys/stat.h>

#include "backend/cgroup.h"
#include "base/alloc.h"
#include "base/fdio.h"

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
    if (strchr(setting, '\n')) { /* the keeper's request is line by line */
        snprintf(why, why_len, "a cgroup root may not hold a newline");
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

/* ---- the request to a keeper ---- */

int cgroup_request_format(const struct cgroup_place *place, const char *name, int64_t cpu_milli,
                          int64_t mem_mib, char *buf, size_t len)
{
    int n;
    if (place->kind == CGROUP_V2)
        n = snprintf(buf, len, "2 %" PRId64 " %" PRId64 " %s\n%s", cpu_milli, mem_mib, name,
                     place->dir);
    else if (place->kind == CGROUP_V1)
        n = snprintf(buf, len, "1 %" PRId64 " %" PRId64 " %s\n%s\n%s", cpu_milli, mem_mib, name,
                     place->cpu_dir, place->mem_dir);
    else
        return -1;
    return n < 0 || (size_t)n >= len ? -1 : n;
}
