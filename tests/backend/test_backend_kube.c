/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the pure parts of the Kubernetes backend (src/backend/kube-config.c,
 * kube-pod.c, kube-nodes.c): kubeconfig files, the pod of a replica, what a
 * pod says of itself, and discovery from Node objects. No apiserver.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>

#include "backend/kube-int.h"

/* text with ' for " (JSON in C strings without the escapes) */
static char *dq(const char *text)
{
    char *s = xstrdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

static json_t *jload(const char *text)
{
    json_error_t je;
    char *s = dq(text);
    json_t *j = json_loads(s, 0, &je);
    if (!j)
        fail_msg("bad test JSON: %s: %s", je.text, s);
    free(s);
    return j;
}

/* j's member at the keys given (NULL-terminated); NULL when one is missing. */
static json_t *get(json_t *j, ...)
{
    va_list ap;
    const char *k;
    va_start(ap, j);
    while (j && (k = va_arg(ap, const char *)))
        j = json_object_get(j, k);
    va_end(ap);
    return j;
}

#define GETS(...) json_string_value(get(__VA_ARGS__, NULL))

/* got is the JSON want says (with ' for "). */
static void jeq(json_t *got, const char *want)
{
    json_t *w = jload(want);
    if (!json_equal(got, w)) {
        char *g = got ? json_dumps(got, JSON_SORT_KEYS) : NULL;
        fail_msg("got %s, want %s", g ? g : "(null)", want);
    }
    json_decref(w);
}

static char dir[64], last[128]; /* kubeconfigs; the file last written */

static const char *write_file(const char *name, const char *text)
{
    FILE *f;
    snprintf(last, sizeof(last), "%s/%s", dir, name);
    assert_non_null(f = fopen(last, "w"));
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
    return last;
}

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/test_backend_kube.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    static const char *const names[] = {"config", "bad", "notyaml", "nocur"};
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        unlink(write_file(names[i], ""));
    return rmdir(dir);
}

static struct kube_config *load_ok(const char *text)
{
    struct error_info ei = {0};
    struct kube_config *c = NULL;
    if (kube_config_load(write_file("config", text), &c, &ei) != 0)
        fail_msg("kube_config_load: %s", ei.message);
    assert_non_null(c);
    return c;
}

/* Loading path fails with ERR_INVALID and a message holding word. */
static void path_fails(const char *path, const char *word)
{
    struct error_info ei = {0};
    struct kube_config *c = (struct kube_config *)1;
    assert_int_equal(kube_config_load(path, &c, &ei), ERR_INVALID);
    assert_null(c);
    assert_int_equal(ei.code, ERR_INVALID);
    if (!strstr(ei.message, word))
        fail_msg("expected \"%s\" in: %s", word, ei.message);
}

/* A kubeconfig whose context "c" names cluster `cluster` and user "u" fails. */
static void load_fails(const char *cluster_body, const char *cluster, const char *user_body,
                       const char *word)
{
    char *text = xasprintf("current-context: c\n"
                           "clusters:\n- name: k\n  cluster: %s\n"
                           "contexts:\n- name: c\n  context: {cluster: %s, user: u}\n"
                           "users:\n- name: u\n  user: %s\n",
                           cluster_body, cluster, user_body);
    path_fails(write_file("bad", text), word);
    free(text);
}

/* ---- kube_config_load ---- */

