/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-pod.c: the Pod gpuaas makes for a replica, and what a Pod object
 * says of how its work went. Pure: JSON in, JSON or values out.
 *
 * The pod is pinned with spec.nodeName: gpuaas has chosen the node, and a
 * pod bound by name skips kube-scheduler (which a cluster may not even run
 * for these nodes) and goes straight to the node's kubelet, whose device
 * plugin admission still checks the GPUs. Scheduling gates would keep a
 * second scheduler in the loop and cannot be combined with nodeName
 * (docs/kubernetes-backend.md).
 */
#include "base/common.h"

#include "backend/kube-int.h"
#include "base/parse.h"
#include "base/timeutil.h"

void kube_namespace_name(const char *prefix, int64_t project_id, char *out, size_t size)
{
    snprintf(out, size, "%sp%" PRId64, prefix, project_id);
}

void kube_pod_name(const char *prefix, int64_t workload_id, int32_t replica, char *out, size_t size)
{
    snprintf(out, size, "%s%" PRId64 "-%" PRId32, prefix, workload_id, replica);
}

#define GEN_MASK 0x3fffffu

int kube_req_sub(uint32_t gen, size_t replica, int kind)
{
    return (int)((((gen & GEN_MASK) << 8 | ((uint32_t)replica & 0xffu)) << 1) |
                 ((uint32_t)kind & 1u));
}

struct kube_req kube_req_of(int sub)
{
    uint32_t u = (uint32_t)sub;
    return (struct kube_req){.gen = u >> 9, .replica = (u >> 1) & 0xffu, .kind = (int)(u & 1u)};
}

bool kube_req_same_gen(uint32_t gen, uint32_t sub_gen)
{
    return (gen & GEN_MASK) == (sub_gen & GEN_MASK);
}

bool kube_pod_of_name(const char *prefix, const char *name, int64_t *ret_workload,
                      int32_t *ret_replica)
{
    size_t n = strlen(prefix);
    char buf[64];
    char *dash;
    int64_t wid, rep;

    if (strncmp(name, prefix, n) != 0 || strlen(name + n) >= sizeof(buf))
        return false;
    snprintf(buf, sizeof(buf), "%s", name + n);
    if (!(dash = strrchr(buf, '-')))
        return false;
    *dash = '\0';
    if (parse_int64(buf, 1, INT64_MAX, &wid) < 0 || parse_int64(dash + 1, 0, INT32_MAX, &rep) < 0)
        return false;
    *ret_workload = wid;
    *ret_replica = (int32_t)rep;
    return true;
}

/* The extended resource a device is asked as: a MIG slice's class is "<gpu>/<profile>". */
static void resource_of(const struct backend_device *d, char *out, size_t size)
{
    const char *slash = d->gpu_class ? strchr(d->gpu_class, '/') : NULL;
    if (slash)
        snprintf(out, size, KUBE_RESOURCE_MIG_PREFIX "%s", slash + 1);
    else
        snprintf(out, size, KUBE_RESOURCE_GPU);
}

static json_t *str_of_int(int64_t v, const char *unit)
{
    char s[40];
    snprintf(s, sizeof(s), "%" PRId64 "%s", v, unit);
    return json_string(s);
}

static json_t *labels_of(const char *prefix, const struct backend_launch *l, int32_t replica)
{
    char inst[64];
    size_t n = strlen(prefix);

    /* the prefix is "gpuaas-<hex>-": the label is "gpuaas-<hex>" (a value may not end in '-') */
    snprintf(inst, sizeof(inst), "%.*s", (int)(n > 0 ? n - 1 : 0), prefix);
    return json_pack("{s:s, s:s, s:o, s:o, s:o}", "app.kubernetes.io/managed-by", "gpuaas",
                     KUBE_LABEL_INSTANCE, inst, KUBE_LABEL_WORKLOAD, str_of_int(l->workload_id, ""),
                     KUBE_LABEL_REPLICA, str_of_int(replica, ""), KUBE_LABEL_PROJECT,
                     str_of_int(l->project_id, ""));
}

