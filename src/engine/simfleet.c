/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simfleet.c: loading a simulated cluster's description (CSV node lists of
 * the Alibaba GPU trace, or a small JSON format) and writing it into the
 * store as cluster, GPU classes, nodes and GPUs, with their audit entries,
 * in one transaction. See simfleet.h for the formats and the rules.
 */
#include "base/common.h"

#include <jansson.h>

#include "engine/simfleet.h"
#include "base/buf.h"
#include "base/parse.h"
#include "model/model.h"
#include "store/store.h"

#define NODE_NAME_MAX 128 /* model_nodes' "name" */
#define UUID_MAX 128      /* model_gpus' "uuid" */
#define CLUSTER_NAME_MAX 63
#define MODEL_MAX 200 /* model_gpu_classes' "model" */
#define LABEL_MAX 253
#define NODE_NUM_MAX (INT64_C(1) << 40) /* model_nodes' cpu_milli and memory_mib */
#define CSV_MAX_FIELDS 64
#define QUOTE_MAX 40 /* bytes of a bad value quoted back */

/* ---- GPU classes ---- */

int simfleet_gpu_class(const char *model, char *out, size_t size)
{
    size_t n = 0, limit = size > 0 ? size - 1 : 0;
    bool dash = false;

    if (limit > SIMFLEET_CLASS_MAX)
        limit = SIMFLEET_CLASS_MAX;
    if (size > 0)
        out[0] = '\0';
    for (const char *p = model; *p; p++) {
        char ch = *p;
        bool alnum =
            (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum) {
            dash = n > 0; /* a run of others becomes one '-', none at the start */
            continue;
        }
        if (n + (dash ? 1 : 0) + 1 > limit)
            return ERR_INVALID;
        if (dash)
            out[n++] = '-';
        dash = false;
        out[n++] = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
    }
    if (n == 0)
        return ERR_INVALID;
    out[n] = '\0';
    return 0;
}

/* ---- loading ---- */

struct loader {
    const char *path;
    struct simfleet *f;
    size_t cap_nodes;
    bool json;
    char where[48]; /* " line 7" or " nodes[3]": what is being read */
    struct error_info *ei;
};

static int fail(struct loader *ld, int err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct loader *ld, int err, const char *field, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return errinfo_set(ld->ei, err, field, "'%s'%s: %s", ld->path, ld->where, msg);
}

static bool has_control(const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            return true;
    }
    return false;
}

static struct simfleet_node *node_add(struct loader *ld)
{
    struct simfleet *f = ld->f;
    ALLOC_GROW(f->nodes, f->n_nodes + 1, ld->cap_nodes);
    f->nodes[f->n_nodes] = (struct simfleet_node){.model = "", .gpu_class = ""};
    return &f->nodes[f->n_nodes++];
}

/* A whole number of field `what` within [min, max]. */
static int number(struct loader *ld, const char *what, const char *text, int64_t min, int64_t max,
                  int64_t *ret)
{
    int rc = parse_int64(text, min, max, ret);
    if (rc == ERR_INVALID)
        return fail(ld, ERR_INVALID, what, "%s must be a whole number, not '%.*s'", what, QUOTE_MAX,
                    text);
    if (rc < 0)
        return fail(ld, ERR_INVALID, what,
                    "%s must be between %" PRId64 " and %" PRId64 ", not '%.*s'", what, min, max,
                    QUOTE_MAX, text);
    return 0;
}

static int check_name(struct loader *ld, const char *what, const char *name)
{
    if (!model_valid_ident(name, NODE_NAME_MAX))
        return fail(ld, ERR_INVALID, what,
                    "%s '%.*s' is not a valid node name (letters, digits and ._:/-, starting "
                    "with a letter or digit, at most %d bytes)",
                    what, QUOTE_MAX, name, NODE_NAME_MAX);
    return 0;
}

