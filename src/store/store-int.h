/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store-int.h: what only the files of src/store (and white-box tests) share.
 *
 * A store engine is a table of function pointers (struct store_engine_ops),
 * so a fault-injecting fake can wrap a real engine and plug in through
 * store__open_with(). store.c owns everything engine-neutral: the connection
 * pool, transactions bookkeeping, migrations, filter checks and the mapping of
 * engine failures to project errors. sql.c builds every SQL text from the
 * resource definitions; the engines only prepare, bind, step and read.
 */
#ifndef GPUAAS_STORE_INT_H
#define GPUAAS_STORE_INT_H

#include "base/buf.h"
#include "store/store.h"

/* ---- connections ---- */

struct store_conn {
    struct store *s;
    void *impl; /* the engine's per-connection state */
    bool in_tx; /* kept by store.c; engines read it, never write it */
};

/* ---- bound parameters, engine-neutral ---- */

enum store__param_kind { STORE_P_NULL, STORE_P_INT, STORE_P_TEXT };

struct store__param {
    enum store__param_kind kind;
    int64_t i;
    const char *s;
};

/* Most parameters a statement takes: a row's fields, or a full list filter. */
#define STORE__MAX_PARAMS 64

struct store__params {
    struct store__param p[STORE__MAX_PARAMS];
    int n;
};

/* ---- failures, classified by the engine, worded by store.c ---- */

enum store__fail {
    STORE_FAIL_OTHER,
    STORE_FAIL_UNIQUE,
    STORE_FAIL_FOREIGN_KEY,
    STORE_FAIL_NOT_NULL,
    STORE_FAIL_BUSY,
    STORE_FAIL_CONN, /* the server connection is gone (PostgreSQL) */
};

enum store__op { STORE_OP_READ, STORE_OP_INSERT, STORE_OP_UPDATE, STORE_OP_DELETE, STORE_OP_OTHER };

/*
 * What went wrong in an engine call: the kind, the column concerned when the
 * engine says (NOT NULL), and the engine's own one-line message.
 */
struct store__failure {
    enum store__fail kind;
    const char *column;
    const char *message;
};

/*
 * Records the project error for a failed operation op on a row of def (NULL
 * for statements that are not about a resource) with id (for deletes) in ei,
 * and returns it: ERR_CONFLICT, ERR_INVALID, ERR_BUSY, ERR_UNAVAILABLE or
 * ERR_STORE.
 */
int store__error(struct error_info *ei, enum store__op op, const struct resource_def *def,
                 int64_t id, const struct store__failure *f);
/* ERR_NOT_FOUND for row `id` of def. */
int store__not_found(struct error_info *ei, const struct resource_def *def, int64_t id);

/* ---- the engine table ---- */

struct store_engine_ops {
    const char *name;          /* "sqlite", "postgresql" */
    enum store_engine dialect; /* which SQL sql.c writes for it */

    /* Opens c->impl on target (a path or a libpq URL). */
    int (*conn_open)(struct store_conn *c, const char *target, const struct store_options *opt,
                     struct error_info *ei);
    void (*conn_close)(struct store_conn *c);

    int (*begin)(struct store_conn *c, struct error_info *ei);
    /* On failure the transaction is over (rolled back) or rollback ends it. */
    int (*commit)(struct store_conn *c, struct error_info *ei);
    void (*rollback)(struct store_conn *c);

    int (*insert)(struct store_conn *c, const struct resource_def *def, const struct row *r,
                  int64_t *ret_id, struct error_info *ei);
    int (*get)(struct store_conn *c, const struct resource_def *def, int64_t id, struct arena *a,
               struct row *ret_row, struct error_info *ei);
    int (*update)(struct store_conn *c, const struct resource_def *def, int64_t id,
                  const struct row *r, struct error_info *ei);
    int (*del)(struct store_conn *c, const struct resource_def *def, int64_t id,
               struct error_info *ei);
    /* f has passed store__filter_check(). */
    int (*list)(struct store_conn *c, const struct resource_def *def, const struct store_filter *f,
                struct arena *a, struct row **ret_rows, size_t *ret_n, struct error_info *ei);

    int (*meta_get)(struct store_conn *c, const char *key, struct arena *a, char **ret_value,
                    struct error_info *ei);
    int (*meta_set)(struct store_conn *c, const char *key, const char *value,
                    struct error_info *ei);

