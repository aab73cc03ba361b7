/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-int.h: what the files of the Kubernetes backend share (kube.c the
 * table and kube-watch.c its pods' news, over kube-state.h; kube-client.c
 * the apiserver connection, kube-pod.c pods in and out, kube-nodes.c
 * discovery); kube.h is the public side. The pod and
 * node functions are pure (JSON in, values out) so tests check them
 * without an apiserver.
 */
#ifndef GPUAAS_BACKEND_KUBE_INT_H
#define GPUAAS_BACKEND_KUBE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>

#include "backend/backend.h"
#include "backend/kube.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

/* Labels on everything gpuaas makes in a cluster. */
#define KUBE_LABEL_INSTANCE "gpuaas.io/instance"
#define KUBE_LABEL_WORKLOAD "gpuaas.io/workload"
#define KUBE_LABEL_REPLICA "gpuaas.io/replica"
#define KUBE_LABEL_PROJECT "gpuaas.io/project"
/* The user's expected runtime as a Go duration ("120s"): information, nothing enforces it. */
#define KUBE_ANNOTATION_RUNTIME "gpuaas.io/expected-runtime"
#define KUBE_RESOURCE_GPU "nvidia.com/gpu"
#define KUBE_RESOURCE_MIG_PREFIX "nvidia.com/mig-"

/* ---- kube-client.c: requests to the apiserver ---- */

/* A file as stat() says it: a new token file is a new inode, size or mtime. */
struct kube_file_id {
    uint64_t ino;
    int64_t size, mtime_ns;
};

struct kube_client {
    struct kube_config *cfg;
    CURL *easy; /* one request at a time, the connection kept */
    char *auth; /* "Authorization: Bearer ..." or NULL */
    /* a token file: what it was when last read, and when it was last looked at */
    struct kube_file_id token_id;
    int64_t token_checked_ms; /* monotonic */
};

int kube_client_new(const char *kubeconfig, struct kube_client **ret, struct error_info *ei);
void kube_client_free(struct kube_client *k);

/*
 * One request: body (may be NULL) sent as JSON (or as content_type), the
 * answer parsed into *ret (NULL when it is not JSON; caller decrefs) and
 * its status into *ret_status. Fails only when no answer came
 * (ERR_UNAVAILABLE: the apiserver's address and curl's reason, a TLS
 * problem said as such); an HTTP error status is the caller's to judge.
 */
int kube_call(struct kube_client *k, const char *method, const char *path, const char *content_type,
              json_t *body, long *ret_status, json_t **ret, struct error_info *ei);

/*
 * A GET whose answer is not JSON (a pod's log): its bytes appended to out
 * (cut at out's maximum), its status into *ret_status. Errors as kube_call.
 */
int kube_get_text(struct kube_client *k, const char *path, long *ret_status, struct buf *out,
                  struct error_info *ei);

/* An error answer in a line: "HTTP 403: <the Status object's message>". */
void kube_answer_message(long status, json_t *ans, char *out, size_t size);

/*
 * Requests that do not wait for their answer (pod creates and deletes: on a
 * busy apiserver each takes milliseconds, and the engine's thread must not
 * spend a pass on them). They go out over the multi handle's connections,
 * at most KUBE_ASYNC_MAX at once, the rest queued in order; answers are
 * handed over by kube_async_pump(), called from poll().
 */
#define KUBE_ASYNC_MAX 64

struct kube_reply {
    int64_t tag; /* the caller's: what the request was for */
    int sub;
    long status;       /* 0: no answer (message says why) */
    json_t *answer;    /* the parsed body or NULL; the callback's to read, not to keep */
    char message[240]; /* why, when status is 0 or not 2xx */
};

struct kube_async;

/*
 * What a pod request is for, packed into kube_reply.sub (31 bits: 22 of the
 * launch's generation, 8 of replica, 1 of kind), so that an answer that
 * comes after its workload was launched again under the same id is known
 * for the launch before's (kube_req_same_gen compares the 22 bits kept).
 */
#define KUBE_MAX_REPLICAS 256
enum { KUBE_REQ_CREATE = 0, KUBE_REQ_DELETE = 1 };
struct kube_req {
    uint32_t gen; /* its low 22 bits */
    size_t replica;
    int kind;
};
int kube_req_sub(uint32_t gen, size_t replica, int kind); /* replica < KUBE_MAX_REPLICAS */
struct kube_req kube_req_of(int sub);
bool kube_req_same_gen(uint32_t gen, uint32_t sub_gen);

struct kube_async *kube_async_new(struct kube_client *k);
void kube_async_free(struct kube_async *a);
/* Queues a request (body may be NULL); its answer comes through a later pump. */
void kube_async_send(struct kube_async *a, const char *method, const char *path, json_t *body,
                     int64_t tag, int sub);
