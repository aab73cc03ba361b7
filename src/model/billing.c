/* SPDX-License-Identifier: Apache-2.0 */
/*
 * billing.c: the resources of metering and billing (DESIGN.md section 4):
 * price versions, the usage ledger, invoices and credit notes, budgets and
 * the alerts they raise. Migration 3 in src/store/migrations.c creates the
 * matching tables. Only prices and budgets are written through the generic
 * resource routes; the ledger is written by the engine, invoices by the
 * billing routes (src/api/billing.c), alerts by the budget check.
 */
#include "base/common.h"
#include "model/model.h"

#define ID_FIELD                                                                                   \
    {                                                                                              \
        "id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL, "server-assigned id"   \
    }
#define CREATED_FIELD                                                                              \
    {                                                                                              \
        "created_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "creation time (UTC)" \
    }
#define UPDATED_FIELD                                                                              \
    {                                                                                              \
        "updated_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "last change (UTC)"   \
    }
#define RO_INT(name, lo, help)                                                                     \
    {                                                                                              \
        name, NULL, FT_INT, FF_READONLY, lo, INT64_MAX, NULL, NULL, 0, NULL, help                  \
    }
#define RO_REF(name, ref, help)                                                                    \
    {                                                                                              \
        name, NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL, ref, 0, NULL, help                \
    }
#define PRICE_MAX INT64_C(1000000000000) /* METER_MAX_PRICE_MICRO */
#define MONEY_MAX (INT64_C(1) << 53)

static const char *const pclass_values[] = {"owned", "opportunistic", NULL};

static const struct field_def price_fields[] = {
    [F_PRICES_ID] = ID_FIELD,
    [F_PRICES_FLAVOR_ID] = {"flavor_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0,
                            NULL, "flavors", 0, NULL, "flavor priced"},
    [F_PRICES_CURRENCY] = {"currency", NULL, FT_STRING, FF_IMMUTABLE, 3, 3, NULL, NULL, 0, "USD",
                           "ISO 4217 code, e.g. EUR"},
    [F_PRICES_MINOR_DIGITS] =
        {"minor_digits", NULL, FT_INT, FF_IMMUTABLE, 0, 6, NULL, NULL, 2, NULL,
         "decimals of the currency's minor unit (2 for EUR, 0 for JPY): amounts round to it"},
    [F_PRICES_PRICE_PER_HOUR_MICROS] =
        {"price_per_hour_micros", NULL, FT_INT, FF_REQUIRED | FF_IMMUTABLE, 0, PRICE_MAX, NULL,
         NULL, 0, NULL, "price of one replica-hour of the flavor in micro-units of the currency"},
    [F_PRICES_OWNED_MULT_PPM] =
        {"owned_mult_ppm", NULL, FT_INT, FF_IMMUTABLE, 0, 10000000, NULL, NULL, 1000000, NULL,
         "multiplier for owned (P1) work in parts per million (1000000 = 1.0)"},
    [F_PRICES_OPPORTUNISTIC_MULT_PPM] =
        {"opportunistic_mult_ppm", NULL, FT_INT, FF_IMMUTABLE, 0, 10000000, NULL, NULL, 600000,
         NULL, "multiplier for opportunistic (P2) work in parts per million (600000 = 0.6)"},
    [F_PRICES_EFFECTIVE_FROM] =
        {"effective_from", NULL, FT_TIME, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, NULL,
         0, NULL,
         "from when this version applies, until the flavor's next version; now or later, never "
         "before the end of an issued invoice's period"},
    [F_PRICES_CREATED_AT] = CREATED_FIELD,
};
_Static_assert(ARRAY_SIZE(price_fields) == F_PRICES_COUNT_, "price_fields and fields.h differ");

static int check_price(const struct row *r, struct error_info *ei)
{
    return model_check_currency(r, F_PRICES_CURRENCY, ei);
}

const struct resource_def model_prices = {
    .name = "prices",
    .table = "prices",
    .singular = "price",
    .fields = price_fields,
    .n_fields = ARRAY_SIZE(price_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "flavor_id and effective_from",
    .help = "effective-dated price list: a flavor's price per replica-hour and class multipliers; "
            "versions are never edited, a new one supersedes",
    .check = check_price,
};

static const struct field_def usage_fields[] = {
    [F_USAGE_ID] = ID_FIELD,
    [F_USAGE_SEQ] = RO_INT("seq", 1, "position in the ledger, from 1 without gaps"),
    [F_USAGE_WORKLOAD_ID] = RO_REF("workload_id", "workloads", "the workload"),
    [F_USAGE_ORG_ID] = RO_REF("org_id", "organizations", "its project's organization"),
    [F_USAGE_PROJECT_ID] = RO_REF("project_id", "projects", "its project"),
    [F_USAGE_FLAVOR_ID] = RO_REF("flavor_id", "flavors", "its flavor"),
    [F_USAGE_PRIORITY_CLASS] = {"priority_class", NULL, FT_ENUM, FF_READONLY | FF_FILTER, 0, 0,
                                pclass_values, NULL, 0, NULL, "owned (P1) or opportunistic (P2)"},
    [F_USAGE_REPLICAS] = {"replicas", NULL, FT_INT, FF_READONLY, 1, 256, NULL, NULL, 0, NULL,
                          "replicas held"},
    [F_USAGE_GPU_MILLI] = {"gpu_milli", NULL, FT_INT, FF_READONLY, 0, 64000, NULL, NULL, 0, NULL,
                           "GPU per replica in milli-GPU (the flavor's)"},
    [F_USAGE_RUN_STARTED_MS] = RO_INT(
        "run_started_ms", 0, "start of the run this interval belongs to, ms since the epoch"),
    [F_USAGE_STARTED_MS] = RO_INT("started_ms", 0, "start of the interval, ms since the epoch"),
    [F_USAGE_ENDED_MS] =
        RO_INT("ended_ms", 0, "end of the interval (exclusive), ms since the epoch"),
    [F_USAGE_PREV_HASH] = {"prev_hash", NULL, FT_STRING, FF_READONLY, 0, 64, NULL, NULL, 0, NULL,
                           "hash of the record before (hex BLAKE2b-256; zeros for the first)"},
    [F_USAGE_HASH] = {"hash", NULL, FT_STRING, FF_READONLY, 0, 64, NULL, NULL, 0, NULL,
                      "BLAKE2b-256 of prev_hash and this record's canonical bytes"},
    [F_USAGE_RECORDED_MS] = RO_INT("recorded_ms", 0, "when it was written, ms since the epoch"),
};
_Static_assert(ARRAY_SIZE(usage_fields) == F_USAGE_COUNT_, "usage_fields and fields.h differ");

const struct resource_def model_usage = {
    .name = "usage-records",
    .table = "usage_records",
    .singular = "usage record",
    .fields = usage_fields,
    .n_fields = ARRAY_SIZE(usage_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_USAGE_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "seq",
    .help = "the usage ledger: one record per allocation interval, append-only, hash-chained",
};

static const char *const invoice_kind_values[] = {"invoice", "credit-note", NULL};
static const char *const invoice_state_values[] = {"issued", "paid", NULL};

static const struct field_def invoice_fields[] = {
    [F_INVOICES_ID] = ID_FIELD,
    [F_INVOICES_KIND] = {"kind", NULL, FT_ENUM, FF_READONLY | FF_FILTER, 0, 0, invoice_kind_values,
                         NULL, 0, NULL,
                         "invoice, or credit-note (a correction of an issued invoice)"},
    [F_INVOICES_NUMBER] = {"number", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 32, NULL, NULL, 0,
                           NULL, "INV-<year>-<n> or CN-<year>-<n>, consecutive"},
    [F_INVOICES_ORG_ID] = RO_REF("org_id", "organizations", "customer organization"),
    [F_INVOICES_CUSTOMER] = {"customer", NULL, FT_STRING, FF_READONLY, 0, 200, NULL, NULL, 0, NULL,
                             "organization name at issue"},
    [F_INVOICES_COST_CENTER] = {"cost_center", NULL, FT_STRING, FF_READONLY, 0, 100, NULL, NULL, 0,
                                NULL, "organization cost center at issue"},
    [F_INVOICES_PERIOD] = {"period", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 16, NULL, NULL, 0,
                           NULL, "billing period, YYYY-MM"},
    [F_INVOICES_PERIOD_START_MS] =
        RO_INT("period_start_ms", 0, "period start, ms since the epoch (UTC)"),
    [F_INVOICES_PERIOD_END_MS] = RO_INT("period_end_ms", 0, "period end (exclusive)"),
    [F_INVOICES_CURRENCY] = {"currency", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 3, NULL, NULL,
                             0, NULL, "ISO 4217 code"},
    [F_INVOICES_MINOR_DIGITS] = {"minor_digits", NULL, FT_INT, FF_READONLY, 0, 6, NULL, NULL, 0,
                                 NULL, "currency decimals"},
    [F_INVOICES_STATE] = {"state", NULL, FT_ENUM, FF_READONLY | FF_FILTER, 0, 0,
                          invoice_state_values, NULL, 0, NULL,
                          "issued (immutable) or paid; drafts are computed, never stored"},
    [F_INVOICES_TOTAL_MICROS] = {"total_micros", NULL, FT_INT, FF_READONLY, -MONEY_MAX, MONEY_MAX,
                                 NULL, NULL, 0, NULL,
                                 "total in micro-units (negative for a credit note)"},
    [F_INVOICES_TOTAL_SECONDS] = RO_INT("total_seconds", 0, "usage seconds, summed over lines"),
    [F_INVOICES_LINES] = {"lines", NULL, FT_JSON, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
                          "line items: project x flavor x class x price version"},
    [F_INVOICES_CANONICAL] =
        {"canonical", NULL, FT_STRING, FF_READONLY, 0, 64 << 20, NULL, NULL, 0, NULL,
         "the invoice's canonical text; re-rating the period must reproduce it byte for byte"},
    [F_INVOICES_CREDITS_INVOICE_ID] = {"credits_invoice_id", NULL, FT_REF,
                                       FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                                       "invoices", 0, NULL, "credit notes: the invoice corrected"},
    [F_INVOICES_REASON] = {"reason", NULL, FT_STRING, FF_READONLY, 0, 1024, NULL, NULL, 0, NULL,
                           "credit notes: why"},
    [F_INVOICES_ISSUED_AT] = {"issued_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
                              "issue date (UTC)"},
    [F_INVOICES_PAID_AT] = {"paid_at", NULL, FT_TIME, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL,
                            0, NULL, "payment date; null until paid"},
};
_Static_assert(ARRAY_SIZE(invoice_fields) == F_INVOICES_COUNT_,
               "invoice_fields and fields.h differ");

const struct resource_def model_invoices = {
    .name = "invoices",
    .table = "invoices",
    .singular = "invoice",
    .fields = invoice_fields,
    .n_fields = ARRAY_SIZE(invoice_fields),
    .scope = SCOPE_ORG,
    .scope_field = F_INVOICES_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "number, or org_id, period and currency",
    .help = "issued invoices and credit notes (POST /v1/invoices/issue, .../pay, .../credit)",
};

static const struct field_def budget_fields[] = {
    [F_BUDGETS_ID] = ID_FIELD,
    [F_BUDGETS_ORG_ID] = {"org_id", NULL, FT_REF, FF_IMMUTABLE | FF_NULLABLE | FF_FILTER, 0, 0,
                          NULL, "organizations", 0, NULL,
                          "organization budgeted (give this or project_id)"},
    [F_BUDGETS_PROJECT_ID] = {"project_id", NULL, FT_REF, FF_IMMUTABLE | FF_NULLABLE | FF_FILTER, 0,
                              0, NULL, "projects", 0, NULL,
                              "project budgeted (give this or org_id)"},
    [F_BUDGETS_GPU_HOURS] = {"gpu_hours", NULL, FT_INT, FF_NULLABLE, 1, INT64_C(1) << 40, NULL,
                             NULL, 0, NULL, "GPU-hours per calendar month; null for no limit"},
    [F_BUDGETS_MONEY_MICROS] =
        {"money_micros", NULL, FT_INT, FF_NULLABLE, 1, MONEY_MAX, NULL, NULL, 0, NULL,
         "spend per calendar month in micro-units of currency; null for no limit"},
    [F_BUDGETS_CURRENCY] = {"currency", NULL, FT_STRING, 0, 3, 3, NULL, NULL, 0, "USD",
                            "currency of money_micros"},
    [F_BUDGETS_ENFORCE] = {"enforce", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL,
                           "refuse new opportunistic (P2) work once a limit is spent"},
    [F_BUDGETS_CREATED_AT] = CREATED_FIELD,
    [F_BUDGETS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(budget_fields) == F_BUDGETS_COUNT_, "budget_fields and fields.h differ");

/* One scope, at least one limit, a currency. */
static int check_budget(const struct row *r, struct error_info *ei)
{
    bool org = model_has(r, F_BUDGETS_ORG_ID), project = model_has(r, F_BUDGETS_PROJECT_ID);
    if (org == project)
        return errinfo_set(ei, ERR_INVALID, "org_id",
                           "a budget is for exactly one scope: give org_id or project_id");
    if (row_is_null(r, F_BUDGETS_GPU_HOURS) && row_is_null(r, F_BUDGETS_MONEY_MICROS))
        return errinfo_set(ei, ERR_INVALID, "gpu_hours",
                           "a budget needs a limit: give gpu_hours, money_micros or both");
    return model_check_currency(r, F_BUDGETS_CURRENCY, ei);
}

const struct resource_def model_budgets = {
    .name = "budgets",
    .table = "budgets",
    .singular = "budget",
    .fields = budget_fields,
    .n_fields = ARRAY_SIZE(budget_fields),
    .scope = SCOPE_PROJECT_OR_ORG,
    .scope_field = F_BUDGETS_PROJECT_ID,
    .scope_org_field = F_BUDGETS_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "id",
    .help = "monthly GPU-hour and money budgets per project or organization; alerts at 50, 80 and "
            "100 %",
    .check = check_budget,
};

static const char *const alert_kind_values[] = {"gpu-hours", "money", NULL};

static const struct field_def alert_fields[] = {
    [F_BUDGET_ALERTS_ID] = ID_FIELD,
    [F_BUDGET_ALERTS_BUDGET_ID] = RO_REF("budget_id", "budgets", "the budget"),
    [F_BUDGET_ALERTS_ORG_ID] = {"org_id", NULL, FT_REF, FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0,
                                NULL, "organizations", 0, NULL, "the budget's organization"},
    [F_BUDGET_ALERTS_PROJECT_ID] = {"project_id", NULL, FT_REF,
                                    FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0, NULL, "projects",
                                    0, NULL, "the budget's project"},
    [F_BUDGET_ALERTS_PERIOD] = {"period", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 16, NULL,
                                NULL, 0, NULL, "the month, YYYY-MM"},
    [F_BUDGET_ALERTS_KIND] = {"kind", NULL, FT_ENUM, FF_READONLY, 0, 0, alert_kind_values, NULL, 0,
                              NULL, "which limit: gpu-hours or money"},
    [F_BUDGET_ALERTS_PERCENT] = {"percent", NULL, FT_INT, FF_READONLY, 0, 100, NULL, NULL, 0, NULL,
                                 "50, 80 or 100"},
    [F_BUDGET_ALERTS_USED] = RO_INT("used", 0, "usage when raised: milli-GPU-hours or micro-units"),
    [F_BUDGET_ALERTS_LIMIT] = RO_INT("limit", 0, "the limit, in the same unit"),
    [F_BUDGET_ALERTS_AT_MS] = RO_INT("at_ms", 0, "when, ms since the epoch"),
};
_Static_assert(ARRAY_SIZE(alert_fields) == F_BUDGET_ALERTS_COUNT_,
               "alert_fields and fields.h differ");

const struct resource_def model_budget_alerts = {
    .name = "budget-alerts",
    .table = "budget_alerts",
    .singular = "budget alert",
    .fields = alert_fields,
    .n_fields = ARRAY_SIZE(alert_fields),
    .scope = SCOPE_PROJECT_OR_ORG,
    .scope_field = F_BUDGET_ALERTS_PROJECT_ID,
    .scope_org_field = F_BUDGET_ALERTS_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "budget_id, period, kind and percent",
    .help = "a budget crossed 50, 80 or 100 % of a limit in a month",
};
