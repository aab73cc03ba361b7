/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-logs.c: a pod's log, read for the API's logs route (backend.h's
 * struct backend_log). The reader is used from an API thread, never the
 * engine's, so it holds copies of what it needs and makes its own
 * connection from the kubeconfig at each read (a rotated token file is read
 * then too): the backend's client belongs to the engine's thread.
 */
#include "base/common.h"

#include "backend/kube-int.h"
#include "base/buf.h"

/* The most of a pod's log read at once (limitBytes): the API reads it from its start. */
#define LOG_MAX (16 << 20)

struct kube_log {
    struct backend_log l; /* first: the caller's handle */
    char *kubeconfig;
    char path[320];
};

/* limitBytes: the apiserver cuts the log, so a long one is not sent whole to be dropped. */
static int log_read(struct backend_log *l, struct buf *out, struct error_info *ei)
{
    struct kube_log *kl = (struct kube_log *)l;
    struct kube_client *k;
    long status = 0;
    size_t before = out->len;
    int rc = kube_client_new(kl->kubeconfig, &k, ei);

    if (rc < 0)
        return rc;
    rc = kube_get_text(k, kl->path, &status, out, ei);
    if (rc == 0 && status != 200) {
        out->len = before;
        /*
         * 404: the pod is gone (its work ended); 400: its container is not
         * running yet ("waiting to start"). Either way: no output yet.
         */
        if (status != 404 && status != 400) {
            char msg[200];
            kube_answer_message(status, NULL, msg, sizeof(msg));
            rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not read the pod's log: %s", msg);
        }
    }
    if (out->data)
        out->data[out->len] = '\0';
    kube_client_free(k);
    return rc;
}

static void log_free(struct backend_log *l)
{
    struct kube_log *kl = (struct kube_log *)l;

    if (kl) {
        free(kl->kubeconfig);
        free(kl);
    }
}

struct backend_log *kube_log_new(const char *kubeconfig, const char *ns, const char *pod)
{
    struct kube_log *kl = xcalloc(1, sizeof(*kl));

    kl->l.read = log_read;
    kl->l.free = log_free;
    kl->kubeconfig = xstrdup(kubeconfig);
    snprintf(kl->path, sizeof(kl->path),
             "/api/v1/namespaces/%s/pods/%s/log?container=work&limitBytes=%d", ns, pod, LOG_MAX);
    return &kl->l;
}
