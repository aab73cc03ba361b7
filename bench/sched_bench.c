/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sched_bench: the pure-scheduler benchmark of issue 3. It builds a
 * synthetic fleet (by default 10,000 nodes x 8 GPUs in 3 GPU classes), 500
 * projects in 50 organizations with quotas (pool owners with derived
 * guarantees, limits, some org caps) and 200,000 queued workloads of mixed
 * shapes (1, 2, 4, 8 GPUs, multi-node gangs, milli shares; P1 and P2), then
 * measures:
 *   (a) admission+placement decisions per second while draining the initial
 *       queue: passes until one admits nothing (victims are released between
 *       passes); decisions/s = admitted / time spent in sched_pass;
 *   (b) the latency of the scheduling pass that follows one completion
 *       (sched_released of a random running workload), p50/p99/max over
 *       --events events (victims decided by a pass are released and settled
 *       by an untimed pass afterwards);
 *   (c) peak RSS (getrusage ru_maxrss) of the whole process.
 * The library has no clock; this program times it with CLOCK_MONOTONIC and
 * feeds it a synthetic time. Targets: >= 200,000 decisions/s, p99 <= 5 ms,
 * peak RSS <= 512 MiB; --check makes the exit status say whether they hold.
 *
 * Usage: sched_bench [--seed N] [--nodes N] [--gpus-per-node N]
 *                    [--projects N] [--orgs N] [--workloads N] [--events N]
 *                    [--fair-share current|decayed] [--half-life-ms N] [--check]
 *        sched_bench --scale [--runs N] [--seed N] [--events N]
 *        (either with --cpu-time: the passes timed by the thread's CPU time)
 *
 * --scale runs the default size and one twice the fleet with five times the
 * queue (20,000 nodes, 1,000,000 queued, 1,000 projects in 100 orgs), each
 * --runs times (default 3), alternating, and prints the medians and their
 * ratio: whether a pass costs more as the fleet grows (issue 17's goal: p99
 * within 1.2x, drain decisions/s not lower, peak RSS <= 1 GiB).
 * It also prints how much work (struct sched_stats: workloads judged,
 * placements tried) a pass does at each size, and their ratio, which unlike
 * time is exact: --check-work makes the exit status say whether each stays
 * within 1.2x (a test runs it so).
 * --fair-share decayed orders borrowed capacity by decayed past usage
 * (sched.h), each project given a past of up to 8 GPUs per class over the
 * last half-life (default 7 days) first, from a hash of its id, so the
 * workloads and fleet are the same as with the current rule.
 */
#include "base/common.h"

#include <sys/resource.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "sched/sched.h"
#include "bench-util.h"

#define N_CLASSES 3
#define NODES_PER_POOL 20

struct opts {
    int64_t seed, nodes, gpus_per_node, projects, orgs, workloads, events, runs;
    bool check, scale;
    bool check_work;      /* --check-work: the exit status says whether the work ratios hold */
    bool decayed;         /* --fair-share decayed */
    int64_t half_life_ms; /* --half-life-ms */
};

/*
 * What the passes are timed by: wall time, or with --cpu-time the thread's
 * CPU time (on a shared machine, time the process spent waiting for a core
 * is not the scheduler's).
 */
static clockid_t timing_clock = CLOCK_MONOTONIC;

static int64_t clock_ns(void)
{
    struct timespec ts;
    clock_gettime(timing_clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What one run measured. */
struct result {
    double rate, p50, p99, pmax, rss_mib;
    /*
     * Work, not time (struct sched_stats): in the drain, per admission;
     * after one completion, per timed pass (mean, and the p99 of workloads
     * judged). The same on every machine and every run of a seed.
     */
    double drain_examined, drain_placements;
    double ev_examined, ev_placements, ev_turns, ev_victim_nodes, ev_examined_p99;
};

/* For the slow-pass report only: a plain number or 0. */
static int64_t atoll_checked(const char *s)
{
    int64_t v = 0;
    return parse_int64(s, 0, INT64_MAX / 1000000, &v) == 0 ? v : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int usage(void)
{
    fprintf(stderr, "usage: sched_bench [--seed N] [--nodes N] [--gpus-per-node N] "
                    "[--projects N] [--orgs N] [--workloads N] [--events N] "
                    "[--fair-share current|decayed] [--half-life-ms N] [--check] [--cpu-time]\n"
                    "       sched_bench --scale [--runs N] [--seed N] [--events N] [--cpu-time] "
                    "[--check] [--check-work]\n");
    return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    o->seed = 1;
    o->nodes = 10000;
    o->gpus_per_node = 8;
    o->projects = 500;
    o->orgs = 50;
    o->workloads = 200000;
    o->events = 2000;
    o->runs = 3;
    o->check = o->scale = o->check_work = false;
    o->decayed = false;
    o->half_life_ms = INT64_C(7) * 24 * 3600 * 1000;
    for (int i = 1; i < argc; i++) {
        int64_t *dst = NULL, lo = 1, hi = 100000000;
        if (strcmp(argv[i], "--check") == 0) {
            o->check = true;
            continue;
        }
        if (strcmp(argv[i], "--check-work") == 0) {
            o->check_work = true;
            continue;
        }
        if (strcmp(argv[i], "--scale") == 0) {
            o->scale = true;
            continue;
        }
        if (strcmp(argv[i], "--cpu-time") == 0) {
            timing_clock = CLOCK_THREAD_CPUTIME_ID;
            continue;
        }
        if (strcmp(argv[i], "--fair-share") == 0 && i + 1 < argc &&
            (strcmp(argv[i + 1], "current") == 0 || strcmp(argv[i + 1], "decayed") == 0)) {
            o->decayed = strcmp(argv[++i], "decayed") == 0;
            continue;
        }
        if (strcmp(argv[i], "--runs") == 0) {
            dst = &o->runs;
            hi = 100;
        } else if (strcmp(argv[i], "--seed") == 0) {
            dst = &o->seed;
            lo = 0;
            hi = INT64_MAX;
        } else if (strcmp(argv[i], "--nodes") == 0) {
            dst = &o->nodes;
        } else if (strcmp(argv[i], "--gpus-per-node") == 0) {
            dst = &o->gpus_per_node;
            hi = 8;
        } else if (strcmp(argv[i], "--projects") == 0) {
            dst = &o->projects;
        } else if (strcmp(argv[i], "--orgs") == 0) {
            dst = &o->orgs;
        } else if (strcmp(argv[i], "--workloads") == 0) {
            dst = &o->workloads;
        } else if (strcmp(argv[i], "--events") == 0) {
            dst = &o->events;
        } else if (strcmp(argv[i], "--half-life-ms") == 0) {
            dst = &o->half_life_ms;
            hi = INT64_MAX / 4;
        }
        if (!dst || i + 1 >= argc || parse_int64(argv[i + 1], lo, hi, dst) != 0)
            return usage();
        i++;
    }
    if (o->orgs > o->projects)
        o->orgs = o->projects;
    return 0;
}

/* The running set: ids in an array, with each id's index (or -1). */
struct running {
    int64_t *ids;
    int32_t *pos; /* by workload id */
    size_t n;
};

static void running_add(struct running *r, int64_t id)
{
    r->pos[id] = (int32_t)r->n;
    r->ids[r->n++] = id;
}

static void running_remove(struct running *r, int64_t id)
{
    int32_t i = r->pos[id];
    if (i < 0)
        return;
    r->ids[i] = r->ids[--r->n];
    r->pos[r->ids[i]] = i;
    r->pos[id] = -1;
}

struct counts {
    int64_t admitted, preemptions, victims;
};

/* Applies a pass's decisions to the running set; returns the victims released. */
static void apply(struct sched *s, struct running *r, const struct sched_decisions *d,
                  int64_t now_ms, struct counts *c)
{
    for (size_t i = 0; i < d->n_admits; i++)
        running_add(r, d->admits[i].workload_id);
    c->admitted += (int64_t)d->n_admits;
    c->preemptions += (int64_t)d->n_preemptions;
    c->victims += (int64_t)d->n_victims;
    /* The backend stops victims at once: release them now. */
    for (size_t i = 0; i < d->n_victims; i++) {
        int64_t id = d->victims[i].workload_id;
        running_remove(r, id);
        if (sched_released(s, id, now_ms) != 0) {
            fprintf(stderr, "sched_released of victim %" PRId64 " failed\n", id);
            exit(1);
        }
    }
}

static void build_fleet(struct sched *s, const struct opts *o, int64_t *ret_pools)
{
    int64_t n_pools = 0;
    for (int64_t c = 1; c <= N_CLASSES; c++)
        if (sched_add_class(s, c) != 0)
            exit(1);
    for (int64_t p = 0; p < o->projects; p++)
        if (sched_set_project(s, 1 + p, 1 + p % o->orgs, (int)(1 + p % 4)) != 0)
            exit(1);
    /*
     * Pools of NODES_PER_POOL nodes, each owned by one project (the first
     * projects, one pool each) and open to the owner's organization; about
     * 40% of the fleet is pooled, the rest open to everyone.
     */
    int64_t pooled_nodes = o->nodes * 4 / 10;
    n_pools = pooled_nodes / NODES_PER_POOL;
    if (n_pools > o->projects)
        n_pools = o->projects;
    for (int64_t i = 0; i < n_pools; i++) {
        int64_t org = 1 + i % o->orgs;
        struct sched_pool_spec ps = {.id = 1 + i,
                                     .owner_project_id = 1 + i,
                                     .access_org_ids = &org,
                                     .n_access_orgs = 1};
        if (sched_set_pool(s, &ps) != 0)
            exit(1);
    }
    for (int64_t n = 0; n < o->nodes; n++) {
        struct sched_node_spec ns;
        memset(&ns, 0, sizeof ns);
        ns.id = 1 + n;
        ns.cluster_id = 1 + n / 2500;
        ns.cpu_milli = 128000;
        ns.mem_mib = 1024 * 1024;
        ns.block_id = 1 + n / 32;
        ns.labels[0] = (uint32_t)(1 + n % 4);
        ns.n_labels = 1;
        if (sched_add_node(s, &ns) != 0)
            exit(1);
        int64_t pool = n / NODES_PER_POOL < n_pools ? 1 + n / NODES_PER_POOL : 0;
        /* A pool's nodes share a class: class by pool, else by node. */
        int64_t cls = 1 + (pool ? (pool - 1) : n) % N_CLASSES;
        for (int64_t g = 0; g < o->gpus_per_node; g++)
            if (sched_add_gpu(s, 1 + n, (1 + n) * 16 + g, cls, pool) != 0)
                exit(1);
    }
    /* Quotas: owners derive their guarantee and may borrow 2x; others borrow up to 64 GPUs. */
    for (int64_t p = 0; p < o->projects; p++)
        for (int64_t c = 1; c <= N_CLASSES; c++) {
            bool owner = p < n_pools && 1 + p % N_CLASSES == c;
            int64_t g = owner ? NODES_PER_POOL * o->gpus_per_node * 1000 : 0;
            if (sched_set_quota(s, 1 + p, c, owner ? -1 : 0, owner ? 3 * g : 64000) != 0)
                exit(1);
        }
    /* Every fifth organization has a cap per class. */
    for (int64_t org = 1; org <= o->orgs; org += 5)
        for (int64_t c = 1; c <= N_CLASSES; c++)
            if (sched_set_org_cap(s, org, c, 1000 * 1000) != 0)
                exit(1);
    *ret_pools = n_pools;
}

static void gen_workload(struct sched_workload_spec *w, int64_t id, const struct opts *o,
                         int64_t n_pools)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    int64_t p = rng_range(0, o->projects - 1);
    w->project_id = 1 + p;
    w->submit_ms = id;
    w->priority = (int32_t)rng_range(0, 3);
    w->grace_ms = -1;
    w->requeue = rng_range(0, 9) < 7;
    w->replicas = 1;
    bool owner = p < n_pools;
    if (owner && rng_range(0, 99) < 40) {
        w->pclass = SCHED_P1;
        w->class_id = 1 + p % N_CLASSES;
    } else {
        w->pclass = SCHED_P2;
        w->class_id = rng_range(1, N_CLASSES);
        if (rng_range(0, 9) == 0)
            w->min_runtime_ms = 60000;
    }
    int64_t k = rng_range(0, 99);
    if (k < 10)
        w->gpu_milli = (int32_t)(250 * rng_range(1, 2)); /* shares */
    else if (k < 45)
        w->gpu_milli = 1000;
    else if (k < 65)
        w->gpu_milli = 2000;
    else if (k < 80)
        w->gpu_milli = 4000;
    else if (k < 95)
        w->gpu_milli = 8000;
    else {
        w->gpu_milli = 8000; /* multi-node gang */
        w->replicas = (int32_t)rng_range(2, 4);
        w->same_block = rng_range(0, 1) == 1;
    }
    if (w->gpu_milli > o->gpus_per_node * 1000)
        w->gpu_milli = (int32_t)(o->gpus_per_node * 1000);
    w->cpu_milli = 4000 * (w->gpu_milli >= 1000 ? w->gpu_milli / 1000 : 1);
    w->mem_mib = 16384 * (w->gpu_milli >= 1000 ? w->gpu_milli / 1000 : 1);
    if (rng_range(0, 19) == 0) {
        w->selector[0] = (uint32_t)rng_range(1, 4);
        w->n_selector = 1;
    }
}

/* One run at the size o gives: prints its report, fills res; 1 on a failure of the core. */
static int run_bench(const struct opts *opts, struct result *res)
{
    struct opts o = *opts;
    struct sched_config cfg;
    struct sched_decisions d;
    struct running run;
    struct counts cnt = {0, 0, 0};
    int64_t n_pools = 0, t_ms = 1000000000;

    rng_state = (uint64_t)o.seed;
    sched_config_init(&cfg);
    cfg.default_grace_ms = 30000;
    cfg.reserve_after_ms = 600000;
    if (o.decayed) {
        cfg.fair_share = SCHED_SHARE_DECAYED;
        cfg.half_life_ms = o.half_life_ms;
    }
    struct sched *s = sched_new(&cfg);
    if (!s)
        return 1;
    sched_decisions_init(&d);
    run.ids = xcalloc((size_t)o.workloads + 1, sizeof *run.ids);
    run.pos = xmalloc(((size_t)o.workloads + 1) * sizeof *run.pos);
    for (int64_t i = 0; i <= o.workloads; i++)
        run.pos[i] = -1;
    run.n = 0;

    int64_t t0 = clock_ns();
    build_fleet(s, &o, &n_pools);
    for (int64_t p = 1; o.decayed && p <= o.projects; p++) {
        for (int64_t c = 1; c <= N_CLASSES; c++) {
            /* a hash, not rng_next: the workloads stay those of the current rule */
            uint64_t x = (uint64_t)(p * 3 + c) * 0x9e3779b97f4a7c15ULL;
            sched_add_usage(s, p, c, (int64_t)((x >> 33) % 8001),
                            t_ms - o.half_life_ms > 0 ? t_ms - o.half_life_ms : 0, t_ms);
        }
    }
    int64_t t_fleet = clock_ns() - t0;

    t0 = clock_ns();
    for (int64_t id = 1; id <= o.workloads; id++) {
        struct sched_workload_spec w;
        gen_workload(&w, id, &o, n_pools);
        if (sched_submit(s, &w, t_ms) != 0) {
            fprintf(stderr, "submit of %" PRId64 " failed\n", id);
            return 1;
        }
    }
    int64_t t_submit = clock_ns() - t0;

    /* (a) Drain: passes until one admits nothing and preempts nothing. */
    struct sched_stats st0, st1;
    sched_get_stats(s, &st0);
    int64_t pass_ns = 0, first_pass_ns = 0;
    int passes = 0;
    for (;;) {
        sched_decisions_reset(&d);
        t0 = clock_ns();
        int rc = sched_pass(s, t_ms, &d);
        int64_t dt = clock_ns() - t0;
        if (rc < 0) {
            fprintf(stderr, "sched_pass failed: %d\n", rc);
            return 1;
        }
        pass_ns += dt;
        if (passes == 0)
            first_pass_ns = dt;
        passes++;
        apply(s, &run, &d, t_ms, &cnt);
        t_ms += 1;
        if ((d.n_admits == 0 && d.n_preemptions == 0) || passes >= 1000)
            break;
    }
    struct counts drained = cnt;
    sched_get_stats(s, &st1);
    double per_admit = drained.admitted > 0 ? 1.0 / (double)drained.admitted : 0;
    res->drain_examined = (double)(st1.examined - st0.examined) * per_admit;
    res->drain_placements = (double)(st1.placements - st0.placements) * per_admit;
    double rate = pass_ns > 0 ? (double)drained.admitted / ((double)pass_ns / 1e9) : 0;

    /* (b) One completion, then the next pass, timed. */
    int64_t n_ev = o.events;
    int64_t *lat = xcalloc((size_t)n_ev + 1, sizeof *lat);
    int64_t *judged = xcalloc((size_t)n_ev + 1, sizeof *judged);
    int64_t n_lat = 0, ev_admits = 0, ev_preemptions = 0;
    struct sched_stats work = {0};
    for (int64_t e = 0; e < n_ev && run.n > 0; e++) {
        int64_t id = run.ids[rng_range(0, (int64_t)run.n - 1)];
        t_ms += 1000;
        running_remove(&run, id);
        if (sched_released(s, id, t_ms) != 0) {
            fprintf(stderr, "sched_released of %" PRId64 " failed\n", id);
            return 1;
        }
        sched_decisions_reset(&d);
        sched_get_stats(s, &st0);
        t0 = clock_ns();
        int rc = sched_pass(s, t_ms, &d);
        lat[n_lat] = clock_ns() - t0;
        sched_get_stats(s, &st1);
        judged[n_lat++] = (int64_t)(st1.examined - st0.examined);
        work.examined += st1.examined - st0.examined;
        work.placements += st1.placements - st0.placements;
        work.turns += st1.turns - st0.turns;
        work.victim_nodes += st1.victim_nodes - st0.victim_nodes;
        if (rc < 0)
            return 1;
        if (getenv("SCHED_BENCH_SLOW_MS") &&
            lat[n_lat - 1] > atoll_checked(getenv("SCHED_BENCH_SLOW_MS")) * 1000000)
            fprintf(stderr, "slow pass %.3f ms: %zu admits, %zu preemptions, %zu victims\n",
                    (double)lat[n_lat - 1] / 1e6, d.n_admits, d.n_preemptions, d.n_victims);
        ev_admits += (int64_t)d.n_admits;
        ev_preemptions += (int64_t)d.n_preemptions;
        bool had_victims = d.n_victims > 0;
        apply(s, &run, &d, t_ms, &cnt);
        if (had_victims) {
            /* Settle what the released victims changed, untimed. */
            sched_decisions_reset(&d);
            if (sched_pass(s, t_ms, &d) < 0)
                return 1;
            ev_admits += (int64_t)d.n_admits;
            apply(s, &run, &d, t_ms, &cnt);
        }
    }
    qsort(lat, (size_t)n_lat, sizeof *lat, cmp_i64);
    double p50 = n_lat ? (double)lat[n_lat / 2] / 1e6 : 0;
    double p99 = n_lat ? (double)lat[(n_lat * 99) / 100 < n_lat ? (n_lat * 99) / 100 : n_lat - 1] / 1e6
                       : 0;
    double pmax = n_lat ? (double)lat[n_lat - 1] / 1e6 : 0;
    qsort(judged, (size_t)n_lat, sizeof *judged, cmp_i64);
    double per_pass = n_lat ? 1.0 / (double)n_lat : 0;
    res->ev_examined = (double)work.examined * per_pass;
    res->ev_placements = (double)work.placements * per_pass;
    res->ev_turns = (double)work.turns * per_pass;
    res->ev_victim_nodes = (double)work.victim_nodes * per_pass;
    res->ev_examined_p99 = n_lat ? (double)judged[(n_lat * 99) / 100] : 0;
    free(judged);

    /* (c) Peak RSS. */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rss_mib = (double)ru.ru_maxrss / 1024.0;

    int64_t cap_total = 0, free_total = 0;
    for (int64_t c = 1; c <= N_CLASSES; c++) {
        int64_t cap = 0, fr = 0;
        sched_class_capacity(s, c, &cap, &fr);
        cap_total += cap;
        free_total += fr;
    }
    bool ok_rate = rate >= 200000, ok_p99 = p99 <= 5.0, ok_rss = rss_mib <= 512.0;
    printf("sched_bench (pure scheduler, synthetic; seed %" PRId64 "; fair share %s)\n", o.seed,
           o.decayed ? "decayed" : "current");
    printf("fleet: %" PRId64 " nodes x %" PRId64 " GPUs in %d classes, %" PRId64
           " pools; %" PRId64 " projects in %" PRId64 " orgs; built in %.1f ms\n",
           o.nodes, o.gpus_per_node, N_CLASSES, n_pools, o.projects, o.orgs,
           (double)t_fleet / 1e6);
    printf("submitted %" PRId64 " workloads in %.1f ms (%.0f/s)\n", o.workloads,
           (double)t_submit / 1e6, (double)o.workloads / ((double)t_submit / 1e9));
    printf("(a) drain: %d passes, %" PRId64 " admitted, %" PRId64 " preemptions (%" PRId64
           " victims), pass time %.1f ms (first pass %.1f ms): %.0f decisions/s  [target >= "
           "200000: %s]\n",
           passes, drained.admitted, drained.preemptions, drained.victims, (double)pass_ns / 1e6,
           (double)first_pass_ns / 1e6, rate, ok_rate ? "ok" : "MISSED");
    printf("    GPUs in use after drain: %.1f%% of %" PRId64 " milli\n",
           cap_total ? 100.0 * (double)(cap_total - free_total) / (double)cap_total : 0.0,
           cap_total);
    printf("(b) pass after one completion: %" PRId64 " events, p50 %.3f ms, p99 %.3f ms, max "
           "%.3f ms (%" PRId64 " admits, %" PRId64 " preemptions)  [target p99 <= 5 ms: %s]\n",
           n_lat, p50, p99, pmax, ev_admits, ev_preemptions, ok_p99 ? "ok" : "MISSED");
    printf("(c) peak RSS %.1f MiB  [target <= 512 MiB: %s]\n", rss_mib, ok_rss ? "ok" : "MISSED");
    printf("work: drain, per admission: %.2f workloads judged, %.2f placements tried; after one "
           "completion, per pass: %.1f workloads judged (p99 %.0f), %.1f placements, %.1f "
           "project turns, %.1f nodes judged by victim searches\n",
           res->drain_examined, res->drain_placements, res->ev_examined, res->ev_examined_p99,
           res->ev_placements, res->ev_turns, res->ev_victim_nodes);

    free(lat);
    free(run.ids);
    free(run.pos);
    sched_decisions_release(&d);
    sched_free(s);
    res->rate = rate;
    res->p50 = p50;
    res->p99 = p99;
    res->pmax = pmax;
    res->rss_mib = rss_mib;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int64_t n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The two sizes, alternating, --runs times each; medians and their ratio.
 * The larger run's peak RSS is the process's (it is measured last).
 */
static int run_scale(const struct opts *o)
{
    struct opts size[2] = {*o, *o};
    double p99[2][100], p50[2][100], rate[2][100], rss = 0;
    struct result last[2];
    size[0].nodes = 10000, size[0].workloads = 200000, size[0].projects = 500, size[0].orgs = 50;
    size[1].nodes = 20000, size[1].workloads = 1000000, size[1].projects = 1000, size[1].orgs = 100;
    for (int64_t r = 0; r < o->runs; r++) {
        for (int k = 0; k < 2; k++) {
            struct result res;
            if (run_bench(&size[k], &res) != 0)
                return 1;
            p99[k][r] = res.p99;
            p50[k][r] = res.p50;
            rate[k][r] = res.rate;
            rss = res.rss_mib;
            last[k] = res; /* work counts are the same in every run */
        }
    }
    double m99[2], m50[2], mrate[2];
    for (int k = 0; k < 2; k++) {
        m99[k] = median(p99[k], o->runs);
        m50[k] = median(p50[k], o->runs);
        mrate[k] = median(rate[k], o->runs);
        printf("scale: %" PRId64 " nodes, %" PRId64 " queued: median of %" PRId64
               " runs: pass after one completion p50 %.3f ms, p99 %.3f ms; drain %.0f "
               "decisions/s\n",
               size[k].nodes, size[k].workloads, o->runs, m50[k], m99[k], mrate[k]);
    }
    bool ok_p99 = m99[1] <= 1.2 * m99[0], ok_rate = mrate[1] >= mrate[0], ok_rss = rss <= 1024;
    printf("scale: p99 ratio %.2f [goal <= 1.2: %s]; drain decisions/s ratio %.2f [goal >= 1: "
           "%s]; peak RSS %.1f MiB [goal <= 1024: %s]\n",
           m99[1] / m99[0], ok_p99 ? "ok" : "MISSED", mrate[1] / mrate[0],
           ok_rate ? "ok" : "MISSED", rss, ok_rss ? "ok" : "MISSED");
    /*
     * Work per pass, unlike time, is exact and the same on every machine:
     * whether the pass's algorithm looks at more as the fleet and the queues
     * grow. Nodes judged by victim searches are too few per pass to compare.
     */
    double work[4] = {last[1].drain_examined / last[0].drain_examined,
                      last[1].drain_placements / last[0].drain_placements,
                      last[1].ev_examined / last[0].ev_examined,
                      last[1].ev_examined_p99 / last[0].ev_examined_p99};
    bool ok_work = work[0] <= 1.2 && work[1] <= 1.2 && work[2] <= 1.2 && work[3] <= 1.2;
    printf("scale: work ratio (larger / default): drain per admission %.2f judged, %.2f "
           "placements; per pass after one completion %.2f judged (p99 %.2f), %.2f placements, "
           "%.2f nodes judged by victim searches [goal <= 1.2: %s]\n",
           work[0], work[1], work[2], work[3], last[1].ev_placements / last[0].ev_placements,
           last[0].ev_victim_nodes > 0 ? last[1].ev_victim_nodes / last[0].ev_victim_nodes : 0,
           ok_work ? "ok" : "MISSED");
    if (o->check_work && !ok_work)
        return 1;
    return o->check && !(ok_p99 && ok_rate && ok_rss) ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct result res;
    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    if (o.scale)
        return run_scale(&o);
    if (run_bench(&o, &res) != 0)
        return 1;
    if (o.check && !(res.rate >= 200000 && res.p99 <= 5.0 && res.rss_mib <= 512.0))
        return 1;
    return 0;
}
