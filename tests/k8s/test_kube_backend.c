/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8s.backend: the Kubernetes backend (src/backend/kube*.c) against a real
 * kube-apiserver with kwok's fake GPU nodes (tests/k8s/nodes.default), run
 * under with-k8s.sh (KUBECONFIG, K8S_DIR, K8S_USER_TOKEN, K8S_SERVER set).
 * The test plays the kubelet where kwok cannot: it writes a pod's status
 * (an OOM kill) through the status subresource, as a kubelet does.
 * Each test uses its own instance prefix, so they never see each other's pods.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>

#include "backend/kube-int.h"
#include "base/timeutil.h"
#include "collect/collector.h"

#define TOLERATE "kwok.x-k8s.io/node,nvidia.com/gpu"
#define WAIT_MS 30000

static struct kube_client *admin;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set: run under tests/k8s/with-k8s.sh", name);
    return v;
}

static struct backend *open_backend(const char *prefix, int64_t timeout_grace_ms)
{
    struct kube_options o = {.kubeconfig = env("KUBECONFIG"),
                             .default_image = "busybox",
                             .tolerate = TOLERATE,
                             .timeout_grace_ms = timeout_grace_ms,
                             .instance_prefix = prefix};
    struct error_info ei = {0};
    struct backend *b = backend_kube_new(1, &o, &ei);
    if (!b)
        fail_msg("backend_kube_new: %s", ei.message);
    return b;
}

/* An admin request (body taken); the answer's status, its JSON (may be NULL) decref'd unless ret.
 */
static long admin_call(const char *method, const char *path, const char *ct, json_t *body,
                       json_t **ret)
{
    long status = 0;
    json_t *ans = NULL;
    struct error_info ei = {0};
    int rc = kube_call(admin, method, path, ct, body, &status, &ans, &ei);
    json_decref(body); /* taken */
    if (rc < 0)
        fail_msg("%s %s: %s", method, path, ei.message);
    if (ret)
        *ret = ans;
    else
        json_decref(ans);
    return status;
}

struct launch_spec {
    struct backend_launch l;
    struct backend_replica reps[4];
    struct backend_device devs[4][8];
};

/* A launch of n_reps replicas with n_gpus GPUs of class cls each on node. */
static void make_launch(struct launch_spec *s, int64_t id, int64_t project, size_t n_reps,
                        const char *node, const char *cls, size_t n_gpus, int64_t duration_ms)
{
    memset(s, 0, sizeof(*s));
    for (size_t r = 0; r < n_reps; r++) {
        for (size_t g = 0; g < n_gpus; g++)
            s->devs[r][g] = (struct backend_device){.gpu_id = (int64_t)(r * 8 + g + 1),
                                                    .index = (int32_t)g,
                                                    .milli = 1000,
                                                    .gpu_class = cls};
        s->reps[r] = (struct backend_replica){.replica = (int32_t)r,
                                              .node_id = 1,
                                              .node_name = node,
                                              .devices = s->devs[r],
                                              .n_devices = n_gpus};
    }
    s->l = (struct backend_launch){.workload_id = id,
                                   .project_id = project,
                                   .command = "sleep 3600",
                                   .image = "",
                                   .cpu_milli = 2000,
                                   .mem_mib = 4096,
                                   .duration_ms = duration_ms,
                                   .max_runtime_ms = -1,
                                   .replicas = s->reps,
                                   .n_replicas = n_reps};
}

/* Polls until the end of id comes (failing after WAIT_MS); returns it. */
static struct backend_event wait_end(struct backend *b, int64_t id)
{
    int64_t until = time_now_ms() + WAIT_MS;
    while (time_now_ms() < until) {
        struct backend_event ev[8];
        size_t n = b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev));
        for (size_t i = 0; i < n; i++)
            if (ev[i].workload_id == id)
                return ev[i];
        usleep(50 * 1000);
    }
    fail_msg("workload %" PRId64 " did not end within %d ms", id, WAIT_MS);
    return (struct backend_event){0};
}

/* Polls for ms and fails if an end of id comes meanwhile. */
static void no_end_for(struct backend *b, int64_t id, int64_t ms)
{
    int64_t until = time_now_ms() + ms;
    while (time_now_ms() < until) {
        struct backend_event ev[8];
        size_t n = b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev));
        for (size_t i = 0; i < n; i++)
            if (ev[i].workload_id == id)
                fail_msg("workload %" PRId64 " ended (how %d) too early", id, ev[i].how);
        usleep(50 * 1000);
    }
}

