/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pruner.c: the retention's thread. It sweeps log-dir once at start and then
 * every sweep_ms, a bounded number of entries per pass with a pause between
 * passes, so a directory of a million files costs a few minutes of one
 * thread now and then and never holds up the engine or a request: per pass
 * it reads at most pass_entries names, asks the store about their workloads
 * in one query, records a "logs-removed" event for each workload whose files
 * go (one transaction), and only then removes them.
 *
 * Crash safety: each file goes with one unlinkat(), so a file is either
 * whole or gone. The event is committed before the first file goes; a crash
 * in between leaves files that the next sweep (the first after a restart)
 * removes without a second event. Only regular files named by
 * retention_parse_name are removed, relative to the directory's descriptor,
 * so nothing outside log-dir (not even a symbolic link's target) is touched,
 * and only of workloads the store says ended: run files of work that is
 * still queued, running or being stopped, which a restarted daemon reads to
 * find its processes again, always stay.
 */
#include "base/common.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/timeutil.h"
#include "model/model.h"
#include "retention/retention.h"
#include "store/store.h"

#define DAY_MS INT64_C(86400000)

struct retention {
    struct store *store;
    struct retention_options opt;
    char *log_dir;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;

    /* The sweep in progress (dir != NULL), touched by the thread only. */
    DIR *dir;
    int64_t sweep_started;
    size_t n_seen, n_removed, n_failed, n_workloads;
    char failed_name[64], failed_error[128]; /* the first removal that failed */
};

void retention_options_init(struct retention_options *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->keep_days = 30;
    opt->sweep_ms = 3600 * 1000;
    opt->pass_pause_ms = 100;
    opt->pass_entries = 1000;
}

int retention_find_removal(struct store_conn *c, int64_t workload_id, struct arena *a,
                           int64_t *ret_at_ms, const char **ret_message, struct error_info *ei)
{
    const struct resource_def *d = &model_events;
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_EVENTS_WORKLOAD_ID, workload_id);
    store_filter_eq_str(&f, F_EVENTS_TYPE, RETENTION_EVENT);
    f.limit = 1;
    rc = store_list(c, d, &f, a, &rows, &n, ei);
    if (rc < 0 || n == 0)
        return rc < 0 ? rc : 0;
    *ret_at_ms = row_int(&rows[0], F_EVENTS_AT_MS);
    *ret_message = row_get(&rows[0], F_EVENTS_MESSAGE)->s;
    return 1;
}

