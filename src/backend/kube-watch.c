/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-watch.c: what the Kubernetes backend learns of its pods. A list of
 * this daemon's pods (label gpuaas.io/instance) first, for its
 * resourceVersion; then a watch from there with bookmarks. A closed watch
 * is started again from the last resourceVersion seen; a 410 Gone (history
 * compacted) or an ERROR event lists again. Each pod's phase, exit code and
 * end go into its workload's record (kube-state.h), where kube.c's poll()
 * reads the ends.
 */
#include "base/common.h"

#include "backend/kube-state.h"
#include "base/log.h"

/* ---- what pods say ---- */

/* Once every pod of w has run, the start is reported (take_started), once. */
static void check_started(struct kube *s, struct kwork *w)
{
    if (w->started_said || w->reason)
        return;
    for (size_t r = 0; r < w->n; r++)
        if (!w->r[r].ran)
            return;
    w->started_said = true;
    ALLOC_GROW(s->started, s->n_started + 1, s->cap_started);
    s->started[s->n_started++] = (struct backend_started){.workload_id = w->id, .at_ms = s->now_ms};
}

void kube__on_pod(struct kube *s, json_t *pod, bool deleted)
{
    struct kube_pod_state st;
    struct kwork *w;
    struct kreplica *r;

    kube_pod_state_of(pod, &st);
    if (st.workload_id < 0 || !(w = backend_work_find(&s->work, st.workload_id, NULL)) ||
        (size_t)st.replica >= w->n)
        return; /* not one we follow: the start-up sweep deals with strays */
    r = &w->r[st.replica];
    r->listed = true;
    if (deleted)
        r->gone = true;
    if (r->phase == KUBE_POD_ENDED || (deleted && st.phase != KUBE_POD_ENDED))
        return; /* the first end stands; a pod gone unended keeps what it last said */
    r->phase = st.phase;
    if (st.stuck && !w->reason) {
        /* it would wait forever on its GPUs: the work ends, not started, and its pods go */
        snprintf(w->why, sizeof(w->why), "its pod %.60s cannot start: %.110s", r->name, st.message);
        kube__not_started(s, w);
        return;
    }
    if (st.phase == KUBE_POD_ENDED) {
        r->exit_code = st.exit_code;
        r->finished_ms = st.finished_ms;
        snprintf(r->message, sizeof(r->message), "%s", st.message);
    }
    /* an exit code means its container ran, however briefly */
    r->ran |= st.phase == KUBE_POD_RUNNING || (st.phase == KUBE_POD_ENDED && st.exit_code >= 0);
    check_started(s, w);
}

/* The apiserver answered: say so once after trouble. */
static void healthy(struct kube *s)
{
    if (s->said_broken)
        log_info("kubernetes: following the pods again");
    s->said_broken = false;
}

static void on_event(void *arg, json_t *ev)
{
    struct kube *s = arg;
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

    if (!type)
        return;
    healthy(s);
    if (strcmp(type, "ERROR") == 0) {
        /* 410 Gone (the history was compacted) or another failure: list again */
        log_info("kubernetes watch: the apiserver ended it; listing again", "code",
                 json_string_value(json_object_get(obj, "reason")));
        s->rv[0] = '\0';
        return;
    }
    if (rv)
        snprintf(s->rv, sizeof(s->rv), "%s", rv);
    if (strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0)
        kube__on_pod(s, obj, false);
    else if (strcmp(type, "DELETED") == 0)
        kube__on_pod(s, obj, true);
}

/* Lists our pods, brings every record up to date, and notes the resourceVersion. */
static int list_pods(struct kube *s, struct error_info *ei)
{
    char path[256], sel[128];
    json_t *ans = NULL, *items, *p;
    size_t i;
    int rc;

    kube__label_selector(s, sel, sizeof(sel));
    snprintf(path, sizeof(path), "/api/v1/pods?%s", sel);
    rc = kube__request(s, "GET", path, NULL, 200, 0, NULL, &ans, ei);
    if (rc < 0)
        return rc;
    items = json_object_get(ans, "items");
    /* a pod we follow that the list lacks is gone (one still being made is not there yet) */
    for (size_t k = 0; k < s->work.n; k++) {
        struct kwork *w = s->work.items[k];
        for (size_t r = 0; r < w->n; r++)
            w->r[r].listed = false;
    }
    json_array_foreach(items, i, p)
    {
        kube__on_pod(s, p, false);
    }
    for (size_t k = 0; k < s->work.n; k++) {
        struct kwork *w = s->work.items[k];
        for (size_t r = 0; r < w->n; r++)
            w->r[r].gone |= !w->r[r].listed && !w->r[r].creating;
    }
    healthy(s);
    snprintf(s->rv, sizeof(s->rv), "%s",
             json_string_value(json_object_get(json_object_get(ans, "metadata"), "resourceVersion"))
                 ?: "");
    json_decref(ans);
    return 0;
}

static void say_broken(struct kube *s, const struct error_info *ei, int64_t now_ms)
{
    if (!s->said_broken)
        log_warn("kubernetes: cannot follow the pods; trying again every second", "error",
                 ei->message[0] ? ei->message : "the watch ended");
    s->said_broken = true;
    s->retry_at_ms = now_ms + RETRY_MS;
}

/* Keeps the watch going: lists when needed, starts it again when it ended, reads it. */
void kube__follow(struct kube *s, int64_t now_ms)
{
    struct error_info ei = {0};
    char path[320], sel[128];

    if (s->watch.open) {
        if (kube_watch_pump(&s->watch, on_event, s, &ei) == 1 && s->rv[0])
            return; /* following */
        if (s->watch.status == 410)
            s->rv[0] = '\0'; /* too old a resourceVersion: list again */
        kube_watch_stop(&s->watch);
        if (ei.code) {
            say_broken(s, &ei, now_ms);
            return;
        }
    }
    if (now_ms < s->retry_at_ms)
        return;
    if (!s->rv[0] && list_pods(s, &ei) < 0) {
        say_broken(s, &ei, now_ms);
        return;
    }
    kube__label_selector(s, sel, sizeof(sel));
    snprintf(path, sizeof(path),
             "/api/v1/pods?%s&watch=1&allowWatchBookmarks=true&resourceVersion=%s"
             "&timeoutSeconds=%d",
             sel, s->rv, 240 + (int)(now_ms % 120));
    if (kube_watch_start(s->k, &s->watch, path, &ei) < 0) {
        say_broken(s, &ei, now_ms);
        return;
    }
    kube_watch_pump(&s->watch, on_event, s, &ei);
}
