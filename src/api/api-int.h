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
    int64_t path_id;             /* the {id} of the route's path (routes.c), 0 when none */
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
/* The caller's role on an organization / project (ROLE_NONE when none). */
enum role rbac_role_on_org(struct req *r, int64_t org_id);
enum role rbac_role_on_project(struct req *r, int64_t project_id);
/* Whether the caller may see the organization / project at all. */
bool rbac_sees_org(struct req *r, int64_t org_id);
bool rbac_sees_project(struct req *r, int64_t project_id);
/* The org of a project, 0 when unknown. */
int64_t rbac_project_org(struct req *r, int64_t project_id);
/*
 * Ids of the organizations / projects on which the caller holds at least
 * `least` (arena memory). Admins are not asked: they see everything.
 */
void rbac_orgs_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n);
void rbac_projects_with(struct req *r, enum role least, int64_t **ret_ids, size_t *ret_n);
/* Visible = rbac_sees_org / rbac_sees_project, as id lists. */
void rbac_visible_orgs(struct req *r, int64_t **ret_ids, size_t *ret_n);
void rbac_visible_projects(struct req *r, int64_t **ret_ids, size_t *ret_n);

/* ---- hooks.c: what a resource adds to the generic handling of resource.c ---- */

/* What a may_read hook decides. */
enum hook_verdict {
    HOOK_DEFAULT = -1, /* no opinion: the generic rule (the role on the row's scope) decides */
    HOOK_DENY = 0,
    HOOK_ALLOW = 1,
};

/* A field the API adds to a resource's JSON that the model does not store. */
struct hook_field {
    const char *name; /* NULL: none */
    const char *type; /* its OpenAPI type: "integer", "string" */
    const char *doc;
};

/*
 * The rules one resource adds to the generic list, create, read, update and
 * delete of resource.c, filled in where those rules live (workloads.c,
 * billing.c, rbac.c, auth.c, ...) and found by resource_hooks_of(). Every
 * entry may be NULL (or false): nothing to do, the generic rule holds. The
 * hooks run in the order listed for each request; those that take an ei
 * return 0 or a negative error, which ends the request with that error (and
 * rolls back its transaction). resource.c is the only caller; a hook uses
 * nothing of it but the generic interface below (resource_load_visible,
 * resource_role, resource_may, resource_encode, resource_audit).
 */
struct resource_hooks {
    /* ---- after a change commits (changes of one resource commit in order) ---- */
    /* Its changes alter what the scheduler works with: the engine is told. */
    bool shapes_scheduling;
    /* Its changes can alter what a token stands for: cached principals are reloaded. */
    bool identity;
    /*
     * after_commit must see its changes in commit order: the commit and
     * after_commit hold api->tenancy_commit_lock.
     */
    bool ordered_commit;
    /* What in-memory state learns of a committed change (row: after it; before, for a delete). */
    void (*after_commit)(struct req *r, enum action act, const struct row *row);

    /* ---- reading ---- */
    /* Whether the caller may read row, before (and instead of) the role on its scope. */
    enum hook_verdict (*may_read)(struct req *r, const struct row *row);
    /* Whether a reference to id names a row the caller sees (instead of loading it). */
    bool (*ref_visible)(struct req *r, int64_t id);
    /* Restricts a non-admin's list to what they see (instead of the scope's filter). */
    int (*list_filter)(struct req *r, struct store_filter *f, struct error_info *ei);
    /*
     * Lists what the caller may see matching f, for visibility that no
     * filter can say (instead of list_filter and the store's list): at most
     * f->limit rows in id order, in the request's arena.
     */
    int (*list)(struct req *r, struct store_filter *f, struct row **ret, size_t *ret_n,
                struct error_info *ei);
    /* Serves a list asked for as text/event-stream (stream_wanted). */
    void (*stream)(struct req *r);
    /* Adds live or caller-dependent parts to a row read back (not to a create's answer). */
    void (*decorate)(struct req *r, const struct row *row, json_t *j);