/* Sets n's model and class from a model string when it has GPUs. */
static int set_model(struct loader *ld, struct simfleet_node *n, const char *what,
                     const char *model)
{
    char cls[SIMFLEET_CLASS_MAX + 1];
    if (n->n_gpus == 0)
        return 0;
    if (!model || !*model)
        return fail(ld, ERR_INVALID, what, "%s is required for a node with GPUs", what);
    if (strlen(model) > MODEL_MAX || has_control(model))
        return fail(ld, ERR_INVALID, what, "%s must be printable text of at most %d bytes", what,
                    MODEL_MAX);
    if (simfleet_gpu_class(model, cls, sizeof(cls)) < 0)
        return fail(ld, ERR_INVALID, what,
                    "%s '%.*s' does not give a GPU class name (1 to %d letters and digits)", what,
                    QUOTE_MAX, model, SIMFLEET_CLASS_MAX);
    n->model = arena_strdup(&ld->f->arena, model);
    n->gpu_class = arena_strdup(&ld->f->arena, cls);
    return 0;
}

/* ---- CSV ---- */

enum csv_col { COL_SN, COL_CPU, COL_MEM, COL_GPU, COL_MODEL, N_COLS };
static const char *const csv_names[N_COLS] = {"sn", "cpu_milli", "memory_mib", "gpu", "model"};

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

/* Splits line at commas in place; returns the number of fields or a negative error. */
static int csv_split(struct loader *ld, char *line, char **fields)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (n == CSV_MAX_FIELDS)
            return fail(ld, ERR_INVALID, NULL, "more than %d fields", CSV_MAX_FIELDS);
        if (comma)
            *comma = '\0';
        fields[n] = trim(p);
        if (strchr(fields[n], '"'))
            return fail(ld, ERR_INVALID, NULL, "quoted fields are not supported");
        n++;
        if (!comma)
            return n;
        p = comma + 1;
    }
}

static int csv_header(struct loader *ld, char **fields, int n, int *col)
{
    for (int k = 0; k < N_COLS; k++)
        col[k] = -1;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < N_COLS; k++) {
            if (strcmp(fields[i], csv_names[k]) != 0)
                continue;
            if (col[k] >= 0)
                return fail(ld, ERR_INVALID, csv_names[k], "column '%s' appears twice",
                            csv_names[k]);
            col[k] = i;
        }
    }
    for (int k = 0; k < N_COLS; k++) {
        if (col[k] < 0)
            return fail(ld, ERR_INVALID, csv_names[k],
                        "missing column '%s' (the header must name sn,cpu_milli,memory_mib,gpu,"
                        "model)",
                        csv_names[k]);
    }
    return 0;
}

static int csv_row(struct loader *ld, char **fields, const int *col, int line)
{
    struct simfleet_node *n;
    int64_t v;
    int rc;

    if (ld->f->n_nodes >= SIMFLEET_MAX_NODES)
        return fail(ld, ERR_TOO_LARGE, NULL, "more than %d nodes", SIMFLEET_MAX_NODES);
    n = node_add(ld);
    n->line = line;
    if ((rc = check_name(ld, "sn", fields[col[COL_SN]])) < 0)
        return rc;
    n->name = arena_strdup(&ld->f->arena, fields[col[COL_SN]]);
    if ((rc = number(ld, "cpu_milli", fields[col[COL_CPU]], 0, NODE_NUM_MAX, &n->cpu_milli)) < 0 ||
        (rc = number(ld, "memory_mib", fields[col[COL_MEM]], 0, NODE_NUM_MAX, &n->memory_mib)) <
            0 ||
        (rc = number(ld, "gpu", fields[col[COL_GPU]], 0, SIMFLEET_MAX_GPUS, &v)) < 0)
        return rc;
    n->n_gpus = (int32_t)v;
    return set_model(ld, n, "model", fields[col[COL_MODEL]]);
}

