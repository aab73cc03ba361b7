/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_backend.c: the engine tests' backend (fake_backend.h). Work runs
 * until the test ends it; work queued ahead starts when the work it waits
 * behind ends, and a stop of such work cancels it at once (reported
 * stopped), as Slurm does with a pending job.
 */
#include "base/common.h"

#include "fake_backend.h"

#define LOCKED(w, stmt)                                                                            \
    do {                                                                                           \
        pthread_mutex_lock(&(w)->lock);                                                            \
        stmt;                                                                                      \
        pthread_mutex_unlock(&(w)->lock);                                                          \
    } while (0)

static struct fake_world *world_of(struct backend *b)
{
    return b->impl;
}

/* Records a call: "what", "what a" or "what a b" (0: left out). */
static void call(struct fake_world *w, const char *what, int64_t a, int64_t b)
{
    char *c;
    if (w->n_calls >= ARRAY_SIZE(w->calls))
        return;
    c = w->calls[w->n_calls++];
    if (b)
        snprintf(c, sizeof(w->calls[0]), "%s %" PRId64 " %" PRId64, what, a, b);
    else if (a)
        snprintf(c, sizeof(w->calls[0]), "%s %" PRId64, what, a);
    else
        snprintf(c, sizeof(w->calls[0]), "%s", what);
}

static bool take(int64_t *ids, size_t *n, int64_t id)
{
    for (size_t i = 0; i < *n; i++) {
        if (ids[i] == id) {
            ids[i] = ids[--*n];
            return true;
        }
    }
    return false;
}

static void push_end(struct fake_world *w, int64_t id, enum backend_end how, int code, int64_t at)
{
    if (w->n_ends < FAKE_MAX)
        w->ends[w->n_ends++] =
            (struct backend_event){.workload_id = id, .at_ms = at, .how = how, .exit_code = code};
}

static void record_launch(struct fake_world *w, const struct backend_launch *l)
{
    if (w->n_launched < FAKE_MAX) {
        size_t k = w->n_launched++, n = 0;
        w->launched[k].id = l->workload_id;
        for (size_t d = 0; l->n_replicas && d < l->replicas[0].n_devices && n < 8; d++)
            w->launched[k].indices[n++] = l->replicas[0].devices[d].index;
        w->launched[k].n_indices = n;
    }
}

static int fake_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                       struct error_info *ei)
{
    struct fake_world *w = world_of(b);
    (void)now_ms;
    (void)ei;
    LOCKED(w, {
        call(w, "launch", l->workload_id, 0);
        record_launch(w, l);
        if (w->n_running < FAKE_MAX)
            w->running[w->n_running++] = l->workload_id;
    });
    return 0;
}

static int fake_stop(struct backend *b, int64_t id, int64_t grace_ms, int64_t now_ms)
{
    struct fake_world *w = world_of(b);
    (void)grace_ms;
    LOCKED(w, {
        call(w, "stop", id, 0);
        for (size_t i = 0; i < w->n_ahead; i++) {
            if (w->ahead[i].id == id) { /* a pending job: cancelled at once */
                w->ahead[i] = w->ahead[--w->n_ahead];
                push_end(w, id, BACKEND_STOPPED, -15, now_ms);
                break;
            }
        }
    });
    return 0;
}

static size_t fake_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct fake_world *w = world_of(b);
    size_t n = 0;
    (void)now_ms;
    LOCKED(w, {
        n = w->paused ? 0 : w->n_ends < max ? w->n_ends : max;
        memcpy(out, w->ends, n * sizeof(*out));
        memmove(w->ends, w->ends + n, (w->n_ends - n) * sizeof(*out));
        w->n_ends -= n;
    });
    return n;
}

static int64_t fake_next_event_ms(struct backend *b)
{
    struct fake_world *w = world_of(b);
    int64_t t;
    LOCKED(w, t = w->n_ends ? 0 : INT64_MAX);
    return t;
}

