/* SPDX-License-Identifier: Apache-2.0 */
/* config.c: one table of settings, read from file, environment and flags. */
#include "base/common.h"

#include <ctype.h>

#include "api/api.h"
#include "base/parse.h"
#include "daemon/config.h"
#include "inventory/inventory.h"
#include "sched/policies.h"

enum opt_kind { OPT_STR, OPT_INT, OPT_BOOL, OPT_LISTEN };

struct opt {
    const char *key; /* file key and flag name; env is GPUAAS_ + upper-case key */
    enum opt_kind kind;
    size_t offset;
    size_t size; /* OPT_STR buffer size */
    int64_t min, max;
    const char *help;
};

#define STR(k, f, h)                                                                               \
    {                                                                                              \
        k, OPT_STR, offsetof(struct config, f), sizeof(((struct config *)0)->f), 0, 0, h           \
    }
#define INT(k, f, lo, hi, h)                                                                       \
    {                                                                                              \
        k, OPT_INT, offsetof(struct config, f), 0, lo, hi, h                                       \
    }

static const struct opt options[] = {
    {"listen", OPT_LISTEN, 0, 0, 0, 0, "address:port to serve HTTP on (default 127.0.0.1:8080)"},
    STR("db", db, "store: SQLite file path, or postgresql://user@host/dbname (default gpuaas.db)"),
    INT("threads", threads, 1, 256, "HTTP worker threads (default: number of CPUs)"),
    INT("db-pool", db_pool, 2, 1024,
        "store connections, one of them the scheduler's (default: threads + 2)"),
    {"max-body-bytes", OPT_INT, offsetof(struct config, max_body_bytes), 0, 1024, 1 << 30,
     "largest request body accepted; larger gets 413 (default 1048576)"},
    INT("max-connections", max_connections, 1, 100000,
        "concurrent HTTP connections; beyond, new ones wait to be accepted (default 4096)"),
    INT("per-ip-connections", per_ip_connections, 0, 100000,
        "concurrent HTTP connections from one client address; 0: no cap (default 2048)"),
    INT("idle-timeout-s", idle_timeout_s, 1, 86400,
        "an HTTP connection silent this long is closed (default 30)"),
    INT("header-timeout-s", header_timeout_s, 0, 86400,
        "a request's headers must arrive within this many seconds; 0: no limit (default 10)"),
    INT("busy-timeout-ms", busy_timeout_ms, 0, 600000, "store lock wait (default 5000)"),
    {"sqlite-sync-full", OPT_BOOL, offsetof(struct config, sqlite_sync_full), 0, 0, 1,
     "fsync every SQLite commit: survives power loss, not only crashes (default false)"},
    STR("log-level", log_level, "debug, info, warn or error (default info)"),
    STR("bootstrap-token-file", bootstrap_token_file,
        "also write the first admin token to this file (mode 0600)"),
    STR("issuer", issuer, "who issues invoices: the name printed on them (default gpuaas)"),
    STR("sim-fleet", sim_fleet,
        "import this fleet (node CSV or JSON) as a simulated cluster on start, once"),
    STR("sim-cluster", sim_cluster,
        "name of the simulated cluster made by sim-fleet (default sim)"),
    INT("sim-speed", sim_speed, 1, 1000000,
        "simulated clusters run this many times faster than real time (default 1)"),
    INT("grace-s", grace_s, 0, 86400, "default preemption grace in seconds (default 30)"),
    INT("max-min-runtime-s", max_min_runtime_s, 0, 604800,
        "most min_runtime_s a workload may ask for: how long borrowed work can hold off a "
        "reclaim (default 3600)"),
    INT("max-grace-s", max_grace_s, 0, 86400, "most grace_s a workload may ask for (default 600)"),
    INT("reserve-after-s", reserve_after_s, 0, 864000,
        "a queue head blocked this long gets capacity held for it (default 600)"),
    STR("log-dir", log_dir, "local clusters: workload logs and state files (default gpuaas-logs)"),
    INT("log-retention-days", log_retention_days, 0, 36500,
        "remove the log and run files of work that ended this many days ago (default 30; "
        "0: keep them for ever)"),
    STR("podman", podman,
        "local clusters: program that runs work naming an image (default podman, from PATH; "
        "empty: such work is refused)"),
    STR("cgroup-root", cgroup_root,
        "local clusters: where work gets cgroups with the flavor's CPU and memory limits: "
        "'auto' (the machine's cgroup v2, else v1's cpu and memory), a cgroup v2 directory, or "
        "empty for none (default auto)"),
    INT("run-uid", run_uid, -1, 2147483647, "local and slurm clusters: run work as this user id"),
    INT("run-gid", run_gid, -1, 2147483647, "local and slurm clusters: run work as this group id"),
    STR("nvml", nvml,
        "GPU telemetry from NVML: 'auto' (libnvidia-ml.so.1) or a library path (default off)"),
    STR("nvidia-smi", nvidia_smi, "GPU telemetry from this nvidia-smi program (default off)"),
    STR("dcgm-urls", dcgm_urls,
        "GPU telemetry scraped from these dcgm-exporter URLs, comma-separated"),
    STR("local-gpus", local_gpus,
        "local clusters: this machine's GPUs when no NVML or nvidia-smi source reports any: "
        "CLASS:COUNT or INDEX:CLASS[:UUID], comma-separated (e.g. h100:8)"),
    INT("collect-interval-s", collect_interval_s, 1, 3600,
        "seconds between runs of each telemetry source (default 10)"),
    INT("idle-window-s", idle_window_s, 1, 86400,
        "an allocated GPU below the activity threshold this long is idle-allocated (default 1800)"),
    INT("slurm-sync-s", slurm_sync_s, 1, 86400,
        "Slurm clusters: seconds between reads of Slurm's nodes and GPUs (default 30)"),
    INT("slurm-poll-ms", slurm_poll_ms, 20, 60000,
        "Slurm clusters: least milliseconds between two squeue runs about running work"
        " (default 200)"),
    {"slurm-queue-ahead", OPT_BOOL, offsetof(struct config, slurm_queue_ahead), 0, 0, 1,
     "Slurm clusters: hand Slurm the next workload for a running one's GPUs as a job waiting "
     "for that one's end, where nothing could make the scheduler choose otherwise (default "
     "true)"},
    INT("kube-sync-s", kube_sync_s, 1, 86400,
        "Kubernetes clusters: seconds between reads of the nodes and their GPUs (default 30)"),
    STR("kube-default-image", kube_default_image,
        "Kubernetes clusters: the image of work that names none (default: such work is "
        "refused)"),
    STR("kube-tolerate", kube_tolerate,
        "Kubernetes clusters: taint keys gpuaas's pods tolerate, comma-separated; a node with "
        "another NoSchedule taint is drained (default nvidia.com/gpu)"),
    INT("idle-notify-s", idle_notify_s, 0, 8640000,
        "an 'idle' event for work whose GPUs were idle-allocated this long (0: off, the default)"),
    INT("idle-stop-p2-s", idle_stop_p2_s, 0, 8640000,
        "stop opportunistic work whose GPUs were idle-allocated this long (0: off, the default)"),
    STR("fair-share", fair_share,
        "how projects share borrowed GPUs: current (what each borrows now, the default) or "
        "decayed (and what each used lately as opportunistic work)"),
    INT("fair-share-half-life-s", fair_share_half_life_s, 1, 315360000,
        "fair-share decayed: past usage counts half as much after this long (default 604800, "
        "7 days)"),
    STR("placement", placement,
        "placement policy: " SCHED_POLICY_NAMES " (default: the built-in best-fit)"),
    STR("placement-pods", placement_pods,
        "typical pods for fgd and fgd-fill, NUMxMILLI/CPU_MILLI/MEM_MIB*WEIGHT,... "
        "(default: a built-in set)"),
};