/* Moves the requests along and hands each answer that came to fn. */
void kube_async_pump(struct kube_async *a, void (*fn)(void *arg, const struct kube_reply *r),
                     void *arg);
/* Requests not yet answered. */
size_t kube_async_pending(const struct kube_async *a);
/* Sleeps until a request may have moved, ms at most: for a caller with nothing else to do. */
void kube_async_wait(struct kube_async *a, int ms);

/*
 * A watch: a streamed GET whose lines are events. Driven without blocking
 * by kube_watch_pump() from the engine's thread.
 */
struct kube_watch {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *headers;
    struct buf data; /* received, not yet split into lines */
    long status;     /* HTTP status, once known */
    bool open;
};

int kube_watch_start(struct kube_client *k, struct kube_watch *w, const char *path,
                     struct error_info *ei);
/*
 * Moves what has arrived and hands each complete event to fn. Returns 1
 * while the stream is open, 0 when it has ended (the server closed it, or
 * the transfer failed: *ei says how), to be started again.
 */
int kube_watch_pump(struct kube_watch *w, void (*fn)(void *arg, json_t *event), void *arg,
                    struct error_info *ei);
void kube_watch_stop(struct kube_watch *w);

/* ---- kube-pod.c: pods made from launches, and what a pod says ---- */

/* The namespace of a project's work: "<prefix>p<project>". */
void kube_namespace_name(const char *prefix, int64_t project_id, char *out, size_t size);
/* The pod of a replica: "<prefix><workload>-<replica>". */
void kube_pod_name(const char *prefix, int64_t workload_id, int32_t replica, char *out,
                   size_t size);

/* The workload and replica of a pod named by kube_pod_name with prefix; false for another name. */
bool kube_pod_of_name(const char *prefix, const char *name, int64_t *ret_workload,
                      int32_t *ret_replica);

struct kube_pod_settings {
    const char *prefix;        /* the instance prefix ("gpuaas-1a2b3c4d-") */
    const char *default_image; /* "" or NULL: none */
    const char *const *tolerate;
    size_t n_tolerate;
};

/*
 * The Pod of replica r of l, as JSON (caller decrefs). ERR_INVALID with ei
 * for what a pod cannot express: a device share below a whole GPU, no
 * image and no default image, no node.
 */
int kube_pod_json(const struct kube_pod_settings *s, const struct backend_launch *l, size_t r,
                  json_t **ret, struct error_info *ei);

enum kube_pod_phase {
    KUBE_POD_PENDING, /* created, not running yet */
    KUBE_POD_RUNNING,
    KUBE_POD_ENDED, /* Succeeded or Failed: exit_code and message say how */
};

struct kube_pod_state {
    int64_t workload_id; /* from its labels; -1 when not one of ours */
    int32_t replica;
    enum kube_pod_phase phase;
    bool deleting;       /* metadata.deletionTimestamp set */
    int exit_code;       /* ENDED: the main container's; -1 unknown */
    int64_t finished_ms; /* ENDED: when, from the container status; -1 unknown */
    char message[160];   /* ENDED other than exit 0: "OOMKilled", "Evicted: ..."; "" */
    /*
     * PENDING and never to start by itself: its container waits for an image
     * that cannot be pulled, or for a configuration that cannot be made
     * (ErrImagePull, ImagePullBackOff, InvalidImageName, ...); message says which.
     */
    bool stuck;
};

/* What a pod object says of itself. */
void kube_pod_state_of(json_t *pod, struct kube_pod_state *st);

/* ---- kube-logs.c: a pod's log ---- */

/* A reader of the work container's log of pod ns/pod (backend_log); freed with its free. */
struct backend_log *kube_log_new(const char *kubeconfig, const char *ns, const char *pod);

/* ---- kube-nodes.c: discovery from Node objects ---- */

/*
 * The node reports of a node list's items (strings in a): GPUs counted from
 * allocatable nvidia.com/gpu and nvidia.com/mig-<profile>, their class
 * from the nvidia.com/gpu.product label (and gpu.memory), state from the
 * Ready condition, spec.unschedulable and taints not tolerated. Nodes with
 * no GPU resource are left out; one whose GPU resources count 0 is
 * reported with no GPUs (those the store has turn down). used_by_others: per node, GPUs requested
 * by running pods gpuaas did not create (those GPUs are reported down).
 */
int kube_nodes_report(json_t *node_items, json_t *foreign_pods, const char *const *tolerate,
                      size_t n_tolerate, struct arena *a, struct backend_fleet_report *ret);

#endif
