/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory.h: live GPU inventory and telemetry (DESIGN.md section 5), the
 * collector and pure layer. docs/inventory.md states every rule.
 *
 * - Parsers (no I/O): the Prometheus text format 0.0.4 and its mapping from
 *   dcgm-exporter series to per-GPU readings; nvidia-smi's CSV query output;
 *   RFC 4180 CSV and the hand-made inventory spreadsheet on top of it.
 * - Collectors (I/O, bounded in time and size): a dcgm-exporter scrape over
 *   HTTP (libcurl), nvidia-smi run as a child process, NVML loaded with
 *   dlopen. Each returns a fresh set of readings or an error; none keeps
 *   state, so a failing source never wipes data (the caller keeps the last
 *   good readings and marks them stale through struct inv_sched).
 * - Pure decisions: model names to GPU classes, the per-GPU state (busy,
 *   idle-allocated, free, down), idle policies, collector schedules.
 * - A telemetry store in bounded memory: raw samples for a recent window,
 *   per-minute and per-hour roll-ups, queries and efficiency.
 *
 * Nothing here reads a clock: times are milliseconds since the Unix epoch
 * passed in by the caller. Errors are negative enum err_code values
 * (base/err.h) with the human part in a struct error_info (may be NULL).
 */
#ifndef GPUAAS_INVENTORY_H
#define GPUAAS_INVENTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct error_info;

/* ======================================================================
 * Prometheus text exposition format 0.0.4
 * ====================================================================== */

enum inv_prom_type {
    INV_PROM_UNTYPED = 0,
    INV_PROM_COUNTER,
    INV_PROM_GAUGE,
    INV_PROM_HISTOGRAM,
    INV_PROM_SUMMARY,
};

struct inv_prom_label {
    const char *name;  /* NUL-terminated */
    const char *value; /* NUL-terminated, escapes resolved */
};

/*
 * One sample, valid only during the callback: every pointer refers to the
 * parser's scratch memory, reused for the next line.
 */
struct inv_prom_sample {
    const char *name;
    const struct inv_prom_label *labels;
    size_t n_labels;
    double value; /* NaN, +Inf and -Inf included */
    bool has_timestamp;
    int64_t timestamp_ms;
    enum inv_prom_type type; /* from the last "# TYPE" of this family, else UNTYPED */
    size_t line;             /* 1-based */
};

/* Return 0 to go on; a negative value stops the parse and is returned by it. */
typedef int (*inv_prom_sample_fn)(void *ctx, const struct inv_prom_sample *s);

#define INV_PROM_MAX_LINE 65536
#define INV_PROM_MAX_LABELS 64

struct inv_prom_limits {
    size_t max_line;   /* bytes without the line end; 0: INV_PROM_MAX_LINE */
    size_t max_labels; /* per sample; 0: INV_PROM_MAX_LABELS */
};

/*
 * Parses data[0..len) line by line and calls fn once per sample. Accepts
 * blank lines, comments, HELP and TYPE lines, CRLF line ends, a missing
 * final newline, escaped label values (\\, \", \n), a trailing comma in a
 * label set, optional integer timestamps and NaN/+Inf/-Inf values. Allocates
 * one scratch area per call, nothing per sample. lim may be NULL.
 * Returns the number of samples (>= 0), ERR_INVALID for malformed input or
 * ERR_TOO_LARGE for a line or label set over the limits, with
 * "line N: ..." in ei; or the callback's negative value.
 */
int inv_prom_parse(const char *data, size_t len, const struct inv_prom_limits *lim,
                   inv_prom_sample_fn fn, void *ctx, struct error_info *ei);

/* The value of label name in s, or NULL. */
const char *inv_prom_label(const struct inv_prom_sample *s, const char *name);

/* ======================================================================
 * Readings: what a collector saw of one GPU (or MIG instance) at one time
 * ====================================================================== */

#define INV_UUID_MAX 96 /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