/* What the store says of the workloads ids[0..n_ids) (sorted): *ret_ws in a, sorted by id. */
static int lookup(struct store_conn *c, const int64_t *ids, size_t n_ids, struct arena *a,
                  struct row **ret_rows, struct retention_workload **ret_ws, size_t *ret_n,
                  struct error_info *ei)
{
    const struct resource_def *d = &model_workloads;
    struct retention_workload *ws;
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_any(&f, F_WORKLOADS_ID, ids, n_ids);
    f.limit = (int)n_ids;
    rc = store_list(c, d, &f, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    ws = arena_calloc(a, n ? n : 1, sizeof(*ws));
    for (size_t i = 0; i < n; i++) {
        const struct value *fin = row_get(&rows[i], F_WORKLOADS_FINISHED_AT);
        ws[i].id = model_row_id(&rows[i]);
        ws[i].state = row_get(&rows[i], F_WORKLOADS_STATE)->s;
        ws[i].finished_ms = fin->null ? -1 : fin->i * 1000;
    }
    *ret_rows = rows;
    *ret_ws = ws;
    *ret_n = n;
    return 0;
}

/*
 * Records, in one transaction, a "logs-removed" event for each workload of
 * gone[0..n_gone) (rows of model_workloads) that has none yet.
 */
static int record_removals(struct retention *r, struct store_conn *c, const struct row *gone,
                           size_t n_gone, int64_t now, struct arena *a, struct error_info *ei)
{
    const struct resource_def *d = &model_events;
    int64_t *ids = arena_calloc(a, n_gone ? n_gone : 1, sizeof(*ids));
    const char *message =
        arena_printf(a, "log removed: logs are kept %" PRId64 " day%s after work ends",
                     r->opt.keep_days, r->opt.keep_days == 1 ? "" : "s");
    struct store_filter f;
    struct row *had;
    size_t n_had, j = 0;
    int rc;

    for (size_t i = 0; i < n_gone; i++)
        ids[i] = model_row_id(&gone[i]);
    rc = store_begin(c, ei);
    if (rc < 0)
        return rc;
    store_filter_init(&f);
    store_filter_eq_str(&f, F_EVENTS_TYPE, RETENTION_EVENT);
    store_filter_any(&f, F_EVENTS_WORKLOAD_ID, ids, n_gone);
    f.limit = (int)n_gone;
    rc = store_list(c, d, &f, a, &had, &n_had, ei);
    for (size_t i = 0; rc >= 0 && i < n_gone; i++) {
        struct row ev;
        int64_t id;
        bool found = false;
        /* had is in event id order, not workload order: n_gone is at most a pass. */
        for (j = 0; j < n_had && !found; j++)
            found = row_int(&had[j], F_EVENTS_WORKLOAD_ID) == ids[i];
        if (found)
            continue;
        ev = model_row_new(d, a);
        row_set_int(&ev, F_EVENTS_WORKLOAD_ID, ids[i]);
        row_set_int(&ev, F_EVENTS_PROJECT_ID, row_int(&gone[i], F_WORKLOADS_PROJECT_ID));
        row_set_int(&ev, F_EVENTS_AT_MS, now);
        row_set_str(&ev, a, F_EVENTS_TYPE, RETENTION_EVENT);
        row_set_str(&ev, a, F_EVENTS_MESSAGE, message);
        rc = store_insert(c, d, &ev, &id, ei);
    }
    if (rc >= 0)
        rc = store_commit(c, ei);
    else
        store_rollback(c);
    return rc;
}

/* Removes one file of the sweep's directory: a regular file, by its name there. */
static void remove_file(struct retention *r, const char *name)
{
    struct stat st;
    int fd = dirfd(r->dir);

    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            goto failed;
        return;
    }
    if (!S_ISREG(st.st_mode))
        return;
    if (unlinkat(fd, name, 0) == 0) {
        r->n_removed++;
        return;
    }
    if (errno == ENOENT)
        return;
failed:
    if (r->n_failed++ == 0) {
        snprintf(r->failed_name, sizeof(r->failed_name), "%s", name);
        snprintf(r->failed_error, sizeof(r->failed_error), "%s", strerror(errno));
    }
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_workload(const void *a, const void *b)
{
    return cmp_id(&((const struct retention_workload *)a)->id,
                  &((const struct retention_workload *)b)->id);
}

static void sweep_end(struct retention *r, const char *why)
{
    struct arena a;
    arena_init(&a);
    closedir(r->dir);
    r->dir = NULL;
    if (why)
        log_warn("log retention: could not read log-dir to its end", "dir", r->log_dir, "error",
                 why);
    if (r->n_failed)
        log_warn("log retention: could not remove some files", "dir", r->log_dir, "failed",
                 arena_printf(&a, "%zu", r->n_failed), "first", r->failed_name, "error",
                 r->failed_error);
    log_kv(r->n_removed ? LOG_INFO : LOG_DEBUG, "log retention sweep done", "dir", r->log_dir,
           "entries", arena_printf(&a, "%zu", r->n_seen), "removed",
           arena_printf(&a, "%zu", r->n_removed), "workloads",
           arena_printf(&a, "%zu", r->n_workloads), "days",
           arena_printf(&a, "%" PRId64, r->opt.keep_days), (const char *)NULL);
    arena_release(&a);
}

/* One bounded pass of the sweep in progress: at most pass_entries names. */
static void pass(struct retention *r)
{
    const size_t max = r->opt.pass_entries;
    struct arena a;
    const char **names;
    int64_t *ids, *name_ids, now = time_now_ms();
    size_t n = 0, n_ids = 0, n_ws = 0, n_gone = 0;
    struct retention_workload *ws = NULL;
    struct row *rows = NULL, *gone;
    struct error_info ei = {0};
    struct store_conn *c;
    bool *remove, end = false;
    int rc, read_error = 0;

    arena_init(&a);
    names = arena_calloc(&a, max, sizeof(*names));
    ids = arena_calloc(&a, max, sizeof(*ids));
    name_ids = arena_calloc(&a, max, sizeof(*name_ids));
    remove = arena_calloc(&a, max, sizeof(*remove));
    for (size_t i = 0; i < max; i++) {
        struct dirent *de;
        int64_t id;
        errno = 0;
        de = readdir(r->dir);
        if (!de) {
            read_error = errno;
            end = true;
            break;
        }
        r->n_seen++;
        if ((de->d_type != DT_REG && de->d_type != DT_UNKNOWN) ||
            !retention_parse_name(de->d_name, &id))
            continue;
        names[n] = arena_strdup(&a, de->d_name);
        name_ids[n] = ids[n] = id;
        n++;
    }
    if (n > 0) {
        qsort(ids, n, sizeof(*ids), cmp_id);
        for (size_t i = 0; i < n; i++) {
            if (n_ids == 0 || ids[n_ids - 1] != ids[i])
                ids[n_ids++] = ids[i];
        }
        c = store_conn_get(r->store);
        rc = lookup(c, ids, n_ids, &a, &rows, &ws, &n_ws, &ei);
        if (rc >= 0 &&
            retention_decide(names, n, ws, n_ws, now, r->opt.keep_days * DAY_MS, remove) > 0) {
            /* The workloads whose files go: those of ws that ended long enough ago. */
            bool *goes = arena_calloc(&a, n_ws, sizeof(*goes));
            for (size_t i = 0; i < n; i++) {
                const struct retention_workload key = {.id = name_ids[i]};
                const struct retention_workload *w =
                    remove[i] ? bsearch(&key, ws, n_ws, sizeof(*ws), cmp_workload) : NULL;
                if (w)
                    goes[w - ws] = true;
            }
            gone = arena_calloc(&a, n_ws, sizeof(*gone));
            for (size_t w = 0; w < n_ws; w++) {
                if (goes[w])
                    gone[n_gone++] = rows[w];
            }
            rc = record_removals(r, c, gone, n_gone, now, &a, &ei);
            if (rc >= 0) {
                r->n_workloads += n_gone;
                for (size_t i = 0; i < n; i++) {
                    if (remove[i])
                        remove_file(r, names[i]);
                }
            }
        }
        store_conn_put(c);
        if (rc < 0)
            log_error("log retention: could not look up or record workloads; retrying next sweep",
                      "dir", r->log_dir, "error", ei.message);
    }
    if (end)
        sweep_end(r, read_error ? strerror(read_error) : NULL);
    arena_release(&a);
}

static void *pruner_main(void *arg)
{
    struct retention *r = arg;
    int64_t next_sweep = 0;

    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        int64_t now = time_now_ms(), due;
        struct timespec ts;

        if (!r->dir && now >= next_sweep) {
            r->dir = opendir(r->log_dir);
            r->sweep_started = now;
            next_sweep = now + r->opt.sweep_ms;
            r->n_seen = r->n_removed = r->n_failed = r->n_workloads = 0;
            if (!r->dir && errno != ENOENT) /* no log-dir yet: no local work yet */
                log_warn("log retention: could not open log-dir", "dir", r->log_dir, "error",
                         strerror(errno));
        }
        if (r->dir) {
            pthread_mutex_unlock(&r->lock);
            pass(r);
            pthread_mutex_lock(&r->lock);
        }
        due = r->dir ? time_now_ms() + r->opt.pass_pause_ms : next_sweep;
        ts.tv_sec = (time_t)(due / 1000);
        ts.tv_nsec = (long)(due % 1000) * 1000000;
        while (!r->stopping && pthread_cond_timedwait(&r->cond, &r->lock, &ts) == 0)
            ;
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

int retention_start(struct store *store, const struct retention_options *opt,
                    struct retention **ret, struct error_info *ei)
{
    struct retention *r;

    *ret = NULL;
    if (opt->keep_days <= 0)
        return 0;
    if (!opt->log_dir || !opt->log_dir[0] || opt->sweep_ms <= 0 || opt->pass_pause_ms < 0 ||
        opt->pass_entries < 1 || opt->pass_entries > RETENTION_PASS_MAX)
        return errinfo_set(ei, ERR_INVALID, "log-retention-days",
                           "log retention needs a log directory and bounded passes");
    r = xcalloc(1, sizeof(*r));
    r->store = store;
    r->opt = *opt;
    r->log_dir = xstrdup(opt->log_dir);
    r->opt.log_dir = r->log_dir;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    if (pthread_create(&r->thread, NULL, pruner_main, r) != 0) {
        pthread_cond_destroy(&r->cond);
        pthread_mutex_destroy(&r->lock);
        free(r->log_dir);
        free(r);
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not start the log retention thread");
    }
    *ret = r;
    return 0;
}

void retention_stop(struct retention *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    if (r->dir)
        closedir(r->dir);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r->log_dir);
    free(r);
}
