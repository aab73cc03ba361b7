/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simfleet.h: the nodes and GPUs of a simulated cluster (DESIGN.md section
 * 6, backend "sim"), read from a description file and written into the
 * store once, so that the scheduler, quotas and every view see a fleet
 * that no hardware stands behind.
 *
 * Two formats, chosen by the file name's extension:
 *  - .csv, the node lists of the Alibaba GPU trace (cluster-trace-gpu-v2023):
 *    a header naming the columns sn,cpu_milli,memory_mib,gpu,model (in any
 *    order; other columns are ignored), then one node a line. gpu may be 0
 *    and model empty (the all-node list). No quoting; blank lines skipped.
 *  - .json: {"nodes":[{"name":"n1","cpu_milli":64000,"memory_mib":262144,
 *    "gpus":8,"model":"H100","labels":{"rack":"r1"},"count":4}]}. name,
 *    cpu_milli, memory_mib and gpus are required, model too when gpus > 0;
 *    labels and count are optional. With count, that many nodes named
 *    name-0 .. name-(count-1) share the other members. Unknown members are
 *    errors.
 *
 * Limits: at most SIMFLEET_MAX_NODES nodes, SIMFLEET_MAX_GPUS GPUs a node,
 * lines of SIMFLEET_MAX_LINE bytes, JSON files of SIMFLEET_MAX_JSON bytes.
 */
#ifndef GPUAAS_SIMFLEET_H
#define GPUAAS_SIMFLEET_H

#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/err.h"

struct store_conn;

#define SIMFLEET_MAX_NODES 100000
#define SIMFLEET_MAX_GPUS 64
#define SIMFLEET_MAX_LINE 4096
#define SIMFLEET_MAX_JSON (64 * 1024 * 1024)
#define SIMFLEET_MAX_LABELS 63 /* the store allows 64, one is "simulated" */
#define SIMFLEET_CLASS_MAX 63  /* longest GPU class name */

struct simfleet_label {
    const char *key;
    const char *value;
};

struct simfleet_node {
    const char *name; /* a valid node name (host name characters, <= 128 bytes) */
    int64_t cpu_milli;
    int64_t memory_mib;
    int32_t n_gpus;        /* 0..SIMFLEET_MAX_GPUS */
    const char *model;     /* the file's GPU model string; "" when n_gpus is 0 */
    const char *gpu_class; /* simfleet_gpu_class(model); "" when n_gpus is 0 */
    const struct simfleet_label *labels;
    size_t n_labels;
    int line; /* where it was described: CSV line, or 1 + index in "nodes" for JSON */
};

struct simfleet {
    struct simfleet_node *nodes; /* in file order */
    size_t n_nodes;
    int64_t n_gpus;     /* sum over the nodes */
    struct arena arena; /* the strings and labels */
};

/*
 * Loads a fleet description from path (.csv or .json, see above). On
 * success *ret holds it; the caller frees it with simfleet_free(). Nothing
 * is kept of a file with any error. Errors, with ei naming the file and the
 * line or member: ERR_IO (cannot read it), ERR_BAD_JSON (not JSON),
 * ERR_INVALID (bad or missing value, duplicate node name, no nodes,
 * unknown extension), ERR_TOO_LARGE (a limit above).
 */
int simfleet_load(const char *path, struct simfleet **ret, struct error_info *ei);

/* Frees a fleet; NULL is fine. */
void simfleet_free(struct simfleet *f);

/*
 * The GPU class name of a model string, into out (size bytes): letters in
 * lower case, digits kept, every run of other bytes one '-', none at either
 * end: "V100M16" -> "v100m16", "A100-SXM4-80GB" -> "a100-sxm4-80gb",
 * "Tesla T4" -> "tesla-t4". Deliberately small: the inventory's normaliser
 * (memory sizes, vendor prefixes, MIG profiles) replaces it. Returns 0, or
 * ERR_INVALID when nothing is left or the name would be longer than
 * SIMFLEET_CLASS_MAX bytes (or than size - 1).
 */
int simfleet_gpu_class(const char *model, char *out, size_t size);

/*
 * Writes fleet f into the store as cluster cluster_name, in one
 * transaction. When a cluster of that name exists already nothing is
 * written (a restart must not duplicate the fleet) and *ret_n_nodes is 0;
 * that cluster must have backend "sim", or it is ERR_CONFLICT. Otherwise it
 * creates the cluster (backend "sim", label simulated=true, a description
 * saying it is simulated), each GPU class the fleet names that does not
 * exist yet (vendor "nvidia", the file's model string), the nodes (the
 * file's labels plus simulated=true) and their GPUs (indices 0..n-1, uuid
 * "SIM-<cluster>-<node>-<index>"), and one audit entry per object created
 * (action "import", actor "system", request id "simfleet"). now_s stamps
 * every row. *ret_cluster_id (may be NULL) gets the cluster's id, created or
 * found; *ret_n_nodes (may be NULL) the number of nodes created. Both are
 * untouched on failure, which leaves the store unchanged. Errors: ERR_INVALID
 * (a bad cluster name, a uuid that would be too long), and the store's
 * (ERR_CONFLICT for two nodes of one name, ERR_BUSY, ERR_STORE).
 */
int simfleet_store(struct store_conn *c, const char *cluster_name, const struct simfleet *f,
                   int64_t now_s, int64_t *ret_cluster_id, size_t *ret_n_nodes,
                   struct error_info *ei);

#endif
