/* SPDX-License-Identifier: Apache-2.0 */
/*
 * csv.c: RFC 4180 CSV reading and writing, and the inventory spreadsheet on
 * top of it. Import is all or nothing: every row is parsed and validated
 * first, and the table is handed out only when no row is bad.
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "inventory/inventory-int.h"

/* ---- the generic reader ---- */

struct record {
    struct buf text;                   /* fields back to back, NUL-separated */
    size_t starts[INV_CSV_MAX_FIELDS]; /* offset of each field in text */
    size_t n;
    size_t field_len; /* bytes of the field being read */
};

static int rec_putc(struct record *r, char c, size_t line, struct error_info *ei)
{
    if (r->field_len >= INV_CSV_MAX_FIELD)
        return errinfo_set(ei, ERR_TOO_LARGE, NULL, "line %zu: field %zu longer than %d bytes",
                           line, r->n + 1, INV_CSV_MAX_FIELD);
    r->field_len++;
    return buf_append(&r->text, &c, 1);
}

static int rec_end_field(struct record *r, size_t line, struct error_info *ei)
{
    char nul = '\0';
    int rc;
    if (r->n >= INV_CSV_MAX_FIELDS)
        return errinfo_set(ei, ERR_TOO_LARGE, NULL, "line %zu: more than %d fields", line,
                           INV_CSV_MAX_FIELDS);
    rc = buf_append(&r->text, &nul, 1);
    if (rc < 0)
        return rc;
    r->n++;
    if (r->n < INV_CSV_MAX_FIELDS)
        r->starts[r->n] = r->text.len;
    r->field_len = 0;
    return 0;
}

int inv_csv_parse(const char *data, size_t len, inv_csv_record_fn fn, void *ctx,
                  struct error_info *ei)
{
    struct record r;
    const char *p = data, *end = data + len;
    char *fields[INV_CSV_MAX_FIELDS];
    size_t line = 1, rec_line = 1, row = 0;
    int rc = 0;

    memset(&r, 0, sizeof(r));
    buf_init(&r.text, (size_t)INV_CSV_MAX_FIELDS * (INV_CSV_MAX_FIELD + 1));
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;

    while (p < end && rc == 0) {
        /* at the start of a record */
        rec_line = line;
        r.n = 0;
        r.starts[0] = 0;
        r.field_len = 0;
        buf_reset(&r.text);
        r.text.len = 0;
        if (*p == '\n' || (*p == '\r' && p + 1 < end && p[1] == '\n')) {
            /* an empty line: no record */
            p += *p == '\r' ? 2 : 1;
            line++;
            continue;
        }
        for (;;) {
            /* at the start of a field */
            if (p < end && *p == '"') {
                size_t open_line = line;
                p++;
                for (;;) {
                    if (p >= end) {
                        rc = errinfo_set(ei, ERR_INVALID, NULL,
                                         "line %zu: quoted field never closed", open_line);
                        break;
                    }
                    if (*p == '"') {
                        if (p + 1 < end && p[1] == '"') {
                            rc = rec_putc(&r, '"', line, ei);
                            p += 2;
                            if (rc < 0)
                                break;
                            continue;
                        }
                        p++;
                        break;
                    }
                    if (*p == '\n')
                        line++;
                    rc = rec_putc(&r, *p++, line, ei);
                    if (rc < 0)
                        break;
                }
                if (rc < 0)
                    break;
                if (p < end && *p != ',' && *p != '\n' &&
                    !(*p == '\r' && p + 1 < end && p[1] == '\n')) {
                    rc = errinfo_set(ei, ERR_INVALID, NULL,
                                     "line %zu: text after the closing quote of field %zu", line,
                                     r.n + 1);
                    break;
                }
            } else {
                while (p < end && *p != ',' && *p != '\n') {
                    if (*p == '\r' && p + 1 < end && p[1] == '\n')
                        break;
                    if (*p == '"' || *p == '\r') {
                        rc = errinfo_set(ei, ERR_INVALID, NULL,
                                         "line %zu: %s inside unquoted field %zu", line,
                                         *p == '"' ? "quote" : "carriage return", r.n + 1);
                        break;
                    }
                    rc = rec_putc(&r, *p++, line, ei);
                    if (rc < 0)
                        break;
                }
                if (rc < 0)
                    break;
            }
            rc = rec_end_field(&r, line, ei);
            if (rc < 0)
                break;
            if (p < end && *p == ',') {
                p++;
                continue; /* a comma at the very end makes one more empty field */
            }
            /* end of record */
            if (p < end)
                p += *p == '\r' ? 2 : 1;
            line++;
            break;
        }
        if (rc < 0)
            break;
        if (row >= INV_CSV_MAX_ROWS) {
            rc = errinfo_set(ei, ERR_TOO_LARGE, NULL, "line %zu: more than %d records", rec_line,
                             INV_CSV_MAX_ROWS);
            break;
        }
        row++;
        for (size_t i = 0; i < r.n; i++)
            fields[i] = r.text.data + r.starts[i];
        if (fn)
            rc = fn(ctx, fields, r.n, row, rec_line);
    }
    buf_release(&r.text);
    return rc < 0 ? rc : (int)row;
}