static void test_config_current_context(void **state)
{
    struct kube_config *c = load_ok(
        "apiVersion: v1\nkind: Config\ncurrent-context: prod\nclusters:\n"
        "- name: dev\n  cluster: {server: 'https://dev.example:6443', certificate-authority: /d}\n"
        "- name: prod\n  cluster:\n    server: https://prod.example:6443//\n"
        "    certificate-authority: ca.crt\n"
        "contexts:\n- name: dev\n  context: {cluster: dev, user: dev-user}\n"
        "- name: prod\n  context:\n    cluster: prod\n    user: prod-user\n"
        "users:\n- name: dev-user\n  user: {token: dev-token}\n"
        "- name: prod-user\n  user:\n    token: prod-token\n");
    char *ca = xasprintf("%s/ca.crt", dir);
    (void)state;

    assert_string_equal(c->server, "https://prod.example:6443");
    assert_string_equal(c->token, "prod-token");
    assert_string_equal(c->context, "prod");
    assert_string_equal(c->ca_file, ca);
    assert_false(c->insecure);
    assert_null(c->token_file);
    assert_null(c->cert_file);
    free(ca);
    kube_config_free(c);

    /* an absolute CA kept, a token file relative to the kubeconfig's directory */
    c = load_ok("current-context: a\n"
                "clusters: [{name: a, cluster: {server: 'https://a.example',\n"
                "  certificate-authority: /etc/k8s/ca.pem, insecure-skip-tls-verify: true}}]\n"
                "contexts: [{name: a, context: {cluster: a, user: a}}]\n"
                "users: [{name: a, user: {tokenFile: secrets/token}}]\n");
    ca = xasprintf("%s/secrets/token", dir);
    assert_string_equal(c->server, "https://a.example");
    assert_string_equal(c->ca_file, "/etc/k8s/ca.pem");
    assert_true(c->insecure);
    assert_null(c->token);
    assert_string_equal(c->token_file, ca);
    free(ca);
    kube_config_free(c);
}

static void test_config_data_and_json(void **state)
{
    char *json;
    struct kube_config *c =
        load_ok("current-context: d\n"
                "clusters:\n- name: d\n  cluster:\n    server: https://d.example\n"
                "    certificate-authority-data: AAEC\n"
                "    certificate-authority: ignored.crt\n"
                "contexts:\n- name: d\n  context: {cluster: d, user: d}\n"
                "users:\n- name: d\n  user:\n    client-certificate-data: Y2VydA==\n"
                "    client-key-data: a2V5\n");
    (void)state;

    assert_null(c->ca_file); /* the data wins */
    assert_non_null(c->ca_data);
    assert_int_equal(c->ca_len, 3);
    assert_memory_equal(c->ca_data, "\x00\x01\x02", 3);
    assert_int_equal(c->cert_len, 4);
    assert_string_equal(c->cert_data, "cert");
    assert_int_equal(c->key_len, 3);
    assert_string_equal(c->key_data, "key");
    assert_null(c->cert_file);
    kube_config_free(c);

    json =
        dq("{'apiVersion': 'v1', 'current-context': 'j',\n 'clusters': [{'name': 'x', "
           "'cluster': {'server': 'https://x.example'}},\n   {'name': 'j', 'cluster': "
           "{'server': 'https://j.example:443/'}}],\n 'contexts': [{'name': 'j', 'context': "
           "{'cluster': 'j', 'user': 'u'}}],\n 'users': [{'name': 'u', 'user': {'token': 'jt'}}]}");
    c = load_ok(json);
    free(json);
    assert_string_equal(c->server, "https://j.example:443");
    assert_string_equal(c->token, "jt");
    assert_string_equal(c->context, "j");
    assert_null(c->ca_file);
    kube_config_free(c);
}

static void test_config_errors(void **state)
{
    char *missing = xasprintf("%s/none", dir);
    const char *ok_cluster = "{server: 'https://k.example'}";
    (void)state;

    path_fails(missing, "cannot read");
    free(missing);
    path_fails(write_file("notyaml", "a: [b\n"), "not YAML");
    path_fails(write_file("nocur", "clusters: []\nusers: []\n"), "no current-context");

    load_fails(ok_cluster, "other", "{token: x}", "no cluster named other");
    load_fails("{server: 'http://k.example'}", "k", "{token: x}", "not https");
    load_fails(ok_cluster, "k", "{exec: {command: aws, args: [eks]}}", "credential plugin");
    load_fails(ok_cluster, "k", "{client-certificate: c.crt}", "needs its key");
    load_fails(ok_cluster, "k", "{client-key-data: a2V5}", "needs its key");
    load_fails(ok_cluster, "k", "{username: bob}", "no token");
    load_fails(ok_cluster, "k", "{client-certificate-data: '!!!!', client-key: k}", "not base64");
    load_fails("{server: 'https://k', certificate-authority-data: 'A*B'}", "k", "{token: x}",
               "not base64");
}

/* ---- kube_pod_json ---- */

static const char *const tolerate_gpu[] = {"nvidia.com/gpu"};

