/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.c: the usage ledger. Each record is one interval of one run, and
 * carries hash = BLAKE2b-256(prev_hash || bytes), where bytes are the
 * record's canonical 61 bytes (meter_record_encode, with id = seq) followed
 * by workload_id and run_started_ms as big-endian int64. The head (last seq
 * and hash) is kept in the store's meta table and moves in the same
 * transaction as the append, so a crash leaves the chain and its head in
 * step, and verifying can tell a truncated tail from a complete one.
 *
 * The engine is the only writer (one thread); a second writer racing on the
 * same head would fail on the unique seq and roll back, never fork the chain.
 */
#include "base/common.h"

#include <sodium.h>

#include "billing/billing-int.h"

#define HEAD_KEY "usage_ledger_head"
#define HASH_BYTES 32
#define CHAIN_BYTES (METER_RECORD_BYTES + 16)

static void put_be64(uint8_t *p, int64_t v)
{
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)((uint64_t)v >> (8 * i));
}

static void chain_hash(const uint8_t prev[HASH_BYTES], const struct meter_record *rec,
                       int64_t workload_id, int64_t run_started_ms, char out[BILLING_HASH_HEX + 1])
{
    uint8_t bytes[CHAIN_BYTES], h[HASH_BYTES];
    crypto_generichash_state st;

    meter_record_encode(rec, bytes);
    put_be64(bytes + METER_RECORD_BYTES, workload_id);
    put_be64(bytes + METER_RECORD_BYTES + 8, run_started_ms);
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, prev, HASH_BYTES);
    crypto_generichash_update(&st, bytes, sizeof(bytes));
    crypto_generichash_final(&st, h, sizeof(h));
    sodium_bin2hex(out, BILLING_HASH_HEX + 1, h, sizeof(h));
}

static bool unhex(const char *hex, uint8_t out[HASH_BYTES])
{
    size_t len = 0;
    return strlen(hex) == BILLING_HASH_HEX &&
           sodium_hex2bin(out, HASH_BYTES, hex, BILLING_HASH_HEX, NULL, &len, NULL) == 0 &&
           len == HASH_BYTES;
}

/* The head: last seq (0 for an empty ledger) and its hash (zeros). */
static int read_head(struct store_conn *c, struct arena *a, int64_t *ret_seq,
                     char ret_hash[BILLING_HASH_HEX + 1], struct error_info *ei)
{
    char *v;
    int used = 0;
    int rc = store_meta_get(c, HEAD_KEY, a, &v, ei);

    if (rc == ERR_NOT_FOUND) {
        if (ei)
            *ei = (struct error_info){0}; /* an empty ledger is not an error */
        *ret_seq = 0;
        memset(ret_hash, '0', BILLING_HASH_HEX);
        ret_hash[BILLING_HASH_HEX] = '\0';
        return 0;
    }
    if (rc < 0)
        return rc;
    if (sscanf(v, "%" SCNd64 " %n", ret_seq, &used) != 1 || strlen(v + used) != BILLING_HASH_HEX)
        return errinfo_set(ei, ERR_STORE, NULL, "usage ledger head '%.80s' is malformed", v);
    memcpy(ret_hash, v + used, BILLING_HASH_HEX + 1);
    return 0;
}

static void record_of(const struct row *u, struct meter_record *rec, int64_t *ret_wid,
                      int64_t *ret_run)
{
    *rec = (struct meter_record){
        .id = row_int(u, F_USAGE_SEQ),
        .org_id = row_int(u, F_USAGE_ORG_ID),
        .project_id = row_int(u, F_USAGE_PROJECT_ID),
        .flavor_id = row_int(u, F_USAGE_FLAVOR_ID),
        .cls = billing__class_of(row_str(u, F_USAGE_PRIORITY_CLASS)),
        .replicas = (int32_t)row_int(u, F_USAGE_REPLICAS),
        .gpu_milli = (int32_t)row_int(u, F_USAGE_GPU_MILLI),
        .started_ms = row_int(u, F_USAGE_STARTED_MS),
        .ended_ms = row_int(u, F_USAGE_ENDED_MS),
    };
    *ret_wid = row_int(u, F_USAGE_WORKLOAD_ID);
    *ret_run = row_int(u, F_USAGE_RUN_STARTED_MS);
}

/* Where the run's metering stopped: the end of its last record, or its start. */
static int metered_until(struct store_conn *c, int64_t workload_id, int64_t run_started_ms,
                         struct arena *a, int64_t *ret, struct error_info *ei)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_USAGE_WORKLOAD_ID, workload_id);
    store_filter_eq_int(&f, F_USAGE_RUN_STARTED_MS, run_started_ms);
    rc = store_list_all(c, &model_usage, &f, a, &rows, &n, ei);
    *ret = run_started_ms;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        int64_t end = row_int(&rows[i], F_USAGE_ENDED_MS);
        if (end > *ret)
            *ret = end;
    }
    return rc;
}

