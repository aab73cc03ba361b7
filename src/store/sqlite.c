/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sqlite.c: the SQLite engine. Every pooled connection is its own sqlite3
 * handle on the same file, used by one thread at a time (so SQLite's own
 * mutexes are off), in WAL mode so readers never wait for the writer.
 * Transactions start with BEGIN IMMEDIATE: writers queue on the busy timeout
 * up front instead of failing when a read transaction tries to upgrade.
 * Statements of fixed shape are prepared once per connection and cached;
 * a get by id is then a bind, one step and a reset.
 *
 * The file holds every tenant's data and token hashes: it is created 0600
 * (SQLite gives its -wal and -shm files the same mode) and an existing one
 * loses any group or other access at open. Each connection remembers which
 * file it opened (device and inode); every transaction first checks that the
 * path still names it, so a store removed or replaced under a running
 * daemon refuses writes instead of acknowledging them into a deleted file.
 */
#include "base/common.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "store/store-int.h"

/*
 * Lists and other statements whose text depends on the request's shape
 * (which filters, how many) are kept too, the most recently used few: the
 * same shapes recur (token lookups, a workload's open allocations, ...).
 */
#define SHAPED_CACHE 16

struct shaped_stmt {
    char *sql;
    sqlite3_stmt *st;
    uint64_t used;
};

struct sqlite_conn {
    sqlite3 *db;
    char *path; /* NULL for an in-memory store */
    dev_t dev;  /* the file this connection opened */
    ino_t ino;
    struct store__stmt_cache cache;
    struct shaped_stmt shaped[SHAPED_CACHE];
    uint64_t clock;
    char errmsg[256]; /* the last failure's message, which store__error copies */
};

static struct sqlite_conn *conn_of(struct store_conn *c)
{
    return c->impl;
}

/* ---- failures ---- */

/*
 * ON DELETE RESTRICT is implemented by SQLite as a trigger that raises
 * "FOREIGN KEY constraint failed", so it surfaces as a trigger constraint;
 * the schema has no triggers of its own, so the message identifies it.
 */
static enum store__fail classify(int rc, const char *msg)
{
    switch (rc) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
        return STORE_FAIL_UNIQUE;
    case SQLITE_CONSTRAINT_FOREIGNKEY:
        return STORE_FAIL_FOREIGN_KEY;
    case SQLITE_CONSTRAINT_TRIGGER:
        if (strcmp(msg, "FOREIGN KEY constraint failed") == 0)
            return STORE_FAIL_FOREIGN_KEY;
        break;
    case SQLITE_CONSTRAINT_NOTNULL:
        return STORE_FAIL_NOT_NULL;
    default:
        break;
    }
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return STORE_FAIL_BUSY;
    default:
        return STORE_FAIL_OTHER;
    }
}

/*
 * Describes failure rc of the last call on sc->db. The message is copied
 * because resetting the statement may replace SQLite's. For NOT NULL the
 * column is what follows the last '.' of "NOT NULL constraint failed: t.col".
 */
static void describe(struct sqlite_conn *sc, int rc, struct store__failure *f)
{
    const char *dot;

    snprintf(sc->errmsg, sizeof(sc->errmsg), "%s", sqlite3_errmsg(sc->db));
    f->kind = classify(rc, sc->errmsg);
    f->message = sc->errmsg;
    dot = strrchr(sc->errmsg, '.');
    f->column = f->kind == STORE_FAIL_NOT_NULL && dot ? dot + 1 : NULL;
}

static int fail(struct sqlite_conn *sc, int rc, enum store__op op, const struct resource_def *def,
                int64_t id, struct error_info *ei)
{
    struct store__failure f = {0};

    describe(sc, rc, &f);
    return store__error(ei, op, def, id, &f);
}

/* ---- running statements ---- */

/* Strings are bound SQLITE_STATIC: every caller resets the statement before they go away. */
static int bind_params(sqlite3_stmt *st, const struct store__params *p)
{
    int rc = SQLITE_OK;

    for (int i = 0; i < p->n && rc == SQLITE_OK; i++) {
        const struct store__param *v = &p->p[i];
        switch (v->kind) {
        case STORE_P_NULL:
            rc = sqlite3_bind_null(st, i + 1);
            break;
        case STORE_P_INT:
            rc = sqlite3_bind_int64(st, i + 1, v->i);
            break;
        case STORE_P_TEXT:
            rc = sqlite3_bind_text(st, i + 1, v->s, -1, SQLITE_STATIC);
            break;
        }
    }
    return rc;
}

