/* SPDX-License-Identifier: Apache-2.0 */
/*
 * postgres.c: the PostgreSQL engine, over libpq. Every pooled connection is
 * its own server session with lock_timeout set from the store options, so a
 * blocked writer fails with ERR_BUSY instead of hanging a request. Statements
 * of fixed shape are prepared (named) once per session and cached; lists run
 * with PQexecParams. All parameters travel as text. A session that the
 * server dropped is re-established before the next statement, unless it died
 * inside a transaction, which the caller must roll back first.
 */
#include "base/common.h"

#include <libpq-fe.h>

#include "base/parse.h"
#include "store/store-int.h"

struct pg_conn {
    PGconn *pg;
    struct store__stmt_cache cache; /* handles are the statement names */
    int lock_timeout_ms;
    /* The last failure, copied out of its PGresult for store__error. */
    char errmsg[256];
    char errcol[64];
};

static struct pg_conn *conn_of(struct store_conn *c)
{
    return c->impl;
}

/*
 * Copies libpq's message s as one line: its lines joined with "; ", less
 * the indented hint lines. A multi-host URL gets one line per host tried.
 */
static void one_line(char *dst, size_t size, const char *s)
{
    size_t used = 0;

    dst[0] = '\0';
    while (*s) {
        size_t n = strcspn(s, "\n");
        if (n > 0 && s[0] != '\t' && used < size) {
            int w = snprintf(dst + used, size - used, "%s%.*s", used ? "; " : "", (int)n, s);
            used += w > 0 ? (size_t)w : 0;
        }
        s += n + (s[n] == '\n');
    }
}

/* ---- failures ---- */

static enum store__fail classify(const char *sqlstate, bool conn_bad)
{
    if (!sqlstate)
        return conn_bad ? STORE_FAIL_CONN : STORE_FAIL_OTHER;
    if (strcmp(sqlstate, "23505") == 0)
        return STORE_FAIL_UNIQUE;
    if (strcmp(sqlstate, "23503") == 0)
        return STORE_FAIL_FOREIGN_KEY;
    if (strcmp(sqlstate, "23502") == 0)
        return STORE_FAIL_NOT_NULL;
    /* lock_not_available (lock_timeout), serialization_failure, deadlock_detected */
    if (strcmp(sqlstate, "55P03") == 0 || strcmp(sqlstate, "40001") == 0 ||
        strcmp(sqlstate, "40P01") == 0)
        return STORE_FAIL_BUSY;
    if (strncmp(sqlstate, "08", 2) == 0 || strncmp(sqlstate, "57P", 3) == 0)
        return STORE_FAIL_CONN; /* connection exception, admin shutdown */
    return STORE_FAIL_OTHER;
}

static void describe(struct pg_conn *pc, const PGresult *res, struct store__failure *f)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *col = res ? PQresultErrorField(res, PG_DIAG_COLUMN_NAME) : NULL;

    one_line(pc->errmsg, sizeof(pc->errmsg), msg ? msg : PQerrorMessage(pc->pg));
    snprintf(pc->errcol, sizeof(pc->errcol), "%s", col ? col : "");
    f->kind = classify(state, PQstatus(pc->pg) == CONNECTION_BAD);
    f->message = pc->errmsg;
    f->column = col ? pc->errcol : NULL;
}

