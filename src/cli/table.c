/* SPDX-License-Identifier: Apache-2.0 */
/* table.c: aligned plain-text tables for the client's default output. */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/table.h"

void table_init(struct table *t, size_t n_cols)
{
    t->n_cols = n_cols;
    t->n_rows = t->cap_cells = 0;
    t->cells = NULL;
    t->max_width = 0;
    t->blank_empty = false;
}

void table_release(struct table *t)
{
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    table_init(t, t->n_cols);
}

static bool continues_char(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

size_t table_text_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        if (!continues_char((unsigned char)*s))
            n++;
    }
    return n;
}

/* A copy of s that a terminal shows as text, cut to max characters (0: no limit). */
static char *safe_cell(const char *s, size_t max, bool blank)
{
    size_t len, chars = 0, cut = 0;
    char *out;

    if (!s || !*s)
        return xstrdup(blank ? "" : "-");
    len = strlen(s);
    if (max > 3 && table_text_width(s) > max) {
        /* keep max - 3 characters, then "..." */
        for (cut = 0; cut < len; cut++) {
            if (!continues_char((unsigned char)s[cut]) && chars++ == max - 3)
                break;
        }
        len = cut;
    }
    out = xmalloc(len + (cut ? 4 : 1));
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (cut) {
        memcpy(out + len, "...", 4);
    } else {
        out[len] = '\0';
    }
    return out;
}

char *table_cut(const char *s, size_t max)
{
    return safe_cell(s, max, false);
}

void table_add_row(struct table *t, const char *const *cells)
{
    char **row;

    ALLOC_GROW(t->cells, (t->n_rows + 1) * t->n_cols, t->cap_cells);
    row = t->cells + t->n_rows * t->n_cols;
    for (size_t c = 0; c < t->n_cols; c++)
        row[c] = safe_cell(cells[c], t->max_width, t->blank_empty && t->n_rows > 0);
    t->n_rows++;
}

void table_fit_column(struct table *t, size_t col, size_t line_width)
{
    size_t others = 0, room;

    if (col >= t->n_cols || t->n_rows == 0)
        return;
    for (size_t c = 0; c < t->n_cols; c++) {
        size_t w = 0;
        if (c == col)
            continue;
        for (size_t r = 0; r < t->n_rows; r++) {
            size_t cw = table_text_width(t->cells[r * t->n_cols + c]);
            if (cw > w)
                w = cw;
        }
        others += w + 2;
    }
    room = line_width > others ? line_width - others : 0;
    if (room < table_text_width(t->cells[col]))
        room = table_text_width(t->cells[col]);
    if (room < 12)
        room = 12;
    for (size_t r = 1; r < t->n_rows; r++) {
        char **cell = &t->cells[r * t->n_cols + col];
        if (table_text_width(*cell) > room) {
            char *cut = safe_cell(*cell, room, false);
            free(*cell);
            *cell = cut;
        }
    }
}

int table_render(const struct table *t, struct buf *out)
{
    size_t *width = xcalloc(t->n_cols ? t->n_cols : 1, sizeof(size_t));
    int rc = 0;

    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t c = 0; c < t->n_cols; c++) {
            size_t w = table_text_width(t->cells[r * t->n_cols + c]);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t r = 0; r < t->n_rows && rc == 0; r++) {
        size_t n = t->n_cols;
        /* blank cells at the end of a line: no padding before them */
        while (n > 1 && t->cells[r * t->n_cols + n - 1][0] == '\0')
            n--;
        for (size_t c = 0; c < n && rc == 0; c++) {
            const char *cell = t->cells[r * t->n_cols + c];
            rc = buf_puts(out, cell);
            if (rc == 0 && c + 1 < n)
                rc = buf_printf(out, "%*s", (int)(width[c] - table_text_width(cell) + 2), "");
        }
        if (rc == 0)
            rc = buf_puts(out, "\n");
    }
    free(width);
    return rc;
}
