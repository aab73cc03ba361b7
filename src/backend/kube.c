/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube.c: the Kubernetes backend's table (kube.h says its rules). It keeps
 * a record per workload with one entry per replica's pod (kube-state.h),
 * which a watch of this daemon's pods brings up to date from poll()
 * (kube-watch.c). Requests that change things (create, delete) are made at
 * once from the engine's thread and bounded in time (kube-client.c).
 */
#include "base/common.h"

#include "backend/kube-state.h"
#include "base/log.h"
#include "base/timeutil.h"

/* The engine looks this often: the watch is read from poll(). */
#define KUBE_LOOK_MS 100
/* ... and this often while requests are on their way. */
#define ASYNC_LOOK_MS 10
/* The most a free waits for pod creates and deletes on their way (kube_free). */
#define FREE_DRAIN_MS 5000

static void kwork_free(struct kwork *w)
{
    if (w) {
        for (size_t r = 0; r < w->n; r++)
            json_decref(w->r[r].pod);
        free(w->r);
        free(w);
    }
}

/* ---- requests ---- */

int kube__request(struct kube *s, const char *method, const char *path, json_t *body, long ok1,
                  long ok2, long *ret_status, json_t **ret, struct error_info *ei)
{
    long status = 0;
    json_t *ans = NULL;
    int rc = kube_call(s->k, method, path, NULL, body, &status, &ans, ei);

    if (ret_status)
        *ret_status = status;
    if (rc == 0 && status != ok1 && status != ok2) {
        char msg[200];
        kube_answer_message(status, ans, msg, sizeof(msg));
        rc = errinfo_set(ei, status == 422 ? ERR_INVALID : ERR_UNAVAILABLE, NULL, "%s %.80s: %s",
                         method, path, msg);
    }
    if (ret && rc == 0)
        *ret = ans;
    else
        json_decref(ans);
    return rc;
}

void kube__label_selector(const struct kube *s, char *out, size_t size)
{
    snprintf(out, size, "labelSelector=" KUBE_LABEL_INSTANCE "%%3D%s", s->instance);
}

/* A pod's delete: its path into path, and the body that gives it that grace (seconds). */
static json_t *pod_delete(const char *ns, const char *name, int64_t grace_s, char *path,
                          size_t size)
{
    snprintf(path, size, "/api/v1/namespaces/%s/pods/%s", ns, name);
    return json_pack("{s:s, s:s, s:I}", "apiVersion", "v1", "kind", "DeleteOptions",
                     "gracePeriodSeconds", (json_int_t)grace_s);
}

/* Deletes one pod with that grace (seconds), waiting for the answer; a pod already gone is fine. */
static int delete_pod(struct kube *s, const char *ns, const char *name, int64_t grace_s,
                      struct error_info *ei)
{
    char path[256];
    json_t *opts = pod_delete(ns, name, grace_s, path, sizeof(path));
    int rc = kube__request(s, "DELETE", path, opts, 200, 404, NULL, NULL, ei);

    json_decref(opts);
    return rc;
}

static int64_t grace_seconds(int64_t grace_ms)
{
    return grace_ms <= 0 ? 0 : (grace_ms + 999) / 1000;
}

/*
 * An asynchronous request's tag is the workload id, its sub the kind, the
 * replica and the launch's generation (kube_req_sub): a requeued workload is
 * launched again under the same id (and the same pod names), and an answer
 * for the launch before must not be taken for the new one's.
 */
static void send_delete(struct kube *s, const char *ns, const char *name, int64_t grace_s,
                        int64_t workload_id, uint32_t gen, size_t replica)
{
    char path[256];
    json_t *opts = pod_delete(ns, name, grace_s, path, sizeof(path));

    kube_async_send(s->async, "DELETE", path, opts, workload_id,
                    kube_req_sub(gen, replica, KUBE_REQ_DELETE));
    json_decref(opts);
}

static void send_create(struct kube *s, struct kwork *w, size_t replica)
{
    char path[160];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", w->ns);
    kube_async_send(s->async, "POST", path, w->r[replica].pod, w->id,
                    kube_req_sub(w->gen, replica, KUBE_REQ_CREATE));
}