int inv_csv_put_field(struct buf *out, const char *s, bool last)
{
    bool quote = false;
    int rc = 0;

    for (const char *p = s; *p; p++)
        if (*p == ',' || *p == '"' || *p == '\r' || *p == '\n')
            quote = true;
    if (*s == ' ' || *s == '\t' || (*s && (s[strlen(s) - 1] == ' ' || s[strlen(s) - 1] == '\t')))
        quote = true; /* spreadsheets trim unquoted spaces */
    if (!quote) {
        rc = buf_puts(out, s);
    } else {
        rc = buf_puts(out, "\"");
        for (const char *p = s; rc == 0 && *p; p++) {
            const char *q = strchr(p, '"');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            rc = buf_append(out, p, n);
            if (rc == 0 && q)
                rc = buf_puts(out, "\"\"");
            p += n;
            if (!q)
                break;
        }
        if (rc == 0)
            rc = buf_puts(out, "\"");
    }
    if (rc == 0)
        rc = buf_puts(out, last ? "\r\n" : ",");
    return rc;
}

/* ---- the inventory spreadsheet ---- */

#define INV_FIELD_MAX 256

static const char *const col_names[INV_N_COLS] = {
    "gpu", "model", "node", "cluster", "site", "owner", "manager", "intended_use", "environment",
};

/* Header aliases, compared after lower-casing and dropping spaces, '_', '-', '/' and '.'. */
static const struct {
    const char *alias;
    int col;
} col_aliases[] = {
    {"gpu", INV_COL_GPU},
    {"uuid", INV_COL_GPU},
    {"gpuuuid", INV_COL_GPU},
    {"gpuid", INV_COL_GPU},
    {"model", INV_COL_MODEL},
    {"gpumodel", INV_COL_MODEL},
    {"node", INV_COL_NODE},
    {"host", INV_COL_NODE},
    {"hostname", INV_COL_NODE},
    {"server", INV_COL_NODE},
    {"cluster", INV_COL_CLUSTER},
    {"site", INV_COL_SITE},
    {"cloud", INV_COL_SITE},
    {"cloudsite", INV_COL_SITE},
    {"location", INV_COL_SITE},
    {"owner", INV_COL_OWNER},
    {"owningteam", INV_COL_OWNER},
    {"team", INV_COL_OWNER},
    {"manager", INV_COL_MANAGER},
    {"intendeduse", INV_COL_INTENDED_USE},
    {"use", INV_COL_INTENDED_USE},
    {"purpose", INV_COL_INTENDED_USE},
    {"environment", INV_COL_ENVIRONMENT},
    {"env", INV_COL_ENVIRONMENT},
};

const char *inv_col_name(int col)
{
    return col >= 0 && col < INV_N_COLS ? col_names[col] : NULL;
}