enum inv_source {
    INV_SRC_DCGM = 1,
    INV_SRC_SMI,
    INV_SRC_NVML,
};

/*
 * One GPU or one MIG GPU instance. Identity is (uuid, mig_instance): a MIG
 * instance is its own reading keyed by its parent's UUID and its GPU
 * instance id. Metrics that the source did not report are NaN (test them
 * with inv_has()). Strings are NUL-terminated, "" when unknown; values too
 * long for their field are cut (only the UUID is refused).
 */
struct inv_reading {
    char uuid[INV_UUID_MAX]; /* "GPU-..."; for a MIG instance the parent's */
    int32_t mig_instance;    /* GPU_I_ID; -1: the whole GPU */
    int32_t index;           /* device index on its host; -1: unknown */
    int32_t mig_mode;        /* -1 unknown, 0 disabled, 1 enabled */
    int32_t source;          /* enum inv_source */
    char mig_profile[32];    /* "1g.18gb"; "" for a whole GPU */
    char mig_uuid[INV_UUID_MAX]; /* a MIG instance's own "MIG-..." when known (NVML,
                                    nvidia-smi -L); "" otherwise */
    char model[96];          /* as reported: "NVIDIA H200" */
    char host[64];
    char pci_bus_id[32];
    char pod[128];
    char namespace_[64];
    char container[64];
    double util_pct;    /* DCGM_FI_DEV_GPU_UTIL, utilization.gpu: 0..100 */
    double gr_active;   /* DCGM_FI_PROF_GR_ENGINE_ACTIVE: 0..1 */
    double fb_used_mib; /* memory in use */
    double fb_free_mib;
    double fb_total_mib;
    double fb_reserved_mib;
    double power_w;
    double temp_c;
    int32_t n_procs; /* compute processes; -1: unknown */
};

/* Whether a metric was reported (not NaN). */
bool inv_has(double v);
/* A reading with every metric NaN, counts -1 and strings empty. */
void inv_reading_clear(struct inv_reading *r);
/*
 * The reading's activity as a fraction 0..1: GR_ENGINE_ACTIVE when present
 * (it is what MIG instances report), else GPU_UTIL / 100, else NaN.
 */
double inv_reading_activity(const struct inv_reading *r);
/* "GPU-x" or "GPU-x/3" for a MIG instance, into out (>= INV_KEY_MAX bytes). */
#define INV_KEY_MAX (INV_UUID_MAX + 16)
void inv_reading_key(const struct inv_reading *r, char *out, size_t size);

/* A growable set of readings with a hash index on (uuid, mig_instance). */
struct inv_readings {
    struct inv_reading *v;
    size_t n, cap;
    size_t max;      /* most readings accepted; 0 = 100,000 */
    uint32_t *index; /* open addressing, 0 = empty, else position + 1 */
    size_t index_cap;
};

void inv_readings_init(struct inv_readings *rs, size_t max);
/* Frees everything; rs is empty and reusable. */
void inv_readings_release(struct inv_readings *rs);
void inv_readings_reset(struct inv_readings *rs);
/*
 * The reading for (uuid, mig_instance), created cleared (with uuid and
 * instance set) when absent. Returns 0 and *ret points into rs (valid until
 * the next call), ERR_INVALID for an empty or too long uuid, ERR_TOO_LARGE
 * past rs->max.
 */
int inv_readings_get(struct inv_readings *rs, const char *uuid, int32_t mig_instance,
                     struct inv_reading **ret);
/* The reading or NULL. */
struct inv_reading *inv_readings_find(const struct inv_readings *rs, const char *uuid,
                                      int32_t mig_instance);

/* ======================================================================
 * dcgm-exporter
 * ====================================================================== */

struct inv_dcgm_stats {
    size_t n_samples; /* samples parsed */
    size_t n_used;    /* samples mapped to a known metric */
    size_t n_no_uuid; /* samples without a UUID label, skipped */
};