static json_t *get_pod(const char *prefix, int64_t project, int64_t id, int32_t replica,
                       long *ret_status)
{
    char ns[96], name[96], path[256];
    json_t *p = NULL;
    kube_namespace_name(prefix, project, ns, sizeof(ns));
    kube_pod_name(prefix, id, replica, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
    *ret_status = admin_call("GET", path, NULL, NULL, &p);
    return p;
}

/*
 * Waits until the pod is there (phase NULL) or in that phase, polling b
 * meanwhile: its creates go out and are answered through poll(). The work
 * must not end meanwhile.
 */
static json_t *wait_pod(struct backend *b, const char *prefix, int64_t project, int64_t id,
                        int32_t r, const char *phase)
{
    int64_t until = time_now_ms() + WAIT_MS;
    while (time_now_ms() < until) {
        struct backend_event ev[8];
        size_t n = b->ops->poll(b, time_now_ms(), ev, ARRAY_SIZE(ev));
        long st;
        json_t *p = get_pod(prefix, project, id, r, &st);
        const char *ph = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        for (size_t i = 0; i < n; i++)
            if (ev[i].workload_id == id)
                fail_msg("workload %" PRId64 " ended (how %d: %s) before its pod %d was %s", id,
                         ev[i].how, ev[i].message, r, phase ? phase : "made");
        if (st == 200 && (!phase || (ph && strcmp(ph, phase) == 0)))
            return p;
        json_decref(p);
        usleep(50 * 1000);
    }
    fail_msg("pod %" PRId64 "-%d never %s", id, r, phase ? phase : "made");
    return NULL;
}

/* Polls b (the deletes go out through it) until replica 0's pod of id is gone (10 s at most). */
static void wait_pod_gone(struct backend *b, const char *prefix, int64_t project, int64_t id)
{
    long st = 0;
    for (int i = 0; i < 100; i++) {
        struct backend_event none[8];
        b->ops->poll(b, time_now_ms(), none, ARRAY_SIZE(none));
        json_decref(get_pod(prefix, project, id, 0, &st));
        if (st == 404)
            break;
        usleep(100 * 1000);
    }
    assert_int_equal(st, 404);
}

/* The start reports b has (take_started): how many, the first max of them to out. */
static size_t take_started(struct backend *b, struct backend_started *out, size_t max)
{
    struct backend_started more[8];
    size_t n = 0, k;
    while ((k = b->ops->take_started(b, more, ARRAY_SIZE(more))) > 0)
        for (size_t i = 0; i < k; i++, n++)
            if (n < max)
                out[n] = more[i];
    return n;
}

static void wait_phase(struct backend *b, const char *prefix, int64_t project, int64_t id,
                       int32_t r, const char *phase)
{
    json_decref(wait_pod(b, prefix, project, id, r, phase));
}

/* ---- discovery ---- */

static const struct backend_node_report *node_of(const struct backend_fleet_report *rep,
                                                 const char *name)
{
    for (size_t i = 0; i < rep->n_nodes; i++)
        if (strcmp(rep->nodes[i].name, name) == 0)
            return &rep->nodes[i];
    fail_msg("no node %s in the report", name);
    return NULL;
}

static size_t count_class(const struct backend_node_report *n, const char *cls)
{
    size_t k = 0;
    for (size_t i = 0; i < n->n_gpus; i++)
        k += strcmp(n->gpus[i].cls, cls) == 0;
    return k;
}

static void discover(struct backend *b, struct arena *a, struct backend_fleet_report *rep)
{
    struct error_info ei = {0};
    assert_int_equal(b->ops->discover(b, time_now_ms(), true, a, rep, &ei), 1);
    assert_true(rep->complete);
}

static void test_discovery(void **state)
{
    struct backend *b = open_backend("gpuaas-disc0001-", 1000);
    struct backend_fleet_report rep;
    const struct backend_node_report *h, *m;
    struct arena a;
    json_t *pod;
    (void)state;

    arena_init(&a);
    discover(b, &a, &rep);
    assert_int_equal(rep.n_nodes, 3);
    h = node_of(&rep, "kwok-h100-0");
    assert_string_equal(h->state, "ready");
    assert_int_equal(h->n_gpus, 8);
    assert_int_equal(count_class(h, "h100"), 8);
    assert_int_equal(h->gpus[0].memory_mib, 81559);
    m = node_of(&rep, "kwok-a100-mig-0");
    assert_int_equal(count_class(m, "a100-80gb"), 4);
    assert_int_equal(count_class(m, "a100-80gb/1g.10gb"), 14);
    assert_int_equal(count_class(m, "a100-80gb/3g.40gb"), 2);

    /* a pod gpuaas did not make holds 3 GPUs of kwok-h100-1: they are left out */
    assert_int_equal(admin_call("POST", "/api/v1/namespaces", NULL,
                                json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                          "Namespace", "metadata", "name", "others"),
                                NULL),
                     201);
    pod = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s, s:{s:{s:s}}}]}}", "apiVersion", "v1",
                    "kind", "Pod", "metadata", "name", "foreign", "spec", "nodeName", "kwok-h100-1",
                    "containers", "name", "c", "image", "busybox", "resources", "limits",
                    "nvidia.com/gpu", "3");
    assert_int_equal(admin_call("POST", "/api/v1/namespaces/others/pods", NULL, pod, NULL), 201);
    discover(b, &a, &rep);
    assert_int_equal(node_of(&rep, "kwok-h100-1")->n_gpus, 5);
    assert_int_equal(node_of(&rep, "kwok-h100-0")->n_gpus, 8);

    /* cordoned: drain; a taint gpuaas does not tolerate: drain, NoExecute: down */
    assert_int_equal(admin_call("PATCH", "/api/v1/nodes/kwok-h100-0",
                                "application/merge-patch+json",
                                json_pack("{s:{s:b}}", "spec", "unschedulable", 1), NULL),
                     200);
    discover(b, &a, &rep);
    assert_string_equal(node_of(&rep, "kwok-h100-0")->state, "drain");
    assert_non_null(strstr(node_of(&rep, "kwok-h100-0")->reason, "cordoned"));
    assert_int_equal(admin_call("PATCH", "/api/v1/nodes/kwok-h100-0",
                                "application/merge-patch+json",
                                json_pack("{s:{s:b}}", "spec", "unschedulable", 0), NULL),
                     200);
    {
        json_t *node = NULL, *taints;
        assert_int_equal(admin_call("GET", "/api/v1/nodes/kwok-h100-1", NULL, NULL, &node), 200);
        taints = json_deep_copy(json_object_get(json_object_get(node, "spec"), "taints"));
        json_array_append_new(taints,
                              json_pack("{s:s, s:s}", "key", "maintenance", "effect", "NoExecute"));
        assert_int_equal(admin_call("PATCH", "/api/v1/nodes/kwok-h100-1",
                                    "application/merge-patch+json",
                                    json_pack("{s:{s:o}}", "spec", "taints", taints), NULL),
                         200);
        discover(b, &a, &rep);
        assert_string_equal(node_of(&rep, "kwok-h100-1")->state, "down");
        assert_non_null(strstr(node_of(&rep, "kwok-h100-1")->reason, "maintenance"));
        assert_string_equal(node_of(&rep, "kwok-h100-0")->state, "ready");
        /* put the taints back as they were */
        assert_int_equal(
            admin_call("PATCH", "/api/v1/nodes/kwok-h100-1", "application/merge-patch+json",
                       json_pack("{s:{s:O}}", "spec", "taints",
                                 json_object_get(json_object_get(node, "spec"), "taints")),
                       NULL),
            200);
        json_decref(node);
    }
    assert_int_equal(admin_call("DELETE",
                                "/api/v1/namespaces/others/pods/foreign?gracePeriodSeconds=0", NULL,
                                NULL, NULL),
                     200);
    arena_release(&a);
    b->ops->free(b);
}

