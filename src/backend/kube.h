/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube.h: the Kubernetes backend (docs/kubernetes-backend.md). gpuaas is
 * the scheduler: each replica is one Pod, created with spec.nodeName set
 * to the node gpuaas chose, in a namespace per project that gpuaas makes,
 * labelled with this daemon's instance, the workload and the replica.
 * It speaks to the apiserver itself (libcurl, jansson); a cluster's
 * endpoint is a kubeconfig file.
 *
 * Its rules, for the engine (backend.h's table):
 *  - launch: creates the namespace when missing and every replica's pod;
 *    when one cannot be created, those made are deleted at once and the
 *    launch fails (a gang starts whole or not at all). ERR_INVALID: no
 *    replicas, a device share below a whole GPU, an image-less launch
 *    without a default image; ERR_CONFLICT: the id is still known;
 *    ERR_UNAVAILABLE: the apiserver refused or cannot be reached.
 *  - stop: deletes every pod with gracePeriodSeconds = the grace (rounded
 *    up to whole seconds); the work ends when the pods are really gone.
 *  - poll: learns of ends from a watch of this daemon's pods (bookmarks,
 *    410 Gone: list again, reconnect). A workload ends once all its pods
 *    have ended or are gone: EXITED with the lowest-numbered replica's
 *    non-zero exit code (a message says OOMKilled, Evicted, ...), STOPPED
 *    after stop(), TIMEOUT at its max runtime, LOST when a pod was deleted
 *    by someone else (the message names it). Ended pods are deleted then.
 *  - take_started: a launch whose every pod has been seen Running (or ended
 *    after its container ran), once, at the poll that saw it; not for
 *    adopted work whose pods all ran already.
 *  - adopt: finds the pods by name; none left is LOST.
 *  - free: lets the creates and deletes on their way finish (5 s at most),
 *    so that work launched just before a daemon stops is adopted, not lost.
 *  - sweep: deletes this daemon's pods that no workload claims.
 *  - discover: nodes and their GPUs from Node objects.
 *  - take_devices: the GPU indices dcgm-exporter says each whole-GPU
 *    replica's pod holds, when they differ from those last said (first:
 *    gpuaas's), and as many as it asked for.
 */
#ifndef GPUAAS_BACKEND_KUBE_H
#define GPUAAS_BACKEND_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "base/err.h"

struct collector;

/* What the backend reads of a kubeconfig: its current context's cluster and user. */
struct kube_config {
    char *server;  /* https://host:port, no trailing '/' */
    char *ca_file; /* NULL: none (ca_data, or the system's CAs) */
    char *ca_data; /* PEM, decoded from certificate-authority-data; NULL: none */
    size_t ca_len;
    bool insecure;              /* insecure-skip-tls-verify */
    char *token;                /* bearer token; NULL: none */
    char *token_file;           /* re-read when the apiserver refuses the token */
    char *cert_file, *key_file; /* client certificate; NULL: none */
    char *cert_data, *key_data; /* PEM, decoded; NULL: none */
    size_t cert_len, key_len;
    char *context; /* the context's name, for messages */
};

/*
 * Reads the kubeconfig at path (YAML or JSON, under 1 MiB): its
 * current-context, that context's cluster and user. Relative file names in
 * it are taken from the kubeconfig's directory, as kubectl does. Errors
 * (ERR_INVALID, ei names what is wrong): unreadable, not YAML, no current
 * context, a missing cluster or user entry, no server or not https, an
 * exec or auth-provider user (credential plugins are not run), bad base64.
 */
int kube_config_load(const char *path, struct kube_config **ret, struct error_info *ei);
void kube_config_free(struct kube_config *c);

struct kube_options {
    const char *kubeconfig; /* the cluster's endpoint */
    /* The image of work that names none; NULL or "": such work is refused. */
    const char *default_image;
    /*
     * Taint keys gpuaas's pods tolerate (comma-separated): a node with a
     * NoSchedule or NoExecute taint not listed here is drained (NoExecute:
     * down). Default "nvidia.com/gpu".
     */
    const char *tolerate;
    /* Between SIGTERM and SIGKILL when work reaches its max runtime. */
    int64_t timeout_grace_ms;
    /* Names pods and namespaces and labels them (backend_instance_prefix): "gpuaas-<8 hex>-" */
    const char *instance_prefix;
    /*
     * The daemon's GPU telemetry: where its dcgm-exporter sources say which
     * GPU indices a pod of ours holds (labels pod, namespace, gpu), they are
     * reported (take_devices). Not owned; NULL: allocations stay where
     * gpuaas put them.
     */
    struct collector *collector;
};

/*
 * Checks the kubeconfig and the apiserver (its /version, and that this
 * user may list nodes and pods) and makes the backend. NULL with ei:
 * ERR_INVALID for a bad kubeconfig, ERR_UNAVAILABLE when the apiserver
 * cannot be reached, its certificate is not trusted, or it refuses the
 * credentials (each said in one line).
 */
struct backend *backend_kube_new(int64_t cluster_id, const struct kube_options *opt,
                                 struct error_info *ei);

#endif