// clang-format off
static const struct kube_pod_settings settings = {
    .prefix = "gpuaas-0badcafe-", .default_image = "busybox", .tolerate = tolerate_gpu,
    .n_tolerate = 1};

static struct backend_device devs[2] = {
    {.gpu_id = 11, .index = 0, .milli = 1000, .gpu_class = "h100"},
    {.gpu_id = 12, .index = 3, .milli = 1000, .gpu_class = "h100"},
};
static struct backend_replica rep = {
    .replica = 0, .node_name = "n1", .devices = devs, .n_devices = 2};
static const struct backend_launch launch = {
    .workload_id = 4242, .project_id = 7, .command = "echo hi", .image = "", .cpu_milli = 1500,
    .mem_mib = 2048, .duration_ms = 90000, .max_runtime_ms = -1, .replicas = &rep, .n_replicas = 1};
// clang-format on

static void test_pod_json(void **state)
{
    struct error_info ei = {0};
    json_t *pod = NULL, *ctr;
    (void)state;

    assert_int_equal(kube_pod_json(&settings, &launch, 0, &pod, &ei), 0);
    assert_string_equal(GETS(pod, "metadata", "name"), "gpuaas-0badcafe-4242-0");
    assert_string_equal(GETS(pod, "metadata", "namespace"), "gpuaas-0badcafe-p7");
    jeq(get(pod, "metadata", "labels", NULL),
        "{'app.kubernetes.io/managed-by':'gpuaas','gpuaas.io/instance':'gpuaas-0badcafe',"
        "'gpuaas.io/workload':'4242','gpuaas.io/replica':'0','gpuaas.io/project':'7'}");
    jeq(get(pod, "metadata", "annotations", NULL), "{'gpuaas.io/expected-runtime':'90000ms'}");
    assert_string_equal(GETS(pod, "spec", "nodeName"), "n1");
    assert_string_equal(GETS(pod, "spec", "restartPolicy"), "Never");
    jeq(get(pod, "spec", "tolerations", NULL), "[{'key':'nvidia.com/gpu','operator':'Exists'}]");
    assert_int_equal(json_array_size(get(pod, "spec", "containers", NULL)), 1);
    ctr = json_array_get(get(pod, "spec", "containers", NULL), 0);
    assert_string_equal(GETS(ctr, "image"), "busybox");
    jeq(get(ctr, "command", NULL), "['/bin/sh','-c','echo hi']");
    jeq(get(ctr, "resources", NULL), "{'limits':{'nvidia.com/gpu':'2','cpu':'1500m','memory':"
                                     "'2048Mi'},'requests':{'nvidia.com/gpu':'2','cpu':'1500m',"
                                     "'memory':'2048Mi'}}");
    /* no NVIDIA_VISIBLE_DEVICES: the device plugin says which GPUs */
    jeq(get(ctr, "env", NULL), "[{'name':'GPUAAS_WORKLOAD_ID','value':'4242'},"
                               "{'name':'GPUAAS_REPLICA','value':'0'}]");
    json_decref(pod);
}

/* kube_pod_json refuses l with ERR_INVALID and no pod; ei says more. */
static void pod_fails(const struct kube_pod_settings *s, const struct backend_launch *l,
                      struct error_info *ei)
{
    json_t *pod = (json_t *)1;
    *ei = (struct error_info){0};
    assert_int_equal(kube_pod_json(s, l, 0, &pod, ei), ERR_INVALID);
    assert_null(pod);
    assert_int_equal(ei->code, ERR_INVALID);
}