    /* Runs a script of one or more statements without parameters. */
    int (*exec)(struct store_conn *c, const char *sql, struct error_info *ei);
    /*
     * Runs one uncached statement (placeholders in the engine's dialect) with
     * parameters; when it yields a row and ret_val is not NULL, *ret_val gets
     * the row's first column as an integer.
     */
    int (*run)(struct store_conn *c, const char *sql, const struct store__params *p,
               int64_t *ret_val, struct error_info *ei);
    /*
     * Optional: ERR_UNAVAILABLE when the store c opened is no longer there
     * (SQLite: the file was removed or replaced). Reads only what conn_open
     * set, so any thread may ask about any connection.
     */
    int (*check)(struct store_conn *c, struct error_info *ei);
};

extern const struct store_engine_ops store__sqlite_ops;
extern const struct store_engine_ops store__pg_ops;

/*
 * Opens a store on any engine table (store_open picks a real one from the
 * URL; tests pass a fake wrapping a real one). Same contract as store_open.
 */
int store__open_with(const struct store_engine_ops *ops, const char *target,
                     const struct store_options *opt, struct store **ret_store,
                     struct error_info *ei);

/* Runs a script on a connection, for tests and tools. */
int store__exec(struct store_conn *c, const char *sql, struct error_info *ei);
/*
 * Runs one statement written with `?` placeholders, for tests and tools;
 * *ret_val (may be NULL) gets the first column of its first row, if any.
 */
int store__run(struct store_conn *c, const char *sql, const struct store__params *p,
               int64_t *ret_val, struct error_info *ei);

/* Checks a list filter against def: ranges, field indexes and value kinds. */
int store__filter_check(const struct resource_def *def, const struct store_filter *f,
                        struct error_info *ei);

/* ---- SQL text (sql.c) ---- */

/* The statements of fixed shape, prepared once per connection and cached. */
enum store__stmt {
    STORE_STMT_INSERT,   /* params: fields 1..n-1; yields the new id */
    STORE_STMT_GET,      /* params: id; yields every column in field order */
    STORE_STMT_UPDATE,   /* params: fields 1..n-1, then id */
    STORE_STMT_DELETE,   /* params: id */
    STORE_STMT_META_GET, /* def NULL; params: key; yields value */
    STORE_STMT_META_SET, /* def NULL; params: key, value */
    STORE_STMT_N_,
};

/* Whether a field is stored as an integer column (else as text). */
bool store__field_is_int(const struct field_def *f);

/* The SQL text of a cached statement; the caller frees it. */
char *store__sql_stmt(enum store_engine dialect, const struct resource_def *def,
                      enum store__stmt k);

/*
 * Rewrites constant SQL written with `?` placeholders (none inside literals)
 * into the dialect's; the caller frees the result.
 */
char *store__sql_dialect(enum store_engine dialect, const char *sql);

/* Parameters for the cached statements: a row's fields (and the id). */
void store__params_row(const struct resource_def *def, const struct row *r,
                       struct store__params *p);
void store__params_id(int64_t id, struct store__params *p);
void store__params_add_int(struct store__params *p, int64_t i);
void store__params_add_text(struct store__params *p, const char *s);

/*
 * A list query: its SQL text and the parameters, built together in one walk
 * over the filter so the two cannot disagree. Release with
 * store__query_release().
 */
struct store__query {
    struct buf sql;
    struct store__params params;
    char *owned[STORE_MAX_ANY]; /* JSON id arrays the params point into */
    int n_owned;
};

int store__sql_list(enum store_engine dialect, const struct resource_def *def,
                    const struct store_filter *f, struct store__query *q, struct error_info *ei);
void store__query_release(struct store__query *q);

/* ---- per-connection cache of prepared statements (sql.c) ---- */

struct store__stmt_entry {
    const struct resource_def *def; /* NULL for the meta statements */
    void *h[STORE_STMT_N_];         /* the engine's handle, NULL until prepared */
};

struct store__stmt_cache {
    struct store__stmt_entry *e;
    size_t n, cap;
};

/* The slot holding the handle of statement k of def (added when new). */
void **store__stmt_slot(struct store__stmt_cache *sc, const struct resource_def *def,
                        enum store__stmt k);
/* Frees every handle with free_handle and empties the cache. */
void store__stmt_cache_release(struct store__stmt_cache *sc, void (*free_handle)(void *h));

/* ---- migrations (migrations.c) ---- */

/* Name and SQL script of migration `version` (1..store_schema_latest()) for dialect. */
const char *store__migration_name(int version);
/* The caller frees the script. */
char *store__migration_sql(enum store_engine dialect, int version);

#endif
