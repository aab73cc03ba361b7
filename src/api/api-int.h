/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api-int.h: what the files of the API module share: the request being
 * served, the caller (principal), the tenancy (org tree) used for RBAC, and
 * the handler entry points. Nothing outside src/api includes it.
 */
#ifndef GPUAAS_API_INT_H
#define GPUAAS_API_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <jansson.h>

#include "api/api.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "model/model.h"
#include "store/store.h"

/* ---- tenancy: the org tree and project -> org, for RBAC ---- */

/*
 * Loaded from the store on first use, then kept current in place as
 * organizations and projects change; readers and writers take the lock.
 * version counts changes, so that a load that raced with one is redone.
 */
struct tenancy {
    pthread_rwlock_t lock;
    bool loaded;
    uint64_t version;
    int64_t *org_ids;     /* sorted */
    int64_t *org_parent;  /* parallel to org_ids; 0 for a root */
    size_t n_orgs, cap_orgs;
    int64_t *project_ids; /* sorted */
    int64_t *project_org; /* parallel to project_ids */
    size_t n_projects, cap_projects;
};

void tenancy_init(struct tenancy *t);
void tenancy_release(struct tenancy *t);

/* ---- the caller ---- */

struct binding {
    enum role role;
    int64_t org_id;     /* 0 when none */
    int64_t project_id; /* 0 when none */
};

struct principal {
    int64_t user_id;
    char name[64];
    bool admin;
    struct binding *bindings;
    size_t n_bindings;
    int64_t token_id;
    int64_t token_expires_at; /* 0 when none */
    char token_hash[65];      /* TOKEN_HASH_HEX + 1: what auth_by_hash takes */
};

struct auth_cache;

struct api {
    struct store *store;
    struct api_options opt;
    struct MHD_Daemon *mhd;
    int port;
    /*
     * Bumped by every change that can alter what a token stands for (users,
     * tokens, role bindings, and deletions of organizations or projects,
     * which cascade to bindings): cached principals older than it are
     * reloaded.
     */
    atomic_uint_least64_t generation;
    struct tenancy tenancy;
    /*
     * Held from the commit of a change to an organization or project until
     * the tenancy has it, so the tenancy sees changes in commit order.
     */
    pthread_mutex_t tenancy_commit_lock;
    struct auth_cache *auth;
    struct api_metrics *metrics; /* requests and latencies, for /metrics */
    struct sse_hub *sse;         /* open event streams */
    struct http_guard *guard;    /* header deadlines, rate-limited server logs (http.c) */
};

struct req {
    struct api *api;
    const char *method;
    const char *path;
    struct MHD_Connection *conn;
    char id[40];
    struct buf body;
    bool too_large;
    bool answered; /* the reply went out before the body was read */
    struct arena arena;
    const struct principal *who; /* NULL until authenticated; owned by arena */
    struct store_conn *db;       /* taken lazily by req_db() */
    int64_t now;                 /* request time, epoch seconds */
    int64_t started_ns;          /* arrival, monotonic: the latency on /metrics */
    /* the response */
    int status;
    json_t *json;           /* body to send, or NULL */
    const char *raw;        /* or a raw body (static or arena) */
    size_t raw_len;
    const char *content_type;
    struct sse_stream *stream; /* or an event stream (stream.c) */
    const char *cache_control;  /* NULL: "no-store" */
    const char *const *headers; /* more: name, value, ..., NULL (static or arena), or NULL */
};

/* ---- http.c ---- */

/* The request's store connection, taken from the pool on first use. */
struct store_conn *req_db(struct req *r);
/* Query string argument, or NULL. */
const char *req_arg(struct req *r, const char *name);
/* Calls fn for each query argument; stops and returns fn's negative value. */
int req_each_arg(struct req *r, int (*fn)(void *ctx, const char *key, const char *val), void *ctx);
/* Parses the body as a JSON object; ERR_BAD_JSON / ERR_MEDIA_TYPE with ei set. */
int req_json_body(struct req *r, json_t **ret_obj, struct error_info *ei);
/* Sets the response: a JSON body (reference stolen) and status. */
void req_reply_json(struct req *r, int status, json_t *body);
/* Sets an error response from an error code and ei (which may be NULL). */
void req_reply_error(struct req *r, int err, const struct error_info *ei);

