/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fleet.c: the fleet as backends see it, brought into the store through
 * the table's optional entries, whatever the backend:
 *  - discovery (ops->discover): nodes and their GPUs, read every
 *    b->discover_ms (and told when the fleet was reloaded). A node the
 *    store lacks is added; a node's state follows the report's unless the
 *    report keeps the admin's; GPUs are added (counted: the missing
 *    indices; identified: by UUID, updated, those not reported turn health
 *    "down"); a node a complete report no longer lists is marked down,
 *    never deleted (history points at it). Any change rebuilds the
 *    scheduler's fleet.
 *  - device reports (ops->take_devices): allocations moved to the GPUs the
 *    backend really gave.
 *  - the start-up sweep (ops->sweep).
 */
#include "engine/engine-int.h"

#include <jansson.h>

#include "base/buf.h"
#include "base/log.h"

/*
 * Setters by field name, for the few places where the resource is a
 * parameter (the time stamps of any row, a named node or GPU field); every
 * fixed field elsewhere is set by its F_* index.
 */
static void set_i(const struct resource_def *def, struct row *r, const char *f, int64_t i)
{
    row_set_int(r, model_field_index(def, f), i);
}

static void set_s(const struct resource_def *def, struct arena *a, struct row *r, const char *f,
                  const char *s)
{
    row_set_str(r, a, model_field_index(def, f), s);
}

/* A log line's message about a backend's kind: "local GPU added". */
static const char *kind_msg(char *buf, size_t size, const char *kind, const char *what)
{
    snprintf(buf, size, "%s %s", kind, what);
    return buf;
}

/* A new row of def from JSON (defaults applied, times set); 0 or an error. */
static int new_row(const struct resource_def *def, json_t *j, struct arena *a, int64_t now,
                   struct row *ret, struct error_info *ei)
{
    int rc = model_decode(def, j, DECODE_CREATE, a, ret, ei);
    json_decref(j);
    if (rc < 0)
        return rc;
    if (model_field_index(def, "created_at") >= 0)
        set_i(def, ret, "created_at", now / 1000);
    if (model_field_index(def, "updated_at") >= 0)
        set_i(def, ret, "updated_at", now / 1000);
    return model_check_row(def, ret, ei);
}

/*
 * The id of the GPU class called name, made when missing; model and
 * memory_mib (NULL and 0 when unknown) describe a class made from what a
 * collector read.
 */
static int class_id_of(struct engine *e, const char *name, const char *model, int64_t memory_mib,
                       struct arena *a, int64_t now, int64_t *ret, struct error_info *ei)
{
    struct store_filter f;
    struct row *rows, r;
    size_t n;
    json_t *j;
    int rc;

    store_filter_init(&f);
    store_filter_eq_str(&f, F_GPU_CLASSES_NAME, name);
    rc = store_list(e->db, &model_gpu_classes, &f, a, &rows, &n, ei);
    if (rc >= 0 && n) {
        *ret = model_row_id(&rows[0]);
        return 0;
    }
    if (rc < 0)
        return rc;
    j = json_pack("{s:s}", "name", name);
    if (model && *model) {
        json_object_set_new(j, "model", json_string(model));
        json_object_set_new(j, "vendor", json_string("nvidia"));
    }
    if (memory_mib > 0)
        json_object_set_new(j, "memory_mib", json_integer(memory_mib));
    rc = new_row(&model_gpu_classes, j, a, now, &r, ei);
    return rc < 0 ? rc : store_insert(e->db, &model_gpu_classes, &r, ret, ei);
}

/* Sets a row's text field (a state, a health) and writes it; 1 (one row changed) or an error. */
static int set_state(struct engine *e, const struct resource_def *def, struct row *r,
                     const char *field, const char *value, struct arena *a, int64_t now,
                     struct error_info *ei)
{
    int rc;
    set_s(def, a, r, field, value);
    set_i(def, r, "updated_at", now / 1000);
    rc = store_update(e->db, def, model_row_id(r), r, ei);
    return rc < 0 ? rc : 1;
}

/*
 * The audit entry of a node discovery made or changed: by the daemon itself
 * (actor "system", request id "discovery"), before and after, in the
 * discovery's transaction. So the trail says when a backend found a node or
 * saw it go, and the what-if replays the fleet as it was.
 */