static bool result_ok(const PGresult *res)
{
    ExecStatusType st = PQresultStatus(res);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* ---- running statements ---- */

/* libpq takes every parameter as text here; numbers are written into num. */
struct pg_values {
    const char *v[STORE__MAX_PARAMS];
    char num[STORE__MAX_PARAMS][24];
};

static void to_text(const struct store__params *p, struct pg_values *pv)
{
    for (int i = 0; i < p->n; i++) {
        const struct store__param *x = &p->p[i];
        switch (x->kind) {
        case STORE_P_NULL:
            pv->v[i] = NULL;
            break;
        case STORE_P_INT:
            snprintf(pv->num[i], sizeof(pv->num[i]), "%" PRId64, x->i);
            pv->v[i] = pv->num[i];
            break;
        case STORE_P_TEXT:
            pv->v[i] = x->s;
            break;
        }
    }
}

/*
 * Runs a prepared statement (name) or a one-off one (sql) with p. Returns its
 * result, which the caller clears, or NULL with the failure described in *f.
 */
static PGresult *exec_params(struct pg_conn *pc, const char *name, const char *sql,
                             const struct store__params *p, struct store__failure *f)
{
    struct pg_values pv;
    PGresult *res = NULL;

    to_text(p, &pv);
    if (name)
        res = PQexecPrepared(pc->pg, name, p->n, pv.v, NULL, NULL, 0);
    else
        res = PQexecParams(pc->pg, sql, p->n, NULL, pv.v, NULL, NULL, 0);
    if (result_ok(res))
        return res;
    describe(pc, res, f);
    PQclear(res);
    return NULL;
}

/* The name of cached statement k of def, prepared in this session on first use. */
static const char *prepared(struct pg_conn *pc, const struct resource_def *def, enum store__stmt k,
                            struct store__failure *f)
{
    void **slot = store__stmt_slot(&pc->cache, def, k);

    if (!*slot) {
        char *name = xasprintf("gpuaas_%s_%d", def ? def->table : "meta", (int)k);
        char *sql = store__sql_stmt(STORE_POSTGRES, def, k);
        PGresult *res = PQprepare(pc->pg, name, sql, 0, NULL);
        bool ok = result_ok(res);
        if (!ok)
            describe(pc, res, f);
        PQclear(res);
        free(sql);
        if (!ok) {
            free(name);
            return NULL;
        }
        *slot = name;
    }
    return *slot;
}

/* Runs cached statement k of def; the result is the caller's to clear. */
static int run_cached(struct pg_conn *pc, const struct resource_def *def, enum store__stmt k,
                      const struct store__params *p, enum store__op op, int64_t id,
                      PGresult **ret_res, struct error_info *ei)
{
    struct store__failure f = {0};
    const char *name = prepared(pc, def, k, &f);
    PGresult *res = name ? exec_params(pc, name, NULL, p, &f) : NULL;

    if (!res)
        return store__error(ei, op, def, id, &f);
    *ret_res = res;
    return 0;
}

static int run_once(struct pg_conn *pc, const char *sql, const struct store__params *p,
                    enum store__op op, const struct resource_def *def, PGresult **ret_res,
                    struct error_info *ei)
{
    struct store__failure f = {0};
    PGresult *res = exec_params(pc, NULL, sql, p, &f);

    if (!res)
        return store__error(ei, op, def, 0, &f);
    *ret_res = res;
    return 0;
}

static int exec_script(struct pg_conn *pc, const char *sql, struct error_info *ei)
{
    PGresult *res = PQexec(pc->pg, sql);
    struct store__failure f = {0};
    int rc = 0;

    if (!result_ok(res)) {
        describe(pc, res, &f);
        rc = store__error(ei, STORE_OP_OTHER, NULL, 0, &f);
    }
    PQclear(res);
    return rc;
}

/* ---- sessions ---- */

/* Library code never prints: drop the server's NOTICEs ("... already exists, skipping"). */
static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int session_setup(struct pg_conn *pc, struct error_info *ei)
{
    struct store__params p = {.n = 0};
    char timeout[32];
    PGresult *res = NULL;
    int rc;

    snprintf(timeout, sizeof(timeout), "%dms", pc->lock_timeout_ms);
    store__params_add_text(&p, timeout);
    rc = run_once(pc, "SELECT set_config('lock_timeout', $1, false)", &p, STORE_OP_OTHER, NULL,
                  &res, ei);
    if (rc == 0)
        PQclear(res);
    return rc;
}

static void free_name(void *h)
{
    free(h);
}

/*
 * Makes sure the session is alive before a statement: after a server restart
 * or failover the old session is gone, and so are its prepared statements.
 * Inside a transaction the loss must surface: the transaction is gone too.
 */
static int ready(struct store_conn *c, struct error_info *ei)
{
    struct pg_conn *pc = conn_of(c);

    if (PQstatus(pc->pg) == CONNECTION_OK)
        return 0;
    if (c->in_tx)
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL,
                           "lost the connection to postgresql during a transaction");
    store__stmt_cache_release(&pc->cache, free_name);
    PQreset(pc->pg);
    if (PQstatus(pc->pg) != CONNECTION_OK) {
        one_line(pc->errmsg, sizeof(pc->errmsg), PQerrorMessage(pc->pg));
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not reconnect to postgresql: %s",
                           pc->errmsg);
    }
    PQsetNoticeProcessor(pc->pg, quiet, NULL);
    return session_setup(pc, ei);
}

/* libpq does not put the password in its messages, but a URL typo could; mask it anyway. */
static void redact(char *msg, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    char *p;

    while (n > 0 && (p = strstr(msg, secret)) != NULL)
        memset(p, '*', n);
}

static int pg_conn_open(struct store_conn *c, const char *url, const struct store_options *opt,
                        struct error_info *ei)
{
    struct pg_conn *pc;
    PGconn *pg = PQconnectdb(url);
    int rc;

