/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory_bench: the telemetry benchmark of issue 5. It generates what
 * dcgm-exporter would serve for --gpus GPUs (default 10,000) on nodes of 8
 * GPUs: one text per node, the 24 counters of the shared 2 x H200 fixture
 * with its HELP/TYPE lines and its label set (gpu, UUID, pci_bus_id,
 * device, modelName, Hostname, driver version, container, namespace, pod),
 * values varying per scrape. Then, --iterations times (default 15):
 *
 *   parse:  the Prometheus parser alone over every node's text (MB/s);
 *   scrape: parse + map to per-GPU readings + ingest every reading into the
 *           telemetry store (default configuration) + end of scrape, i.e.
 *           the whole CPU cost of one 10 s collection cycle without the
 *           network.
 *
 * Times are CPU time of this process (CLOCK_PROCESS_CPUTIME_ID); medians
 * are reported, and the scrape cost as a share of one core at one scrape
 * every --interval-s seconds (default 10). It also prints the store's bytes
 * per GPU and the bound for 30 days of per-minute roll-ups. --check makes
 * the exit status say whether the cost stays under 5% of a core.
 *
 * Usage: inventory_bench [--gpus N] [--iterations N] [--interval-s N] [--check]
 */
#include "base/common.h"

#include <sys/resource.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/parse.h"
#include "inventory/inventory.h"
#include "bench-util.h"

#define GPUS_PER_NODE 8

static const struct {
    const char *name, *type, *help;
    int is_float;
} counters[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", 0},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", 0},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", 0},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", 0},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", 1},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
     "Total energy consumption since boot (in mJ).", 0},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", 0},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", 0},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", 0},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", 0},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", 0},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", 0},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", 0},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", 0},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", 0},
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
     "Total number of NVLink bandwidth counters for all lanes.", 0},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for uncorrectable errors", 0},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
     "Number of remapped rows for correctable errors", 0},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", 0},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", 1},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge",
     "Ratio of cycles the tensor (HMMA) pipe is active.", 1},
    {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
     "Ratio of cycles the device memory interface is active sending or receiving data.", 1},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus.", 0},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus.", 0},
};