static int audit_node(struct engine *e, const char *action, int64_t id, const struct row *before,
                      const struct row *after, struct arena *a, int64_t now, struct error_info *ei)
{
    struct store_audit_entry en = {.time_s = now / 1000,
                                   .action = action,
                                   .request_id = "discovery",
                                   .def = &model_nodes,
                                   .object_id = id,
                                   .before = before,
                                   .after = after};
    return store_audit(e->db, &en, a, ei);
}

/* A node's state set by discovery, and audited; 1 (a row changed) or an error. */
static int set_node_state(struct engine *e, struct row *r, const char *state, struct arena *a,
                          int64_t now, struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes;
    struct row before = model_row_new(nd, a);
    int rc;

    memcpy(before.v, r->v, nd->n_fields * sizeof(*r->v)); /* set_s leaves the old strings be */
    rc = set_state(e, nd, r, "state", state, a, now, ei);
    if (rc >= 0)
        rc = audit_node(e, "update", model_row_id(r), &before, r, a, now, ei);
    return rc < 0 ? rc : 1;
}

/*
 * The node called name among a cluster's nodes (rows), added with state
 * when missing (cpu_milli, mem_mib < 0: not set); a listed node whose state
 * differs takes state unless keep_state. *ret_id is its id. Returns how
 * many rows changed (0 or 1), or an error.
 */
static int sync_node(struct engine *e, int64_t cluster_id, struct row *rows, size_t n_rows,
                     const char *name, int64_t cpu_milli, int64_t mem_mib, const char *state,
                     bool keep_state, const char *backend, const char *reason, struct arena *a,
                     int64_t now, int64_t *ret_id, struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes;
    struct row *have = NULL, r;
    json_t *j;
    int rc;

    for (size_t i = 0; i < n_rows && !have; i++)
        have = strcmp(row_str(&rows[i], F_NODES_NAME), name) == 0 ? &rows[i] : NULL;
    if (have) {
        *ret_id = model_row_id(have);
        if (keep_state || strcmp(row_str(have, F_NODES_STATE), state) == 0)
            return 0;
        log_info("node state", "backend", backend, "node", name, "state", state, "reason", reason);
        return set_node_state(e, have, state, a, now, ei);
    }
    j = json_pack("{s:I,s:s,s:s}", "cluster_id", (json_int_t)cluster_id, "name", name, "state",
                  state);
    if (cpu_milli >= 0)
        json_object_set_new(j, "cpu_milli", json_integer(cpu_milli));
    if (mem_mib >= 0)
        json_object_set_new(j, "memory_mib", json_integer(mem_mib));
    rc = new_row(nd, j, a, now, &r, ei);
    if (rc >= 0)
        rc = store_insert(e->db, nd, &r, ret_id, ei);
    if (rc >= 0) {
        row_set_int(&r, F_NODES_ID, *ret_id);
        rc = audit_node(e, "create", *ret_id, NULL, &r, a, now, ei);
    }
    if (rc >= 0)
        log_info("node added", "backend", backend, "node", name, "state", state);
    return rc < 0 ? rc : 1;
}

/* ---- identified GPUs ---- */

/* Index of the row of gpus that is f: same UUID, or same index when f has no UUID. */
static struct row *gpu_match(struct row *gpus, size_t n, const struct backend_gpu_report *f)
{
    for (size_t i = 0; i < n; i++) {
        if (*f->uuid && strcmp(row_str(&gpus[i], F_GPUS_UUID), f->uuid) == 0)
            return &gpus[i];
    }
    /* a row made without a UUID (by hand, or declared) at the same index takes it on */
    for (size_t i = 0; i < n; i++) {
        if (row_int(&gpus[i], F_GPUS_INDEX) == f->index &&
            (!*f->uuid || !*row_str(&gpus[i], F_GPUS_UUID)))
            return &gpus[i];
    }
    return NULL;
}

static bool index_used(const struct row *gpus, size_t n, int32_t index)
{
    for (size_t k = 0; k < n; k++) {
        if (row_int(&gpus[k], F_GPUS_INDEX) == index)
            return true;
    }
    return false;
}

