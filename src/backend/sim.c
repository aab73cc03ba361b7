/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.c: the simulated backend (DESIGN.md section 6), in the spirit of
 * Kubernetes' kwok. Nothing runs: each workload is one record with the time
 * it will end and how, computed when it is launched, stopped or adopted.
 *
 * Records sit in a pool (an array with a free list). A binary min-heap of
 * pool indices, keyed by (end time, workload id), gives poll() and
 * next_event_ms() the earliest end; an open-addressing hash map (linear
 * probing, backward-shift deletion) finds a workload by id for stop() and
 * the duplicate check. launch, stop and each polled event are O(log n).
 * Work that never ends by itself sits in the map only, out of the heap,
 * until it is stopped.
 *
 * Pure: no clock, no I/O, no globals; every time is an argument.
 */
#include "base/common.h"

#include "backend/backend.h"
#include "base/alloc.h"
#include "base/timeutil.h"

#define NO_POS SIZE_MAX
#define NEVER INT64_MAX
#define SIGTERM_EXIT (-15)
#define SIGKILL_EXIT (-9)

struct work {
    int64_t id;
    int64_t end_ms; /* NEVER while it has no end */
    enum backend_end how;
    int exit_code;
    size_t heap_pos; /* NO_POS when not in the heap */
    uint32_t next_free;
    bool used;
};

struct sim {
    struct backend b;
    int64_t speed;
    int64_t exit_after_signal_ms;

    struct work *pool; /* n_pool records, used or on the free list */
    uint32_t n_pool, cap_pool;
    uint32_t free_head; /* UINT32_MAX: none */

    uint32_t *heap; /* pool indices */
    size_t n_heap, cap_heap;

    uint32_t *map;  /* slots: 0 empty, else pool index + 1 */
    size_t cap_map; /* a power of two */
    size_t n_map;
};

#define NO_FREE UINT32_MAX
#define MAP_MIN 64

/* ---- time ---- */

/* A span of simulated time in real milliseconds; a positive span never rounds to 0. */
static int64_t scaled(const struct sim *s, int64_t ms)
{
    int64_t r;
    if (ms <= 0)
        return 0;
    r = ms / s->speed;
    return r > 0 ? r : 1;
}

/* ---- heap, keyed by (end_ms, id) ---- */

static bool before(const struct sim *s, uint32_t a, uint32_t b)
{
    const struct work *x = &s->pool[a], *y = &s->pool[b];
    return x->end_ms < y->end_ms || (x->end_ms == y->end_ms && x->id < y->id);
}

static void heap_place(struct sim *s, size_t pos, uint32_t w)
{
    s->heap[pos] = w;
    s->pool[w].heap_pos = pos;
}

static void sift_up(struct sim *s, size_t pos)
{
    uint32_t w = s->heap[pos];
    while (pos > 0) {
        size_t parent = (pos - 1) / 2;
        if (!before(s, w, s->heap[parent]))
            break;
        heap_place(s, pos, s->heap[parent]);
        pos = parent;
    }
    heap_place(s, pos, w);
}

static void sift_down(struct sim *s, size_t pos)
{
    uint32_t w = s->heap[pos];
    for (;;) {
        size_t l = 2 * pos + 1, r = l + 1, m = l;
        if (l >= s->n_heap)
            break;
        if (r < s->n_heap && before(s, s->heap[r], s->heap[l]))
            m = r;
        if (!before(s, s->heap[m], w))
            break;
        heap_place(s, pos, s->heap[m]);
        pos = m;
    }
    heap_place(s, pos, w);
}

static void heap_push(struct sim *s, uint32_t w)
{
    ALLOC_GROW(s->heap, s->n_heap + 1, s->cap_heap);
    s->heap[s->n_heap++] = w;
    sift_up(s, s->n_heap - 1);
}

static void heap_pop(struct sim *s)
{
    uint32_t w = s->heap[0];
    s->pool[w].heap_pos = NO_POS;
    if (--s->n_heap > 0) {
        heap_place(s, 0, s->heap[s->n_heap]);
        sift_down(s, 0);
    }
}

