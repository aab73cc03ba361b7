/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collector.c: the collector thread (collector.h). Each source keeps its own
 * telemetry store, so that one source's missed scrape never counts against
 * GPUs another source reports, and a GPU's state is read from the source
 * that saw it last. Runs happen outside the lock; only ingesting a finished
 * run and reading take it.
 */
#include "base/common.h"

#include <curl/curl.h>
#include <pthread.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "collect/collector.h"

#define MAX_SOURCES 10
#define TICK_MS 200

enum kind { SRC_NVML, SRC_SMI, SRC_DCGM };

struct source {
    enum kind kind;
    char target[512]; /* library, program or URL */
    struct inv_sched sched;
    struct inv_tstore *ts;
    struct collector_source info;
    /*
     * The last good run's readings: NVML, nvidia-smi: all (this machine's
     * GPUs); dcgm-exporter: those a pod holds (collector_pod_gpus).
     */
    struct inv_readings last;
};

struct collector {
    struct collector_options opt;
    struct inv_class_config cls;
    struct source src[MAX_SOURCES];
    size_t n_src;
    char **allocated; /* sorted UUIDs of GPUs held now */
    size_t n_allocated;
    uint64_t local_runs; /* good runs of the NVML and nvidia-smi sources */
    uint64_t pod_runs;   /* good runs of the dcgm-exporter sources */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
};

void collector_options_init(struct collector_options *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->interval_ms = 10000;
    opt->timeout_ms = 5000;
    opt->window_ms = 30 * 60 * 1000;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void collector_set_allocated(struct collector *c, const char *const *uuids, size_t n)
{
    char **copy;
    if (!c)
        return;
    copy = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        copy[i] = xstrdup(uuids[i]);
    qsort(copy, n, sizeof(char *), cmp_str);
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_allocated; i++)
        free(c->allocated[i]);
    free(c->allocated);
    c->allocated = copy;
    c->n_allocated = n;
    pthread_mutex_unlock(&c->lock);
}

/* Whether an allocation holds the GPU (a MIG instance: its parent). Lock held. */
static bool held(const struct collector *c, const char *uuid)
{
    return c->n_allocated &&
           bsearch(&uuid, c->allocated, c->n_allocated, sizeof(char *), cmp_str) != NULL;
}

static int run_source(struct collector *c, struct source *s, struct inv_readings *out,
                      struct error_info *ei)
{
    switch (s->kind) {
    case SRC_NVML:
        return inv_nvml_collect(s->target, out, ei);
    case SRC_SMI:
        return inv_smi_collect(s->target, c->opt.timeout_ms, out, ei);
    case SRC_DCGM:
        return inv_scrape_dcgm(s->target, c->opt.timeout_ms, 0, out, ei);
    }
    return ERR_INVALID;
}

/* A dcgm-exporter run's readings that name a pod become s->last (for collector_pod_gpus). */
static void keep_pod_gpus(struct source *s, const struct inv_readings *rs)
{
    inv_readings_reset(&s->last);
    for (size_t k = 0; k < rs->n; k++) {
        struct inv_reading *r;
        if (rs->v[k].pod[0] &&
            inv_readings_get(&s->last, rs->v[k].uuid, rs->v[k].mig_instance, &r) == 0)
            *r = rs->v[k];
    }
}

static void run_due(struct collector *c, int64_t now)
{
    for (size_t i = 0; i < c->n_src; i++) {
        struct source *s = &c->src[i];
        struct inv_readings rs;
        struct error_info ei = {0};
        bool due;
        int n;

        pthread_mutex_lock(&c->lock);
        due = inv_sched_due(&s->sched, now);
        pthread_mutex_unlock(&c->lock);
        if (!due)
            continue;
        inv_readings_init(&rs, 0);
        n = run_source(c, s, &rs, &ei);
        pthread_mutex_lock(&c->lock);
        now = time_now_ms();
        if (n >= 0) {
            s->info.gpus = rs.n; /* before rs is swapped with the run before */
            for (size_t k = 0; k < rs.n; k++) {
                char key[INV_KEY_MAX];
                inv_reading_key(&rs.v[k], key, sizeof(key));
                inv_tstore_ingest(s->ts, key, now, &rs.v[k], held(c, rs.v[k].uuid));
            }
            inv_tstore_end_scrape(s->ts);
            if (s->kind != SRC_DCGM) { /* this machine's GPUs, for the local discovery */
                struct inv_readings t = s->last;
                s->last = rs;
                rs = t;
                c->local_runs++;
            } else {
                keep_pod_gpus(s, &rs);
                c->pod_runs++;
            }
            inv_sched_ok(&s->sched, now);
            s->info.error[0] = '\0';
        } else {
            bool first = s->sched.failures == 0;
            inv_sched_failed(&s->sched, now);
            snprintf(s->info.error, sizeof(s->info.error), "%s", ei.message);
            if (first) /* once per outage, not at every retry */
                log_warn("GPU telemetry source failing; its data is kept, marked stale", "source",
                         s->info.name, "error", ei.message);
        }
        s->info.stale = s->sched.stale;
        s->info.last_ok_ms = s->sched.last_ok_ms;
        s->info.failures = s->sched.failures;
        pthread_mutex_unlock(&c->lock);
        inv_readings_release(&rs);
    }
}