/*
 * Parses a dcgm-exporter scrape and merges it into out (readings are created
 * or updated; source INV_SRC_DCGM). Labels used: UUID (required for a sample
 * to count), gpu, modelName, Hostname or hostname, pci_bus_id,
 * GPU_I_PROFILE/GPU_I_ID, pod/namespace/container (or pod_name/
 * pod_namespace/container_name). Metrics used: DCGM_FI_DEV_GPU_UTIL,
 * DCGM_FI_PROF_GR_ENGINE_ACTIVE, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE,
 * DCGM_FI_DEV_FB_RESERVED (for the total), DCGM_FI_DEV_POWER_USAGE,
 * DCGM_FI_DEV_GPU_TEMP; others are ignored. stats may be NULL. Returns the
 * number of readings in out, or the parser's error (ERR_INVALID also for a
 * GPU_I_ID or gpu label that is not a small integer), with "line N: ..." in
 * ei. On error out may hold part of the scrape: callers parse into a fresh
 * set and swap it in only on success.
 */
int inv_dcgm_parse(const char *data, size_t len, struct inv_readings *out,
                   struct inv_dcgm_stats *stats, struct error_info *ei);

/* ======================================================================
 * nvidia-smi
 * ====================================================================== */

/* The query the CSV parser expects, in this column order. */
#define INV_SMI_QUERY                                                                              \
    "index,uuid,name,pci.bus_id,memory.total,memory.used,utilization.gpu,temperature.gpu,"         \
    "power.draw,mig.mode.current"

/*
 * Parses the output of nvidia-smi --query-gpu=INV_SMI_QUERY
 * --format=csv,noheader,nounits into out (source INV_SRC_SMI). "[N/A]",
 * "[Not Supported]", "N/A" and empty fields are unknown (NaN / -1);
 * leading and trailing spaces are ignored; CRLF is fine. Returns the number
 * of GPUs, or ERR_INVALID with "line N: ..." in ei (wrong column count, a
 * number that is not one, no UUID).
 */
int inv_smi_parse(const char *data, size_t len, struct inv_readings *out, struct error_info *ei);

/*
 * Parses the output of nvidia-smi -L into out (source INV_SRC_SMI): each
 * "GPU N: <name> (UUID: GPU-...)" line finds or makes the whole GPU's
 * reading (index and model set when unknown), and each MIG line under it,
 * "  MIG 1g.10gb     Device  0: (UUID: MIG-...)", makes a reading keyed by
 * (the GPU's UUID, the MIG device number) with mig_uuid, mig_profile, the
 * parent's index and model, mig_mode 1 and fb_total_mib from the profile
 * (inv_mig_profile_mib; NaN when it names no size). Blank lines are
 * skipped. Returns the number of MIG instances, or ERR_INVALID with
 * "line N: ..." in ei (any other line, a MIG line before a GPU line, no
 * UUID, a bad profile or device number).
 */
int inv_smi_list_parse(const char *data, size_t len, struct inv_readings *out,
                       struct error_info *ei);

/*
 * Runs argv[0] (looked up on PATH, no shell) with argv, collects its
 * standard output up to max_output bytes and waits at most timeout_ms.
 * Standard error goes to /dev/null. On timeout the child is killed (SIGKILL)
 * and reaped. Returns 0 with *ret_out (caller frees; NUL-terminated) and
 * *ret_len; ERR_UNAVAILABLE when the program cannot be run, exits non-zero
 * or is killed by a signal; ERR_TIMEOUT-like failures are ERR_UNAVAILABLE
 * with "timed out after N ms" in ei; ERR_TOO_LARGE past max_output.
 */
int inv_run_command(char *const argv[], int64_t timeout_ms, size_t max_output, char **ret_out,
                    size_t *ret_len, struct error_info *ei);

