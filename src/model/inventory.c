/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inventory.c: what a hand-made GPU inventory knows that the fleet does not
 * (site, intended use, environment, the owning team and manager as the
 * spreadsheet wrote them), one row per GPU UUID. Written only by the
 * inventory import (POST /v1/inventory/import, all or nothing); read through
 * the inventory view (GET /v1/inventory), which joins it with the fleet.
 * Migration 4 creates the table.
 */
#include "base/common.h"
#include "model/model.h"

#define TEXT(name, help)                                                                           \
    {                                                                                              \
        name, NULL, FT_STRING, FF_READONLY, 0, 256, NULL, NULL, 0, "", help                        \
    }

static const struct field_def item_fields[] = {
    [F_INVENTORY_ITEMS_ID] = {"id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL,
                              "server-assigned id"},
    [F_INVENTORY_ITEMS_UUID] = {"uuid", NULL, FT_IDENT, FF_READONLY | FF_FILTER, 0, 128, NULL, NULL,
                                0, NULL, "GPU UUID (the key)"},
    [F_INVENTORY_ITEMS_MODEL] =
        TEXT("model", "model as written (normalised to a class in the view)"),
    [F_INVENTORY_ITEMS_NODE] = TEXT("node", "host name"),
    [F_INVENTORY_ITEMS_CLUSTER] = TEXT("cluster", "cluster name"),
    [F_INVENTORY_ITEMS_SITE] = TEXT("site", "cloud, region or site"),
    [F_INVENTORY_ITEMS_OWNER] = TEXT("owner", "owning team"),
    [F_INVENTORY_ITEMS_MANAGER] = TEXT("manager", "manager"),
    [F_INVENTORY_ITEMS_INTENDED_USE] = TEXT("intended_use", "what the GPU is for"),
    [F_INVENTORY_ITEMS_ENVIRONMENT] = TEXT("environment", "prod, dev, ..."),
    [F_INVENTORY_ITEMS_IMPORTED_AT] = {"imported_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL,
                                       0, NULL, "last import (UTC)"},
};
_Static_assert(ARRAY_SIZE(item_fields) == F_INVENTORY_ITEMS_COUNT_,
               "item_fields and fields.h differ");

const struct resource_def model_inventory_items = {
    .name = "inventory-items",
    .table = "inventory_items",
    .singular = "inventory item",
    .fields = item_fields,
    .n_fields = ARRAY_SIZE(item_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_ADMIN, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "uuid",
    .help = "the imported GPU spreadsheet, one row per UUID (POST /v1/inventory/import)",
};
