/* SPDX-License-Identifier: Apache-2.0 */
/* launch.c: what every backend checks of a launch request before acting on it, and its names. */
#include "base/common.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include "backend/backend.h"
#include "base/alloc.h"

int backend_check_launch(const struct backend_launch *l, struct error_info *ei)
{
    if (!l)
        return errinfo_set(ei, ERR_INVALID, NULL, "no workload to launch");
    if (l->workload_id <= 0)
        return errinfo_set(ei, ERR_INVALID, "workload_id",
                           "workload id must be positive, not %" PRId64, l->workload_id);
    if (l->n_replicas == 0 || !l->replicas)
        return errinfo_set(ei, ERR_INVALID, "replicas",
                           "workload %" PRId64 " has no replicas to launch", l->workload_id);
    for (size_t i = 0; i < l->n_replicas; i++) {
        if (l->replicas[i].n_devices > 0 && !l->replicas[i].devices)
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64 " replica %zu lists no devices", l->workload_id,
                               i);
    }
    return 0;
}

char *backend_instance_prefix(const char *log_dir)
{
    char *real = realpath(log_dir, NULL);
    const char *p = real ? real : log_dir;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    free(real);
    return xasprintf("gpuaas-%08" PRIx32 "-", h);
}

/* Whether uid (in the given groups) may search a directory with this owner and mode. */
static bool may_search(const struct stat *st, uid_t uid, const gid_t *groups, int n_groups)
{
    if (uid == 0)
        return true;
    if (st->st_uid == uid)
        return (st->st_mode & S_IXUSR) != 0;
    for (int i = 0; i < n_groups; i++) {
        if (groups[i] == st->st_gid)
            return (st->st_mode & S_IXGRP) != 0;
    }
    return (st->st_mode & S_IXOTH) != 0;
}

int backend_dir_reachable(const char *dir, uid_t uid, gid_t gid, struct error_info *ei)
{
    char *real = realpath(dir, NULL);
    gid_t groups[64];
    int n_groups = (int)ARRAY_SIZE(groups);
    struct passwd pwd, *pw = NULL;
    char pw_buf[16384];
    size_t len;
    int rc = 0;

    if (!real)
        return errinfo_set(ei, ERR_INVALID, "log_dir", "could not resolve '%s': %s", dir,
                           strerror(errno));
    /* The user's groups as this host knows them; else its primary group alone. */
    if (getpwuid_r(uid, &pwd, pw_buf, sizeof(pw_buf), &pw) != 0 || !pw ||
        getgrouplist(pw->pw_name, gid, groups, &n_groups) < 0) {
        groups[0] = gid;
        n_groups = 1;
    }
    /* "/", then each directory below it down to the log directory itself. */
    len = strlen(real);
    for (size_t i = 0; i <= len && rc == 0; i++) {
        size_t cut = i == 0 ? 1 : i; /* the prefix real[0, cut) */
        char saved;
        struct stat st;
        if (i != 0 && i != len && real[i] != '/')
            continue;
        saved = real[cut];
        real[cut] = '\0';
        if (stat(real, &st) < 0 || !may_search(&st, uid, groups, n_groups))
            rc = errinfo_set(ei, ERR_INVALID, "log_dir",
                             "user id %u cannot reach '%s': '%s' is not searchable by it (work"
                             " run as that user writes its log there)",
                             (unsigned)uid, dir, real);
        real[cut] = saved;
    }
    free(real);
    return rc;
}
