/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy_fgd.c: Fragmentation Gradient Descent (Weng et al., ATC '23) as a
 * struct sched_policy, and the "typical pods" it weighs fragmentation over.
 * A node's fragmentation is the expected free GPU milli that a pod drawn
 * from the typical pods could not use (policies.h, fgd_node_frag); FGD puts
 * each replica on the node and device(s) where that grows least.
 *
 * The score is computed incrementally: per typical pod, the node's count of
 * devices with room and the free milli of those without, so that each
 * candidate device costs O(typical pods) rather than a full recount.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "sched/policies.h"

#define WHOLE 1000
#define MAX_TYPICAL 256

/* ---- typical pods ---- */

static int cmp_shape(const void *a, const void *b)
{
    const struct fgd_pod *x = a, *y = b;
    if (x->num_gpu != y->num_gpu)
        return x->num_gpu < y->num_gpu ? -1 : 1;
    if (x->gpu_milli != y->gpu_milli)
        return x->gpu_milli < y->gpu_milli ? -1 : 1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Most frequent first; equal counts: the smaller shape first. */
static int cmp_typical(const void *a, const void *b)
{
    const struct fgd_pod *x = a, *y = b;
    if (x->freq != y->freq)
        return x->freq > y->freq ? -1 : 1;
    return cmp_shape(a, b);
}

static int64_t median(int64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    return v[n / 2];
}

/* GPU milli that all the pods of a shape ask for together (freq holds the count here). */
static double demand_of(const struct fgd_pod *m)
{
    return m->freq * (double)m->num_gpu * (double)m->gpu_milli;
}

int fgd_workload_build(const struct fgd_pod *pods, size_t n, double coverage,
                       struct fgd_workload *ret)
{
    return fgd_workload_build_cover(pods, n, coverage, 0.0, ret);
}

int fgd_workload_build_cover(const struct fgd_pod *pods, size_t n, double coverage,
                             double gpu_coverage, struct fgd_workload *ret)
{
    double gpu_total = 0, gpu_covered = 0;

    if (n == 0 || !(coverage > 0.0 && coverage <= 1.0) ||
        !(gpu_coverage >= 0.0 && gpu_coverage <= 1.0))
        return SCHED_EINVAL;
    struct fgd_pod *sorted = xcalloc(n, sizeof(*sorted));
    struct fgd_pod *shapes = xcalloc(n, sizeof(*shapes));
    int64_t *cpu = xcalloc(n, sizeof(*cpu)), *mem = xcalloc(n, sizeof(*mem));
    size_t n_shapes = 0, kept = 0;
    double covered = 0, total = 0;

    memcpy(sorted, pods, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), cmp_shape);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && cmp_shape(&sorted[i], &sorted[j]) == 0) {
            cpu[j - i] = sorted[j].cpu_milli;
            mem[j - i] = sorted[j].mem_mib;
            j++;
        }
        shapes[n_shapes] =
            (struct fgd_pod){sorted[i].num_gpu, sorted[i].gpu_milli, median(cpu, j - i),
                             median(mem, j - i), (double)(j - i)};
        n_shapes++;
        i = j;
    }
    qsort(shapes, n_shapes, sizeof(*shapes), cmp_typical);
    while (kept < n_shapes && kept < MAX_TYPICAL && covered < coverage * (double)n) {
        covered += shapes[kept].freq;
        kept++;
    }
    /* Then the heaviest remaining shapes until they cover gpu_coverage of the GPU asked for. */
    for (size_t i = 0; i < n_shapes; i++)
        gpu_total += demand_of(&shapes[i]);
    for (size_t i = 0; i < kept; i++)
        gpu_covered += demand_of(&shapes[i]);
    while (kept < n_shapes && kept < MAX_TYPICAL && gpu_covered < gpu_coverage * gpu_total) {
        size_t heaviest = kept;
        struct fgd_pod t;
        for (size_t i = kept + 1; i < n_shapes; i++) {
            if (demand_of(&shapes[i]) > demand_of(&shapes[heaviest]))
                heaviest = i;
        }
        t = shapes[kept];
        shapes[kept] = shapes[heaviest];
        shapes[heaviest] = t;
        gpu_covered += demand_of(&shapes[kept]);
        kept++;
    }
    for (size_t i = 0; i < kept; i++)
        total += shapes[i].freq;
    for (size_t i = 0; i < kept; i++)
        shapes[i].freq /= total;
    ret->pods = xreallocarray(shapes, kept, sizeof(*shapes));
    ret->n_pods = kept;
    ret->pins = NULL;
    ret->n_pins = ret->cap_pins = 0;
    free(sorted);
    free(cpu);
    free(mem);
    return 0;
}