static void test_pod_json_mig_and_errors(void **state)
{
    struct backend_device mig[2] = {
        {.gpu_id = 1, .index = 100, .milli = 1000, .gpu_class = "a100-80gb/1g.10gb"},
        {.gpu_id = 2, .index = 101, .milli = 1000, .gpu_class = "a100-80gb/1g.10gb"},
    };
    struct backend_device half = {.gpu_id = 3, .milli = 500, .gpu_class = "h100"};
    struct backend_replica r = rep;
    struct backend_launch l = launch;
    struct kube_pod_settings s = settings;
    struct error_info ei = {0};
    json_t *pod = NULL, *ctr;
    (void)state;

    r.devices = mig;
    l.replicas = &r;
    l.image = "nvcr.io/nvidia/cuda:12";
    assert_int_equal(kube_pod_json(&s, &l, 0, &pod, &ei), 0);
    ctr = json_array_get(get(pod, "spec", "containers", NULL), 0);
    jeq(get(ctr, "resources", "limits", NULL),
        "{'nvidia.com/mig-1g.10gb':'2','cpu':'1500m','memory':'2048Mi'}");
    assert_string_equal(GETS(ctr, "image"), "nvcr.io/nvidia/cuda:12");
    json_decref(pod);

    r.devices = &half;
    r.n_devices = 1;
    pod_fails(&s, &l, &ei);
    assert_non_null(strstr(ei.message, "whole GPUs"));
    r.devices = devs;
    l.image = "";
    s.default_image = "";
    pod_fails(&s, &l, &ei);
    assert_string_equal(ei.field, "image");
    s.default_image = "busybox";
    r.node_name = "";
    pod_fails(&s, &l, &ei);
    assert_non_null(strstr(ei.message, "no node"));
    s.default_image = NULL; /* NULL as "" */
    r.node_name = "n1";
    pod_fails(&s, &l, &ei);
}

/* ---- kube_pod_state_of ---- */

#define OURS "'metadata':{'labels':{'gpuaas.io/workload':'42','gpuaas.io/replica':'1'}}"
#define TERM(name, code, reason, at)                                                               \
    "{'name':'" name "','state':{'terminated':{'exitCode':" code ",'reason':'" reason              \
    "','finishedAt':'" at "'}}}"

/* What the pod (JSON with ' for ") says, checked for phase, exit code, end (ms), message. */
static struct kube_pod_state state_is(const char *text, enum kube_pod_phase phase, int exit_code,
                                      int64_t finished_ms, const char *message)
{
    struct kube_pod_state st;
    json_t *pod = jload(text);
    memset(&st, 0x55, sizeof(st)); /* all of it must be set */
    kube_pod_state_of(pod, &st);
    json_decref(pod);
    assert_int_equal(st.phase, phase);
    assert_int_equal(st.exit_code, exit_code);
    assert_int_equal(st.finished_ms, finished_ms);
    assert_string_equal(st.message, message);
    return st;
}

/*
 * A pod request's sub gives back its kind, replica and generation; the
 * launch after (the same workload requeued) has another generation, also
 * where the 22 bits kept wrap.
 */
static void test_request_sub(void **state)
{
    struct kube_req q;
    (void)state;

    q = kube_req_of(kube_req_sub(7, 255, KUBE_REQ_DELETE));
    assert_int_equal(q.gen, 7);
    assert_int_equal(q.replica, 255);
    assert_int_equal(q.kind, KUBE_REQ_DELETE);
    assert_true(kube_req_sub(0x3fffff, 255, 1) >= 0);
    q = kube_req_of(kube_req_sub(0x3fffff, 0, KUBE_REQ_CREATE));
    assert_int_equal(q.kind, KUBE_REQ_CREATE);
    assert_int_equal(q.replica, 0);
    assert_true(kube_req_same_gen(0x3fffff, q.gen));
    assert_false(kube_req_same_gen(0x400000, q.gen)); /* the next launch, wrapped */
    assert_true(kube_req_same_gen(0x400000, kube_req_of(kube_req_sub(0x400000, 3, 0)).gen));
    assert_false(kube_req_same_gen(8, kube_req_of(kube_req_sub(7, 3, 0)).gen));
}

/* A pod's name gives back its workload and replica, for this prefix only. */
static void test_pod_of_name(void **state)
{
    char name[96];
    int64_t wid = 0;
    int32_t replica = -1;
    (void)state;

    kube_pod_name("gpuaas-1a2b3c4d-", 4711, 3, name, sizeof(name));
    assert_true(kube_pod_of_name("gpuaas-1a2b3c4d-", name, &wid, &replica));
    assert_int_equal(wid, 4711);
    assert_int_equal(replica, 3);
    assert_false(kube_pod_of_name("gpuaas-99999999-", name, &wid, &replica));
    assert_false(kube_pod_of_name("gpuaas-1a2b3c4d-", "gpuaas-1a2b3c4d-12", &wid, &replica));
    assert_false(kube_pod_of_name("gpuaas-1a2b3c4d-", "gpuaas-1a2b3c4d-x-0", &wid, &replica));
    assert_false(kube_pod_of_name("gpuaas-1a2b3c4d-", "gpuaas-1a2b3c4d-0-0", &wid, &replica));
    assert_false(kube_pod_of_name("gpuaas-1a2b3c4d-", "gpuaas-1a2b3c4d-5--1", &wid, &replica));
    assert_false(kube_pod_of_name("gpuaas-1a2b3c4d-", "", &wid, &replica));
}

