/* SPDX-License-Identifier: Apache-2.0 */
/*
 * open.c: makes the backend of a cluster from its kind and the settings,
 * the one place that knows every kind. The engine calls backend_open() for
 * each cluster row and from then on speaks only to the table.
 */
#include "base/common.h"

#include <sys/stat.h>

#include "backend/backend.h"
#include "backend/kube.h"
#include "backend/slurm.h"
#include "base/log.h"

#define DEFAULT_LOG_DIR "gpuaas-logs"

void backend_settings_init(struct backend_settings *s)
{
    memset(s, 0, sizeof(*s)); /* what is not set below is off */
    s->log_dir = DEFAULT_LOG_DIR;
    s->run_uid = s->run_gid = -1;
    s->timeout_grace_ms = 30 * 1000;
    s->sim.speed = 1;
    s->slurm.sync_ms = 30000;
    s->slurm.poll_ms = 200;
    s->kube.sync_ms = 30000;
    s->kube.tolerate = "nvidia.com/gpu";
}

static const char *log_dir_of(const struct backend_settings *s)
{
    return s->log_dir ? s->log_dir : DEFAULT_LOG_DIR;
}

static struct backend *open_local(const struct backend_cluster *c, const struct backend_settings *s,
                                  struct error_info *ei)
{
    struct local_options lo = {.log_dir = log_dir_of(s),
                               .cgroup_root = s->local.cgroup_root,
                               .run_uid = s->run_uid,
                               .run_gid = s->run_gid,
                               .timeout_grace_ms = s->timeout_grace_ms,
                               .spawner = s->local.spawner,
                               .podman = s->local.podman ? s->local.podman : "",
                               .collector = s->local.collector,
                               .gpus = s->local.gpus,
                               .n_gpus = s->local.n_gpus};
    const char *detail = NULL;
    struct backend *b = backend_local_new(c->id, &lo, ei);

    if (!b)
        return NULL;
    if (!backend_local_cgroups(b, &detail))
        log_warn("local cluster runs work without cgroup limits", "cluster", c->name, "why",
                 detail);
    else
        log_info("local cluster runs work in cgroups with the flavor's limits", "cluster", c->name,
                 "cgroups", detail);
    return b;
}

static struct backend *open_slurm(const struct backend_cluster *c, const struct backend_settings *s,
                                  struct error_info *ei)
{
    /* The cluster's endpoint is the slurm.conf its tools read ("": their default). */
    struct slurm_options so = {.log_dir = log_dir_of(s),
                               .conf = c->endpoint,
                               .poll_interval_ms = s->slurm.poll_ms,
                               .run_uid = s->run_uid,
                               .run_gid = s->run_gid,
                               .timeout_grace_ms = s->timeout_grace_ms};
    struct backend *b = backend_slurm_new(c->id, &so, ei);

    if (!b)
        return NULL;
    b->discover_ms = s->slurm.sync_ms;
    b->queue_ahead = s->slurm.queue_ahead;
    if (backend_slurm_sacct(b))
        log_info("slurm cluster: jobs the controller has forgotten are looked up with "
                 "sacct (slurmdbd), then in its jobcomp file",
                 "cluster", c->name, "file",
                 backend_slurm_jobcomp(b) ? backend_slurm_jobcomp(b) : "none");
    else if (backend_slurm_jobcomp(b))
        log_info("slurm cluster: jobs the controller has forgotten are looked up in its "
                 "jobcomp file",
                 "cluster", c->name, "file", backend_slurm_jobcomp(b));
    else
        log_warn("slurm cluster: jobs that end while gpuaasd is down longer than the "
                 "controller's MinJobAge will be reported lost (no slurmdbd accounting "
                 "with sacct, no readable jobcomp/filetxt file)",
                 "cluster", c->name);
    return b;
}

static struct backend *open_kube(const struct backend_cluster *c, const struct backend_settings *s,
                                 struct error_info *ei)
{
    /* The cluster's endpoint is its kubeconfig. Pods are named after the log directory */
    char *prefix;
    struct kube_options ko;
    struct backend *b;

    if (mkdir(log_dir_of(s), 0700) < 0 && errno != EEXIST) {
        errinfo_set(ei, ERR_INVALID, NULL, "cannot make the log directory %.100s: %s",
                    log_dir_of(s), strerror(errno));
        return NULL;
    }
    prefix = backend_instance_prefix(log_dir_of(s));
    ko = (struct kube_options){.kubeconfig = c->endpoint,
                               .default_image = s->kube.default_image,
                               .tolerate = s->kube.tolerate,
                               .timeout_grace_ms = s->timeout_grace_ms,
                               .instance_prefix = prefix,
                               .collector = s->local.collector};
    b = backend_kube_new(c->id, &ko, ei);

    free(prefix);
    if (!b)
        return NULL;
    b->discover_ms = s->kube.sync_ms;
    log_info("kubernetes cluster: pods are made pinned to the nodes gpuaas chose", "cluster",
             c->name, "kubeconfig", c->endpoint, "default_image",
             s->kube.default_image && *s->kube.default_image ? s->kube.default_image : "none");
    return b;
}

struct backend *backend_open(const char *kind, const struct backend_cluster *c,
                             const struct backend_settings *s, struct error_info *ei)
{
    if (s->open)
        return s->open(kind, c, s->open_arg, ei);
    if (strcmp(kind, "sim") == 0) {
        struct sim_options so = {s->sim.speed, 2000};
        return backend_sim_new(c->id, &so);
    }
    if (strcmp(kind, "local") == 0)
        return open_local(c, s, ei);
    if (strcmp(kind, "slurm") == 0)
        return open_slurm(c, s, ei);
    if (strcmp(kind, "kubernetes") == 0)
        return open_kube(c, s, ei);
    errinfo_set(ei, ERR_INVALID, NULL, "no backend of kind %.32s", kind);
    return NULL;
}

bool backend_log_path(const struct backend_settings *s, int64_t workload_id, char *out, size_t size)
{
    const char *dir = s->log_dir;
    if (!dir || !*dir)
        return false;
    return snprintf(out, size, "%s/%" PRId64 ".log", dir, workload_id) < (int)size;
}
