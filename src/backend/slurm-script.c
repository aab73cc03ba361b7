/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-script.c: the batch job a launch becomes: where its replicas go
 * (one task per node, the same GPUs asked on each), the batch script that
 * starts them (given to sbatch on its stdin) and sbatch's arguments. Pure
 * but for the backend's settings: nothing runs here.
 */
#include "base/common.h"

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/timeutil.h"

/* Whether Slurm (and the shell case in the script) can take this node name as it is. */
static bool node_name_ok(const char *name)
{
    if (!name || !name[0] || strlen(name) > 128)
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

/* Appends s to b inside single quotes, for /bin/sh. */
static void shell_quote(struct buf *b, const char *s)
{
    buf_puts(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            buf_puts(b, "'\\''");
        else
            buf_append(b, p, 1);
    }
    buf_puts(b, "'");
}

/*
 * Where the replicas go: Slurm gives every node of a job the same GRES, so
 * the job asks per node for the GPUs of the replicas the scheduler put
 * there (equal on every node) and one task per node, which starts that
 * node's replicas. first[k]: the index of node k's first replica.
 */
#define MAX_JOB_NODES 256 /* a workload's replicas at most (model/workloads.c) */

struct layout {
    size_t n_nodes;
    size_t first[MAX_JOB_NODES];
    size_t per_node_devices; /* GPUs asked for on each node */
    size_t max_per_node;     /* most replicas on one node */
};

static int layout_of(const struct backend_launch *l, struct layout *lo, struct error_info *ei)
{
    memset(lo, 0, sizeof(*lo));
    for (size_t i = 0; i < l->n_replicas; i++) {
        size_t k = 0;
        while (k < lo->n_nodes &&
               strcmp(l->replicas[lo->first[k]].node_name, l->replicas[i].node_name) != 0)
            k++;
        if (k < lo->n_nodes)
            continue;
        if (lo->n_nodes == ARRAY_SIZE(lo->first))
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64 ": more than %zu nodes", l->workload_id,
                               ARRAY_SIZE(lo->first));
        lo->first[lo->n_nodes++] = i;
    }
    for (size_t k = 0; k < lo->n_nodes; k++) {
        const char *node = l->replicas[lo->first[k]].node_name;
        size_t devices = 0, here = 0;
        for (size_t j = 0; j < l->n_replicas; j++) {
            if (strcmp(l->replicas[j].node_name, node) == 0) {
                devices += l->replicas[j].n_devices;
                here++;
            }
        }
        if (here > lo->max_per_node)
            lo->max_per_node = here;
        if (k == 0)
            lo->per_node_devices = devices;
        else if (devices != lo->per_node_devices)
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64
                               ": nodes with different numbers of GPUs (%zu on %s, %zu on %s)"
                               " are not supported on slurm clusters yet",
                               l->workload_id, lo->per_node_devices,
                               l->replicas[lo->first[0]].node_name, devices, node);
    }
    return 0;
}

/*
 * The batch script. Slurm runs it on the first node with the job's
 * CUDA_VISIBLE_DEVICES; one replica runs the command there, several run it
 * through srun, one task per node, each learning its replica number from the
 * node it is on. Where the scheduler put several replicas on one node, that
 * node's task splits the node's GPUs among them in order and starts each
 * with its own CUDA_VISIBLE_DEVICES; it outlives a SIGTERM (the replicas
 * decide), waits for all and exits with the first failure.
 */
