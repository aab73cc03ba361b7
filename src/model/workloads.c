/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workloads.c: the resources of running work (DESIGN.md sections 2 and 3):
 * workloads, their allocations (who held which GPU when), their events, and
 * the preemption ledger. Migration 2 in src/store/migrations.c creates the
 * matching tables. Only workloads are created through the API (a submit);
 * the scheduler writes the rest.
 */
#include "base/common.h"
#include "model/model.h"

#define ID_FIELD                                                                                   \
    {                                                                                              \
        "id", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL, "server-assigned id"   \
    }
#define RO_TIME(name, help)                                                                        \
    {                                                                                              \
        name, NULL, FT_TIME, FF_READONLY | FF_NULLABLE, 0, 0, NULL, NULL, 0, NULL, help            \
    }

const char *const model_workload_states[] = {"queued",    "admitted",  "running",   "preempting",
                                             "succeeded", "failed",    "cancelled", "preempted",
                                             NULL};
bool model_workload_state_ended(const char *state)
{
    static const char *const ends[] = {"succeeded", "failed", "cancelled", "preempted"};
    for (size_t i = 0; state && i < ARRAY_SIZE(ends); i++) {
        if (strcmp(state, ends[i]) == 0)
            return true;
    }
    return false;
}

/* What a user asks for; allocations record what the work ran as (never "auto"). */
static const char *const pclass_values[] = {"auto", "owned", "opportunistic", NULL};
static const char *const held_class_values[] = {"owned", "opportunistic", NULL};
static const char *const kind_values[] = {"batch", "instance", NULL};