static int load_csv(struct loader *ld, FILE *fp)
{
    char line[SIMFLEET_MAX_LINE + 2]; /* the line, its newline, the NUL */
    char *fields[CSV_MAX_FIELDS];
    int col[N_COLS] = {0}; /* csv_header fills it in before any row is read */
    int n_header = 0, lineno = 0, rc;

    while (fgets(line, sizeof(line), fp)) {
        size_t len = strlen(line);
        char *p = line;
        int n;

        lineno++;
        snprintf(ld->where, sizeof(ld->where), " line %d", lineno);
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (len == sizeof(line) - 1)
            return fail(ld, ERR_TOO_LARGE, NULL, "line is longer than %d bytes", SIMFLEET_MAX_LINE);
        else if (!feof(fp))
            return fail(ld, ERR_INVALID, NULL, "line contains a NUL byte");
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len > SIMFLEET_MAX_LINE)
            return fail(ld, ERR_TOO_LARGE, NULL, "line is longer than %d bytes", SIMFLEET_MAX_LINE);
        if (lineno == 1 && (unsigned char)p[0] == 0xef && (unsigned char)p[1] == 0xbb &&
            (unsigned char)p[2] == 0xbf)
            p += 3; /* a UTF-8 byte order mark, as spreadsheets write */
        if (*trim(p) == '\0')
            continue;
        if ((n = csv_split(ld, p, fields)) < 0)
            return n;
        if (n_header == 0) {
            if ((rc = csv_header(ld, fields, n, col)) < 0)
                return rc;
            n_header = n;
            continue;
        }
        if (n != n_header)
            return fail(ld, ERR_INVALID, NULL, "expected %d fields as in the header, found %d",
                        n_header, n);
        if ((rc = csv_row(ld, fields, col, lineno)) < 0)
            return rc;
    }
    ld->where[0] = '\0';
    if (ferror(fp))
        return fail(ld, ERR_IO, NULL, "read failed: %s", strerror(errno));
    if (n_header == 0)
        return fail(ld, ERR_INVALID, NULL, "no header line (sn,cpu_milli,memory_mib,gpu,model)");
    return 0;
}

/* ---- JSON ---- */

static int json_number(struct loader *ld, const char *what, const json_t *j, int64_t min,
                       int64_t max, int64_t *ret)
{
    int64_t v;
    if (!json_is_integer(j))
        return fail(ld, ERR_INVALID, what, "%s must be a whole number, not %s", what,
                    model_json_kind(j));
    v = json_integer_value(j);
    if (v < min || v > max)
        return fail(ld, ERR_INVALID, what,
                    "%s must be between %" PRId64 " and %" PRId64 ", not %" PRId64, what, min, max,
                    v);
    *ret = v;
    return 0;
}

static int json_labels(struct loader *ld, const json_t *j, struct simfleet_label **ret,
                       size_t *ret_n)
{
    struct simfleet_label *l;
    const char *k;
    json_t *v;
    size_t n = 0;

    if (!json_is_object(j))
        return fail(ld, ERR_INVALID, "labels", "labels must be an object, not %s",
                    model_json_kind(j));
    if (json_object_size(j) > SIMFLEET_MAX_LABELS)
        return fail(ld, ERR_INVALID, "labels", "more than %d labels", SIMFLEET_MAX_LABELS);
    l = arena_calloc(&ld->f->arena, json_object_size(j) + 1, sizeof(*l));
    json_object_foreach((json_t *)j, k, v)
    {
        if (!model_valid_ident(k, LABEL_MAX))
            return fail(ld, ERR_INVALID, "labels",
                        "label key '%.*s' is not valid (letters, digits and ._:/-, at most %d "
                        "bytes)",
                        QUOTE_MAX, k, LABEL_MAX);
        if (!json_is_string(v) || json_string_length(v) > LABEL_MAX ||
            has_control(json_string_value(v)))
            return fail(ld, ERR_INVALID, "labels",
                        "label '%.*s' must be a string of at most %d printable bytes", QUOTE_MAX, k,
                        LABEL_MAX);
        l[n].key = arena_strdup(&ld->f->arena, k);
        l[n].value = arena_strdup(&ld->f->arena, json_string_value(v));
        n++;
    }
    *ret = l;
    *ret_n = n;
    return 0;
}

