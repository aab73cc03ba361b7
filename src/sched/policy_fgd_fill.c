/* SPDX-License-Identifier: Apache-2.0 */
/*
 * policy_fgd_fill.c: "fgd-fill", our placement policy (policies.h,
 * docs/placement.md). FGD (policy_fgd.c) asks whether the *next* typical
 * pod could use what a node has left. On the Alibaba trace that misses most
 * of what ends up stranded: holes on shared devices that no mix of the
 * typical pods can close (a 470 beside a 320 leaves 210, which nothing
 * common fits), and GPUs behind CPU or memory the node has given away.
 * fgd-fill scores a placement by how much it makes these measures of the
 * node grow:
 *
 * - frag: FGD's fragmentation (fgd_node_frag), weight 1.
 * - balance: per typical GPU pod m, the free GPU milli that m's CPU and
 *   memory would leave unused if the node were filled with (fractional)
 *   copies of m; the expectation over the GPU pods (weight 1/4), and the
 *   same for the typical mix as a whole, CPU-only pods' CPU and memory
 *   included (weight 1/2).
 * - shape waste (weight 16): per device with f milli free, the least that
 *   any mix of the typical pods' per-device sizes would leave of f (the
 *   `leftover` table: a knapsack over the sizes, worked out once); all of
 *   the node's free GPU once its CPU or memory is below what the smallest
 *   typical GPU pod asks for. Unlike frag it looks past the next pod: 530
 *   free after a 470 costs 60 (another 470 closes it to 60), 210 after
 *   470 + 320 costs 210.
 *
 * Two more weigh the fleet around the node (the core's struct sched_room;
 * issue 17), so that the policy holds back what the demand still to come
 * will want, and no more:
 *
 * - hold: a multi-GPU typical pod's frag weight is scaled by its demand
 *   still to come (its share of the GPU demand times the class's free GPU)
 *   over the places left for it in the fleet, at most 1. Idle 8-GPU nodes
 *   are kept when 8-GPU pods will need them, not all of them from the start.
 * - pinned pressure: work restricted to some pools (a GPU model named, or a
 *   size only some models' nodes have) is told as each pool's share of the
 *   GPU demand (struct fgd_pin). Taking a milli from a pool costs W_PIN x
 *   pressure^2, the pressure being that share times the class's free GPU
 *   over the pool's free GPU. Work that may go anywhere then leaves a pool
 *   before the pods that can only go there are starved.
 *
 * A share goes to the device of the node that scores best (ties: the one
 * with less free); equal node scores go to the node with less free GPU
 * after placement (packing), then to the core's lower node id. The weights
 * are fixed: the same settings run every pod list of the benchmark. A node
 * costs O(typical pods x devices) once, one pass over the room's slot
 * counts and pins, then O(typical pods) per candidate device.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "sched/policies.h"

#define WHOLE 1000
#define MAX_TYPICAL 256
/* Weights of the measures (see above), in milli-GPU per milli-GPU. */
#define W_FRAG 1.0
#define W_BALANCE 0.25
#define W_MIX 0.5
#define W_SHAPE 16.0
/* Cost per milli taken from a pool, times the square of the pool's pinned pressure. */
#define W_PIN 1.0
/* At most this hold on a multi-GPU typical pod (its demand still to come over its room). */
#define HOLD_MAX 1.0
/*
 * Frag weight of a multi-GPU typical pod at full hold: breaking its last
 * place costs W_HOLD x its GPU. Its frequency no longer counts: how much of
 * it will come is in the hold already.
 */
#define W_HOLD 0.1
#define MAX_PINS 64
/* Multi-GPU typical pod sizes held by the room (more keep their frequency as weight). */
#define MAX_SIZES 8
/* Cap on the node's score on both sides of a change; keeps the tie-break field apart. */
#define SCORE_CAP (INT64_MAX / 65536 / 2)

struct fill_state {
    size_t n_pods;
    double mix_cpu, mix_mem;   /* typical mix: CPU milli and memory MiB per milli-GPU; 0 if none */
    double w_gpu[MAX_TYPICAL]; /* weight among GPU pods (CPU-only: 0), summing to 1 */
    int64_t cpu_min, mem_min;  /* least CPU and memory of a typical GPU pod */
    int32_t leftover[WHOLE + 1]; /* least milli a device with f free keeps after typical pods */
    double g_share[MAX_TYPICAL]; /* share of the typical pods' GPU demand */
    struct fgd_pod pods[MAX_TYPICAL];
    size_t n_pins;
    struct fgd_pin pins[MAX_PINS];
    int n_sizes; /* distinct GPUs per multi-GPU typical pod */
    int32_t size_k[MAX_SIZES];
    int size_of[MAX_TYPICAL]; /* index into size_k, or -1 (one device, or past MAX_SIZES) */
    int pin_size[MAX_PINS];   /* the same for each pin */
    double quot[MAX_SIZES][SCHED_MAX_GPUS_PER_NODE + 1]; /* j / size_k[z], whole places */
};