typedef void row_fn(sqlite3_stmt *st, void *ctx);

/*
 * Binds p and steps st to the end, handing each row to on_row (may be NULL);
 * then resets st so it holds no read snapshot. Returns SQLITE_OK or the
 * failing result code, with the failure described in *f.
 */
static int step_all(struct sqlite_conn *sc, sqlite3_stmt *st, const struct store__params *p,
                    row_fn *on_row, void *ctx, struct store__failure *f)
{
    int rc = bind_params(st, p);

    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (on_row)
            on_row(st, ctx);
        rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK)
        describe(sc, rc, f);
    sqlite3_reset(st);
    return rc;
}

/* The cached statement k of def, prepared on first use. */
static int cached(struct sqlite_conn *sc, const struct resource_def *def, enum store__stmt k,
                  sqlite3_stmt **ret_st, struct store__failure *f)
{
    void **slot = store__stmt_slot(&sc->cache, def, k);

    if (!*slot) {
        char *sql = store__sql_stmt(STORE_SQLITE, def, k);
        sqlite3_stmt *st = NULL;
        int rc = sqlite3_prepare_v3(sc->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
        free(sql);
        if (rc != SQLITE_OK) {
            describe(sc, rc, f);
            return rc;
        }
        *slot = st;
    }
    *ret_st = *slot;
    return SQLITE_OK;
}

/* Runs cached statement k of def with p; 0 or the mapped error. */
static int run_cached(struct sqlite_conn *sc, const struct resource_def *def, enum store__stmt k,
                      const struct store__params *p, row_fn *on_row, void *ctx, enum store__op op,
                      int64_t id, struct error_info *ei)
{
    struct store__failure f = {0};
    sqlite3_stmt *st;

    if (cached(sc, def, k, &st, &f) != SQLITE_OK ||
        step_all(sc, st, p, on_row, ctx, &f) != SQLITE_OK)
        return store__error(ei, op, def, id, &f);
    return 0;
}

/* The prepared statement for sql from the shaped cache, preparing (and evicting) as needed. */
static int shaped(struct sqlite_conn *sc, const char *sql, sqlite3_stmt **ret_st,
                  struct store__failure *f)
{
    struct shaped_stmt *victim = &sc->shaped[0];
    sqlite3_stmt *st = NULL;
    int rc;

    for (int i = 0; i < SHAPED_CACHE; i++) {
        struct shaped_stmt *e = &sc->shaped[i];
        if (e->sql && strcmp(e->sql, sql) == 0) {
            e->used = ++sc->clock;
            *ret_st = e->st;
            return SQLITE_OK;
        }
        if (!e->sql || e->used < victim->used)
            victim = e;
    }
    rc = sqlite3_prepare_v3(sc->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        describe(sc, rc, f);
        return rc;
    }
    sqlite3_finalize(victim->st);
    free(victim->sql);
    *victim = (struct shaped_stmt){xstrdup(sql), st, ++sc->clock};
    *ret_st = st;
    return SQLITE_OK;
}

/* Runs sql (prepared once per connection while it stays in use) with p; 0 or the mapped error. */
static int run_once(struct sqlite_conn *sc, const char *sql, const struct store__params *p,
                    row_fn *on_row, void *ctx, enum store__op op, const struct resource_def *def,
                    struct error_info *ei)
{
    struct store__failure f = {0};
    sqlite3_stmt *st = NULL;
    int rc = shaped(sc, sql, &st, &f);

    if (rc == SQLITE_OK)
        rc = step_all(sc, st, p, on_row, ctx, &f);
    if (rc == SQLITE_OK)
        sqlite3_clear_bindings(st);
    return rc == SQLITE_OK ? 0 : store__error(ei, op, def, 0, &f);
}

static int exec_script(struct sqlite_conn *sc, const char *sql, struct error_info *ei)
{
    int rc = sqlite3_exec(sc->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? 0 : fail(sc, rc, STORE_OP_OTHER, NULL, 0, ei);
}

/* ---- reading rows ---- */

static void read_value(sqlite3_stmt *st, int col, const struct field_def *f, struct arena *a,
                       struct value *v)
{
    v->set = true;
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        v->null = true;
    } else if (store__field_is_int(f)) {
        v->i = sqlite3_column_int64(st, col);
    } else {
        const char *s = (const char *)sqlite3_column_text(st, col);
        v->s = arena_strndup(a, s, (size_t)sqlite3_column_bytes(st, col));
    }
}

struct rows_ctx {
    const struct resource_def *def;
    struct arena *a;
    struct row *rows; /* room for the list's limit */
    size_t n;
};

static void read_row(sqlite3_stmt *st, void *ctx)
{
    struct rows_ctx *rc = ctx;
    struct row r = model_row_new(rc->def, rc->a);

    for (size_t i = 0; i < rc->def->n_fields; i++)
        read_value(st, (int)i, &rc->def->fields[i], rc->a, &r.v[i]);
    rc->rows[rc->n++] = r;
}

static void read_int(sqlite3_stmt *st, void *ctx)
{
    *(int64_t *)ctx = sqlite3_column_int64(st, 0);
}

struct text_ctx {
    struct arena *a;
    char *s;
};

static void read_text(sqlite3_stmt *st, void *ctx)
{
    struct text_ctx *t = ctx;
    t->s = arena_strdup(t->a, (const char *)sqlite3_column_text(st, 0));
}

/* ---- the engine's operations ---- */

static int sqlite_insert(struct store_conn *c, const struct resource_def *def, const struct row *r,
                         int64_t *ret_id, struct error_info *ei)
{
    struct store__params p = {.n = 0};
    int64_t id = 0;
    int rc;

    store__params_row(def, r, &p);
    rc = run_cached(conn_of(c), def, STORE_STMT_INSERT, &p, read_int, &id, STORE_OP_INSERT, 0, ei);
    if (rc == 0)
        *ret_id = id;
    return rc;
}

static int sqlite_get(struct store_conn *c, const struct resource_def *def, int64_t id,
                      struct arena *a, struct row *ret_row, struct error_info *ei)
{
    struct store__params p = {.n = 0};
    struct row r;
    struct rows_ctx ctx = {def, a, &r, 0};
    int rc;

    store__params_id(id, &p);
    rc = run_cached(conn_of(c), def, STORE_STMT_GET, &p, read_row, &ctx, STORE_OP_READ, id, ei);
    if (rc < 0)
        return rc;
    if (ctx.n == 0)
        return store__not_found(ei, def, id);
    *ret_row = r;
    return 0;
}

/* UPDATE and DELETE by id: no row changed means there was no such row. */
static int change_by_id(struct store_conn *c, const struct resource_def *def, int64_t id,
                        enum store__stmt k, enum store__op op, const struct store__params *p,
                        struct error_info *ei)
{
    struct sqlite_conn *sc = conn_of(c);
    int rc = run_cached(sc, def, k, p, NULL, NULL, op, id, ei);

    if (rc == 0 && sqlite3_changes64(sc->db) == 0)
        return store__not_found(ei, def, id);
    return rc;
}

static int sqlite_update(struct store_conn *c, const struct resource_def *def, int64_t id,
                         const struct row *r, struct error_info *ei)
{
    struct store__params p = {.n = 0};

    store__params_row(def, r, &p);
    store__params_id(id, &p);
    return change_by_id(c, def, id, STORE_STMT_UPDATE, STORE_OP_UPDATE, &p, ei);
}

static int sqlite_delete(struct store_conn *c, const struct resource_def *def, int64_t id,
                         struct error_info *ei)
{
    struct store__params p = {.n = 0};

    store__params_id(id, &p);
    return change_by_id(c, def, id, STORE_STMT_DELETE, STORE_OP_DELETE, &p, ei);
}

static int sqlite_list(struct store_conn *c, const struct resource_def *def,
                       const struct store_filter *f, struct arena *a, struct row **ret_rows,
                       size_t *ret_n, struct error_info *ei)
{
    struct store__query q;
    struct rows_ctx ctx = {def, a, NULL, 0};
    int rc = store__sql_list(STORE_SQLITE, def, f, &q, ei);

    if (rc < 0)
        return rc;
    ctx.rows = arena_calloc(a, (size_t)f->limit, sizeof(struct row));
    rc = run_once(conn_of(c), q.sql.data, &q.params, read_row, &ctx, STORE_OP_READ, def, ei);
    store__query_release(&q);
    if (rc < 0)
        return rc;
    *ret_rows = ctx.rows;
    *ret_n = ctx.n;
    return 0;
}

static int sqlite_meta_get(struct store_conn *c, const char *key, struct arena *a, char **ret_value,
                           struct error_info *ei)
{
    struct store__params p = {.n = 0};
    struct text_ctx t = {a, NULL};
    int rc;

    store__params_add_text(&p, key);
    rc = run_cached(conn_of(c), NULL, STORE_STMT_META_GET, &p, read_text, &t, STORE_OP_READ, 0, ei);
    if (rc == 0 && !t.s)
        return errinfo_set(ei, ERR_NOT_FOUND, NULL, "no setting '%s' in the store", key);
    if (rc == 0)
        *ret_value = t.s;
    return rc;
}

static int sqlite_meta_set(struct store_conn *c, const char *key, const char *value,
                           struct error_info *ei)
{
    struct store__params p = {.n = 0};

    store__params_add_text(&p, key);
    store__params_add_text(&p, value);
    return run_cached(conn_of(c), NULL, STORE_STMT_META_SET, &p, NULL, NULL, STORE_OP_UPDATE, 0,
                      ei);
}

static int sqlite_exec(struct store_conn *c, const char *sql, struct error_info *ei)
{
    return exec_script(conn_of(c), sql, ei);
}

static int sqlite_run(struct store_conn *c, const char *sql, const struct store__params *p,
                      int64_t *ret_val, struct error_info *ei)
{
    int64_t val = 0;
    int rc = run_once(conn_of(c), sql, p, read_int, &val, STORE_OP_OTHER, NULL, ei);

    if (rc == 0 && ret_val)
        *ret_val = val;
    return rc;
}

/*
 * ERR_UNAVAILABLE when the path no longer names the file this connection
 * opened: what is written now would be lost with the old file, and a restart
 * would start an empty store.
 */
static int check_same_file(const struct sqlite_conn *sc, struct error_info *ei)
{
    struct stat st;

    if (!sc->path)
        return 0;
    if (stat(sc->path, &st) != 0)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                           "the store file '%s' was removed while gpuaasd was running (%s); "
                           "changes are refused: restore it and restart gpuaasd",
                           sc->path, strerror(errno));
    if (st.st_dev != sc->dev || st.st_ino != sc->ino)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                           "the store file '%s' was replaced by another file while gpuaasd was "
                           "running; changes are refused: restart gpuaasd",
                           sc->path);
    return 0;
}