static int script_build(const struct backend_launch *l, const struct layout *lo, struct buf *b)
{
    buf_printf(b,
               "#!/bin/sh\n"
               "# gpuaas workload %" PRId64 ", submitted by gpuaasd. Slurm sets"
               " CUDA_VISIBLE_DEVICES.\n"
               "GPUAAS_WORKLOAD_ID=%" PRId64 "\n"
               "export GPUAAS_WORKLOAD_ID\n",
               l->workload_id, l->workload_id);
    if (l->n_replicas == 1) {
        buf_printf(b,
                   "GPUAAS_REPLICA=%" PRId32 "\n"
                   "NVIDIA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES-}\"\n"
                   "export GPUAAS_REPLICA NVIDIA_VISIBLE_DEVICES\n"
                   "exec /bin/sh -c ",
                   l->replicas[0].replica);
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    } else if (lo->max_per_node == 1) {
        buf_printf(b,
                   "exec srun --kill-on-bad-exit=0 --nodes=%zu --ntasks=%zu"
                   " --ntasks-per-node=1 /bin/sh -c 'case \"$SLURMD_NODENAME\" in",
                   l->n_replicas, l->n_replicas);
        for (size_t i = 0; i < l->n_replicas; i++)
            buf_printf(b, " %s) GPUAAS_REPLICA=%" PRId32 ";;", l->replicas[i].node_name,
                       l->replicas[i].replica);
        buf_puts(b, " esac; NVIDIA_VISIBLE_DEVICES=\"${CUDA_VISIBLE_DEVICES-}\";"
                    " export GPUAAS_REPLICA NVIDIA_VISIBLE_DEVICES; exec /bin/sh -c \"$1\"'"
                    " gpuaas ");
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    } else {
        /* Per node: "replica:GPUs" for each replica there, in replica order. */
        buf_printf(b,
                   "exec srun --kill-on-bad-exit=0 --nodes=%zu --ntasks=%zu"
                   " --ntasks-per-node=1 /bin/sh -c 'cmd=$1; case \"$SLURMD_NODENAME\" in",
                   lo->n_nodes, lo->n_nodes);
        for (size_t k = 0; k < lo->n_nodes; k++) {
            const char *node = l->replicas[lo->first[k]].node_name;
            buf_printf(b, " %s) set --", node);
            for (size_t i = 0; i < l->n_replicas; i++) {
                if (strcmp(l->replicas[i].node_name, node) == 0)
                    buf_printf(b, " %" PRId32 ":%zu", l->replicas[i].replica,
                               l->replicas[i].n_devices);
            }
            buf_puts(b, ";;");
        }
        buf_puts(b, " *) exit 1;; esac;"
                    " trap : TERM; left=\"${CUDA_VISIBLE_DEVICES-}\"; pids=;"
                    " for r in \"$@\"; do n=${r#*:};"
                    " if [ \"$n\" -gt 0 ]; then mine=$(printf %s \"$left\" | cut -d, -f1-$n);"
                    " left=$(printf %s \"$left\" | cut -s -d, -f$((n + 1))-); else mine=; fi;"
                    " (GPUAAS_REPLICA=${r%%:*} CUDA_VISIBLE_DEVICES=$mine"
                    " NVIDIA_VISIBLE_DEVICES=$mine;"
                    " export GPUAAS_REPLICA CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES;"
                    " trap - TERM; exec /bin/sh -c \"$cmd\") & pids=\"$pids $!\"; done;"
                    " rc=0; for p in $pids; do wait $p; s=$?;"
                    " while [ $s -gt 128 ] && kill -0 $p 2>/dev/null; do wait $p; s=$?; done;"
                    " [ $rc -ne 0 ] || rc=$s; done; exit $rc'"
                    " gpuaas ");
        shell_quote(b, l->command);
        buf_puts(b, "\n");
    }
    return b->data ? 0 : -1;
}

int slurm__check_launch(const struct backend_launch *l, struct error_info *ei)
{
    if (l->image && l->image[0])
        return errinfo_set(ei, ERR_INVALID, "image",
                           "workload %" PRId64 ": images are not supported on slurm clusters yet",
                           l->workload_id);
    if (!l->command || !l->command[0])
        return errinfo_set(ei, ERR_INVALID, "command", "workload %" PRId64 " has no command",
                           l->workload_id);
    for (size_t i = 0; i < l->n_replicas; i++) {
        const struct backend_replica *r = &l->replicas[i];
        if (!node_name_ok(r->node_name))
            return errinfo_set(ei, ERR_INVALID, "replicas",
                               "workload %" PRId64 ": node name '%s' cannot be given to slurm",
                               l->workload_id, r->node_name ? r->node_name : "");
    }
    return 0;
}

/*
 * The GRES type to ask for: the class of the devices when they all share
 * one that can be a GRES type (the slurm sync names classes after the
 * nodes' GRES types), so that a node with several GPU types gives the ones
 * the scheduler chose. NULL: ask for GPUs of any type.
 */
