/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c: gpuaasd. Reads the configuration, opens the store (applying
 * migrations), makes the first admin on an empty store, serves the API, and
 * stops cleanly on SIGTERM or SIGINT. Errors that stop the start are one
 * line on stderr and exit status 1.
 */
#include "base/common.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "api/api.h"
#include "engine/simfleet.h"
#include "backend/spawner.h"
#include "base/log.h"
#include "base/timeutil.h"
#include "collect/collector.h"
#include "daemon/config.h"
#include "daemon/recover.h"
#include "engine/engine.h"
#include "retention/retention.h"
#include "sched/policies.h"
#include "store/store.h"

#define GPUAAS_VERSION "0.1.0"

static int fail(const char *what, const struct error_info *ei)
{
    fprintf(stderr, "gpuaasd: %s%s%s\n", what, *what ? ": " : "",
            ei->code ? ei->message : "unknown error");
    return 1;
}

static int write_token_file(const char *path, const char *token, struct error_info *ei)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(token);
    bool ok;

    if (fd < 0)
        return errinfo_set(ei, ERR_IO, "bootstrap-token-file", "could not write '%s': %s", path,
                           strerror(errno));
    ok = fchmod(fd, 0600) == 0 && write(fd, token, len) == (ssize_t)len && write(fd, "\n", 1) == 1;
    if (close(fd) != 0)
        ok = false;
    if (!ok)
        return errinfo_set(ei, ERR_IO, "bootstrap-token-file", "could not write '%s': %s", path,
                           strerror(errno));
    return 0;
}

static int bootstrap(struct store *store, const struct config *cfg, struct error_info *ei)
{
    char *token = NULL;
    int rc = api_bootstrap(store, &token, ei);

    if (rc < 0 || !token)
        return rc;
    printf("gpuaasd: created the first admin user 'admin'. Its API token, shown only this "
           "once:\n\n    %s\n\nLog in with: gpuaas login --server http://%s:%d --token <token>\n",
           token, cfg->listen_addr, cfg->listen_port);
    fflush(stdout);
    if (cfg->bootstrap_token_file[0])
        rc = write_token_file(cfg->bootstrap_token_file, token, ei);
    free(token);
    return rc;
}

/* Imports the --sim-fleet file as a simulated cluster, unless that cluster exists. */
static int import_sim_fleet(struct store *store, const struct config *cfg, struct error_info *ei)
{
    struct simfleet *f = NULL;
    struct store_conn *c;
    size_t nodes = 0;
    int rc;

    if (!cfg->sim_fleet[0])
        return 0;
    rc = simfleet_load(cfg->sim_fleet, &f, ei);
    if (rc < 0)
        return rc;
    c = store_conn_get(store);
    rc = simfleet_store(c, cfg->sim_cluster, f, time_now_s(), NULL, &nodes, ei);
    store_conn_put(c);
    simfleet_free(f);
    if (rc >= 0 && nodes > 0) {
        char n[24];
        snprintf(n, sizeof(n), "%zu", nodes);
        log_info("imported a simulated fleet", "cluster", cfg->sim_cluster, "nodes", n, "file",
                 cfg->sim_fleet);
    }
    return rc;
}

/*
 * The gpuaas-spawner program beside this one (they are built and installed
 * together), or NULL when it is not there: the spawner is then forked.
 */
static const char *spawner_program(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    char *slash;
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    slash = strrchr(buf, '/');
    if (!slash || (size_t)(slash - buf) + sizeof("/gpuaas-spawner") > size)
        return NULL;
    memcpy(slash, "/gpuaas-spawner", sizeof("/gpuaas-spawner"));
    return access(buf, X_OK) == 0 ? buf : NULL;
}

/*
 * Every HTTP connection is a descriptor, and so is each store file. Raises
 * the soft open-file limit to what max-connections needs (the hard limit at
 * most); where that is not enough, serves fewer connections and says so.
 */
