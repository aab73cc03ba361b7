/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.c: the engine-neutral half of the store: choosing an engine from the
 * URL, the fixed connection pool, transaction bookkeeping, the migrations
 * runner, list filters, and the wording of errors. Everything that touches a
 * database goes through the engine's table (store-int.h).
 */
#include "base/common.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>

#include "store/store-int.h"

#define DEFAULT_CONNS 4
#define DEFAULT_BUSY_TIMEOUT_MS 5000
#define MAX_CONNS 1024
#define LIST_LIMIT_MAX 10000
#define LIST_LIMIT_DEFAULT 100

struct store {
    const struct store_engine_ops *ops;
    struct store_options opt;
    char *target; /* path or libpq URL, as the engine takes it */
    int schema_version;
    int claim_fd; /* SQLite: the file, flock'ed by store_claim; -1 when not claimed */

    pthread_mutex_t mu;
    pthread_cond_t cv;        /* signalled when a connection comes back */
    struct store_conn *conns; /* opt.n_conns of them */
    struct store_conn **idle; /* a stack of the connections not in use */
    int n_idle;
};

/* ---- errors ---- */

/* "an organization", "a user": no singular here starts with a vowel sound on 'u'. */
static const char *article(const char *noun)
{
    return noun[0] && strchr("aeio", noun[0]) ? "an" : "a";
}

static const char *op_verb(enum store__op op)
{
    switch (op) {
    case STORE_OP_READ:
        return "read";
    case STORE_OP_INSERT:
        return "insert";
    case STORE_OP_UPDATE:
        return "update";
    case STORE_OP_DELETE:
        return "delete";
    default:
        return "run a statement on";
    }
}

/* The JSON name of the field stored in column, or the column when def has none. */
static const char *field_of_column(const struct resource_def *def, const char *column)
{
    for (size_t i = 0; def && column && i < def->n_fields; i++) {
        if (strcmp(model_column(&def->fields[i]), column) == 0)
            return def->fields[i].name;
    }
    return column ? column : "?";
}

int store__error(struct error_info *ei, enum store__op op, const struct resource_def *def,
                 int64_t id, const struct store__failure *f)
{
    const char *what = def ? def->singular : "row";
    const char *msg = f->message ? f->message : "unknown error";
    const char *field;

    switch (f->kind) {
    case STORE_FAIL_UNIQUE:
        if (!def)
            return errinfo_set(ei, ERR_CONFLICT, NULL, "a row with the same key already exists");
        return errinfo_set(ei, ERR_CONFLICT, NULL, "%s %s with the same %s already exists",
                           article(what), what, def->unique_desc);
    case STORE_FAIL_FOREIGN_KEY:
        if (op == STORE_OP_DELETE)
            return errinfo_set(ei, ERR_CONFLICT, NULL,
                               "%s %" PRId64 " is still referenced by other objects", what, id);
        return errinfo_set(ei, ERR_INVALID, NULL, "a referenced object does not exist");
    case STORE_FAIL_NOT_NULL:
        field = field_of_column(def, f->column);
        return errinfo_set(ei, ERR_INVALID, field, "%s field '%s' may not be null", what, field);
    case STORE_FAIL_BUSY:
        return errinfo_set(ei, ERR_BUSY, NULL, "the store is busy: %s", msg);
    case STORE_FAIL_CONN:
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "lost the connection to the store: %s", msg);
    default:
        return errinfo_set(ei, ERR_STORE, NULL, "could not %s %s: %s", op_verb(op),
                           def ? what : "the store", msg);
    }
}

int store__not_found(struct error_info *ei, const struct resource_def *def, int64_t id)
{
    return errinfo_set(ei, ERR_NOT_FOUND, NULL, "no %s with id %" PRId64, def->singular, id);
}

/* ---- opening ---- */