/*
 * Asks every pod of w that is not gone to go, with that grace. A pod still
 * being made is asked when its create is answered (on_reply).
 */
static void delete_pods(struct kube *s, struct kwork *w, int64_t grace_ms)
{
    for (size_t r = 0; r < w->n; r++) {
        struct kreplica *p = &w->r[r];
        if (p->gone || p->creating || p->delete_sent)
            continue;
        send_delete(s, w->ns, p->name, grace_seconds(grace_ms), w->id, w->gen, r);
        p->delete_sent = true;
    }
}

static void on_delete_reply(struct kreplica *p, const struct kube_reply *r)
{
    p->delete_sent = false;
    if (r->status == 200 || r->status == 202)
        p->deleted_by_us = true;
    else if (r->status == 404)
        p->gone = p->deleted_by_us = true;
    else /* asked again from poll (delete_again_ms) */
        log_warn("kubernetes: could not delete a pod", "pod", p->name, "error", r->message);
}

void kube__not_started(struct kube *s, struct kwork *w)
{
    w->reason = BACKEND_NOT_STARTED;
    w->kill_at_ms = s->now_ms;
    w->delete_again_ms = s->now_ms + RETRY_MS;
    delete_pods(s, w, 0);
}

static void on_reply(void *arg, const struct kube_reply *r)
{
    struct kube *s = arg;
    struct kube_req q = kube_req_of(r->sub);
    size_t replica = q.replica;
    uint32_t gen = q.gen;
    struct kwork *w = backend_work_find(&s->work, r->tag, NULL);
    struct kreplica *p;

    if (w && !kube_req_same_gen(w->gen, q.gen))
        return; /* an answer for its launch before this one: its pods were gone by then */
    p = w && replica < w->n ? &w->r[replica] : NULL;
    if (q.kind == KUBE_REQ_DELETE) {
        if (p)
            on_delete_reply(p, r);
        return;
    }
    if (r->status == 201) {
        json_t *meta = json_object_get(r->answer, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        if (p) {
            p->creating = false;
            json_decref(p->pod);
            p->pod = NULL;
        }
        if ((!p || w->reason) && ns && name) {
            /* stopped (or ended) while it was being made: it goes now */
            int64_t left = w && w->kill_at_ms > s->now_ms ? w->kill_at_ms - s->now_ms : 0;
            send_delete(s, ns, name, grace_seconds(left), r->tag, gen, replica);
            if (p)
                p->delete_sent = true;
        }
        return;
    }
    if (!p || !p->creating)
        return;
    if (r->status == 403 && strstr(r->message, "service account") && p->create_tries < 20 &&
        !w->reason) {
        /* a namespace made a moment ago: its default service account is on its way */
        p->create_tries++;
        p->create_again_ms = s->now_ms + 100;
        return;
    }
    p->creating = false;
    p->gone = true; /* never made */
    if (!w->reason) {
        /* a gang starts whole or not at all: the others go */
        snprintf(w->why, sizeof(w->why), "could not create its pod %.60s: %.100s", p->name,
                 r->message);
        kube__not_started(s, w);
    }
}

/* Sends again the creates refused for a moment whose time has come. */
static void create_again(struct kube *s, int64_t now_ms)
{
    for (size_t i = 0; i < s->work.n; i++) {
        struct kwork *w = s->work.items[i];
        for (size_t r = 0; r < w->n; r++)
            if (w->r[r].create_again_ms && now_ms >= w->r[r].create_again_ms) {
                w->r[r].create_again_ms = 0;
                if (w->reason) { /* stopped meanwhile: never made */
                    w->r[r].creating = false;
                    w->r[r].gone = true;
                } else {
                    send_create(s, w, r);
                }
            }
    }
}

/* Makes the project's namespace once (409: there already). */
static int ensure_namespace(struct kube *s, const char *ns, int64_t project_id,
                            struct error_info *ei)
{
    json_t *body;
    char proj[32];
    int rc;

    for (size_t i = 0; i < s->n_namespaces; i++)
        if (strcmp(s->namespaces[i], ns) == 0)
            return 0;
    snprintf(proj, sizeof(proj), "%" PRId64, project_id);
    body = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}}}", "apiVersion", "v1", "kind",
                     "Namespace", "metadata", "name", ns, "labels", "app.kubernetes.io/managed-by",
                     "gpuaas", KUBE_LABEL_INSTANCE, s->instance, KUBE_LABEL_PROJECT, proj);
    rc = kube__request(s, "POST", "/api/v1/namespaces", body, 201, 409, NULL, NULL, ei);
    json_decref(body);
    if (rc == 0) {
        ALLOC_GROW(s->namespaces, s->n_namespaces + 1, s->cap_namespaces);
        s->namespaces[s->n_namespaces++] = xstrdup(ns);
    }
    return rc;
}