static int sqlite_check(struct store_conn *c, struct error_info *ei)
{
    return check_same_file(conn_of(c), ei);
}

static int sqlite_begin(struct store_conn *c, struct error_info *ei)
{
    int rc = check_same_file(conn_of(c), ei);

    return rc < 0 ? rc : exec_script(conn_of(c), "BEGIN IMMEDIATE", ei);
}

static int sqlite_commit(struct store_conn *c, struct error_info *ei)
{
    /* Checked again at the end: the file may have gone while the transaction ran. */
    int rc = check_same_file(conn_of(c), ei);

    return rc < 0 ? rc : exec_script(conn_of(c), "COMMIT", ei);
}

static void sqlite_rollback(struct store_conn *c)
{
    struct sqlite_conn *sc = conn_of(c);

    /* SQLite may already have rolled back on its own (after a full disk, say). */
    if (!sqlite3_get_autocommit(sc->db))
        sqlite3_exec(sc->db, "ROLLBACK", NULL, NULL, NULL);
}

/* ---- connections ---- */

static const char pragmas_normal[] = "PRAGMA journal_mode = WAL;"
                                     "PRAGMA synchronous = NORMAL;"
                                     "PRAGMA foreign_keys = ON;";
/* FULL also syncs the WAL on every commit: no committed write is lost on power failure. */
static const char pragmas_full[] = "PRAGMA journal_mode = WAL;"
                                   "PRAGMA synchronous = FULL;"
                                   "PRAGMA foreign_keys = ON;";