/*
 * An index no row of gpus has: want when free, else the lowest free one
 * (a new GPU at the index of one that went away: CUDA numbers devices
 * anew); -1 when none is. Work is pinned by UUID, so the number is only a
 * label then.
 */
static int32_t free_index(const struct row *gpus, size_t n, int32_t want, int32_t from)
{
    if (want >= from && want < 1024 && !index_used(gpus, n, want))
        return want;
    for (int32_t i = from; i < 1024; i++) {
        if (!index_used(gpus, n, i))
            return i;
    }
    return -1;
}

/* Updates row r to describe f; how many rows changed (0 or 1), or an error. */
static int gpu_update(struct engine *e, const char *kind, int64_t class_id, struct row *r,
                      const struct backend_gpu_report *f, struct arena *a, int64_t now,
                      struct error_info *ei)
{
    const struct resource_def *gd = &model_gpus;
    const struct value *mig = row_get(r, F_GPUS_MIG_MODE);
    const char *health, *want;
    bool change = false;
    int rc;

    if (*f->uuid && strcmp(row_str(r, F_GPUS_UUID), f->uuid) != 0) {
        row_set_str(r, a, F_GPUS_UUID, f->uuid);
        change = true;
    }
    if (row_int(r, F_GPUS_GPU_CLASS_ID) != class_id) {
        row_set_int(r, F_GPUS_GPU_CLASS_ID, class_id);
        change = true;
    }
    if (f->memory_mib > 0 && row_int(r, F_GPUS_MEMORY_MIB) != f->memory_mib) {
        row_set_int(r, F_GPUS_MEMORY_MIB, f->memory_mib);
        change = true;
    }
    if (f->mig_mode >= 0 && (mig->null || mig->i != f->mig_mode)) {
        row_set_int(r, F_GPUS_MIG_MODE, f->mig_mode);
        change = true;
    }
    /* down (not reported), mig (split) and ok follow the readings; failed, degraded stay */
    health = row_str(r, F_GPUS_HEALTH);
    want = f->split ? "mig" : "ok";
    if ((strcmp(health, "down") == 0 || strcmp(health, "ok") == 0 || strcmp(health, "mig") == 0) &&
        strcmp(health, want) != 0) {
        char idx[16], msg[128];
        snprintf(idx, sizeof(idx), "%d", f->index);
        if (f->split)
            log_info(kind_msg(msg, sizeof(msg), kind,
                              "GPU split into MIG instances; they are scheduled instead"),
                     "uuid", f->uuid, "index", idx);
        else if (strcmp(health, "mig") == 0)
            log_info(
                kind_msg(msg, sizeof(msg), kind, "GPU has no MIG instances; scheduled whole again"),
                "uuid", f->uuid, "index", idx);
        else
            log_info(kind_msg(msg, sizeof(msg), kind, "GPU reported again"), "uuid", f->uuid,
                     "index", idx);
        row_set_str(r, a, F_GPUS_HEALTH, want);
        change = true;
    }
    if (!change)
        return 0;
    row_set_int(r, F_GPUS_UPDATED_AT, now / 1000);
    rc = store_update(e->db, gd, model_row_id(r), r, ei);
    return rc < 0 ? rc : 1;
}

/* Counted GPUs (struct backend_node_report): the indices the store lacks are added. */
static int apply_counted(struct engine *e, int64_t node_id, const struct backend_node_report *sn,
                         struct arena *a, int64_t now, struct error_info *ei)
{
    const struct resource_def *gd = &model_gpus;
    struct store_filter f;
    struct row *gpus, r;
    size_t n_gpus;
    int64_t class_id = 0;
    int changed = 0, rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_GPUS_NODE_ID, node_id);
    if ((rc = store_list_all(e->db, gd, &f, a, &gpus, &n_gpus, ei)) < 0 ||
        (int32_t)n_gpus >= sn->n_counted ||
        (rc = class_id_of(e, sn->counted_class, NULL, 0, a, now, &class_id, ei)) < 0)
        return rc < 0 ? rc : 0;
    for (int32_t i = 0; rc >= 0 && i < sn->n_counted; i++) {
        bool exists = false;
        int64_t id;
        for (size_t g = 0; g < n_gpus; g++)
            exists |= row_int(&gpus[g], F_GPUS_INDEX) == i;
        if (exists)
            continue;
        rc = new_row(gd,
                     json_pack("{s:I,s:i,s:I}", "node_id", (json_int_t)node_id, "index", i,
                               "gpu_class_id", (json_int_t)class_id),
                     a, now, &r, ei);
        if (rc >= 0)
            rc = store_insert(e->db, gd, &r, &id, ei);
        changed++;
    }
    return rc < 0 ? rc : changed;
}

