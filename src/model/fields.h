/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fields.h: every field of every resource, named once, so that code names a
 * field by an identifier the compiler checks instead of by a string looked up
 * at run time.
 *
 * MODEL_<RESOURCE>_FIELDS(X, R) lists a resource's fields in the order of its
 * table in src/model/, as X(R, FIELD) with FIELD the JSON name in upper case.
 * model.h turns each list into an enum of indices (F_WORKLOADS_STATE is the
 * index of "state" in model_workloads.fields and in a workload row) and each
 * table places its entries on those indices with designated initialisers.
 * A new field goes here and into its table; test_model_fields fails when a
 * name here and the table's name at that index differ. Only model.h includes
 * this file.
 */
#ifndef GPUAAS_MODEL_FIELDS_H
#define GPUAAS_MODEL_FIELDS_H

/* Every resource as X(PREFIX, name): PREFIX names its enum, model_<name> its definition. */
#define MODEL_RESOURCES(X)                                                                         \
    X(ORGANIZATIONS, organizations)                                                                \
    X(PROJECTS, projects)                                                                          \
    X(USERS, users)                                                                                \
    X(ROLE_BINDINGS, role_bindings)                                                                \
    X(TOKENS, tokens)                                                                              \
    X(CLUSTERS, clusters)                                                                          \
    X(NODES, nodes)                                                                                \
    X(GPU_CLASSES, gpu_classes)                                                                    \
    X(GPUS, gpus)                                                                                  \
    X(POOLS, pools)                                                                                \
    X(FLAVORS, flavors)                                                                            \
    X(QUOTAS, quotas)                                                                              \
    X(ORG_QUOTAS, org_quotas)                                                                      \
    X(AUDIT, audit)                                                                                \
    X(WORKLOADS, workloads)                                                                        \
    X(ALLOCATIONS, allocations)                                                                    \
    X(EVENTS, events)                                                                              \
    X(PREEMPTIONS, preemptions)                                                                    \
    X(PRICES, prices)                                                                              \
    X(USAGE, usage)                                                                                \
    X(INVOICES, invoices)                                                                          \
    X(BUDGETS, budgets)                                                                            \
    X(BUDGET_ALERTS, budget_alerts)                                                                \
    X(INVENTORY_ITEMS, inventory_items)

#define MODEL_ORGANIZATIONS_FIELDS(X, R)                                                           \
    X(R, ID) X(R, NAME) X(R, DISPLAY_NAME) X(R, PARENT_ID) X(R, MANAGER_ID) X(R, COST_CENTER)      \
    X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_PROJECTS_FIELDS(X, R)                                                                \
    X(R, ID) X(R, ORG_ID) X(R, NAME) X(R, DISPLAY_NAME) X(R, DESCRIPTION) X(R, WEIGHT)             \
    X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_USERS_FIELDS(X, R)                                                                   \
    X(R, ID) X(R, NAME) X(R, EMAIL) X(R, DISPLAY_NAME) X(R, DISABLED) X(R, CREATED_AT)             \
    X(R, UPDATED_AT)
#define MODEL_ROLE_BINDINGS_FIELDS(X, R)                                                           \
    X(R, ID) X(R, USER_ID) X(R, ROLE) X(R, ORG_ID) X(R, PROJECT_ID) X(R, CREATED_AT)
#define MODEL_TOKENS_FIELDS(X, R)                                                                  \
    X(R, ID) X(R, USER_ID) X(R, NAME) X(R, PREFIX) X(R, HASH) X(R, EXPIRES_AT) X(R, REVOKED_AT)    \
    X(R, CREATED_AT)