/*
 * Switching a new file to WAL needs an exclusive lock, and SQLite does not
 * call the busy handler for it: when several processes open a fresh store
 * at once, the losers get SQLITE_BUSY at once. Retry them within the busy
 * timeout like any other wait for a lock.
 */
static int exec_waiting(sqlite3 *db, const char *sql, int timeout_ms)
{
    const int step_ms = 10;
    int rc;

    for (int waited = 0;; waited += step_ms) {
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY || waited >= timeout_ms)
            return rc;
        sqlite3_sleep(step_ms);
    }
}

static int configure(sqlite3 *db, const struct store_options *opt)
{
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, opt->busy_timeout_ms);
    return exec_waiting(db, opt->sqlite_sync_full ? pragmas_full : pragmas_normal,
                        opt->busy_timeout_ms);
}

/* Takes group and other access away from a store file (and its -wal and -shm) that has it. */
static int tighten_mode(const char *path, struct error_info *ei)
{
    struct stat st;

    if (stat(path, &st) != 0)
        return errno == ENOENT
                   ? 0
                   : errinfo_set(ei, ERR_STORE, NULL, "could not open database '%s': %s", path,
                                 strerror(errno));
    if ((st.st_mode & 077) && chmod(path, st.st_mode & 0700) != 0)
        return errinfo_set(
            ei, ERR_STORE, NULL, "could not make '%s' private (mode %03o to %03o): %s", path,
            (unsigned)(st.st_mode & 0777), (unsigned)(st.st_mode & 0700), strerror(errno));
    return 0;
}