/* Per typical pod, of the node as it is. */
struct pod_base {
    int fit;          /* devices with room for one device's share of the pod */
    int64_t unusable; /* free milli of the devices without */
};

/* A placement's effect on the devices: n devices (indices dev) each lose take milli. */
struct change {
    const int *dev;
    int n;
    int32_t take;
};

static int32_t need_of(const struct fgd_pod *m)
{
    return m->num_gpu == 0 ? 0 : (m->num_gpu > 1 || m->gpu_milli >= WHOLE ? WHOLE : m->gpu_milli);
}

/* GPU milli of one whole pod. */
static double gpu_of(const struct fgd_pod *m)
{
    return m->num_gpu > 1 ? (double)m->num_gpu * WHOLE : (double)m->gpu_milli;
}

/* leftover[] of a free amount, which a device view keeps within 0..WHOLE. */
static int64_t leftover_of(const struct fill_state *st, int32_t f)
{
    return st->leftover[f < 0 ? 0 : f > WHOLE ? WHOLE : f];
}

/*
 * The weighted sum of the measures for the node after `ch`, with cpu and
 * mem left (INT64_MAX / 4 when not counted); kept is the sum of leftover[]
 * over the node's devices before the change.
 */
static double measure(const struct fill_state *st, const double *wf, const struct pod_base *b,
                      int64_t kept, int64_t total, int64_t cpu, int64_t mem,
                      const int32_t *gpu_free, const struct change *ch)
{
    double frag = 0, balance = 0, mix = 0, shape;
    int64_t after = total - (int64_t)ch->take * ch->n;

    for (size_t i = 0; i < st->n_pods; i++) {
        const struct fgd_pod *m = &st->pods[i];
        int32_t need = need_of(m);
        int fit = b[i].fit;
        int64_t unusable = b[i].unusable;
        double room;

        if (need == 0) {
            frag += wf[i] * (double)after; /* no CPU-only pod uses a GPU */
            continue;
        }
        for (int c = 0; c < ch->n; c++) {
            int32_t f = gpu_free[ch->dev[c]], f2 = f - ch->take;
            fit += (f2 >= need) - (f >= need);
            unusable += (f2 < need ? f2 : 0) - (f < need ? f : 0);
        }
        if (cpu < m->cpu_milli || mem < m->mem_mib || fit < m->num_gpu)
            frag += wf[i] * (double)after;
        else
            frag += wf[i] * (double)unusable;

        room = (double)after;
        if (m->cpu_milli > 0 && (double)cpu / (double)m->cpu_milli * gpu_of(m) < room)
            room = (double)cpu / (double)m->cpu_milli * gpu_of(m);
        if (m->mem_mib > 0 && (double)mem / (double)m->mem_mib * gpu_of(m) < room)
            room = (double)mem / (double)m->mem_mib * gpu_of(m);
        balance += st->w_gpu[i] * ((double)after - room);
    }
    if (st->mix_cpu > 0 || st->mix_mem > 0) {
        double room = (double)after;
        if (st->mix_cpu > 0 && (double)cpu / st->mix_cpu < room)
            room = (double)cpu / st->mix_cpu;
        if (st->mix_mem > 0 && (double)mem / st->mix_mem < room)
            room = (double)mem / st->mix_mem;
        mix = (double)after - room;
    }
    if (cpu < st->cpu_min || mem < st->mem_min) {
        shape = (double)after; /* no typical GPU pod fits beside what is left */
    } else {
        for (int c = 0; c < ch->n; c++) {
            int32_t f = gpu_free[ch->dev[c]];
            kept += leftover_of(st, f - ch->take) - leftover_of(st, f);
        }
        shape = (double)kept;
    }
    return W_FRAG * frag + W_BALANCE * balance + W_MIX * mix + W_SHAPE * shape;
}

/*
 * How hard to hold room for each typical pod (its weight in frag): its
 * frequency, except for a multi-GPU pod when the core says what the fleet
 * has left. Then it is W_HOLD x the hold: the pod's demand still to come
 * (its share of the GPU demand times the class's free GPU) over the places
 * left for it (free devices on slots that can take it whole), at most
 * HOLD_MAX; where work of that size is pinned to this node's pool, the
 * same ratio for the pool alone if it is higher. An idle 8-GPU node is
 * worth keeping when 8-GPU pods will want it, not when the fleet has many
 * more of them than such pods can fill: holding every one from the start
 * starves the single-GPU pods of the models left to them.
 *
 * Returns the pressure of pinned demand on the pool of the devices shown:
 * the GPU that pods naming this pool will still ask for (their share of
 * the demand, a set's share split evenly over its pools, times the class's
 * free GPU) over what the pool has free. Near 1 the pool is needed by work
 * that can go nowhere else.
 *
 * One pass over the slot counts serves every size (a table of j / k, not a
 * division per count): this runs for every node of every decision.
 */