static const char *gres_type(const struct backend_launch *l)
{
    const char *type = NULL;
    for (size_t i = 0; i < l->n_replicas; i++) {
        for (size_t k = 0; k < l->replicas[i].n_devices; k++) {
            const char *c = l->replicas[i].devices[k].gpu_class;
            if (!c || (type && strcmp(type, c) != 0))
                return NULL;
            type = c;
        }
    }
    if (!type || !type[0] || strlen(type) > 64 ||
        strspn(type, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
            strlen(type))
        return NULL;
    return type;
}

/* sbatch's arguments into sub->args: the job's name, log, nodes, resources and limits. */
static void sbatch_args(const struct slurm *s, const struct backend_launch *l,
                        const struct layout *lo, int64_t after_job, struct submit *sub)
{
    char **args = sub->args;
    size_t n = 0;
    /* One task per node runs that node's replicas: it gets what they all ask for. */
    int64_t cpus = (l->cpu_milli > 0 ? (l->cpu_milli + 999) / 1000 : 1) * (int64_t)lo->max_per_node;

    args[n++] = xstrdup("--parsable");
    args[n++] = xstrdup("--no-requeue");
    args[n++] = xstrdup("--open-mode=append");
    args[n++] = xstrdup("--ntasks-per-node=1");
    args[n++] = xasprintf("--job-name=%s%" PRId64, s->job_prefix, l->workload_id);
    args[n++] = xasprintf("--output=%s/%" PRId64 ".log", s->log_dir, l->workload_id);
    args[n++] = xasprintf("--chdir=%s", s->log_dir);
    args[n++] = xasprintf("--nodes=%zu", lo->n_nodes);
    args[n++] = xasprintf("--nodelist=%s", sub->nodelist);
    args[n++] = xasprintf("--ntasks=%zu", lo->n_nodes);
    args[n++] = xasprintf("--cpus-per-task=%" PRId64, cpus);
    if (l->mem_mib > 0)
        args[n++] = xasprintf("--mem=%" PRId64 "M", l->mem_mib * (int64_t)lo->max_per_node);
    if (lo->per_node_devices > 0) {
        const char *type = gres_type(l);
        if (type)
            args[n++] = xasprintf("--gres=gpu:%s:%zu", type, lo->per_node_devices);
        else
            args[n++] = xasprintf("--gres=gpu:%zu", lo->per_node_devices);
    }
    if (l->max_runtime_ms >= 0) {
        /*
         * Slurm counts whole minutes; ours is the real limit (enforced by
         * poll()), Slurm's a backstop a minute or more later.
         */
        int64_t total = time_add_ms(l->max_runtime_ms, s->timeout_grace_ms);
        int64_t minutes = total / 60000 + 2;
        if (minutes > 0 && minutes < 365LL * 24 * 60)
            args[n++] = xasprintf("--time=%" PRId64, minutes);
    }
    if (s->partition)
        args[n++] = xasprintf("--partition=%s", s->partition);
    if (s->run_as) {
        args[n++] = xasprintf("--uid=%u", (unsigned)s->uid);
        args[n++] = xasprintf("--gid=%u", (unsigned)s->gid);
    }
    if (after_job > 0)
        args[n++] = xasprintf("--dependency=afterany:%" PRId64, after_job);
    args[n] = NULL; /* no script file: sbatch reads it from stdin */
    assert(n < ARRAY_SIZE(sub->args));
}

int slurm__batch_new(const struct slurm *s, const struct backend_launch *l, int64_t after_job,
                     struct submit **ret_sub, struct error_info *ei)
{
    struct buf script, nodelist;
    struct layout lo;
    struct submit *sub;
    int rc = layout_of(l, &lo, ei);

    if (rc < 0)
        return rc;
    buf_init(&script, 1024 * 1024);
    if (script_build(l, &lo, &script) < 0) {
        buf_release(&script);
        return errinfo_set(ei, ERR_INVALID, "command",
                           "workload %" PRId64 ": the command is too long", l->workload_id);
    }
    buf_init(&nodelist, 64 * 1024);
    for (size_t k = 0; k < lo.n_nodes; k++)
        buf_printf(&nodelist, "%s%s", k ? "," : "", l->replicas[lo.first[k]].node_name);

    sub = xcalloc(1, sizeof(*sub));
    sub->script = script.data; /* handed over */
    sub->env[0] = xasprintf("GPUAAS_WORKLOAD_ID=%" PRId64, l->workload_id);
    sub->nodelist = xstrdup(nodelist.data ? nodelist.data : "");
    buf_release(&nodelist);
    sbatch_args(s, l, &lo, after_job, sub);
    *ret_sub = sub;
    return 0;
}