/*
 * Reads the number that ends at the first of `stops` (or the end of s) into
 * *ret within [lo, hi]; returns the rest of s after the number, or NULL.
 */
static const char *read_num(const char *s, const char *stops, int64_t lo, int64_t hi, int64_t *ret)
{
    char buf[24];
    size_t len = strcspn(s, stops);
    if (len == 0 || len >= sizeof(buf))
        return NULL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (parse_int64(buf, lo, hi, ret) < 0)
        return NULL;
    return s + len;
}

/*
 * A percentage with at most two decimals ("4", "4.5", "0.25") ending at the
 * first of `stops`, within (0, 100]; returns the rest of s, or NULL.
 */
static const char *read_percent(const char *s, const char *stops, double *ret)
{
    int64_t whole, frac = 0;
    size_t len;
    const char *rest = read_num(s, ".", 0, 100, &whole);
    if (rest && *rest == '.' && rest < s + strcspn(s, stops)) {
        len = strcspn(rest + 1, stops);
        if (len == 0 || len > 2)
            return NULL;
        rest = read_num(rest + 1, stops, 0, 99, &frac);
        if (rest && len == 1)
            frac *= 10;
    } else {
        rest = read_num(s, stops, 0, 100, &whole);
    }
    if (!rest || whole * 100 + frac == 0 || whole * 100 + frac > 10000)
        return NULL;
    *ret = (double)(whole * 100 + frac) / 10000.0;
    return rest;
}

/* "@ID|ID[xNUM]*PERCENT" (after the '@'): pinned demand, added to w. */
static const char *read_pin(const char *s, struct fgd_workload *w)
{
    int64_t ids[SCHED_MAX_POOLS], num = 1;
    int n = 0;
    double share;
    for (;;) {
        if (n == SCHED_MAX_POOLS)
            return NULL;
        s = read_num(s, "|x*", 1, INT64_MAX, &ids[n++]);
        if (!s || *s != '|')
            break;
        s++;
    }
    if (s && *s == 'x')
        s = read_num(s + 1, "*", 1, SCHED_MAX_GPUS_PER_NODE, &num);
    if (!s || *s++ != '*')
        return NULL;
    s = read_percent(s, ",", &share);
    if (!s || fgd_workload_add_pin(w, ids, n, (int32_t)num, share) < 0)
        return NULL;
    return s;
}

int fgd_workload_parse(const char *spec, struct fgd_workload *ret)
{
    struct fgd_pod *pods = xcalloc(MAX_TYPICAL, sizeof(*pods));
    struct fgd_workload pinned = {0};
    size_t n = 0;
    double total = 0;
    const char *s = spec;

    while (s && *s) {
        int64_t num, milli, cpu, mem, weight = 1;
        if (*s == '@') {
            s = read_pin(s + 1, &pinned);
            if (s && *s == ',')
                s++;
            continue;
        }
        if (n == MAX_TYPICAL)
            goto bad;
        s = read_num(s, "x", 0, SCHED_MAX_GPUS_PER_NODE, &num);
        if (!s || *s++ != 'x')
            goto bad;
        s = read_num(s, "/", 0, WHOLE, &milli);
        if (!s || *s++ != '/')
            goto bad;
        s = read_num(s, "/", 0, INT64_MAX / 4, &cpu);
        if (!s || *s++ != '/')
            goto bad;
        s = read_num(s, "*,", 0, INT64_MAX / 4, &mem);
        if (s && *s == '*')
            s = read_num(s + 1, ",", 1, 1000000000, &weight);
        if (!s || (*s && *s != ',') || (num == 0) != (milli == 0) || (num > 1 && milli != WHOLE))
            goto bad;
        if (*s == ',')
            s++;
        pods[n++] = (struct fgd_pod){(int32_t)num, (int32_t)milli, cpu, mem, (double)weight};
        total += (double)weight;
    }
    if (!s || n == 0)
        goto bad;
    for (size_t i = 0; i < n; i++)
        pods[i].freq /= total;
    qsort(pods, n, sizeof(*pods), cmp_typical);
    ret->pods = xreallocarray(pods, n, sizeof(*pods));
    ret->n_pods = n;
    ret->pins = pinned.pins;
    ret->n_pins = pinned.n_pins;
    ret->cap_pins = pinned.cap_pins;
    return 0;
bad:
    free(pods);
    free(pinned.pins);
    return SCHED_EINVAL;
}