static double room_weights(const struct fill_state *st, const struct sched_room *room, double *wf)
{
    double places[MAX_SIZES] = {0}, pool_places[MAX_SIZES] = {0}, pinned[MAX_SIZES] = {0};
    double share = 0, cf;
    bool by_pool = false;

    for (size_t i = 0; i < st->n_pods; i++)
        wf[i] = st->pods[i].freq;
    if (!room)
        return 0;
    cf = (double)room->class_free;
    for (size_t i = 0; i < st->n_pins && room->pool_id; i++) {
        const struct fgd_pin *pn = &st->pins[i];
        for (int k = 0; k < pn->n_pools; k++) {
            if (pn->pool_ids[k] != room->pool_id)
                continue;
            share += pn->gpu_share / pn->n_pools;
            if (st->pin_size[i] >= 0 && room->pool_slots_by_whole) {
                pinned[st->pin_size[i]] += pn->gpu_share / pn->n_pools;
                by_pool = true;
            }
        }
    }
    for (int j = 1; j <= SCHED_MAX_GPUS_PER_NODE && st->n_sizes > 0; j++) {
        int32_t c = room->slots_by_whole[j], pc = by_pool ? room->pool_slots_by_whole[j] : 0;
        if (c == 0 && pc == 0)
            continue;
        for (int z = 0; z < st->n_sizes; z++) {
            places[z] += (double)c * st->quot[z][j];
            pool_places[z] += (double)pc * st->quot[z][j];
        }
    }
    for (size_t i = 0; i < st->n_pods; i++) {
        int z = st->size_of[i];
        double per = (double)st->pods[i].num_gpu * WHOLE, h;
        if (z < 0)
            continue;
        h = places[z] > 0 ? st->g_share[i] * cf / (places[z] * per) : HOLD_MAX;
        if (pinned[z] > 0 && pool_places[z] > 0 && pinned[z] * cf / (pool_places[z] * per) > h)
            h = pinned[z] * cf / (pool_places[z] * per);
        wf[i] = W_HOLD * (h > HOLD_MAX ? HOLD_MAX : h);
    }
    if (share == 0)
        return 0;
    return room->pool_free > 0 ? share * cf / (double)room->pool_free : 1e6;
}

