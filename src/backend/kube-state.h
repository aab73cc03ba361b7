/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kube-state.h: the Kubernetes backend's record of its work, shared by the
 * files that keep it: kube.c (the backend's table: launch, stop, ends,
 * adoption, the sweep) and kube-watch.c (what the watch of our pods says).
 * Only the engine's thread touches it.
 */
#ifndef GPUAAS_BACKEND_KUBE_STATE_H
#define GPUAAS_BACKEND_KUBE_STATE_H

#include "backend/kube-int.h"
#include "backend/work.h"
#include "collect/collector.h"

#define NEVER INT64_MAX
/* After a failed list or watch, or a failed delete, this long before trying again. */
#define RETRY_MS 1000
#define MAX_TOLERATE 16

struct kreplica {
    char name[96];
    enum kube_pod_phase phase;
    bool gone;          /* no longer in the cluster */
    bool deleted_by_us; /* we asked for its deletion */
    bool listed;        /* in the list being read (list_pods) */
    bool ran;           /* seen Running (or ended after its container ran) */
    /* devices (take_devices): */
    char node[128];     /* where it was placed */
    int n_gpus;         /* whole GPUs it has; 0 (MIG slices, shares): not followed */
    uint64_t said_mask; /* the GPU indices last reported or placed on, one bit each */
    uint64_t seen_mask; /* those dcgm-exporter says now (gather_devices) */
    int exit_code;
    int64_t finished_ms;
    char message[160];
    /* asynchronous requests (kube_async_send): */
    bool creating;           /* its create was sent, not yet answered */
    bool delete_sent;        /* a delete is on its way */
    json_t *pod;             /* what to create, until it is made */
    int create_tries;        /* creates refused for a moment (a new namespace) */
    int64_t create_again_ms; /* such a refusal: send it again then; 0: none */
};

struct kwork {
    int64_t id; /* workload; first: backend/work.h */
    int64_t project_id;
    char ns[96];
    struct kreplica *r;
    size_t n;
    int64_t launched_ms;
    int64_t deadline_ms;     /* max runtime; NEVER: none */
    enum backend_end reason; /* 0, STOPPED or TIMEOUT once asked to end */
    int64_t kill_at_ms;      /* end of the grace given */
    int64_t delete_again_ms; /* asked to end, a delete failed: when to ask again */
    char why[200];           /* BACKEND_NOT_STARTED: what went wrong */
    uint32_t gen;            /* this launch (or adoption): its requests' answers name it */
    bool started_said;       /* every pod ran: reported (take_started), or adopted so */
};

struct kube {
    struct backend b;
    struct kube_client *k;
    char *kubeconfig;  /* the endpoint, for log readers' own connections */
    char prefix[64];   /* gpuaas-<hex>- */
    char instance[64]; /* gpuaas-<hex> */
    char *default_image;
    char *tolerate_buf;
    const char *tolerate[MAX_TOLERATE];
    size_t n_tolerate;
    int64_t timeout_grace_ms;
    struct backend_work work;
    struct kube_watch watch;
    struct kube_async *async; /* pod creates and deletes in flight */
    uint32_t next_gen;        /* of the next kwork */
    int64_t now_ms;           /* of the poll or launch under way */
    char rv[64];              /* resourceVersion to watch from; "" until listed */
    int64_t retry_at_ms;      /* no list or watch before this */
    bool said_broken;         /* the watch's trouble was logged */
    char **namespaces;        /* made (or found) already */
    size_t n_namespaces, cap_namespaces;
    struct backend_started *started; /* start reports not yet taken, oldest first */
    size_t n_started, cap_started;
    struct collector *collector;  /* dcgm-exporter's pod labels; NULL: none */
    uint64_t pod_runs;            /* the collector's runs seen */
    struct inv_readings pod_gpus; /* their readings, reused */
    struct backend_devices *devs; /* device reports not yet taken, oldest first */
    size_t n_devs, cap_devs;
};

_Static_assert(offsetof(struct kwork, id) == 0, "backend/work.h: the id comes first");

static inline struct kube *kube_of(struct backend *b)
{
    return b->impl;
}

/* ---- kube.c ---- */

/* A request whose answer must have one of the statuses ok1/ok2 (0: none). */
int kube__request(struct kube *s, const char *method, const char *path, json_t *body, long ok1,
                  long ok2, long *ret_status, json_t **ret, struct error_info *ei);
/* "labelSelector=gpuaas.io/instance=<this daemon>", escaped for a query. */
void kube__label_selector(const struct kube *s, char *out, size_t size);
/* w ends as not started (w->why says why): its pods go at once, gang and all. */
void kube__not_started(struct kube *s, struct kwork *w);

/* ---- kube-watch.c ---- */

/*
 * Keeps the watch of our pods going (poll() calls it): lists when needed,
 * starts it again when it ended, and brings the records up to date with
 * what it says.
 */
void kube__follow(struct kube *s, int64_t now_ms);
/* What one of our pods says now (deleted: it is gone); pods of no record are left alone. */
void kube__on_pod(struct kube *s, json_t *pod, bool deleted);

#endif
