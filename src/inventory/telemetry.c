/* SPDX-License-Identifier: Apache-2.0 */
/*
 * telemetry.c: per-GPU telemetry in bounded memory. Each GPU (series) owns
 * three fixed rings allocated in one block when it is first seen: raw
 * samples, per-minute and per-hour roll-ups. A roll-up ring slot is the
 * bucket number modulo the ring size; moving to a newer bucket clears the
 * slots skipped over, so a slot is valid exactly when its bucket lies within
 * the ring's span below the newest bucket. Nothing grows after creation, and
 * the number of series is capped: memory is max_gpus x
 * inv_tstore_bytes_per_gpu() plus a fixed index.
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/err.h"
#include "inventory/inventory-int.h"

#include <math.h>

#define MS_MIN INT64_C(60000)
#define MS_HOUR INT64_C(3600000)

struct series {
    char key[INV_KEY_MAX];
    int64_t last_t_ms;   /* 0: nothing yet */
    uint64_t gen;        /* the scrape generation of the last ingest */
    int32_t missed;      /* consecutive scrapes without this series */
    int32_t n_procs;     /* last value, -1 unknown */
    double last_mem_mib; /* last value, NaN unknown */
    size_t raw_head;     /* next slot to write */
    size_t raw_n;
    int64_t min_newest; /* newest minute number written, -1 none */
    int64_t hour_newest;
    struct inv_raw *raw;
    struct inv_rollup *mins;
    struct inv_rollup *hours;
};

struct inv_tstore {
    struct inv_tstore_config cfg;
    struct series **s; /* max_gpus slots */
    size_t n;
    uint32_t *index; /* open addressing: 0 empty, else position + 1 */
    size_t index_cap;
    uint64_t gen;
    int64_t newest_ms; /* the newest sample time over every series */
};

void inv_tstore_config_default(struct inv_tstore_config *cfg)
{
    cfg->max_gpus = 20000;
    cfg->sample_ms = 10000;
    cfg->raw_cap = 360;
    cfg->minute_cap = 1440;
    cfg->hour_cap = 2160;
    cfg->busy_activity = 0.05;
}

static size_t series_block_bytes(const struct inv_tstore_config *cfg)
{
    return sizeof(struct series) + cfg->raw_cap * sizeof(struct inv_raw) +
           (cfg->minute_cap + cfg->hour_cap) * sizeof(struct inv_rollup);
}

size_t inv_tstore_bytes_per_gpu(const struct inv_tstore_config *cfg)
{
    struct inv_tstore_config d;
    if (!cfg) {
        inv_tstore_config_default(&d);
        cfg = &d;
    }
    return series_block_bytes(cfg);
}

size_t inv_tstore_bytes(const struct inv_tstore *ts)
{
    return sizeof(*ts) + ts->index_cap * sizeof(*ts->index) + ts->cfg.max_gpus * sizeof(*ts->s) +
           ts->n * series_block_bytes(&ts->cfg);
}

size_t inv_tstore_count(const struct inv_tstore *ts)
{
    return ts->n;
}

struct inv_tstore *inv_tstore_new(const struct inv_tstore_config *cfg)
{
    struct inv_tstore *ts = xcalloc(1, sizeof(*ts));
    size_t want;

    if (cfg)
        ts->cfg = *cfg;
    else
        inv_tstore_config_default(&ts->cfg);
    assert(ts->cfg.max_gpus > 0 && ts->cfg.max_gpus <= (1u << 30));
    assert(ts->cfg.sample_ms >= 1000 && ts->cfg.raw_cap > 0 && ts->cfg.minute_cap > 0 &&
           ts->cfg.hour_cap > 0);
    want = 2 * ts->cfg.max_gpus;
    ts->index_cap = 1;
    while (ts->index_cap < want)
        ts->index_cap *= 2;
    ts->index = xcalloc(ts->index_cap, sizeof(*ts->index));
    ts->s = xcalloc(ts->cfg.max_gpus, sizeof(*ts->s));
    ts->gen = 1;
    return ts;
}

void inv_tstore_free(struct inv_tstore *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->n; i++)
        free(ts->s[i]);
    free(ts->s);
    free(ts->index);
    free(ts);
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static struct series *find(const struct inv_tstore *ts, const char *key)
{
    size_t mask = ts->index_cap - 1, i = hash_str(key) & mask;
    while (ts->index[i]) {
        struct series *s = ts->s[ts->index[i] - 1];
        if (strcmp(s->key, key) == 0)
            return s;
        i = (i + 1) & mask;
    }
    return NULL;
}

