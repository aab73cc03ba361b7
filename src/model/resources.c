/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resources.c: the definition of every resource of the domain (DESIGN.md
 * section 2). Migration 1 in src/store/migrations.c creates the matching
 * tables; the store conformance suite fails if the two disagree.
 */
#include "base/common.h"
#include "model/model.h"

#define NAME_MAX_LEN 63
#define TEXT_MAX_LEN 1024
#define MONEY_MAX (INT64_C(1) << 53) /* micro-units; far above any real price */

#define F_ID {"id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL, "server-assigned id"}
#define F_CREATED                                                                              \
    {"created_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "creation time (UTC)"}
#define F_UPDATED                                                                              \
    {"updated_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "last change (UTC)"}

static const char *const role_values[] = {"admin",  "org-admin", "project-admin",
                                          "member", "viewer",    NULL};
static const char *const backend_values[] = {"local", "slurm", "sim", "kubernetes", NULL};
static const char *const node_state_values[] = {"ready", "drain", "down", NULL};
static const char *const gpu_health_values[] = {"ok", "degraded", "failed", "down", "mig", NULL};

static const struct field_def org_fields[] = {
    F_ID,
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "unique short name"},
    {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "", "human-readable name"},
    {"parent_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "organizations", 0, NULL,
     "parent organization; null for a top-level one"},
    {"manager_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "users", 0, NULL,
     "the user who manages this organization"},
    {"cost_center", NULL, FT_STRING, 0, 0, 100, NULL, NULL, 0, "", "finance cost center"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_organizations = {
    .name = "organizations",
    .table = "organizations",
    .singular = "organization",
    .fields = org_fields,
    .n_fields = ARRAY_SIZE(org_fields),
    .scope = SCOPE_ORG,
    .scope_field = "id",
    .create_scope_field = "parent_id",
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "name",
    .help = "tenant domains, in a tree; costs roll up by organization and manager",
};

static const struct field_def project_fields[] = {
    F_ID,
    {"org_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
     "organizations", 0, NULL, "owning organization"},
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "short name, unique within the organization"},
    {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "", "human-readable name"},
    {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0, "", "free text"},
    {"weight", NULL, FT_INT, 0, 1, 1000, NULL, NULL, 1, NULL,
     "fair-share weight for borrowed capacity"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_projects = {
    .name = "projects",
    .table = "projects",
    .singular = "project",
    .fields = project_fields,
    .n_fields = ARRAY_SIZE(project_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = "id",
    .create_scope_field = "org_id",
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_PROJECT_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "org_id and name",
    .help = "teams; each belongs to one organization",
};

static const struct field_def user_fields[] = {
    F_ID,
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "unique login name"},
    {"email", NULL, FT_STRING, 0, 0, 254, NULL, NULL, 0, "", "contact address"},
    {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "", "full name"},
    {"disabled", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL,
     "a disabled user's tokens stop working"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_users = {
    .name = "users",
    .table = "users",
    .singular = "user",
    .fields = user_fields,
    .n_fields = ARRAY_SIZE(user_fields),
    .scope = SCOPE_USER,
    .scope_field = "id",
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "people and service accounts; roles come from role bindings",
};

static const struct field_def binding_fields[] = {
    F_ID,
    {"user_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "users", 0,
     NULL, "the user who gets the role"},
    {"role", NULL, FT_ENUM, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, role_values, NULL, 0,
     NULL, "admin (global), org-admin, project-admin, member or viewer"},
    {"org_id", NULL, FT_REF, FF_NULLABLE | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
     "organizations", 0, NULL, "organization the role applies to (and its projects)"},
    {"project_id", NULL, FT_REF, FF_NULLABLE | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "projects",
     0, NULL, "project the role applies to"},
    F_CREATED,
};

const struct resource_def model_role_bindings = {
    .name = "role-bindings",
    .table = "role_bindings",
    .singular = "role binding",
    .fields = binding_fields,
    .n_fields = ARRAY_SIZE(binding_fields),
    .scope = SCOPE_BINDING,
    .scope_field = NULL,
    .need = {ROLE_PROJECT_ADMIN, ROLE_PROJECT_ADMIN, ROLE_NOBODY, ROLE_PROJECT_ADMIN},
    .unique_desc = "user_id, role and scope",
    .help = "who holds which role on which organization or project",
};

static const struct field_def token_fields[] = {
    F_ID,
    {"user_id", NULL, FT_REF, FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "users", 0, NULL,
     "owner of the token; defaults to the caller"},
    {"name", NULL, FT_STRING, 0, 0, 100, NULL, NULL, 0, "", "what the token is for"},
    {"prefix", NULL, FT_STRING, FF_READONLY, 0, 32, NULL, NULL, 0, NULL,
     "first characters of the token, to recognise it"},
    {"hash", NULL, FT_STRING, FF_READONLY | FF_SECRET | FF_FILTER, 0, 128, NULL, NULL, 0, NULL,
     "hash of the token"},
    {"expires_at", NULL, FT_TIME, FF_NULLABLE | FF_IMMUTABLE, 0, 0, NULL, NULL, 0, NULL,
     "expiry; null for none"},
    {"revoked_at", NULL, FT_TIME, FF_NULLABLE | FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
     "when it was revoked; null while valid"},
    F_CREATED,
};

const struct resource_def model_tokens = {
    .name = "tokens",
    .table = "tokens",
    .singular = "token",
    .fields = token_fields,
    .n_fields = ARRAY_SIZE(token_fields),
    .scope = SCOPE_USER,
    .scope_field = "user_id",
    .need = {ROLE_VIEWER, ROLE_VIEWER, ROLE_NOBODY, ROLE_VIEWER},
    .unique_desc = "hash",
    .help = "API bearer tokens: shown once at creation, stored only as a hash",
};

static const struct field_def cluster_fields[] = {
    F_ID,
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "unique short name"},
    {"backend", NULL, FT_ENUM, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, backend_values, NULL,
     0, NULL, "local, slurm, sim or kubernetes"},
    {"endpoint", NULL, FT_STRING, 0, 0, 512, NULL, NULL, 0, "",
     "backend address (Slurm controller, ...); empty for local and sim"},
    {"labels", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}", "site, region, cloud, ..."},
    {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0, "", "free text"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_clusters = {
    .name = "clusters",
    .table = "clusters",
    .singular = "cluster",
    .fields = cluster_fields,
    .n_fields = ARRAY_SIZE(cluster_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "where work runs",
};

static const struct field_def node_fields[] = {
    F_ID,
    {"cluster_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "clusters", 0,
     NULL, "cluster of the node"},
    {"name", NULL, FT_IDENT, FF_REQUIRED | FF_FILTER, 0, 128, NULL, NULL, 0, NULL,
     "host name, unique within the cluster"},
    {"cpu_milli", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
     "CPU capacity in milli-CPUs"},
    {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
     "memory in MiB"},
    {"labels", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}", "topology and placement labels"},
    {"state", NULL, FT_ENUM, FF_FILTER, 0, 0, node_state_values, NULL, 0, "ready",
     "ready, drain or down"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_nodes = {
    .name = "nodes",
    .table = "nodes",
    .singular = "node",
    .fields = node_fields,
    .n_fields = ARRAY_SIZE(node_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "cluster_id and name",
    .help = "hosts in a cluster",
};

static const struct field_def class_fields[] = {
    F_ID,
    {"name", NULL, FT_IDENT, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "normalised class, e.g. h100-80gb or h100-80gb/1g.10gb"},
    {"model", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "", "vendor model string"},
    {"vendor", NULL, FT_STRING, 0, 0, 50, NULL, NULL, 0, "", "nvidia, amd, ..."},
    {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 30, NULL, NULL, 0, NULL,
     "memory per device in MiB"},
    {"parent_id", NULL, FT_REF, FF_NULLABLE | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "gpu-classes",
     0, NULL, "for a MIG profile, the class of the whole GPU"},
    {"milli", NULL, FT_INT, 0, 1, 1000, NULL, NULL, 1000, NULL,
     "share of the parent GPU in milli-GPU (1000 for a whole GPU)"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_gpu_classes = {
    .name = "gpu-classes",
    .table = "gpu_classes",
    .singular = "gpu class",
    .fields = class_fields,
    .n_fields = ARRAY_SIZE(class_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "normalised GPU models and MIG profiles that quotas and flavors speak of",
};

static const struct field_def gpu_fields[] = {
    F_ID,
    {"node_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "nodes", 0, NULL,
     "node the GPU sits in"},
    {"index", "gpu_index", FT_INT, FF_REQUIRED | FF_IMMUTABLE, 0, 1023, NULL, NULL, 0, NULL,
     "device index on the node"},
    {"uuid", NULL, FT_IDENT, FF_NULLABLE | FF_FILTER, 0, 128, NULL, NULL, 0, NULL,
     "device UUID (GPU-...), when known"},
    {"gpu_class_id", NULL, FT_REF, FF_REQUIRED | FF_FILTER, 0, 0, NULL, "gpu-classes", 0, NULL,
     "normalised class"},
    {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 30, NULL, NULL, 0, NULL, "memory in MiB"},
    {"mig_mode", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL, "MIG enabled"},
    {"health", NULL, FT_ENUM, FF_FILTER, 0, 0, gpu_health_values, NULL, 0, "ok",
     "ok, degraded, failed, down (the local discovery no longer sees it) or mig (split into MIG "
     "instances, which are scheduled instead)"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_gpus = {
    .name = "gpus",
    .table = "gpus",
    .singular = "gpu",
    .fields = gpu_fields,
    .n_fields = ARRAY_SIZE(gpu_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "node_id and index, or uuid",
    .help = "GPU devices",
};

static const struct field_def pool_fields[] = {
    F_ID,
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "unique short name"},
    {"owner_org_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "organizations", 0, NULL,
     "owning organization (exactly one owner)"},
    {"owner_project_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "projects", 0, NULL,
     "owning project (exactly one owner)"},
    {"cost_per_gpu_hour_micros", NULL, FT_INT, 0, 0, MONEY_MAX, NULL, NULL, 0, NULL,
     "owner's cost per GPU-hour in micro-units of the currency"},
    {"currency", NULL, FT_STRING, 0, 3, 3, NULL, NULL, 0, "USD", "ISO 4217 code"},
    {"cluster_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "clusters", 0, NULL,
     "select the GPUs of this cluster"},
    {"node_selector", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
     "select GPUs on nodes carrying all these labels"},
    {"gpu_ids", NULL, FT_REFLIST, 0, 0, 100000, NULL, "gpus", 0, "[]",
     "select exactly these GPUs"},
    {"access_project_ids", NULL, FT_REFLIST, 0, 0, 10000, NULL, "projects", 0, "[]",
     "projects that may borrow this pool"},
    {"access_org_ids", NULL, FT_REFLIST, 0, 0, 10000, NULL, "organizations", 0, "[]",
     "organizations whose projects may borrow this pool"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_pools = {
    .name = "pools",
    .table = "pools",
    .singular = "pool",
    .fields = pool_fields,
    .n_fields = ARRAY_SIZE(pool_fields),
    .scope = SCOPE_OWNER,
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "sets of GPUs with one financial owner, a cost and an access list",
};

static const struct field_def flavor_fields[] = {
    F_ID,
    {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL, 0, NULL,
     "catalog name, e.g. h100.1x"},
    {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0, "", "free text"},
    {"gpu_class_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL, "gpu-classes", 0, NULL,
     "GPU class; null for a CPU-only flavor"},
    {"gpu_milli", NULL, FT_INT, 0, 0, 64000, NULL, NULL, 0, NULL,
     "GPU per replica in milli-GPU: below 1000 is a share of one GPU, else a multiple of 1000"},
    {"vcpus", NULL, FT_INT, 0, 0, 4096, NULL, NULL, 0, NULL, "vCPUs per replica"},
    {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 32, NULL, NULL, 0, NULL,
     "memory per replica in MiB"},
    {"price_per_hour_micros", NULL, FT_INT, 0, 0, MONEY_MAX, NULL, NULL, 0, NULL,
     "list price per replica-hour in micro-units of the currency"},
    {"currency", NULL, FT_STRING, 0, 3, 3, NULL, NULL, 0, "USD", "ISO 4217 code"},
    {"pool_ids", NULL, FT_REFLIST, 0, 0, 1000, NULL, "pools", 0, "[]",
     "pools that may serve it; empty for any"},
    {"node_selector", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
     "labels a node must carry"},
    {"active", NULL, FT_BOOL, FF_FILTER, 0, 1, NULL, NULL, 1, NULL,
     "offered for new workloads"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_flavors = {
    .name = "flavors",
    .table = "flavors",
    .singular = "flavor",
    .fields = flavor_fields,
    .n_fields = ARRAY_SIZE(flavor_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_NONE, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "the catalog of products members launch",
};

static const struct field_def quota_fields[] = {
    F_ID,
    {"project_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "projects", 0,
     NULL, "project the quota is for"},
    {"gpu_class_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
     "gpu-classes", 0, NULL, "GPU class"},
    {"guaranteed_milli", NULL, FT_INT, FF_NULLABLE, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
     "owned capacity (P1) in milli-GPU; null derives it from the pools the project owns"},
    {"limit_milli", NULL, FT_INT, FF_NULLABLE, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
     "most it may hold, borrowed included, in milli-GPU; null for no limit"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_quotas = {
    .name = "quotas",
    .table = "quotas",
    .singular = "quota",
    .fields = quota_fields,
    .n_fields = ARRAY_SIZE(quota_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = "project_id",
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "project_id and gpu_class_id",
    .help = "per project per GPU class: guaranteed (P1) and limit (P1 + P2)",
};

static const struct field_def org_quota_fields[] = {
    F_ID,
    {"org_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "organizations",
     0, NULL, "organization capped"},
    {"gpu_class_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
     "gpu-classes", 0, NULL, "GPU class"},
    {"limit_milli", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
     "most the organization's projects may hold together, in milli-GPU"},
    F_CREATED,
    F_UPDATED,
};

const struct resource_def model_org_quotas = {
    .name = "org-quotas",
    .table = "org_quotas",
    .singular = "organization quota",
    .fields = org_quota_fields,
    .n_fields = ARRAY_SIZE(org_quota_fields),
    .scope = SCOPE_ORG,
    .scope_field = "org_id",
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "org_id and gpu_class_id",
    .help = "caps per organization per GPU class over all its projects",
};

static const struct field_def audit_fields[] = {
    F_ID,
    {"time", "at", FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "when (UTC)"},
    {"actor_id", NULL, FT_INT, FF_READONLY | FF_NULLABLE | FF_FILTER, 0, INT64_MAX, NULL, NULL, 0,
     NULL, "user who acted; null for the system"},
    {"actor", NULL, FT_STRING, FF_READONLY, 0, 100, NULL, NULL, 0, NULL, "user name"},
    {"action", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 32, NULL, NULL, 0, NULL,
     "create, update, delete, revoke, bootstrap"},
    {"resource", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 64, NULL, NULL, 0, NULL,
     "resource type"},
    {"object_id", NULL, FT_INT, FF_READONLY | FF_FILTER, 0, INT64_MAX, NULL, NULL, 0, NULL,
     "id of the object changed"},
    {"request_id", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 64, NULL, NULL, 0, NULL,
     "request that made the change"},
    {"before", NULL, FT_JSON, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL,
     "object before the change"},
    {"after", NULL, FT_JSON, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL,
     "object after the change"},
};

const struct resource_def model_audit = {
    .name = "audit",
    .table = "audit",
    .singular = "audit entry",
    .fields = audit_fields,
    .n_fields = ARRAY_SIZE(audit_fields),
    .scope = SCOPE_GLOBAL,
    .need = {ROLE_ADMIN, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "id",
    .help = "every mutation: actor, action, object, time, before and after",
};

const struct resource_def *const model_resources[] = {
    &model_organizations, &model_projects, &model_users,  &model_role_bindings,
    &model_tokens,        &model_clusters, &model_nodes,  &model_gpu_classes,
    &model_gpus,          &model_pools,    &model_flavors, &model_quotas,
    &model_org_quotas,    &model_audit,  &model_workloads, &model_allocations,
    &model_events,        &model_preemptions, &model_prices, &model_usage,
    &model_invoices,      &model_budgets,  &model_budget_alerts, &model_inventory_items,
};
const size_t model_n_resources = ARRAY_SIZE(model_resources);