static int col_of_header(const char *h)
{
    char norm[64];
    size_t n = 0;
    for (const char *p = h; *p; p++) {
        char c = *p;
        if (c == ' ' || c == '\t' || c == '_' || c == '-' || c == '/' || c == '.')
            continue;
        if (n + 1 >= sizeof(norm))
            return -1;
        norm[n++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    norm[n] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(col_aliases); i++)
        if (strcmp(norm, col_aliases[i].alias) == 0)
            return col_aliases[i].col;
    return -1;
}

void inv_table_init(struct inv_table *t)
{
    memset(t, 0, sizeof(*t));
}

void inv_table_release(struct inv_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        for (int c = 0; c < INV_N_COLS; c++)
            free(t->items[i].f[c]);
    free(t->items);
    for (size_t i = 0; i < t->n_unknown; i++)
        free(t->unknown_cols[i]);
    free(t->unknown_cols);
    inv_table_init(t);
}

void inv_table_add(struct inv_table *t, const struct inv_item *item)
{
    ALLOC_GROW(t->items, t->n + 1, t->cap);
    for (int c = 0; c < INV_N_COLS; c++)
        t->items[t->n].f[c] = xstrdup(item->f[c] ? item->f[c] : "");
    t->n++;
}

static bool valid_utf8(const unsigned char *s)
{
    while (*s) {
        size_t n;
        unsigned cp;
        if (*s < 0x80) {
            s++;
            continue;
        }
        if ((*s & 0xE0) == 0xC0) {
            n = 1;
            cp = *s & 0x1F;
        } else if ((*s & 0xF0) == 0xE0) {
            n = 2;
            cp = *s & 0x0F;
        } else if ((*s & 0xF8) == 0xF0) {
            n = 3;
            cp = *s & 0x07;
        } else {
            return false;
        }
        s++;
        for (size_t i = 0; i < n; i++, s++) {
            if ((*s & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (*s & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
    }
    return true;
}

/* "GPU-<hex and dashes>" or "MIG-<letters, digits, dashes and slashes>". */
static bool valid_uuid(const char *s)
{
    size_t n = strlen(s);
    bool mig;
    if (n < 5 || n >= INV_UUID_MAX)
        return false;
    if (strncmp(s, "GPU-", 4) == 0)
        mig = false;
    else if (strncmp(s, "MIG-", 4) == 0)
        mig = true;
    else
        return false;
    for (const char *p = s + 4; *p; p++) {
        char c = *p;
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        bool alnum = hex || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!(c == '-' || (mig ? (alnum || c == '/') : hex)))
            return false;
    }
    return true;
}

struct ictx {
    bool strict;
    struct inv_table tab;
    int col_of[INV_CSV_MAX_FIELDS]; /* field index to column, -1 unknown */
    size_t n_header;
    size_t *rows; /* the record number of each item */
    size_t cap_rows;
    size_t n_errors;
    struct buf *report;
    struct error_info *ei;
};

static void row_error(struct ictx *c, size_t row, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void row_error(struct ictx *c, size_t row, const char *fmt, ...)
{
    char msg[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->n_errors == 0)
        errinfo_set(c->ei, ERR_INVALID, NULL, "row %zu: %s", row, msg);
    if (c->report && c->n_errors < INV_CSV_MAX_ERRORS)
        (void)buf_printf(c->report, "row %zu: %s\n", row, msg);
    c->n_errors++;
}

static int on_header(struct ictx *c, char *const *fields, size_t n)
{
    int seen[INV_N_COLS];
    for (int i = 0; i < INV_N_COLS; i++)
        seen[i] = -1;
    c->n_header = n;
    for (size_t i = 0; i < n; i++) {
        int col = col_of_header(fields[i]);
        c->col_of[i] = col;
        if (col < 0) {
            ALLOC_GROW(c->tab.unknown_cols, c->tab.n_unknown + 1, c->tab.cap_unknown);
            c->tab.unknown_cols[c->tab.n_unknown++] = xstrdup(fields[i]);
            continue;
        }
        if (seen[col] >= 0)
            return errinfo_set(c->ei, ERR_INVALID, NULL,
                               "row 1: columns '%.64s' and '%.64s' are both the %s column",
                               fields[seen[col]], fields[i], col_names[col]);
        seen[col] = (int)i;
    }
    if (seen[INV_COL_GPU] < 0)
        return errinfo_set(c->ei, ERR_INVALID, NULL,
                           "row 1: the header has no GPU column (gpu or uuid)");
    if (c->strict && c->tab.n_unknown > 0)
        return errinfo_set(c->ei, ERR_INVALID, NULL, "row 1: unknown column '%.64s'",
                           c->tab.unknown_cols[0]);
    return 0;
}

static int on_record(void *ctx, char *const *fields, size_t n, size_t row, size_t line)
{
    struct ictx *c = ctx;
    struct inv_item item;
    (void)line;

    if (row == 1)
        return on_header(c, fields, n);
    if (n != c->n_header) {
        row_error(c, row, "has %zu fields, the header has %zu", n, c->n_header);
        return 0;
    }
    memset(&item, 0, sizeof(item));
    for (size_t i = 0; i < n; i++) {
        int col = c->col_of[i];
        if (col < 0)
            continue;
        if (strlen(fields[i]) > INV_FIELD_MAX) {
            row_error(c, row, "%s is longer than %d bytes", col_names[col], INV_FIELD_MAX);
            return 0;
        }
        if (!valid_utf8((const unsigned char *)fields[i])) {
            row_error(c, row, "%s is not valid UTF-8", col_names[col]);
            return 0;
        }
        item.f[col] = fields[i];
    }
    if (!item.f[INV_COL_GPU] || !*item.f[INV_COL_GPU]) {
        row_error(c, row, "the GPU (uuid) is empty");
        return 0;
    }
    if (!valid_uuid(item.f[INV_COL_GPU])) {
        row_error(c, row, "GPU '%.100s' is not a GPU-... or MIG-... UUID", item.f[INV_COL_GPU]);
        return 0;
    }
    inv_table_add(&c->tab, &item);
    ALLOC_GROW(c->rows, c->tab.n, c->cap_rows);
    c->rows[c->tab.n - 1] = row;
    return 0;
}

static const struct inv_table *sort_tab;
static int cmp_uuid(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    int r = strcmp(sort_tab->items[i].f[INV_COL_GPU], sort_tab->items[j].f[INV_COL_GPU]);
    return r ? r : (i < j ? -1 : i > j);
}

static void check_duplicates(struct ictx *c)
{
    size_t *order;
    if (c->tab.n < 2)
        return;
    order = xcalloc(c->tab.n, sizeof(*order));
    for (size_t i = 0; i < c->tab.n; i++)
        order[i] = i;
    sort_tab = &c->tab;
    qsort(order, c->tab.n, sizeof(*order), cmp_uuid);
    sort_tab = NULL;
    for (size_t k = 1; k < c->tab.n; k++) {
        const struct inv_item *a = &c->tab.items[order[k - 1]], *b = &c->tab.items[order[k]];
        if (strcmp(a->f[INV_COL_GPU], b->f[INV_COL_GPU]) == 0)
            row_error(c, c->rows[order[k]], "GPU '%s' is already on row %zu", b->f[INV_COL_GPU],
                      c->rows[order[k - 1]]);
    }
    free(order);
}

int inv_csv_import(const char *data, size_t len, bool strict, struct inv_table *ret,
                   struct buf *report, struct error_info *ei)
{
    struct ictx c;
    int rc;

    memset(&c, 0, sizeof(c));
    inv_table_init(&c.tab);
    c.strict = strict;
    c.report = report;
    c.ei = ei;
    rc = inv_csv_parse(data, len, on_record, &c, ei);
    if (rc == 0)
        rc = errinfo_set(ei, ERR_INVALID, NULL, "row 1: the header row is missing");
    if (rc >= 0)
        check_duplicates(&c);
    if (rc >= 0 && c.n_errors > 0) {
        if (ei && c.n_errors > 1) {
            size_t l = strlen(ei->message);
            snprintf(ei->message + l, sizeof(ei->message) - l, " (%zu bad rows in all)",
                     c.n_errors);
        }
        rc = ERR_INVALID;
    }
    free(c.rows);
    if (rc < 0) {
        inv_table_release(&c.tab);
        return rc;
    }
    *ret = c.tab;
    return (int)ret->n;
}

int inv_csv_export(const struct inv_table *t, struct buf *out)
{
    int rc = 0;
    for (int c = 0; rc == 0 && c < INV_N_COLS; c++)
        rc = inv_csv_put_field(out, col_names[c], c == INV_N_COLS - 1);
    for (size_t i = 0; rc == 0 && i < t->n; i++)
        for (int c = 0; rc == 0 && c < INV_N_COLS; c++)
            rc = inv_csv_put_field(out, t->items[i].f[c], c == INV_N_COLS - 1);
    return rc;
}