static int64_t fill_score(const struct sched_policy *p, const struct sched_node_view *v,
                          const struct sched_replica_req *r, int *ret_gpus)
{
    const struct fill_state *st = p->state;
    struct pod_base b[MAX_TYPICAL];
    double wf[MAX_TYPICAL], pin;
    struct change none = {NULL, 0, 0};
    int64_t cpu = v->cpu_cap ? v->cpu_free : INT64_MAX / 4;
    int64_t mem = v->mem_cap ? v->mem_free : INT64_MAX / 4;
    int64_t total = 0, kept = 0, q, left;
    double before, best = 0;
    int best_g = -1;

    if (cpu < r->cpu_milli || mem < r->mem_mib)
        return INT64_MAX;
    pin = room_weights(st, v->room, wf);
    for (int g = 0; g < v->n_gpus; g++) {
        total += v->gpu_free[g];
        kept += leftover_of(st, v->gpu_free[g]);
    }
    for (size_t i = 0; i < st->n_pods; i++) {
        int32_t need = need_of(&st->pods[i]);
        b[i] = (struct pod_base){0, 0};
        for (int g = 0; g < v->n_gpus && need > 0; g++) {
            if (v->gpu_free[g] >= need)
                b[i].fit++;
            else
                b[i].unusable += v->gpu_free[g];
        }
    }
    before = measure(st, wf, b, kept, total, cpu, mem, v->gpu_free, &none);
    cpu -= r->cpu_milli;
    mem -= r->mem_mib;

    if (r->gpu_milli == 0) {
        best = measure(st, wf, b, kept, total, cpu, mem, v->gpu_free, &none);
    } else if (r->gpu_milli < WHOLE) {
        /* Each distinct free amount once; ties: the device with less free. */
        for (int g = 0; g < v->n_gpus; g++) {
            int32_t f = v->gpu_free[g];
            bool seen = false;
            if (f < r->gpu_milli)
                continue;
            for (int h = 0; h < g && !seen; h++)
                seen = v->gpu_free[h] == f;
            if (seen)
                continue;
            struct change ch = {&g, 1, r->gpu_milli};
            double a = measure(st, wf, b, kept, total, cpu, mem, v->gpu_free, &ch);
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
        struct change ch = {pick, k, WHOLE};
        best = measure(st, wf, b, kept, total, cpu, mem, v->gpu_free, &ch);
        memcpy(ret_gpus, pick, (size_t)k * sizeof(int));
    }
    /*
     * Growth in thousandths of a milli-GPU, plus the charge for taking a
     * pool's GPU that pinned work will want (squared, so that it steers
     * only once a pool runs short: all pools start near the same pressure),
     * then the free GPU left as the tie-break.
     */
    double d = (best - before + W_PIN * pin * pin * (double)r->gpu_milli) * 1000.0;
    d = d > (double)SCORE_CAP ? (double)SCORE_CAP : d < -(double)SCORE_CAP ? -(double)SCORE_CAP : d;
    q = (int64_t)(d >= 0 ? d + 0.5 : d - 0.5);
    left = total - r->gpu_milli;
    left = left < 0 ? 0 : left > 65535 ? 65535 : left;
    return q * 65536 + left;
}

/*
 * leftover[f]: f minus the most that a multiset of the typical pods'
 * per-device sizes can add up to without passing f (an unbounded knapsack
 * over at most WHOLE amounts).
 */
static void build_leftover(struct fill_state *st)
{
    bool reach[WHOLE + 1] = {true};
    int best = 0;
    for (int f = 1; f <= WHOLE; f++) {
        for (size_t i = 0; i < st->n_pods && !reach[f]; i++) {
            int32_t sz = need_of(&st->pods[i]);
            reach[f] = sz > 0 && sz <= f && reach[f - sz];
        }
    }
    for (int f = 0; f <= WHOLE; f++) {
        if (reach[f])
            best = f;
        st->leftover[f] = f - best;
    }
}

struct sched_policy *sched_policy_fgd_fill_new(const struct fgd_workload *typical)
{
    size_t n = typical->n_pods < MAX_TYPICAL ? typical->n_pods : MAX_TYPICAL;
    struct sched_policy *p = xcalloc(1, sizeof(*p));
    struct fill_state *st = xcalloc(1, sizeof(*st));
    double w = 0, cpu = 0, mem = 0, gpu = 0;

    st->n_pods = n;
    memcpy(st->pods, typical->pods, n * sizeof(st->pods[0]));
    st->n_pins = typical->n_pins < MAX_PINS ? typical->n_pins : MAX_PINS;
    if (st->n_pins)
        memcpy(st->pins, typical->pins, st->n_pins * sizeof(st->pins[0]));
    st->cpu_min = st->mem_min = INT64_MAX / 4;
    for (size_t i = 0; i < n; i++) {
        const struct fgd_pod *m = &st->pods[i];
        st->w_gpu[i] = m->num_gpu > 0 ? m->freq : 0;
        w += st->w_gpu[i];
        cpu += m->freq * (double)m->cpu_milli;
        mem += m->freq * (double)m->mem_mib;
        gpu += m->num_gpu > 0 ? m->freq * gpu_of(m) : 0;
        if (m->num_gpu > 0 && m->cpu_milli < st->cpu_min)
            st->cpu_min = m->cpu_milli;
        if (m->num_gpu > 0 && m->mem_mib < st->mem_min)
            st->mem_min = m->mem_mib;
    }
    for (size_t i = 0; i < n && w > 0; i++)
        st->w_gpu[i] /= w;
    for (size_t i = 0; i < n && gpu > 0; i++)
        st->g_share[i] =
            st->pods[i].num_gpu > 0 ? st->pods[i].freq * gpu_of(&st->pods[i]) / gpu : 0;
    if (gpu > 0) {
        st->mix_cpu = cpu / gpu;
        st->mix_mem = mem / gpu;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t k = st->pods[i].num_gpu;
        st->size_of[i] = -1;
        for (int z = 0; z < st->n_sizes && k > 1; z++) {
            if (st->size_k[z] == k)
                st->size_of[i] = z;
        }
        if (k > 1 && st->size_of[i] < 0 && st->n_sizes < MAX_SIZES) {
            st->size_k[st->n_sizes] = k;
            for (int j = 0; j <= SCHED_MAX_GPUS_PER_NODE; j++)
                st->quot[st->n_sizes][j] = (double)(j / k);
            st->size_of[i] = st->n_sizes++;
        }
    }
    for (size_t i = 0; i < st->n_pins; i++) {
        st->pin_size[i] = -1;
        for (int z = 0; z < st->n_sizes; z++) {
            if (st->size_k[z] == st->pins[i].num_gpu)
                st->pin_size[i] = z;
        }
    }
    build_leftover(st);
    p->name = "fgd-fill";
    p->score = fill_score;
    p->state = st;
    return p;
}
