/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policies.h: placement policies for the scheduler core (struct
 * sched_policy), after Weng et al., "Beware of Fragmentation: Scheduling
 * GPU-Sharing Workloads with Fragmentation Gradient Descent" (USENIX ATC
 * '23): the paper's baselines Random, DotProd, GpuClustering, GpuPacking and
 * BestFit, and its FGD policy. docs/placement.md describes each one and the
 * benchmark that compares them (bench/fgd_bench.c).
 *
 * Every policy scores one node at a time (lower is better, INT64_MAX when
 * the replica does not fit on the node's CPU, memory or devices) and picks
 * the devices. Unless said otherwise, a share (gpu_milli < 1000) goes to the
 * fitting device with the least free capacity (lowest index on ties), and
 * whole-GPU replicas take the lowest-indexed fully free devices. A request
 * with gpu_milli 0 (CPU-only) is scored on CPU and memory and picks no
 * device; the core does not ask policies about CPU-only work today
 * (docs/placement.md), but the policies are ready for it.
 *
 * Policies are pure: no I/O, no clock. Random keeps a call counter in its
 * state, so one instance must not be shared by schedulers that run at the
 * same time. Each _new returns a heap object the caller frees with the
 * matching _free (NULL is accepted).
 */
#ifndef GPUAAS_SCHED_POLICIES_H
#define GPUAAS_SCHED_POLICIES_H

#include <stddef.h>
#include <stdint.h>

#include "sched/sched.h"

/*
 * One pod shape. In a typical-pod workload, freq is the shape's share of
 * the pods (0..1]; as input to fgd_workload_build, freq is ignored.
 * gpu_milli is per device: 1..999 with num_gpu 1 (a share), 1000 for whole
 * devices, 0 with num_gpu 0 (CPU-only).
 */
struct fgd_pod {
    int32_t num_gpu;
    int32_t gpu_milli;
    int64_t cpu_milli;
    int64_t mem_mib;
    double freq;
};

/*
 * Demand that only some pools can serve (pods naming a GPU model, when
 * each model is a pool): the share of all the GPU asked for that pods
 * restricted to exactly these pools ask for.
 */
struct fgd_pin {
    int64_t pool_ids[SCHED_MAX_POOLS];
    int n_pools;
    int32_t num_gpu;  /* devices per pod: 1 for shares and single GPUs */
    double gpu_share; /* (0..1] */
};

/* The "typical pods" FGD weighs fragmentation over, and the pinned demand fgd-fill weighs. */
struct fgd_workload {
    struct fgd_pod *pods; /* owned; most frequent first */
    size_t n_pods;
    struct fgd_pin *pins; /* owned; may be none */
    size_t n_pins, cap_pins;
};

/*
 * Builds the typical pods of a pod list: pods are grouped by GPU shape
 * (num_gpu, gpu_milli; CPU-only pods are one shape), and the most frequent
 * shapes are kept until they cover at least `coverage` (0..1] of the pods
 * (ties in count: the smaller shape first). Each shape's cpu_milli and
 * mem_mib are the medians over its pods. Frequencies are renormalised over
 * the kept shapes. Returns 0, or SCHED_EINVAL for an empty list or a bad
 * coverage. Release with fgd_workload_release.
 */
int fgd_workload_build(const struct fgd_pod *pods, size_t n, double coverage,
                       struct fgd_workload *ret);
/*
 * As fgd_workload_build, then adds the shapes asking for the most GPU in
 * all (count x GPU per pod) until the kept shapes also ask for at least
 * gpu_coverage [0..1] of all the GPU the list asks for. On the Alibaba
 * trace, 95% of the pods leaves out the 8-GPU pods, which ask for 6% of
 * the GPU; fgd-fill is given coverage 0.95, gpu_coverage 0.95.
 */
int fgd_workload_build_cover(const struct fgd_pod *pods, size_t n, double coverage,
                             double gpu_coverage, struct fgd_workload *ret);
/*
 * Typical pods from text, for a real cluster: comma-separated entries
 * NUMxMILLI/CPU_MILLI/MEM_MIB[*WEIGHT], e.g. "1x1000/12000/49152*50,
 * 0x0/16000/65536*15" (no spaces): num_gpu, gpu_milli per device (1..1000
 * with one device, 1000 with more, 0 with none), CPU and memory, and a
 * relative weight (default 1). Entries "@ID|ID[xN]*PERCENT" add pinned
 * demand (fgd_workload_add_pin): pods of N devices (default 1) restricted
 * to those pools ask for PERCENT (at most two decimals, 0 < PERCENT <= 100)
 * of the GPU. Returns 0, or SCHED_EINVAL for anything malformed (ret
 * untouched). Release with fgd_workload_release.
 */
int fgd_workload_parse(const char *spec, struct fgd_workload *ret);
/*
 * Typical pods a daemon uses when it is given none: whole GPUs, shares of
 * one, 2-, 4- and 8-GPU pods and CPU-only pods, CPU and memory in
 * proportion to the GPU, weighted roughly as in the Alibaba trace.
 */
#define SCHED_POLICY_DEFAULT_PODS                                                                  \
    "1x1000/12000/49152*50,0x0/16000/65536*14,1x500/6000/24576*15,1x250/4000/16384*10,"            \
    "2x1000/24000/98304*4,4x1000/48000/196608*4,8x1000/96000/393216*3"

/*
 * Adds pinned demand: gpu_share (0..1] of all the GPU asked for comes from
 * pods of num_gpu (1..SCHED_MAX_GPUS_PER_NODE) devices each restricted to
 * the n_pools (1..SCHED_MAX_POOLS) pools of pool_ids (ids > 0). A set and
 * size already present gets the share added. Returns 0, or SCHED_EINVAL
 * (w untouched).
 */
int fgd_workload_add_pin(struct fgd_workload *w, const int64_t *pool_ids, int n_pools,
                         int32_t num_gpu, double gpu_share);

void fgd_workload_release(struct fgd_workload *w);

/*
 * Fragmentation of one node, in milli-GPU: the expected free GPU milli that
 * a pod drawn from the typical pods could not use. For a pod that does not
 * fit on the node at all (CPU, memory, too few devices with room) or that
 * uses no GPU, all the node's free GPU milli counts; otherwise the free milli
 * of each device with less room than the pod needs per device.
 */
double fgd_node_frag(const struct fgd_workload *w, int64_t cpu_free, int64_t mem_free,
                     const int32_t *gpu_free, int n_gpus);

/* Random: a seeded hash of the node id and a per-call counter; a random fitting device. */
struct sched_policy *sched_policy_random_new(uint64_t seed);
/* DotProd: the smallest dot product of free resources and demand, both over capacity. */
struct sched_policy *sched_policy_dotprod_new(void);
/* GpuClustering: nodes already running the same GPU demand, then other busy nodes, then idle. */
struct sched_policy *sched_policy_clustering_new(void);
/* GpuPacking: partially used devices, then free devices on busy nodes, then idle nodes. */
struct sched_policy *sched_policy_packing_new(void);
/* BestFit: the node with the least free GPU + CPU (each over capacity) after placement. */
struct sched_policy *sched_policy_bestfit_new(void);
/*
 * FGD: the node and device(s) whose fragmentation (fgd_node_frag) grows
 * least. The typical pods are copied.
 */
struct sched_policy *sched_policy_fgd_new(const struct fgd_workload *typical);

/*
 * fgd-fill, our policy: the node and device(s) where FGD's fragmentation,
 * shape waste (free milli on a device that no mix of the typical pods'
 * per-device sizes can close; all of a node's free GPU once its CPU or
 * memory cannot take a typical GPU pod) and the GPU stranded behind CPU and
 * memory grow least; ties to the node with less free GPU after. Given the
 * core's room (struct sched_room), it holds places for multi-GPU pods only
 * as far as their demand still to come needs them, and charges work for a
 * pool's GPU as the pool runs short against the demand pinned to it (the
 * workload's pins). policy_fgd_fill.c and docs/placement.md say why. The
 * typical pods and pins are copied.
 */
struct sched_policy *sched_policy_fgd_fill_new(const struct fgd_workload *typical);

/* The names sched_policy_by_name knows, for messages. */
#define SCHED_POLICY_NAMES "random, dotprod, clustering, packing, bestfit, fgd, fgd-fill"

/*
 * A policy by name: "random", "dotprod", "clustering", "packing", "bestfit",
 * "fgd", "fgd-fill" (typical must be non-NULL for the last two). NULL for an
 * unknown name.
 */
struct sched_policy *sched_policy_by_name(const char *name, uint64_t seed,
                                          const struct fgd_workload *typical);

void sched_policy_free(struct sched_policy *p);

#endif