static int cmp_pool_id(const void *a, const void *b)
{
    return cmp_i64(a, b);
}

int fgd_workload_add_pin(struct fgd_workload *w, const int64_t *pool_ids, int n_pools,
                         int32_t num_gpu, double gpu_share)
{
    struct fgd_pin pin = {.n_pools = n_pools, .num_gpu = num_gpu, .gpu_share = gpu_share};

    if (n_pools < 1 || n_pools > SCHED_MAX_POOLS || num_gpu < 1 ||
        num_gpu > SCHED_MAX_GPUS_PER_NODE || !(gpu_share > 0.0 && gpu_share <= 1.0))
        return SCHED_EINVAL;
    for (int i = 0; i < n_pools; i++) {
        if (pool_ids[i] <= 0)
            return SCHED_EINVAL;
        pin.pool_ids[i] = pool_ids[i];
    }
    /* Sorted, so that "A|B" and "B|A" are one set. */
    qsort(pin.pool_ids, (size_t)n_pools, sizeof(int64_t), cmp_pool_id);
    for (size_t i = 0; i < w->n_pins; i++) {
        struct fgd_pin *p = &w->pins[i];
        if (p->n_pools == n_pools && p->num_gpu == num_gpu &&
            memcmp(p->pool_ids, pin.pool_ids, (size_t)n_pools * sizeof(int64_t)) == 0) {
            p->gpu_share = p->gpu_share + gpu_share > 1.0 ? 1.0 : p->gpu_share + gpu_share;
            return 0;
        }
    }
    ALLOC_GROW(w->pins, w->n_pins + 1, w->cap_pins);
    w->pins[w->n_pins++] = pin;
    return 0;
}

void fgd_workload_release(struct fgd_workload *w)
{
    if (!w)
        return;
    free(w->pods);
    free(w->pins);
    w->pods = NULL;
    w->n_pods = 0;
    w->pins = NULL;
    w->n_pins = w->cap_pins = 0;
}

/* Room a typical pod needs on each device it uses. */
static int32_t need_of(const struct fgd_pod *m)
{
    return m->num_gpu == 0 ? 0 : (m->num_gpu > 1 || m->gpu_milli >= WHOLE ? WHOLE : m->gpu_milli);
}

double fgd_node_frag(const struct fgd_workload *w, int64_t cpu_free, int64_t mem_free,
                     const int32_t *gpu_free, int n_gpus)
{
    int64_t total = 0;
    double frag = 0;
    for (int g = 0; g < n_gpus; g++)
        total += gpu_free[g];
    for (size_t i = 0; i < w->n_pods; i++) {
        const struct fgd_pod *m = &w->pods[i];
        int32_t need = need_of(m);
        int64_t unusable = 0;
        int fit = 0;
        if (m->num_gpu == 0 || cpu_free < m->cpu_milli || mem_free < m->mem_mib) {
            frag += m->freq * (double)total;
            continue;
        }
        for (int g = 0; g < n_gpus; g++) {
            if (gpu_free[g] >= need)
                fit++;
            else
                unusable += gpu_free[g];
        }
        frag += m->freq * (double)(fit >= m->num_gpu ? unusable : total);
    }
    return frag;
}

/* ---- the policy ---- */

struct fgd_state {
    size_t n_pods;
    struct fgd_pod pods[];
};

/* Per typical pod, of the node as it is: devices with room, free milli of those without. */
struct base {
    int fit;
    int64_t unusable;
};

/*
 * Fragmentation after devices change from free[] to free[] - take[] (take
 * listed for `n_changed` devices in `changed`), with CPU and memory left.
 */