/*
 * Collector: runs program (NULL: "nvidia-smi") with the query and parses
 * its output into out; when a GPU has MIG enabled, runs "program -L" too
 * and adds its MIG instances (inv_smi_list_parse). Returns the number of
 * GPUs or an error as above (a failing -L fails the collection).
 */
int inv_smi_collect(const char *program, int64_t timeout_ms, struct inv_readings *out,
                    struct error_info *ei);

/* ======================================================================
 * NVML (libnvidia-ml.so.1 loaded with dlopen)
 * ====================================================================== */

/*
 * Collector: loads library (NULL: "libnvidia-ml.so.1"), initialises NVML,
 * reads every device (UUID, name, memory, utilization, temperature, power,
 * MIG mode; a query the device does not support leaves that metric NaN)
 * and, of a GPU with MIG enabled, every MIG device: a reading keyed by
 * (the GPU's UUID, its GPU instance id, else its MIG device index) with
 * mig_uuid, mig_profile (from its name), memory, the parent's index and
 * model, mig_mode 1. The MIG calls (nvmlDeviceGetMaxMigDeviceCount,
 * nvmlDeviceGetMigDeviceHandleByIndex, nvmlDeviceGetGpuInstanceId) are
 * optional: a driver without them gives whole GPUs only. Then it
 * shuts NVML down and unloads the library. Returns the number of GPUs;
 * ERR_UNAVAILABLE with "NVML not available: <dlerror>" when the library or
 * one of its symbols is missing, or "nvml <call> failed: <nvmlErrorString>"
 * when a required call fails.
 */
int inv_nvml_collect(const char *library, struct inv_readings *out, struct error_info *ei);

/* ======================================================================
 * HTTP scrape of a dcgm-exporter endpoint
 * ====================================================================== */

#define INV_SCRAPE_MAX_BYTES (64u << 20)

/*
 * GETs url (http or https) with libcurl within timeout_ms, up to max_bytes
 * (0: INV_SCRAPE_MAX_BYTES) and parses it with inv_dcgm_parse into out.
 * Returns the number of readings; ERR_UNAVAILABLE when the endpoint cannot
 * be reached, answers other than 200 or times out; ERR_TOO_LARGE past
 * max_bytes; the parser's errors. The program calls curl_global_init once
 * at start-up, before any thread runs a scrape.
 */
int inv_scrape_dcgm(const char *url, int64_t timeout_ms, size_t max_bytes, struct inv_readings *out,
                    struct error_info *ei);

/* ======================================================================
 * RFC 4180 CSV and the inventory spreadsheet
 * ====================================================================== */

#define INV_CSV_MAX_FIELDS 64
#define INV_CSV_MAX_FIELD 4096

/*
 * One record, valid during the callback only. row is the 1-based record
 * number (the header is row 1); line the physical line it starts on.
 */
typedef int (*inv_csv_record_fn)(void *ctx, char *const *fields, size_t n_fields, size_t row,
                                 size_t line);

/*
 * Parses RFC 4180 CSV: fields separated by commas, records by CRLF or LF,
 * quoted fields with embedded commas, line breaks and doubled quotes; a
 * leading UTF-8 BOM is skipped; a blank final line is ignored. Returns the
 * number of records, ERR_INVALID ("line N: ...": a quote inside an unquoted
 * field, text after a closing quote, an unterminated quote) or ERR_TOO_LARGE
 * (more than INV_CSV_MAX_FIELDS fields or a field over INV_CSV_MAX_FIELD
 * bytes), or the callback's negative value.
 */
int inv_csv_parse(const char *data, size_t len, inv_csv_record_fn fn, void *ctx,
                  struct error_info *ei);

/* Appends one field, quoted when it needs to be. */
int inv_csv_put_field(struct buf *out, const char *s, bool last);

enum inv_col {
    INV_COL_GPU = 0,
    INV_COL_MODEL,
    INV_COL_NODE,
    INV_COL_CLUSTER,
    INV_COL_SITE,
    INV_COL_OWNER,
    INV_COL_MANAGER,
    INV_COL_INTENDED_USE,
    INV_COL_ENVIRONMENT,
    INV_N_COLS
};