#define MODEL_CLUSTERS_FIELDS(X, R)                                                                \
    X(R, ID) X(R, NAME) X(R, BACKEND) X(R, ENDPOINT) X(R, LABELS) X(R, DESCRIPTION)                \
    X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_NODES_FIELDS(X, R)                                                                   \
    X(R, ID) X(R, CLUSTER_ID) X(R, NAME) X(R, CPU_MILLI) X(R, MEMORY_MIB) X(R, LABELS)             \
    X(R, STATE) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_GPU_CLASSES_FIELDS(X, R)                                                             \
    X(R, ID) X(R, NAME) X(R, MODEL) X(R, VENDOR) X(R, MEMORY_MIB) X(R, PARENT_ID) X(R, MILLI)      \
    X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_GPUS_FIELDS(X, R)                                                                    \
    X(R, ID) X(R, NODE_ID) X(R, INDEX) X(R, UUID) X(R, GPU_CLASS_ID) X(R, MEMORY_MIB)              \
    X(R, MIG_MODE) X(R, HEALTH) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_POOLS_FIELDS(X, R)                                                                   \
    X(R, ID) X(R, NAME) X(R, OWNER_ORG_ID) X(R, OWNER_PROJECT_ID)                                  \
    X(R, COST_PER_GPU_HOUR_MICROS) X(R, CURRENCY) X(R, CLUSTER_ID) X(R, NODE_SELECTOR)             \
    X(R, GPU_IDS) X(R, ACCESS_PROJECT_IDS) X(R, ACCESS_ORG_IDS) X(R, LEND_TO_ALL)                  \
    X(R, LENDING_LIMIT_MILLI) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_FLAVORS_FIELDS(X, R)                                                                 \
    X(R, ID) X(R, NAME) X(R, DESCRIPTION) X(R, GPU_CLASS_ID) X(R, GPU_MILLI) X(R, VCPUS)           \
    X(R, MEMORY_MIB) X(R, PRICE_PER_HOUR_MICROS) X(R, CURRENCY) X(R, POOL_IDS)                     \
    X(R, NODE_SELECTOR) X(R, ACTIVE) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_QUOTAS_FIELDS(X, R)                                                                  \
    X(R, ID) X(R, PROJECT_ID) X(R, GPU_CLASS_ID) X(R, GUARANTEED_MILLI) X(R, LIMIT_MILLI)          \
    X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_ORG_QUOTAS_FIELDS(X, R)                                                              \
    X(R, ID) X(R, ORG_ID) X(R, GPU_CLASS_ID) X(R, LIMIT_MILLI) X(R, CREATED_AT)                    \
    X(R, UPDATED_AT)
#define MODEL_AUDIT_FIELDS(X, R)                                                                   \
    X(R, ID) X(R, TIME) X(R, ACTOR_ID) X(R, ACTOR) X(R, ACTION) X(R, RESOURCE) X(R, OBJECT_ID)     \
    X(R, REQUEST_ID) X(R, BEFORE) X(R, AFTER)
#define MODEL_WORKLOADS_FIELDS(X, R)                                                               \
    X(R, ID) X(R, PROJECT_ID) X(R, NAME) X(R, FLAVOR_ID) X(R, KIND) X(R, REPLICAS)                 \
    X(R, COMMAND) X(R, IMAGE) X(R, PRIORITY_CLASS) X(R, PRIORITY) X(R, MAX_RUNTIME_S)              \
    X(R, MIN_RUNTIME_S) X(R, GRACE_S) X(R, REQUEUE) X(R, IDEMPOTENCY_KEY) X(R, DURATION_S)         \
    X(R, STATE) X(R, REASON) X(R, USER_ID) X(R, CLUSTER_ID) X(R, SUBMITTED_MS) X(R, STARTED_AT)    \
    X(R, FINISHED_AT) X(R, EXIT_CODE) X(R, PREEMPTIONS) X(R, QUEUED_AFTER) X(R, IMPORTED)          \
    X(R, AFTER_ID) X(R, AFTER_OK) X(R, HELD) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_ALLOCATIONS_FIELDS(X, R)                                                             \
    X(R, ID) X(R, WORKLOAD_ID) X(R, PROJECT_ID) X(R, REPLICA) X(R, NODE_ID) X(R, GPU_ID)           \
    X(R, GPU_CLASS_ID) X(R, MILLI) X(R, PRIORITY_CLASS) X(R, BORROWED) X(R, STARTED_MS)            \
    X(R, ENDED_MS) X(R, END_REASON)
