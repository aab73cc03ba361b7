/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-nodes.c: what the Slurm backend learns about nodes and devices:
 * the nodes and their GPUs from `sinfo --json` (for the engine to refresh
 * the store), and which GPUs Slurm gave a running job, from `scontrol
 * --details --oneliner show job` (GRES with IDX, hostlists expanded), asked
 * a few jobs per poll and only of jobs that have run a while.
 */
#include "base/common.h"

#include <jansson.h>

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/parse.h"

static int64_t json_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static const char *json_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

void slurm_nodes_free(struct slurm_node *nodes, size_t n)
{
    if (!nodes)
        return;
    for (size_t i = 0; i < n; i++) {
        free(nodes[i].name);
        free(nodes[i].state);
        free(nodes[i].reason);
        free(nodes[i].gpu_type);
    }
    free(nodes);
}

/*
 * Sums the GPUs of a GRES string ("gpu:h100:8", "gpu:4(S:0-1)",
 * "gpu:a100:2,gpu:h100:2(IDX:0-1),shard:4") and gives the first GPU type.
 */
static void gres_gpus(const char *gres, int32_t *ret_n, char *type, size_t type_size)
{
    const char *p = gres;
    int64_t total = 0;

    if (type_size)
        type[0] = '\0';
    while (p && *p) {
        size_t len = strcspn(p, ",");
        char item[256], *paren, *fields[3] = {NULL, NULL, NULL};
        size_t n_fields = 0;
        char *q;

        if (len < sizeof(item)) {
            memcpy(item, p, len);
            item[len] = '\0';
            paren = strchr(item, '(');
            if (paren)
                *paren = '\0';
            q = item;
            while (n_fields < 3) {
                fields[n_fields++] = q;
                q = strchr(q, ':');
                if (!q)
                    break;
                *q++ = '\0';
            }
            if (n_fields >= 2 && strcmp(fields[0], "gpu") == 0) {
                int64_t count;
                const char *num = fields[n_fields - 1];
                if (parse_int64(num, 0, 1 << 20, &count) == 0) {
                    total += count;
                    if (n_fields == 3 && type_size && !type[0])
                        snprintf(type, type_size, "%s", fields[1]);
                }
            }
        }
        p += len;
        if (*p == ',')
            p++;
    }
    *ret_n = total > INT32_MAX ? INT32_MAX : (int32_t)total;
}

static bool has_flag(json_t *flags, const char *flag)
{
    size_t i;
    json_t *v;
    json_array_foreach(flags, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), flag) == 0)
            return true;
    }
    return false;
}

int slurm_parse_nodes(const char *json, size_t len, struct slurm_node **ret, size_t *ret_n,
                      struct error_info *ei)
{
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr), *nodes, *n;
    struct slurm_node *out;
    size_t i, count = 0;

    nodes = json_object_get(root, "nodes");
    if (!json_is_array(nodes)) {
        json_decref(root);
        return errinfo_set(ei, ERR_INVALID, NULL, "sinfo --json gave no node list%s%s",
                           root ? "" : ": ", root ? "" : jerr.text);
    }
    out = xcalloc(json_array_size(nodes) + 1, sizeof(*out));
    json_array_foreach(nodes, i, n)
    {
        struct slurm_node *o = &out[count];
        const char *name = json_str(n, "name"), *base = json_str(n, "state");
        json_t *flags = json_object_get(n, "state_flags");
        char type[64];
        int64_t cpus = json_int(n, "cpus"), mem = json_int(n, "real_memory");
        bool down, drain;

        if (!name[0])
            continue;
        down = strcmp(base, "down") == 0 || strcmp(base, "unknown") == 0 ||
               strcmp(base, "future") == 0 || has_flag(flags, "NOT_RESPONDING") ||
               has_flag(flags, "POWERED_DOWN") || has_flag(flags, "POWER_DOWN");
        drain = has_flag(flags, "DRAIN") || has_flag(flags, "FAIL") ||
                has_flag(flags, "MAINTENANCE") || has_flag(flags, "REBOOT_REQUESTED");
        o->name = xstrdup(name);
        o->state = xstrdup(down ? "down" : drain ? "drain" : "ready");
        o->reason = xstrdup(json_str(n, "reason"));
        o->cpu_milli = cpus > 0 && cpus < INT64_MAX / 1000 ? cpus * 1000 : 0;
        o->mem_mib = mem > 0 ? mem : 0;
        gres_gpus(json_str(n, "gres"), &o->n_gpus, type, sizeof(type));
        o->gpu_type = xstrdup(type);
        gres_gpus(json_str(n, "gres_used"), &o->n_gpus_used, type, 0);
        count++;
    }
    json_decref(root);
    *ret = out;
    *ret_n = count;
    return 0;
}