/* A GPU row for fg, found on no row of the node; how many rows changed (0 or 1), or an error. */
static int add_identified(struct engine *e, const char *kind, int64_t node_id, const char *node,
                          const struct backend_gpu_report *fg, int64_t class_id, struct row *gpus,
                          size_t n_gpus, struct arena *a, int64_t now, struct error_info *ei)
{
    const struct resource_def *gd = &model_gpus;
    struct store_filter f;
    char msg[128];
    int64_t id;
    int32_t index;
    json_t *j;
    int rc;

    if (*fg->uuid) { /* UUIDs are unique: one held elsewhere (another cluster) stays there */
        struct row *other;
        size_t n_other;
        store_filter_init(&f);
        store_filter_eq_str(&f, F_GPUS_UUID, fg->uuid);
        if ((rc = store_list(e->db, gd, &f, a, &other, &n_other, ei)) < 0)
            return rc;
        if (n_other) {
            log_debug(kind_msg(msg, sizeof(msg), kind, "GPU already in another node; left there"),
                      "uuid", fg->uuid);
            return 0;
        }
    }
    if ((index = free_index(gpus, n_gpus, fg->index, fg->min_index)) < 0)
        return 0;
    j = json_pack("{s:I,s:i,s:I}", "node_id", (json_int_t)node_id, "index", index, "gpu_class_id",
                  (json_int_t)class_id);
    if (*fg->uuid)
        json_object_set_new(j, "uuid", json_string(fg->uuid));
    if (fg->memory_mib > 0)
        json_object_set_new(j, "memory_mib", json_integer(fg->memory_mib));
    if (fg->mig_mode >= 0)
        json_object_set_new(j, "mig_mode", json_boolean(fg->mig_mode));
    if (fg->split)
        json_object_set_new(j, "health", json_string("mig"));
    rc = new_row(gd, j, a, now, &gpus[n_gpus], ei);
    if (rc >= 0)
        rc = store_insert(e->db, gd, &gpus[n_gpus], &id, ei);
    if (rc < 0)
        return rc;
    /* One line per GPU only at debug: a fleet of hundreds says it per node (apply_identified). */
    log_debug(kind_msg(msg, sizeof(msg), kind, "GPU added"), "node", node, "uuid", fg->uuid,
              "class", fg->cls);
    return 1;
}

