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

#define ID_FIELD                                                                                   \
    {                                                                                              \
        "id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL, "server-assigned id"   \
    }
#define CREATED_FIELD                                                                              \
    {"created_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "creation time (UTC)"}
#define UPDATED_FIELD                                                                              \
    {"updated_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "last change (UTC)"}

static const char *const role_values[] = {"admin",  "org-admin", "project-admin",
                                          "member", "viewer",    NULL};
static const char *const backend_values[] = {"local", "slurm", "sim", "kubernetes", NULL};
static const char *const node_state_values[] = {"ready", "drain", "down", NULL};
static const char *const gpu_health_values[] = {"ok", "degraded", "failed", "down", "mig", NULL};

static const struct field_def org_fields[] = {
    [F_ORGANIZATIONS_ID] = ID_FIELD,
    [F_ORGANIZATIONS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL,
                              NULL, 0, NULL, "unique short name"},
    [F_ORGANIZATIONS_DISPLAY_NAME] = {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "",
                                      "human-readable name"},
    [F_ORGANIZATIONS_PARENT_ID] = {"parent_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                                   "organizations", 0, NULL,
                                   "parent organization; null for a top-level one"},
    [F_ORGANIZATIONS_MANAGER_ID] = {"manager_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                                    "users", 0, NULL, "the user who manages this organization"},
    [F_ORGANIZATIONS_COST_CENTER] = {"cost_center", NULL, FT_STRING, 0, 0, 100, NULL, NULL, 0, "",
                                     "finance cost center"},
    [F_ORGANIZATIONS_CREATED_AT] = CREATED_FIELD,
    [F_ORGANIZATIONS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(org_fields) == F_ORGANIZATIONS_COUNT_, "org_fields and fields.h differ");

const struct resource_def model_organizations = {
    .name = "organizations",
    .table = "organizations",
    .singular = "organization",
    .fields = org_fields,
    .n_fields = ARRAY_SIZE(org_fields),
    .scope = SCOPE_ORG,
    .scope_field = F_ORGANIZATIONS_ID,
    .create_scope_field = F_ORGANIZATIONS_PARENT_ID,
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "name",
    .help = "tenant domains, in a tree; costs roll up by organization and manager",
};

static const struct field_def project_fields[] = {
    [F_PROJECTS_ID] = ID_FIELD,
    [F_PROJECTS_ORG_ID] = {"org_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0,
                           NULL, "organizations", 0, NULL, "owning organization"},
    [F_PROJECTS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL,
                         NULL, 0, NULL, "short name, unique within the organization"},
    [F_PROJECTS_DISPLAY_NAME] = {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "",
                                 "human-readable name"},
    [F_PROJECTS_DESCRIPTION] = {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0,
                                "", "free text"},
    [F_PROJECTS_WEIGHT] = {"weight", NULL, FT_INT, 0, 1, 1000, NULL, NULL, 1, NULL,
                           "fair-share weight for borrowed capacity"},
    [F_PROJECTS_CREATED_AT] = CREATED_FIELD,
    [F_PROJECTS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(project_fields) == F_PROJECTS_COUNT_,
               "project_fields and fields.h differ");

const struct resource_def model_projects = {
    .name = "projects",
    .table = "projects",
    .singular = "project",
    .fields = project_fields,
    .n_fields = ARRAY_SIZE(project_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_PROJECTS_ID,
    .create_scope_field = F_PROJECTS_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_PROJECT_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "org_id and name",
    .help = "teams; each belongs to one organization",
};

static const struct field_def user_fields[] = {
    [F_USERS_ID] = ID_FIELD,
    [F_USERS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL,
                      0, NULL, "unique login name"},
    [F_USERS_EMAIL] = {"email", NULL, FT_STRING, 0, 0, 254, NULL, NULL, 0, "", "contact address"},
    [F_USERS_DISPLAY_NAME] = {"display_name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "",
                              "full name"},
    [F_USERS_DISABLED] = {"disabled", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL,
                          "a disabled user's tokens stop working"},
    [F_USERS_CREATED_AT] = CREATED_FIELD,
    [F_USERS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(user_fields) == F_USERS_COUNT_, "user_fields and fields.h differ");

const struct resource_def model_users = {
    .name = "users",
    .table = "users",
    .singular = "user",
    .fields = user_fields,
    .n_fields = ARRAY_SIZE(user_fields),
    .scope = SCOPE_USER,
    .scope_field = F_USERS_ID,
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "people and service accounts; roles come from role bindings",
};

static const struct field_def binding_fields[] = {
    [F_ROLE_BINDINGS_ID] = ID_FIELD,
    [F_ROLE_BINDINGS_USER_ID] = {"user_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0,
                                 0, NULL, "users", 0, NULL, "the user who gets the role"},
    [F_ROLE_BINDINGS_ROLE] = {"role", NULL, FT_ENUM, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0,
                              role_values, NULL, 0, NULL,
                              "admin (global), org-admin, project-admin, member or viewer"},
    [F_ROLE_BINDINGS_ORG_ID] = {"org_id", NULL, FT_REF, FF_NULLABLE | FF_IMMUTABLE | FF_FILTER, 0,
                                0, NULL, "organizations", 0, NULL,
                                "organization the role applies to (and its projects)"},
    [F_ROLE_BINDINGS_PROJECT_ID] = {"project_id", NULL, FT_REF,
                                    FF_NULLABLE | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "projects",
                                    0, NULL, "project the role applies to"},
    [F_ROLE_BINDINGS_CREATED_AT] = CREATED_FIELD,
};
_Static_assert(ARRAY_SIZE(binding_fields) == F_ROLE_BINDINGS_COUNT_,
               "binding_fields and fields.h differ");

/* A binding's scope matches its role: admin is global, org-admin needs an organization, ... */
static int check_role_binding(const struct row *r, struct error_info *ei)
{
    enum role role = ROLE_NONE;
    bool org = model_has(r, F_ROLE_BINDINGS_ORG_ID),
         project = model_has(r, F_ROLE_BINDINGS_PROJECT_ID);
    role_parse(row_get(r, F_ROLE_BINDINGS_ROLE)->s, &role);
    if (org && project)
        return errinfo_set(ei, ERR_INVALID, "project_id",
                           "a role binding names an organization or a project, not both");
    if (role == ROLE_ADMIN && (org || project))
        return errinfo_set(ei, ERR_INVALID, "role",
                           "role 'admin' is global: give neither org_id nor project_id");
    if (role == ROLE_ORG_ADMIN && !org)
        return errinfo_set(ei, ERR_INVALID, "org_id", "role 'org-admin' needs org_id");
    if (role == ROLE_PROJECT_ADMIN && !project)
        return errinfo_set(ei, ERR_INVALID, "project_id", "role 'project-admin' needs project_id");
    if ((role == ROLE_MEMBER || role == ROLE_VIEWER) && !org && !project)
        return errinfo_set(ei, ERR_INVALID, "org_id", "role '%s' needs org_id or project_id",
                           role_name(role));
    return 0;
}

const struct resource_def model_role_bindings = {
    .name = "role-bindings",
    .table = "role_bindings",
    .singular = "role binding",
    .fields = binding_fields,
    .n_fields = ARRAY_SIZE(binding_fields),
    .scope = SCOPE_BINDING,
    .scope_field = F_ROLE_BINDINGS_PROJECT_ID,
    .scope_org_field = F_ROLE_BINDINGS_ORG_ID,
    .scope_user_field = F_ROLE_BINDINGS_USER_ID,
    .need = {ROLE_PROJECT_ADMIN, ROLE_PROJECT_ADMIN, ROLE_NOBODY, ROLE_PROJECT_ADMIN},
    .unique_desc = "user_id, role and scope",
    .help = "who holds which role on which organization or project",
    .check = check_role_binding,
};

static const struct field_def token_fields[] = {
    [F_TOKENS_ID] = ID_FIELD,
    [F_TOKENS_USER_ID] = {"user_id", NULL, FT_REF, FF_IMMUTABLE | FF_FILTER, 0, 0, NULL, "users", 0,
                          NULL, "owner of the token; defaults to the caller"},
    [F_TOKENS_NAME] = {"name", NULL, FT_STRING, 0, 0, 100, NULL, NULL, 0, "",
                       "what the token is for"},
    [F_TOKENS_PREFIX] = {"prefix", NULL, FT_STRING, FF_READONLY, 0, 32, NULL, NULL, 0, NULL,
                         "first characters of the token, to recognise it"},
    [F_TOKENS_HASH] = {"hash", NULL, FT_STRING, FF_READONLY | FF_SECRET | FF_FILTER, 0, 128, NULL,
                       NULL, 0, NULL, "hash of the token"},
    [F_TOKENS_EXPIRES_AT] = {"expires_at", NULL, FT_TIME, FF_NULLABLE | FF_IMMUTABLE, 0, 0, NULL,
                             NULL, 0, NULL, "expiry; null for none"},
    [F_TOKENS_REVOKED_AT] = {"revoked_at", NULL, FT_TIME, FF_NULLABLE | FF_READONLY, 0, 0, NULL,
                             NULL, 0, NULL, "when it was revoked; null while valid"},
    [F_TOKENS_CREATED_AT] = CREATED_FIELD,
};
_Static_assert(ARRAY_SIZE(token_fields) == F_TOKENS_COUNT_, "token_fields and fields.h differ");

const struct resource_def model_tokens = {
    .name = "tokens",
    .table = "tokens",
    .singular = "token",
    .fields = token_fields,
    .n_fields = ARRAY_SIZE(token_fields),
    .scope = SCOPE_USER,
    .scope_field = F_TOKENS_USER_ID,
    .need = {ROLE_VIEWER, ROLE_VIEWER, ROLE_NOBODY, ROLE_VIEWER},
    .unique_desc = "hash",
    .help = "API bearer tokens: shown once at creation, stored only as a hash",
    .flags = RF_DELETE_REVOKES | RF_SECRET_ONCE,
};

static const struct field_def cluster_fields[] = {
    [F_CLUSTERS_ID] = ID_FIELD,
    [F_CLUSTERS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL,
                         NULL, 0, NULL, "unique short name"},
    [F_CLUSTERS_BACKEND] = {"backend", NULL, FT_ENUM, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0,
                            backend_values, NULL, 0, NULL, "local, slurm, sim or kubernetes"},
    [F_CLUSTERS_ENDPOINT] =
        {"endpoint", NULL, FT_STRING, 0, 0, 512, NULL, NULL, 0, "",
         "slurm: the slurm.conf its tools read (empty: their default); kubernetes: its kubeconfig "
         "file; empty for local and sim"},
    [F_CLUSTERS_LABELS] = {"labels", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
                           "site, region, cloud, ..."},
    [F_CLUSTERS_DESCRIPTION] = {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0,
                                "", "free text"},
    [F_CLUSTERS_CREATED_AT] = CREATED_FIELD,
    [F_CLUSTERS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(cluster_fields) == F_CLUSTERS_COUNT_,
               "cluster_fields and fields.h differ");

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
    [F_NODES_ID] = ID_FIELD,
    [F_NODES_CLUSTER_ID] = {"cluster_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0,
                            0, NULL, "clusters", 0, NULL, "cluster of the node"},
    [F_NODES_NAME] = {"name", NULL, FT_IDENT, FF_REQUIRED | FF_FILTER, 0, 128, NULL, NULL, 0, NULL,
                      "host name, unique within the cluster"},
    [F_NODES_CPU_MILLI] = {"cpu_milli", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
                           "CPU capacity in milli-CPUs"},
    [F_NODES_MEMORY_MIB] = {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
                            "memory in MiB"},
    [F_NODES_LABELS] = {"labels", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
                        "topology and placement labels"},
    [F_NODES_STATE] = {"state", NULL, FT_ENUM, FF_FILTER, 0, 0, node_state_values, NULL, 0, "ready",
                       "ready, drain or down"},
    [F_NODES_CREATED_AT] = CREATED_FIELD,
    [F_NODES_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(node_fields) == F_NODES_COUNT_, "node_fields and fields.h differ");

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
    [F_GPU_CLASSES_ID] = ID_FIELD,
    [F_GPU_CLASSES_NAME] = {"name", NULL, FT_IDENT, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL,
                            NULL, 0, NULL, "normalised class, e.g. h100-80gb or h100-80gb/1g.10gb"},
    [F_GPU_CLASSES_MODEL] = {"model", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "",
                             "vendor model string"},
    [F_GPU_CLASSES_VENDOR] = {"vendor", NULL, FT_STRING, 0, 0, 50, NULL, NULL, 0, "",
                              "nvidia, amd, ..."},
    [F_GPU_CLASSES_MEMORY_MIB] = {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 30, NULL, NULL, 0,
                                  NULL, "memory per device in MiB"},
    [F_GPU_CLASSES_PARENT_ID] = {"parent_id", NULL, FT_REF, FF_NULLABLE | FF_IMMUTABLE | FF_FILTER,
                                 0, 0, NULL, "gpu-classes", 0, NULL,
                                 "for a MIG profile, the class of the whole GPU"},
    [F_GPU_CLASSES_MILLI] = {"milli", NULL, FT_INT, 0, 1, 1000, NULL, NULL, 1000, NULL,
                             "share of the parent GPU in milli-GPU (1000 for a whole GPU)"},
    [F_GPU_CLASSES_CREATED_AT] = CREATED_FIELD,
    [F_GPU_CLASSES_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(class_fields) == F_GPU_CLASSES_COUNT_,
               "class_fields and fields.h differ");

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
    [F_GPUS_ID] = ID_FIELD,
    [F_GPUS_NODE_ID] = {"node_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
                        "nodes", 0, NULL, "node the GPU sits in"},
    [F_GPUS_INDEX] = {"index", "gpu_index", FT_INT, FF_REQUIRED | FF_IMMUTABLE, 0, 1023, NULL, NULL,
                      0, NULL, "device index on the node"},
    [F_GPUS_UUID] = {"uuid", NULL, FT_IDENT, FF_NULLABLE | FF_FILTER, 0, 128, NULL, NULL, 0, NULL,
                     "device UUID (GPU-...), when known"},
    [F_GPUS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF, FF_REQUIRED | FF_FILTER, 0, 0, NULL,
                             "gpu-classes", 0, NULL, "normalised class"},
    [F_GPUS_MEMORY_MIB] = {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 30, NULL, NULL, 0, NULL,
                           "memory in MiB"},
    [F_GPUS_MIG_MODE] = {"mig_mode", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL, "MIG enabled"},
    [F_GPUS_HEALTH] = {"health", NULL, FT_ENUM, FF_FILTER, 0, 0, gpu_health_values, NULL, 0, "ok",
                       "ok, degraded, failed, down (the local discovery no longer sees it) or mig "
                       "(split into MIG "
                       "instances, which are scheduled instead)"},
    [F_GPUS_CREATED_AT] = CREATED_FIELD,
    [F_GPUS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(gpu_fields) == F_GPUS_COUNT_, "gpu_fields and fields.h differ");

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
    [F_POOLS_ID] = ID_FIELD,
    [F_POOLS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL,
                      0, NULL, "unique short name"},
    [F_POOLS_OWNER_ORG_ID] = {"owner_org_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                              "organizations", 0, NULL, "owning organization (exactly one owner)"},
    [F_POOLS_OWNER_PROJECT_ID] = {"owner_project_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0,
                                  NULL, "projects", 0, NULL, "owning project (exactly one owner)"},
    [F_POOLS_COST_PER_GPU_HOUR_MICROS] =
        {"cost_per_gpu_hour_micros", NULL, FT_INT, 0, 0, MONEY_MAX, NULL, NULL, 0, NULL,
         "owner's cost per GPU-hour in micro-units of the currency"},
    [F_POOLS_CURRENCY] = {"currency", NULL, FT_STRING, 0, 3, 3, NULL, NULL, 0, "USD",
                          "ISO 4217 code"},
    [F_POOLS_CLUSTER_ID] = {"cluster_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                            "clusters", 0, NULL, "select the GPUs of this cluster"},
    [F_POOLS_NODE_SELECTOR] = {"node_selector", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
                               "select GPUs on nodes carrying all these labels"},
    [F_POOLS_GPU_IDS] = {"gpu_ids", NULL, FT_REFLIST, 0, 0, 100000, NULL, "gpus", 0, "[]",
                         "select exactly these GPUs"},
    [F_POOLS_ACCESS_PROJECT_IDS] = {"access_project_ids", NULL, FT_REFLIST, 0, 0, 10000, NULL,
                                    "projects", 0, "[]", "projects that may borrow this pool"},
    [F_POOLS_ACCESS_ORG_IDS] = {"access_org_ids", NULL, FT_REFLIST, 0, 0, 10000, NULL,
                                "organizations", 0, "[]",
                                "organizations whose projects may borrow this pool"},
    [F_POOLS_LEND_TO_ALL] = {"lend_to_all", NULL, FT_BOOL, 0, 0, 1, NULL, NULL, 0, NULL,
                             "every project may borrow this pool, whatever the access lists say"},
    [F_POOLS_LENDING_LIMIT_MILLI] =
        {"lending_limit_milli", NULL, FT_INT, FF_NULLABLE, 1, INT64_C(1) << 40, NULL, NULL, 0, NULL,
         "at most this much of the pool (milli-GPU) held by projects that do not own it at "
         "once (Kueue's lendingLimit); null for no limit. Lowering it preempts nothing"},
    [F_POOLS_CREATED_AT] = CREATED_FIELD,
    [F_POOLS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(pool_fields) == F_POOLS_COUNT_, "pool_fields and fields.h differ");

/* Exactly one owner, and a currency for its cost. */
static int check_pool(const struct row *r, struct error_info *ei)
{
    bool org = model_has(r, F_POOLS_OWNER_ORG_ID), project = model_has(r, F_POOLS_OWNER_PROJECT_ID);
    if (org == project)
        return errinfo_set(ei, ERR_INVALID, "owner_org_id",
                           "a pool has exactly one owner: give owner_org_id or owner_project_id");
    return model_check_currency(r, F_POOLS_CURRENCY, ei);
}

const struct resource_def model_pools = {
    .name = "pools",
    .table = "pools",
    .singular = "pool",
    .fields = pool_fields,
    .n_fields = ARRAY_SIZE(pool_fields),
    .scope = SCOPE_OWNER,
    .scope_field = F_POOLS_OWNER_PROJECT_ID,
    .scope_org_field = F_POOLS_OWNER_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "name",
    .help = "sets of GPUs with one financial owner, a cost and an access list",
    .check = check_pool,
};

static const struct field_def flavor_fields[] = {
    [F_FLAVORS_ID] = ID_FIELD,
    [F_FLAVORS_NAME] = {"name", NULL, FT_NAME, FF_REQUIRED | FF_FILTER, 0, NAME_MAX_LEN, NULL, NULL,
                        0, NULL, "catalog name, e.g. h100.1x"},
    [F_FLAVORS_DESCRIPTION] = {"description", NULL, FT_STRING, 0, 0, TEXT_MAX_LEN, NULL, NULL, 0,
                               "", "free text"},
    [F_FLAVORS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF, FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                                "gpu-classes", 0, NULL, "GPU class; null for a CPU-only flavor"},
    [F_FLAVORS_GPU_MILLI] =
        {"gpu_milli", NULL, FT_INT, 0, 0, 64000, NULL, NULL, 0, NULL,
         "GPU per replica in milli-GPU: below 1000 is a share of one GPU, else a multiple of 1000"},
    [F_FLAVORS_VCPUS] = {"vcpus", NULL, FT_INT, 0, 0, 4096, NULL, NULL, 0, NULL,
                         "vCPUs per replica"},
    [F_FLAVORS_MEMORY_MIB] = {"memory_mib", NULL, FT_INT, 0, 0, INT64_C(1) << 32, NULL, NULL, 0,
                              NULL, "memory per replica in MiB"},
    [F_FLAVORS_PRICE_PER_HOUR_MICROS] =
        {"price_per_hour_micros", NULL, FT_INT, 0, 0, MONEY_MAX, NULL, NULL, 0, NULL,
         "list price per replica-hour in micro-units of the currency"},
    [F_FLAVORS_CURRENCY] = {"currency", NULL, FT_STRING, 0, 3, 3, NULL, NULL, 0, "USD",
                            "ISO 4217 code"},
    [F_FLAVORS_POOL_IDS] = {"pool_ids", NULL, FT_REFLIST, 0, 0, 1000, NULL, "pools", 0, "[]",
                            "pools that may serve it; empty for any"},
    [F_FLAVORS_NODE_SELECTOR] = {"node_selector", NULL, FT_LABELS, 0, 0, 0, NULL, NULL, 0, "{}",
                                 "labels a node must carry"},
    [F_FLAVORS_ACTIVE] = {"active", NULL, FT_BOOL, FF_FILTER, 0, 1, NULL, NULL, 1, NULL,
                          "offered for new workloads"},
    [F_FLAVORS_CREATED_AT] = CREATED_FIELD,
    [F_FLAVORS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(flavor_fields) == F_FLAVORS_COUNT_, "flavor_fields and fields.h differ");

/* Shares below one GPU, whole GPUs above; a class exactly when there are GPUs. */
static int check_flavor(const struct row *r, struct error_info *ei)
{
    int64_t milli = row_int(r, F_FLAVORS_GPU_MILLI);
    bool cls = model_has(r, F_FLAVORS_GPU_CLASS_ID);
    if (milli > 1000 && milli % 1000 != 0)
        return errinfo_set(ei, ERR_INVALID, "gpu_milli",
                           "field 'gpu_milli' above 1000 must be whole GPUs (a multiple of 1000)");
    if (milli > 0 && !cls)
        return errinfo_set(ei, ERR_INVALID, "gpu_class_id",
                           "a flavor with GPUs needs gpu_class_id");
    if (milli == 0 && cls)
        return errinfo_set(ei, ERR_INVALID, "gpu_milli",
                           "a flavor with gpu_class_id needs gpu_milli above 0");
    return model_check_currency(r, F_FLAVORS_CURRENCY, ei);
}

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
    .check = check_flavor,
};

static const struct field_def quota_fields[] = {
    [F_QUOTAS_ID] = ID_FIELD,
    [F_QUOTAS_PROJECT_ID] = {"project_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0,
                             0, NULL, "projects", 0, NULL, "project the quota is for"},
    [F_QUOTAS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER,
                               0, 0, NULL, "gpu-classes", 0, NULL, "GPU class"},
    [F_QUOTAS_GUARANTEED_MILLI] =
        {"guaranteed_milli", NULL, FT_INT, FF_NULLABLE, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
         "owned capacity (P1) in milli-GPU; null derives it from the pools the project owns"},
    [F_QUOTAS_LIMIT_MILLI] =
        {"limit_milli", NULL, FT_INT, FF_NULLABLE, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
         "most it may hold, borrowed included, in milli-GPU; null for no limit"},
    [F_QUOTAS_CREATED_AT] = CREATED_FIELD,
    [F_QUOTAS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(quota_fields) == F_QUOTAS_COUNT_, "quota_fields and fields.h differ");

/* A guarantee never above the limit. */
static int check_quota(const struct row *r, struct error_info *ei)
{
    const struct value *g = row_get(r, F_QUOTAS_GUARANTEED_MILLI);
    const struct value *l = row_get(r, F_QUOTAS_LIMIT_MILLI);
    if (!g->null && !l->null && g->i > l->i)
        return errinfo_set(ei, ERR_INVALID, "guaranteed_milli",
                           "guaranteed_milli (%" PRId64 ") exceeds limit_milli (%" PRId64 ")", g->i,
                           l->i);
    return 0;
}

const struct resource_def model_quotas = {
    .name = "quotas",
    .table = "quotas",
    .singular = "quota",
    .fields = quota_fields,
    .n_fields = ARRAY_SIZE(quota_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_QUOTAS_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN, ROLE_ORG_ADMIN},
    .unique_desc = "project_id and gpu_class_id",
    .help = "per project per GPU class: guaranteed (P1) and limit (P1 + P2)",
    .check = check_quota,
};

static const struct field_def org_quota_fields[] = {
    [F_ORG_QUOTAS_ID] = ID_FIELD,
    [F_ORG_QUOTAS_ORG_ID] = {"org_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0,
                             NULL, "organizations", 0, NULL, "organization capped"},
    [F_ORG_QUOTAS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF,
                                   FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0, 0, NULL,
                                   "gpu-classes", 0, NULL, "GPU class"},
    [F_ORG_QUOTAS_LIMIT_MILLI] =
        {"limit_milli", NULL, FT_INT, 0, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
         "most the organization's projects may hold together, in milli-GPU"},
    [F_ORG_QUOTAS_CREATED_AT] = CREATED_FIELD,
    [F_ORG_QUOTAS_UPDATED_AT] = UPDATED_FIELD,
};
_Static_assert(ARRAY_SIZE(org_quota_fields) == F_ORG_QUOTAS_COUNT_,
               "org_quota_fields and fields.h differ");

const struct resource_def model_org_quotas = {
    .name = "org-quotas",
    .table = "org_quotas",
    .singular = "organization quota",
    .fields = org_quota_fields,
    .n_fields = ARRAY_SIZE(org_quota_fields),
    .scope = SCOPE_ORG,
    .scope_field = F_ORG_QUOTAS_ORG_ID,
    .need = {ROLE_VIEWER, ROLE_ADMIN, ROLE_ADMIN, ROLE_ADMIN},
    .unique_desc = "org_id and gpu_class_id",
    .help = "caps per organization per GPU class over all its projects",
};

static const struct field_def audit_fields[] = {
    [F_AUDIT_ID] = ID_FIELD,
    [F_AUDIT_TIME] = {"time", "at", FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL, "when (UTC)"},
    [F_AUDIT_ACTOR_ID] = {"actor_id", NULL, FT_INT, FF_READONLY | FF_NULLABLE | FF_FILTER, 0,
                          INT64_MAX, NULL, NULL, 0, NULL, "user who acted; null for the system"},
    [F_AUDIT_ACTOR] = {"actor", NULL, FT_STRING, FF_READONLY, 0, 100, NULL, NULL, 0, NULL,
                       "user name"},
    [F_AUDIT_ACTION] = {"action", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 32, NULL, NULL, 0,
                        NULL, "create, update, delete, revoke, bootstrap"},
    [F_AUDIT_RESOURCE] = {"resource", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 64, NULL, NULL,
                          0, NULL, "resource type"},
    [F_AUDIT_OBJECT_ID] = {"object_id", NULL, FT_INT, FF_READONLY | FF_FILTER, 0, INT64_MAX, NULL,
                           NULL, 0, NULL, "id of the object changed"},
    [F_AUDIT_REQUEST_ID] = {"request_id", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 64, NULL,
                            NULL, 0, NULL, "request that made the change"},
    [F_AUDIT_BEFORE] = {"before", NULL, FT_JSON, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL, 0,
                        NULL, "object before the change"},
    [F_AUDIT_AFTER] = {"after", NULL, FT_JSON, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL,
                       "object after the change"},
};
_Static_assert(ARRAY_SIZE(audit_fields) == F_AUDIT_COUNT_, "audit_fields and fields.h differ");

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
    .flags = RF_NEWEST_FIRST,
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