    if (PQstatus(pg) != CONNECTION_OK) {
        char msg[256];
        one_line(msg, sizeof(msg), PQerrorMessage(pg));
        redact(msg, PQpass(pg));
        PQfinish(pg);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "could not connect to postgresql: %s", msg);
    }
    PQsetNoticeProcessor(pg, quiet, NULL);
    pc = xcalloc(1, sizeof(*pc));
    pc->pg = pg;
    pc->lock_timeout_ms = opt->busy_timeout_ms;
    c->impl = pc;
    rc = session_setup(pc, ei);
    if (rc < 0) {
        PQfinish(pg);
        free(pc);
        c->impl = NULL;
    }
    return rc;
}

static void pg_conn_close(struct store_conn *c)
{
    struct pg_conn *pc = conn_of(c);

    if (!pc)
        return;
    store__stmt_cache_release(&pc->cache, free_name);
    PQfinish(pc->pg);
    free(pc);
    c->impl = NULL;
}

/* ---- reading rows ---- */

static int read_int(PGresult *res, int row, int col, int64_t *ret)
{
    return parse_int64(PQgetvalue(res, row, col), INT64_MIN, INT64_MAX, ret);
}

static int read_row(PGresult *res, int row, const struct resource_def *def, struct arena *a,
                    struct row *ret_row, struct error_info *ei)
{
    struct row r = model_row_new(def, a);

    for (size_t i = 0; i < def->n_fields; i++) {
        struct value *v = &r.v[i];
        v->set = true;
        if (PQgetisnull(res, row, (int)i))
            v->null = true;
        else if (!store__field_is_int(&def->fields[i]))
            v->s = arena_strdup(a, PQgetvalue(res, row, (int)i));
        else if (read_int(res, row, (int)i, &v->i) < 0)
            return errinfo_set(ei, ERR_STORE, NULL, "column '%s' of %s holds no integer: '%s'",
                               model_column(&def->fields[i]), def->table,
                               PQgetvalue(res, row, (int)i));
    }
    *ret_row = r;
    return 0;
}

/* ---- the engine's operations ---- */

static int pg_insert(struct store_conn *c, const struct resource_def *def, const struct row *r,
                     int64_t *ret_id, struct error_info *ei)
{
    struct store__params p = {.n = 0};
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc < 0)
        return rc;
    store__params_row(def, r, &p);
    rc = run_cached(conn_of(c), def, STORE_STMT_INSERT, &p, STORE_OP_INSERT, 0, &res, ei);
    if (rc < 0)
        return rc;
    if (PQntuples(res) != 1 || read_int(res, 0, 0, ret_id) < 0)
        rc = errinfo_set(ei, ERR_STORE, NULL, "inserting into %s returned no id", def->table);
    PQclear(res);
    return rc;
}

static int pg_get(struct store_conn *c, const struct resource_def *def, int64_t id, struct arena *a,
                  struct row *ret_row, struct error_info *ei)
{
    struct store__params p = {.n = 0};
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc < 0)
        return rc;
    store__params_id(id, &p);
    rc = run_cached(conn_of(c), def, STORE_STMT_GET, &p, STORE_OP_READ, id, &res, ei);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 0)
        rc = store__not_found(ei, def, id);
    else
        rc = read_row(res, 0, def, a, ret_row, ei);
    PQclear(res);
    return rc;
}

/* UPDATE and DELETE by id: no row changed means there was no such row. */
static int change_by_id(struct store_conn *c, const struct resource_def *def, int64_t id,
                        enum store__stmt k, enum store__op op, const struct store__params *p,
                        struct error_info *ei)
{
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc < 0)
        return rc;
    rc = run_cached(conn_of(c), def, k, p, op, id, &res, ei);
    if (rc < 0)
        return rc;
    if (strcmp(PQcmdTuples(res), "0") == 0)
        rc = store__not_found(ei, def, id);
    PQclear(res);
    return rc;
}

static int pg_update(struct store_conn *c, const struct resource_def *def, int64_t id,
                     const struct row *r, struct error_info *ei)
{
    struct store__params p = {.n = 0};

    store__params_row(def, r, &p);
    store__params_id(id, &p);
    return change_by_id(c, def, id, STORE_STMT_UPDATE, STORE_OP_UPDATE, &p, ei);
}

static int pg_delete(struct store_conn *c, const struct resource_def *def, int64_t id,
                     struct error_info *ei)
{
    struct store__params p = {.n = 0};

    store__params_id(id, &p);
    return change_by_id(c, def, id, STORE_STMT_DELETE, STORE_OP_DELETE, &p, ei);
}

static int read_rows(PGresult *res, const struct resource_def *def, struct arena *a,
                     struct row **ret_rows, size_t *ret_n, struct error_info *ei)
{
    size_t n = (size_t)PQntuples(res);
    struct row *rows = arena_calloc(a, n, sizeof(*rows));