void config_usage(FILE *out)
{
    fprintf(out, "usage: gpuaasd [--config FILE] [--KEY VALUE ...]\n"
                 "       gpuaasd recover-admin [USER] [--db STORE] [--config FILE]\n"
                 "           (break-glass: USER becomes an enabled admin with a new token)\n\n"
                 "Settings (flag, or GPUAAS_KEY in the environment, or 'key = value' in FILE):\n");
    for (size_t i = 0; i < ARRAY_SIZE(options); i++)
        fprintf(out, "  --%-22s %s\n", options[i].key, options[i].help);
    fprintf(out, "  --%-22s %s\n", "config", "read settings from FILE first (GPUAASD_CONFIG)");
    fprintf(out, "  --%-22s %s\n", "help", "show this help");
    fprintf(out, "  --%-22s %s\n", "version", "show the version");
}

static void defaults(struct config *cfg)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen_addr, sizeof(cfg->listen_addr), "127.0.0.1");
    cfg->listen_port = 8080;
    snprintf(cfg->db, sizeof(cfg->db), "gpuaas.db");
    cfg->threads = n > 0 && n <= 64 ? (int)n : 4;
    cfg->max_body_bytes = 1 << 20;
    cfg->max_connections = 4096;
    cfg->per_ip_connections = 2048;
    cfg->idle_timeout_s = 30;
    cfg->header_timeout_s = 10;
    cfg->busy_timeout_ms = 5000;
    snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
    snprintf(cfg->issuer, sizeof(cfg->issuer), "gpuaas");
    snprintf(cfg->sim_cluster, sizeof(cfg->sim_cluster), "sim");
    cfg->sim_speed = 1;
    cfg->grace_s = 30;
    cfg->max_min_runtime_s = API_DEFAULT_MAX_MIN_RUNTIME_S;
    cfg->max_grace_s = API_DEFAULT_MAX_GRACE_S;
    cfg->reserve_after_s = 600;
    snprintf(cfg->fair_share, sizeof(cfg->fair_share), "current");
    cfg->fair_share_half_life_s = 7 * 24 * 3600;
    snprintf(cfg->log_dir, sizeof(cfg->log_dir), "gpuaas-logs");
    cfg->log_retention_days = 30;
    snprintf(cfg->podman, sizeof(cfg->podman), "podman");
    snprintf(cfg->cgroup_root, sizeof(cfg->cgroup_root), "auto");
    cfg->run_uid = cfg->run_gid = -1;
    cfg->collect_interval_s = 10;
    cfg->idle_window_s = 1800;
    cfg->slurm_sync_s = 30;
    cfg->slurm_poll_ms = 200;
    cfg->slurm_queue_ahead = true;
    cfg->kube_sync_s = 30;
    snprintf(cfg->kube_tolerate, sizeof(cfg->kube_tolerate), "nvidia.com/gpu");
}

