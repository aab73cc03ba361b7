/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h: gpuaasd's settings. Each comes from, in rising precedence: the
 * built-in default, the config file (`key = value` lines, # comments), an
 * environment variable GPUAAS_<KEY>, and a command-line flag --<key>.
 * docs/configuration.md lists them all.
 */
#ifndef GPUAAS_DAEMON_CONFIG_H
#define GPUAAS_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct config {
    char listen_addr[64]; /* "127.0.0.1" */
    int listen_port;      /* 8080; 0 picks a free port */
    char db[1024];        /* store URL or SQLite path */
    int threads;          /* HTTP worker threads */
    int db_pool;          /* store connections */
    long max_body_bytes;  /* request body cap */
    int max_connections;
    int per_ip_connections; /* 0: no per-address cap */
    int idle_timeout_s;     /* a silent connection is closed */
    int header_timeout_s;   /* a request's headers must come in time; 0: no limit */
    int busy_timeout_ms;
    bool sqlite_sync_full;
    bool slurm_queue_ahead;
    char log_level[16];
    char bootstrap_token_file[1024]; /* where the first admin token is also written */
    char issuer[200];                /* printed on invoices */
    char sim_fleet[1024];            /* fleet file imported as a simulated cluster on start */
    char sim_cluster[64];            /* its cluster name */
    int sim_speed;                   /* simulated time runs this much faster */
    int grace_s;                     /* default preemption grace */
    int max_min_runtime_s;           /* most min_runtime_s a submit may ask for */
    int max_grace_s;                 /* most grace_s a submit may ask for */
    int reserve_after_s;             /* head-of-line reservation delay */
    char fair_share[16];             /* "current" or "decayed" (engine.h: fair_share) */
    int fair_share_half_life_s;      /* the decayed rule's half-life */
    char log_dir[1024];              /* local clusters: workload logs */
    int log_retention_days;          /* files of work ended this long ago go; 0: kept */
    char cgroup_root[1024];          /* local clusters: "auto", a cgroup v2 directory, "" none */
    char podman[1024];               /* local clusters: runs work that names an image; "" none */
    int run_uid, run_gid;            /* local clusters: who work runs as (-1: the daemon's user) */
    char nvml[1024];                 /* telemetry: NVML library, "auto", or "" (off) */
    char nvidia_smi[1024];           /* telemetry: nvidia-smi program, or "" (off) */
    char dcgm_urls[4096];            /* telemetry: dcgm-exporter URLs, comma-separated */
    char local_gpus[16384]; /* local clusters: declared GPUs (inventory.h's syntax), "" none */
    int collect_interval_s; /* between runs of each source */
    int idle_window_s;      /* classification window */
    int idle_notify_s, idle_stop_p2_s; /* idle policies; 0: off */
    int slurm_sync_s;                  /* Slurm clusters: node and GPU refresh */
    int slurm_poll_ms;                 /* Slurm clusters: least time between squeue runs */
    int kube_sync_s;                   /* Kubernetes clusters: node and GPU refresh */
    char kube_default_image[512];      /* Kubernetes clusters: image of image-less work */
    char kube_tolerate[1024];          /* Kubernetes clusters: taint keys tolerated */
    char placement[32]; /* placement policy (sched/policies.h); "" is the built-in best-fit */
    char placement_pods[2048]; /* typical pods of fgd and fgd-fill; "" is the built-in set */
    char config_file[1024];
    bool show_help;
    bool show_version;
};

/*
 * Fills cfg from defaults, the config file (--config or GPUAASD_CONFIG, when
 * given), the environment and argv. On a bad flag, key or value, ei names it
 * (an unknown placement policy or malformed placement-pods included).
 */
int config_load(int argc, char **argv, struct config *cfg, struct error_info *ei);
void config_usage(FILE *out);

#endif