/* ---- runs and ends ---- */

static void test_runs_to_its_exit(void **state)
{
    const char *prefix = "gpuaas-runs0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    struct backend_started st[4];
    int64_t launched = time_now_ms();
    json_t *pod;
    (void)state;

    make_launch(&s, 11, 7, 1, "kwok-h100-0", "h100", 2, 2000);
    assert_int_equal(b->ops->launch(b, &s.l, launched, &ei), 0);
    pod = wait_pod(b, prefix, 7, 11, 0, NULL);
    /* pinned, with its GPUs, CPU and memory as limits, labelled, no tenant device variable */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName")),
        "kwok-h100-0");
    {
        json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
        json_t *lim = json_object_get(json_object_get(c, "resources"), "limits");
        assert_string_equal(json_string_value(json_object_get(lim, "nvidia.com/gpu")), "2");
        assert_string_equal(json_string_value(json_object_get(lim, "cpu")), "2");
        assert_string_equal(json_string_value(json_object_get(lim, "memory")), "4Gi");
        assert_string_equal(json_string_value(json_object_get(c, "image")), "busybox");
    }
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(pod, "metadata"), "labels"), KUBE_LABEL_WORKLOAD)),
        "11");
    json_decref(pod);
    /* a second launch of the same id is refused while it runs */
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), ERR_CONFLICT);

    ev = wait_end(b, 11);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    /* its pod went Running: reported once, after the launch, before the end */
    assert_int_equal(take_started(b, st, ARRAY_SIZE(st)), 1);
    assert_int_equal(st[0].workload_id, 11);
    assert_true(st[0].at_ms >= launched);
    assert_true(st[0].at_ms <= ev.at_ms + 1000); /* the end's time has whole seconds */
    /* ended pods are cleaned up (the deletes go out through poll) */
    wait_pod_gone(b, prefix, 7, 11);
    assert_int_equal(take_started(b, st, ARRAY_SIZE(st)), 0);
    b->ops->free(b);
}

/* The kubelet's part: the work container was OOM-killed. */
static void oom_kill(const char *prefix, int64_t project, int64_t id)
{
    char ns[96], name[96], path[256];
    json_t *patch =
        json_pack("{s:{s:s, s:[{s:s, s:s, s:s, s:b, s:i, s:{s:{s:i, s:s, s:s}}}]}}", "status",
                  "phase", "Failed", "containerStatuses", "name", "work", "image", "busybox",
                  "imageID", "", "ready", 0, "restartCount", 0, "state", "terminated", "exitCode",
                  137, "reason", "OOMKilled", "finishedAt", "2026-01-01T00:00:00Z");
    kube_namespace_name(prefix, project, ns, sizeof(ns));
    kube_pod_name(prefix, id, 0, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    assert_int_equal(admin_call("PATCH", path, "application/merge-patch+json", patch, NULL), 200);
}

static void test_oom_and_lost(void **state)
{
    const char *prefix = "gpuaas-fail0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    char path[256], ns[96], name[96];
    (void)state;

    make_launch(&s, 21, 7, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 7, 21, 0, "Running");
    oom_kill(prefix, 7, 21);
    ev = wait_end(b, 21);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 137);
    assert_string_equal(ev.message, "OOMKilled");

    /* someone else deletes the pod: the work is lost, and says so */
    make_launch(&s, 22, 7, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 7, 22, 0, "Running");
    kube_namespace_name(prefix, 7, ns, sizeof(ns));
    kube_pod_name(prefix, 22, 0, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s?gracePeriodSeconds=0", ns, name);
    assert_int_equal(admin_call("DELETE", path, NULL, NULL, NULL), 200);
    ev = wait_end(b, 22);
    assert_int_equal(ev.how, BACKEND_LOST);
    assert_non_null(strstr(ev.message, "deleted outside gpuaas"));
    assert_non_null(strstr(ev.message, name));
    b->ops->free(b);
}

/*
 * The kubelet's part again: the image cannot be pulled. The pod would wait
 * forever (the kubelet backs off and retries), holding its GPUs: the work
 * ends as not started, saying why, and its pod goes.
 */
static void test_image_cannot_be_pulled(void **state)
{
    const char *prefix = "gpuaas-pull0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    char ns[96], name[96], path[256];
    json_t *patch;
    (void)state;

    make_launch(&s, 25, 7, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    json_decref(wait_pod(b, prefix, 7, 25, 0, NULL));
    kube_namespace_name(prefix, 7, ns, sizeof(ns));
    kube_pod_name(prefix, 25, 0, name, sizeof(name));
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/status", ns, name);
    patch = json_pack("{s:{s:s, s:[{s:s, s:s, s:s, s:b, s:i, s:{s:{s:s, s:s}}}]}}", "status",
                      "phase", "Pending", "containerStatuses", "name", "work", "image",
                      "registry.invalid/no-such:1", "imageID", "", "ready", 0, "restartCount", 0,
                      "state", "waiting", "reason", "ErrImagePull", "message",
                      "pull access denied for registry.invalid/no-such");
    assert_int_equal(admin_call("PATCH", path, "application/merge-patch+json", patch, NULL), 200);
    ev = wait_end(b, 25);
    assert_int_equal(ev.how, BACKEND_NOT_STARTED);
    assert_non_null(strstr(ev.message, "cannot start: ErrImagePull: pull access denied"));
    wait_pod_gone(b, prefix, 7, 25);
    b->ops->free(b);
}

static void test_stop_waits_for_the_grace(void **state)
{
    const char *prefix = "gpuaas-stop0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    int64_t t0;
    long st;
    (void)state;

    make_launch(&s, 31, 8, 2, "kwok-h100-0", "h100", 4, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 8, 31, 1, "Running");
    t0 = time_now_ms();
    assert_int_equal(b->ops->stop(b, 31, 3000, t0), 0);
    /*
     * Being deleted, not gone: still running (and metered). kwok removes a
     * pod at its deletionTimestamp, which has whole seconds: 2 to 3 s here.
     */
    no_end_for(b, 31, 1500);
    json_decref(get_pod(prefix, 8, 31, 0, &st));
    assert_int_equal(st, 200);
    ev = wait_end(b, 31);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    if (ev.at_ms - t0 < 1900)
        fail_msg("stopped with a 3 s grace, gone after %" PRId64 " ms", ev.at_ms - t0);
    json_decref(get_pod(prefix, 8, 31, 1, &st));
    assert_int_equal(st, 404);

    /* max runtime: deleted with the timeout grace, reported TIMEOUT */
    make_launch(&s, 32, 8, 1, "kwok-h100-0", "h100", 1, -1);
    s.l.max_runtime_ms = 1000;
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    ev = wait_end(b, 32);
    assert_int_equal(ev.how, BACKEND_TIMEOUT);
    b->ops->free(b);
}

static void test_gang_all_or_nothing(void **state)
{
    const char *prefix = "gpuaas-gang0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    char ns[96], name[96], path[160];
    json_t *squatter;
    struct backend_event ev;
    long st;
    (void)state;

    /* replica 2's pod name is taken: the work does not start, replicas 0 and 1 are taken back */
    make_launch(&s, 41, 9, 3, "kwok-h100-1", "h100", 1, -1);
    kube_namespace_name(prefix, 9, ns, sizeof(ns));
    kube_pod_name(prefix, 41, 2, name, sizeof(name));
    assert_int_equal(admin_call("POST", "/api/v1/namespaces", NULL,
                                json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                          "Namespace", "metadata", "name", ns),
                                NULL),
                     201);
    squatter = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:[{s:s, s:s}]}}", "apiVersion", "v1", "kind",
                         "Pod", "metadata", "name", name, "spec", "nodeName", "kwok-h100-1",
                         "containers", "name", "c", "image", "busybox");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    assert_int_equal(admin_call("POST", path, NULL, squatter, NULL), 201);
    /* the creates go out without waiting: the refusal comes as the work's end */
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    ev = wait_end(b, 41);
    assert_int_equal(ev.how, BACKEND_NOT_STARTED);
    assert_non_null(strstr(ev.message, "409"));
    assert_non_null(strstr(ev.message, name));
    for (int r = 0; r < 2; r++) {
        json_t *p = get_pod(prefix, 9, 41, r, &st);
        /* gone, or going at once (grace 0) */
        assert_true(st == 404 ||
                    json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"));
        json_decref(p);
    }
    b->ops->free(b);
}