    /* ---- create ---- */
    /*
     * Sets what the server decides before the row is checked; may return in
     * *ret_reveal (caller frees) fields only the create's answer carries.
     */
    int (*fill)(struct req *r, struct row *row, json_t **ret_reveal, struct error_info *ei);
    /*
     * Rules beyond the model's, the references and the role. 1 with
     * *ret_same: the same create was made before, answered 200 with it.
     */
    int (*check_create)(struct req *r, struct row *row, struct row *ret_same,
                        struct error_info *ei);
    /*
     * After the store refused the insert as a conflict: 1 with *ret_same when
     * a racing twin of this create won it (answered 200 with that one).
     */
    int (*create_conflict)(struct req *r, const struct row *row, struct row *ret_same,
                           struct error_info *ei);

    /* ---- update and delete (in the change's transaction, before the write) ---- */
    int (*check_update)(struct req *r, const struct row *before, const struct row *patch,
                        const struct row *after, struct error_info *ei);
    int (*check_delete)(struct req *r, const struct row *before, struct error_info *ei);
    /*
     * A delete that keeps the row: sets in after (a copy of before) what
     * retires it; it is written as an update audited as retire_verb.
     */
    int (*retire)(struct req *r, const struct row *before, struct row *after,
                  struct error_info *ei);
    const char *retire_verb; /* "revoke" */
    const char *retired;     /* "revoked": the 204's description */

    /* In the change's transaction, after the row and its audit entry are written. */
    int (*in_tx)(struct req *r, enum action act, const struct row *row, struct error_info *ei);

    /* ---- what the errors and the OpenAPI document say ---- */
    /* A 405's advice for an action not offered; NULL: "they are written by the server". */
    const char *why_fixed;
    /* What a 200 to a create means (check_create's "the same create again"). */
    const char *same_create;
    struct hook_field computed; /* what decorate adds */
    struct hook_field computed_also[2]; /* more of it, where it adds several */
    struct hook_field reveal;   /* the secret fill reveals to the create's answer alone */
};

/* The hooks of def (an empty table for a resource with no rules of its own). */
const struct resource_hooks *resource_hooks_of(const struct resource_def *def);

/* The tables hooks.c lists, each defined in the file with that resource's rules. */
extern const struct resource_hooks rbac_org_hooks, rbac_project_hooks, rbac_user_hooks,
    rbac_binding_hooks, auth_token_hooks, workloads_hooks, preemptions_hooks, billing_price_hooks,
    quota_hooks, stream_event_hooks;

/* ---- resource.c: generic CRUD for every model resource ---- */

void resource_list(struct req *r, const struct resource_def *def);
void resource_create(struct req *r, const struct resource_def *def);
void resource_get(struct req *r, const struct resource_def *def, int64_t id);
void resource_update(struct req *r, const struct resource_def *def, int64_t id);
void resource_delete(struct req *r, const struct resource_def *def, int64_t id);
/*
 * The generic interface the hooks and the sub-routes use:
 *
 * Loads a row the caller may read; anything else is ERR_NOT_FOUND (other
 * tenants' too). ei may be NULL.
 */
int resource_load_visible(struct req *r, const struct resource_def *def, int64_t id,
                          struct row *ret_row, struct error_info *ei);
/* The caller's role on the scope row lives in (def's scope rule). */
enum role resource_role(struct req *r, const struct resource_def *def, const struct row *row);
/* Whether the caller may do act on row (for ACT_CREATE: create it where it says). */
bool resource_may(struct req *r, const struct resource_def *def, const struct row *row,
                  enum action act);
/* A row as JSON for the API, decorated (caller owns the reference). */
json_t *resource_encode(struct req *r, const struct resource_def *def, const struct row *row);

/* ---- audit.c ---- */

/*
 * Appends an audit entry for a change on connection db (inside the caller's
 * transaction). before/after may be NULL rows.
 */
int resource_audit(struct req *r, struct store_conn *db, const char *action,
                   const struct resource_def *def, int64_t object_id, const struct row *before,
                   const struct row *after, struct error_info *ei);

/* ---- rows.c: sets of rows, for the views that join them (inventory, metrics) ---- */

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

/* ---- workloads.c: sub-routes of a workload (r->path_id) ---- */