/* ---- auth.c ---- */

#define TOKEN_PREFIX "gpa_"
#define TOKEN_HASH_HEX 64

struct auth_cache *auth_cache_new(void);
void auth_cache_free(struct auth_cache *c);
/*
 * Makes a new random token: *ret_token "gpa_..." (caller frees), its hex hash
 * in ret_hash (TOKEN_HASH_HEX + 1 bytes) and its display prefix.
 */
void auth_token_new(char **ret_token, char ret_hash[TOKEN_HASH_HEX + 1], char ret_prefix[16]);
void auth_token_hash(const char *token, char ret_hash[TOKEN_HASH_HEX + 1]);
/* Authenticates r from its Authorization header; sets r->who or returns ERR_UNAUTHENTICATED. */
int auth_authenticate(struct req *r, struct error_info *ei);
/*
 * The same for a token known by its hash (a stream checking its caller
 * again): sets r->who, as the store says now, or returns ERR_UNAUTHENTICATED.
 */
int auth_by_hash(struct req *r, const char *hash, struct error_info *ei);

/* ---- rbac.c ---- */

/* Loads the tenancy from the store the first time it is needed. */
int rbac_refresh(struct req *r, struct error_info *ei);
/*
 * Records a committed change to an organization or project in the tenancy
 * (other resources are ignored): act is ACT_CREATE, ACT_UPDATE or
 * ACT_DELETE, row the object after the change (before it, for a delete).
 */
void rbac_apply(struct api *api, const struct resource_def *def, enum action act,
                const struct row *row);
/* The caller's role on an organization / project (ROLE_NONE when none). */
enum role rbac_role_on_org(struct req *r, int64_t org_id);
enum role rbac_role_on_project(struct req *r, int64_t project_id);
/* Whether the caller may see the organization / project at all. */
bool rbac_sees_org(struct req *r, int64_t org_id);
bool rbac_sees_project(struct req *r, int64_t project_id);
/* The org of a project, 0 when unknown. */
int64_t rbac_project_org(struct req *r, int64_t project_id);
/*
 * Checks that org_id (0 for a new one) may hang under new_parent (0 for a
 * root): no cycle, and the tree stays within its depth limit. ERR_INVALID.
 */
int rbac_org_check_parent(struct req *r, int64_t org_id, int64_t new_parent,
                          struct error_info *ei);
/*
 * Ids of the organizations / projects on which the caller holds at least
 * `least` (arena memory). Admins are not asked: they see everything.
 */
void rbac_orgs_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n);
void rbac_projects_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n);
/*
 * ERR_CONFLICT when a change would leave no enabled admin user: deleting
 * (after NULL) or disabling an enabled admin user, or deleting the admin
 * binding of one, while no other enabled user is admin. Other changes: 0.
 * Runs inside the change's transaction.
 */
int rbac_keep_an_admin(struct req *r, const struct resource_def *def, const struct row *before,
                       const struct row *after, struct error_info *ei);
/* Visible = rbac_sees_org / rbac_sees_project, as id lists. */
void rbac_visible_orgs(struct req *r, int64_t **ret_ids, size_t *ret_n);
void rbac_visible_projects(struct req *r, int64_t **ret_ids, size_t *ret_n);

/* ---- resource.c: generic CRUD for every model resource ---- */

void resource_list(struct req *r, const struct resource_def *def);
void resource_create(struct req *r, const struct resource_def *def);
void resource_get(struct req *r, const struct resource_def *def, int64_t id);
void resource_update(struct req *r, const struct resource_def *def, int64_t id);
void resource_delete(struct req *r, const struct resource_def *def, int64_t id);
/* Loads a row the caller may read; anything else is ERR_NOT_FOUND (other tenants' too). */
int resource_load_visible(struct req *r, const struct resource_def *def, int64_t id,
                          struct row *ret_row, struct error_info *ei);
