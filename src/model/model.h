/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h: the domain's resources described as data.
 *
 * Each resource (organizations, projects, users, ...) is a struct
 * resource_def: its fields with type, flags and ranges, how its tenant scope
 * is found, and which role each action needs. The store turns a definition
 * into SQL over bound parameters, the API decodes and validates JSON through
 * it, and the OpenAPI document is generated from it, so the three cannot
 * disagree. A row is an array of struct value, one per field, in field order;
 * field 0 is always "id". Code names a field by its index from fields.h
 * (F_WORKLOADS_STATE), never by its JSON name: a misspelt field does not
 * compile.
 */
#ifndef GPUAAS_MODEL_H
#define GPUAAS_MODEL_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/err.h"
#include "model/fields.h"

/* json_t from jansson; model.c is the only place that needs its definition here. */
struct json_t;

enum field_type {
    FT_INT,     /* int64 within [min, max] */
    FT_BOOL,    /* stored as 0/1 */
    FT_STRING,  /* free text, at most max bytes of UTF-8 */
    FT_NAME,    /* lower-case slug: [a-z0-9][a-z0-9._-]*, at most max bytes */
    FT_IDENT,   /* identifier such as a host name or UUID: [A-Za-z0-9][A-Za-z0-9._:/-]* */
    FT_ENUM,    /* one of enum_values */
    FT_REF,     /* id of a row of resource `ref` */
    FT_TIME,    /* epoch seconds; RFC 3339 string in JSON */
    FT_LABELS,  /* JSON object of string -> string; stored as JSON text */
    FT_REFLIST, /* JSON array of ids of resource `ref`; stored as JSON text */
    FT_JSON,    /* any JSON value; stored as JSON text (audit before/after) */
};

enum field_flag {
    FF_REQUIRED = 1u << 0,  /* must be given on create */
    FF_READONLY = 1u << 1,  /* set by the server only; a client giving it is an error */
    FF_IMMUTABLE = 1u << 2, /* given on create, may not change afterwards */
    FF_FILTER = 1u << 3,    /* list endpoint accepts ?name=value */
    FF_SECRET = 1u << 4,    /* never leaves the server (token hashes) */
    FF_NULLABLE = 1u << 5,  /* may be null (absent on create means null unless a default) */
};

struct field_def {
    const char *name;   /* JSON member name */
    const char *column; /* SQL column; NULL means the same as name */
    enum field_type type;
    unsigned flags;
    int64_t min, max;                /* FT_INT range; string types: max = max bytes */
    const char *const *enum_values;  /* FT_ENUM: NULL-terminated list */
    const char *ref;                 /* FT_REF, FT_REFLIST: resource name */
    int64_t default_int;             /* FT_INT/FT_BOOL default when not nullable */
    const char *default_str;         /* FT_STRING/FT_ENUM/FT_LABELS/FT_REFLIST default */
    const char *help;                /* one line for the OpenAPI document */
};

/* Roles, ordered: a higher role can do what a lower one can on the same scope. */
enum role {
    ROLE_NONE = 0, /* authenticated, no binding needed */
    ROLE_VIEWER,
    ROLE_MEMBER,
    ROLE_PROJECT_ADMIN,
    ROLE_ORG_ADMIN,
    ROLE_ADMIN,
    ROLE_NOBODY, /* action not offered through the API */
};

/* Returns "viewer", "org-admin", ...; role_parse returns 0 or ERR_INVALID. */
const char *role_name(enum role r);
int role_parse(const char *s, enum role *ret_role);

/* How the tenant that owns a row is found, for authorization. */
enum scope_kind {
    SCOPE_GLOBAL,         /* fleet and catalog: not owned by a tenant */
    SCOPE_ORG,            /* scope_field holds an organization id (the id for organizations) */
    SCOPE_PROJECT,        /* scope_field holds a project id (the id for projects) */
    SCOPE_USER,           /* scope_field holds a user id (the id for users) */
    SCOPE_OWNER,          /* pools: owner_project_id when set, else owner_org_id */
    SCOPE_BINDING,        /* role bindings: project_id when set, else org_id, else global */
    SCOPE_PROJECT_OR_ORG, /* budgets: project_id when set, else org_id */
};

enum action { ACT_READ, ACT_CREATE, ACT_UPDATE, ACT_DELETE, ACT_COUNT_ };

struct row;

/*
 * resource_def.flags: what generic code (the CLI's texts and tables) must know of a
 * resource, said by its table so that no code asks which resource it has.
 */
