/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h: the one storage interface, with two engines behind it: SQLite
 * (embedded default: a file in WAL mode with a busy timeout) and PostgreSQL
 * (libpq, chosen by a postgresql:// or postgres:// URL).
 *
 * A store holds a fixed pool of connections; each thread takes one with
 * store_conn_get() for the length of a request and gives it back with
 * store_conn_put(). All row operations go through a connection and take a
 * resource definition from model.h: the SQL is built from that definition's
 * table and column names only (never from request data) and every value is
 * a bound parameter.
 *
 * Schema changes are numbered migrations applied by store_open(), each in its
 * own transaction, idempotently; a store whose schema is newer than this
 * binary knows is refused with ERR_SCHEMA_NEWER. A database that holds tables
 * but is no gpuaas store (another program's file or schema) is refused with
 * ERR_STORE, untouched. SQLite stores carry gpuaas' application_id.
 *
 * Errors: ERR_NOT_FOUND (no such row), ERR_CONFLICT (a unique key is taken,
 * or a row is still referenced by another on delete), ERR_INVALID (a
 * reference to a row that does not exist), ERR_BUSY (lock timeout),
 * ERR_STORE (anything else, with the engine's message in ei). PostgreSQL adds
 * ERR_UNAVAILABLE: the server session was lost; the pooled connection
 * reconnects on its next use outside a transaction.
 */
#ifndef GPUAAS_STORE_H
#define GPUAAS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/err.h"
#include "model/model.h"

struct store;
struct store_conn;

enum store_engine { STORE_SQLITE, STORE_POSTGRES };

struct store_options {
    int n_conns;            /* connections in the pool, >= 1 */
    int busy_timeout_ms;    /* SQLite busy timeout, PostgreSQL lock_timeout; <= 0: 5000 */
    bool sqlite_sync_full;  /* SQLite synchronous=FULL instead of NORMAL */
};

/*
 * Opens a store from a URL: "postgresql://..." or "postgres://..." selects
 * PostgreSQL; "sqlite:PATH", "file:PATH" or a plain path selects SQLite
 * (the file is created when missing; "file:///abs/path" is /abs/path).
 * opt NULL means 4 connections and a 5000 ms busy timeout. Applies pending
 * migrations. On failure ei says why in one line ("could not open database
 * 'x': ...", "could not connect to postgresql: ..."; ERR_SCHEMA_NEWER when
 * the store was migrated by a newer binary). The caller frees the store
 * with store_close().
 */
int store_open(const char *url, const struct store_options *opt, struct store **ret_store,
               struct error_info *ei);
/* Closes every connection; NULL is fine. No connection may be in use. */
void store_close(struct store *s);
enum store_engine store_engine(const struct store *s);
/*
 * Claims the store for this process until store_close: shared (alone false:
 * a daemon serving it; any number of them) or alone (a tool that must not
 * run beside a daemon). ERR_BUSY when the other kind of claim is held.
 * SQLite only (a lock on the file); PostgreSQL: always 0.
 */
int store_claim(struct store *s, bool alone, struct error_info *ei);
/*
 * ERR_UNAVAILABLE (with why in ei) when the store can no longer take
 * changes because it is gone: an SQLite file removed or replaced since it was
 * opened. Every transaction checks the same, so nothing is acknowledged into
 * a lost file; a daemon asks now and then to stop. Always 0 on PostgreSQL.
 */
int store_check(struct store *s, struct error_info *ei);
/* The schema version now in the store, and the newest this binary knows. */
int store_schema_version(struct store *s);
int store_schema_latest(void);

/* Takes a connection from the pool, waiting while all are in use. */
struct store_conn *store_conn_get(struct store *s);
/* Gives it back; a transaction still open on it is rolled back. */
void store_conn_put(struct store_conn *c);

/*
 * Transactions: every multi-row change runs inside one. Not nestable. After
 * an error inside a transaction, roll it back: PostgreSQL has already
 * aborted it and SQLite has not, so only store_rollback() is portable. A
 * failed store_commit() has rolled the transaction back.
 */
int store_begin(struct store_conn *c, struct error_info *ei);
int store_commit(struct store_conn *c, struct error_info *ei);
/* Rolls back; harmless when no transaction is open. */
void store_rollback(struct store_conn *c);

/*
 * Inserts a row of def. Values of field 0 ("id") are ignored: the store
 * assigns the id and returns it in *ret_id. Every other field is written as
 * it is in r (unset values are written as NULL).
 */
int store_insert(struct store_conn *c, const struct resource_def *def, const struct row *r,
                 int64_t *ret_id, struct error_info *ei);
/* Reads one row by id into *ret_row (memory in a). ERR_NOT_FOUND if none. */
int store_get(struct store_conn *c, const struct resource_def *def, int64_t id, struct arena *a,
              struct row *ret_row, struct error_info *ei);
/* Replaces every field but id of row `id` with r's. ERR_NOT_FOUND if none. */
int store_update(struct store_conn *c, const struct resource_def *def, int64_t id,
                 const struct row *r, struct error_info *ei);
/* Deletes row `id`. ERR_NOT_FOUND if none, ERR_CONFLICT if still referenced. */
int store_delete(struct store_conn *c, const struct resource_def *def, int64_t id,
                 struct error_info *ei);

#define STORE_MAX_EQ 8
#define STORE_MAX_ANY 4

/*
 * A list query: rows matching every `eq` (field == value; a null value
 * matches SQL NULL), when n_any > 0 at least one `any` (field's value is
 * one of ids), and the range when there is one, with id > after_id, in id
 * order, at most limit rows.
 */
struct store_filter {
    struct {
        int field; /* index into def->fields */
        struct value val;
    } eq[STORE_MAX_EQ];
    int n_eq;
    struct {
        int field;          /* index into def->fields; an FT_INT or FT_REF column */
        const int64_t *ids; /* n_ids ids; an empty list matches nothing */
        size_t n_ids;
    } any[STORE_MAX_ANY];
    int n_any;
    /* when n_range is 1: lo <= field < hi (an integer column) */
    struct {
        int field;
        int64_t lo, hi;
    } range;
    int n_range;
    int64_t after_id;
    int limit; /* 1..10000 */
};

/* No conditions, after_id 0, limit 100. */
void store_filter_init(struct store_filter *f);
/*
 * Adds an equality; asserts there is room. _int is for fields stored as
 * integers (FT_INT, FT_BOOL, FT_REF, FT_TIME), _str for the others (s is
 * not copied); store_list refuses a mismatch with ERR_INVALID.
 */
void store_filter_eq_int(struct store_filter *f, int field, int64_t i);
void store_filter_eq_str(struct store_filter *f, int field, const char *s);
void store_filter_eq_null(struct store_filter *f, int field);
void store_filter_any(struct store_filter *f, int field, const int64_t *ids, size_t n_ids);
/* Rows whose integer field (FT_INT, FT_TIME, FT_REF) is in [lo, hi); one range per filter. */
void store_filter_range(struct store_filter *f, int field, int64_t lo, int64_t hi);

/*
 * Runs a list query; *ret_rows (in a) holds *ret_n rows. ERR_INVALID for a
 * filter out of range (limit, field index, value kind, any on a non-id field).
 */
int store_list(struct store_conn *c, const struct resource_def *def, const struct store_filter *f,
               struct arena *a, struct row **ret_rows, size_t *ret_n, struct error_info *ei);

/*
 * Every row matching f, read the largest page (10,000 rows) at a time: its
 * limit and after_id are set here. *ret_rows (in a) holds *ret_n rows in id
 * order; errors as store_list.
 */
int store_list_all(struct store_conn *c, const struct resource_def *def, struct store_filter *f,
                   struct arena *a, struct row **ret_rows, size_t *ret_n, struct error_info *ei);

/* The largest id of def's table (0 when empty): where a follower of new rows starts. */
int store_max_id(struct store_conn *c, const struct resource_def *def, int64_t *ret_id,
                 struct error_info *ei);

/*
 * One change for the audit trail (store_audit): who made it, how, and the
 * object before and after (NULL: it did not exist then, or does not now).
 */
struct store_audit_entry {
    int64_t time_s;
    int64_t actor_id;       /* the user; 0: none (the daemon itself) */
    const char *actor;      /* the user's name; NULL: "system" */
    const char *action;     /* create, update, delete, import, ... */
    const char *request_id; /* the API request, or what the daemon was doing */
    const struct resource_def *def;
    int64_t object_id;
    const struct row *before, *after;
};

/* Appends the entry through c (inside the change's transaction, when it has one). */
int store_audit(struct store_conn *c, const struct store_audit_entry *e, struct arena *a,
                struct error_info *ei);

/* Small key/value settings kept in the store (bootstrap marker and such). */
int store_meta_get(struct store_conn *c, const char *key, struct arena *a, char **ret_value,
                   struct error_info *ei); /* ERR_NOT_FOUND when missing */
int store_meta_set(struct store_conn *c, const char *key, const char *value,
                   struct error_info *ei);

#endif
