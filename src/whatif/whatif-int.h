/* SPDX-License-Identifier: Apache-2.0 */
/* whatif-int.h: what only the files of src/whatif share. */
#ifndef GPUAAS_WHATIF_INT_H
#define GPUAAS_WHATIF_INT_H

#include "base/alloc.h"
#include "whatif/whatif.h"

/* A replay's own core: the scheduler, its policy, what the changes set. */
struct whatif_core {
    struct sched *s;
    struct sched_policy *policy; /* NULL: built-in best-fit */
    int64_t grace_ms;            /* >= 0: every preemption's grace (WHATIF_GRACE) */
    int64_t capacity_milli;      /* GPUs of ready nodes */
    int64_t *removed;            /* ids of the nodes WHATIF_REMOVE_NODES took out, sorted */
    size_t n_removed, cap_removed;
};

/* GPUs of the core's ready nodes, in milli-GPU. */
int64_t whatif__capacity(const struct whatif_core *core, const struct whatif_world *w);

/* Builds the core of a world with changes (checked before). Release with whatif__core_release. */
int whatif__core_new(const struct whatif_world *w, const struct whatif_change *changes, size_t n,
                     struct whatif_core *ret, struct error_info *ei);
void whatif__core_release(struct whatif_core *c);

/*
 * Applies a quota, cap, pool, node or weight change of the record to the core, with
 * the replay's quota and lend-to-all changes on top of it (a node it removed
 * stays down). ERR_INVALID when the core refuses it (an unknown project,
 * class, owner or node, a guarantee above the limit): the caller counts what
 * was applied.
 */
int whatif__recorded_change(struct whatif_core *core, const struct whatif_recorded_change *tc,
                            const struct whatif_change *changes, size_t n);

#endif