static void test_adopt_and_sweep(void **state)
{
    const char *prefix = "gpuaas-adop0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s, t, u;
    struct error_info ei = {0};
    struct backend_event ev;
    int64_t ids[8], started;
    size_t n_ids = 0;
    (void)state;

    make_launch(&s, 51, 10, 1, "kwok-h100-0", "h100", 1, 4000);
    make_launch(&t, 52, 10, 1, "kwok-h100-0", "h100", 1, -1);
    started = time_now_ms();
    assert_int_equal(b->ops->launch(b, &s.l, started, &ei), 0);
    assert_int_equal(b->ops->launch(b, &t.l, started, &ei), 0);
    wait_phase(b, prefix, 10, 51, 0, "Running");
    /* Launches are asynchronous: 52's pod must be there before the daemon goes (the sweep's). */
    wait_phase(b, prefix, 10, 52, 0, "Running");
    b->ops->free(b); /* the daemon goes away; its pods stay */

    b = open_backend(prefix, 1000);
    assert_int_equal(b->ops->adopt(b, &s.l, started, time_now_ms(), &ei), 0);
    make_launch(&u, 53, 10, 1, "kwok-h100-0", "h100", 1, -1); /* never launched */
    assert_int_equal(b->ops->adopt(b, &u.l, started, time_now_ms(), &ei), 0);
    /* 52 is claimed by no workload now: the sweep deletes it */
    assert_int_equal(b->ops->sweep(b, ids, ARRAY_SIZE(ids), &n_ids), 0);
    assert_int_equal(n_ids, 1);
    assert_int_equal(ids[0], 52);
    ev = wait_end(b, 53);
    assert_int_equal(ev.how, BACKEND_LOST);
    ev = wait_end(b, 51); /* the adopted work ends as it would have */
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    assert_true(ev.at_ms >= started + 3000);
    b->ops->free(b);
}

/*
 * A daemon that stops right after a launch (creates sent, none answered):
 * free lets them finish, so the next start adopts the work, not loses it.
 */
static void test_free_mid_launch(void **state)
{
    const char *prefix = "gpuaas-free0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    struct backend_started st[4];
    int64_t started = time_now_ms();
    long status;
    (void)state;

    make_launch(&s, 61, 12, 2, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, started, &ei), 0);
    b->ops->free(b); /* no poll: nothing was answered yet */
    for (int r = 0; r < 2; r++) {
        json_decref(get_pod(prefix, 12, 61, r, &status));
        assert_int_equal(status, 200); /* made before free returned */
    }

    b = open_backend(prefix, 1000);
    assert_int_equal(b->ops->adopt(b, &s.l, started, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 12, 61, 0, "Running"); /* fails if the work ends (lost) */
    wait_phase(b, prefix, 12, 61, 1, "Running");
    no_end_for(b, 61, 300);
    /* its start had not been said before the restart (no poll saw it): said now, once */
    assert_true(take_started(b, st, ARRAY_SIZE(st)) <= 1);
    assert_int_equal(b->ops->stop(b, 61, 0, time_now_ms()), 0);
    ev = wait_end(b, 61);
    assert_int_equal(ev.how, BACKEND_STOPPED);
    b->ops->free(b);
}