int kube_pod_json(const struct kube_pod_settings *s, const struct backend_launch *l, size_t r,
                  json_t **ret, struct error_info *ei)
{
    const struct backend_replica *rep = &l->replicas[r];
    const char *image = l->image && *l->image ? l->image : s->default_image;
    char name[128], ns[128];
    json_t *limits = json_object(), *tol = json_array(), *ctr, *meta, *annotations;

    *ret = NULL;
    if (!rep->node_name || !*rep->node_name) {
        json_decref(limits);
        json_decref(tol);
        return errinfo_set(ei, ERR_INVALID, NULL, "replica %" PRId32 " has no node", rep->replica);
    }
    if (!image || !*image) {
        json_decref(limits);
        json_decref(tol);
        return errinfo_set(ei, ERR_INVALID, "image",
                           "this kubernetes cluster has no default image: name an image");
    }
    for (size_t i = 0; i < rep->n_devices; i++) {
        char res[96];
        json_t *cur;
        if (rep->devices[i].milli < 1000) {
            json_decref(limits);
            json_decref(tol);
            return errinfo_set(ei, ERR_INVALID, NULL,
                               "a kubernetes cluster gives whole GPUs or MIG slices, not "
                               "shares of one");
        }
        resource_of(&rep->devices[i], res, sizeof(res));
        cur = json_object_get(limits, res);
        json_object_set_new(limits, res, json_integer(cur ? json_integer_value(cur) + 1 : 1));
    }
    {
        /* quantities are strings: a new object, the counts' is not changed while walked */
        json_t *counts = limits, *v;
        const char *k;
        limits = json_object();
        json_object_foreach(counts, k, v)
        {
            json_object_set_new(limits, k, str_of_int(json_integer_value(v), ""));
        }
        json_decref(counts);
    }
    if (l->cpu_milli > 0)
        json_object_set_new(limits, "cpu", str_of_int(l->cpu_milli, "m"));
    if (l->mem_mib > 0)
        json_object_set_new(limits, "memory", str_of_int(l->mem_mib, "Mi"));
    for (size_t i = 0; i < s->n_tolerate; i++)
        json_array_append_new(tol,
                              json_pack("{s:s, s:s}", "key", s->tolerate[i], "operator", "Exists"));
    ctr =
        json_pack("{s:s, s:s, s:[{s:s, s:o}, {s:s, s:o}], s:{s:O, s:O}}", "name", "work", "image",
                  image, "env", "name", "GPUAAS_WORKLOAD_ID", "value",
                  str_of_int(l->workload_id, ""), "name", "GPUAAS_REPLICA", "value",
                  str_of_int(rep->replica, ""), "resources", "limits", limits, "requests", limits);
    if (l->command && *l->command)
        json_object_set_new(ctr, "command", json_pack("[s, s, s]", "/bin/sh", "-c", l->command));
    kube_pod_name(s->prefix, l->workload_id, rep->replica, name, sizeof(name));
    kube_namespace_name(s->prefix, l->project_id, ns, sizeof(ns));
    annotations = json_object();
    if (l->duration_ms >= 0) {
        char d[40];
        snprintf(d, sizeof(d), "%" PRId64 "ms", l->duration_ms);
        json_object_set_new(annotations, KUBE_ANNOTATION_RUNTIME, json_string(d));
    }
    meta = json_pack("{s:s, s:s, s:o, s:o}", "name", name, "namespace", ns, "labels",
                     labels_of(s->prefix, l, rep->replica), "annotations", annotations);
    *ret = json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:b, s:b, s:o, s:[o]}}", "apiVersion", "v1",
                     "kind", "Pod", "metadata", meta, "spec", "nodeName", rep->node_name,
                     "restartPolicy", "Never", "automountServiceAccountToken", 0,
                     "enableServiceLinks", 0, "tolerations", tol, "containers", ctr);
    json_decref(limits);
    return *ret ? 0 : errinfo_set(ei, ERR_INTERNAL, NULL, "could not build the pod");
}