/* Identified GPUs: the node's complete list; how many rows changed, or an error. */
static int apply_identified(struct engine *e, const char *kind, int64_t node_id,
                            const struct backend_node_report *rn, struct arena *a, int64_t now,
                            struct error_info *ei)
{
    const struct resource_def *gd = &model_gpus;
    struct store_filter f;
    struct row *listed, *gpus;
    size_t n_gpus;
    bool *seen;
    char msg[128];
    int changed = 0, added = 0, rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_GPUS_NODE_ID, node_id);
    if ((rc = store_list_all(e->db, gd, &f, a, &listed, &n_gpus, ei)) < 0)
        return rc;
    /* room for the GPUs added here, so later ones do not take their index */
    gpus = arena_calloc(a, n_gpus + rn->n_gpus + 1, sizeof(*gpus));
    if (n_gpus)
        memcpy(gpus, listed, n_gpus * sizeof(*gpus));
    seen = arena_calloc(a, n_gpus + rn->n_gpus + 1, sizeof(*seen));
    for (size_t k = 0; rc >= 0 && k < rn->n_gpus; k++) {
        const struct backend_gpu_report *fg = &rn->gpus[k];
        struct row *have = gpu_match(gpus, n_gpus, fg);
        int64_t class_id;

        if ((rc = class_id_of(e, fg->cls, fg->model, fg->memory_mib, a, now, &class_id, ei)) < 0)
            break;
        if (have) {
            seen[have - gpus] = true;
            if ((rc = gpu_update(e, kind, class_id, have, fg, a, now, ei)) > 0)
                changed += rc;
            continue;
        }
        rc = add_identified(e, kind, node_id, rn->name, fg, class_id, gpus, n_gpus, a, now, ei);
        if (rc > 0) {
            changed++;
            added++;
            seen[n_gpus++] = true;
        }
    }
    if (added > 0) {
        char count[16];
        snprintf(count, sizeof(count), "%d", added);
        log_info(kind_msg(msg, sizeof(msg), kind, "GPUs added"), "node", rn->name, "gpus", count);
    }
    /* GPUs of this node no longer reported: down, kept. */
    for (size_t i = 0; rc >= 0 && i < n_gpus; i++) {
        const char *health = row_str(&gpus[i], F_GPUS_HEALTH);
        if (seen[i] || strcmp(health, "down") == 0 || strcmp(health, "failed") == 0)
            continue;
        log_warn(kind_msg(msg, sizeof(msg), kind, "GPU no longer reported; marked down"), "node",
                 rn->name, "uuid", row_str(&gpus[i], F_GPUS_UUID));
        rc = set_state(e, gd, &gpus[i], "health", "down", a, now, ei);
        changed++;
    }
    return rc < 0 ? rc : changed;
}

/* ---- discovery ---- */

/* Brings one cluster's report into the store; returns how many rows changed. */
static int apply_report(struct engine *e, const struct backend *b,
                        const struct backend_fleet_report *rep, int64_t now, struct arena *a,
                        struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes;
    const char *kind = b->ops->name;
    struct store_filter f;
    struct row *rows;
    size_t n_rows;
    int changed = 0, rc;

    store_filter_init(&f);
    store_filter_eq_int(&f, F_NODES_CLUSTER_ID, b->cluster_id);
    if ((rc = store_list_all(e->db, nd, &f, a, &rows, &n_rows, ei)) < 0)
        return rc;
    for (size_t k = 0; rc >= 0 && k < rep->n_nodes; k++) {
        const struct backend_node_report *rn = &rep->nodes[k];
        int64_t node_id = 0;
        rc = sync_node(e, b->cluster_id, rows, n_rows, rn->name, rn->cpu_milli, rn->mem_mib,
                       rn->state, rn->keep_state, kind, rn->reason, a, now, &node_id, ei);
        if (rc > 0)
            changed += rc;
        if (rc < 0)
            continue;
        if (rn->gpus)
            rc = apply_identified(e, kind, node_id, rn, a, now, ei);
        else if (rn->n_counted > 0 && model_valid_name(rn->counted_class, 63))
            rc = apply_counted(e, node_id, rn, a, now, ei);
        if (rc > 0)
            changed += rc;
    }
    /* Nodes a complete report no longer lists: down, kept. */
    for (size_t i = 0; rc >= 0 && rep->complete && i < n_rows; i++) {
        bool listed = false;
        for (size_t k = 0; k < rep->n_nodes; k++)
            listed |= strcmp(row_str(&rows[i], F_NODES_NAME), rep->nodes[k].name) == 0;
        if (listed || strcmp(row_str(&rows[i], F_NODES_STATE), "down") == 0)
            continue;
        rc = set_node_state(e, &rows[i], "down", a, now, ei);
        changed++;
    }
    return rc < 0 ? rc : changed;
}

/* One backend's discovery, applied in one transaction. */
static void discover_one(struct engine *e, struct backend *b, int64_t now)
{
    struct backend_fleet_report rep = {0};
    struct error_info ei = {0};
    struct arena a;
    int rc;

    arena_init(&a);
    rc = b->ops->discover(b, now, e->fleet_loaded, &a, &rep, &ei);
    if (rc < 0)
        log_warn("could not read the cluster's nodes; keeping what the store has", "backend",
                 b->ops->name, "error", ei.message);
    if (rc <= 0) {
        arena_release(&a);
        return;
    }
    rc = store_begin(e->db, &ei);
    if (rc >= 0)
        rc = apply_report(e, b, &rep, now, &a, &ei);
    if (rc >= 0 && store_commit(e->db, &ei) >= 0) {
        if (rc > 0)
            e->reload = true; /* the fleet changed: rebuild on the next round */
    } else {
        store_rollback(e->db);
        log_error("could not record the cluster's nodes", "backend", b->ops->name, "error",
                  ei.message);
    }
    arena_release(&a);
}

