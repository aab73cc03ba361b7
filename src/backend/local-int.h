/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local-int.h: what the local backend's files share: discovery of this
 * machine's GPUs (local-discover.c) for local.c's ops->discover.
 */
#ifndef GPUAAS_BACKEND_LOCAL_INT_H
#define GPUAAS_BACKEND_LOCAL_INT_H

#include "backend/backend.h"

struct local_discovery {
    struct collector *collector;         /* not owned; NULL: none */
    const struct inv_declared_gpu *gpus; /* not owned */
    size_t n_gpus;
    uint64_t runs;    /* the collector's good local runs at the last report */
    bool host_warned; /* this host's name cannot name a node: said once */
};

/*
 * This host's node and its GPUs: after each good run of the NVML or
 * nvidia-smi collector, and whenever fleet_loaded (a local cluster may be
 * new). As ops->discover: 1 with *ret (memory in a), 0 when nothing new.
 */
int local_discover(struct local_discovery *d, bool fleet_loaded, struct arena *a,
                   struct backend_fleet_report *ret);

#endif