/* ---- logs ---- */

/* Appends a line to every pod's log (kwok serves K8S_POD_LOG, in the CRI log format). */
static void pod_log_line(const char *text)
{
    FILE *f = fopen(env("K8S_POD_LOG"), "a");
    char at[40];
    assert_non_null(f);
    time_format_rfc3339(time_now_s(), at, sizeof(at));
    at[strlen(at) - 1] = '\0'; /* the CRI format's time has nanoseconds */
    fprintf(f, "%s.000000000Z stdout F %s\n", at, text);
    fclose(f);
}

/* The log read through a reader of b's (replica 0's pod), as a string the caller frees. */
static char *read_log(struct backend_log *lr)
{
    struct buf out;
    struct error_info ei = {0};
    char *text;
    buf_init(&out, 1 << 20);
    if (lr->read(lr, &out, &ei) < 0)
        fail_msg("reading the pod's log: %s", ei.message);
    text = xstrdup(out.data ? out.data : "");
    buf_release(&out);
    return text;
}

/*
 * A running workload's output is its pod's log, read by a reader that needs
 * nothing of the backend (the API reads it from its own threads): a line
 * written meanwhile is there at the next read; work not followed has none.
 */
static void test_pod_log(void **state)
{
    const char *prefix = "gpuaas-logs0001-";
    struct backend *b = open_backend(prefix, 1000);
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_log *lr = NULL;
    char line[64], *text;
    (void)state;

    make_launch(&s, 81, 14, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 14, 81, 0, "Running");
    assert_int_equal(b->ops->log_reader(b, 82, &lr, &ei), ERR_NOT_FOUND);
    assert_int_equal(b->ops->log_reader(b, 81, &lr, &ei), 0);
    text = read_log(lr);
    assert_non_null(strstr(text, "hello from kwok")); /* up.sh's first line */
    free(text);
    snprintf(line, sizeof(line), "line %" PRId64 " of workload 81", time_now_ms());
    pod_log_line(line);
    text = read_log(lr);
    assert_non_null(strstr(text, line));
    free(text);
    assert_int_equal(b->ops->stop(b, 81, 0, time_now_ms()), 0);
    wait_end(b, 81);
    b->ops->free(b);
    /* the reader outlives the backend; its pod is gone now: no output, not an error */
    text = read_log(lr);
    assert_string_equal(text, "");
    free(text);
    lr->free(lr);
}

/* ---- devices: dcgm-exporter's pod labels ---- */

/* A dcgm-exporter stand-in on 127.0.0.1: /metrics answers the text set last. */
struct exporter {
    struct MHD_Daemon *d;
    pthread_mutex_t lock;
    char text[4096];
    char url[64];
};

static enum MHD_Result exporter_answer(void *cls, struct MHD_Connection *conn, const char *url,
                                       const char *method, const char *version, const char *upload,
                                       size_t *upload_size, void **con_cls)
{
    struct exporter *x = cls;
    struct MHD_Response *resp;
    enum MHD_Result ret;
    char *copy;
    (void)url;
    (void)method;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;
    pthread_mutex_lock(&x->lock);
    copy = xstrdup(x->text);
    pthread_mutex_unlock(&x->lock);
    resp = MHD_create_response_from_buffer(strlen(copy), copy, MHD_RESPMEM_MUST_FREE);
    ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void exporter_start(struct exporter *x)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    const union MHD_DaemonInfo *info;

    pthread_mutex_init(&x->lock, NULL);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    x->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, exporter_answer, x,
                            MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
    assert_non_null(x->d);
    info = MHD_get_daemon_info(x->d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(x->url, sizeof(x->url), "http://127.0.0.1:%u/metrics", (unsigned)info->port);
}

/* One DCGM_FI_DEV_GPU_UTIL series of GPU gpu held by pod in ns, as dcgm-exporter writes it. */
static void series(char *out, size_t size, int gpu, const char *ns, const char *pod)
{
    size_t n = strlen(out);
    snprintf(out + n, size - n,
             "DCGM_FI_DEV_GPU_UTIL{gpu=\"%d\",UUID=\"GPU-00000000-0000-0000-0000-00000000000%d\","
             "device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"kwok-h100-0\","
             "container=\"work\",namespace=\"%s\",pod=\"%s\"} 97\n",
             gpu, gpu, gpu, ns, pod);
}

/* Takes b's device reports while polling, until one comes (10 s at most); how many. */
static size_t wait_devices(struct backend *b, struct backend_devices *out, int64_t ms)
{
    int64_t until = time_now_ms() + ms;
    while (time_now_ms() < until) {
        struct backend_event none[8];
        size_t n;
        b->ops->poll(b, time_now_ms(), none, ARRAY_SIZE(none));
        if ((n = b->ops->take_devices(b, out, 4)) > 0)
            return n;
        usleep(50 * 1000);
    }
    return 0;
}

/*
 * dcgm-exporter says which GPUs a pod holds (labels pod, namespace, gpu):
 * the backend reports the indices when they are not those gpuaas placed it
 * on, once; another daemon's pod, a pod of ours in a namespace not its own
 * and a count that differs from the replica's are not reported.
 */
static void test_devices_from_dcgm(void **state)
{
    const char *prefix = "gpuaas-dcgm0001-";
    struct exporter x = {0};
    struct collector_options co;
    struct collector *col = NULL;
    struct kube_options o = {.kubeconfig = env("KUBECONFIG"),
                             .default_image = "busybox",
                             .tolerate = TOLERATE,
                             .timeout_grace_ms = 0,
                             .instance_prefix = prefix};
    struct error_info ei = {0};
    struct launch_spec s, t;
    struct backend_devices d[4];
    struct backend *b;
    char ns[96], pod[96], pod2[96];
    (void)state;

    kube_namespace_name(prefix, 13, ns, sizeof(ns));
    kube_pod_name(prefix, 71, 0, pod, sizeof(pod));
    kube_pod_name(prefix, 72, 0, pod2, sizeof(pod2));
    series(x.text, sizeof(x.text), 5, ns, pod);
    series(x.text, sizeof(x.text), 6, ns, pod);
    series(x.text, sizeof(x.text), 7, ns, "gpuaas-other001-71-0"); /* another daemon's */
    series(x.text, sizeof(x.text), 3, "elsewhere", pod2);          /* not its namespace */
    series(x.text, sizeof(x.text), 4, ns, pod2); /* 72 asked for 2 GPUs: a partial view */
    exporter_start(&x);
    collector_options_init(&co);
    co.dcgm_urls = x.url;
    co.interval_ms = 1000; /* the shortest the collector takes */
    co.timeout_ms = 2000;
    assert_int_equal(collector_start(&co, &col, &ei), 0);
    o.collector = col;
    b = backend_kube_new(1, &o, &ei);
    if (!b)
        fail_msg("backend_kube_new: %s", ei.message);

    make_launch(&s, 71, 13, 1, "kwok-h100-0", "h100", 2, -1); /* placed on GPUs 0 and 1 */
    make_launch(&t, 72, 13, 1, "kwok-h100-0", "h100", 2, -1);
    for (int g = 0; g < 2; g++)
        t.devs[0][g].index = 2 + g;
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    assert_int_equal(b->ops->launch(b, &t.l, time_now_ms(), &ei), 0);
    assert_int_equal(wait_devices(b, d, 10000), 1);
    assert_int_equal(d[0].workload_id, 71);
    assert_string_equal(d[0].node, "kwok-h100-0");
    assert_int_equal(d[0].n_indices, 2);
    assert_int_equal(d[0].indices[0], 5);
    assert_int_equal(d[0].indices[1], 6);
    /* said once: the next scrapes say the same */
    assert_int_equal(wait_devices(b, d, 1000), 0);

    /* one at a time: wait_end drops the other ends a poll hands out */
    assert_int_equal(b->ops->stop(b, 71, 0, time_now_ms()), 0);
    wait_end(b, 71);
    assert_int_equal(b->ops->stop(b, 72, 0, time_now_ms()), 0);
    wait_end(b, 72);
    b->ops->free(b);
    collector_stop(col);
    MHD_stop_daemon(x.d);
    pthread_mutex_destroy(&x.lock);
}

/* ---- bad kubeconfigs, unreachable apiservers: one clear error ---- */

static char *write_kubeconfig(const char *dir, const char *name, const char *server, const char *ca,
                              const char *user_yaml)
{
    char *path = xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
            "    certificate-authority: %s\nusers:\n- name: u\n  user:\n%s\ncontexts:\n"
            "- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
            server, ca, user_yaml);
    fclose(f);
    return path;
}