static double frag_after(const struct fgd_state *st, const struct base *b, int64_t total,
                         int64_t cpu_left, int64_t mem_left, const int32_t *gpu_free,
                         const int *changed, int n_changed, int32_t take)
{
    double frag = 0;
    int64_t total_after = total - (int64_t)take * n_changed;
    for (size_t i = 0; i < st->n_pods; i++) {
        const struct fgd_pod *m = &st->pods[i];
        int32_t need = need_of(m);
        if (m->num_gpu == 0 || cpu_left < m->cpu_milli || mem_left < m->mem_mib) {
            frag += m->freq * (double)total_after;
            continue;
        }
        int fit = b[i].fit;
        int64_t unusable = b[i].unusable;
        for (int c = 0; c < n_changed; c++) {
            int32_t f = gpu_free[changed[c]], f2 = f - take;
            if (f >= need)
                fit--;
            else
                unusable -= f;
            if (f2 >= need)
                fit++;
            else
                unusable += f2;
        }
        frag += m->freq * (double)(fit >= m->num_gpu ? unusable : total_after);
    }
    return frag;
}

static int64_t fgd_score(const struct sched_policy *p, const struct sched_node_view *v,
                         const struct sched_replica_req *r, int *ret_gpus)
{
    const struct fgd_state *st = p->state;
    struct base b[MAX_TYPICAL];
    int64_t cpu = v->cpu_cap ? v->cpu_free : INT64_MAX, mem = v->mem_cap ? v->mem_free : INT64_MAX;
    int64_t total = 0;
    double before, best = 0;
    int best_g = -1;

    if (cpu < r->cpu_milli || mem < r->mem_mib)
        return INT64_MAX;
    for (int g = 0; g < v->n_gpus; g++)
        total += v->gpu_free[g];
    for (size_t i = 0; i < st->n_pods; i++) {
        int32_t need = need_of(&st->pods[i]);
        b[i].fit = 0;
        b[i].unusable = 0;
        for (int g = 0; g < v->n_gpus; g++) {
            if (v->gpu_free[g] >= need)
                b[i].fit++;
            else
                b[i].unusable += v->gpu_free[g];
        }
    }
    before = frag_after(st, b, total, cpu, mem, v->gpu_free, NULL, 0, 0);
    if (cpu != INT64_MAX)
        cpu -= r->cpu_milli;
    if (mem != INT64_MAX)
        mem -= r->mem_mib;

    if (r->gpu_milli == 0) {
        best = frag_after(st, b, total, cpu, mem, v->gpu_free, NULL, 0, 0);
    } else if (r->gpu_milli < WHOLE) {
        /* Each distinct free value once; ties: the device with less free. */
        for (int g = 0; g < v->n_gpus; g++) {
            int32_t f = v->gpu_free[g];
            bool seen = false;
            if (f < r->gpu_milli)
                continue;
            for (int h = 0; h < g && !seen; h++)
                seen = v->gpu_free[h] == f;
            if (seen)
                continue;
            double a = frag_after(st, b, total, cpu, mem, v->gpu_free, &g, 1, r->gpu_milli);
            if (best_g < 0 || a < best || (a == best && f < v->gpu_free[best_g])) {
                best = a;
                best_g = g;
            }
        }
        if (best_g < 0)
            return INT64_MAX;
        ret_gpus[0] = best_g;
    } else {
        int k = r->gpu_milli / WHOLE, n = 0;
        int pick[SCHED_MAX_GPUS_PER_NODE];
        for (int g = 0; g < v->n_gpus && n < k; g++) {
            if (v->gpu_free[g] >= WHOLE)
                pick[n++] = g;
        }
        if (n < k)
            return INT64_MAX;
        best = frag_after(st, b, total, cpu, mem, v->gpu_free, pick, k, WHOLE);
        memcpy(ret_gpus, pick, (size_t)k * sizeof(int));
    }
    /* The growth in milli-GPU, kept to a thousandth. */
    double d = (best - before) * 1000.0;
    return (int64_t)(d >= 0 ? d + 0.5 : d - 0.5);
}

struct sched_policy *sched_policy_fgd_new(const struct fgd_workload *typical)
{
    size_t n = typical->n_pods < MAX_TYPICAL ? typical->n_pods : MAX_TYPICAL;
    struct sched_policy *p = xcalloc(1, sizeof(*p));
    struct fgd_state *st = xmalloc(sizeof(*st) + n * sizeof(st->pods[0]));
    st->n_pods = n;
    memcpy(st->pods, typical->pods, n * sizeof(st->pods[0]));
    p->name = "fgd";
    p->score = fgd_score;
    p->state = st;
    return p;
}