/* The exported header name of a column ("gpu", "intended_use"). */
const char *inv_col_name(int col);

/* One row of the inventory spreadsheet; every string is non-NULL. */
struct inv_item {
    char *f[INV_N_COLS]; /* indexed by enum inv_col; "" when absent */
};

struct inv_table {
    struct inv_item *items;
    size_t n, cap;
    char **unknown_cols; /* header names that matched no column */
    size_t n_unknown, cap_unknown;
};

void inv_table_init(struct inv_table *t);
/* Frees every item and string; t is empty and reusable. */
void inv_table_release(struct inv_table *t);
/* Appends a copy of item (NULL strings become ""). */
void inv_table_add(struct inv_table *t, const struct inv_item *item);

#define INV_CSV_MAX_ROWS 1000000
#define INV_CSV_MAX_ERRORS 20

/*
 * Imports a spreadsheet exported as CSV. The header row is required;
 * columns are matched by name, case-insensitively, ignoring spaces,
 * underscores, dashes and slashes (so "Intended use", "intended_use" and
 * "INTENDED-USE" are one column; docs/inventory.md lists the aliases).
 * Unknown columns are listed in ret->unknown_cols (an error when strict).
 * Every row is parsed and validated before anything is returned: a GPU
 * UUID is required, well-formed and unique; every field is at most 256
 * bytes of valid UTF-8. Returns the number of rows with *ret filled (free
 * with inv_table_release), or ERR_INVALID with the first bad row in ei
 * ("row N: ...") and, when report is not NULL, one line per bad row (at most
 * INV_CSV_MAX_ERRORS) appended to it; *ret is untouched on error.
 */
int inv_csv_import(const char *data, size_t len, bool strict, struct inv_table *ret,
                   struct buf *report, struct error_info *ei);

/* Writes t as CSV with a header row, CRLF line ends; import(export(t)) == t. */
int inv_csv_export(const struct inv_table *t, struct buf *out);

/* ======================================================================
 * Model names to GPU classes
 * ====================================================================== */

/*
 * Normalises a model string ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB")
 * and an optional MIG profile ("1g.18gb", NULL or "" for a whole GPU) into a
 * class name ("h100", "v100-16gb", "h200/1g.18gb") written to out. Known
 * families come from a table (docs/inventory.md); anything else becomes its
 * lower-case words joined by '-' without vendor words. Returns 1 when the
 * table knew the family, 0 when the name was derived, ERR_INVALID for an
 * empty model or a bad MIG profile, ERR_TOO_LARGE when out is too small.
 */
int inv_model_class(const char *model, const char *mig_profile, char *out, size_t size);

/*
 * The MIG profile at the end of a MIG device's NVML name ("NVIDIA H100 80GB
 * HBM3 MIG 1g.10gb" -> "1g.10gb"): the word after the last " MIG ". Returns
 * 0, or ERR_INVALID when there is none or it is not a profile
 * ("<digits>g.<letters, digits, '.', '+'>"), ERR_TOO_LARGE when out is too
 * small; out is "" on error.
 */
int inv_mig_profile_of_name(const char *name, char *out, size_t size);

/*
 * The memory a MIG profile names, in MiB: "1g.10gb" -> 10240, "3g.40gb+me"
 * -> 40960. ERR_INVALID when the profile has no "<n>g.<m>gb" form (m 1..9999).
 */
int64_t inv_mig_profile_mib(const char *profile);

/* ======================================================================
 * A declared list of this machine's GPUs (gpuaasd's local-gpus setting)
 * ====================================================================== */

#define INV_DECLARED_MAX 1024 /* GPUs in one list; indices are 0..INV_DECLARED_MAX-1 */