void engine__discover(struct engine *e, int64_t now)
{
    for (size_t i = 0; i < e->n_backends; i++) {
        struct cluster_backend *cb = &e->backends[i];
        if (!cb->b->ops->discover || now - cb->discovered_ms < cb->b->discover_ms)
            continue;
        cb->discovered_ms = now;
        discover_one(e, cb->b, now);
    }
    e->fleet_loaded = false;
}

/* ---- device reports ---- */

/* The node of a device report and the ids of the GPUs given; NULL (said) when unknown. */
static const struct node_info *given_gpus(struct engine *e, const struct backend *b,
                                          const struct backend_devices *d, const char *wid,
                                          int64_t *given)
{
    const struct node_info *node = NULL;
    const char *kind = b->ops->name;
    int64_t cluster_id = b->cluster_id;
    char msg[128];

    for (size_t i = 0; i < e->n_nodes && !node; i++) {
        if (e->nodes[i].cluster_id == cluster_id && strcmp(e->nodes[i].name, d->node) == 0)
            node = &e->nodes[i];
    }
    if (!node) {
        log_warn(kind_msg(msg, sizeof(msg), kind, "devices: node unknown; allocation kept"),
                 "workload", wid, "node", d->node);
        return NULL;
    }
    for (size_t k = 0; k < d->n_indices; k++) {
        const struct gpu_info *g = NULL;
        for (size_t i = 0; i < e->n_gpus && !g; i++) {
            if (e->gpus[i].node_id == node->id && e->gpus[i].index == d->indices[k])
                g = &e->gpus[i];
        }
        if (!g) {
            log_warn(kind_msg(msg, sizeof(msg), kind,
                              "devices: a GPU index the store lacks was given; allocation kept"),
                     "workload", wid, "node", d->node);
            return NULL;
        }
        given[k] = g->id;
    }
    return node;
}

/*
 * The workload's open allocations on the node, when they can follow the
 * report (whole GPUs, as many as given); *ret_n 0 (said) when they stay.
 */
static int devices_mine(struct engine *e, const struct backend *b, const struct backend_devices *d,
                        const struct node_info *node, const char *wid, struct arena *a,
                        struct row **ret, size_t *ret_n, struct error_info *ei)
{
    const struct resource_def *ad = &model_allocations;
    const char *skip = NULL;
    struct store_filter f;
    struct row *mine;
    size_t n_mine;
    char msg[128];
    int rc;

    *ret_n = 0;
    store_filter_init(&f);
    store_filter_eq_int(&f, F_ALLOCATIONS_WORKLOAD_ID, d->workload_id);
    store_filter_eq_int(&f, F_ALLOCATIONS_NODE_ID, node->id);
    store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
    rc = store_list_all(e->db, ad, &f, a, &mine, &n_mine, ei);
    if (rc < 0 || n_mine == 0)
        return rc; /* ended meanwhile, or not on that node */
    for (size_t i = 0; i < n_mine && !skip; i++) {
        const struct value *g = row_get(&mine[i], F_ALLOCATIONS_GPU_ID);
        if (g->null || row_int(&mine[i], F_ALLOCATIONS_MILLI) < 1000)
            skip = "a share or a GPU-less allocation";
    }
    if (!skip && n_mine != d->n_indices)
        skip = "another number of GPUs was given";
    if (skip) {
        log_warn(kind_msg(msg, sizeof(msg), b->ops->name, "devices: allocation kept"), "workload",
                 wid, "node", d->node, "why", skip);
        return 0;
    }
    *ret = mine;
    *ret_n = n_mine;
    return 0;
}