/* ---- id map ---- */

static size_t hash_id(int64_t id)
{
    /* splitmix64's finaliser: ids are often consecutive. */
    uint64_t x = (uint64_t)id;
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return (size_t)x;
}

/* The slot holding id, or the empty slot where it would go. */
static size_t map_slot(const struct sim *s, int64_t id)
{
    size_t mask = s->cap_map - 1, i = hash_id(id) & mask;
    while (s->map[i] && s->pool[s->map[i] - 1].id != id)
        i = (i + 1) & mask;
    return i;
}

static struct work *map_find(const struct sim *s, int64_t id)
{
    size_t i = map_slot(s, id);
    return s->map[i] ? &s->pool[s->map[i] - 1] : NULL;
}

static void map_grow(struct sim *s)
{
    uint32_t *old = s->map;
    size_t old_cap = s->cap_map;
    s->cap_map = old_cap ? 2 * old_cap : MAP_MIN;
    s->map = xcalloc(s->cap_map, sizeof(*s->map));
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i])
            s->map[map_slot(s, s->pool[old[i] - 1].id)] = old[i];
    }
    free(old);
}

static void map_put(struct sim *s, uint32_t w)
{
    if ((s->n_map + 1) * 4 > s->cap_map * 3)
        map_grow(s);
    s->map[map_slot(s, s->pool[w].id)] = w + 1;
    s->n_map++;
}

/* Removes id, shifting later entries of its probe run back (no tombstones). */
static void map_del(struct sim *s, int64_t id)
{
    size_t mask = s->cap_map - 1, i = map_slot(s, id), j = i;
    assert(s->map[i]);
    for (;;) {
        size_t home;
        j = (j + 1) & mask;
        if (!s->map[j])
            break;
        home = hash_id(s->pool[s->map[j] - 1].id) & mask;
        /* Move j into the hole at i unless its home lies cyclically in (i, j]. */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            s->map[i] = s->map[j];
            i = j;
        }
    }
    s->map[i] = 0;
    s->n_map--;
}

/* ---- records ---- */

static uint32_t work_new(struct sim *s, int64_t id)
{
    uint32_t w;
    if (s->free_head != NO_FREE) {
        w = s->free_head;
        s->free_head = s->pool[w].next_free;
    } else {
        ALLOC_GROW(s->pool, s->n_pool + 1, s->cap_pool);
        w = s->n_pool++;
    }
    s->pool[w] = (struct work){.id = id, .end_ms = NEVER, .heap_pos = NO_POS, .used = true};
    return w;
}

static void work_free(struct sim *s, uint32_t w)
{
    s->pool[w].used = false;
    s->pool[w].next_free = s->free_head;
    s->free_head = w;
}

/* Sets a new, earlier end (or the first one) and files the record in the heap. */
static void work_end_at(struct sim *s, uint32_t w, int64_t end_ms, enum backend_end how,
                        int exit_code)
{
    struct work *p = &s->pool[w];
    assert(end_ms <= p->end_ms);
    p->end_ms = end_ms;
    p->how = how;
    p->exit_code = exit_code;
    if (end_ms == NEVER)
        return;
    if (p->heap_pos == NO_POS)
        heap_push(s, w);
    else
        sift_up(s, p->heap_pos); /* the key only ever decreases */
}

/* ---- operations ---- */

static struct sim *sim_of(struct backend *b)
{
    return b->impl;
}

/* Files a workload that started at started_ms: its natural end or its timeout. */
static int start(struct sim *s, const struct backend_launch *l, int64_t started_ms,
                 struct error_info *ei)
{
    int64_t run, limit;
    uint32_t w;
    int rc = backend_check_launch(l, ei);

