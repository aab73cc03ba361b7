/* SPDX-License-Identifier: Apache-2.0 */
/*
 * billing.h: metering and billing on top of the store (DESIGN.md section 4).
 * The pure arithmetic (splitting, rating, rounding, budgets, showback) is
 * src/meter; this module feeds it from the store and keeps what it decides:
 *
 * - the usage ledger: one record per interval of a run (a workload holding
 *   its allocations from one start to its end), written in the same
 *   transaction that closes the allocations, append-only and hash-chained
 *   (BLAKE2b-256); a run still open at a month boundary is cut there, so a
 *   closed month is complete in the ledger;
 * - rating a period from the ledger and the price versions into invoices,
 *   issuing them (numbered, immutable), payments and credit notes, and their
 *   exports (JSON, CSV, printable HTML);
 * - budgets: usage against monthly limits, alerts at 50/80/100 %, and the
 *   check that refuses new opportunistic work once an enforced limit is spent.
 *
 * Everything here runs inside the caller's transaction on the caller's
 * connection; times are ms since the epoch (UTC); money is micro-units.
 * docs/metering.md has the rules.
 */
#ifndef GPUAAS_BILLING_H
#define GPUAAS_BILLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "meter/meter.h"
#include "store/store.h"

#define BILLING_HASH_HEX 64

/* ---- the ledger (ledger.c) ---- */

/*
 * Meters a run of a workload up to until_ms: appends the record
 * [end of the run's last record, or run_started_ms, until_ms) when it is not
 * empty. replicas is how many replicas the run holds, priority_class what it
 * runs as (its allocations' "owned" or "opportunistic": automatic work is
 * rated as the class it got). Idempotent: metering again to the same
 * instant adds nothing. Call inside a transaction.
 */
int billing_meter_run(struct store_conn *c, int64_t workload_id, int64_t run_started_ms,
                      int replicas, const char *priority_class, int64_t until_ms, int64_t now_ms,
                      struct arena *a, struct error_info *ei);

/*
 * Cuts every run still open before boundary_ms at boundary_ms (a month
 * start), so the month before it is complete in the ledger. Returns how many
 * records were appended. Call inside a transaction.
 */
int billing_cut_open_runs(struct store_conn *c, int64_t boundary_ms, int64_t now_ms,
                          struct arena *a, struct error_info *ei);

struct billing_verify {
    bool ok;
    int64_t records;   /* records checked */
    int64_t bad_seq;   /* first record that fails, 0 when ok */
    char problem[200]; /* what is wrong with it */
    char head[BILLING_HASH_HEX + 1];
};

/* Recomputes the whole chain. Returns 0 (see ret->ok) or a store error. */
int billing_ledger_verify(struct store_conn *c, struct billing_verify *ret, struct error_info *ei);

/* ---- periods ---- */

/* "2026-11" -> [start, end) of that UTC month. ERR_INVALID with ei when malformed. */
int billing_parse_period(const char *s, int64_t *ret_start_ms, int64_t *ret_end_ms,
                         struct error_info *ei);
/* The month holding t as "YYYY-MM" (out has room for 8 bytes). */
void billing_format_period(int64_t t_ms, char out[16]);

/* ---- rating (rate.c) ---- */

/*
 * Rates the ledger records of [start_ms, end_ms) (a month), of one
 * organization or of all (org_id 0), into invoices, one per organization
 * and currency. With open_until_ms > 0, runs still open are counted up to
 * it as if metered (a provisional view for budgets and `gpuaas usage`).
 * ret is initialised by the caller; ERR_NOT_FOUND with ei when a record's
 * flavor has no price version in force at its start.
 */
int billing_rate_period(struct store_conn *c, int64_t org_id, int64_t start_ms, int64_t end_ms,
                        int64_t open_until_ms, struct arena *a, struct meter_invoices *ret,
                        struct error_info *ei);

/* Every price version in the store as the meter takes them (in a); what rating uses. */
int billing_load_prices(struct store_conn *c, struct arena *a, struct meter_price **ret,
                        size_t *ret_n, struct error_info *ei);

/* ---- invoices (invoice.c) ---- */

/*
 * Issues the invoices of an organization for a month that has ended (one per
 * currency): numbers them and stores them immutable. ERR_CONFLICT when the
 * month has not ended, is already issued, or had no usage. *ret_ids (in a)
 * gets the new ids. Call inside a transaction.
 */
int billing_issue(struct store_conn *c, int64_t org_id, const char *period, int64_t now_ms,
                  struct arena *a, int64_t **ret_ids, size_t *ret_n, struct error_info *ei);