static void test_pod_state(void **state)
{
    struct kube_pod_state st;
    (void)state;

    st = state_is("{" OURS ",'status':{'phase':'Running'}}", KUBE_POD_RUNNING, -1, -1, "");
    assert_int_equal(st.workload_id, 42);
    assert_int_equal(st.replica, 1);
    assert_false(st.deleting);
    st = state_is("{" OURS ",'status':{'phase':'Pending'}}", KUBE_POD_PENDING, -1, -1, "");
    assert_int_equal(st.workload_id, 42);
    state_is("{" OURS ",'status':{'phase':'Succeeded','containerStatuses':[" TERM(
                 "work", "0", "Completed", "2026-01-02T03:04:05Z") "]}}",
             KUBE_POD_ENDED, 0, INT64_C(1767323045000), "");
    /* the container named work, not the first */
    state_is(
        "{" OURS ",'status':{'phase':'Failed','containerStatuses':[" TERM(
            "side", "2", "Error", "2026-01-02T03:04:05Z") "," TERM("work", "137", "OOMKilled",
                                                                   "2026-01-02T03:04:06Z") "]}}",
        KUBE_POD_ENDED, 137, INT64_C(1767323046000), "OOMKilled");
    state_is("{" OURS ",'status':{'phase':'Failed','reason':'Evicted',"
             "'message':'The node was low on resource: memory.'}}",
             KUBE_POD_ENDED, -1, -1, "Evicted: The node was low on resource: memory.");

    st = state_is("{'metadata':{'labels':{'app':'x'}},'status':{'phase':'Running'}}",
                  KUBE_POD_RUNNING, -1, -1, "");
    assert_int_equal(st.workload_id, -1);
    st = state_is("{'metadata':{'labels':{'gpuaas.io/workload':'42'}},'status':{}}",
                  KUBE_POD_PENDING, -1, -1, "");
    assert_int_equal(st.workload_id, -1); /* no replica label: not ours */
    st =
        state_is("{'metadata':{'deletionTimestamp':'2026-01-02T03:04:05Z','labels':{"
                 "'gpuaas.io/workload':'9','gpuaas.io/replica':'0'}},'status':{'phase':'Running'}}",
                 KUBE_POD_RUNNING, -1, -1, "");
    assert_true(st.deleting);
    assert_int_equal(st.workload_id, 9);
    assert_int_equal(st.replica, 0);
}

/* ---- kube_nodes_report ---- */

/* Appends a node to nodes. */
static void mknode(json_t *nodes, const char *name, const char *ready, const char *spec,
                   const char *alloc, const char *product)
{
    char *text = xasprintf("{'metadata':{'name':'%s','labels':{'nvidia.com/gpu.product':'%s',"
                           "'nvidia.com/gpu.memory':'81559'}},'spec':%s,'status':{'allocatable':%s,"
                           "'conditions':[{'type':'MemoryPressure','status':'False'},"
                           "{'type':'Ready','status':'%s','message':'kubelet says so'}]}}",
                           name, product, spec, alloc, ready);
    json_array_append_new(nodes, jload(text));
    free(text);
}

/* The report of node name, in state. */
static const struct backend_node_report *node(const struct backend_fleet_report *r,
                                              const char *name, const char *state)
{
    for (size_t i = 0; i < r->n_nodes; i++)
        if (strcmp(r->nodes[i].name, name) == 0) {
            assert_string_equal(r->nodes[i].state, state);
            return &r->nodes[i];
        }
    fail_msg("no node %s", name);
    return NULL;
}

#define H100 "NVIDIA-H100-80GB-HBM3"
#define H100_ALLOC "{'nvidia.com/gpu':'8','cpu':'64','memory':'512Gi','pods':'110'}"
#define TAINT(k, e) "{'taints':[{'key':'" k "','effect':'" e "'}]}"