/*
 * A backend that picks which of a node's GPUs work gets (Slurm sets
 * CUDA_VISIBLE_DEVICES itself) may give others than the scheduler's GPU
 * rows: when something gpuaas does not know holds a GPU (a job submitted
 * to Slurm directly). The backend tells which indices it gave
 * (ops->take_devices, once per job and node); here each of the workload's
 * open allocations on that node whose GPU it did not give moves to one it
 * did, in one transaction with a "devices" event. When that GPU has an
 * open whole-GPU allocation of other work (which the backend must then
 * have put elsewhere), the two rows swap GPUs: the backend's view is
 * consistent, so swaps converge as the other jobs' reports come. Shares (milli < 1000), GPUs of
 * another class, a count that differs and unknown nodes or indices are skipped with a log line.
 * Returns how many rows moved (the caller then rebuilds the scheduler, which holds GPU ids: rare,
 * never per job), 0, or an error.
 */
static int reconcile_devices(struct engine *e, const struct backend *b,
                             const struct backend_devices *d, int64_t now, struct arena *a,
                             struct error_info *ei)
{
    const struct resource_def *ad = &model_allocations;
    const struct node_info *node = NULL;
    const char *kind = b->ops->name, *title = engine__title(b);
    int64_t given[BACKEND_MAX_NODE_DEVICES], project = 0;
    struct store_filter f;
    struct row *mine, *moved[BACKEND_MAX_NODE_DEVICES];
    size_t n_mine, n_moved = 0;
    struct buf was, got;
    const char *skip = NULL;
    char wid[24], msg[128];
    int rc;

    snprintf(wid, sizeof(wid), "%" PRId64, d->workload_id);
    if (!(node = given_gpus(e, b, d, wid, given)))
        return 0;
    rc = devices_mine(e, b, d, node, wid, a, &mine, &n_mine, ei);
    if (rc < 0 || n_mine == 0)
        return rc;

    /* Mine on a GPU not given -> a given GPU none of mine is on. */
    buf_init(&was, 4096);
    buf_init(&got, 4096);
    for (size_t i = 0; i < n_mine && rc >= 0 && !skip; i++) {
        int64_t old = row_int(&mine[i], F_ALLOCATIONS_GPU_ID), target = 0;
        const struct gpu_info *og = FIND_BY_ID(e->gpus, e->n_gpus, old), *tg;
        struct row *others;
        size_t n_others;
        bool ok = false;

        for (size_t k = 0; k < d->n_indices && !ok; k++)
            ok = given[k] == old;
        if (ok)
            continue;
        for (size_t k = 0; k < d->n_indices && !target; k++) {
            bool taken = false;
            for (size_t j = 0; j < n_mine; j++)
                taken |= row_int(&mine[j], F_ALLOCATIONS_GPU_ID) == given[k];
            for (size_t j = 0; j < n_moved; j++)
                taken |= row_int(moved[j], F_ALLOCATIONS_GPU_ID) == given[k];
            if (!taken)
                target = given[k];
        }
        tg = target ? FIND_BY_ID(e->gpus, e->n_gpus, target) : NULL;
        if (!og || !tg) {
            skip = "its allocations do not match the GPUs given one to one";
            break;
        }
        if (og->class_id != tg->class_id) {
            skip = "the GPUs are of different classes";
            break;
        }
        store_filter_init(&f);
        f.limit = 100;
        store_filter_eq_int(&f, F_ALLOCATIONS_GPU_ID, target);
        store_filter_eq_null(&f, F_ALLOCATIONS_ENDED_MS);
        rc = store_list(e->db, ad, &f, a, &others, &n_others, ei);
        if (rc < 0)
            break;
        if (n_others > 1 || (n_others == 1 && row_int(&others[0], F_ALLOCATIONS_MILLI) < 1000)) {
            skip = "the GPU given is shared by other work";
            break;
        }
        if (n_others == 1) {
            /* other work's row on the GPU given to us takes ours; its own report fixes it */
            row_set_int(&others[0], F_ALLOCATIONS_GPU_ID, old);
            rc = store_update(e->db, ad, model_row_id(&others[0]), &others[0], ei);
            if (rc >= 0)
                log_info(kind_msg(msg, sizeof(msg), kind, "devices: allocations swapped"),
                         "workload", wid, "node", d->node);
        }
        row_set_int(&mine[i], F_ALLOCATIONS_GPU_ID, target);
        if (rc >= 0)
            rc = store_update(e->db, ad, model_row_id(&mine[i]), &mine[i], ei);
        moved[n_moved++] = &mine[i];
        buf_printf(&was, "%s%d", was.len ? "," : "", (int)og->index);
        buf_printf(&got, "%s%d", got.len ? "," : "", (int)tg->index);
        project = row_int(&mine[i], F_ALLOCATIONS_PROJECT_ID);
    }
    if (rc >= 0 && skip) {
        log_warn(kind_msg(msg, sizeof(msg), kind, "devices: allocation kept"), "workload", wid,
                 "node", d->node, "why", skip);
        rc = ERR_CONFLICT; /* roll back what moved */
        errinfo_set(ei, rc, NULL, "%s", skip);
    }
    if (rc >= 0 && n_moved > 0) {
        char *text = arena_printf(a, "%s gave GPUs %s of %s, not %s: allocation moved", title,
                                  got.data, d->node, was.data);
        rc = engine__add_event(e, a, d->workload_id, project, now, "devices", text, ei);
        if (rc >= 0)
            log_info(kind_msg(msg, sizeof(msg), kind, "devices: allocation moved"), "workload", wid,
                     "node", d->node, "gpus", got.data, "was", was.data);
    }
    buf_release(&was);
    buf_release(&got);
    return rc < 0 ? rc : (int)n_moved;
}