/* Picks the engine from the URL's scheme and the target the engine opens. */
static int parse_url(const char *url, const struct store_engine_ops **ret_ops,
                     const char **ret_target, struct error_info *ei)
{
    const char *sep;

    if (!url || !*url)
        return errinfo_set(ei, ERR_INVALID, NULL, "the store URL is empty");
    if (strncmp(url, "postgresql://", 13) == 0 || strncmp(url, "postgres://", 11) == 0) {
        *ret_ops = &store__pg_ops;
        *ret_target = url;
        return 0;
    }
    *ret_ops = &store__sqlite_ops;
    if (strncmp(url, "sqlite:", 7) == 0) {
        *ret_target = url + 7;
    } else if (strncmp(url, "file:", 5) == 0) {
        /* file:///var/lib/x.db names the path /var/lib/x.db */
        *ret_target = strncmp(url + 5, "//", 2) == 0 ? url + 7 : url + 5;
    } else if ((sep = strstr(url, "://")) != NULL) {
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "unsupported store URL scheme '%.*s' (use postgresql:// or a path)",
                           (int)(sep - url), url);
    } else {
        *ret_target = url;
    }
    if (!**ret_target)
        return errinfo_set(ei, ERR_INVALID, NULL, "the store URL '%s' names no file", url);
    return 0;
}

static int check_options(const struct store_options *in, struct store_options *ret,
                         struct error_info *ei)
{
    struct store_options o = {DEFAULT_CONNS, DEFAULT_BUSY_TIMEOUT_MS, false};

    if (in)
        o = *in;
    if (o.n_conns < 1 || o.n_conns > MAX_CONNS)
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "the store pool needs 1 to %d connections, not %d", MAX_CONNS,
                           o.n_conns);
    /* 0 would mean "never wait" to SQLite but "wait forever" to PostgreSQL. */
    if (o.busy_timeout_ms <= 0)
        o.busy_timeout_ms = DEFAULT_BUSY_TIMEOUT_MS;
    *ret = o;
    return 0;
}

static int migrate(struct store_conn *c, int *ret_version, struct error_info *ei);

/* Opens connection i; an open connection is idle until someone takes it. */
static int open_conn(struct store *s, int i, struct error_info *ei)
{
    struct store_conn *c = &s->conns[i];
    int rc;

    c->s = s;
    rc = s->ops->conn_open(c, s->target, &s->opt, ei);
    if (rc == 0)
        s->idle[s->n_idle++] = c;
    return rc;
}

int store__open_with(const struct store_engine_ops *ops, const char *target,
                     const struct store_options *opt, struct store **ret_store,
                     struct error_info *ei)
{
    struct store *s;
    int rc;

    s = xcalloc(1, sizeof(*s));
    s->ops = ops;
    rc = check_options(opt, &s->opt, ei);
    if (rc < 0) {
        free(s);
        return rc;
    }
    s->target = xstrdup(target);
    s->claim_fd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->conns = xcalloc((size_t)s->opt.n_conns, sizeof(*s->conns));
    s->idle = xcalloc((size_t)s->opt.n_conns, sizeof(*s->idle));

    /* Migrate on the first connection before the others see the schema. */
    rc = open_conn(s, 0, ei);
    if (rc == 0)
        rc = migrate(&s->conns[0], &s->schema_version, ei);
    for (int i = 1; i < s->opt.n_conns && rc == 0; i++)
        rc = open_conn(s, i, ei);
    if (rc < 0) {
        store_close(s);
        return rc;
    }
    *ret_store = s;
    return 0;
}

int store_open(const char *url, const struct store_options *opt, struct store **ret_store,
               struct error_info *ei)
{
    const struct store_engine_ops *ops = NULL;
    const char *target = NULL;
    int rc = parse_url(url, &ops, &target, ei);

    if (rc < 0)
        return rc;
    return store__open_with(ops, target, opt, ret_store, ei);
}

void store_close(struct store *s)
{
    int n_open = 0;

    if (!s)
        return;
    for (int i = 0; i < s->opt.n_conns; i++) {
        if (s->conns[i].impl) {
            s->ops->conn_close(&s->conns[i]);
            n_open++;
        }
    }
    assert(s->n_idle == n_open); /* no connection may still be in use */
    (void)n_open;
    if (s->claim_fd >= 0)
        close(s->claim_fd);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->idle);
    free(s->conns);
    free(s->target);
    free(s);
}