static void fit_open_files(struct config *cfg)
{
    const rlim_t others = (rlim_t)cfg->db_pool * 3 + 128;
    rlim_t need = (rlim_t)cfg->max_connections + others;
    struct rlimit rl;
    char want[24], fit[24], limit[24];

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < need) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0)
            return;
    }
    if (rl.rlim_cur >= need)
        return;
    snprintf(want, sizeof(want), "%d", cfg->max_connections);
    cfg->max_connections = rl.rlim_cur > others + 16 ? (int)(rl.rlim_cur - others) : 16;
    snprintf(fit, sizeof(fit), "%d", cfg->max_connections);
    snprintf(limit, sizeof(limit), "%llu", (unsigned long long)rl.rlim_cur);
    log_warn("the open-file limit is too low for max-connections; serving fewer", "max_connections",
             want, "serving", fit, "open_file_limit", limit);
}

/*
 * Waits for SIGTERM or SIGINT (then *ret_sig says which, and it returns
 * false), asking the store every second whether it is still there: a store
 * file removed or replaced under the daemon makes it stop (true, why in ei)
 * rather than serve on a store whose changes would be lost.
 */
static bool wait_for_stop(const sigset_t *sigs, struct store *store, int *ret_sig,
                          struct error_info *ei)
{
    for (;;) {
        const struct timespec tick = {1, 0};
        int sig = sigtimedwait(sigs, NULL, &tick);
        if (sig == SIGTERM || sig == SIGINT) {
            *ret_sig = sig;
            return false;
        }
        if (sig < 0 && errno == EAGAIN && store_check(store, ei) < 0)
            return true;
    }
}

/*
 * Reads the configuration and sets up what every later step relies on: the log level, and
 * SIGTERM and SIGINT blocked before any thread starts, so only wait_for_stop sees them.
 * Returns -1 to go on, or the exit status when the daemon ends here (help, version, a usage
 * error: 2).
 */