enum resource_flag {
    RF_DELETE_REVOKES = 1u << 0, /* a delete revokes it: texts say "revoke" (tokens) */
    RF_SECRET_ONCE = 1u << 1,    /* create answers with its secret, member "token", shown once */
    RF_NEWEST_FIRST = 1u << 2,   /* a log people read newest first (the audit log) */
};

struct resource_def {
    const char *name;     /* plural, the URL segment: "role-bindings" */
    const char *table;    /* SQL table: "role_bindings" */
    const char *singular; /* "project", for messages */
    const struct field_def *fields;
    size_t n_fields;
    enum scope_kind scope;
    /*
     * Where a row's scope is, as F_<RESOURCE>_<FIELD> indices, read as the scope kind says:
     * ORG, PROJECT and USER read scope_field (the id, index 0, of an organization, project
     * or user itself); OWNER, BINDING and PROJECT_OR_ORG read scope_field for the project
     * and scope_org_field for the organization, BINDING scope_user_field too. Checked once
     * at start-up by test_model_validation, never looked up by name on a request.
     */
    int scope_field, scope_org_field, scope_user_field;
    /* Organizations and projects are made inside an organization: its field; 0 otherwise. */
    int create_scope_field;
    enum role need[ACT_COUNT_]; /* least role on the row's scope for each action */
    const char *unique_desc;    /* what must be unique, for conflict messages */
    const char *help;
    unsigned flags; /* enum resource_flag */
    /*
     * Rules that span fields (model_check_row), beside the resource's table; NULL: none.
     * Returns 0 or ERR_INVALID with ei set.
     */
    int (*check)(const struct row *r, struct error_info *ei);
};

/* Every resource, and lookups. model_find returns NULL when there is none. */
extern const struct resource_def *const model_resources[];
extern const size_t model_n_resources;
const struct resource_def *model_find(const char *name);
/*
 * Index of a field by JSON name, or -1: for names that come from outside (a
 * JSON member, a query parameter, a command-line option). Code that knows the
 * field uses its F_ index instead.
 */
int model_field_index(const struct resource_def *def, const char *name);
/* The SQL column of a field. */
const char *model_column(const struct field_def *f);

/* The resources the rest of the code names directly. */
extern const struct resource_def model_organizations, model_projects, model_users,
    model_role_bindings, model_tokens, model_clusters, model_nodes, model_gpu_classes, model_gpus,
    model_pools, model_flavors, model_quotas, model_org_quotas, model_audit, model_workloads,
    model_allocations, model_events, model_preemptions, model_prices, model_usage, model_invoices,
    model_budgets, model_budget_alerts, model_inventory_items;
/* Workload states, NULL-terminated, as model_workloads' "state" enum. */
extern const char *const model_workload_states[];
/*
 * Whether a workload state is an end: succeeded, failed, cancelled or
 * preempted (preempted work that is queued again is "queued"). An ended
 * workload never runs again. NULL or an unknown state is not an end.
 */
bool model_workload_state_ended(const char *state);

struct value {
    bool set;     /* present: in a decoded request, given by the client */
    bool null;    /* SQL NULL / JSON null */
    int64_t i;    /* FT_INT, FT_BOOL, FT_REF, FT_TIME */
    const char *s; /* string types, FT_LABELS/FT_REFLIST/FT_JSON as JSON text */
};

/* A row: values[def->n_fields]; memory belongs to the arena that made it. */
struct row {
    struct value *v;
};

/*
 * The field indices: enum workloads_field { F_WORKLOADS_ID, ...,
 * F_WORKLOADS_STATE, ..., F_WORKLOADS_COUNT_ }, one enum per resource from
 * its list in fields.h. A resource's table has exactly F_<RESOURCE>_COUNT_
 * fields; no resource has more than MODEL_MAX_FIELDS.
 */