/*
 * Before SQLite opens path: a missing store whose write-ahead log is still
 * there was removed or moved, and opening would start an empty store beside
 * that log, so it is refused; a missing one is created 0600; an existing one
 * and its -wal and -shm files are made private.
 */
static int prepare_file(const char *path, struct error_info *ei)
{
    const char *sides[] = {"-wal", "-shm"};
    char side[PATH_MAX];
    struct stat st;
    int fd, rc;

    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return errinfo_set(ei, ERR_STORE, NULL, "could not open database '%s': %s", path,
                               strerror(errno));
        snprintf(side, sizeof(side), "%s-wal", path);
        if (stat(side, &st) == 0 && st.st_size > 0)
            return errinfo_set(ei, ERR_STORE, NULL,
                               "could not open database '%s': it is missing, but its write-ahead "
                               "log '%s' is there, so the store was removed or moved; put it "
                               "back, or remove '%s' to start an empty store",
                               path, side, side);
        /* Where it cannot be made (no such directory), SQLite's open says why. */
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0)
            return 0;
        close(fd);
    }
    rc = tighten_mode(path, ei);
    for (size_t i = 0; i < ARRAY_SIZE(sides) && rc == 0; i++) {
        snprintf(side, sizeof(side), "%s%s", path, sides[i]);
        rc = tighten_mode(side, ei);
    }
    return rc;
}

static int sqlite_conn_open(struct store_conn *c, const char *path, const struct store_options *opt,
                            struct error_info *ei)
{
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    const bool in_memory = strcmp(path, ":memory:") == 0;
    struct sqlite_conn *sc;
    struct stat st;
    sqlite3 *db = NULL;
    int rc;

    /* Each pooled connection opens the path anew: ":memory:" would be one database each. */
    if (strcmp(path, ":memory:") == 0 && opt->n_conns > 1)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "an in-memory SQLite store needs a pool of exactly 1 connection");
    if (!in_memory && prepare_file(path, ei) < 0)
        return ERR_STORE;
    rc = sqlite3_open_v2(path, &db, flags, NULL);
    /* A file that is not a database opens fine and fails on the first statement. */
    if (rc == SQLITE_OK)
        rc = configure(db, opt);
    if (rc != SQLITE_OK) {
        errinfo_set(ei, ERR_STORE, NULL, "could not open database '%s': %s", path,
                    db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return ERR_STORE;
    }
    /* The file SQLite has open now: the path names it, and nothing removes it in between. */
    if (!in_memory && stat(path, &st) != 0) {
        errinfo_set(ei, ERR_STORE, NULL, "could not open database '%s': %s", path, strerror(errno));
        sqlite3_close(db);
        return ERR_STORE;
    }
    sc = xcalloc(1, sizeof(*sc));
    sc->db = db;
    if (!in_memory) {
        sc->path = xstrdup(path);
        sc->dev = st.st_dev;
        sc->ino = st.st_ino;
    }
    c->impl = sc;
    return 0;
}

static void finalize_handle(void *h)
{
    sqlite3_finalize(h);
}

static void sqlite_conn_close(struct store_conn *c)
{
    struct sqlite_conn *sc = conn_of(c);

    if (!sc)
        return;
    store__stmt_cache_release(&sc->cache, finalize_handle);
    for (int i = 0; i < SHAPED_CACHE; i++) {
        sqlite3_finalize(sc->shaped[i].st);
        free(sc->shaped[i].sql);
    }
    sqlite3_close(sc->db);
    free(sc->path);
    free(sc);
    c->impl = NULL;
}

const struct store_engine_ops store__sqlite_ops = {
    .name = "sqlite",
    .dialect = STORE_SQLITE,
    .conn_open = sqlite_conn_open,
    .conn_close = sqlite_conn_close,
    .begin = sqlite_begin,
    .commit = sqlite_commit,
    .rollback = sqlite_rollback,
    .insert = sqlite_insert,
    .get = sqlite_get,
    .update = sqlite_update,
    .del = sqlite_delete,
    .list = sqlite_list,
    .meta_get = sqlite_meta_get,
    .meta_set = sqlite_meta_set,
    .exec = sqlite_exec,
    .run = sqlite_run,
    .check = sqlite_check,
};