    for (size_t i = 0; i < n; i++) {
        int rc = read_row(res, (int)i, def, a, &rows[i], ei);
        if (rc < 0)
            return rc;
    }
    *ret_rows = rows;
    *ret_n = n;
    return 0;
}

static int pg_list(struct store_conn *c, const struct resource_def *def,
                   const struct store_filter *f, struct arena *a, struct row **ret_rows,
                   size_t *ret_n, struct error_info *ei)
{
    struct store__query q = {0};
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc == 0)
        rc = store__sql_list(STORE_POSTGRES, def, f, &q, ei);
    if (rc < 0)
        return rc;
    rc = run_once(conn_of(c), q.sql.data, &q.params, STORE_OP_READ, def, &res, ei);
    store__query_release(&q);
    if (rc < 0)
        return rc;
    rc = read_rows(res, def, a, ret_rows, ret_n, ei);
    PQclear(res);
    return rc;
}

static int pg_meta_get(struct store_conn *c, const char *key, struct arena *a, char **ret_value,
                       struct error_info *ei)
{
    struct store__params p = {.n = 0};
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc < 0)
        return rc;
    store__params_add_text(&p, key);
    rc = run_cached(conn_of(c), NULL, STORE_STMT_META_GET, &p, STORE_OP_READ, 0, &res, ei);
    if (rc < 0)
        return rc;
    if (PQntuples(res) == 0)
        rc = errinfo_set(ei, ERR_NOT_FOUND, NULL, "no setting '%s' in the store", key);
    else
        *ret_value = arena_strdup(a, PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

static int pg_meta_set(struct store_conn *c, const char *key, const char *value,
                       struct error_info *ei)
{
    struct store__params p = {.n = 0};
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc < 0)
        return rc;
    store__params_add_text(&p, key);
    store__params_add_text(&p, value);
    rc = run_cached(conn_of(c), NULL, STORE_STMT_META_SET, &p, STORE_OP_UPDATE, 0, &res, ei);
    if (rc == 0)
        PQclear(res);
    return rc;
}

static int pg_exec(struct store_conn *c, const char *sql, struct error_info *ei)
{
    int rc = ready(c, ei);

    return rc < 0 ? rc : exec_script(conn_of(c), sql, ei);
}

static int pg_run(struct store_conn *c, const char *sql, const struct store__params *p,
                  int64_t *ret_val, struct error_info *ei)
{
    PGresult *res = NULL;
    int rc = ready(c, ei);

    if (rc == 0)
        rc = run_once(conn_of(c), sql, p, STORE_OP_OTHER, NULL, &res, ei);
    if (rc < 0)
        return rc;
    if (ret_val && PQntuples(res) > 0 && read_int(res, 0, 0, ret_val) < 0)
        rc = errinfo_set(ei, ERR_STORE, NULL, "statement returned no integer: '%s'",
                         PQgetvalue(res, 0, 0));
    PQclear(res);
    return rc;
}

static int pg_begin(struct store_conn *c, struct error_info *ei)
{
    return pg_exec(c, "BEGIN", ei);
}

/* A transaction that hit an error answers COMMIT with "ROLLBACK": that is a failure. */
static int pg_commit(struct store_conn *c, struct error_info *ei)
{
    struct pg_conn *pc = conn_of(c);
    PGresult *res = PQexec(pc->pg, "COMMIT");
    struct store__failure f = {0};
    int rc = 0;

    if (!result_ok(res)) {
        describe(pc, res, &f);
        rc = store__error(ei, STORE_OP_OTHER, NULL, 0, &f);
    } else if (strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
        rc = errinfo_set(ei, ERR_STORE, NULL,
                         "the transaction failed earlier and was rolled back, not committed");
    }
    PQclear(res);
    return rc;
}

static void pg_rollback(struct store_conn *c)
{
    struct pg_conn *pc = conn_of(c);
    PGTransactionStatusType ts = PQtransactionStatus(pc->pg);

    if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
        PQclear(PQexec(pc->pg, "ROLLBACK"));
}

const struct store_engine_ops store__pg_ops = {
    .name = "postgresql",
    .dialect = STORE_POSTGRES,
    .conn_open = pg_conn_open,
    .conn_close = pg_conn_close,
    .begin = pg_begin,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .insert = pg_insert,
    .get = pg_get,
    .update = pg_update,
    .del = pg_delete,
    .list = pg_list,
    .meta_get = pg_meta_get,
    .meta_set = pg_meta_set,
    .exec = pg_exec,
    .run = pg_run,
};