/* One element of "nodes": count (default 1, unsuffixed) nodes alike. */
static int json_node(struct loader *ld, const json_t *j, size_t index)
{
    struct simfleet_node proto = {.model = "", .gpu_class = "", .line = (int)index + 1};
    struct simfleet_label *labels = NULL;
    const json_t *name = NULL, *model = NULL;
    int64_t count = -1, v = 0;
    bool have[4] = {false}; /* cpu_milli, memory_mib, gpus, name */
    const char *k;
    json_t *m;
    int rc;

    if (!json_is_object(j))
        return fail(ld, ERR_INVALID, NULL, "a node must be an object, not %s", model_json_kind(j));
    json_object_foreach((json_t *)j, k, m)
    {
        if (strcmp(k, "name") == 0) {
            if (!json_is_string(m))
                return fail(ld, ERR_INVALID, "name", "name must be a string, not %s",
                            model_json_kind(m));
            name = m;
            have[3] = true;
        } else if (strcmp(k, "cpu_milli") == 0) {
            if ((rc = json_number(ld, k, m, 0, NODE_NUM_MAX, &proto.cpu_milli)) < 0)
                return rc;
            have[0] = true;
        } else if (strcmp(k, "memory_mib") == 0) {
            if ((rc = json_number(ld, k, m, 0, NODE_NUM_MAX, &proto.memory_mib)) < 0)
                return rc;
            have[1] = true;
        } else if (strcmp(k, "gpus") == 0) {
            if ((rc = json_number(ld, k, m, 0, SIMFLEET_MAX_GPUS, &v)) < 0)
                return rc;
            proto.n_gpus = (int32_t)v;
            have[2] = true;
        } else if (strcmp(k, "model") == 0) {
            if (!json_is_string(m))
                return fail(ld, ERR_INVALID, "model", "model must be a string, not %s",
                            model_json_kind(m));
            model = m;
        } else if (strcmp(k, "labels") == 0) {
            if ((rc = json_labels(ld, m, &labels, &proto.n_labels)) < 0)
                return rc;
            proto.labels = labels;
        } else if (strcmp(k, "count") == 0) {
            if ((rc = json_number(ld, k, m, 1, SIMFLEET_MAX_NODES, &count)) < 0)
                return rc;
        } else {
            return fail(ld, ERR_INVALID, NULL,
                        "unknown member '%.*s' (expected name, cpu_milli, memory_mib, gpus, "
                        "model, labels, count)",
                        QUOTE_MAX, k);
        }
    }
    static const char *const required[] = {"cpu_milli", "memory_mib", "gpus", "name"};
    for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
        if (!have[i])
            return fail(ld, ERR_INVALID, required[i], "%s is required", required[i]);
    }
    if ((rc = check_name(ld, "name", json_string_value(name))) < 0)
        return rc;
    if ((rc = set_model(ld, &proto, "model", model ? json_string_value(model) : NULL)) < 0)
        return rc;
    if (count < 0) {
        proto.name = arena_strdup(&ld->f->arena, json_string_value(name));
        count = 1;
    } else {
        char last[NODE_NAME_MAX + 32];
        snprintf(last, sizeof(last), "%s-%" PRId64, json_string_value(name), count - 1);
        if ((rc = check_name(ld, "name", last)) < 0)
            return rc;
    }
    if ((int64_t)ld->f->n_nodes + count > SIMFLEET_MAX_NODES)
        return fail(ld, ERR_TOO_LARGE, "count", "more than %d nodes in all", SIMFLEET_MAX_NODES);
    for (int64_t i = 0; i < count; i++) {
        struct simfleet_node *n = node_add(ld);
        *n = proto;
        if (!proto.name)
            n->name = arena_printf(&ld->f->arena, "%s-%" PRId64, json_string_value(name), i);
    }
    return 0;
}