static void *collector_main(void *arg)
{
    struct collector *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->stopping) {
        struct timespec ts;
        int64_t due = time_now_ms() + TICK_MS;
        pthread_mutex_unlock(&c->lock);
        run_due(c, time_now_ms());
        pthread_mutex_lock(&c->lock);
        ts.tv_sec = (time_t)(due / 1000);
        ts.tv_nsec = (long)(due % 1000) * 1000000;
        if (!c->stopping)
            pthread_cond_timedwait(&c->wake, &c->lock, &ts);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static int add_source(struct collector *c, enum kind kind, const char *target, const char *label,
                      struct error_info *ei)
{
    struct inv_tstore_config tc;
    struct source *s;
    int64_t now = time_now_ms();

    if (c->n_src == MAX_SOURCES)
        return errinfo_set(ei, ERR_INVALID, "dcgm-urls", "at most %d telemetry sources",
                           MAX_SOURCES);
    if (strlen(target) >= sizeof(s->target))
        return errinfo_set(ei, ERR_INVALID, label, "'%.60s...' is too long", target);
    s = &c->src[c->n_src++];
    s->kind = kind;
    snprintf(s->target, sizeof(s->target), "%s", target);
    snprintf(s->info.name, sizeof(s->info.name), "%s%s%s", label, kind == SRC_DCGM ? " " : "",
             kind == SRC_DCGM ? target : "");
    inv_sched_init(&s->sched, c->opt.interval_ms, c->opt.timeout_ms, 8 * c->opt.interval_ms, now);
    inv_tstore_config_default(&tc);
    tc.max_gpus = 20000;
    tc.sample_ms = c->opt.interval_ms;
    /* the raw ring must hold the classification window */
    if ((int64_t)tc.raw_cap * tc.sample_ms < c->opt.window_ms)
        tc.raw_cap = (size_t)(c->opt.window_ms / tc.sample_ms) + 1;
    s->ts = inv_tstore_new(&tc);
    inv_readings_init(&s->last, 0);
    s->info.stale = true;
    return 0;
}

int collector_start(const struct collector_options *opt, struct collector **ret,
                    struct error_info *ei)
{
    struct collector *c;
    int rc = 0;

    *ret = NULL;
    if ((!opt->nvml || !*opt->nvml) && (!opt->nvidia_smi || !*opt->nvidia_smi) &&
        (!opt->dcgm_urls || !*opt->dcgm_urls))
        return 0;
    /* The telemetry store keeps samples in whole seconds (inv_tstore_config.sample_ms). */
    if (opt->interval_ms < 1000 || opt->timeout_ms < 100 || opt->window_ms < opt->interval_ms)
        return errinfo_set(ei, ERR_INVALID, "collect-interval-s",
                           "telemetry interval must be at least 1 s, its timeout at least 0.1 s, "
                           "and the idle window at least one interval");
    c = xcalloc(1, sizeof(*c));
    c->opt = *opt;
    inv_class_config_default(&c->cls);
    c->cls.window_ms = opt->window_ms;
    c->cls.down_after_ms = 3 * opt->interval_ms + opt->timeout_ms;
    if (opt->nvml && *opt->nvml)
        rc = add_source(c, SRC_NVML,
                        strcmp(opt->nvml, "auto") == 0 ? "libnvidia-ml.so.1" : opt->nvml, "nvml",
                        ei);
    if (rc >= 0 && opt->nvidia_smi && *opt->nvidia_smi)
        rc = add_source(c, SRC_SMI, opt->nvidia_smi, "nvidia-smi", ei);
    if (rc >= 0 && opt->dcgm_urls && *opt->dcgm_urls) {
        char *urls = xstrdup(opt->dcgm_urls), *save = NULL;
        curl_global_init(CURL_GLOBAL_DEFAULT); /* before the thread: not thread-safe */
        for (char *u = strtok_r(urls, ",", &save); rc >= 0 && u; u = strtok_r(NULL, ",", &save)) {
            while (*u == ' ')
                u++;
            if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
                rc = errinfo_set(ei, ERR_INVALID, "dcgm-urls",
                                 "'%.100s' is not an http:// or https:// URL", u);
            else
                rc = add_source(c, SRC_DCGM, u, "dcgm", ei);
        }
        free(urls);
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    if (rc >= 0 && pthread_create(&c->thread, NULL, collector_main, c) != 0)
        rc = errinfo_set(ei, ERR_INTERNAL, NULL, "could not start the telemetry thread");
    if (rc < 0) {
        for (size_t i = 0; i < c->n_src; i++) {
            inv_tstore_free(c->src[i].ts);
            inv_readings_release(&c->src[i].last);
        }
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->wake);
        free(c);
        return rc;
    }
    *ret = c;
    return 0;
}

void collector_stop(struct collector *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    for (size_t i = 0; i < c->n_src; i++) {
        inv_tstore_free(c->src[i].ts);
        inv_readings_release(&c->src[i].last);
    }
    for (size_t i = 0; i < c->n_allocated; i++)
        free(c->allocated[i]);
    free(c->allocated);
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    free(c);
}

bool collector_gpu(struct collector *c, const char *uuid, bool allocated, int64_t now_ms,
                   struct collector_gpu *ret)
{
    struct inv_class_input best = {0}, in;
    bool found = false;

    if (!c || !uuid || !*uuid)
        return false;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_src; i++) {
        if (inv_tstore_class_input(c->src[i].ts, uuid, now_ms, c->cls.window_ms, allocated, &in) ==
                0 &&
            (!found || in.last_seen_ms > best.last_seen_ms)) {
            best = in;
            found = true;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (found) {
        struct inv_class_result res;
        inv_classify(&c->cls, &best, &res);
        *ret = (struct collector_gpu){res.state, res.reason, best.activity_avg, best.mem_used_mib,
                                      best.last_seen_ms};
    }
    return found;
}

size_t collector_sources(struct collector *c, struct collector_source *out, size_t max)
{
    size_t n = 0;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_src && n < max; i++)
        out[n++] = c->src[i].info;
    pthread_mutex_unlock(&c->lock);
    return n;
}

int collector_history(struct collector *c, const char *const *uuids, size_t n, int64_t from_ms,
                      int64_t to_ms, struct inv_series_query *ret)
{
    int rc = 0;
    memset(ret, 0, sizeof(*ret));
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    /* the first source that knows any of them */
    for (size_t i = 0; i < c->n_src; i++) {
        struct inv_series_query q;
        rc = inv_tstore_query(c->src[i].ts, uuids, n, from_ms, to_ms, &q);
        if (rc > 0 || (rc == 0 && q.alloc_ms > 0)) {
            *ret = q;
            break;
        }
        if (rc >= 0)
            free(q.points);
        if (rc < 0)
            break;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

size_t collector_pod_gpus(struct collector *c, uint64_t seen_runs, struct inv_readings *out,
                          uint64_t *ret_runs)
{
    bool fresh;

    *ret_runs = 0;
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    *ret_runs = c->pod_runs;
    fresh = c->pod_runs != seen_runs;
    if (fresh) {
        inv_readings_reset(out);
        for (size_t i = 0; i < c->n_src; i++) {
            const struct inv_readings *rs = &c->src[i].last;
            for (size_t k = 0; c->src[i].kind == SRC_DCGM && k < rs->n; k++) {
                struct inv_reading *r;
                if (inv_readings_get(out, rs->v[k].uuid, rs->v[k].mig_instance, &r) == 0)
                    *r = rs->v[k];
            }
        }
    }
    pthread_mutex_unlock(&c->lock);
    return fresh ? out->n : 0;
}

size_t collector_local_gpus(struct collector *c, struct inv_readings *out, uint64_t *ret_runs)
{
    *ret_runs = 0;
    inv_readings_reset(out);
    if (!c)
        return 0;
    pthread_mutex_lock(&c->lock);
    *ret_runs = c->local_runs;
    for (size_t i = 0; i < c->n_src && out->n == 0; i++) {
        const struct inv_readings *rs = &c->src[i].last;
        for (size_t k = 0; c->src[i].kind != SRC_DCGM && k < rs->n; k++) {
            struct inv_reading *r;
            const struct inv_reading *v = &rs->v[k];
            /* whole GPUs, and MIG instances known by their own UUID */
            if ((v->mig_instance >= 0 && !v->mig_uuid[0]) ||
                inv_readings_get(out, v->uuid, v->mig_instance, &r) < 0)
                continue;
            *r = rs->v[k];
        }
    }
    pthread_mutex_unlock(&c->lock);
    return out->n;
}