static int fake_adopt(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                      int64_t now_ms, struct error_info *ei)
{
    struct fake_world *w = world_of(b);
    (void)started_ms;
    (void)now_ms;
    (void)ei;
    LOCKED(w, {
        call(w, "adopt", l->workload_id, 0);
        for (size_t i = 0; i < w->n_gone; i++) {
            if (w->gone[i].id == l->workload_id) {
                push_end(w, l->workload_id, BACKEND_EXITED, 0, w->gone[i].at_ms);
                w->gone[i] = w->gone[--w->n_gone];
                break;
            }
        }
    });
    return 0;
}

static void fake_free(struct backend *b)
{
    free(b);
}

static size_t fake_take_devices(struct backend *b, struct backend_devices *out, size_t max)
{
    struct fake_world *w = world_of(b);
    size_t n = 0;
    LOCKED(w, {
        n = w->paused ? 0 : w->n_devs < max ? w->n_devs : max;
        memcpy(out, w->devs, n * sizeof(*out));
        memmove(w->devs, w->devs + n, (w->n_devs - n) * sizeof(*out));
        w->n_devs -= n;
    });
    return n;
}

static size_t fake_take_started(struct backend *b, struct backend_started *out, size_t max)
{
    struct fake_world *w = world_of(b);
    size_t n = 0;
    LOCKED(w, {
        n = w->paused ? 0 : w->n_started < max ? w->n_started : max;
        memcpy(out, w->started, n * sizeof(*out));
        memmove(w->started, w->started + n, (w->n_started - n) * sizeof(*out));
        w->n_started -= n;
    });
    return n;
}

static int fake_sweep(struct backend *b, int64_t *ids, size_t max, size_t *ret_n)
{
    struct fake_world *w = world_of(b);
    (void)ids;
    (void)max;
    LOCKED(w, call(w, "sweep", 0, 0));
    *ret_n = 0;
    return 0;
}

static int fake_launch_after(struct backend *b, const struct backend_launch *l, int64_t after_id,
                             int64_t now_ms, struct error_info *ei)
{
    struct fake_world *w = world_of(b);
    (void)now_ms;
    (void)ei;
    LOCKED(w, {
        call(w, "after", l->workload_id, after_id);
        record_launch(w, l);
        if (w->n_ahead < FAKE_MAX) {
            w->ahead[w->n_ahead].id = l->workload_id;
            w->ahead[w->n_ahead++].after_id = after_id;
        }
    });
    return 0;
}

static size_t fake_followable(struct backend *b, int64_t *ids, size_t max)
{
    struct fake_world *w = world_of(b);
    size_t n = 0;
    LOCKED(w, {
        for (size_t i = 0; i < w->n_running; i++, n++) {
            if (n < max)
                ids[n] = w->running[i];
        }
        for (size_t i = 0; i < w->n_ahead; i++, n++) {
            if (n < max)
                ids[n] = w->ahead[i].id;
        }
    });
    return n;
}

static bool fake_holds(struct backend *b, int64_t id)
{
    struct fake_world *w = world_of(b);
    bool held = false;
    LOCKED(w, {
        for (size_t i = 0; i < w->n_running; i++)
            held |= w->running[i] == id;
        for (size_t i = 0; i < w->n_ahead; i++)
            held |= w->ahead[i].id == id;
    });
    return held;
}