struct inv_declared_gpu {
    int32_t index;           /* device index on this machine */
    char cls[64];            /* GPU class name, as written */
    char uuid[INV_UUID_MAX]; /* "GPU-..."; "" when not given */
};

/*
 * Parses a declared GPU list: entries separated by commas (spaces around
 * entries and fields are ignored), each one of
 *   CLASS:COUNT        COUNT (1..1024) GPUs of CLASS without UUIDs, at the
 *                      indices after the highest one so far (from 0);
 *   INDEX:CLASS        one GPU without a UUID;
 *   INDEX:CLASS:UUID   one GPU with its UUID ("GPU-" then letters, digits
 *                      and '-').
 * An entry whose first field is all digits is an INDEX form. A CLASS is
 * lower-case letters, digits, '-', '_' and '.', starts with a letter, at
 * most 63 bytes. An index is used once, a UUID once, at most
 * INV_DECLARED_MAX GPUs in all. "" declares none.
 * Returns the number of GPUs with *ret_gpus (caller frees with free();
 * NULL when none), or ERR_INVALID with "entry N ('text'): why" in ei;
 * *ret_gpus is untouched on failure.
 */
int inv_declared_parse(const char *spec, struct inv_declared_gpu **ret_gpus, struct error_info *ei);

/* ======================================================================
 * Classification and idle policies
 * ====================================================================== */

enum inv_state {
    INV_STATE_FREE = 0,
    INV_STATE_BUSY,
    INV_STATE_IDLE_ALLOCATED, /* reclaimable */
    INV_STATE_DOWN,
};

/* "free", "busy", "idle-allocated", "down". */
const char *inv_state_name(int state);

struct inv_class_config {
    int64_t window_ms;     /* look-back window; default 30 min */
    double busy_activity;  /* average activity (0..1) at or above: busy; default 0.05 */
    double busy_peak;      /* any sample at or above: busy; default 0.30 */
    double mem_busy_mib;   /* without activity metrics, memory at or above: busy; 1024 */
    int down_after_missed; /* consecutive missed scrapes: down; default 3 */
    int64_t down_after_ms; /* or unseen this long; default 5 min; 0: off */
};

/* Fills the documented defaults. */
void inv_class_config_default(struct inv_class_config *cfg);

/* What the telemetry said about one GPU over the window. */
struct inv_class_input {
    bool allocated; /* an allocation holds it now */
    int64_t now_ms;
    int64_t last_seen_ms; /* 0: never seen */
    int missed_scrapes;   /* consecutive scrapes that did not report it */
    int64_t covered_ms;   /* how much of the window has samples */
    size_t n_samples;     /* in the window */
    double activity_avg;  /* 0..1; NaN when no activity metric */
    double activity_max;
    double mem_used_mib; /* the last value; NaN when unknown */
    int32_t n_procs;     /* last value; -1 unknown */
};

struct inv_class_result {
    int state;          /* enum inv_state */
    const char *reason; /* static text */
};

/*
 * The state of one GPU, a pure function of its inputs:
 * 1. down: never seen, missed down_after_missed scrapes in a row, or unseen
 *    for down_after_ms;
 * 2. free: not allocated (reason says when it is used anyway);
 * 3. busy: allocated, and the window is not yet covered (no reclaim without
 *    a full window of evidence), or activity average >= busy_activity, or a
 *    peak >= busy_peak; without any activity metric: processes running or
 *    memory >= mem_busy_mib;
 * 4. idle-allocated otherwise.
 */
void inv_classify(const struct inv_class_config *cfg, const struct inv_class_input *in,
                  struct inv_class_result *ret);

struct inv_idle_policy {
    int64_t notify_after_ms;  /* X: an event once idle this long; 0: off */
    int64_t stop_p2_after_ms; /* Y: stop opportunistic work idle this long; 0: off */
};

struct inv_idle_alloc {
    int64_t id;
    bool opportunistic; /* P2 */
    int64_t idle_ms;    /* continuous idle-allocated time so far */
    bool notified;      /* an idle event was already raised for this idle period */
};