static void expect_refused(const char *kubeconfig, int code, const char *words)
{
    struct kube_options o = {.kubeconfig = kubeconfig, .instance_prefix = "gpuaas-bad00001-"};
    struct error_info ei = {0};
    struct backend *b = backend_kube_new(1, &o, &ei);
    assert_null(b);
    assert_int_equal(ei.code, code);
    if (!strstr(ei.message, words))
        fail_msg("wanted '%s' in: %s", words, ei.message);
}

static void test_bad_configs(void **state)
{
    char dir[] = "/tmp/gpuaas-kubecfg.XXXXXX";
    const char *server = env("K8S_SERVER");
    char *ca = xasprintf("%s/pki/ca.crt", env("K8S_DIR"));
    char *tok = xasprintf("    token: %s", env("K8S_USER_TOKEN"));
    char *p;
    (void)state;

    assert_non_null(mkdtemp(dir));
    expect_refused("/nonexistent/kubeconfig", ERR_INVALID, "cannot read");
    p = write_kubeconfig(dir, "bad-token", server, ca, "    token: not-a-token");
    expect_refused(p, ERR_UNAVAILABLE, "401");
    free(p);
    p = write_kubeconfig(dir, "no-grants", server, ca, tok);
    expect_refused(p, ERR_UNAVAILABLE, "403");
    free(p);
    p = write_kubeconfig(dir, "wrong-ca", server, "/etc/ssl/certs/ca-certificates.crt",
                         "    token: x");
    expect_refused(p, ERR_UNAVAILABLE, "TLS");
    free(p);
    p = write_kubeconfig(dir, "unreachable", "https://127.0.0.1:1", ca, "    token: x");
    expect_refused(p, ERR_UNAVAILABLE, "cannot reach");
    free(p);
    p = write_kubeconfig(dir, "exec", server, ca,
                         "    exec:\n      command: /bin/true\n      apiVersion: x");
    expect_refused(p, ERR_INVALID, "credential plugin");
    free(p);
    p = write_kubeconfig(dir, "plain-http", "http://127.0.0.1:8080", ca, "    token: x");
    expect_refused(p, ERR_INVALID, "not https");
    free(p);
    free(ca);
    free(tok);
}

/*
 * Least privilege: the backend runs as a user granted only what
 * docs/kubernetes-backend.md ("RBAC") lists: nodes get/list/watch; pods
 * get/list/watch/create/delete; namespaces create. It discovers, makes its
 * namespace, runs a pod to its end and deletes it; the same user may not
 * read secrets or delete namespaces.
 */
/* ---- a rotated token file ---- */

#define ROT_SA "gpuaas-rot"
#define ROT_PATH "/api/v1/namespaces/default"

/*
 * A service-account token in a Secret of ours (the controller manager's
 * token controller fills it): its text, the caller's to free. Deleting the
 * Secret revokes it (the apiserver looks the Secret up), which a static
 * token file cannot do.
 */