/* POST /v1/workloads/{id}/cancel: a member of its project asks the engine to cancel it. */
void workloads_cancel(struct req *r);
void workloads_hold(struct req *r);
void workloads_release(struct req *r);
/* GET /v1/workloads/{id}/logs: the workload's output (local clusters). */
void workloads_logs(struct req *r);

/* ---- billing.c: invoices, usage, the ledger check, price and budget rules ---- */

void billing_route_issue(struct req *r);
void billing_route_draft(struct req *r);
void billing_route_usage(struct req *r);
void billing_route_ledger_verify(struct req *r);
void billing_route_cost(struct req *r);
/* /v1/invoices/{id}/pay|credit|export|verify (r->path_id). */
void billing_route_pay(struct req *r);
void billing_route_credit(struct req *r);
void billing_route_export(struct req *r);
void billing_route_verify(struct req *r);
/* Extra rules for creating a price version (the prices' check_create). */
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
/* POST /v1/whatif: replays a period with changes, side by side with the baseline (whatif.c). */
void whatif_route(struct req *r);
/* Its requestBody for the OpenAPI document (new reference). */
json_t *whatif_openapi_body(void);
/* Refuses opportunistic work once an enforced budget is spent (a workload's check_create). */
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

/* ---- routes.c: the route table ---- */

void routes_dispatch(struct req *r);

/* A query parameter a route reads, for the OpenAPI document. */
struct route_param {
    const char *name;
    bool required;
    const char *schema; /* JSON text */
};

/* An answer a route documents. */
struct route_answer {
    int status;
    const char *desc;
    /* a schema of the document's components, or a schema as JSON text ("{..."); NULL: an object */
    const char *schema;
    /*
     * Its content types, space-separated; NULL: "application/json". Other
     * types than JSON are strings.
     */
    const char *types;
};

/* Error answers a route documents beyond 400, 401, 403, 404 and 503. */
enum {
    ROUTE_ERR_CONFLICT = 1, /* 409 */
    ROUTE_ERR_BODY = 2,     /* 413, 415: it reads a body */
};

/*
 * A route other than the five every model resource has: the router matches
 * it and the OpenAPI document describes it, both from this one entry, so a
 * route is served exactly when it is documented.
 */
struct route {
    const char *method; /* "GET", "POST", ... */
    /*
     * Literal, or with {id} segments: a path id (1 to 19 digits, no leading
     * 0, at most INT64_MAX), handed to fn in r->path_id; a path whose id does
     * not read matches no route.
     */
    const char *path;
    void (*fn)(struct req *r);
    /*
     * The least role it needs. ROLE_NONE: any valid token; ROLE_ADMIN: global
     * admins, checked before fn runs (others get 403 with `denied`); a role
     * on a tenant is checked by fn on the object the path names.
     */
    enum role least;
    const char *summary;
    bool no_token;      /* served without authentication (and documented so) */
    const char *denied; /* least == ROLE_ADMIN: the 403's message */
    /* The rest is for the OpenAPI document. */
    const char *op;                     /* operationId "<op>_<object>"; NULL: none */
    const char *object;                 /* the components schema its operation id names */
    const struct route_answer *answers; /* ends with {0}; NULL: 200, a JSON object */
    unsigned errors;                    /* ROUTE_ERR_* */
    const struct route_param *query;    /* ends with {0}; NULL: none */
    const char *body;                   /* the request body's schema (JSON text); NULL: none */
    const char *body_type;              /* NULL: "application/json" */
    json_t *(*request_body)(void);      /* or the whole requestBody, built (new reference) */
};
extern const struct route routes[];
extern const size_t routes_n;

/* ---- openapi.c ---- */

/* The OpenAPI 3 document (caller owns the reference). */
json_t *openapi_document(void);
/*
 * The JSON schema of a value of field f (its type, bounds, pattern, nullable, read-only,
 * description), as decoding checks it; new reference.
 */
json_t *openapi_field_schema(const struct field_def *f);
/*
 * An object of a field table's fields (FF_SECRET ones left out): FF_REQUIRED ones
 * required, no other member; help its description (NULL: none). New reference. The one
 * builder of objects' schemas: resources and the bodies of routes that decode a table.
 */
json_t *openapi_object_schema(const struct field_def *fields, size_t n, const char *help);

#endif