enum inv_idle_action {
    INV_IDLE_NONE = 0,
    INV_IDLE_NOTIFY = 1, /* raise an "allocation idle" event */
    INV_IDLE_STOP = 2,   /* stop the (P2) allocation */
};

/*
 * For each allocation, what to do now (ret_actions[i], a bit set of enum
 * inv_idle_action): NOTIFY once when idle_ms >= X and not yet notified;
 * STOP when opportunistic and idle_ms >= Y (Y on). Owned work is never
 * stopped. Returns the number of allocations with an action.
 */
size_t inv_idle_apply(const struct inv_idle_policy *pol, const struct inv_idle_alloc *allocs,
                      size_t n, int *ret_actions);

/* ======================================================================
 * Collector schedule and backoff
 * ====================================================================== */

struct inv_sched {
    int64_t interval_ms;    /* between successful runs */
    int64_t timeout_ms;     /* for one run */
    int64_t backoff_max_ms; /* cap of the delay after failures */
    int64_t stale_after_ms; /* no success for this long: stale (3 x interval by default) */
    int64_t next_due_ms;
    int64_t last_ok_ms; /* 0: never */
    int64_t last_try_ms;
    int64_t delay_ms; /* the current delay after failures, 0 when healthy */
    int failures;     /* consecutive */
    bool stale;
};

/* A schedule due at now, stale until its first success; stale_after_ms is set to 3 x interval
 * (change it after init). Invalid values assert. */
void inv_sched_init(struct inv_sched *s, int64_t interval_ms, int64_t timeout_ms,
                    int64_t backoff_max_ms, int64_t now_ms);
/* Whether a run is due at now (also refreshes the stale flag). */
bool inv_sched_due(struct inv_sched *s, int64_t now_ms);
/* A run started at now finished well: next run one interval later, not stale. */
void inv_sched_ok(struct inv_sched *s, int64_t now_ms);
/*
 * A run started at now failed: the delay doubles from interval up to
 * backoff_max; the data is stale at once (the caller keeps it, with
 * last_ok_ms as its time).
 */
void inv_sched_failed(struct inv_sched *s, int64_t now_ms);

/* ======================================================================
 * Telemetry store in bounded memory
 * ====================================================================== */

struct inv_tstore_config {
    size_t max_gpus;      /* series; creating more fails; default 20,000 */
    int64_t sample_ms;    /* nominal scrape interval; default 10 s */
    size_t raw_cap;       /* raw samples per GPU; default 360 (1 h at 10 s) */
    size_t minute_cap;    /* per-minute roll-ups per GPU; default 1,440 (1 day) */
    size_t hour_cap;      /* per-hour roll-ups per GPU; default 2,160 (90 days) */
    double busy_activity; /* a sample at or above is busy; default 0.05 */
};

void inv_tstore_config_default(struct inv_tstore_config *cfg);

/* One raw sample as kept: 24 bytes. */
struct inv_raw {
    int64_t t_ms;
    uint32_t mem_used_mib; /* UINT32_MAX: unknown */
    uint16_t activity_pm;  /* activity in per mille; UINT16_MAX: unknown */
    uint16_t power_w;      /* UINT16_MAX: unknown */
    uint8_t temp_c;        /* UINT8_MAX: unknown */
    uint8_t flags;         /* INV_RAW_* */
    uint8_t pad_[6];
};
#define INV_RAW_ALLOCATED 1
#define INV_RAW_BUSY 2

/* One per-minute or per-hour bucket: 28 bytes. */
struct inv_rollup {
    uint32_t act_sum_pm;  /* sum of activity per mille over n_act samples */
    uint32_t mem_max_mib; /* over samples with a memory value */
    uint32_t power_sum_w; /* sum of watts over n_power samples */
    uint16_t n;           /* samples (saturating, as every count here) */
    uint16_t n_act;       /* samples with an activity value */
    uint16_t n_power;     /* samples with a power value */
    uint16_t act_min_pm, act_max_pm;
    uint16_t busy_s;  /* seconds allocated and busy in this bucket */
    uint16_t alloc_s; /* seconds allocated in this bucket */
    uint8_t temp_max_c;
    uint8_t has_mem; /* whether mem_max_mib is known */
};