/* Issued -> paid. ERR_CONFLICT for a credit note or one already paid. */
int billing_pay(struct store_conn *c, int64_t invoice_id, int64_t now_ms, struct arena *a,
                struct error_info *ei);

/*
 * A credit note against an issued or paid invoice: amount_micros > 0, a
 * whole number of minor units, at most what is left uncredited; 0 credits
 * all that is left. Returns the note's id in *ret_id.
 */
int billing_credit(struct store_conn *c, int64_t invoice_id, int64_t amount_micros,
                   const char *reason, int64_t now_ms, struct arena *a, int64_t *ret_id,
                   struct error_info *ei);

/*
 * Re-rates a stored invoice's period from the ledger and compares the
 * canonical text byte for byte: *ret_same. Credit notes are always the same.
 */
int billing_rerate_matches(struct store_conn *c, int64_t invoice_id, struct arena *a,
                           bool *ret_same, struct error_info *ei);

/*
 * A draft (never stored) of an organization's month, as the JSON the API
 * returns for a stored invoice, with state "draft" and no number; runs still
 * open count up to now_ms. *ret is an array, one per currency.
 */
struct json_t;
int billing_draft_json(struct store_conn *c, int64_t org_id, const char *period, int64_t now_ms,
                       struct arena *a, struct json_t **ret, struct error_info *ei);

/*
 * The lines of a rated invoice as JSON objects: project, flavor, class,
 * price version, seconds, hours (replica-hours), GPU-hours, unit price,
 * multiplier and amount, money both in micro-units and formatted.
 */
int billing_lines_json(struct store_conn *c, const struct meter_invoice *inv, struct arena *a,
                       struct json_t **ret, struct error_info *ei);

/* ---- exports (export.c) ---- */

enum billing_format { BILLING_JSON, BILLING_CSV, BILLING_HTML };

/* "json", "csv", "html" -> format; ERR_INVALID otherwise. */
int billing_format_parse(const char *s, enum billing_format *ret);
/* The content type of a format ("text/csv; charset=utf-8", ...). */
const char *billing_format_type(enum billing_format f);

/*
 * Writes a stored invoice or credit note (its JSON as the API returns it)
 * in a format, with the issuer's name. Deterministic: the same invoice gives
 * the same bytes. Returns 0 or ERR_TOO_LARGE / ERR_INVALID (not an invoice).
 */
int billing_export(const struct json_t *invoice, enum billing_format f, const char *issuer,
                   struct buf *out);
/*
 * The text of the one <style> element of the HTML export (static), so that
 * the dashboard's Content-Security-Policy can allow exactly it by its hash.
 */
const char *billing_export_html_style(void);

/* ---- showback (showback.c) ---- */

enum billing_cost_by { BILLING_BY_POOL, BILLING_BY_PROJECT, BILLING_BY_ORG, BILLING_BY_MANAGER };

/*
 * One group's share of the pools' cost over a period, in one currency.
 * used: the cost of the GPU time it held (its allocations on pools);
 * idle: the cost of the unallocated time of the pools it owns; capacity:
 * those pools' GPU time. Milli-GPU x ms; money in micro-units.
 */
struct billing_cost {
    int64_t id; /* pool, project, organization or manager (user) id; 0: none */
    char currency[4];
    int64_t capacity_milli_ms;
    int64_t allocated_milli_ms;
    int64_t used_micros;
    int64_t idle_micros;
    int64_t efficiency_ppm; /* busy / allocated; -1 until GPU activity is measured */
};

/*
 * Showback over [start_ms, end_ms), allocations still open counted up to
 * now_ms, grouped by `by`. *ret (malloc'd, caller frees) holds *ret_n groups
 * in the order first met.
 */
int billing_cost(struct store_conn *c, enum billing_cost_by by, int64_t start_ms, int64_t end_ms,
                 int64_t now_ms, struct arena *a, struct billing_cost **ret, size_t *ret_n,
                 struct error_info *ei);

/* ---- budgets (budget.c) ---- */

/*
 * Checks every budget against the month holding now_ms and records an alert
 * for each threshold newly reached (once per budget, month, kind, percent).
 * Returns how many alerts were added. Call inside a transaction.
 */
int billing_check_budgets(struct store_conn *c, int64_t now_ms, struct arena *a,
                          struct error_info *ei);

/*
 * Whether new opportunistic work of a project may be admitted: 0 when yes;
 * ERR_FORBIDDEN with ei naming the spent budget when an enforced budget of
 * the project or its organization is spent this month.
 */
int billing_admit_opportunistic(struct store_conn *c, int64_t project_id, int64_t now_ms,
                                struct arena *a, struct error_info *ei);

#endif