static const struct field_def workload_fields[] = {
    [F_WORKLOADS_ID] = ID_FIELD,
    [F_WORKLOADS_PROJECT_ID] = {"project_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER,
                                0, 0, NULL, "projects", 0, NULL, "project the work runs for"},
    [F_WORKLOADS_NAME] = {"name", NULL, FT_STRING, 0, 0, 200, NULL, NULL, 0, "",
                          "a label for people"},
    [F_WORKLOADS_FLAVOR_ID] = {"flavor_id", NULL, FT_REF, FF_REQUIRED | FF_IMMUTABLE | FF_FILTER, 0,
                               0, NULL, "flavors", 0, NULL, "catalog flavor of each replica"},
    [F_WORKLOADS_KIND] = {"kind", NULL, FT_ENUM, FF_IMMUTABLE, 0, 0, kind_values, NULL, 0, "batch",
                          "batch (runs to completion) or instance (runs until stopped)"},
    [F_WORKLOADS_REPLICAS] = {"replicas", NULL, FT_INT, FF_IMMUTABLE, 1, 256, NULL, NULL, 1, NULL,
                              "replicas, placed all together or not at all"},
    [F_WORKLOADS_COMMAND] = {"command", NULL, FT_STRING, FF_IMMUTABLE, 0, 8192, NULL, NULL, 0, "",
                             "command line"},
    [F_WORKLOADS_IMAGE] = {"image", NULL, FT_STRING, FF_IMMUTABLE, 0, 512, NULL, NULL, 0, "",
                           "container image; empty to run the command directly"},
    [F_WORKLOADS_PRIORITY_CLASS] =
        {"priority_class", NULL, FT_ENUM, FF_IMMUTABLE | FF_FILTER, 0, 0, pclass_values, NULL, 0,
         "auto",
         "auto (owned while the project's owned work and this fit its guarantee, else "
         "opportunistic; decided at each admission, recorded on its allocations and events), "
         "owned (P1: within the guarantee, never preempted) or opportunistic (P2: borrows idle "
         "capacity, may be preempted)"},
    [F_WORKLOADS_PRIORITY] = {"priority", NULL, FT_INT, FF_IMMUTABLE, -1000, 1000, NULL, NULL, 0,
                              NULL, "order within the project and class; higher first"},
    [F_WORKLOADS_MAX_RUNTIME_S] = {"max_runtime_s", NULL, FT_INT, FF_IMMUTABLE | FF_NULLABLE, 1,
                                   INT64_C(1) << 40, NULL, NULL, 0, NULL,
                                   "stopped after running this long; null for no limit"},
    [F_WORKLOADS_MIN_RUNTIME_S] =
        {"min_runtime_s", NULL, FT_INT, FF_IMMUTABLE, 0, INT64_C(1) << 40, NULL, NULL, 0, NULL,
         "opportunistic work is not preempted before running this long; at most the server's "
         "max-min-runtime-s (default 3600) and max_runtime_s"},
    [F_WORKLOADS_GRACE_S] =
        {"grace_s", NULL, FT_INT, FF_IMMUTABLE | FF_NULLABLE, 0, 86400, NULL, NULL, 0, NULL,
         "time between the stop signal and the kill; null for the default; at most the server's "
         "max-grace-s (default 600)"},
    [F_WORKLOADS_REQUEUE] = {"requeue", NULL, FT_BOOL, FF_IMMUTABLE, 0, 1, NULL, NULL, 1, NULL,
                             "back to the queue, in its original place, when preempted"},
    [F_WORKLOADS_IDEMPOTENCY_KEY] =
        {"idempotency_key", NULL, FT_STRING, FF_IMMUTABLE | FF_NULLABLE | FF_FILTER, 1, 128, NULL,
         NULL, 0, NULL, "a second submit with the same key in the project returns the first"},
    [F_WORKLOADS_DURATION_S] = {"duration_s", NULL, FT_INT, FF_IMMUTABLE | FF_NULLABLE, 0,
                                INT64_C(1) << 40, NULL, NULL, 0, NULL,
                                "simulated clusters: how long the work runs; null until stopped"},
    [F_WORKLOADS_STATE] =
        {"state", NULL, FT_ENUM, FF_READONLY | FF_FILTER, 0, 0, model_workload_states, NULL, 0,
         "queued",
         "queued, admitted (placed, being started), running, preempting, succeeded, failed, "
         "cancelled or preempted"},
    [F_WORKLOADS_REASON] = {"reason", NULL, FT_STRING, FF_READONLY, 0, 1024, NULL, NULL, 0, "",
                            "why it waits, or how it ended"},
    [F_WORKLOADS_USER_ID] = {"user_id", NULL, FT_REF, FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0,
                             NULL, "users", 0, NULL, "who submitted it"},
    [F_WORKLOADS_CLUSTER_ID] = {"cluster_id", NULL, FT_REF, FF_READONLY | FF_NULLABLE | FF_FILTER,
                                0, 0, NULL, "clusters", 0, NULL, "where it runs or ran"},
    [F_WORKLOADS_SUBMITTED_MS] = {"submitted_ms", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL,
                                  NULL, 0, NULL,
                                  "original submit time in ms since the epoch: its place in the "
                                  "queue, kept across requeues"},
    [F_WORKLOADS_STARTED_AT] = RO_TIME("started_at", "when it last started"),
    [F_WORKLOADS_FINISHED_AT] = RO_TIME("finished_at", "when it ended"),
    [F_WORKLOADS_EXIT_CODE] = {"exit_code", NULL, FT_INT, FF_READONLY | FF_NULLABLE, -1000, 1000,
                               NULL, NULL, 0, NULL,
                               "exit status (negative: killed by that signal)"},
    [F_WORKLOADS_PREEMPTIONS] = {"preemptions", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL,
                                 0, NULL, "times it was preempted"},
    [F_WORKLOADS_QUEUED_AFTER] =
        {"queued_after", NULL, FT_REF, FF_READONLY | FF_NULLABLE, 0, 0, NULL, "workloads", 0, NULL,
         "queued: the running workload it is queued behind in its cluster's own queue (Slurm), to"
         " start on that one's GPUs when it ends; null otherwise"},
    [F_WORKLOADS_IMPORTED] = {"imported", NULL, FT_BOOL, FF_READONLY | FF_FILTER, 0, 1, NULL, NULL,
                              0, NULL,
                              "imported as history (POST /v1/history): finished work of the past "
                              "that never ran here, shown as simulated"},
    [F_WORKLOADS_AFTER_ID] =
        {"after_id", NULL, FT_REF, FF_IMMUTABLE | FF_NULLABLE, 0, 0, NULL, "workloads", 0, NULL,
         "a dependency (as sbatch --dependency): it is not scheduled before this workload has "
         "ended; null for none"},
    [F_WORKLOADS_AFTER_OK] = {"after_ok", NULL, FT_BOOL, FF_IMMUTABLE, 0, 1, NULL, NULL, 0, NULL,
                              "with after_id: only once that one succeeded; if it ends otherwise "
                              "this one is cancelled, saying why"},
    [F_WORKLOADS_HELD] = {"held", NULL, FT_BOOL, FF_IMMUTABLE, 0, 1, NULL, NULL, 0, NULL,
                          "held in the queue, not scheduled until released (POST .../release); "
                          "true at submit submits it held; POST .../hold holds queued work"},
    [F_WORKLOADS_CREATED_AT] = {"created_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
                                "creation time (UTC)"},
    [F_WORKLOADS_UPDATED_AT] = {"updated_at", NULL, FT_TIME, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
                                "last change (UTC)"},
};
_Static_assert(ARRAY_SIZE(workload_fields) == F_WORKLOADS_COUNT_,
               "workload_fields and fields.h differ");