static void test_nodes_report(void **state)
{
    static const char *const tol2[] = {"nvidia.com/gpu", "dedicated"};
    struct arena a;
    struct backend_fleet_report r = {0};
    const struct backend_node_report *n;
    json_t *nodes = json_array(), *foreign;
    size_t slices = 0;
    (void)state;

    arena_init(&a);
    mknode(nodes, "h1", "True", "{}", H100_ALLOC, H100);
    mknode(nodes, "notready", "False", "{}", H100_ALLOC, H100);
    mknode(nodes, "cordon", "True", "{'unschedulable':true}", H100_ALLOC, H100);
    mknode(nodes, "taint", "True", TAINT("dedicated", "NoSchedule"), H100_ALLOC, H100);
    mknode(nodes, "gputaint", "True", TAINT("nvidia.com/gpu", "NoSchedule"), H100_ALLOC, H100);
    mknode(nodes, "noexec", "True", TAINT("maint", "NoExecute"), H100_ALLOC, H100);
    mknode(nodes, "cpuonly", "True", "{}", "{'cpu':'8','memory':'16Gi'}", "");
    mknode(nodes, "a1", "True", "{}", "{'nvidia.com/gpu':'4','nvidia.com/mig-1g.10gb':'7'}",
           "NVIDIA-A100-SXM4-80GB");
    foreign = jload("[{'spec':{'nodeName':'h1','containers':[{'resources':{'limits':"
                    "{'nvidia.com/gpu':'3'}}}]}},{'spec':{'nodeName':'elsewhere','containers':"
                    "[{'resources':{'limits':{'nvidia.com/gpu':'8'}}}]}}]");

    assert_int_equal(kube_nodes_report(nodes, foreign, tolerate_gpu, 1, &a, &r), 0);
    assert_true(r.complete);
    assert_int_equal(r.n_nodes, 7);
    for (size_t i = 0; i < r.n_nodes; i++)
        assert_string_not_equal(r.nodes[i].name, "cpuonly"); /* no GPU resource */

    n = node(&r, "h1", "ready");
    assert_int_equal(n->cpu_milli, 64000);
    assert_int_equal(n->mem_mib, 524288);
    assert_int_equal(n->n_gpus, 5); /* 8 less the 3 a foreign pod holds */
    for (size_t i = 0; i < n->n_gpus; i++) {
        assert_int_equal(n->gpus[i].index, (int32_t)i);
        assert_string_equal(n->gpus[i].cls, "h100");
        assert_string_equal(n->gpus[i].model, H100);
        assert_int_equal(n->gpus[i].memory_mib, 81559);
    }
    n = node(&r, "notready", "down");
    assert_int_equal(n->n_gpus, 8);
    assert_non_null(strstr(n->reason, "kubelet says so"));
    node(&r, "cordon", "drain");
    assert_non_null(strstr(node(&r, "taint", "drain")->reason, "dedicated"));
    node(&r, "gputaint", "ready");
    node(&r, "noexec", "down");

    n = node(&r, "a1", "ready");
    assert_int_equal(n->n_gpus, 11);
    for (size_t i = 0; i < n->n_gpus; i++) {
        bool mig = n->gpus[i].index >= 100;
        assert_string_equal(n->gpus[i].cls, mig ? "a100-80gb/1g.10gb" : "a100-80gb");
        assert_in_range(n->gpus[i].index, mig ? 100 : 0, mig ? 106 : 3);
        slices += mig;
    }
    assert_int_equal(slices, 7); /* and 4 whole GPUs */

    /* the same taint, tolerated */
    assert_int_equal(kube_nodes_report(nodes, NULL, tol2, 2, &a, &r), 0);
    node(&r, "taint", "ready");
    assert_int_equal(node(&r, "h1", "ready")->n_gpus, 8); /* no foreign pods */
    node(&r, "noexec", "down");

    json_decref(foreign);
    json_decref(nodes);
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_current_context),
        cmocka_unit_test(test_config_data_and_json),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_pod_json),
        cmocka_unit_test(test_pod_json_mig_and_errors),
        cmocka_unit_test(test_request_sub),
        cmocka_unit_test(test_pod_of_name),
        cmocka_unit_test(test_pod_state),
        cmocka_unit_test(test_nodes_report),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