/*
 * Every row of def (open_only: those whose ended_ms is null), paged through
 * the store, in the request's arena, in id order.
 */
int req_list_all(struct req *r, const struct resource_def *def, bool open_only,
                 struct row **ret, size_t *ret_n, struct error_info *ei);
/* The row with that id in rows (id order, as lists come), or NULL: a binary search. */
const struct row *rows_find(const struct row *rows, size_t n, int64_t id);
/*
 * Open allocations by the GPU they hold (in the request's arena): the first
 * one (by id) holding gpu_id, or NULL.
 */
struct alloc_index {
    const struct row **by_gpu; /* sorted by (gpu_id, id); CPU-only ones left out */
    size_t n;
};
void alloc_index_build(struct req *r, const struct row *allocs, size_t n, struct alloc_index *ret);
const struct row *alloc_index_find(const struct alloc_index *ix, int64_t gpu_id);
/* A row as JSON for the API (caller owns the reference). */
json_t *resource_encode(struct req *r, const struct resource_def *def, const struct row *row);

/* ---- workloads.c: what workloads add to the generic handling ---- */

/*
 * Before a submit is written: 1 with *ret_earlier when its idempotency key
 * was used before in the project (answer with that one), 0 to go on (the
 * server-decided fields are set), or an error (inactive flavor, ...).
 */
int workloads_prepare_submit(struct req *r, struct row *row, struct row *ret_earlier,
                             struct error_info *ei);
/*
 * The earlier workload submitted with row's idempotency key in its project:
 * 1 with *ret, 0 when there is none (or row has no key), or an error.
 */
int workloads_find_earlier(struct req *r, const struct row *row, struct row *ret,
                           struct error_info *ei);
/* In the submit's transaction: its "submitted" event. */
int workloads_submitted_event(struct req *r, const struct row *row, struct error_info *ei);
/* POST /v1/workloads/<id>/cancel: a member of its project asks the engine to cancel it. */
void workloads_cancel(struct req *r, int64_t id);
/* GET /v1/workloads/<id>/logs: the workload's output (local clusters). */
void workloads_logs(struct req *r, int64_t id);
/* Adds a queued workload's live queue position and reason to its JSON. */
void workloads_decorate(struct req *r, const struct row *row, json_t *j);
/*
 * Appends an audit entry for a change on connection db (inside the caller's
 * transaction). before/after may be NULL rows.
 */
int resource_audit(struct req *r, struct store_conn *db, const char *action,
                   const struct resource_def *def, int64_t object_id, const struct row *before,
                   const struct row *after, struct error_info *ei);

/* ---- preemptions.c: the ledger, seen by the preemptor's and the victims' tenants ---- */

/* Whether the caller may read a ledger entry: admin, or viewer of its or a victim's project. */
bool preemptions_visible(struct req *r, const struct row *row);
/* Redacts from an entry's JSON what belongs to projects the caller cannot see. */
void preemptions_redact(struct req *r, const struct row *row, json_t *j);
/*
 * The first f->limit entries matching f (its equality filters and after_id)
 * that the caller may read, in id order, in the request's arena.
 */
int preemptions_list_visible(struct req *r, struct store_filter *f, struct row **ret, size_t *ret_n,
                             struct error_info *ei);

/* ---- billing.c: invoices, usage, the ledger check, price and budget rules ---- */

void billing_route_issue(struct req *r);
void billing_route_draft(struct req *r);
void billing_route_usage(struct req *r);
void billing_route_ledger_verify(struct req *r);
void billing_route_cost(struct req *r);
/* /v1/invoices/<id>/pay|credit|export|verify; false when tail is none of them. */
bool billing_route_invoice_action(struct req *r, int64_t id, const char *tail);
/* Extra rules for creating a price version. */
int billing_check_price(struct req *r, const struct row *row, struct error_info *ei);
/*
 * The rules of billing_check_price but the one against the past: one number
 * of decimals per currency, nothing inside an issued period. The history
 * import (history.c) adds its own rule for a version that starts in the past.
 */