static const struct opt *find_opt(const char *key)
{
    for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
        if (strcmp(options[i].key, key) == 0)
            return &options[i];
    }
    return NULL;
}

static int set_listen(struct config *cfg, const char *val, const char *src, struct error_info *ei)
{
    const char *colon = strrchr(val, ':');
    int64_t port;
    size_t alen;

    if (!colon || colon == val)
        return errinfo_set(ei, ERR_INVALID, "listen",
                           "%s: listen must be ADDRESS:PORT such as 127.0.0.1:8080, not '%s'", src,
                           val);
    alen = (size_t)(colon - val);
    if (alen >= sizeof(cfg->listen_addr) || parse_int64(colon + 1, 0, 65535, &port) < 0)
        return errinfo_set(ei, ERR_INVALID, "listen", "%s: bad listen address '%s'", src, val);
    memcpy(cfg->listen_addr, val, alen);
    cfg->listen_addr[alen] = '\0';
    cfg->listen_port = (int)port;
    return 0;
}

static int set_opt(struct config *cfg, const struct opt *o, const char *val, const char *src,
                   struct error_info *ei)
{
    char *field = (char *)cfg + o->offset;
    int64_t v;

    switch (o->kind) {
    case OPT_LISTEN:
        return set_listen(cfg, val, src, ei);
    case OPT_STR:
        if (strlen(val) >= o->size)
            return errinfo_set(ei, ERR_INVALID, o->key, "%s: value of '%s' is too long", src,
                               o->key);
        snprintf(field, o->size, "%s", val);
        return 0;
    case OPT_BOOL:
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0 || strcmp(val, "yes") == 0)
            *(bool *)field = true;
        else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0 || strcmp(val, "no") == 0)
            *(bool *)field = false;
        else
            return errinfo_set(ei, ERR_INVALID, o->key, "%s: '%s' must be true or false, not '%s'",
                               src, o->key, val);
        return 0;
    case OPT_INT:
        if (parse_int64(val, o->min, o->max, &v) < 0)
            return errinfo_set(ei, ERR_INVALID, o->key,
                               "%s: '%s' must be an integer from %" PRId64 " to %" PRId64
                               ", not '%s'",
                               src, o->key, o->min, o->max, val);
        if (strcmp(o->key, "max-body-bytes") == 0)
            *(long *)field = (long)v;
        else
            *(int *)field = (int)v;
        return 0;
    }
    return ERR_INTERNAL;
}