/* ---- the GPU indices Slurm gave a job ---- */

#define HOSTLIST_MAX 4096

/* Appends an entry for node with the indices in idx (a set), unless it has none. */
static void devices_add(struct slurm_job_devices **arr, size_t *n, size_t *cap, const char *node,
                        size_t node_len, const bool *idx)
{
    struct slurm_job_devices *d;
    size_t k = 0;

    for (int32_t i = 0; i <= SLURM_MAX_DEVICE_INDEX; i++)
        k += idx[i];
    if (k == 0)
        return;
    ALLOC_GROW(*arr, *n + 1, *cap);
    d = &(*arr)[(*n)++];
    memset(d, 0, sizeof(*d));
    memcpy(d->node, node, node_len);
    d->node[node_len] = '\0';
    for (int32_t i = 0; i <= SLURM_MAX_DEVICE_INDEX; i++) {
        if (idx[i])
            d->indices[d->n_indices++] = i;
    }
}

/* A decimal number of p[0..len) into *ret (at most max). -1 when not one. */
static int span_number(const char *p, size_t len, int64_t max, int64_t *ret)
{
    char tmp[24];
    if (len == 0 || len >= sizeof(tmp))
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
    }
    memcpy(tmp, p, len);
    tmp[len] = '\0';
    return parse_int64(tmp, 0, max, ret) < 0 ? -1 : 0;
}

/* "0-1,3" into the set idx. -1 when malformed or too many. */
static int index_list(const char *p, size_t len, bool *idx)
{
    const char *end = p + len;
    size_t count = 0;

    for (const char *q = p; q <= end;) {
        const char *comma = memchr(q, ',', (size_t)(end - q));
        const char *item_end = comma ? comma : end, *dash;
        int64_t lo, hi;

        dash = memchr(q, '-', (size_t)(item_end - q));
        if (span_number(q, (size_t)((dash ? dash : item_end) - q), SLURM_MAX_DEVICE_INDEX, &lo) < 0)
            return -1;
        hi = lo;
        if (dash &&
            span_number(dash + 1, (size_t)(item_end - dash - 1), SLURM_MAX_DEVICE_INDEX, &hi) < 0)
            return -1;
        if (hi < lo)
            return -1;
        for (int64_t i = lo; i <= hi; i++) {
            count += !idx[i];
            idx[i] = true;
        }
        if (count > SLURM_MAX_NODE_DEVICES)
            return -1;
        if (!comma)
            break;
        q = comma + 1;
    }
    return 0;
}

/*
 * The indices of the gpu entries of a GRES value, e.g.
 * "gpu:h100:2(IDX:0-1),gpu:a100:1(IDX:3),shard:2(0/4)", into the set idx.
 * -1 when malformed.
 */
static int gres_indices(const char *p, size_t len, bool *idx)
{
    const char *end = p + len;

    while (p < end) {
        const char *q = p, *open = NULL, *close = NULL;
        int depth = 0;
        size_t name;

        /* One entry: up to a comma outside parentheses. */
        for (; q < end && (depth > 0 || *q != ','); q++) {
            if (*q == '(') {
                if (depth++ == 0 && !open)
                    open = q;
            } else if (*q == ')') {
                if (--depth < 0)
                    return -1;
                if (depth == 0 && !close)
                    close = q;
            }
        }
        if (depth != 0)
            return -1;
        for (name = 0; p + name < q && p[name] != ':' && p[name] != '('; name++)
            ;
        if (name == 3 && memcmp(p, "gpu", 3) == 0 && open) {
            const char *in = open + 1;
            size_t in_len = (size_t)(close - in);
            if (in_len >= 4 && memcmp(in, "IDX:", 4) == 0 &&
                !(in_len == 7 && memcmp(in + 4, "N/A", 3) == 0) &&
                index_list(in + 4, in_len - 4, idx) < 0)
                return -1;
        }
        p = q < end ? q + 1 : end;
    }
    return 0;
}