static char *sa_token(const char *secret)
{
    char path[160];
    json_t *sec = NULL;
    long st =
        admin_call("POST", ROT_PATH "/secrets", NULL,
                   json_pack("{s:s,s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "v1", "kind", "Secret",
                             "type", "kubernetes.io/service-account-token", "metadata", "name",
                             secret, "annotations", "kubernetes.io/service-account.name", ROT_SA),
                   NULL);
    assert_int_equal(st, 201);
    snprintf(path, sizeof(path), ROT_PATH "/secrets/%s", secret);
    for (int i = 0; i < 100; i++) {
        const char *b64;
        json_decref(sec);
        sec = NULL;
        admin_call("GET", path, NULL, NULL, &sec);
        b64 = json_string_value(json_object_get(json_object_get(sec, "data"), "token"));
        if (b64) {
            char *tok = xcalloc(1, strlen(b64) + 1);
            size_t n = 0;
            assert_int_equal(sodium_base642bin((unsigned char *)tok, strlen(b64), b64, strlen(b64),
                                               NULL, &n, NULL, sodium_base64_VARIANT_ORIGINAL),
                             0);
            json_decref(sec);
            return tok;
        }
        usleep(100 * 1000);
    }
    fail_msg("the token controller never filled secret %s", secret);
    return NULL;
}

/* Writes the token file as a kubelet does: a new file renamed over the old one. */
static void write_token(const char *path, const char *tok)
{
    char *tmp = xasprintf("%s.new", path);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs(tok, f);
    fclose(f);
    assert_int_equal(rename(tmp, path), 0);
    free(tmp);
}

/* Whether the apiserver takes tok (a GET of one node with it). */
static long token_status(const char *tok)
{
    struct kube_client *k = NULL;
    struct error_info ei = {0};
    char dir[] = "/tmp/gpuaas-tokchk.XXXXXX";
    char *ca = xasprintf("%s/pki/ca.crt", env("K8S_DIR")), *user = xasprintf("    token: %s", tok);
    char *cfg;
    json_t *ans = NULL;
    long st = 0;

    assert_non_null(mkdtemp(dir));
    cfg = write_kubeconfig(dir, "k", env("K8S_SERVER"), ca, user);
    assert_int_equal(kube_client_new(cfg, &k, &ei), 0);
    assert_int_equal(kube_call(k, "GET", "/api/v1/nodes?limit=1", NULL, NULL, &st, &ans, &ei), 0);
    json_decref(ans);
    kube_client_free(k);
    unlink(cfg);
    rmdir(dir);
    free(cfg);
    free(ca);
    free(user);
    return st;
}

/*
 * The kubeconfig's token file is replaced (as a projected service-account
 * token is) and the old token revoked: the backend's pod creates, sent
 * without waiting, go out with the new token, and the work runs.
 */
static void test_token_rotation(void **state)
{
    const char *prefix = "gpuaas-rota0001-";
    char dir[] = "/tmp/gpuaas-rotate.XXXXXX";
    char *ca = xasprintf("%s/pki/ca.crt", env("K8S_DIR")), *tokfile, *user, *old, *fresh;
    struct kube_options o = {.default_image = "busybox",
                             .tolerate = TOLERATE,
                             .timeout_grace_ms = 0,
                             .instance_prefix = prefix};
    struct error_info ei = {0};
    struct backend *b = NULL;
    struct launch_spec s;
    (void)state;

    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" ROT_SA, NULL,
               NULL, NULL);
    admin_call("DELETE", ROT_PATH "/serviceaccounts/" ROT_SA, NULL, NULL, NULL);
    assert_int_equal(admin_call("POST", ROT_PATH "/serviceaccounts", NULL,
                                json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind",
                                          "ServiceAccount", "metadata", "name", ROT_SA),
                                NULL),
                     201);
    assert_int_equal(
        admin_call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", NULL,
                   json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                             "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding",
                             "metadata", "name", ROT_SA, "roleRef", "apiGroup",
                             "rbac.authorization.k8s.io", "kind", "ClusterRole", "name",
                             "cluster-admin", "subjects", "kind", "ServiceAccount", "name", ROT_SA,
                             "namespace", "default"),
                   NULL),
        201);
    old = sa_token("gpuaas-rot-1");
    assert_non_null(mkdtemp(dir));
    tokfile = xasprintf("%s/token", dir);
    write_token(tokfile, old);
    user = xasprintf("    tokenFile: %s", tokfile);
    o.kubeconfig = write_kubeconfig(dir, "rotating", env("K8S_SERVER"), ca, user);
    for (int i = 0; i < 50 && !b; i++) { /* the authorizer learns of the binding a moment later */
        ei = (struct error_info){0};
        if (!(b = backend_kube_new(1, &o, &ei)))
            usleep(100 * 1000);
    }
    if (!b)
        fail_msg("the backend with a token file: %s", ei.message);

    /* its namespace made now: after the rotation only the pod creates, sent without waiting, go */
    make_launch(&s, 110, 15, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 15, 110, 0, "Running");
    assert_int_equal(b->ops->stop(b, 110, 0, time_now_ms()), 0);
    assert_int_equal(wait_end(b, 110).how, BACKEND_STOPPED);

    /* a new token in the file, the old one revoked */
    fresh = sa_token("gpuaas-rot-2");
    write_token(tokfile, fresh);
    assert_int_equal(admin_call("DELETE", ROT_PATH "/secrets/gpuaas-rot-1", NULL, NULL, NULL), 200);
    for (int i = 0; i < 100 && token_status(old) != 401; i++)
        usleep(100 * 1000);
    assert_int_equal(token_status(old), 401);
    assert_int_equal(token_status(fresh), 200);

    make_launch(&s, 111, 15, 1, "kwok-h100-1", "h100", 1, -1);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    wait_phase(b, prefix, 15, 111, 0, "Running"); /* fails if the create was refused */
    assert_int_equal(b->ops->stop(b, 111, 0, time_now_ms()), 0);
    assert_int_equal(wait_end(b, 111).how, BACKEND_STOPPED);
    b->ops->free(b);

    admin_call("DELETE", ROT_PATH "/secrets/gpuaas-rot-2", NULL, NULL, NULL);
    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" ROT_SA, NULL,
               NULL, NULL);
    admin_call("DELETE", ROT_PATH "/serviceaccounts/" ROT_SA, NULL, NULL, NULL);
    unlink(tokfile);
    unlink(o.kubeconfig);
    rmdir(dir);
    free((char *)o.kubeconfig);
    free(tokfile);
    free(user);
    sodium_memzero(old, strlen(old));
    free(old);
    free(fresh);
    free(ca);
}