/* ---- ends ---- */

/* The end of work whose pods have all ended or are gone; false while some still run. */
static bool work_end(const struct kwork *w, int64_t now_ms, struct backend_event *ev)
{
    int64_t at = w->launched_ms;
    bool all_finished = true;

    memset(ev, 0, sizeof(*ev));
    ev->workload_id = w->id;
    for (size_t r = 0; r < w->n; r++) {
        const struct kreplica *p = &w->r[r];
        if (w->reason ? !p->gone : !(p->gone || p->phase == KUBE_POD_ENDED))
            return false;
        if (p->finished_ms > at)
            at = p->finished_ms;
        all_finished &= p->phase == KUBE_POD_ENDED && p->finished_ms >= 0;
    }
    ev->at_ms = all_finished && at <= now_ms ? at : now_ms;
    if (w->reason) {
        /* usage counts until the pods are gone: the end is when they went */
        ev->at_ms = now_ms;
        ev->how = w->reason;
        ev->exit_code = now_ms >= w->kill_at_ms ? -9 : -15;
        if (w->reason == BACKEND_NOT_STARTED) {
            ev->exit_code = -1;
            snprintf(ev->message, sizeof(ev->message), "%s", w->why);
            return true;
        }
        for (size_t r = 0; r < w->n; r++)
            if (w->r[r].phase == KUBE_POD_ENDED && w->r[r].exit_code != 0) {
                ev->exit_code = w->r[r].exit_code;
                break;
            }
        return true;
    }
    ev->how = BACKEND_EXITED;
    for (size_t r = 0; r < w->n; r++) {
        const struct kreplica *p = &w->r[r];
        if (p->phase != KUBE_POD_ENDED && p->gone && !p->deleted_by_us) {
            ev->how = BACKEND_LOST;
            ev->exit_code = -1;
            snprintf(ev->message, sizeof(ev->message), "its pod %.90s was deleted outside gpuaas",
                     p->name);
            return true;
        }
    }
    for (size_t r = 0; r < w->n; r++) {
        const struct kreplica *p = &w->r[r];
        if (p->exit_code != 0) {
            ev->exit_code = p->exit_code;
            snprintf(ev->message, sizeof(ev->message), "%.190s", p->message);
            break;
        }
    }
    return true;
}

/* Whether every pod of w is gone or was asked to go. */
static bool all_asked(const struct kwork *w)
{
    for (size_t r = 0; r < w->n; r++)
        if (!w->r[r].gone && !w->r[r].deleted_by_us && !w->r[r].delete_sent && !w->r[r].creating)
            return false;
    return true;
}