#define MODEL_EVENTS_FIELDS(X, R)                                                                  \
    X(R, ID) X(R, WORKLOAD_ID) X(R, PROJECT_ID) X(R, AT_MS) X(R, TYPE) X(R, MESSAGE)
#define MODEL_PREEMPTIONS_FIELDS(X, R)                                                             \
    X(R, ID) X(R, PREEMPTOR_ID) X(R, PROJECT_ID) X(R, RULE) X(R, GPU_CLASS_ID) X(R, VICTIMS)       \
    X(R, QUOTA_BEFORE) X(R, QUOTA_AFTER) X(R, GPU_MILLI) X(R, GRACE_MS) X(R, DECIDED_MS)           \
    X(R, RELEASED_MS) X(R, RECLAIM_MS) X(R, GPU_MS_LOST) X(R, FIRST_TRY_MS)
#define MODEL_PRICES_FIELDS(X, R)                                                                  \
    X(R, ID) X(R, FLAVOR_ID) X(R, CURRENCY) X(R, MINOR_DIGITS) X(R, PRICE_PER_HOUR_MICROS)         \
    X(R, OWNED_MULT_PPM) X(R, OPPORTUNISTIC_MULT_PPM) X(R, EFFECTIVE_FROM) X(R, CREATED_AT)
#define MODEL_USAGE_FIELDS(X, R)                                                                   \
    X(R, ID) X(R, SEQ) X(R, WORKLOAD_ID) X(R, ORG_ID) X(R, PROJECT_ID) X(R, FLAVOR_ID)             \
    X(R, PRIORITY_CLASS) X(R, REPLICAS) X(R, GPU_MILLI) X(R, RUN_STARTED_MS) X(R, STARTED_MS)      \
    X(R, ENDED_MS) X(R, PREV_HASH) X(R, HASH) X(R, RECORDED_MS)
#define MODEL_INVOICES_FIELDS(X, R)                                                                \
    X(R, ID) X(R, KIND) X(R, NUMBER) X(R, ORG_ID) X(R, CUSTOMER) X(R, COST_CENTER) X(R, PERIOD)    \
    X(R, PERIOD_START_MS) X(R, PERIOD_END_MS) X(R, CURRENCY) X(R, MINOR_DIGITS) X(R, STATE)        \
    X(R, TOTAL_MICROS) X(R, TOTAL_SECONDS) X(R, LINES) X(R, CANONICAL) X(R, CREDITS_INVOICE_ID)    \
    X(R, REASON) X(R, ISSUED_AT) X(R, PAID_AT)
#define MODEL_BUDGETS_FIELDS(X, R)                                                                 \
    X(R, ID) X(R, ORG_ID) X(R, PROJECT_ID) X(R, GPU_HOURS) X(R, MONEY_MICROS) X(R, CURRENCY)       \
    X(R, ENFORCE) X(R, CREATED_AT) X(R, UPDATED_AT)
#define MODEL_BUDGET_ALERTS_FIELDS(X, R)                                                           \
    X(R, ID) X(R, BUDGET_ID) X(R, ORG_ID) X(R, PROJECT_ID) X(R, PERIOD) X(R, KIND)                 \
    X(R, PERCENT) X(R, USED) X(R, LIMIT) X(R, AT_MS)
#define MODEL_INVENTORY_ITEMS_FIELDS(X, R)                                                         \
    X(R, ID) X(R, UUID) X(R, MODEL) X(R, NODE) X(R, CLUSTER) X(R, SITE) X(R, OWNER)                \
    X(R, MANAGER) X(R, INTENDED_USE) X(R, ENVIRONMENT) X(R, IMPORTED_AT)

#endif