#define RBAC_NAME "gpuaas-backend-least"
static void test_least_privilege(void **state)
{
    char dir[] = "/tmp/gpuaas-kubecfg.XXXXXX";
    const char *prefix = "gpuaas-rbac0001-";
    char *ca = xasprintf("%s/pki/ca.crt", env("K8S_DIR"));
    char *tok = xasprintf("    token: %s", env("K8S_USER_TOKEN"));
    struct kube_options o = {.default_image = "busybox",
                             .tolerate = TOLERATE,
                             .timeout_grace_ms = 1000,
                             .instance_prefix = prefix};
    struct kube_client *user = NULL;
    struct backend *b = NULL;
    struct backend_fleet_report rep;
    struct launch_spec s;
    struct error_info ei = {0};
    struct backend_event ev;
    struct arena a;
    json_t *ans = NULL;
    long st;
    (void)state;

    /* what a run that failed half-way may have left */
    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" RBAC_NAME, NULL,
               NULL, NULL);
    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/" RBAC_NAME, NULL, NULL,
               NULL);
    st = admin_call(
        "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", NULL,
        json_pack("{s:s,s:s,s:{s:s},s:[{s:[s],s:[s],s:[s,s,s]},{s:[s],s:[s],s:[s,s,s,s,s]},"
                  "{s:[s],s:[s],s:[s]}]}",
                  "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "ClusterRole", "metadata",
                  "name", RBAC_NAME, "rules", "apiGroups", "", "resources", "nodes", "verbs", "get",
                  "list", "watch", "apiGroups", "", "resources", "pods", "verbs", "get", "list",
                  "watch", "create", "delete", "apiGroups", "", "resources", "namespaces", "verbs",
                  "create"),
        NULL);
    assert_int_equal(st, 201);
    st = admin_call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", NULL,
                    json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
                              "rbac.authorization.k8s.io/v1", "kind", "ClusterRoleBinding",
                              "metadata", "name", RBAC_NAME, "roleRef", "apiGroup",
                              "rbac.authorization.k8s.io", "kind", "ClusterRole", "name", RBAC_NAME,
                              "subjects", "kind", "User", "name", "gpuaas-user", "apiGroup",
                              "rbac.authorization.k8s.io"),
                    NULL);
    assert_int_equal(st, 201);

    assert_non_null(mkdtemp(dir));
    o.kubeconfig = write_kubeconfig(dir, "least", env("K8S_SERVER"), ca, tok);
    /* the authorizer learns of the binding a moment later */
    for (int i = 0; i < 50 && !b; i++) {
        ei = (struct error_info){0};
        if (!(b = backend_kube_new(1, &o, &ei)))
            usleep(100 * 1000);
    }
    if (!b)
        fail_msg("the backend with the least privileges: %s", ei.message);
    arena_init(&a);
    discover(b, &a, &rep);
    assert_non_null(node_of(&rep, "kwok-h100-0"));
    make_launch(&s, 91, 9, 1, "kwok-h100-0", "h100", 1, 1500);
    assert_int_equal(b->ops->launch(b, &s.l, time_now_ms(), &ei), 0);
    json_decref(wait_pod(b, prefix, 9, 91, 0, NULL));
    ev = wait_end(b, 91);
    assert_int_equal(ev.how, BACKEND_EXITED);
    assert_int_equal(ev.exit_code, 0);
    wait_pod_gone(b, prefix, 9, 91);
    /* and nothing more: no secrets, no deleting namespaces */
    assert_int_equal(kube_client_new(o.kubeconfig, &user, &ei), 0);
    assert_int_equal(
        kube_call(user, "GET", "/api/v1/namespaces/default/secrets", NULL, NULL, &st, &ans, &ei),
        0);
    assert_int_equal(st, 403);
    json_decref(ans);
    assert_int_equal(
        kube_call(user, "DELETE", "/api/v1/namespaces/default", NULL, NULL, &st, &ans, &ei), 0);
    assert_int_equal(st, 403);
    json_decref(ans);
    kube_client_free(user);
    b->ops->free(b);
    arena_release(&a);
    /* the user has no grants again (test_bad_configs counts on it) */
    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/" RBAC_NAME, NULL,
               NULL, NULL);
    admin_call("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/" RBAC_NAME, NULL, NULL,
               NULL);
    unlink(o.kubeconfig);
    rmdir(dir);
    free((char *)o.kubeconfig);
    free(ca);
    free(tok);
}

int main(void)
{
    struct error_info ei = {0};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_discovery),
        cmocka_unit_test(test_runs_to_its_exit),
        cmocka_unit_test(test_oom_and_lost),
        cmocka_unit_test(test_image_cannot_be_pulled),
        cmocka_unit_test(test_stop_waits_for_the_grace),
        cmocka_unit_test(test_gang_all_or_nothing),
        cmocka_unit_test(test_adopt_and_sweep),
        cmocka_unit_test(test_free_mid_launch),
        cmocka_unit_test(test_devices_from_dcgm),
        cmocka_unit_test(test_pod_log),
        cmocka_unit_test(test_token_rotation),
        cmocka_unit_test(test_least_privilege),
    };
    int rc;

    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (kube_client_new(env("KUBECONFIG"), &admin, &ei) < 0) {
        fprintf(stderr, "k8s.backend: %s\n", ei.message);
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    kube_client_free(admin);
    curl_global_cleanup();
    return rc;
}
