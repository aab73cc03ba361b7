/* SPDX-License-Identifier: Apache-2.0 */
/* launch.c: what every backend checks of a launch request before acting on it, and its names. */
#include "base/common.h"

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