static int64_t label_int(json_t *labels, const char *key)
{
    const char *v = json_string_value(json_object_get(labels, key));
    char *end;
    long long n;

    if (!v || !*v)
        return -1;
    errno = 0;
    n = strtoll(v, &end, 10);
    return errno || *end || n < 0 ? -1 : (int64_t)n;
}

/* The work container's status (named "work"; else the first). */
static json_t *work_status(json_t *status)
{
    json_t *list = json_object_get(status, "containerStatuses"), *c;
    size_t i;
    json_array_foreach(list, i, c)
    {
        const char *name = json_string_value(json_object_get(c, "name"));
        if (name && strcmp(name, "work") == 0)
            return c;
    }
    return json_array_get(list, 0);
}

/*
 * The waiting reasons of a container that will not start by itself: the
 * kubelet keeps retrying them (backing off), but the work would wait
 * forever, holding its GPUs.
 */
static bool stuck_reason(const char *reason)
{
    static const char *const stuck[] = {
        "ErrImagePull",      "ImagePullBackOff",           "InvalidImageName",
        "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError"};
    for (size_t i = 0; reason && i < ARRAY_SIZE(stuck); i++) {
        if (strcmp(reason, stuck[i]) == 0)
            return true;
    }
    return false;
}

void kube_pod_state_of(json_t *pod, struct kube_pod_state *st)
{
    json_t *meta = json_object_get(pod, "metadata"), *status = json_object_get(pod, "status");
    json_t *labels = json_object_get(meta, "labels");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    const char *preason = json_string_value(json_object_get(status, "reason"));
    const char *pmsg = json_string_value(json_object_get(status, "message"));
    json_t *cs = work_status(status);
    json_t *term = json_object_get(json_object_get(cs, "state"), "terminated");
    int64_t replica = label_int(labels, KUBE_LABEL_REPLICA);

    memset(st, 0, sizeof(*st));
    st->workload_id = label_int(labels, KUBE_LABEL_WORKLOAD);
    st->replica = replica >= 0 && replica <= INT32_MAX ? (int32_t)replica : -1;
    if (st->replica < 0)
        st->workload_id = -1;
    st->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
    st->exit_code = -1;
    st->finished_ms = -1;
    if (!phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)) {
        json_t *waiting = json_object_get(json_object_get(cs, "state"), "waiting");
        const char *wreason = json_string_value(json_object_get(waiting, "reason"));
        const char *wmsg = json_string_value(json_object_get(waiting, "message"));
        st->phase = phase && strcmp(phase, "Running") == 0 ? KUBE_POD_RUNNING : KUBE_POD_PENDING;
        if (st->phase == KUBE_POD_PENDING && stuck_reason(wreason)) {
            st->stuck = true;
            snprintf(st->message, sizeof(st->message), "%s%s%.120s", wreason, wmsg ? ": " : "",
                     wmsg ? wmsg : "");
        }
        return;
    }
    st->phase = KUBE_POD_ENDED;
    if (json_is_integer(json_object_get(term, "exitCode")))
        st->exit_code = (int)json_integer_value(json_object_get(term, "exitCode"));
    else if (strcmp(phase, "Succeeded") == 0)
        st->exit_code = 0;
    {
        int64_t s;
        const char *at = json_string_value(json_object_get(term, "finishedAt"));
        if (at && time_parse_rfc3339(at, &s) == 0)
            st->finished_ms = s * 1000;
    }
    if (preason) /* the pod's own reason: Evicted, DeadlineExceeded, OutOf<resource>, ... */
        snprintf(st->message, sizeof(st->message), "%s%s%.120s", preason, pmsg ? ": " : "",
                 pmsg ? pmsg : "");
    else if (strcmp(phase, "Failed") == 0) {
        const char *creason = json_string_value(json_object_get(term, "reason"));
        if (creason && strcmp(creason, "Error") != 0 && strcmp(creason, "Completed") != 0)
            snprintf(st->message, sizeof(st->message), "%.150s", creason); /* OOMKilled */
    }
    if (st->exit_code == 0 && strcmp(phase, "Failed") == 0)
        st->exit_code = -1; /* failed without an exit code of its own (evicted, rejected) */
}