static int fake_discover(struct backend *b, int64_t now_ms, bool fleet_loaded, struct arena *a,
                         struct backend_fleet_report *ret, struct error_info *ei)
{
    struct fake_world *w = world_of(b);
    struct backend_node_report *nodes;
    int rc = 0;
    (void)now_ms;
    (void)fleet_loaded;
    (void)ei;
    pthread_mutex_lock(&w->lock);
    if (w->nodes_said != w->nodes_gen) {
        w->nodes_said = w->nodes_gen;
        nodes = arena_calloc(a, w->n_nodes + 1, sizeof(*nodes));
        for (size_t i = 0; i < w->n_nodes; i++) {
            nodes[i] = (struct backend_node_report){.name = arena_strdup(a, w->nodes[i].name),
                                                    .state = arena_strdup(a, w->nodes[i].state),
                                                    .reason = "",
                                                    .cpu_milli = -1,
                                                    .mem_mib = -1,
                                                    .counted_class = ""};
        }
        *ret =
            (struct backend_fleet_report){.nodes = nodes, .n_nodes = w->n_nodes, .complete = true};
        rc = 1;
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static const struct backend_ops fake_ops = {
    .name = "fake",
    .launch = fake_launch,
    .stop = fake_stop,
    .poll = fake_poll,
    .next_event_ms = fake_next_event_ms,
    .adopt = fake_adopt,
    .free = fake_free,
    .take_devices = fake_take_devices,
    .take_started = fake_take_started,
    .sweep = fake_sweep,
    .launch_after = fake_launch_after,
    .followable = fake_followable,
    .holds = fake_holds,
    .discover = fake_discover,
};

static struct backend *fake_open(const char *kind, const struct backend_cluster *c, void *arg,
                                 struct error_info *ei)
{
    struct fake_world *w = arg;
    struct backend *b = xcalloc(1, sizeof(*b));
    (void)kind;
    (void)ei;
    *b = (struct backend){.ops = &fake_ops, .cluster_id = c->id, .impl = w};
    LOCKED(w, {
        b->queue_ahead = w->queue_ahead;
        w->opened++;
    });
    return b;
}

void fake_world_init(struct fake_world *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
}

void fake_world_release(struct fake_world *w)
{
    pthread_mutex_destroy(&w->lock);
}

void fake_settings(struct backend_settings *s, struct fake_world *w)
{
    s->open = fake_open;
    s->open_arg = w;
}

void fake_nodes(struct fake_world *w, const char *const *names, const char *const *states, size_t n)
{
    pthread_mutex_lock(&w->lock);
    w->n_nodes = n < ARRAY_SIZE(w->nodes) ? n : ARRAY_SIZE(w->nodes);
    for (size_t i = 0; i < w->n_nodes; i++) {
        snprintf(w->nodes[i].name, sizeof(w->nodes[i].name), "%s", names[i]);
        snprintf(w->nodes[i].state, sizeof(w->nodes[i].state), "%s", states[i]);
    }
    w->nodes_gen++;
    pthread_mutex_unlock(&w->lock);
}

void fake_end(struct fake_world *w, int64_t id, enum backend_end how, int exit_code, int64_t at)
{
    LOCKED(w, {
        take(w->running, &w->n_running, id);
        push_end(w, id, how, exit_code, at);
        /* what waited behind it starts on its devices */
        for (size_t i = 0; i < w->n_ahead;) {
            if (w->ahead[i].after_id == id) {
                w->running[w->n_running++] = w->ahead[i].id;
                w->ahead[i] = w->ahead[--w->n_ahead];
            } else {
                i++;
            }
        }
    });
}

void fake_gone(struct fake_world *w, int64_t id, int64_t at_ms)
{
    LOCKED(w, {
        take(w->running, &w->n_running, id);
        w->gone[w->n_gone].id = id;
        w->gone[w->n_gone++].at_ms = at_ms;
    });
}

void fake_devices(struct fake_world *w, int64_t id, const char *node, const int32_t *idx, size_t n)
{
    LOCKED(w, {
        struct backend_devices *d = &w->devs[w->n_devs++];
        memset(d, 0, sizeof(*d));
        d->workload_id = id;
        snprintf(d->node, sizeof(d->node), "%s", node);
        memcpy(d->indices, idx, n * sizeof(*idx));
        d->n_indices = n;
    });
}

void fake_started(struct fake_world *w, int64_t id, int64_t at_ms)
{
    LOCKED(w, {
        struct backend_started *p = &w->started[w->n_started++];
        p->workload_id = id;
        p->at_ms = at_ms;
    });
}

void fake_pause(struct fake_world *w, bool paused)
{
    LOCKED(w, w->paused = paused);
}

void fake_forget_calls(struct fake_world *w)
{
    LOCKED(w, w->n_calls = 0);
}

int fake_call(struct fake_world *w, const char *c)
{
    int at = -1;
    LOCKED(w, {
        for (size_t i = 0; i < w->n_calls && at < 0; i++) {
            if (strcmp(w->calls[i], c) == 0)
                at = (int)i;
        }
    });
    return at;
}

int fake_count(struct fake_world *w, const char *prefix)
{
    int n = 0;
    LOCKED(w, {
        for (size_t i = 0; i < w->n_calls; i++)
            n += strncmp(w->calls[i], prefix, strlen(prefix)) == 0;
    });
    return n;
}