static int prepare(int argc, char **argv, struct config *cfg, sigset_t *sigs)
{
    struct error_info ei = {0};
    enum log_level level;

    if (config_load(argc, argv, cfg, &ei) < 0)
        return fail("", &ei) + 1; /* usage error: 2 */
    if (cfg->show_help) {
        config_usage(stdout);
        return 0;
    }
    if (cfg->show_version) {
        printf("gpuaasd %s\n", GPUAAS_VERSION);
        return 0;
    }
    if (log_parse_level(cfg->log_level, &level) < 0) {
        fprintf(stderr, "gpuaasd: log-level must be debug, info, warn or error, not '%s'\n",
                cfg->log_level);
        return 2;
    }
    log_set_level(level);
    sigemptyset(sigs);
    sigaddset(sigs, SIGTERM);
    sigaddset(sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    return -1;
}

/* Opens the store; the shared claim keeps a recover-admin from writing beside this daemon. */
static int open_store(const struct config *cfg, struct store **ret_store, struct error_info *ei)
{
    struct store_options sopt = {0};

    sopt.n_conns = cfg->db_pool;
    sopt.busy_timeout_ms = cfg->busy_timeout_ms;
    sopt.sqlite_sync_full = cfg->sqlite_sync_full;
    if (store_open(cfg->db, &sopt, ret_store, ei) < 0)
        return -1;
    return store_claim(*ret_store, false, ei);
}

/* The placement policy of --placement, or NULL for the default best-fit (config_load
 * checked the name and the typical pods). The caller frees it with sched_policy_free. */
static struct sched_policy *placement_policy(const struct config *cfg)
{
    struct sched_policy *policy = NULL;
    struct fgd_workload typical;

    if (!cfg->placement[0])
        return NULL;
    if (fgd_workload_parse(cfg->placement_pods[0] ? cfg->placement_pods : SCHED_POLICY_DEFAULT_PODS,
                           &typical) == 0) {
        policy = sched_policy_by_name(cfg->placement, 1, &typical);
        fgd_workload_release(&typical);
    }
    return policy;
}

static int start_collector(const struct config *cfg, struct collector **ret_collector,
                           struct error_info *ei)
{
    struct collector_options copt;

    collector_options_init(&copt);
    copt.nvml = cfg->nvml;
    copt.nvidia_smi = cfg->nvidia_smi;
    copt.dcgm_urls = cfg->dcgm_urls;
    copt.interval_ms = (int64_t)cfg->collect_interval_s * 1000;
    copt.window_ms = (int64_t)cfg->idle_window_s * 1000;
    if (copt.window_ms < copt.interval_ms)
        copt.window_ms = copt.interval_ms;
    return collector_start(&copt, ret_collector, ei);
}

/* After the engine has adopted what runs; it only ever removes files of ended work. */
static int start_retention(struct store *store, const struct config *cfg,
                           struct retention **ret_retention, struct error_info *ei)
{
    struct retention_options ropt;

    retention_options_init(&ropt);
    ropt.log_dir = cfg->log_dir;
    ropt.keep_days = cfg->log_retention_days;
    return retention_start(store, &ropt, ret_retention, ei);
}

static int start_api(struct store *store, const struct config *cfg, struct engine *engine,
                     struct collector *collector, struct api **ret_api, struct error_info *ei)
{
    struct api_options aopt;

    api_options_init(&aopt);
    aopt.bind_addr = cfg->listen_addr;
    aopt.port = cfg->listen_port;
    aopt.threads = cfg->threads;
    aopt.max_body_bytes = (size_t)cfg->max_body_bytes;
    aopt.max_min_runtime_s = cfg->max_min_runtime_s;
    aopt.max_grace_s = cfg->max_grace_s;
    aopt.max_connections = cfg->max_connections;
    aopt.per_ip_connections = cfg->per_ip_connections;
    aopt.conn_timeout_s = cfg->idle_timeout_s;
    aopt.header_timeout_s = cfg->header_timeout_s;
    aopt.engine = engine;
    aopt.issuer = cfg->issuer;
    aopt.collector = collector;
    return api_start(store, &aopt, ret_api, ei);
}

static void log_ready(const struct config *cfg, struct api *api, struct store *store)
{
    char port[16], threads[16];

    snprintf(port, sizeof(port), "%d", api_port(api));
    snprintf(threads, sizeof(threads), "%d", cfg->threads);
    log_info("ready", "addr", cfg->listen_addr, "port", port, "store",
             store_engine(store) == STORE_SQLITE ? "sqlite" : "postgresql", "threads", threads,
             "version", GPUAAS_VERSION, "placement",
             cfg->placement[0] ? cfg->placement : "best-fit");
}

/*
 * Starts the parts in order, each after those it uses, then serves until a stop signal or a
 * lost store. Whatever fails jumps to the one teardown at the end, which stops every part in
 * the reverse order (each stop accepts NULL, so a part never started is skipped).
 */
int main(int argc, char **argv)
{
    struct error_info ei = {0};
    struct config cfg;
    struct store *store = NULL;
    struct api *api = NULL;
    struct engine *engine = NULL;
    struct collector *collector = NULL;
    struct engine_options eopt;
    struct sched_policy *policy = NULL;
    struct spawner *spawner = NULL;
    struct retention *retention = NULL;
    struct inv_declared_gpu *local_gpus = NULL;
    const char *failed = NULL; /* what could not start, for the message; NULL when all did */
    sigset_t sigs;
    char program[PATH_MAX];
    int sig = 0, rc;
    bool lost = false;

    if (argc > 1 && strcmp(argv[1], "recover-admin") == 0)
        return cmd_recover_admin(argc - 1, argv + 1);
    rc = prepare(argc, argv, &cfg, &sigs);
    if (rc >= 0)
        return rc;
    /*
     * The local backend's process spawner, started now, before the daemon
     * has threads. Without it, a local cluster forks its own at its first
     * launch.
     */
    if (spawner_start(spawner_program(program, sizeof(program)), &spawner, &ei) < 0) {
        log_warn("no process spawner now; local clusters start their own", "error", ei.message);
        memset(&ei, 0, sizeof(ei));
    }
    fit_open_files(&cfg); /* after the spawner: work keeps the limits it would have had */

    if (open_store(&cfg, &store, &ei) < 0) {
        failed = "";
        goto out;
    }
    if (bootstrap(store, &cfg, &ei) < 0) {
        failed = "could not create the first admin";
        goto out;
    }
    if (import_sim_fleet(store, &cfg, &ei) < 0) {
        failed = "could not import the simulated fleet";
        goto out;
    }
    policy = placement_policy(&cfg);
    if (start_collector(&cfg, &collector, &ei) < 0) {
        failed = "could not start the GPU telemetry";
        goto out;
    }

    engine_options_init(&eopt);
    eopt.policy = policy;
    eopt.default_grace_ms = (int64_t)cfg.grace_s * 1000;
    eopt.reserve_after_ms = (int64_t)cfg.reserve_after_s * 1000;
    eopt.fair_share =
        strcmp(cfg.fair_share, "decayed") == 0 ? SCHED_SHARE_DECAYED : SCHED_SHARE_CURRENT;
    eopt.fair_share_half_life_ms = (int64_t)cfg.fair_share_half_life_s * 1000;
    eopt.collector = collector;
    eopt.idle_notify_ms = (int64_t)cfg.idle_notify_s * 1000;
    eopt.idle_stop_p2_ms = (int64_t)cfg.idle_stop_p2_s * 1000;
    /* What each cluster's backend is made with (backend_open). */
    eopt.backends.log_dir = cfg.log_dir;
    eopt.backends.run_uid = cfg.run_uid;
    eopt.backends.run_gid = cfg.run_gid;
    eopt.backends.timeout_grace_ms = eopt.default_grace_ms;
    eopt.backends.sim.speed = cfg.sim_speed;
    eopt.backends.local.cgroup_root = cfg.cgroup_root[0] ? cfg.cgroup_root : NULL;
    eopt.backends.local.spawner = spawner;
    eopt.backends.local.podman = cfg.podman;
    eopt.backends.local.collector = collector;
    /* config_load checked the list; declared GPUs stand in for NVML and nvidia-smi */
    rc = inv_declared_parse(cfg.local_gpus, &local_gpus, &ei);
    eopt.backends.local.gpus = local_gpus;
    eopt.backends.local.n_gpus = rc > 0 ? (size_t)rc : 0;
    eopt.backends.slurm.sync_ms = (int64_t)cfg.slurm_sync_s * 1000;
    eopt.backends.slurm.poll_ms = cfg.slurm_poll_ms;
    eopt.backends.slurm.queue_ahead = cfg.slurm_queue_ahead;
    eopt.backends.kube.sync_ms = (int64_t)cfg.kube_sync_s * 1000;
    eopt.backends.kube.default_image = cfg.kube_default_image;
    eopt.backends.kube.tolerate = cfg.kube_tolerate;
    if (engine_start(store, &eopt, &engine, &ei) < 0) {
        failed = "could not start the scheduler";
        goto out;
    }
    if (start_retention(store, &cfg, &retention, &ei) < 0) {
        failed = "could not start the log retention";
        goto out;
    }
    if (start_api(store, &cfg, engine, collector, &api, &ei) < 0) {
        failed = "";
        goto out;
    }
    log_ready(&cfg, api, store);

    lost = wait_for_stop(&sigs, store, &sig, &ei);
    if (lost)
        log_error("stopping: the store can no longer take changes", "error", ei.message);
    else
        log_info("stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
out:
    api_stop(api);
    retention_stop(retention);
    engine_stop(engine); /* before the collector: it asks the collector */
    free(local_gpus);
    collector_stop(collector);
    sched_policy_free(policy);
    store_close(store);
    spawner_stop(spawner); /* the work it started goes on; a restart adopts it */
    if (failed)
        return fail(failed, &ei);
    log_info("stopped");
    return lost ? 1 : 0;
}