enum store_engine store_engine(const struct store *s)
{
    return s->ops->dialect;
}

/*
 * flock, not the fcntl locks SQLite takes on the same file: on Linux the two
 * never interfere, so the claim does not change SQLite's locking.
 */
int store_claim(struct store *s, bool alone, struct error_info *ei)
{
    if (s->ops->dialect != STORE_SQLITE || strcmp(s->target, ":memory:") == 0)
        return 0;
    if (s->claim_fd < 0)
        s->claim_fd = open(s->target, O_RDONLY | O_CLOEXEC);
    if (s->claim_fd < 0)
        return errinfo_set(ei, ERR_STORE, NULL, "could not open database '%s': %s", s->target,
                           strerror(errno));
    if (flock(s->claim_fd, (alone ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0)
        return 0;
    if (errno != EWOULDBLOCK)
        return errinfo_set(ei, ERR_STORE, NULL, "could not lock database '%s': %s", s->target,
                           strerror(errno));
    return alone ? errinfo_set(ei, ERR_BUSY, NULL,
                               "a gpuaasd is serving database '%s'; stop it first", s->target)
                 : errinfo_set(ei, ERR_BUSY, NULL,
                               "database '%s' is held by a gpuaasd recover-admin; try again when "
                               "it is done",
                               s->target);
}

int store_check(struct store *s, struct error_info *ei)
{
    return s->ops->check ? s->ops->check(&s->conns[0], ei) : 0;
}

int store_schema_version(struct store *s)
{
    return s->schema_version;
}

/* ---- the pool ---- */

struct store_conn *store_conn_get(struct store *s)
{
    struct store_conn *c;

    pthread_mutex_lock(&s->mu);
    while (s->n_idle == 0)
        pthread_cond_wait(&s->cv, &s->mu);
    c = s->idle[--s->n_idle];
    pthread_mutex_unlock(&s->mu);
    return c;
}

void store_conn_put(struct store_conn *c)
{
    struct store *s;

    if (!c)
        return;
    s = c->s;
    /* A request that failed half-way must not leave its changes for the next one. */
    store_rollback(c);
    pthread_mutex_lock(&s->mu);
    assert(s->n_idle < s->opt.n_conns);
    s->idle[s->n_idle++] = c;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* ---- transactions ---- */

int store_begin(struct store_conn *c, struct error_info *ei)
{
    int rc;

    if (c->in_tx)
        return errinfo_set(ei, ERR_INTERNAL, NULL,
                           "a transaction is already open on this connection");
    rc = c->s->ops->begin(c, ei);
    if (rc == 0)
        c->in_tx = true;
    return rc;
}

int store_commit(struct store_conn *c, struct error_info *ei)
{
    int rc;

    if (!c->in_tx)
        return errinfo_set(ei, ERR_INTERNAL, NULL, "no transaction is open on this connection");
    rc = c->s->ops->commit(c, ei);
    if (rc < 0)
        c->s->ops->rollback(c); /* a failed commit ends the transaction on every engine */
    c->in_tx = false;
    return rc;
}

void store_rollback(struct store_conn *c)
{
    if (!c->in_tx)
        return;
    c->s->ops->rollback(c);
    c->in_tx = false;
}

/* ---- rows ---- */

int store_insert(struct store_conn *c, const struct resource_def *def, const struct row *r,
                 int64_t *ret_id, struct error_info *ei)
{
    return c->s->ops->insert(c, def, r, ret_id, ei);
}

int store_get(struct store_conn *c, const struct resource_def *def, int64_t id, struct arena *a,
              struct row *ret_row, struct error_info *ei)
{
    return c->s->ops->get(c, def, id, a, ret_row, ei);
}

int store_update(struct store_conn *c, const struct resource_def *def, int64_t id,
                 const struct row *r, struct error_info *ei)
{
    return c->s->ops->update(c, def, id, r, ei);
}

int store_delete(struct store_conn *c, const struct resource_def *def, int64_t id,
                 struct error_info *ei)
{
    return c->s->ops->del(c, def, id, ei);
}

int store_list(struct store_conn *c, const struct resource_def *def, const struct store_filter *f,
               struct arena *a, struct row **ret_rows, size_t *ret_n, struct error_info *ei)
{
    int rc = store__filter_check(def, f, ei);

    if (rc < 0)
        return rc;
    return c->s->ops->list(c, def, f, a, ret_rows, ret_n, ei);
}

int store_meta_get(struct store_conn *c, const char *key, struct arena *a, char **ret_value,
                   struct error_info *ei)
{
    return c->s->ops->meta_get(c, key, a, ret_value, ei);
}

int store_meta_set(struct store_conn *c, const char *key, const char *value, struct error_info *ei)
{
    return c->s->ops->meta_set(c, key, value, ei);
}

int store_list_all(struct store_conn *c, const struct resource_def *def, struct store_filter *f,
                   struct arena *a, struct row **ret_rows, size_t *ret_n, struct error_info *ei)
{
    struct row *all = NULL;
    size_t n = 0, cap = 0;

    f->limit = 10000; /* the largest page store_list takes */
    f->after_id = 0;
    for (;;) {
        struct row *rows;
        size_t got;
        int rc = store_list(c, def, f, a, &rows, &got, ei);
        if (rc < 0)
            return rc;
        if (n + got > cap) { /* doubling: the arena keeps the old copies, so grow rarely */
            struct row *grown;
            cap = (n + got) * 2;
            grown = arena_calloc(a, cap, sizeof(*grown));
            if (n)
                memcpy(grown, all, n * sizeof(*grown));
            all = grown;
        }
        if (got) {
            memcpy(all + n, rows, got * sizeof(*rows));
            n += got;
            f->after_id = model_row_id(&rows[got - 1]);
        }
        if (got < (size_t)f->limit)
            break;
    }
    *ret_rows = all;
    *ret_n = n;
    return 0;
}

int store_max_id(struct store_conn *c, const struct resource_def *def, int64_t *ret_id,
                 struct error_info *ei)
{
    /* The table name comes from the model, never from a request. */
    char sql[160];
    struct store__params p = {0};
    *ret_id = 0;
    snprintf(sql, sizeof(sql), "SELECT COALESCE(MAX(id), 0) FROM %s", def->table);
    return store__run(c, sql, &p, ret_id, ei);
}

int store__exec(struct store_conn *c, const char *sql, struct error_info *ei)
{
    return c->s->ops->exec(c, sql, ei);
}

int store__run(struct store_conn *c, const char *sql, const struct store__params *p,
               int64_t *ret_val, struct error_info *ei)
{
    char *text = store__sql_dialect(c->s->ops->dialect, sql);
    int rc = c->s->ops->run(c, text, p, ret_val, ei);

    free(text);
    return rc;
}

/* ---- filters ---- */

void store_filter_init(struct store_filter *f)
{
    memset(f, 0, sizeof(*f));
    f->limit = LIST_LIMIT_DEFAULT;
}

static struct value *filter_eq_next(struct store_filter *f, int field)
{
    assert(f->n_eq < STORE_MAX_EQ);
    f->eq[f->n_eq].field = field;
    return &f->eq[f->n_eq++].val;
}

void store_filter_eq_int(struct store_filter *f, int field, int64_t i)
{
    *filter_eq_next(f, field) = (struct value){.set = true, .i = i};
}

void store_filter_eq_str(struct store_filter *f, int field, const char *s)
{
    assert(s);
    *filter_eq_next(f, field) = (struct value){.set = true, .s = s};
}

void store_filter_eq_null(struct store_filter *f, int field)
{
    *filter_eq_next(f, field) = (struct value){.set = true, .null = true};
}

void store_filter_any(struct store_filter *f, int field, const int64_t *ids, size_t n_ids)
{
    assert(f->n_any < STORE_MAX_ANY);
    f->any[f->n_any].field = field;
    f->any[f->n_any].ids = ids;
    f->any[f->n_any].n_ids = n_ids;
    f->n_any++;
}

void store_filter_range(struct store_filter *f, int field, int64_t lo, int64_t hi)
{
    assert(f->n_range == 0);
    f->range.field = field;
    f->range.lo = lo;
    f->range.hi = hi;
    f->n_range = 1;
}

static bool valid_field(const struct resource_def *def, int field)
{
    return field >= 0 && (size_t)field < def->n_fields;
}

/* An equality must carry the kind of value its column holds: a string for text. */
static int check_eq(const struct resource_def *def, int field, const struct value *v,
                    struct error_info *ei)
{
    if (!valid_field(def, field))
        return errinfo_set(ei, ERR_INVALID, NULL, "no field %d in %s", field, def->name);
    if (v->null)
        return 0;
    if (store__field_is_int(&def->fields[field]) != (v->s == NULL))
        return errinfo_set(ei, ERR_INVALID, def->fields[field].name,
                           "filter on '%s' has the wrong kind of value", def->fields[field].name);
    return 0;
}

static int check_any(const struct resource_def *def, int field, const int64_t *ids, size_t n_ids,
                     struct error_info *ei)
{
    enum field_type t;

    if (!valid_field(def, field))
        return errinfo_set(ei, ERR_INVALID, NULL, "no field %d in %s", field, def->name);
    t = def->fields[field].type;
    if (t != FT_INT && t != FT_REF)
        return errinfo_set(ei, ERR_INVALID, def->fields[field].name, "'%s' is not an id field",
                           def->fields[field].name);
    if (n_ids > 0 && !ids)
        return errinfo_set(ei, ERR_INVALID, def->fields[field].name, "no ids given");
    return 0;
}

int store__filter_check(const struct resource_def *def, const struct store_filter *f,
                        struct error_info *ei)
{
    int rc = 0;

    if (f->limit < 1 || f->limit > LIST_LIMIT_MAX)
        return errinfo_set(ei, ERR_INVALID, "limit", "limit must be between 1 and %d",
                           LIST_LIMIT_MAX);
    if (f->n_eq < 0 || f->n_eq > STORE_MAX_EQ || f->n_any < 0 || f->n_any > STORE_MAX_ANY)
        return errinfo_set(ei, ERR_INVALID, NULL, "too many filters");
    for (int i = 0; i < f->n_eq && rc == 0; i++)
        rc = check_eq(def, f->eq[i].field, &f->eq[i].val, ei);
    for (int i = 0; i < f->n_any && rc == 0; i++)
        rc = check_any(def, f->any[i].field, f->any[i].ids, f->any[i].n_ids, ei);
    if (rc == 0 && (f->n_range < 0 || f->n_range > 1))
        rc = errinfo_set(ei, ERR_INVALID, NULL, "one range at most");
    if (rc == 0 && f->n_range == 1 &&
        (!valid_field(def, f->range.field) || !store__field_is_int(&def->fields[f->range.field])))
        rc = errinfo_set(ei, ERR_INVALID, NULL, "a range needs an integer field");
    return rc;
}

/* ---- migrations ---- */

static const char create_migrations_sql[] = "CREATE TABLE schema_migrations (\n"
                                            "    version BIGINT PRIMARY KEY,\n"
                                            "    name TEXT NOT NULL,\n"
                                            "    applied_at BIGINT NOT NULL\n"
                                            ")";
static const char read_version_sql[] = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations";
static const char record_sql[] =
    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)";

/*
 * Looked up rather than CREATE TABLE IF NOT EXISTS, which PostgreSQL refuses
 * to a role without CREATE on the schema even when the table exists: a
 * least-privilege runtime role must be able to open an up-to-date store.
 */
static const char sqlite_has_migrations_sql[] =
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'";
static const char pg_has_migrations_sql[] =
    "SELECT COUNT(*) FROM pg_catalog.pg_tables "
    "WHERE schemaname = current_schema() AND tablename = 'schema_migrations'";

/*
 * Two daemons starting together must not both migrate. SQLite's BEGIN
 * IMMEDIATE already holds the write lock; PostgreSQL takes an advisory lock
 * for the length of the transaction (the key is arbitrary but fixed).
 */
static const char pg_migration_lock_sql[] = "SELECT pg_advisory_xact_lock(7346803112150201)";

/*
 * How a gpuaas store is told from another program's database. SQLite files
 * carry our application_id in their header ("GPAS"); stores made before it
 * was set, and PostgreSQL schemas, by schema_migrations' first row, which
 * names migration 1 as this binary does.
 */
#define SQLITE_APPLICATION_ID 0x47504153
static const char sqlite_read_app_id_sql[] = "PRAGMA application_id";
static const char sqlite_set_app_id_sql[] = "PRAGMA application_id = 1196441939";
static const char sqlite_count_tables_sql[] =
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_'";
static const char pg_count_tables_sql[] =
    "SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema()";
static const char first_migration_sql[] =
    "SELECT COUNT(*) FROM schema_migrations WHERE version = 1 AND name = ?";

/* What refusals call the store: its file, or (never the URL: it may hold a password) the schema. */
static const char *store_what(const struct store_conn *c, char *buf, size_t size)
{
    if (c->s->ops->dialect == STORE_POSTGRES)
        snprintf(buf, size, "the PostgreSQL database's current schema");
    else
        snprintf(buf, size, "database '%.200s'", c->s->target);
    return buf;
}

static int not_ours(struct store_conn *c, const char *why, struct error_info *ei)
{
    char what[256];
    return errinfo_set(ei, ERR_STORE, NULL,
                       "refusing %s: it is not a gpuaas store (%s); give gpuaasd a new file or an "
                       "empty schema of its own",
                       store_what(c, what, sizeof(what)), why);
}

/*
 * Inside the transaction: whether the database is a gpuaas store, a new
 * (empty) one, or another program's (refused). *ret_stamp: an SQLite store
 * made before the application_id was set, to be stamped now. A refusal is
 * worded in ei, an engine failure in engine_ei.
 */
static int recognise(struct store_conn *c, bool has_migrations, bool *ret_stamp,
                     struct error_info *engine_ei, struct error_info *ei)
{
    const struct store_engine_ops *ops = c->s->ops;
    const bool pg = ops->dialect == STORE_POSTGRES;
    struct store__params none = {.n = 0}, p = {.n = 0};
    struct error_info inner = {0};
    int64_t app_id = 0, n = 0;
    char *sql;
    int rc;

    *ret_stamp = false;
    if (!pg) {
        rc = ops->run(c, sqlite_read_app_id_sql, &none, &app_id, engine_ei);
        if (rc < 0)
            return rc;
        if (app_id == SQLITE_APPLICATION_ID)
            return 0;
        if (app_id != 0) {
            char why[64];
            snprintf(why, sizeof(why), "its application_id is %" PRId64, app_id);
            return not_ours(c, why, ei);
        }
    }
    if (!has_migrations) {
        rc = ops->run(c, pg ? pg_count_tables_sql : sqlite_count_tables_sql, &none, &n, engine_ei);
        if (rc == 0 && n > 0) {
            char why[64];
            snprintf(why, sizeof(why), "it holds %" PRId64 " tables of another program", n);
            return not_ours(c, why, ei);
        }
        return rc;
    }
    store__params_add_text(&p, store__migration_name(1));
    sql = store__sql_dialect(ops->dialect, first_migration_sql);
    rc = ops->run(c, sql, &p, &n, &inner);
    free(sql);
    /* A lost session or a lock timeout says nothing about whose table it is. */
    if (rc < 0 && rc != ERR_STORE)
        return errinfo_set(engine_ei, rc, NULL, "%s", inner.message);
    if (rc < 0 || n != 1)
        return not_ours(c, "its schema_migrations table is another program's", ei);
    *ret_stamp = !pg;
    return 0;
}

/*
 * Inside the transaction: serialize with other openers, refuse a database
 * that is not ours, and read the version (0: none). *ret_stamp as recognise.
 */
static int lock_and_read_version(struct store_conn *c, int64_t *ret_version, bool *ret_stamp,
                                 struct error_info *ei)
{
    const struct store_engine_ops *ops = c->s->ops;
    const bool pg = ops->dialect == STORE_POSTGRES;
    struct store__params none = {.n = 0};
    struct error_info inner = {0};
    int64_t has_table = 0;
    int rc = 0;

    if (pg)
        rc = ops->exec(c, pg_migration_lock_sql, &inner);
    if (rc == 0)
        rc = ops->run(c, pg ? pg_has_migrations_sql : sqlite_has_migrations_sql, &none, &has_table,
                      &inner);
    if (rc == 0)
        rc = recognise(c, has_table != 0, ret_stamp, &inner, ei);
    if (rc == 0 && !has_table) {
        /* An empty store: the bookkeeping table (and SQLite's mark) commit with migration 1. */
        rc = ops->exec(c, create_migrations_sql, &inner);
        if (rc == 0 && !pg)
            rc = ops->exec(c, sqlite_set_app_id_sql, &inner);
        if (rc == 0)
            *ret_version = 0;
    } else if (rc == 0) {
        rc = ops->run(c, read_version_sql, &none, ret_version, &inner);
        if (rc == 0 && *ret_stamp)
            rc = ops->exec(c, sqlite_set_app_id_sql, &inner);
    }
    /* A refusal recognise worded stays: errinfo_set keeps the first error. */
    if (rc < 0)
        errinfo_set(ei, rc, NULL, "could not read the store's schema version: %s", inner.message);
    return rc;
}

static int apply_migration(struct store_conn *c, int version, struct error_info *ei)
{
    const struct store_engine_ops *ops = c->s->ops;
    struct store__params p = {.n = 0};
    struct error_info inner = {0};
    char *script = store__migration_sql(ops->dialect, version);
    char *record = store__sql_dialect(ops->dialect, record_sql);
    int rc;

    store__params_add_int(&p, version);
    store__params_add_text(&p, store__migration_name(version));
    store__params_add_int(&p, (int64_t)time(NULL));
    rc = ops->exec(c, script, &inner);
    if (rc == 0)
        rc = ops->run(c, record, &p, NULL, &inner);
    free(record);
    free(script);
    if (rc < 0)
        return errinfo_set(ei, rc, NULL, "schema migration %d (%s) failed: %s", version,
                           store__migration_name(version), inner.message);
    return 0;
}

/* Applies every pending migration, each in its own transaction. */
static int migrate(struct store_conn *c, int *ret_version, struct error_info *ei)
{
    const int latest = store_schema_latest();

    for (;;) {
        int64_t version = 0;
        bool stamp = false;
        int rc = store_begin(c, ei);

        if (rc == 0)
            rc = lock_and_read_version(c, &version, &stamp, ei);
        if (rc == 0 && version > latest)
            rc = errinfo_set(ei, ERR_SCHEMA_NEWER, NULL,
                             "the store's schema version %" PRId64
                             " is newer than this binary knows (%d); run a newer gpuaas",
                             version, latest);
        if (rc == 0 && version == latest && stamp)
            rc = store_commit(c, ei); /* a store older than its mark: keep the mark */
        if (rc < 0 || version == latest) {
            store_rollback(c);
            if (rc == 0)
                *ret_version = (int)version;
            return rc;
        }
        rc = apply_migration(c, (int)version + 1, ei);
        if (rc == 0)
            rc = store_commit(c, ei);
        if (rc < 0) {
            store_rollback(c);
            return rc;
        }
    }
}