int billing_meter_run(struct store_conn *c, int64_t workload_id, int64_t run_started_ms,
                      int replicas, const char *priority_class, int64_t until_ms, int64_t now_ms,
                      struct arena *a, struct error_info *ei)
{
    const struct resource_def *d = &model_usage;
    struct row w, prj, flv, u;
    struct meter_record rec;
    char prev[BILLING_HASH_HEX + 1], hash[BILLING_HASH_HEX + 1], *head;
    uint8_t prev_bin[HASH_BYTES];
    int64_t from, seq, id;
    int rc;

    rc = metered_until(c, workload_id, run_started_ms, a, &from, ei);
    if (rc < 0 || until_ms <= from)
        return rc;
    if ((rc = store_get(c, &model_workloads, workload_id, a, &w, ei)) < 0 ||
        (rc = store_get(c, &model_projects, row_int(&w, F_WORKLOADS_PROJECT_ID), a, &prj, ei)) <
            0 ||
        (rc = store_get(c, &model_flavors, row_int(&w, F_WORKLOADS_FLAVOR_ID), a, &flv, ei)) < 0 ||
        (rc = read_head(c, a, &seq, prev, ei)) < 0)
        return rc;
    if (!unhex(prev, prev_bin))
        return errinfo_set(ei, ERR_STORE, NULL, "usage ledger head hash is malformed");
    rec = (struct meter_record){
        .id = seq + 1,
        .org_id = row_int(&prj, F_PROJECTS_ORG_ID),
        .project_id = model_row_id(&prj),
        .flavor_id = model_row_id(&flv),
        .cls = billing__class_of(priority_class),
        .replicas = replicas,
        .gpu_milli = (int32_t)row_int(&flv, F_FLAVORS_GPU_MILLI),
        .started_ms = from,
        .ended_ms = until_ms,
    };
    chain_hash(prev_bin, &rec, workload_id, run_started_ms, hash);

    u = model_row_new(d, a);
    row_set_int(&u, F_USAGE_SEQ, rec.id);
    row_set_int(&u, F_USAGE_WORKLOAD_ID, workload_id);
    row_set_int(&u, F_USAGE_ORG_ID, rec.org_id);
    row_set_int(&u, F_USAGE_PROJECT_ID, rec.project_id);
    row_set_int(&u, F_USAGE_FLAVOR_ID, rec.flavor_id);
    row_set_str(&u, a, F_USAGE_PRIORITY_CLASS, meter_class_name(rec.cls));
    row_set_int(&u, F_USAGE_REPLICAS, rec.replicas);
    row_set_int(&u, F_USAGE_GPU_MILLI, rec.gpu_milli);
    row_set_int(&u, F_USAGE_RUN_STARTED_MS, run_started_ms);
    row_set_int(&u, F_USAGE_STARTED_MS, rec.started_ms);
    row_set_int(&u, F_USAGE_ENDED_MS, rec.ended_ms);
    row_set_str(&u, a, F_USAGE_PREV_HASH, prev);
    row_set_str(&u, a, F_USAGE_HASH, hash);
    row_set_int(&u, F_USAGE_RECORDED_MS, now_ms);
    rc = store_insert(c, d, &u, &id, ei);
    if (rc < 0)
        return rc;
    head = arena_printf(a, "%" PRId64 " %s", rec.id, hash);
    return store_meta_set(c, HEAD_KEY, head, ei);
}

int billing__open_runs(struct store_conn *c, struct arena *a, struct billing__run **ret,
                       size_t *ret_n, struct error_info *ei)
{
    const struct resource_def *d = &model_allocations;
    struct store_filter f;
    struct row *rows;
    struct billing__run *runs;
    uint64_t(*seen)[4];
    size_t n, n_runs = 0;
    int rc;

    store_filter_init(&f);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    rc = store_list_all(c, d, &f, a, &rows, &n, ei);
    if (rc < 0)
        return rc;
    runs = arena_calloc(a, n + 1, sizeof(*runs));
    seen = arena_calloc(a, n + 1, sizeof(*seen));
    for (size_t i = 0; i < n; i++) {
        int64_t wid = row_int(&rows[i], F_ALLOCATIONS_WORKLOAD_ID);
        int64_t started = row_int(&rows[i], F_ALLOCATIONS_STARTED_MS);
        int64_t rep = row_int(&rows[i], F_ALLOCATIONS_REPLICA);
        size_t k = 0;
        while (k < n_runs && runs[k].workload_id != wid)
            k++;
        if (k == n_runs)
            runs[n_runs++] = (struct billing__run){wid, started, 0,
                                                   row_str(&rows[i], F_ALLOCATIONS_PRIORITY_CLASS)};
        if (started < runs[k].started_ms)
            runs[k].started_ms = started;
        if (rep >= 0 && rep < 256 && !(seen[k][rep / 64] & (UINT64_C(1) << (rep % 64)))) {
            seen[k][rep / 64] |= UINT64_C(1) << (rep % 64);
            runs[k].replicas++;
        }
    }
    *ret = runs;
    *ret_n = n_runs;
    return 0;
}