static int create(struct inv_tstore *ts, const char *key, struct series **ret)
{
    size_t klen = strlen(key), mask = ts->index_cap - 1, i;
    struct series *s;
    char *block;

    if (klen == 0 || klen >= INV_KEY_MAX)
        return ERR_INVALID;
    if (ts->n >= ts->cfg.max_gpus)
        return ERR_TOO_LARGE;
    block = xcalloc(1, series_block_bytes(&ts->cfg));
    s = (struct series *)block;
    memcpy(s->key, key, klen + 1);
    s->n_procs = -1;
    s->last_mem_mib = NAN;
    s->min_newest = s->hour_newest = -1;
    s->raw = (struct inv_raw *)(block + sizeof(*s));
    s->mins = (struct inv_rollup *)(s->raw + ts->cfg.raw_cap);
    s->hours = s->mins + ts->cfg.minute_cap;
    ts->s[ts->n++] = s;
    i = hash_str(key) & mask;
    while (ts->index[i])
        i = (i + 1) & mask;
    ts->index[i] = (uint32_t)ts->n;
    *ret = s;
    return 0;
}

/* The slot of bucket b, clearing the slots between the newest bucket and b. */
static struct inv_rollup *advance(struct inv_rollup *ring, size_t cap, int64_t *newest, int64_t b)
{
    if (*newest < 0 || b - *newest >= (int64_t)cap) {
        memset(ring, 0, cap * sizeof(*ring));
    } else {
        for (int64_t x = *newest + 1; x <= b; x++)
            memset(&ring[x % (int64_t)cap], 0, sizeof(*ring));
    }
    if (b > *newest)
        *newest = b;
    return &ring[b % (int64_t)cap];
}

static uint16_t sat16(uint32_t v)
{
    return v > UINT16_MAX ? UINT16_MAX : (uint16_t)v;
}

static void roll(struct inv_rollup *r, const struct inv_raw *raw, uint32_t sample_s,
                 uint32_t bucket_s)
{
    r->n = sat16((uint32_t)r->n + 1);
    if (raw->activity_pm != UINT16_MAX) {
        if (r->n_act == 0 || raw->activity_pm < r->act_min_pm)
            r->act_min_pm = raw->activity_pm;
        if (r->n_act == 0 || raw->activity_pm > r->act_max_pm)
            r->act_max_pm = raw->activity_pm;
        if (r->n_act < UINT16_MAX) {
            r->n_act++;
            r->act_sum_pm += raw->activity_pm;
        }
    }
    if (raw->mem_used_mib != UINT32_MAX) {
        if (!r->has_mem || raw->mem_used_mib > r->mem_max_mib)
            r->mem_max_mib = raw->mem_used_mib;
        r->has_mem = 1;
    }
    if (raw->power_w != UINT16_MAX && r->n_power < UINT16_MAX) {
        r->n_power++;
        r->power_sum_w += raw->power_w;
    }
    if (raw->temp_c != UINT8_MAX && raw->temp_c > r->temp_max_c)
        r->temp_max_c = raw->temp_c;
    if (raw->flags & INV_RAW_ALLOCATED) {
        uint32_t a = r->alloc_s + sample_s;
        r->alloc_s = (uint16_t)(a > bucket_s ? bucket_s : a);
        if (raw->flags & INV_RAW_BUSY) {
            uint32_t b = r->busy_s + sample_s;
            r->busy_s = (uint16_t)(b > bucket_s ? bucket_s : b);
        }
    }
}

static uint32_t clamp_u32(double v, uint32_t unknown)
{
    if (!inv_has(v) || v < 0)
        return unknown;
    if (v >= (double)(unknown - 1))
        return unknown - 1;
    return (uint32_t)llround(v);
}