static size_t kube_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct kube *s = kube_of(b);

    s->now_ms = now_ms;
    create_again(s, now_ms);
    kube_async_pump(s->async, on_reply, s);
    kube__follow(s, now_ms);
    for (size_t i = 0; i < s->work.n;) {
        struct kwork *w = s->work.items[i];
        struct backend_event ev;
        if (!w->reason && now_ms >= w->deadline_ms) {
            w->reason = BACKEND_TIMEOUT;
            w->kill_at_ms = now_ms + s->timeout_grace_ms;
            delete_pods(s, w, s->timeout_grace_ms);
            w->delete_again_ms = now_ms + RETRY_MS;
        }
        if (w->reason && now_ms >= w->delete_again_ms && !all_asked(w)) {
            /* a delete failed (the apiserver away): ask again, with what is left of the grace */
            delete_pods(s, w, w->kill_at_ms > now_ms ? w->kill_at_ms - now_ms : 0);
            w->delete_again_ms = now_ms + RETRY_MS;
        }
        if (!work_end(w, now_ms, &ev)) {
            i++;
            continue;
        }
        if (!w->reason)
            delete_pods(s, w, 0); /* ended by itself: its pods are not needed any more */
        backend_ends_push(&s->work.done, &ev);
        kwork_free(backend_work_take(&s->work, i));
    }
    return backend_ends_take(&s->work.done, out, max);
}

static int64_t kube_next_event_ms(struct backend *b)
{
    struct kube *s = kube_of(b);
    int64_t t = s->work.done.n ? 0 : NEVER;

    if (kube_async_pending(s->async) > 0 && s->now_ms + ASYNC_LOOK_MS < t)
        t = s->now_ms + ASYNC_LOOK_MS; /* answers to read */
    for (size_t i = 0; i < s->work.n; i++) {
        const struct kwork *w = s->work.items[i];
        if (!w->reason && w->deadline_ms < t)
            t = w->deadline_ms;
    }
    return t;
}

/* ---- launch, stop, adopt ---- */

/* What device reports follow of a replica: its node, its whole GPUs and their indices. */
static void replica_devices(struct kreplica *p, const struct backend_replica *rep)
{
    snprintf(p->node, sizeof(p->node), "%s", rep->node_name ? rep->node_name : "");
    for (size_t d = 0; d < rep->n_devices; d++) {
        const struct backend_device *dev = &rep->devices[d];
        if (dev->milli < 1000 || (dev->gpu_class && strchr(dev->gpu_class, '/')) ||
            dev->index < 0 || dev->index >= BACKEND_MAX_NODE_DEVICES) {
            p->n_gpus = 0; /* a MIG slice's index is gpuaas's own; shares are not pods' */
            return;
        }
        p->n_gpus++;
        p->said_mask |= UINT64_C(1) << dev->index;
    }
}

static struct kwork *kwork_new(struct kube *s, const struct backend_launch *l, int64_t started_ms)
{
    struct kwork *w = xcalloc(1, sizeof(*w));

    w->id = l->workload_id;
    w->project_id = l->project_id;
    kube_namespace_name(s->prefix, l->project_id, w->ns, sizeof(w->ns));
    w->n = l->n_replicas;
    w->r = xcalloc(w->n, sizeof(*w->r));
    for (size_t r = 0; r < w->n; r++) {
        kube_pod_name(s->prefix, l->workload_id, l->replicas[r].replica, w->r[r].name,
                      sizeof(w->r[r].name));
        w->r[r].exit_code = -1;
        w->r[r].finished_ms = -1;
        replica_devices(&w->r[r], &l->replicas[r]);
    }
    w->gen = s->next_gen++;
    w->launched_ms = started_ms;
    w->deadline_ms = l->max_runtime_ms >= 0 ? started_ms + l->max_runtime_ms : NEVER;
    w->kill_at_ms = NEVER;
    return w;
}

/*
 * Sends the creates of the work's pods and returns: their answers come
 * through poll(). A create refused should end the work as not started
 * (BACKEND_NOT_STARTED, with the apiserver's reason) and take back the
 * gang's other pods: on_reply.
 */