int billing__metered_until(struct store_conn *c, int64_t workload_id, int64_t run_started_ms,
                           struct arena *a, int64_t *ret, struct error_info *ei)
{
    return metered_until(c, workload_id, run_started_ms, a, ret, ei);
}

int billing_cut_open_runs(struct store_conn *c, int64_t boundary_ms, int64_t now_ms,
                          struct arena *a, struct error_info *ei)
{
    struct billing__run *runs;
    size_t n_runs;
    int added = 0;
    int rc = billing__open_runs(c, a, &runs, &n_runs, ei);

    for (size_t k = 0; rc >= 0 && k < n_runs; k++) {
        int64_t before = 0;
        if (runs[k].started_ms >= boundary_ms)
            continue;
        rc = metered_until(c, runs[k].workload_id, runs[k].started_ms, a, &before, ei);
        if (rc >= 0 && before < boundary_ms) {
            rc = billing_meter_run(c, runs[k].workload_id, runs[k].started_ms, runs[k].replicas,
                                   runs[k].priority_class, boundary_ms, now_ms, a, ei);
            added++;
        }
    }
    return rc < 0 ? rc : added;
}

int billing_ledger_verify(struct store_conn *c, struct billing_verify *ret, struct error_info *ei)
{
    char prev[BILLING_HASH_HEX + 1], hash[BILLING_HASH_HEX + 1], head_hash[BILLING_HASH_HEX + 1];
    int64_t head_seq, expect = 1;
    bool beyond_head = false;
    struct store_filter f;
    struct arena a;
    int rc;

    memset(ret, 0, sizeof(*ret));
    memset(prev, '0', BILLING_HASH_HEX);
    prev[BILLING_HASH_HEX] = '\0';
    arena_init(&a);
    rc = read_head(c, &a, &head_seq, head_hash, ei);
    store_filter_init(&f);
    f.limit = 10000;
    while (rc >= 0) {
        struct row *rows;
        size_t n;
        rc = store_list(c, &model_usage, &f, &a, &rows, &n, ei);
        for (size_t i = 0; rc >= 0 && i < n && !ret->bad_seq; i++, expect++) {
            struct meter_record rec;
            int64_t wid, run;
            uint8_t prev_bin[HASH_BYTES];
            record_of(&rows[i], &rec, &wid, &run);
            if (rec.id > head_seq) {
                beyond_head = true; /* appended after the head was read, or forged */
                break;
            }
            ret->records++;
            if (rec.id != expect) {
                ret->bad_seq = expect;
                snprintf(ret->problem, sizeof(ret->problem),
                         "record %" PRId64 " is missing (found %" PRId64 " next)", expect, rec.id);
                break;
            }
            if (strcmp(row_str(&rows[i], F_USAGE_PREV_HASH), prev) != 0) {
                ret->bad_seq = rec.id;
                snprintf(ret->problem, sizeof(ret->problem),
                         "prev_hash does not match the hash of record %" PRId64, rec.id - 1);
                break;
            }
            unhex(prev, prev_bin);
            chain_hash(prev_bin, &rec, wid, run, hash);
            if (strcmp(row_str(&rows[i], F_USAGE_HASH), hash) != 0) {
                ret->bad_seq = rec.id;
                snprintf(ret->problem, sizeof(ret->problem),
                         "contents do not match its hash: the record was altered");
                break;
            }
            memcpy(prev, hash, sizeof(prev));
        }
        if (rc < 0 || ret->bad_seq || beyond_head || n < (size_t)f.limit)
            break;
        f.after_id = model_row_id(&rows[n - 1]);
        arena_release(&a);
        arena_init(&a);
    }
    /* Records past the head are a concurrent append when the head has moved on since; with
     * the head unchanged they are records no head covers. */
    if (rc >= 0 && !ret->bad_seq && beyond_head) {
        int64_t now_seq;
        char now_hash[BILLING_HASH_HEX + 1];
        rc = read_head(c, &a, &now_seq, now_hash, ei);
        if (rc >= 0 && now_seq == head_seq) {
            ret->bad_seq = head_seq + 1;
            snprintf(ret->problem, sizeof(ret->problem),
                     "record %" PRId64 " lies past the ledger's head (%" PRId64
                     "): the head was altered or records were added behind it",
                     head_seq + 1, head_seq);
        }
    }
    if (rc >= 0 && !ret->bad_seq && (expect - 1 != head_seq || strcmp(prev, head_hash) != 0)) {
        ret->bad_seq = expect;
        snprintf(ret->problem, sizeof(ret->problem),
                 "the ledger ends at record %" PRId64 " but its head says %" PRId64
                 ": records were removed or the head was altered",
                 expect - 1, head_seq);
    }
    ret->ok = rc >= 0 && !ret->bad_seq;
    memcpy(ret->head, prev, sizeof(ret->head));
    arena_release(&a);
    return rc < 0 ? rc : 0;
}