/* Takes backends' device reports and reconciles allocations; rebuilds on a move. */
void engine__take_devices(struct engine *e, int64_t now)
{
    bool moved = false;

    for (size_t b = 0; b < e->n_backends; b++) {
        struct backend *be = e->backends[b].b;
        struct backend_devices devs[8];
        size_t n;
        if (!be->ops->take_devices)
            continue;
        while ((n = be->ops->take_devices(be, devs, ARRAY_SIZE(devs))) > 0) {
            for (size_t i = 0; i < n; i++) {
                struct error_info ei = {0};
                struct arena a;
                int rc;
                arena_init(&a);
                rc = store_begin(e->db, &ei);
                if (rc >= 0)
                    rc = reconcile_devices(e, be, &devs[i], now, &a, &ei);
                if (rc >= 0) {
                    /* A failed commit has rolled back. */
                    if (store_commit(e->db, &ei) >= 0)
                        moved |= rc > 0;
                    else
                        log_error("could not reconcile a backend's devices", "error", ei.message);
                } else {
                    store_rollback(e->db);
                    if (ei.code != ERR_CONFLICT)
                        log_error("could not reconcile a backend's devices", "error", ei.message);
                }
                arena_release(&a);
            }
        }
    }
    if (moved)
        engine__rebuild(e, "allocations moved to the devices backends gave");
}

/* ---- the start-up sweep ---- */

/*
 * At start, after every workload's work was adopted: work of this daemon
 * that no workload claims (left by a crash between a launch or stop and
 * its record) is ended by its backend before anything is launched again.
 */
void engine__sweep(struct engine *e)
{
    for (size_t i = 0; i < e->n_backends; i++) {
        struct backend *b = e->backends[i].b;
        char cluster[24], count[24], first[24], msg[160];
        int64_t ids[1];
        size_t n;
        if (!b->ops->sweep)
            continue;
        snprintf(cluster, sizeof(cluster), "%" PRId64, e->backends[i].cluster_id);
        if (b->ops->sweep(b, ids, ARRAY_SIZE(ids), &n) < 0) {
            snprintf(msg, sizeof(msg), "could not look for %s jobs no workload claims",
                     engine__title(b));
            log_warn(msg, "cluster", cluster);
            continue;
        }
        if (n == 0)
            continue;
        snprintf(count, sizeof(count), "%zu", n);
        snprintf(first, sizeof(first), "%" PRId64, ids[0]);
        snprintf(msg, sizeof(msg), "cancelled %s jobs of this daemon that no workload claims",
                 engine__title(b));
        log_warn(msg, "cluster", cluster, "jobs", count, "first", first);
    }
}