int inv_tstore_ingest(struct inv_tstore *ts, const char *key, int64_t t_ms,
                      const struct inv_reading *r, bool allocated)
{
    struct series *s = find(ts, key);
    struct inv_raw raw;
    double act = inv_reading_activity(r);
    uint32_t sample_s = (uint32_t)(ts->cfg.sample_ms / 1000);
    int rc;

    if (t_ms <= 0)
        return ERR_INVALID;
    if (!s && (rc = create(ts, key, &s)) < 0)
        return rc;
    if (t_ms <= s->last_t_ms)
        return ERR_CONFLICT;

    memset(&raw, 0, sizeof(raw));
    raw.t_ms = t_ms;
    raw.mem_used_mib = clamp_u32(r->fb_used_mib, UINT32_MAX);
    raw.power_w = (uint16_t)clamp_u32(r->power_w, UINT16_MAX);
    raw.temp_c = (uint8_t)clamp_u32(r->temp_c, UINT8_MAX);
    if (inv_has(act)) {
        double pm = act * 1000.0;
        raw.activity_pm = (uint16_t)(pm < 0 ? 0 : pm > 1000 ? 1000 : llround(pm));
        if (act >= ts->cfg.busy_activity)
            raw.flags |= INV_RAW_BUSY;
    } else {
        raw.activity_pm = UINT16_MAX;
    }
    if (allocated)
        raw.flags |= INV_RAW_ALLOCATED;

    s->raw[s->raw_head] = raw;
    s->raw_head = (s->raw_head + 1) % ts->cfg.raw_cap;
    if (s->raw_n < ts->cfg.raw_cap)
        s->raw_n++;
    roll(advance(s->mins, ts->cfg.minute_cap, &s->min_newest, t_ms / MS_MIN), &raw, sample_s, 60);
    roll(advance(s->hours, ts->cfg.hour_cap, &s->hour_newest, t_ms / MS_HOUR), &raw, sample_s,
         3600);

    s->last_t_ms = t_ms;
    s->gen = ts->gen;
    s->missed = 0;
    s->n_procs = r->n_procs;
    s->last_mem_mib = r->fb_used_mib;
    if (t_ms > ts->newest_ms)
        ts->newest_ms = t_ms;
    return 0;
}

void inv_tstore_end_scrape(struct inv_tstore *ts)
{
    for (size_t i = 0; i < ts->n; i++) {
        struct series *s = ts->s[i];
        if (s->gen != ts->gen && s->missed < INT32_MAX)
            s->missed++;
    }
    ts->gen++;
}

/* The i-th newest raw sample (0 = newest). */
static const struct inv_raw *raw_at(const struct inv_tstore *ts, const struct series *s, size_t i)
{
    size_t cap = ts->cfg.raw_cap;
    return &s->raw[(s->raw_head + cap - 1 - i) % cap];
}

int inv_tstore_class_input(const struct inv_tstore *ts, const char *key, int64_t now_ms,
                           int64_t window_ms, bool allocated, struct inv_class_input *ret)
{
    const struct series *s = find(ts, key);
    struct inv_class_input in;
    double sum = 0;
    size_t n_act = 0;
    int64_t oldest_ms = now_ms;

    if (!s)
        return ERR_NOT_FOUND;
    memset(&in, 0, sizeof(in));
    in.allocated = allocated;
    in.now_ms = now_ms;
    in.last_seen_ms = s->last_t_ms;
    in.missed_scrapes = s->missed;
    in.mem_used_mib = s->last_mem_mib;
    in.n_procs = s->n_procs;
    in.activity_avg = in.activity_max = NAN;
    for (size_t i = 0; i < s->raw_n; i++) {
        const struct inv_raw *r = raw_at(ts, s, i);
        if (r->t_ms > now_ms)
            continue;
        if (r->t_ms <= now_ms - window_ms)
            break;
        in.n_samples++;
        oldest_ms = r->t_ms;
        if (r->activity_pm != UINT16_MAX) {
            double a = r->activity_pm / 1000.0;
            sum += a;
            if (n_act == 0 || a > in.activity_max)
                in.activity_max = a;
            n_act++;
        }
    }
    if (n_act > 0)
        in.activity_avg = sum / (double)n_act;
    /* observed since the oldest sample in the window (which stands for one period) */
    in.covered_ms = in.n_samples ? now_ms - oldest_ms + ts->cfg.sample_ms : 0;
    if (in.covered_ms > window_ms)
        in.covered_ms = window_ms;
    *ret = in;
    return 0;
}

/* ---- queries ---- */

struct acc {
    uint64_t n, n_act, act_sum_pm;
    uint32_t act_min, act_max;
    double mem, power;
    int64_t busy_ms, alloc_ms;
};

static void acc_rollup(struct acc *a, const struct inv_rollup *r)
{
    if (r->n == 0)
        return;
    if (r->n_act) {
        if (a->n_act == 0 || r->act_min_pm < a->act_min)
            a->act_min = r->act_min_pm;
        if (a->n_act == 0 || r->act_max_pm > a->act_max)
            a->act_max = r->act_max_pm;
        a->n_act += r->n_act;
        a->act_sum_pm += r->act_sum_pm;
    }
    a->n += r->n;
    if (r->has_mem)
        a->mem += r->mem_max_mib;
    if (r->n_power)
        a->power += (double)r->power_sum_w / r->n_power;
    a->busy_ms += (int64_t)r->busy_s * 1000;
    a->alloc_ms += (int64_t)r->alloc_s * 1000;
}