/*
 * Expands a hostlist ("node[1-2,5]", "a1,b[01-03]") and adds an entry per
 * node with the indices idx. -1 when malformed or too long.
 */
static int hostlist_add(const char *p, size_t len, const bool *idx, struct slurm_job_devices **arr,
                        size_t *n, size_t *cap, size_t *count)
{
    const char *end = p + len;
    char name[sizeof((*arr)->node)];

    while (p < end) {
        const char *q = p, *lb, *rb;
        int depth = 0;

        for (; q < end && (depth > 0 || *q != ','); q++) {
            if (*q == '[' && ++depth > 1)
                return -1;
            if (*q == ']' && --depth < 0)
                return -1;
        }
        if (depth != 0 || q == p)
            return -1;
        lb = memchr(p, '[', (size_t)(q - p));
        if (!lb) {
            if ((size_t)(q - p) >= sizeof(name) || ++*count > HOSTLIST_MAX)
                return -1;
            devices_add(arr, n, cap, p, (size_t)(q - p), idx);
        } else {
            const char *suffix, *r;
            rb = memchr(lb, ']', (size_t)(q - lb));
            suffix = rb + 1;
            if (memchr(suffix, '[', (size_t)(q - suffix)) || rb == lb + 1)
                return -1;
            for (r = lb + 1; r < rb;) {
                const char *comma = memchr(r, ',', (size_t)(rb - r));
                const char *item_end = comma ? comma : rb;
                const char *dash = memchr(r, '-', (size_t)(item_end - r));
                size_t lo_len = (size_t)((dash ? dash : item_end) - r);
                int width = r[0] == '0' && lo_len > 1 ? (int)lo_len : 0;
                int64_t lo, hi;

                if (span_number(r, lo_len, 999999999, &lo) < 0)
                    return -1;
                hi = lo;
                if (dash &&
                    span_number(dash + 1, (size_t)(item_end - dash - 1), 999999999, &hi) < 0)
                    return -1;
                if (hi < lo || hi - lo >= HOSTLIST_MAX)
                    return -1;
                for (int64_t i = lo; i <= hi; i++) {
                    int m = snprintf(name, sizeof(name), "%.*s%0*" PRId64 "%.*s", (int)(lb - p), p,
                                     width, i, (int)(q - suffix), suffix);
                    if (m < 0 || (size_t)m >= sizeof(name) || ++*count > HOSTLIST_MAX)
                        return -1;
                    devices_add(arr, n, cap, name, (size_t)m, idx);
                }
                if (!comma)
                    break;
                r = comma + 1;
            }
        }
        p = q < end ? q + 1 : end;
    }
    return 0;
}

int slurm_parse_job_devices(const char *text, size_t len, struct slurm_job_devices **ret,
                            size_t *ret_n, struct error_info *ei)
{
    struct slurm_job_devices *arr = NULL;
    size_t n = 0, cap = 0, count = 0;
    const char *end = text + len, *group = NULL;
    size_t group_len = 0;
    bool *idx = xcalloc(SLURM_MAX_DEVICE_INDEX + 1, sizeof(*idx));

    /* Whitespace-separated key=value words; a group starts at Nodes= and ends at its GRES=. */
    for (const char *p = text; p < end;) {
        size_t wlen;
        const char *eq;

        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        wlen = 0;
        while (p + wlen < end && p[wlen] != ' ' && p[wlen] != '\t' && p[wlen] != '\n' &&
               p[wlen] != '\r')
            wlen++;
        eq = wlen ? memchr(p, '=', wlen) : NULL;
        if (eq && eq - p == 5 && memcmp(p, "Nodes", 5) == 0) {
            group = eq + 1;
            group_len = wlen - 6;
        } else if (eq && eq - p == 4 && memcmp(p, "GRES", 4) == 0 && group) {
            memset(idx, 0, (SLURM_MAX_DEVICE_INDEX + 1) * sizeof(*idx));
            if (gres_indices(eq + 1, wlen - 5, idx) < 0) {
                free(idx);
                free(arr);
                return errinfo_set(ei, ERR_INVALID, NULL, "scontrol: bad GRES '%.*s'",
                                   (int)(wlen - 5 > 200 ? 200 : wlen - 5), eq + 1);
            }
            if (hostlist_add(group, group_len, idx, &arr, &n, &cap, &count) < 0) {
                free(idx);
                free(arr);
                return errinfo_set(ei, ERR_INVALID, NULL, "scontrol: bad node list '%.*s'",
                                   (int)(group_len > 200 ? 200 : group_len), group);
            }
            group = NULL;
        }
        p += wlen;
    }
    free(idx);
    *ret = arr;
    *ret_n = n;
    return 0;
}