#define MODEL_MAX_FIELDS 32
#define MODEL_FIELD_ENUM_(R, F) F_##R##_##F,
#define MODEL_RESOURCE_ENUM_(R, name)                                                              \
    enum name##_field { MODEL_##R##_FIELDS(MODEL_FIELD_ENUM_, R) F_##R##_COUNT_ };                 \
    _Static_assert(F_##R##_COUNT_ <= MODEL_MAX_FIELDS, "MODEL_MAX_FIELDS is too small");
MODEL_RESOURCES(MODEL_RESOURCE_ENUM_)
#undef MODEL_RESOURCE_ENUM_
#undef MODEL_FIELD_ENUM_

/*
 * Typed access to a row: f is an F_ index of the row's resource. These are
 * array indexing; debug builds assert that f is an index at all (it cannot
 * tell a workload's index from a pool's: the name of the F_ constant does).
 * A null value has i 0 and s NULL (every writer of rows keeps this), so
 * row_int of a null field is 0 and row_str of one is "".
 */
static inline const struct value *row_get(const struct row *r, int f)
{
    assert(f >= 0 && f < MODEL_MAX_FIELDS);
    return &r->v[f];
}

static inline int64_t row_int(const struct row *r, int f)
{
    assert(!row_get(r, f)->null || row_get(r, f)->i == 0);
    return row_get(r, f)->i;
}

/* The string of a field; "" when it is null or unset, never NULL. */
static inline const char *row_str(const struct row *r, int f)
{
    const char *s = row_get(r, f)->s;
    return s ? s : "";
}

static inline bool row_is_null(const struct row *r, int f)
{
    return row_get(r, f)->null;
}

/* Set a value, marking it set (row_set_str copies s into a; NULL s sets null). */
static inline void row_set_int(struct row *r, int f, int64_t i)
{
    assert(f >= 0 && f < MODEL_MAX_FIELDS);
    r->v[f] = (struct value){.set = true, .i = i};
}

static inline void row_set_str(struct row *r, struct arena *a, int f, const char *s)
{
    assert(f >= 0 && f < MODEL_MAX_FIELDS);
    r->v[f] = (struct value){.set = true, .s = arena_strdup(a, s), .null = s == NULL};
}

static inline void row_set_null(struct row *r, int f)
{
    assert(f >= 0 && f < MODEL_MAX_FIELDS);
    r->v[f] = (struct value){.set = true, .null = true};
}

/* A fresh row with every value unset, in arena a. */
struct row model_row_new(const struct resource_def *def, struct arena *a);
/*
 * The string-keyed forms that src/engine and src/api still use until the
 * conversion to F_ indices reaches them: model_set_* are row_set_*, model_get
 * looks the name up and asserts the field exists.
 */
void model_set_int(struct row *r, int idx, int64_t i);
void model_set_str(struct row *r, struct arena *a, int idx, const char *s);
void model_set_null(struct row *r, int idx);
const struct value *model_get(const struct resource_def *def, const struct row *r,
                              const char *name);
int64_t model_get_int(const struct resource_def *def, const struct row *r, const char *name);
/* The id (field 0). */
int64_t model_row_id(const struct row *r);

enum decode_mode { DECODE_CREATE, DECODE_UPDATE };

/*
 * Decodes a JSON object into a row of def, validating every member: unknown
 * members, read-only members, wrong types, out-of-range values, bad names and
 * missing required fields are ERR_INVALID with ei naming the field. On create,
 * fields not given get their default (or null). On update, only given fields
 * are set. Strings live in arena a. Returns 0 or a negative error.
 */
int model_decode(const struct resource_def *def, struct json_t *obj, enum decode_mode mode,
                 struct arena *a, struct row *ret_row, struct error_info *ei);

/*
 * Checks rules that span fields (exactly one pool owner, guaranteed <= limit,
 * the role binding's scope matches its role, ...) on a complete row, after a
 * create or a merged update. Returns 0 or ERR_INVALID with ei set.
 */
int model_check_row(const struct resource_def *def, const struct row *r, struct error_info *ei);
/* For check functions: field f (a string) is an upper-case ISO 4217 code, else ERR_INVALID. */
int model_check_currency(const struct row *r, int f, struct error_info *ei);
/* For check functions: field f is set and not null. */
bool model_has(const struct row *r, int f);

/* Copies every value `set` in patch over base (for updates). */
void model_merge(const struct resource_def *def, struct row *base, const struct row *patch);

/*
 * Encodes a row as a new JSON object (caller owns the reference). Secret
 * fields are left out; times become RFC 3339 strings; JSON-text fields are
 * embedded as JSON.
 */
struct json_t *model_encode(const struct resource_def *def, const struct row *r);

/* "an object", "a string", "an integer", ...: a JSON value's kind, for error messages. */
const char *model_json_kind(const struct json_t *j);

/*
 * The pool a GPU belongs to (0: none): the first pool (in the order given,
 * by id) naming it in gpu_ids, else the first whose cluster and node
 * selector hold its node (node_labels: the node's labels as JSON text).
 */
int64_t model_pool_of_gpu(const struct row *pools, size_t n_pools, int64_t gpu_id,
                          int64_t cluster_id, const char *node_labels);

/* Slug and identifier checks, exported for the CLI and tests. */
bool model_valid_name(const char *s, size_t max);
bool model_valid_ident(const char *s, size_t max);

#endif