static int load_json(struct loader *ld, FILE *fp)
{
    struct buf b;
    char chunk[65536];
    size_t got;
    json_error_t jerr;
    json_t *root, *nodes = NULL, *m;
    const char *k;
    size_t i;
    int rc = 0;

    buf_init(&b, SIMFLEET_MAX_JSON);
    while ((got = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
        if (buf_append(&b, chunk, got) < 0) {
            buf_release(&b);
            return fail(ld, ERR_TOO_LARGE, NULL, "file is larger than %d bytes", SIMFLEET_MAX_JSON);
        }
    }
    if (ferror(fp)) {
        buf_release(&b);
        return fail(ld, ERR_IO, NULL, "read failed: %s", strerror(errno));
    }
    root = json_loadb(b.data ? b.data : "", b.len, JSON_REJECT_DUPLICATES, &jerr);
    buf_release(&b);
    if (!root) {
        snprintf(ld->where, sizeof(ld->where), " line %d column %d", jerr.line, jerr.column);
        return fail(ld, ERR_BAD_JSON, NULL, "%s", jerr.text);
    }
    if (!json_is_object(root)) {
        rc = fail(ld, ERR_INVALID, NULL, "must hold a JSON object, not %s", model_json_kind(root));
        goto out;
    }
    json_object_foreach(root, k, m)
    {
        if (strcmp(k, "nodes") != 0) {
            rc =
                fail(ld, ERR_INVALID, NULL, "unknown member '%.*s' (expected nodes)", QUOTE_MAX, k);
            goto out;
        }
        nodes = m;
    }
    if (!nodes || !json_is_array(nodes)) {
        rc = fail(ld, ERR_INVALID, "nodes", "\"nodes\" must be an array of nodes, not %s",
                  nodes ? model_json_kind(nodes) : "missing");
        goto out;
    }
    json_array_foreach(nodes, i, m)
    {
        snprintf(ld->where, sizeof(ld->where), " nodes[%zu]", i);
        if ((rc = json_node(ld, m, i)) < 0)
            goto out;
    }
    ld->where[0] = '\0';
out:
    json_decref(root);
    return rc;
}

/* ---- whole file ---- */

static int cmp_node_name(const void *a, const void *b)
{
    const struct simfleet_node *x = *(const struct simfleet_node *const *)a;
    const struct simfleet_node *y = *(const struct simfleet_node *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static int check_unique(struct loader *ld)
{
    struct simfleet *f = ld->f;
    const struct simfleet_node **by_name = xcalloc(f->n_nodes, sizeof(*by_name));
    int rc = 0;

    for (size_t i = 0; i < f->n_nodes; i++)
        by_name[i] = &f->nodes[i];
    qsort(by_name, f->n_nodes, sizeof(*by_name), cmp_node_name);
    for (size_t i = 1; i < f->n_nodes && rc == 0; i++) {
        const struct simfleet_node *first = by_name[i - 1], *again = by_name[i];
        if (strcmp(first->name, again->name) != 0)
            continue;
        if (ld->json)
            snprintf(ld->where, sizeof(ld->where), " nodes[%d]", again->line - 1);
        else
            snprintf(ld->where, sizeof(ld->where), " line %d", again->line);
        if (ld->json && first->line == again->line)
            rc = fail(ld, ERR_INVALID, "name", "node '%s' is described twice", again->name);
        else if (ld->json)
            rc = fail(ld, ERR_INVALID, "name", "node '%s' is described twice (first in nodes[%d])",
                      again->name, first->line - 1);
        else
            rc = fail(ld, ERR_INVALID, "name", "node '%s' is described twice (first on line %d)",
                      again->name, first->line);
    }
    free(by_name);
    return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int simfleet_load(const char *path, struct simfleet **ret, struct error_info *ei)
{
    struct loader ld = {.path = path, .ei = ei};
    FILE *fp;
    int rc;

    if (ends_with(path, ".json"))
        ld.json = true;
    else if (!ends_with(path, ".csv"))
        return fail(&ld, ERR_INVALID, NULL,
                    "unknown fleet description format (expected a .csv "
                    "or .json file)");
    fp = fopen(path, "r");
    if (!fp)
        return fail(&ld, ERR_IO, NULL, "could not open: %s", strerror(errno));
    ld.f = xcalloc(1, sizeof(*ld.f));
    arena_init(&ld.f->arena);
    rc = ld.json ? load_json(&ld, fp) : load_csv(&ld, fp);
    fclose(fp);
    if (rc >= 0 && ld.f->n_nodes == 0)
        rc = fail(&ld, ERR_INVALID, NULL, "describes no nodes");
    if (rc >= 0)
        rc = check_unique(&ld);
    if (rc < 0) {
        simfleet_free(ld.f);
        return rc;
    }
    for (size_t i = 0; i < ld.f->n_nodes; i++)
        ld.f->n_gpus += ld.f->nodes[i].n_gpus;
    *ret = ld.f;
    return 0;
}

void simfleet_free(struct simfleet *f)
{
    if (!f)
        return;
    free(f->nodes);
    arena_release(&f->arena);
    free(f);
}

/* ---- into the store ---- */

#define REQUEST_ID "simfleet"

/*
 * Inserts r and its audit entry; *ret_id gets the new id. Every field but id
 * must be set here: store_insert writes an unset one as NULL, and a column
 * added to the model later must not silently become NULL.
 */
static int insert_audited(struct store_conn *c, const struct resource_def *def, struct row *r,
                          int64_t now_s, struct arena *a, int64_t *ret_id, struct error_info *ei)
{
    struct store_audit_entry e = {
        .time_s = now_s, .action = "import", .request_id = REQUEST_ID, .def = def, .after = r};
    int64_t id;
    int rc;

    for (size_t i = 1; i < def->n_fields; i++) {
        if (!r->v[i].set)
            return errinfo_set(ei, ERR_INTERNAL, def->fields[i].name,
                               "simfleet does not set field '%s' of %s", def->fields[i].name,
                               def->name);
    }
    if ((rc = store_insert(c, def, r, &id, ei)) < 0)
        return rc;
    row_set_int(r, 0, id);
    e.object_id = id;
    if ((rc = store_audit(c, &e, a, ei)) < 0)
        return rc;
    *ret_id = id;
    return 0;
}

/* Compact sorted JSON of labels plus simulated=true, in a. */
static const char *labels_json(const struct simfleet_label *l, size_t n, struct arena *a)
{
    json_t *j = json_object();
    char *text;
    const char *copy;
    for (size_t i = 0; i < n; i++)
        json_object_set_new(j, l[i].key, json_string(l[i].value));
    json_object_set_new(j, "simulated", json_string("true"));
    text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!text)
        abort(); /* jansson fails here only when out of memory */
    copy = arena_strdup(a, text);
    free(text);
    return copy;
}

static int digits(int64_t v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* A fleet may be built by hand, not loaded: the checks of the loader again, cheaply. */
static int check_fleet(const char *cluster_name, const struct simfleet *f, struct error_info *ei)
{
    size_t prefix;
    if (!cluster_name || !model_valid_name(cluster_name, CLUSTER_NAME_MAX))
        return errinfo_set(ei, ERR_INVALID, "cluster",
                           "'%.*s' is not a valid cluster name (lower-case letters, digits and "
                           "._-, at most %d bytes)",
                           QUOTE_MAX, cluster_name ? cluster_name : "", CLUSTER_NAME_MAX);
    if (!f || f->n_nodes > SIMFLEET_MAX_NODES)
        return errinfo_set(ei, ERR_INVALID, NULL, "no fleet, or more than %d nodes",
                           SIMFLEET_MAX_NODES);
    prefix = strlen("SIM-") + strlen(cluster_name) + 1;
    for (size_t i = 0; i < f->n_nodes; i++) {
        const struct simfleet_node *n = &f->nodes[i];
        if (!n->name || !model_valid_ident(n->name, NODE_NAME_MAX) || n->n_gpus < 0 ||
            n->n_gpus > SIMFLEET_MAX_GPUS || n->cpu_milli < 0 || n->cpu_milli > NODE_NUM_MAX ||
            n->memory_mib < 0 || n->memory_mib > NODE_NUM_MAX ||
            (n->n_gpus > 0 &&
             (!n->gpu_class || !model_valid_ident(n->gpu_class, SIMFLEET_CLASS_MAX) || !n->model ||
              strlen(n->model) > MODEL_MAX)))
            return errinfo_set(ei, ERR_INVALID, NULL, "fleet node %zu ('%.*s') is not valid", i,
                               QUOTE_MAX, n->name ? n->name : "");
        if (n->n_gpus > 0 &&
            prefix + strlen(n->name) + 1 + (size_t)digits(n->n_gpus - 1) > UUID_MAX)
            return errinfo_set(ei, ERR_INVALID, NULL,
                               "GPU uuids of node '%.*s' in cluster '%s' would be longer than %d "
                               "bytes; use shorter names",
                               QUOTE_MAX, n->name, cluster_name, UUID_MAX);
    }
    return 0;
}

/* The existing cluster's id, 0 when there is none; ERR_CONFLICT when it is not simulated. */
static int find_cluster(struct store_conn *c, const char *name, struct arena *a, int64_t *ret_id,
                        struct error_info *ei)
{
    const struct resource_def *def = &model_clusters;
    struct store_filter flt;
    struct row *rows;
    size_t n;
    int rc;

    store_filter_init(&flt);
    store_filter_eq_str(&flt, F_CLUSTERS_NAME, name);
    flt.limit = 1;
    if ((rc = store_list(c, def, &flt, a, &rows, &n, ei)) < 0)
        return rc;
    *ret_id = 0;
    if (n == 0)
        return 0;
    if (strcmp(row_get(&rows[0], F_CLUSTERS_BACKEND)->s, "sim") != 0)
        return errinfo_set(ei, ERR_CONFLICT, "cluster",
                           "cluster '%s' exists and is not simulated (backend '%s'); choose "
                           "another name for the simulated cluster",
                           name, row_get(&rows[0], F_CLUSTERS_BACKEND)->s);
    *ret_id = model_row_id(&rows[0]);
    return 0;
}

static int create_cluster(struct store_conn *c, const char *name, int64_t now_s, struct arena *a,
                          int64_t *ret_id, struct error_info *ei)
{
    const struct resource_def *def = &model_clusters;
    struct row r = model_row_new(def, a);
    row_set_str(&r, a, F_CLUSTERS_NAME, name);
    row_set_str(&r, a, F_CLUSTERS_BACKEND, "sim");
    row_set_str(&r, a, F_CLUSTERS_ENDPOINT, "");
    row_set_str(&r, a, F_CLUSTERS_LABELS, "{\"simulated\":\"true\"}");
    row_set_str(&r, a, F_CLUSTERS_DESCRIPTION, "SIMULATED cluster: no real GPUs");
    row_set_int(&r, F_CLUSTERS_CREATED_AT, now_s);
    row_set_int(&r, F_CLUSTERS_UPDATED_AT, now_s);
    return insert_audited(c, def, &r, now_s, a, ret_id, ei);
}

/* The id of class n->gpu_class, created when missing. */
static int class_id(struct store_conn *c, const struct simfleet_node *n, int64_t now_s,
                    struct arena *a, int64_t *ret_id, struct error_info *ei)
{
    const struct resource_def *def = &model_gpu_classes;
    struct store_filter flt;
    struct row *rows, r;
    size_t cnt;
    int rc;

    store_filter_init(&flt);
    store_filter_eq_str(&flt, F_GPU_CLASSES_NAME, n->gpu_class);
    flt.limit = 1;
    if ((rc = store_list(c, def, &flt, a, &rows, &cnt, ei)) < 0)
        return rc;
    if (cnt > 0) {
        *ret_id = model_row_id(&rows[0]);
        return 0;
    }
    r = model_row_new(def, a);
    row_set_str(&r, a, F_GPU_CLASSES_NAME, n->gpu_class);
    row_set_str(&r, a, F_GPU_CLASSES_MODEL, n->model);
    row_set_str(&r, a, F_GPU_CLASSES_VENDOR, "nvidia");
    row_set_int(&r, F_GPU_CLASSES_MEMORY_MIB, 0); /* unknown: trace files do not say */
    row_set_null(&r, F_GPU_CLASSES_PARENT_ID);
    row_set_int(&r, F_GPU_CLASSES_MILLI, 1000);
    row_set_int(&r, F_GPU_CLASSES_CREATED_AT, now_s);
    row_set_int(&r, F_GPU_CLASSES_UPDATED_AT, now_s);
    return insert_audited(c, def, &r, now_s, a, ret_id, ei);
}

static int cmp_node_class(const void *a, const void *b)
{
    const struct simfleet_node *x = *(const struct simfleet_node *const *)a;
    const struct simfleet_node *y = *(const struct simfleet_node *const *)b;
    int c = strcmp(x->gpu_class, y->gpu_class);
    return c ? c : (x < y ? -1 : x > y);
}

/* class_ids[i]: the class id of node i (nodes with GPUs only); one look-up per class. */
static int resolve_classes(struct store_conn *c, const struct simfleet *f, int64_t now_s,
                           struct arena *a, int64_t *class_ids, struct error_info *ei)
{
    const struct simfleet_node **by_class = xcalloc(f->n_nodes ? f->n_nodes : 1, sizeof(*by_class));
    size_t n = 0;
    int64_t id = 0;
    int rc = 0;

    for (size_t i = 0; i < f->n_nodes; i++) {
        if (f->nodes[i].n_gpus > 0)
            by_class[n++] = &f->nodes[i];
    }
    qsort(by_class, n, sizeof(*by_class), cmp_node_class);
    for (size_t i = 0; i < n && rc >= 0; i++) {
        if (i == 0 || strcmp(by_class[i]->gpu_class, by_class[i - 1]->gpu_class) != 0)
            rc = class_id(c, by_class[i], now_s, a, &id, ei);
        class_ids[by_class[i] - f->nodes] = id;
    }
    free(by_class);
    return rc;
}

static int create_node(struct store_conn *c, const char *cluster_name, int64_t cluster_id,
                       const struct simfleet_node *n, int64_t class_id_, int64_t now_s,
                       struct arena *a, struct error_info *ei)
{
    const struct resource_def *nd = &model_nodes, *gd = &model_gpus;
    struct row r = model_row_new(nd, a);
    int64_t node_id, gpu_id;
    int rc;

    row_set_int(&r, F_NODES_CLUSTER_ID, cluster_id);
    row_set_str(&r, a, F_NODES_NAME, n->name);
    row_set_int(&r, F_NODES_CPU_MILLI, n->cpu_milli);
    row_set_int(&r, F_NODES_MEMORY_MIB, n->memory_mib);
    row_set_str(&r, a, F_NODES_LABELS, labels_json(n->labels, n->n_labels, a));
    row_set_str(&r, a, F_NODES_STATE, "ready");
    row_set_int(&r, F_NODES_CREATED_AT, now_s);
    row_set_int(&r, F_NODES_UPDATED_AT, now_s);
    if ((rc = insert_audited(c, nd, &r, now_s, a, &node_id, ei)) < 0)
        return rc;
    for (int32_t g = 0; g < n->n_gpus; g++) {
        struct row gr = model_row_new(gd, a);
        row_set_int(&gr, F_GPUS_NODE_ID, node_id);
        row_set_int(&gr, F_GPUS_INDEX, g);
        row_set_str(&gr, a, F_GPUS_UUID,
                    arena_printf(a, "SIM-%s-%s-%d", cluster_name, n->name, (int)g));
        row_set_int(&gr, F_GPUS_GPU_CLASS_ID, class_id_);
        row_set_int(&gr, F_GPUS_MEMORY_MIB, 0);
        row_set_int(&gr, F_GPUS_MIG_MODE, 0);
        row_set_str(&gr, a, F_GPUS_HEALTH, "ok");
        row_set_int(&gr, F_GPUS_CREATED_AT, now_s);
        row_set_int(&gr, F_GPUS_UPDATED_AT, now_s);
        if ((rc = insert_audited(c, gd, &gr, now_s, a, &gpu_id, ei)) < 0)
            return rc;
    }
    return 0;
}

int simfleet_store(struct store_conn *c, const char *cluster_name, const struct simfleet *f,
                   int64_t now_s, int64_t *ret_cluster_id, size_t *ret_n_nodes,
                   struct error_info *ei)
{
    struct arena a, tmp;
    int64_t cluster_id = 0, *class_ids = NULL;
    size_t created = 0;
    int rc;

    if ((rc = check_fleet(cluster_name, f, ei)) < 0)
        return rc;
    arena_init(&a);
    arena_init(&tmp);
    if ((rc = store_begin(c, ei)) < 0)
        goto out;
    if ((rc = find_cluster(c, cluster_name, &a, &cluster_id, ei)) < 0)
        goto fail;
    if (cluster_id > 0) {
        store_rollback(c); /* nothing was written */
        goto done;
    }
    if ((rc = create_cluster(c, cluster_name, now_s, &a, &cluster_id, ei)) < 0)
        goto fail;
    class_ids = xcalloc(f->n_nodes ? f->n_nodes : 1, sizeof(*class_ids));
    if ((rc = resolve_classes(c, f, now_s, &a, class_ids, ei)) < 0)
        goto fail;
    for (size_t i = 0; i < f->n_nodes; i++) {
        rc = create_node(c, cluster_name, cluster_id, &f->nodes[i], class_ids[i], now_s, &tmp, ei);
        arena_release(&tmp);
        if (rc < 0)
            goto fail;
    }
    if ((rc = store_commit(c, ei)) < 0)
        goto out;
    created = f->n_nodes;
done:
    if (ret_cluster_id)
        *ret_cluster_id = cluster_id;
    if (ret_n_nodes)
        *ret_n_nodes = created;
    rc = 0;
    goto out;
fail:
    store_rollback(c);
out:
    free(class_ids);
    arena_release(&tmp);
    arena_release(&a);
    return rc;
}