static void acc_raw(struct acc *a, const struct inv_raw *r, int64_t sample_ms)
{
    struct inv_rollup one;
    memset(&one, 0, sizeof(one));
    roll(&one, r, (uint32_t)(sample_ms / 1000), UINT16_MAX);
    acc_rollup(a, &one);
}

int inv_tstore_query(const struct inv_tstore *ts, const char *const *keys, size_t n_keys,
                     int64_t from_ms, int64_t to_ms, struct inv_series_query *ret)
{
    int64_t len_ms, first_b, last_b, newest = ts->newest_ms, raw_span;
    struct acc *accs;
    size_t n_b, n_pts = 0;
    int res;

    if (from_ms < 0 || to_ms <= from_ms)
        return ERR_INVALID;
    raw_span = (int64_t)ts->cfg.raw_cap * ts->cfg.sample_ms;
    if (from_ms > newest - raw_span) {
        res = INV_RES_RAW;
        len_ms = ts->cfg.sample_ms;
        first_b = (newest - raw_span) / len_ms;
    } else if (from_ms / MS_MIN > newest / MS_MIN - (int64_t)ts->cfg.minute_cap) {
        res = INV_RES_MINUTE;
        len_ms = MS_MIN;
        first_b = newest / MS_MIN - (int64_t)ts->cfg.minute_cap + 1;
    } else {
        res = INV_RES_HOUR;
        len_ms = MS_HOUR;
        first_b = newest / MS_HOUR - (int64_t)ts->cfg.hour_cap + 1;
    }
    /* buckets overlapping [from, to) that the rings can still hold */
    if (first_b < from_ms / len_ms)
        first_b = from_ms / len_ms;
    last_b = (to_ms - 1) / len_ms;
    if (last_b > newest / len_ms)
        last_b = newest / len_ms;
    memset(ret, 0, sizeof(*ret));
    ret->resolution = res;
    if (last_b < first_b)
        return 0;
    n_b = (size_t)(last_b - first_b + 1);
    accs = xcalloc(n_b, sizeof(*accs));

    for (size_t k = 0; k < n_keys; k++) {
        const struct series *s = find(ts, keys[k]);
        if (!s)
            continue;
        if (res == INV_RES_RAW) {
            for (size_t i = 0; i < s->raw_n; i++) {
                const struct inv_raw *r = raw_at(ts, s, i);
                int64_t b = r->t_ms / len_ms;
                if (r->t_ms < from_ms || r->t_ms >= to_ms || b < first_b || b > last_b)
                    continue;
                acc_raw(&accs[b - first_b], r, ts->cfg.sample_ms);
            }
        } else {
            const struct inv_rollup *ring = res == INV_RES_MINUTE ? s->mins : s->hours;
            int64_t cap = (int64_t)(res == INV_RES_MINUTE ? ts->cfg.minute_cap : ts->cfg.hour_cap);
            int64_t sn = res == INV_RES_MINUTE ? s->min_newest : s->hour_newest;
            for (int64_t b = first_b; b <= last_b; b++) {
                if (sn < 0 || b > sn || b <= sn - cap)
                    continue;
                acc_rollup(&accs[b - first_b], &ring[b % cap]);
            }
        }
    }

    for (size_t i = 0; i < n_b; i++)
        if (accs[i].n)
            n_pts++;
    ret->points = n_pts ? xcalloc(n_pts, sizeof(*ret->points)) : NULL;
    for (size_t i = 0, j = 0; i < n_b; i++) {
        const struct acc *a = &accs[i];
        struct inv_point *p;
        if (!a->n)
            continue;
        p = &ret->points[j++];
        p->t_ms = (first_b + (int64_t)i) * len_ms;
        p->n = a->n > UINT32_MAX ? UINT32_MAX : (uint32_t)a->n;
        if (a->n_act) {
            p->act_min = a->act_min / 1000.0;
            p->act_max = a->act_max / 1000.0;
            p->act_avg = (double)a->act_sum_pm / (double)a->n_act / 1000.0;
        } else {
            p->act_min = p->act_avg = p->act_max = NAN;
        }
        p->mem_mib = a->mem;
        p->power_w = a->power;
        p->busy_ms = a->busy_ms;
        p->alloc_ms = a->alloc_ms;
        ret->busy_ms += a->busy_ms;
        ret->alloc_ms += a->alloc_ms;
    }
    ret->n_points = n_pts;
    free(accs);
    return (int)n_pts;
}

double inv_efficiency(const struct inv_series_query *q)
{
    return q->alloc_ms > 0 ? (double)q->busy_ms / (double)q->alloc_ms : NAN;
}