static char *trim(char *s)
{
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

static int load_file(struct config *cfg, const char *path, struct error_info *ei)
{
    FILE *f = fopen(path, "r");
    char line[2048], src[1100];
    int lineno = 0, rc = 0;

    if (!f)
        return errinfo_set(ei, ERR_IO, "config", "could not read config file '%s': %s", path,
                           strerror(errno));
    while (rc >= 0 && fgets(line, sizeof(line), f)) {
        char *eq, *key, *val;
        const struct opt *o;
        lineno++;
        key = trim(line);
        if (!*key || *key == '#')
            continue;
        eq = strchr(key, '=');
        if (!eq) {
            rc = errinfo_set(ei, ERR_INVALID, "config", "%s:%d: expected 'key = value'", path,
                             lineno);
            break;
        }
        *eq = '\0';
        val = trim(eq + 1);
        key = trim(key);
        for (char *p = key; *p; p++) {
            if (*p == '_')
                *p = '-';
        }
        snprintf(src, sizeof(src), "%s:%d", path, lineno);
        o = find_opt(key);
        rc = o ? set_opt(cfg, o, val, src, ei)
               : errinfo_set(ei, ERR_INVALID, "config", "%s: unknown setting '%s'", src, key);
    }
    fclose(f);
    return rc;
}

static int load_env(struct config *cfg, struct error_info *ei)
{
    for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
        char name[64];
        const char *val;
        size_t k = 0;
        k += (size_t)snprintf(name, sizeof(name), "GPUAAS_");
        for (const char *p = options[i].key; *p && k < sizeof(name) - 1; p++)
            name[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
        name[k] = '\0';
        val = getenv(name);
        if (val && set_opt(cfg, &options[i], val, name, ei) < 0)
            return ei->code;
    }
    return 0;
}

/* The placement policy must be one sched_policy_by_name knows, with typical pods that parse. */
static int check_placement(const struct config *cfg, struct error_info *ei)
{
    struct fgd_workload typical;
    struct sched_policy *p;

    if (fgd_workload_parse(cfg->placement_pods[0] ? cfg->placement_pods : SCHED_POLICY_DEFAULT_PODS,
                           &typical) < 0)
        return errinfo_set(
            ei, ERR_INVALID, "placement-pods",
            "placement-pods: '%s' is not a list of NUMxMILLI/CPU_MILLI/MEM_MIB*WEIGHT "
            "such as 1x1000/12000/49152*50,0x0/16000/65536*15",
            cfg->placement_pods);
    p = cfg->placement[0] ? sched_policy_by_name(cfg->placement, 1, &typical) : NULL;
    fgd_workload_release(&typical);
    if (cfg->placement[0] && !p)
        return errinfo_set(ei, ERR_INVALID, "placement",
                           "placement: unknown policy '%s' (one of: " SCHED_POLICY_NAMES ")",
                           cfg->placement);
    sched_policy_free(p);
    return 0;
}

/* The declared local GPUs must parse; the daemon parses them again to use them. */
static int check_local_gpus(const struct config *cfg, struct error_info *ei)
{
    struct inv_declared_gpu *gpus = NULL;
    struct error_info why = {0};
    int rc = inv_declared_parse(cfg->local_gpus, &gpus, &why);
    free(gpus);
    if (rc < 0)
        return errinfo_set(ei, ERR_INVALID, "local-gpus",
                           "local-gpus: %s (entries: CLASS:COUNT or INDEX:CLASS[:UUID])",
                           why.message);
    return 0;
}

int config_load(int argc, char **argv, struct config *cfg, struct error_info *ei)
{
    const char *file = getenv("GPUAASD_CONFIG");
    int rc;

    defaults(cfg);
    /* The file comes first whatever the flag order, so find --config before the rest. */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            file = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            file = argv[i] + 9;
    }
    if (file && *file) {
        snprintf(cfg->config_file, sizeof(cfg->config_file), "%s", file);
        rc = load_file(cfg, file, ei);
        if (rc < 0)
            return rc;
    }
    rc = load_env(cfg, ei);
    if (rc < 0)
        return rc;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val;
        char key[64];
        const char *eq;
        const struct opt *o;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            cfg->show_help = true;
            continue;
        }
        if (strcmp(arg, "--version") == 0) {
            cfg->show_version = true;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return errinfo_set(ei, ERR_INVALID, NULL, "unexpected argument '%s'", arg);
        eq = strchr(arg, '=');
        snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - arg - 2) : (int)strlen(arg + 2),
                 arg + 2);
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                return errinfo_set(ei, ERR_INVALID, key, "flag '--%s' needs a value", key);
            val = argv[++i];
        }
        if (strcmp(key, "config") == 0)
            continue;
        o = find_opt(key);
        if (!o)
            return errinfo_set(ei, ERR_INVALID, key, "unknown flag '--%s'; see gpuaasd --help",
                               key);
        rc = set_opt(cfg, o, val, "command line", ei);
        if (rc < 0)
            return rc;
    }
    if (cfg->db_pool == 0)
        cfg->db_pool = cfg->threads + 2;
    rc = check_placement(cfg, ei);
    if (rc >= 0 && strcmp(cfg->fair_share, "current") != 0 &&
        strcmp(cfg->fair_share, "decayed") != 0)
        rc = errinfo_set(ei, ERR_INVALID, "fair-share",
                         "fair-share: '%s' is not current or decayed", cfg->fair_share);
    return rc < 0 ? rc : check_local_gpus(cfg, ei);
}