static int kube_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                       struct error_info *ei)
{
    struct kube *s = kube_of(b);
    struct kube_pod_settings ps = {s->prefix, s->default_image, s->tolerate, s->n_tolerate};
    struct kwork *w;
    int rc;

    if ((rc = backend_check_launch(l, ei)) < 0)
        return rc;
    if (l->n_replicas > KUBE_MAX_REPLICAS) /* a request's sub names the replica in 8 bits */
        return errinfo_set(ei, ERR_INVALID, "replicas", "at most %d replicas", KUBE_MAX_REPLICAS);
    if (backend_work_known(&s->work, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL, "workload %" PRId64 " is still running",
                           l->workload_id);
    w = kwork_new(s, l, now_ms);
    for (size_t r = 0; rc == 0 && r < w->n; r++)
        rc = kube_pod_json(&ps, l, r, &w->r[r].pod, ei);
    if (rc == 0)
        rc = ensure_namespace(s, w->ns, l->project_id, ei);
    if (rc < 0) {
        kwork_free(w);
        return rc;
    }
    for (size_t r = 0; r < w->n; r++) {
        w->r[r].creating = true;
        send_create(s, w, r);
    }
    backend_work_add(&s->work, w);
    s->now_ms = now_ms;
    kube_async_pump(s->async, on_reply, s); /* on their way now */
    return 0;
}

static int kube_stop(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms)
{
    struct kube *s = kube_of(b);
    struct kwork *w = backend_work_find(&s->work, workload_id, NULL);

    if (!w || w->reason == BACKEND_STOPPED)
        return 0;
    w->reason = BACKEND_STOPPED;
    w->kill_at_ms = now_ms + (grace_ms > 0 ? grace_ms : 0);
    delete_pods(s, w, grace_ms);
    w->delete_again_ms = now_ms + RETRY_MS;
    return 0;
}

static int kube_adopt(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                      int64_t now_ms, struct error_info *ei)
{
    struct kube *s = kube_of(b);
    struct kwork *w;
    size_t found = 0;
    int rc;

    if ((rc = backend_check_launch(l, ei)) < 0)
        return rc;
    if (started_ms > now_ms)
        return errinfo_set(ei, ERR_INVALID, NULL, "started in the future");
    if (backend_work_known(&s->work, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL, "workload %" PRId64 " is known already",
                           l->workload_id);
    w = kwork_new(s, l, started_ms);
    backend_work_add(&s->work, w);
    s->now_ms = now_ms;
    w->started_said = true; /* running before: its start was reported by the daemon before */
    for (size_t r = 0; r < w->n; r++) {
        char path[256];
        long status;
        json_t *pod = NULL;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", w->ns, w->r[r].name);
        rc = kube__request(s, "GET", path, NULL, 200, 404, &status, &pod, ei);
        if (rc < 0) {
            kwork_free(backend_work_take(&s->work, s->work.n - 1));
            return rc;
        }
        if (status == 404) {
            w->r[r].gone = true;
        } else {
            kube__on_pod(s, pod, false);
            found++;
        }
        json_decref(pod);
    }
    for (size_t r = 0; r < w->n; r++)
        if (!w->r[r].ran)
            w->started_said = false; /* still starting: its start is to come */
    if (found == 0) {
        struct backend_event ev = {.workload_id = w->id, .at_ms = now_ms, .how = BACKEND_LOST};
        snprintf(ev.message, sizeof(ev.message), "none of its pods is left in the cluster");
        backend_ends_push(&s->work.done, &ev);
        kwork_free(backend_work_take(&s->work, s->work.n - 1));
    }
    return 0;
}

/* Every item of a list, page by page (limit/continue). */
static int list_all(struct kube *s, const char *path, json_t **ret, struct error_info *ei)
{
    json_t *all = json_array();
    char cont[1024] = "";
    int rc = 0;

    do {
        char url[2048];
        json_t *ans = NULL;
        const char *next;
        snprintf(url, sizeof(url), "%s%slimit=500%s%s", path, strchr(path, '?') ? "&" : "?",
                 cont[0] ? "&continue=" : "", cont);
        rc = kube__request(s, "GET", url, NULL, 200, 0, NULL, &ans, ei);
        if (rc < 0)
            break;
        json_array_extend(all, json_object_get(ans, "items"));
        next = json_string_value(json_object_get(json_object_get(ans, "metadata"), "continue"));
        /* continue tokens are base64url: safe in a query as they are */
        snprintf(cont, sizeof(cont), "%s", next && strlen(next) < sizeof(cont) ? next : "");
        json_decref(ans);
    } while (cont[0]);
    if (rc < 0) {
        json_decref(all);
        return rc;
    }
    *ret = all;
    return 0;
}

static int kube_sweep(struct backend *b, int64_t *ids, size_t max, size_t *ret_n)
{
    struct kube *s = kube_of(b);
    char path[256], sel[128];
    json_t *items = NULL, *p;
    struct error_info ei = {0};
    size_t i, n = 0;
    int rc;

    *ret_n = 0;
    kube__label_selector(s, sel, sizeof(sel));
    snprintf(path, sizeof(path), "/api/v1/pods?%s", sel);
    rc = list_all(s, path, &items, &ei);
    if (rc < 0) {
        log_warn("kubernetes: could not look for pods to sweep", "error", ei.message);
        return rc;
    }
    json_array_foreach(items, i, p)
    {
        struct kube_pod_state st;
        json_t *meta = json_object_get(p, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        bool seen = false;
        kube_pod_state_of(p, &st);
        if (!name || !ns || st.deleting || backend_work_known(&s->work, st.workload_id))
            continue;
        if (delete_pod(s, ns, name, grace_seconds(s->timeout_grace_ms), &ei) < 0)
            log_warn("kubernetes: could not delete a stray pod", "pod", name, "error", ei.message);
        for (size_t k = 0; k < n && k < max; k++)
            seen |= ids[k] == st.workload_id;
        if (!seen) {
            if (n < max)
                ids[n] = st.workload_id;
            n++;
        }
    }
    json_decref(items);
    *ret_n = n;
    return 0;
}

/* ---- discovery ---- */

static int kube_discover(struct backend *b, int64_t now_ms, bool fleet_loaded, struct arena *a,
                         struct backend_fleet_report *ret, struct error_info *ei)
{
    struct kube *s = kube_of(b);
    json_t *nodes = NULL, *others = NULL;
    char path[256];
    int rc;

    (void)now_ms;
    (void)fleet_loaded;
    /* running or pending pods that are not this daemon's hold GPUs too */
    snprintf(path, sizeof(path),
             "/api/v1/pods?fieldSelector=status.phase%%21%%3DSucceeded%%2Cstatus.phase%%21%%3D"
             "Failed&labelSelector=" KUBE_LABEL_INSTANCE "%%21%%3D%s",
             s->instance);
    rc = list_all(s, "/api/v1/nodes", &nodes, ei);
    if (rc == 0)
        rc = list_all(s, path, &others, ei);
    if (rc == 0)
        rc = kube_nodes_report(nodes, others, s->tolerate, s->n_tolerate, a, ret);
    json_decref(nodes);
    json_decref(others);
    return rc < 0 ? rc : 1;
}

/* ---- devices: dcgm-exporter's pod labels ---- */

/* Each reading of a whole GPU that one of our followed pods holds marks its index (seen_mask). */
static void mark_seen(struct kube *s)
{
    for (size_t k = 0; k < s->pod_gpus.n; k++) {
        const struct inv_reading *g = &s->pod_gpus.v[k];
        int64_t wid;
        int32_t rep;
        struct kwork *w;
        if (g->mig_instance >= 0 || g->index < 0 || g->index >= BACKEND_MAX_NODE_DEVICES ||
            !kube_pod_of_name(s->prefix, g->pod, &wid, &rep) ||
            !(w = backend_work_find(&s->work, wid, NULL)) || (size_t)rep >= w->n ||
            strcmp(g->namespace_, w->ns) != 0)
            continue;
        w->r[rep].seen_mask |= UINT64_C(1) << g->index;
    }
}

/*
 * After a new dcgm-exporter run: a device report for each followed replica
 * whose pod holds as many GPUs as it asked for, on other indices than those
 * last said. A partial view (a series missing from one scrape) says nothing.
 */
static void gather_devices(struct kube *s)
{
    uint64_t runs;
    size_t n;

    if (!s->collector || s->n_devs > 0)
        return; /* none, or the last reports are still to be taken */
    n = collector_pod_gpus(s->collector, s->pod_runs, &s->pod_gpus, &runs);
    s->pod_runs = runs;
    if (n == 0)
        return; /* nothing new, or no pod named */
    for (size_t i = 0; i < s->work.n; i++) {
        struct kwork *w = s->work.items[i];
        for (size_t r = 0; r < w->n; r++)
            w->r[r].seen_mask = 0;
    }
    mark_seen(s);
    for (size_t i = 0; i < s->work.n; i++) {
        struct kwork *w = s->work.items[i];
        for (size_t r = 0; r < w->n; r++) {
            struct kreplica *p = &w->r[r];
            struct backend_devices *d;
            if (p->n_gpus == 0 || p->seen_mask == p->said_mask ||
                __builtin_popcountll(p->seen_mask) != p->n_gpus)
                continue;
            p->said_mask = p->seen_mask;
            ALLOC_GROW(s->devs, s->n_devs + 1, s->cap_devs);
            d = &s->devs[s->n_devs++];
            memset(d, 0, sizeof(*d));
            d->workload_id = w->id;
            snprintf(d->node, sizeof(d->node), "%s", p->node);
            for (int32_t x = 0; x < BACKEND_MAX_NODE_DEVICES; x++)
                if (p->seen_mask & (UINT64_C(1) << x))
                    d->indices[d->n_indices++] = x;
        }
    }
}

static size_t kube_take_devices(struct backend *b, struct backend_devices *out, size_t max)
{
    struct kube *s = kube_of(b);
    size_t n;

    gather_devices(s);
    n = s->n_devs < max ? s->n_devs : max;
    if (n == 0)
        return 0;
    memcpy(out, s->devs, n * sizeof(*out));
    memmove(s->devs, s->devs + n, (s->n_devs - n) * sizeof(*out));
    s->n_devs -= n;
    return n;
}

/* Replica 0's pod: one log whose offsets stay put while it grows, as the API follows it. */
static int kube_log_reader(struct backend *b, int64_t workload_id, struct backend_log **ret,
                           struct error_info *ei)
{
    struct kube *s = kube_of(b);
    struct kwork *w = backend_work_find(&s->work, workload_id, NULL);

    if (!w || w->n == 0)
        return errinfo_set(ei, ERR_NOT_FOUND, NULL, "no pod of workload %" PRId64, workload_id);
    *ret = kube_log_new(s->kubeconfig, w->ns, w->r[0].name);
    return 0;
}

static size_t kube_take_started(struct backend *b, struct backend_started *out, size_t max)
{
    struct kube *s = kube_of(b);
    size_t n = s->n_started < max ? s->n_started : max;

    if (n == 0)
        return 0;
    memcpy(out, s->started, n * sizeof(*out));
    memmove(s->started, s->started + n, (s->n_started - n) * sizeof(*out));
    s->n_started -= n;
    return n;
}

/* Whether a create refused for a moment waits to be sent again (create_again). */
static bool creates_waiting(const struct kube *s)
{
    for (size_t i = 0; i < s->work.n; i++) {
        const struct kwork *w = s->work.items[i];
        for (size_t r = 0; r < w->n; r++)
            if (w->r[r].create_again_ms)
                return true;
    }
    return false;
}

/*
 * Lets the pod creates and deletes on their way finish, FREE_DRAIN_MS at
 * most: a daemon stopped right after a launch would otherwise leave no pod,
 * and its next start would find the work lost. A create refused now ends
 * nothing that anyone hears of (no poll follows): the next start's adopt
 * finds the pods that were made, and its sweep deletes strays.
 */
static void drain(struct kube *s)
{
    int64_t until = time_mono_ms() + FREE_DRAIN_MS;

    while (kube_async_pending(s->async) > 0 || creates_waiting(s)) {
        if (time_mono_ms() >= until) {
            char n[24];
            snprintf(n, sizeof(n), "%zu", kube_async_pending(s->async));
            log_warn("kubernetes: requests still unanswered when the backend stopped; dropped",
                     "requests", n);
            return;
        }
        s->now_ms = time_now_ms();
        create_again(s, s->now_ms);
        kube_async_pump(s->async, on_reply, s);
        kube_async_wait(s->async, 10);
    }
}

static void kube_free(struct backend *b)
{
    struct kube *s;

    if (!b)
        return;
    s = kube_of(b);
    kube_watch_stop(&s->watch);
    if (s->async)
        drain(s);
    kube_async_free(s->async);
    for (size_t i = 0; i < s->work.n; i++)
        kwork_free(s->work.items[i]);
    backend_work_release(&s->work);
    for (size_t i = 0; i < s->n_namespaces; i++)
        free(s->namespaces[i]);
    free(s->namespaces);
    free(s->started);
    free(s->devs);
    free(s->kubeconfig);
    inv_readings_release(&s->pod_gpus);
    kube_client_free(s->k);
    free(s->default_image);
    free(s->tolerate_buf);
    free(s);
}

static const struct backend_ops kube_ops = {
    .name = "kubernetes",
    .title = "Kubernetes",
    .launch = kube_launch,
    .stop = kube_stop,
    .poll = kube_poll,
    .next_event_ms = kube_next_event_ms,
    .adopt = kube_adopt,
    .free = kube_free,
    .look_ms = KUBE_LOOK_MS,
    .discover = kube_discover,
    .sweep = kube_sweep,
    .take_started = kube_take_started,
    .take_devices = kube_take_devices,
    .log_reader = kube_log_reader,
};

/* The apiserver answers, trusts us, and lets us read nodes and pods. */
static int check_access(struct kube *s, struct error_info *ei)
{
    json_t *v = NULL;
    char sel[128], path[256];
    int rc = kube__request(s, "GET", "/version", NULL, 200, 0, NULL, &v, ei);

    json_decref(v);
    if (rc < 0)
        return rc;
    rc = kube__request(s, "GET", "/api/v1/nodes?limit=1", NULL, 200, 0, NULL, NULL, ei);
    if (rc < 0)
        return rc;
    kube__label_selector(s, sel, sizeof(sel));
    snprintf(path, sizeof(path), "/api/v1/pods?limit=1&%s", sel);
    return kube__request(s, "GET", path, NULL, 200, 0, NULL, NULL, ei);
}

struct backend *backend_kube_new(int64_t cluster_id, const struct kube_options *opt,
                                 struct error_info *ei)
{
    struct kube *s = xcalloc(1, sizeof(*s));
    const char *tol = opt->tolerate ? opt->tolerate : "nvidia.com/gpu";
    size_t n;

    s->b.ops = &kube_ops;
    s->b.cluster_id = cluster_id;
    s->b.impl = s;
    n = strlen(opt->instance_prefix ? opt->instance_prefix : "");
    if (n < 8 || n >= sizeof(s->prefix) || opt->instance_prefix[n - 1] != '-') {
        errinfo_set(ei, ERR_INVALID, NULL, "kubernetes: bad instance prefix");
        kube_free(&s->b);
        return NULL;
    }
    snprintf(s->prefix, sizeof(s->prefix), "%s", opt->instance_prefix);
    snprintf(s->instance, sizeof(s->instance), "%.*s", (int)(n - 1), opt->instance_prefix);
    s->default_image = xstrdup(opt->default_image ? opt->default_image : "");
    s->collector = opt->collector;
    s->kubeconfig = xstrdup(opt->kubeconfig ? opt->kubeconfig : "");
    inv_readings_init(&s->pod_gpus, 0);
    s->timeout_grace_ms = opt->timeout_grace_ms > 0 ? opt->timeout_grace_ms : 0;
    s->tolerate_buf = xstrdup(tol);
    for (char *p = s->tolerate_buf, *save = NULL, *t; (t = strtok_r(p, ", ", &save)); p = NULL)
        if (s->n_tolerate < MAX_TOLERATE)
            s->tolerate[s->n_tolerate++] = t;
    if (kube_client_new(opt->kubeconfig, &s->k, ei) < 0 || check_access(s, ei) < 0) {
        kube_free(&s->b);
        return NULL;
    }
    s->async = kube_async_new(s->k);
    return &s->b;
}