int billing_check_price_list(struct req *r, const struct row *row, struct error_info *ei);
/*
 * POST /v1/history: finished work of the past (and the price versions it is
 * rated at) written through the API, metered into the ledger (history.c).
 */
void history_route_import(struct req *r);
/* The request body of POST /v1/history, as an OpenAPI requestBody (new reference). */
json_t *history_openapi_body(void);
/*
 * A guarantee above what the project's (or its organization's) pools own in
 * that class: ERR_FORBIDDEN unless the caller is a global admin.
 */
int quota_check_backing(struct req *r, const struct row *row, struct error_info *ei);
/* Refuses opportunistic work once an enforced budget is spent. */
int billing_check_submit(struct req *r, const struct row *row, struct error_info *ei);

/* ---- metrics.c: /metrics ---- */

struct api_metrics *api_metrics_new(void);
void api_metrics_free(struct api_metrics *m);
/* Counts one answered request; thread-safe. */
void api_metrics_observe(struct api_metrics *m, const char *method, int status, int64_t us);
void metrics_route(struct req *r);

/* ---- inventory.c: the GPU inventory view, import and export ---- */

void inventory_route_list(struct req *r);
void inventory_route_export(struct req *r);
void inventory_route_import(struct req *r);
void inventory_route_history(struct req *r);
struct collector_gpu;
/*
 * The state a fleet GPU is shown in, one rule for every view (/v1/inventory,
 * /metrics): down (failed, or its node down), mig (split into instances),
 * then what the collectors measured when they report it (busy,
 * idle-allocated, free, down), else allocated or free; a GPU nothing holds on
 * a draining node is draining unless it is down. gpu and node are rows of
 * model_gpus and model_nodes (node may be NULL). ret_telemetry (may be NULL)
 * gets what the collectors said; *ret_seen whether they said anything.
 * Returns a static string.
 */
const char *inventory_gpu_state(struct req *r, const struct row *gpu, const struct row *node,
                                bool allocated, struct collector_gpu *ret_telemetry,
                                bool *ret_seen);

/* ---- stream.c: server-sent events ---- */

struct sse_hub *sse_hub_new(void);
/* Ends every stream (they answer end-of-stream) and stops the ticker; before MHD stops. */
void sse_hub_stop(struct sse_hub *h);
void sse_hub_free(struct sse_hub *h);
/* Whether the request asks for text/event-stream. */
bool stream_wanted(struct req *r);
/* GET /v1/events as a stream: sets r->stream, or an error reply. */
void stream_events(struct req *r);
/* The response for r->stream (which it takes over). */
struct MHD_Response *stream_response(struct req *r);
/* ---- ui.c: the dashboard, its files compiled in (web_assets.c from src/web/) ---- */

struct ui_asset {
    const char *name;          /* "app.js" */
    const unsigned char *data; /* size bytes and a NUL */
    size_t size;
    const char *etag; /* quoted, from the content's hash */
};
extern const struct ui_asset ui_assets[];
extern const size_t ui_n_assets;

/*
 * Serves / and /ui/... (no token needed: the files hold no data). Returns
 * false, leaving r untouched, for any other path.
 */
bool ui_serve(struct req *r);

/* ---- routes.c ---- */

void routes_dispatch(struct req *r);

/* Routes other than the resource ones, for the router and the OpenAPI document. */
struct route {
    const char *method;
    const char *path;
    bool auth; /* needs a bearer token */
    void (*fn)(struct req *r);
    const char *summary;
};
extern const struct route routes_fixed[];
extern const size_t routes_n_fixed;

/* ---- openapi.c ---- */

/* The OpenAPI 3 document (caller owns the reference). */
json_t *openapi_document(void);

#endif