struct inv_tstore;

/* A new empty store (free with inv_tstore_free). cfg NULL: defaults. */
struct inv_tstore *inv_tstore_new(const struct inv_tstore_config *cfg);
void inv_tstore_free(struct inv_tstore *ts);

/*
 * Bytes one GPU costs: its series header, raw ring, minute and hour rings,
 * one block allocated when the series is created, never more.
 * inv_tstore_bytes is the whole store now: that times the series, plus the
 * fixed part allocated at creation (the store, a table of max_gpus
 * pointers and a key index of the next power of two >= 2 x max_gpus
 * 4-byte slots).
 */
size_t inv_tstore_bytes_per_gpu(const struct inv_tstore_config *cfg);
size_t inv_tstore_bytes(const struct inv_tstore *ts);
size_t inv_tstore_count(const struct inv_tstore *ts);

/*
 * Records one reading taken at t_ms under key (inv_reading_key), creating
 * the series on first sight. allocated says whether an allocation held the
 * GPU. Samples not newer than the series' last one are refused. Returns 0,
 * ERR_CONFLICT (out of order), ERR_TOO_LARGE (max_gpus reached) or
 * ERR_INVALID (bad key).
 */
int inv_tstore_ingest(struct inv_tstore *ts, const char *key, int64_t t_ms,
                      const struct inv_reading *r, bool allocated);

/*
 * Ends one scrape: every series not ingested since the previous call counts
 * one more missed scrape; the others none. Series are never deleted. Use
 * one store per set of sources scraped together.
 */
void inv_tstore_end_scrape(struct inv_tstore *ts);

/*
 * What the store knows of one GPU now, for inv_classify: the raw samples in
 * (now - window, now] (the window should not exceed the raw retention,
 * raw_cap x sample_ms), the last memory and process values, last seen and
 * missed scrapes. Returns 0 or ERR_NOT_FOUND.
 */
int inv_tstore_class_input(const struct inv_tstore *ts, const char *key, int64_t now_ms,
                           int64_t window_ms, bool allocated, struct inv_class_input *ret);

enum inv_resolution {
    INV_RES_RAW = 0,
    INV_RES_MINUTE,
    INV_RES_HOUR,
};

struct inv_point {
    int64_t t_ms;                     /* bucket start (raw: the sample time) */
    uint32_t n;                       /* samples over the group */
    double act_min, act_avg, act_max; /* 0..1; NaN when no activity values */
    double mem_mib;                   /* sum over the group of each GPU's maximum */
    double power_w;                   /* sum over the group of each GPU's average */
    int64_t busy_ms, alloc_ms;
};

struct inv_series_query {
    int resolution;           /* enum inv_resolution, chosen */
    struct inv_point *points; /* ascending time; caller frees */
    size_t n_points;
    int64_t busy_ms, alloc_ms; /* totals over the range */
};

/*
 * History of a group of GPUs (keys; one key for one GPU) over [from_ms,
 * to_ms): the finest resolution whose retention still covers from_ms
 * (raw, then minutes, then hours), one point per bucket that has samples,
 * merged over the group. Unknown keys are skipped. Returns the number of
 * points with *ret filled, or ERR_INVALID for an empty range.
 */
int inv_tstore_query(const struct inv_tstore *ts, const char *const *keys, size_t n_keys,
                     int64_t from_ms, int64_t to_ms, struct inv_series_query *ret);

/* busy / allocated time of a query; NaN when nothing was allocated. */
double inv_efficiency(const struct inv_series_query *q);

#endif