    if (rc < 0)
        return rc;
    run = l->duration_ms >= 0 ? scaled(s, l->duration_ms) : NEVER;
    limit = l->max_runtime_ms >= 0 ? scaled(s, l->max_runtime_ms) : NEVER;
    if (map_find(s, l->workload_id))
        return errinfo_set(ei, ERR_CONFLICT, NULL,
                           "workload %" PRId64 " is already running on the simulated cluster",
                           l->workload_id);
    w = work_new(s, l->workload_id);
    map_put(s, w);
    if (limit < run)
        work_end_at(s, w, time_add_ms(started_ms, limit), BACKEND_TIMEOUT, SIGKILL_EXIT);
    else if (run != NEVER)
        work_end_at(s, w, time_add_ms(started_ms, run), BACKEND_EXITED, 0);
    return 0;
}

static int sim_launch(struct backend *b, const struct backend_launch *l, int64_t now_ms,
                      struct error_info *ei)
{
    return start(sim_of(b), l, now_ms, ei);
}

static int sim_adopt(struct backend *b, const struct backend_launch *l, int64_t started_ms,
                     int64_t now_ms, struct error_info *ei)
{
    if (started_ms > now_ms)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "workload %" PRId64 " cannot have started after now",
                           l ? l->workload_id : 0);
    return start(sim_of(b), l, started_ms, ei);
}

static int sim_stop(struct backend *b, int64_t workload_id, int64_t grace_ms, int64_t now_ms)
{
    struct sim *s = sim_of(b);
    struct work *p = map_find(s, workload_id);
    int64_t grace = grace_ms > 0 ? grace_ms : 0;
    bool killed = grace < s->exit_after_signal_ms;
    int64_t delay, end;

    if (!p || p->end_ms <= now_ms)
        return 0; /* unknown, or ended already: nothing to stop */
    delay = scaled(s, killed ? grace : s->exit_after_signal_ms);
    end = time_add_ms(now_ms, delay > 0 ? delay : 1);
    /* Work that ends by itself (or times out) before the stop takes effect keeps that end. */
    if (end <= p->end_ms)
        work_end_at(s, (uint32_t)(p - s->pool), end, BACKEND_STOPPED,
                    killed ? SIGKILL_EXIT : SIGTERM_EXIT);
    return 0;
}

static size_t sim_poll(struct backend *b, int64_t now_ms, struct backend_event *out, size_t max)
{
    struct sim *s = sim_of(b);
    size_t n = 0;

    assert(out || max == 0);
    while (n < max && s->n_heap > 0 && s->pool[s->heap[0]].end_ms <= now_ms) {
        uint32_t w = s->heap[0];
        const struct work *p = &s->pool[w];
        out[n++] = (struct backend_event){
            .workload_id = p->id, .at_ms = p->end_ms, .how = p->how, .exit_code = p->exit_code};
        heap_pop(s);
        map_del(s, p->id);
        work_free(s, w);
    }
    return n;
}

static int64_t sim_next_event_ms(struct backend *b)
{
    struct sim *s = sim_of(b);
    return s->n_heap > 0 ? s->pool[s->heap[0]].end_ms : NEVER;
}

static void sim_free(struct backend *b)
{
    struct sim *s;
    if (!b)
        return;
    s = sim_of(b);
    free(s->pool);
    free(s->heap);
    free(s->map);
    free(s);
}

static const struct backend_ops sim_ops = {
    .name = "sim",
    .launch = sim_launch,
    .stop = sim_stop,
    .poll = sim_poll,
    .next_event_ms = sim_next_event_ms,
    .adopt = sim_adopt,
    .free = sim_free,
};

struct backend *backend_sim_new(int64_t cluster_id, const struct sim_options *opt)
{
    struct sim *s = xcalloc(1, sizeof(*s));
    s->speed = opt && opt->speed > 1 ? opt->speed : 1;
    s->exit_after_signal_ms = opt && opt->exit_after_signal_ms > 0 ? opt->exit_after_signal_ms : 0;
    s->free_head = NO_FREE;
    s->cap_map = MAP_MIN;
    s->map = xcalloc(s->cap_map, sizeof(*s->map));
    s->b = (struct backend){.ops = &sim_ops, .cluster_id = cluster_id, .impl = s};
    return &s->b;
}