const struct resource_def model_workloads = {
    .name = "workloads",
    .table = "workloads",
    .singular = "workload",
    .fields = workload_fields,
    .n_fields = ARRAY_SIZE(workload_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_WORKLOADS_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_MEMBER, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "project_id and idempotency_key",
    .help = "work launched from a flavor: batch jobs and instances",
};

static const struct field_def allocation_fields[] = {
    [F_ALLOCATIONS_ID] = ID_FIELD,
    [F_ALLOCATIONS_WORKLOAD_ID] = {"workload_id", NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL,
                                   "workloads", 0, NULL, "the workload"},
    [F_ALLOCATIONS_PROJECT_ID] = {"project_id", NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL,
                                  "projects", 0, NULL, "its project"},
    [F_ALLOCATIONS_REPLICA] = {"replica", NULL, FT_INT, FF_READONLY, 0, 1000, NULL, NULL, 0, NULL,
                               "replica index"},
    [F_ALLOCATIONS_NODE_ID] = {"node_id", NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL,
                               "nodes", 0, NULL, "node"},
    [F_ALLOCATIONS_GPU_ID] = {"gpu_id", NULL, FT_REF, FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0,
                              NULL, "gpus", 0, NULL, "device; null for CPU-only work"},
    [F_ALLOCATIONS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF,
                                    FF_READONLY | FF_NULLABLE | FF_FILTER, 0, 0, NULL,
                                    "gpu-classes", 0, NULL, "class of the device"},
    [F_ALLOCATIONS_MILLI] = {"milli", NULL, FT_INT, FF_READONLY, 0, 1000, NULL, NULL, 0, NULL,
                             "share of the device held, in milli-GPU"},
    [F_ALLOCATIONS_PRIORITY_CLASS] = {"priority_class", NULL, FT_ENUM, FF_READONLY | FF_FILTER, 0,
                                      0, held_class_values, NULL, 0, NULL,
                                      "what the work ran as: owned (P1) or opportunistic (P2)"},
    [F_ALLOCATIONS_BORROWED] = {"borrowed", NULL, FT_BOOL, FF_READONLY, 0, 1, NULL, NULL, 0, NULL,
                                "admitted beyond the project's guarantee"},
    [F_ALLOCATIONS_STARTED_MS] = {"started_ms", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL,
                                  0, NULL, "start, ms since the epoch"},
    [F_ALLOCATIONS_ENDED_MS] = {"ended_ms", NULL, FT_INT, FF_READONLY | FF_NULLABLE, 0, INT64_MAX,
                                NULL, NULL, 0, NULL, "end, ms since the epoch; null while held"},
    [F_ALLOCATIONS_END_REASON] = {"end_reason", NULL, FT_STRING, FF_READONLY, 0, 64, NULL, NULL, 0,
                                  "", "succeeded, failed, cancelled, preempted, lost"},
};
_Static_assert(ARRAY_SIZE(allocation_fields) == F_ALLOCATIONS_COUNT_,
               "allocation_fields and fields.h differ");

const struct resource_def model_allocations = {
    .name = "allocations",
    .table = "allocations",
    .singular = "allocation",
    .fields = allocation_fields,
    .n_fields = ARRAY_SIZE(allocation_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_ALLOCATIONS_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "id",
    .help = "intervals during which a workload held a device: who used which GPU when",
};

static const struct field_def event_fields[] = {
    [F_EVENTS_ID] = ID_FIELD,
    [F_EVENTS_WORKLOAD_ID] = {"workload_id", NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL,
                              "workloads", 0, NULL, "the workload"},
    [F_EVENTS_PROJECT_ID] = {"project_id", NULL, FT_REF, FF_READONLY | FF_FILTER, 0, 0, NULL,
                             "projects", 0, NULL, "its project"},
    [F_EVENTS_AT_MS] = {"at_ms", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL,
                        "when, ms since the epoch"},
    [F_EVENTS_TYPE] =
        {"type", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 32, NULL, NULL, 0, NULL,
         "submitted, admitted, preempting, preempted, requeued, succeeded, failed, cancelled, "
         "logs-removed, devices"},
    [F_EVENTS_MESSAGE] = {"message", NULL, FT_STRING, FF_READONLY, 0, 1024, NULL, NULL, 0, NULL,
                          "what happened"},
};
_Static_assert(ARRAY_SIZE(event_fields) == F_EVENTS_COUNT_, "event_fields and fields.h differ");

const struct resource_def model_events = {
    .name = "events",
    .table = "workload_events",
    .singular = "event",
    .fields = event_fields,
    .n_fields = ARRAY_SIZE(event_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_EVENTS_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "id",
    .help = "every state change and decision about a workload",
};

static const struct field_def preemption_fields[] = {
    [F_PREEMPTIONS_ID] = ID_FIELD,
    [F_PREEMPTIONS_PREEMPTOR_ID] =
        {"preemptor_id", NULL, FT_REF, FF_READONLY | FF_FILTER | FF_NULLABLE, 0, 0, NULL,
         "workloads", 0, NULL,
         "the workload capacity was reclaimed for; null to a victim's reader who may not see it"},
    [F_PREEMPTIONS_PROJECT_ID] =
        {"project_id", NULL, FT_REF, FF_READONLY | FF_FILTER | FF_NULLABLE, 0, 0, NULL, "projects",
         0, NULL, "the preemptor's project; null to a victim's reader who may not see it"},
    [F_PREEMPTIONS_RULE] = {"rule", NULL, FT_STRING, FF_READONLY | FF_FILTER, 0, 64, NULL, NULL, 0,
                            NULL, "why: reclaim (owned work takes back its guarantee)"},
    [F_PREEMPTIONS_GPU_CLASS_ID] = {"gpu_class_id", NULL, FT_REF, FF_READONLY | FF_NULLABLE, 0, 0,
                                    NULL, "gpu-classes", 0, NULL, "class reclaimed"},
    [F_PREEMPTIONS_VICTIMS] = {"victims", NULL, FT_JSON, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
                               "[{workload_id, project_id, gpu_milli, lost_ms}]; a victim the "
                               "reader may not see has null "
                               "ids and redacted: true"},
    [F_PREEMPTIONS_QUOTA_BEFORE] =
        {"quota_before", NULL, FT_JSON, FF_READONLY, 0, 0, NULL, NULL, 0, NULL,
         "[{project_id, used, guaranteed, limit}] before the decision (milli-GPU)"},
    [F_PREEMPTIONS_QUOTA_AFTER] = {"quota_after", NULL, FT_JSON, FF_READONLY, 0, 0, NULL, NULL, 0,
                                   NULL, "the same once the victims have released"},
    [F_PREEMPTIONS_GPU_MILLI] = {"gpu_milli", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL,
                                 0, NULL, "capacity reclaimed"},
    [F_PREEMPTIONS_GRACE_MS] = {"grace_ms", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0,
                                NULL, "grace given to the victims"},
    [F_PREEMPTIONS_DECIDED_MS] = {"decided_ms", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL,
                                  0, NULL, "decision time, ms since the epoch"},
    [F_PREEMPTIONS_RELEASED_MS] = {"released_ms", NULL, FT_INT, FF_READONLY | FF_NULLABLE, 0,
                                   INT64_MAX, NULL, NULL, 0, NULL,
                                   "when the last victim released its GPUs"},
    [F_PREEMPTIONS_RECLAIM_MS] =
        {"reclaim_ms", NULL, FT_INT, FF_READONLY | FF_NULLABLE, 0, INT64_MAX, NULL, NULL, 0, NULL,
         "released_ms - decided_ms: how long the owner waited for its capacity"},
    [F_PREEMPTIONS_GPU_MS_LOST] =
        {"gpu_ms_lost", NULL, FT_INT, FF_READONLY, 0, INT64_MAX, NULL, NULL, 0, NULL,
         "work lost by the victims: milli-GPU x ms since their last start or checkpoint, / 1000"},
    [F_PREEMPTIONS_FIRST_TRY_MS] = {"first_try_ms", NULL, FT_INT, FF_READONLY | FF_NULLABLE, 0,
                                    INT64_MAX, NULL, NULL, 0, NULL,
                                    "when the preemptor had its first try at the capacity after "
                                    "the release (the next pass, where it goes first); null "
                                    "until then"},
};
_Static_assert(ARRAY_SIZE(preemption_fields) == F_PREEMPTIONS_COUNT_,
               "preemption_fields and fields.h differ");

const struct resource_def model_preemptions = {
    .name = "preemptions",
    .table = "preemptions",
    .singular = "preemption",
    .fields = preemption_fields,
    .n_fields = ARRAY_SIZE(preemption_fields),
    .scope = SCOPE_PROJECT,
    .scope_field = F_PREEMPTIONS_PROJECT_ID,
    .need = {ROLE_VIEWER, ROLE_NOBODY, ROLE_NOBODY, ROLE_NOBODY},
    .unique_desc = "id",
    .help = "the preemption ledger: preemptor, victims, rule, quota before and after, times",
};