/* `scontrol --details --oneliner show job <id>` of w's job into *r; < 0 when it could not run. */
static int show_job(struct slurm *s, const struct sjob *w, struct run_result *r)
{
    const char *args[6] = {"--details", "--oneliner", "show", "job", NULL, NULL};
    char num[32];

    if (!s->tools[T_SCONTROL] || w->job_id <= 0)
        return ERR_UNAVAILABLE;
    snprintf(num, sizeof(num), "%" PRId64, w->job_id);
    args[4] = num;
    return slurm__run_tool(s, T_SCONTROL, args, NULL, SMALL_MAX, r, NULL);
}

/* Keeps the GRES strings of show_job's output (one "GRES=" per node group, joined with ';'). */
static void keep_gres(struct slurm *s, struct sjob *w, const char *text)
{
    char gres[sizeof(w->info.gres)] = "";
    size_t used = 0;

    for (const char *p = text; (p = strstr(p, " GRES=")) != NULL;) {
        size_t len;
        p += strlen(" GRES=");
        len = strcspn(p, " \n");
        if (len > 0 && used < sizeof(gres)) {
            int m =
                snprintf(gres + used, sizeof(gres) - used, "%s%.*s", used ? ";" : "", (int)len, p);
            used = m < 0 ? sizeof(gres) : used + (size_t)m;
        }
        p += len;
    }
    if (gres[0]) {
        copy_str(w->info.gres, sizeof(w->info.gres), gres);
        w->gres_known = true;
        slurm__state_write(s, w); /* for people: best effort */
    }
}

/*
 * The GPUs Slurm assigned to a running job, from `scontrol -d -o show job`.
 * Asked only when someone wants them: squeue's narrow format has no such
 * field, and one more tool run per job would cost as much as its sbatch.
 */
void slurm__learn_gres(struct slurm *s, struct sjob *w)
{
    struct run_result r;

    if (show_job(s, w, &r) < 0)
        return;
    if (r.status == 0 && r.out.data)
        keep_gres(s, w, r.out.data);
    run_result_release(&r);
}

/* Jobs asked about per squeue, and how long a job must have run first. */
#define DEVICES_PER_POLL 4
#define DEVICES_AFTER_MS 1000
#define DEVICES_TRIES 3

/*
 * After a squeue: learns which GPUs Slurm gave jobs that have run for
 * DEVICES_AFTER_MS, a few per call, so that work of a second or less (the
 * benchmark's 2,000 `true` jobs) never costs an scontrol.
 */
void slurm__learn_devices(struct slurm *s, int64_t now_ms)
{
    size_t asked = 0;

    for (size_t i = 0; i < s->work.n && asked < DEVICES_PER_POLL; i++) {
        struct sjob *w = work_at(s, i);
        struct slurm_job_devices *devs = NULL;
        struct run_result r;
        size_t n = 0;

        if (!w->running || w->devices_done || w->reason || w->job_id <= 0 || !w->running_seen_ms ||
            now_ms - w->running_seen_ms < DEVICES_AFTER_MS)
            continue;
        asked++;
        if (show_job(s, w, &r) < 0) {
            w->devices_done = ++w->devices_tries >= DEVICES_TRIES;
            continue;
        }
        if (r.status == 0 && r.out.data &&
            slurm_parse_job_devices(r.out.data, r.out.len, &devs, &n, NULL) == 0 && n > 0) {
            if (!w->gres_known)
                keep_gres(s, w, r.out.data);
            for (size_t k = 0; k < n; k++) {
                devs[k].workload_id = w->id;
                devs[k].job_id = w->job_id;
                ALLOC_GROW(s->devices, s->n_devices + 1, s->cap_devices);
                s->devices[s->n_devices++] = devs[k];
            }
            w->devices_done = true;
        } else {
            w->devices_done = ++w->devices_tries >= DEVICES_TRIES;
        }
        free(devs);
        run_result_release(&r);
    }
}