/* One node's exporter output; the caller frees. */
static char *node_text(int node, int n_gpus, size_t *ret_len)
{
    struct buf b;
    buf_init(&b, 16u << 20);
    for (size_t c = 0; c < ARRAY_SIZE(counters); c++) {
        buf_printf(&b, "# HELP %s %s\n# TYPE %s %s\n", counters[c].name, counters[c].help,
                   counters[c].name, counters[c].type);
        for (int g = 0; g < n_gpus; g++) {
            uint64_t r = rng_next();
            bool held = (r & 3) != 0;
            buf_printf(&b,
                       "%s{gpu=\"%d\",UUID=\"GPU-%08x-%04x-4%03x-8%03x-%012x\","
                       "pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\","
                       "modelName=\"NVIDIA H200\",Hostname=\"gpu-node-%05d\","
                       "DCGM_FI_DRIVER_VERSION=\"570.133.20\"",
                       counters[c].name, g, (unsigned)node, (unsigned)g, (unsigned)(node & 0xfff),
                       (unsigned)(g * 7 & 0xfff), (unsigned)(node * 8 + g), 0x1A + g * 0x10, g,
                       node);
            if (held)
                buf_printf(&b,
                           ",container=\"trainer\",namespace=\"team-%d\","
                           "pod=\"job-%d-worker-%d-7c9f6d5b8-qx2lm\"",
                           node % 37, node, g);
            if (counters[c].is_float)
                buf_printf(&b, "} %f\n", (double)(r % 1000000) / 1000000.0);
            else
                buf_printf(&b, "} %" PRIu64 "\n", r % 200000);
        }
    }
    return buf_detach(&b, ret_len);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: inventory_bench [--gpus N] [--iterations N] [--interval-s N] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int64_t n_gpus = 10000, iters = 15, interval_s = 10;
    bool check = false;
    size_t n_nodes, total_bytes = 0, n_samples = 0;
    char **texts;
    size_t *lens;
    double *t_parse, *t_scrape;
    struct inv_tstore *ts;
    struct inv_tstore_config cfg;
    struct inv_readings rs;
    struct rusage ru;
    int64_t now_ms = INT64_C(1764460800000);

    rng_state = 42;
    for (int i = 1; i < argc; i++) {
        int64_t *target = NULL, max = 0;
        if (strcmp(argv[i], "--gpus") == 0)
            target = &n_gpus, max = 1000000;
        else if (strcmp(argv[i], "--iterations") == 0)
            target = &iters, max = 1000;
        else if (strcmp(argv[i], "--interval-s") == 0)
            target = &interval_s, max = 3600;
        else if (strcmp(argv[i], "--check") == 0) {
            check = true;
            continue;
        } else
            return usage();
        if (i + 1 >= argc || parse_int64(argv[++i], 1, max, target) < 0)
            return usage();
    }

    n_nodes = (size_t)(n_gpus + GPUS_PER_NODE - 1) / GPUS_PER_NODE;
    texts = calloc(n_nodes, sizeof(*texts));
    lens = calloc(n_nodes, sizeof(*lens));
    t_parse = calloc((size_t)iters, sizeof(double));
    t_scrape = calloc((size_t)iters, sizeof(double));
    if (!texts || !lens || !t_parse || !t_scrape)
        return 1;
    for (size_t n = 0; n < n_nodes; n++) {
        int g = (int)(n + 1 < n_nodes ? GPUS_PER_NODE : n_gpus - (int64_t)n * GPUS_PER_NODE);
        texts[n] = node_text((int)n, g, &lens[n]);
        total_bytes += lens[n];
    }

    inv_tstore_config_default(&cfg);
    if ((size_t)n_gpus > cfg.max_gpus)
        cfg.max_gpus = (size_t)n_gpus;
    ts = inv_tstore_new(&cfg);
    inv_readings_init(&rs, 0);

    for (int64_t it = 0; it < iters; it++) {
        double t0 = cpu_s();
        n_samples = 0;
        for (size_t n = 0; n < n_nodes; n++) {
            int rc = inv_prom_parse(texts[n], lens[n], NULL, NULL, NULL, NULL);
            if (rc < 0) {
                fprintf(stderr, "inventory_bench: parse failed: %s\n", err_str(rc));
                return 1;
            }
            n_samples += (size_t)rc;
        }
        t_parse[it] = cpu_s() - t0;

        now_ms += interval_s * 1000;
        t0 = cpu_s();
        for (size_t n = 0; n < n_nodes; n++) {
            struct error_info ei = {0};
            inv_readings_reset(&rs);
            if (inv_dcgm_parse(texts[n], lens[n], &rs, NULL, &ei) < 0) {
                fprintf(stderr, "inventory_bench: %s\n", ei.message);
                return 1;
            }
            for (size_t k = 0; k < rs.n; k++) {
                char key[INV_KEY_MAX];
                inv_reading_key(&rs.v[k], key, sizeof(key));
                if (inv_tstore_ingest(ts, key, now_ms, &rs.v[k], rs.v[k].pod[0] != '\0') < 0) {
                    fprintf(stderr, "inventory_bench: ingest failed\n");
                    return 1;
                }
            }
        }
        inv_tstore_end_scrape(ts);
        t_scrape[it] = cpu_s() - t0;
    }

    double mp = median(t_parse, (size_t)iters), ms = median(t_scrape, (size_t)iters);
    double share = ms / (double)interval_s * 100.0;
    double min30 = (double)n_gpus * 30 * 1440 * sizeof(struct inv_rollup);
    getrusage(RUSAGE_SELF, &ru);
    printf("gpus %" PRId64 " nodes %zu samples/scrape %zu bytes/scrape %zu (%.1f MB)\n", n_gpus,
           n_nodes, n_samples, total_bytes, total_bytes / 1e6);
    printf("parse: median %.3f s cpu, %.0f MB/s, %.2f M samples/s\n", mp, total_bytes / 1e6 / mp,
           n_samples / 1e6 / mp);
    printf("scrape (parse+map+ingest): median %.3f s cpu = %.2f%% of one core every %" PRId64
           " s\n",
           ms, share, interval_s);
    printf("telemetry store: %zu GPUs, %zu bytes/GPU, %.1f MB in all (default config)\n",
           inv_tstore_count(ts), inv_tstore_bytes_per_gpu(&cfg), inv_tstore_bytes(ts) / 1e6);
    printf("30 days of per-minute roll-ups: %" PRId64 " x 43200 x %zu B = %.2f GB (%.2f GiB)\n",
           n_gpus, sizeof(struct inv_rollup), min30 / 1e9, min30 / (1024.0 * 1024 * 1024));
    printf("peak RSS %ld MB\n", ru.ru_maxrss / 1024);

    inv_readings_release(&rs);
    inv_tstore_free(ts);
    for (size_t n = 0; n < n_nodes; n++)
        free(texts[n]);
    free(texts);
    free(lens);
    free(t_parse);
    free(t_scrape);
    return check && share >= 5.0 ? 1 : 0;
}
