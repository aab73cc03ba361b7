/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c: GET /metrics in the Prometheus text format (version 0.0.4), for
 * admins (Prometheus sends the token as a bearer credential). HTTP requests
 * and latencies are counted here as they are answered; GPUs by state, class
 * and cluster are read from the store at scrape time; the scheduler's
 * figures come from the engine (engine_metrics_write). Names follow the
 * Prometheus conventions: a gpuaas_ prefix, base units, _total counters.
 */
#include "base/common.h"

#include <stdatomic.h>

#include "api/api-int.h"
#include "base/metrics.h"
#include "engine/engine.h"

static const char *const methods[] = {"GET", "POST", "PATCH", "DELETE", "other"};
static const int codes[] = {200, 201, 202, 204, 301, 302, 400, 401, 403,
                            404, 405, 409, 413, 415, 429, 500, 503, 0 /* other */};
static const int64_t latency_bounds[] = {500,   1000,   2500,   5000,   10000,   25000,
                                         50000, 100000, 250000, 500000, 1000000, 2500000};

struct api_metrics {
    atomic_uint_fast64_t requests[ARRAY_SIZE(methods)][ARRAY_SIZE(codes)];
    struct metrics_histogram latency[ARRAY_SIZE(methods)];
};

struct api_metrics *api_metrics_new(void)
{
    struct api_metrics *m = xcalloc(1, sizeof(*m));
    for (size_t i = 0; i < ARRAY_SIZE(methods); i++)
        metrics_histogram_init(&m->latency[i], latency_bounds, ARRAY_SIZE(latency_bounds));
    return m;
}

void api_metrics_free(struct api_metrics *m)
{
    free(m);
}

void api_metrics_observe(struct api_metrics *m, const char *method, int status, int64_t us)
{
    size_t mi = 0, ci = 0;
    while (mi + 1 < ARRAY_SIZE(methods) && strcmp(methods[mi], method) != 0)
        mi++;
    while (ci + 1 < ARRAY_SIZE(codes) && codes[ci] != status)
        ci++;
    atomic_fetch_add_explicit(&m->requests[mi][ci], 1, memory_order_relaxed);
    metrics_histogram_observe(&m->latency[mi], us);
}

static int write_http(const struct api_metrics *m, struct buf *b)
{
    int rc = metrics_header(b, "gpuaas_http_requests_total", "counter",
                            "HTTP requests answered, by method and status code.");
    for (size_t mi = 0; mi < ARRAY_SIZE(methods); mi++) {
        for (size_t ci = 0; ci < ARRAY_SIZE(codes); ci++) {
            uint64_t n = atomic_load_explicit(&m->requests[mi][ci], memory_order_relaxed);
            char code[16];
            if (!n)
                continue;
            snprintf(code, sizeof(code), "%d", codes[ci]);
            rc |= metrics_sample(
                b, "gpuaas_http_requests_total",
                (const char *[]){"method", methods[mi], "code", codes[ci] ? code : "other", NULL},
                (int64_t)n);
        }
    }
    rc |= metrics_header(b, "gpuaas_http_request_duration_seconds", "histogram",
                         "Time from a request's arrival to its answer being queued, by method.");
    for (size_t mi = 0; mi < ARRAY_SIZE(methods); mi++)
        rc |=
            metrics_histogram_write(b, "gpuaas_http_request_duration_seconds",
                                    (const char *[]){"method", methods[mi], NULL}, &m->latency[mi]);
    return rc;
}

struct gpu_count {
    const char *state, *cls, *cluster;
    int64_t n;
};

static const char *name_of(const struct row *rows, size_t n, const struct resource_def *d,
                           int64_t id)
{
    const struct row *row = rows_find(rows, n, id);
    return row ? model_get(d, row, "name")->s : "";
}

/*
 * GPUs by state, class and cluster, from the store and the collectors: the
 * states of /v1/inventory (inventory_gpu_state), so both count alike.
 */
static int write_gpus(struct req *r, struct buf *b, struct error_info *ei)
{
    struct row *gpus, *nodes, *clusters, *classes, *allocs;
    size_t n_gpus, n_nodes, n_clusters, n_classes, n_allocs, n_counts = 0;
    struct gpu_count *counts;
    struct alloc_index held;
    int rc;

    if ((rc = req_list_all(r, &model_gpus, false, &gpus, &n_gpus, ei)) < 0 ||
        (rc = req_list_all(r, &model_nodes, false, &nodes, &n_nodes, ei)) < 0 ||
        (rc = req_list_all(r, &model_clusters, false, &clusters, &n_clusters, ei)) < 0 ||
        (rc = req_list_all(r, &model_gpu_classes, false, &classes, &n_classes, ei)) < 0 ||
        (rc = req_list_all(r, &model_allocations, true, &allocs, &n_allocs, ei)) < 0)
        return rc;
    counts = arena_calloc(&r->arena, n_gpus + 1, sizeof(*counts));
    alloc_index_build(r, allocs, n_allocs, &held);
    for (size_t i = 0; i < n_gpus; i++) {
        const struct row *g = &gpus[i];
        const struct row *node = rows_find(nodes, n_nodes, row_int(g, F_GPUS_NODE_ID));
        const struct value *cls = row_get(g, F_GPUS_GPU_CLASS_ID);
        const char *state, *cl = "", *cn = "";
        bool seen;
        if (node)
            cl = name_of(clusters, n_clusters, &model_clusters, row_int(node, F_NODES_CLUSTER_ID));
        if (!cls->null)
            cn = name_of(classes, n_classes, &model_gpu_classes, cls->i);
        state = inventory_gpu_state(r, g, node, alloc_index_find(&held, model_row_id(g)) != NULL,
                                    NULL, &seen);
        size_t k = 0;
        while (k < n_counts && (strcmp(counts[k].state, state) || strcmp(counts[k].cls, cn) ||
                                strcmp(counts[k].cluster, cl)))
            k++;
        if (k == n_counts)
            counts[n_counts++] = (struct gpu_count){state, cn, cl, 0};
        counts[k].n++;
    }
    rc = metrics_header(b, "gpuaas_gpus", "gauge",
                        "GPUs by state (allocated, busy, idle-allocated, free, draining, down, "
                        "mig), class and cluster.");
    for (size_t k = 0; k < n_counts; k++)
        rc |= metrics_sample(b, "gpuaas_gpus",
                             (const char *[]){"state", counts[k].state, "gpu_class", counts[k].cls,
                                              "cluster", counts[k].cluster, NULL},
                             counts[k].n);
    return rc ? ERR_TOO_LARGE : 0;
}

void metrics_route(struct req *r)
{
    struct error_info ei = {0};
    struct buf b;
    int rc;

    /* admins only (the route table): it spans every tenant */
    buf_init(&b, 64u << 20);
    rc = write_gpus(r, &b, &ei);
    if (rc >= 0 && r->api->opt.engine)
        rc = engine_metrics_write(r->api->opt.engine, &b);
    if (rc >= 0)
        rc = write_http(r->api->metrics, &b) ? ERR_TOO_LARGE : 0;
    if (rc < 0) {
        buf_release(&b);
        req_reply_error(r, rc, &ei);
        return;
    }
    r->status = 200;
    r->raw_len = b.len;
    r->raw = arena_strndup(&r->arena, b.data ? b.data : "", b.len);
    r->content_type = "text/plain; version=0.0.4; charset=utf-8";
    buf_release(&b);
}
