/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fgd_bench: the experiment of Weng et al., "Beware of Fragmentation"
 * (USENIX ATC '23) run through our own scheduler core (src/sched) and its
 * placement policy interface (src/sched/policies.h), issue 4.
 *
 * The cluster is openb_node_list_gpu_node.csv (1213 nodes, 6212 GPUs).
 * All GPUs are one scheduler class, so that a pod without gpu_spec may use
 * any model, as in the paper; each GPU model is a pool owned by the one
 * project, and a pod with a gpu_spec ("A|B") is restricted to those pools.
 * For each seed the pod list is shuffled, then pods are sampled from it
 * with replacement and submitted one at a time (sched_submit, sched_pass);
 * a pod the pass does not admit is cancelled and counts as failed. This
 * stops once the GPU requested (failed pods included) reaches 130% of
 * capacity. At 95%, 100% and 130% "arrived" it records the unallocated GPU
 * share and the fragmentation (expected free GPU that the typical pods
 * could not use, fgd_node_frag summed over nodes), and prints per policy
 * the median and [min-max] over seeds next to the paper's medians, plus
 * decisions per second (pods decided / time inside sched_pass). fgd-fill
 * is also told the list's pinned demand (add_pins), as placement-pods can
 * tell the daemon's.
 *
 * Usage: fgd_bench [--data DIR] [--pods FILE] [--policies a,b,...]
 *                  [--seeds N] [--seed-base S] [--skip-cpu-pods] [--diag] [DIR]
 *
 * --skip-cpu-pods is for diagnosis: CPU-only pods are drawn but not
 * submitted, because the core places them itself (round robin) instead of
 * asking the policy (docs/placement.md). --diag prints where the
 * unallocated GPU is at each point (print_diag).
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "sched/policies.h"
#include "sched/sched.h"
#include "bench-util.h"

#define WHOLE 1000
#define MAX_MODELS 32
#define MAX_LINE 4096
#define MAX_FIELDS 16
#define N_POINTS 3
#define N_SHAPE_KEYS (WHOLE + SCHED_MAX_GPUS_PER_NODE + 1)
#define GPU_CLASS 1
#define PROJECT 1

static const int points_pct[N_POINTS] = {95, 100, 130};

/* Published medians (unallocated GPU %, default pod list), issue 4. */
static const struct {
    const char *name;
    double v[N_POINTS];
} paper[] = {
    {"random", {14.32, 13.75, 12.62}},  {"dotprod", {9.47, 9.44, 9.20}},
    {"clustering", {8.47, 8.42, 8.21}}, {"packing", {8.23, 8.19, 7.94}},
    {"bestfit", {7.14, 7.09, 6.89}},    {"fgd", {5.09, 4.77, 4.60}},
};

struct node {
    int64_t cpu, mem;
    int n_gpus;
    int first_gpu; /* into the fleet's gpu arrays */
    int model;
};

struct pod {
    int64_t cpu, mem;
    int32_t num_gpu, gpu_milli;
    int n_models; /* 0: any */
    int models[MAX_MODELS];
};

struct fleet {
    struct node *nodes;
    int n_nodes;
    int n_gpus;
    char models[MAX_MODELS][32];
    int n_models;
};

struct result {
    double unalloc[N_POINTS], frag[N_POINTS];
    int64_t decided, failed;
    int64_t pass_ns;
};

/* Diagnosis only (--skip-cpu-pods): CPU-only pods are drawn but not submitted. */
static bool skip_cpu_pods;
/* Diagnosis (--diag): at each point, where the unallocated GPU is (print_diag). */
static bool diag;

/* Splits a CSV line (no quoting in these files) in place; returns the field count. */
static int split_csv(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    line[strcspn(line, "\r\n")] = '\0';
    while (n < max) {
        fields[n++] = p;
        p = strchr(p, ',');
        if (!p)
            break;
        *p++ = '\0';
    }
    return n;
}

static int field_int(const char *s, int64_t *ret)
{
    return parse_int64(s, 0, INT64_MAX / 4, ret) == 0 ? 0 : -1;
}

static int model_index(struct fleet *f, const char *name, bool add)
{
    for (int i = 0; i < f->n_models; i++) {
        if (strcmp(f->models[i], name) == 0)
            return i;
    }
    if (!add || f->n_models == MAX_MODELS)
        return -1;
    snprintf(f->models[f->n_models], sizeof(f->models[0]), "%s", name);
    return f->n_models++;
}

static FILE *open_in(const char *dir, const char *file, char *path, size_t size)
{
    if (strchr(file, '/'))
        snprintf(path, size, "%s", file);
    else
        snprintf(path, size, "%s/%s", dir, file);
    return fopen(path, "r");
}

/*
 * Columns are found by the header line, so files with the columns in another
 * order or with fewer optional ones load too (the trace publishes pod lists
 * with only name,cpu_milli,memory_mib,num_gpu,gpu_milli). col[i] is the index
 * of names[i] in the header, -1 when absent; a missing required one is an error.
 */
static int read_header(FILE *fp, const char *path, const char *const *names, int n_names,
                       int n_required, int *col)
{
    char line[MAX_LINE];
    char *fl[MAX_FIELDS];
    int n;
    if (!fgets(line, sizeof(line), fp)) {
        fprintf(stderr, "fgd_bench: '%s' is empty\n", path);
        return -1;
    }
    n = split_csv(line, fl, MAX_FIELDS);
    for (int i = 0; i < n_names; i++) {
        col[i] = -1;
        for (int k = 0; k < n; k++) {
            if (strcmp(fl[k], names[i]) == 0)
                col[i] = k;
        }
        if (col[i] < 0 && i < n_required) {
            fprintf(stderr, "fgd_bench: '%s' has no column '%s'\n", path, names[i]);
            return -1;
        }
    }
    return 0;
}

/* Field `c` of a split line, "" when the column is absent or the line is short. */
static const char *col_of(char **fl, int n, int c)
{
    return c >= 0 && c < n ? fl[c] : "";
}

static int load_nodes(const char *dir, struct fleet *f)
{
    static const char *const names[] = {"cpu_milli", "memory_mib", "gpu", "model"};
    char path[1024], line[MAX_LINE];
    char *fl[MAX_FIELDS];
    int cap = 0, lineno = 1, col[4];
    FILE *fp = open_in(dir, "openb_node_list_gpu_node.csv", path, sizeof(path));
    if (!fp) {
        fprintf(stderr, "fgd_bench: could not open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (read_header(fp, path, names, 4, 4, col) < 0) {
        fclose(fp);
        return -1;
    }
    while (fgets(line, sizeof(line), fp)) {
        int64_t cpu, mem, gpus;
        int n = split_csv(line, fl, MAX_FIELDS);
        lineno++;
        if (field_int(col_of(fl, n, col[0]), &cpu) || field_int(col_of(fl, n, col[1]), &mem) ||
            field_int(col_of(fl, n, col[2]), &gpus) || gpus > SCHED_MAX_GPUS_PER_NODE) {
            fprintf(stderr, "fgd_bench: '%s' line %d: bad node row\n", path, lineno);
            fclose(fp);
            return -1;
        }
        if (f->n_nodes == cap) {
            cap = cap ? cap * 2 : 1024;
            f->nodes = xreallocarray(f->nodes, (size_t)cap, sizeof(*f->nodes));
        }
        int m = model_index(f, col_of(fl, n, col[3]), true);
        if (m < 0) {
            fprintf(stderr, "fgd_bench: '%s': too many GPU models\n", path);
            fclose(fp);
            return -1;
        }
        f->nodes[f->n_nodes++] = (struct node){cpu, mem, (int)gpus, f->n_gpus, m};
        f->n_gpus += (int)gpus;
    }
    fclose(fp);
    return 0;
}

static int load_pods(const char *dir, const char *file, struct fleet *f, struct pod **ret,
                     size_t *ret_n)
{
    /* The first four are required; gpu_spec is optional (empty: any model). */
    static const char *const names[] = {"cpu_milli", "memory_mib", "num_gpu", "gpu_milli",
                                        "gpu_spec"};
    char path[1024], line[MAX_LINE];
    char *fl[MAX_FIELDS];
    size_t n = 0, cap = 0;
    int lineno = 1, col[5];
    struct pod *pods = NULL;
    FILE *fp = open_in(dir, file, path, sizeof(path));
    if (!fp) {
        fprintf(stderr, "fgd_bench: could not open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (read_header(fp, path, names, 5, 4, col) < 0) {
        fclose(fp);
        return -1;
    }
    while (fgets(line, sizeof(line), fp)) {
        int64_t cpu, mem, num, milli;
        struct pod pd = {0};
        int nf = split_csv(line, fl, MAX_FIELDS);
        char spec[MAX_LINE];
        lineno++;
        if (field_int(col_of(fl, nf, col[0]), &cpu) || field_int(col_of(fl, nf, col[1]), &mem) ||
            field_int(col_of(fl, nf, col[2]), &num) || field_int(col_of(fl, nf, col[3]), &milli) ||
            num > SCHED_MAX_GPUS_PER_NODE || milli > WHOLE || (num > 1 && milli != WHOLE) ||
            (num > 0 && milli == 0)) {
            fprintf(stderr, "fgd_bench: '%s' line %d: bad pod row\n", path, lineno);
            free(pods);
            fclose(fp);
            return -1;
        }
        pd.cpu = cpu;
        pd.mem = mem;
        pd.num_gpu = (int32_t)num;
        pd.gpu_milli = num == 0 ? 0 : (int32_t)milli;
        snprintf(spec, sizeof(spec), "%s", col_of(fl, nf, col[4]));
        /* gpu_spec "A|B": only those models; models not in the fleet are dropped. */
        for (char *s = spec; *s && pd.num_gpu > 0;) {
            char *bar = strchr(s, '|');
            if (bar)
                *bar = '\0';
            int m = model_index(f, s, false);
            if (m >= 0 && pd.n_models < MAX_MODELS)
                pd.models[pd.n_models++] = m;
            if (!bar)
                break;
            s = bar + 1;
        }
        if (spec[0] && pd.num_gpu > 0 && pd.n_models == 0)
            pd.n_models = -1; /* only models the fleet lacks: never placeable */
        if (n == cap) {
            cap = cap ? cap * 2 : 8192;
            pods = xreallocarray(pods, cap, sizeof(*pods));
        }
        pods[n++] = pd;
    }
    fclose(fp);
    *ret = pods;
    *ret_n = n;
    return 0;
}

static int64_t gpu_id_of(int node, int j)
{
    return (int64_t)(node + 1) * 256 + j;
}

static struct sched *build_sched(const struct fleet *f, const struct sched_policy *pol)
{
    struct sched_config cfg;
    struct sched *s;
    sched_config_init(&cfg);
    cfg.policy = pol;
    cfg.reserve_after_ms = INT64_MAX / 4;
    s = sched_new(&cfg);
    if (!s || sched_add_class(s, GPU_CLASS) < 0 || sched_set_project(s, PROJECT, 1, 1) < 0)
        goto fail;
    for (int m = 0; m < f->n_models; m++) {
        struct sched_pool_spec ps = {.id = m + 1, .owner_project_id = PROJECT};
        if (sched_set_pool(s, &ps) < 0)
            goto fail;
    }
    for (int i = 0; i < f->n_nodes; i++) {
        struct sched_node_spec ns = {
            .id = i + 1, .cluster_id = 1, .cpu_milli = f->nodes[i].cpu, .mem_mib = f->nodes[i].mem};
        if (sched_add_node(s, &ns) < 0)
            goto fail;
        for (int j = 0; j < f->nodes[i].n_gpus; j++) {
            if (sched_add_gpu(s, i + 1, gpu_id_of(i, j), GPU_CLASS, f->nodes[i].model + 1) < 0)
                goto fail;
        }
    }
    return s;
fail:
    fprintf(stderr, "fgd_bench: could not build the scheduler\n");
    sched_free(s);
    return NULL;
}

/* Sum of node fragmentation over the fleet, in milli-GPU. */
static double fleet_frag(const struct fleet *f, const struct fgd_workload *typ,
                         const int64_t *cpu_free, const int64_t *mem_free, const int32_t *gfree)
{
    double t = 0;
    for (int i = 0; i < f->n_nodes; i++)
        t += fgd_node_frag(typ, cpu_free[i], mem_free[i], gfree + f->nodes[i].first_gpu,
                           f->nodes[i].n_gpus);
    return t;
}

/*
 * --diag, at each point: GPU of the failed pods by shape (milli of a share,
 * 1000, or xN for N GPUs), free GPU on fully free and on partly used devices
 * by the node's CPU left (below 2, 4, 8, 16 CPUs, more), and free GPU by the
 * amount free on a device (amounts holding at least 0.01%), all % of capacity.
 */
static void print_diag(const struct fleet *f, const int64_t *cpu_free, const int32_t *gfree,
                       const int64_t *failed_by, int64_t cap, int pct)
{
    static const int64_t cpu_edge[] = {2000, 4000, 8000, 16000, INT64_MAX};
    int64_t whole[5] = {0}, part[5] = {0}, by_free[1001] = {0};
    printf("diag %d%% failed:", pct);
    for (int k = 0; k < N_SHAPE_KEYS; k++) {
        if (failed_by[k])
            printf(" %s%d:%.2f", k > 1000 ? "x" : "", k > 1000 ? k - 1000 : k,
                   100.0 * (double)failed_by[k] / (double)cap);
    }
    for (int i = 0; i < f->n_nodes; i++) {
        int b = 0;
        while (cpu_free[i] >= cpu_edge[b])
            b++;
        for (int g = 0; g < f->nodes[i].n_gpus; g++) {
            int32_t v = gfree[f->nodes[i].first_gpu + g];
            if (v == WHOLE)
                whole[b] += v;
            else
                part[b] += v;
            by_free[v] += v;
        }
    }
    printf("\ndiag free on whole devices by node CPU left <2,<4,<8,<16,more:");
    for (int b = 0; b < 5; b++)
        printf(" %.2f", 100.0 * (double)whole[b] / (double)cap);
    printf("\ndiag free on used devices by node CPU left <2,<4,<8,<16,more:");
    for (int b = 0; b < 5; b++)
        printf(" %.2f", 100.0 * (double)part[b] / (double)cap);
    printf("\ndiag free by model:");
    for (int m = 0; m < f->n_models; m++) {
        int64_t fr = 0;
        for (int i = 0; i < f->n_nodes; i++) {
            for (int g = 0; g < f->nodes[i].n_gpus && f->nodes[i].model == m; g++)
                fr += gfree[f->nodes[i].first_gpu + g];
        }
        printf(" %s:%.2f", f->models[m], 100.0 * (double)fr / (double)cap);
    }
    {
        /* Nodes of 8 or more devices by free devices, and those all free whose CPU is in use. */
        int by_whole[SCHED_MAX_GPUS_PER_NODE + 1] = {0}, cpu_used = 0;
        for (int i = 0; i < f->n_nodes; i++) {
            int w = 0;
            if (f->nodes[i].n_gpus < 8)
                continue;
            for (int g = 0; g < f->nodes[i].n_gpus; g++)
                w += gfree[f->nodes[i].first_gpu + g] == WHOLE;
            by_whole[w]++;
            cpu_used += w == f->nodes[i].n_gpus && cpu_free[i] < f->nodes[i].cpu;
        }
        printf("\ndiag 8-GPU nodes by free devices:");
        for (int w = 0; w <= 8; w++)
            printf(" %d:%d", w, by_whole[w]);
        printf(" (all free but CPU in use: %d)", cpu_used);
    }
    printf("\ndiag free by amount:");
    for (int v = 1; v < 1000; v++) {
        if (by_free[v] * 10000 >= cap)
            printf(" %d:%.2f", v, 100.0 * (double)by_free[v] / (double)cap);
    }
    printf("\n");
}

/*
 * typ: the list's typical pods, which FGD weighs and the fragmentation
 * figures use; fill_typ: fgd-fill's (the same plus the heaviest shapes).
 */
static int run_one(const struct fleet *f, const struct pod *pods, size_t n_pods, const char *policy,
                   uint64_t seed, const struct fgd_workload *typ,
                   const struct fgd_workload *fill_typ, struct result *res)
{
    struct sched_policy *pol =
        sched_policy_by_name(policy, seed, strcmp(policy, "fgd-fill") == 0 ? fill_typ : typ);
    struct sched *s;
    struct sched_decisions d;
    size_t *perm;
    int64_t cap = (int64_t)f->n_gpus * WHOLE, arrived = 0, allocated = 0, now = 1;
    int64_t *cpu_free = xcalloc((size_t)f->n_nodes, sizeof(int64_t));
    int64_t *mem_free = xcalloc((size_t)f->n_nodes, sizeof(int64_t));
    int32_t *gfree = xcalloc((size_t)f->n_gpus, sizeof(int32_t));
    int point = 0, rc = 0;
    int64_t failed_by[N_SHAPE_KEYS] = {0}; /* --diag: by share milli, 1000 + GPUs if more */

    if (!pol) {
        fprintf(stderr, "fgd_bench: unknown policy '%s'\n", policy);
        free(cpu_free);
        free(mem_free);
        free(gfree);
        return -1;
    }
    s = build_sched(f, pol);
    if (!s) {
        sched_policy_free(pol);
        free(cpu_free);
        free(mem_free);
        free(gfree);
        return -1;
    }
    for (int i = 0; i < f->n_nodes; i++) {
        cpu_free[i] = f->nodes[i].cpu;
        mem_free[i] = f->nodes[i].mem;
    }
    for (int g = 0; g < f->n_gpus; g++)
        gfree[g] = WHOLE;
    memset(res, 0, sizeof(*res));
    sched_decisions_init(&d);

    /* The paper's order: shuffle with the seed, then sample with replacement. */
    rng_state = seed;
    perm = xcalloc(n_pods, sizeof(*perm));
    for (size_t i = 0; i < n_pods; i++)
        perm[i] = i;
    for (size_t i = n_pods - 1; i > 0; i--) {
        size_t j = (size_t)(rng_next() % (i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }

    for (int64_t id = 1; point < N_POINTS; id++, now++) {
        const struct pod *pd = &pods[perm[rng_next() % n_pods]];
        int64_t req = (int64_t)pd->num_gpu * pd->gpu_milli;
        struct sched_workload_spec w = {.id = id,
                                        .project_id = PROJECT,
                                        .pclass = SCHED_P2,
                                        .submit_ms = now,
                                        .replicas = 1,
                                        .class_id = pd->num_gpu ? GPU_CLASS : 0,
                                        .gpu_milli =
                                            pd->num_gpu > 1 ? pd->num_gpu * WHOLE : pd->gpu_milli,
                                        .cpu_milli = pd->cpu,
                                        .mem_mib = pd->mem,
                                        .grace_ms = -1};
        bool placed = false;
        for (int k = 0; k < pd->n_models; k++)
            w.pool_ids[w.n_pools++] = pd->models[k] + 1;
        if (skip_cpu_pods && pd->num_gpu == 0) {
            arrived += req;
            continue;
        }
        if (pd->n_models >= 0 && sched_submit(s, &w, now) >= 0) {
            int64_t t0 = now_ns();
            sched_decisions_reset(&d);
            sched_pass(s, now, &d);
            res->pass_ns += now_ns() - t0;
            placed = d.n_admits == 1;
            if (placed) {
                const struct sched_admit *a = &d.admits[0];
                int node = (int)d.assigns[a->first_assign].node_id - 1;
                cpu_free[node] -= pd->cpu;
                mem_free[node] -= pd->mem;
                for (size_t k = 0; k < a->n_assigns; k++) {
                    const struct sched_assign *as = &d.assigns[a->first_assign + k];
                    if (as->gpu_id) {
                        int nd = (int)(as->gpu_id / 256) - 1;
                        gfree[f->nodes[nd].first_gpu + (int)(as->gpu_id % 256)] -= as->milli;
                        allocated += as->milli;
                    }
                }
            } else {
                sched_cancel(s, id, now);
            }
        }
        res->decided++;
        res->failed += !placed;
        if (!placed)
            failed_by[pd->num_gpu > 1 ? 1000 + pd->num_gpu : pd->gpu_milli] += req;
        arrived += req;
        while (point < N_POINTS && arrived * 100 >= cap * points_pct[point]) {
            res->unalloc[point] = 100.0 - 100.0 * (double)allocated / (double)cap;
            res->frag[point] = 100.0 * fleet_frag(f, typ, cpu_free, mem_free, gfree) / (double)cap;
            if (diag)
                print_diag(f, cpu_free, gfree, failed_by, cap, points_pct[point]);
            point++;
        }
    }
    free(perm);
    sched_decisions_release(&d);
    sched_free(s);
    sched_policy_free(pol);
    free(cpu_free);
    free(mem_free);
    free(gfree);
    return rc;
}

/*
 * fgd-fill is told the pinned demand as the daemon is (placement-pods): per
 * pool (model m is pool m + 1, as build_sched makes them), the share of the
 * list's GPU demand that can go only to some pools and falls to it. A pod
 * is pinned when its gpu_spec names models, or when only some models have
 * nodes with its GPUs, CPU and memory (8-GPU pods asking 120 CPUs fit G3
 * nodes only); its share is split over its models by their GPUs.
 */
static int add_pins(const struct fleet *f, const struct pod *pods, size_t n_pods,
                    struct fgd_workload *w)
{
    /* share[m][k]: pinned GPU on model m from pods of k devices (k: 1, 2, 4, 8, ...). */
    static double share[MAX_MODELS][SCHED_MAX_GPUS_PER_NODE + 1];
    double total = 0, cap[MAX_MODELS] = {0};
    int rc = 0;
    for (int i = 0; i < f->n_nodes; i++)
        cap[f->nodes[i].model] += f->nodes[i].n_gpus;
    for (size_t i = 0; i < n_pods; i++)
        total += (double)pods[i].num_gpu * pods[i].gpu_milli;
    for (size_t i = 0; i < n_pods && total > 0; i++) {
        const struct pod *pd = &pods[i];
        bool fits[MAX_MODELS] = {false}, all = true;
        double set_cap = 0;
        if (pd->num_gpu == 0 || pd->n_models < 0)
            continue;
        for (int k = 0; k < f->n_nodes; k++) {
            const struct node *nd = &f->nodes[k];
            fits[nd->model] |=
                nd->n_gpus >= pd->num_gpu && nd->cpu >= pd->cpu && nd->mem >= pd->mem;
        }
        for (int m = 0; m < f->n_models; m++) {
            bool named = pd->n_models == 0;
            for (int k = 0; k < pd->n_models && !named; k++)
                named = pd->models[k] == m;
            fits[m] = fits[m] && named;
            all = all && fits[m];
            set_cap += fits[m] ? cap[m] : 0;
        }
        if (all || set_cap == 0)
            continue;
        for (int m = 0; m < f->n_models; m++) {
            if (fits[m])
                share[m][pd->num_gpu] +=
                    (double)pd->num_gpu * pd->gpu_milli / total * cap[m] / set_cap;
        }
    }
    for (int m = 0; m < f->n_models && rc == 0; m++) {
        int64_t id = m + 1;
        for (int k = 1; k <= SCHED_MAX_GPUS_PER_NODE && rc == 0; k++) {
            if (share[m][k] > 0)
                rc = fgd_workload_add_pin(w, &id, 1, k, share[m][k]);
            share[m][k] = 0;
        }
    }
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int usage(void)
{
    fprintf(stderr, "usage: fgd_bench [--data DIR] [--pods FILE] [--policies a,b,...] "
                    "[--seeds N] [--seed-base S] [--skip-cpu-pods] [--diag] [DIR]\n"
                    "policies: random,dotprod,clustering,packing,bestfit,fgd,fgd-fill\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *dir = "../shared/data/alibaba-gpu-v2023", *pods_file = "openb_pod_list_default.csv";
    char policies[512] = "random,dotprod,clustering,packing,bestfit,fgd,fgd-fill";
    int64_t n_seeds = 10, seed_base = 42;
    struct fleet f = {0};
    struct pod *pods = NULL;
    size_t n_pods = 0;
    struct fgd_pod *shapes;
    struct fgd_workload typ, fill_typ;
    char *names[16];
    int n_names = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (strcmp(a, "--data") == 0 && has_val)
            dir = argv[++i];
        else if (strcmp(a, "--pods") == 0 && has_val)
            pods_file = argv[++i];
        else if (strcmp(a, "--policies") == 0 && has_val)
            snprintf(policies, sizeof(policies), "%s", argv[++i]);
        else if (strcmp(a, "--seeds") == 0 && has_val) {
            if (parse_int64(argv[++i], 1, 1000, &n_seeds) < 0)
                return usage();
        } else if (strcmp(a, "--seed-base") == 0 && has_val) {
            if (parse_int64(argv[++i], 0, INT64_MAX, &seed_base) < 0)
                return usage();
        } else if (strcmp(a, "--skip-cpu-pods") == 0)
            skip_cpu_pods = true;
        else if (strcmp(a, "--diag") == 0)
            diag = true;
        else if (a[0] != '-')
            dir = a;
        else
            return usage();
    }
    for (char *p = policies; *p && n_names < (int)ARRAY_SIZE(names);) {
        char *c = strchr(p, ',');
        names[n_names++] = p;
        if (!c)
            break;
        *c = '\0';
        p = c + 1;
    }
    if (load_nodes(dir, &f) < 0 || load_pods(dir, pods_file, &f, &pods, &n_pods) < 0)
        return 1;
    if (n_pods == 0) {
        fprintf(stderr, "fgd_bench: '%s' has no pods\n", pods_file);
        return 1;
    }
    shapes = xcalloc(n_pods, sizeof(*shapes));
    for (size_t i = 0; i < n_pods; i++)
        shapes[i] =
            (struct fgd_pod){pods[i].num_gpu, pods[i].gpu_milli, pods[i].cpu, pods[i].mem, 0};
    if (fgd_workload_build(shapes, n_pods, 0.95, &typ) < 0 ||
        fgd_workload_build_cover(shapes, n_pods, 0.95, 0.95, &fill_typ) < 0 ||
        add_pins(&f, pods, n_pods, &fill_typ) < 0)
        return 1;
    free(shapes);

    printf("fgd_bench: %d nodes, %d GPUs, %d models; %zu pods from %s; seeds %" PRId64 "..%" PRId64
           "\n",
           f.n_nodes, f.n_gpus, f.n_models, n_pods, pods_file, seed_base, seed_base + n_seeds - 1);
    printf("typical pods (95%%): %zu shapes:", typ.n_pods);
    for (size_t i = 0; i < typ.n_pods; i++)
        printf(" %dx%d(%.1f%%)", typ.pods[i].num_gpu, typ.pods[i].gpu_milli,
               100 * typ.pods[i].freq);
    if (fill_typ.n_pins) {
        printf("\npinned (share of the GPU asked for):");
        for (size_t i = 0; i < fill_typ.n_pins; i++) {
            printf(" ");
            for (int k = 0; k < fill_typ.pins[i].n_pools; k++)
                printf("%s%s", k ? "|" : "", f.models[fill_typ.pins[i].pool_ids[k] - 1]);
            printf("x%d(%.1f%%)", fill_typ.pins[i].num_gpu, 100 * fill_typ.pins[i].gpu_share);
        }
    }
    printf("\n\nunallocated GPU %%, median [min-max] over seeds; paper median in ()\n");
    printf("%-11s %-24s %-24s %-24s %9s %6s %7s\n", "policy", "95%", "100%", "130%", "decide/s",
           "fail%", "wall_s");

    struct result *rs = xcalloc((size_t)n_seeds, sizeof(*rs));
    double *fragm = xcalloc((size_t)n_names * N_POINTS, sizeof(double));
    for (int pi = 0; pi < n_names; pi++) {
        int64_t t0 = now_ns(), decided = 0, failed = 0, pass_ns = 0;
        double vals[N_POINTS][1000], fr[1000];
        for (int64_t k = 0; k < n_seeds; k++) {
            if (run_one(&f, pods, n_pods, names[pi], (uint64_t)(seed_base + k), &typ, &fill_typ,
                        &rs[k]) < 0)
                return 1;
            decided += rs[k].decided;
            failed += rs[k].failed;
            pass_ns += rs[k].pass_ns;
        }
        printf("%-11s", names[pi]);
        for (int p = 0; p < N_POINTS; p++) {
            char cell[64], pap[16] = "";
            for (int64_t k = 0; k < n_seeds; k++) {
                vals[p][k] = rs[k].unalloc[p];
                fr[k] = rs[k].frag[p];
            }
            double med = median_of(vals[p], (int)n_seeds);
            fragm[pi * N_POINTS + p] = median_of(fr, (int)n_seeds);
            for (size_t q = 0; q < ARRAY_SIZE(paper); q++) {
                if (strcmp(paper[q].name, names[pi]) == 0 &&
                    strcmp(pods_file, "openb_pod_list_default.csv") == 0)
                    snprintf(pap, sizeof(pap), " (%.2f)", paper[q].v[p]);
            }
            snprintf(cell, sizeof(cell), "%.2f [%.2f-%.2f]%s", med, vals[p][0],
                     vals[p][n_seeds - 1], pap);
            printf(" %-24s", cell);
        }
        printf(" %9.0f %6.2f %7.2f\n", (double)decided / ((double)pass_ns / 1e9),
               100.0 * (double)failed / (double)decided, (double)(now_ns() - t0) / 1e9);
        fflush(stdout);
    }
    printf("\nfragmentation (GPU free but unusable by the typical pods, %% of capacity), "
           "median over seeds\n%-11s %8s %8s %8s\n",
           "policy", "95%", "100%", "130%");
    for (int pi = 0; pi < n_names; pi++)
        printf("%-11s %8.2f %8.2f %8.2f\n", names[pi], fragm[pi * N_POINTS],
               fragm[pi * N_POINTS + 1], fragm[pi * N_POINTS + 2]);
    free(fragm);
    free(rs);
    fgd_workload_release(&typ);
    fgd_workload_release(&fill_typ);
    free(pods);
    free(f.nodes);
    return 0;
}
