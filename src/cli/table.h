/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.h: a plain-text table printer. Columns are left-aligned and separated
 * by two spaces, lines carry no trailing spaces, and cells are made safe for
 * a terminal (control characters become '?'), since they hold what a server
 * sent. Widths count UTF-8 characters, not bytes.
 */
#ifndef GPUAAS_CLI_TABLE_H
#define GPUAAS_CLI_TABLE_H

#include <stddef.h>

#include "base/buf.h"

struct table {
    size_t n_cols;
    size_t n_rows; /* rows added, the header included */
    size_t cap_rows;
    char **cells;     /* n_rows * n_cols, owned */
    size_t max_width; /* longer cells are cut to this many characters; 0 for no limit */
};

/* An empty table of n_cols columns; release it with table_release. */
void table_init(struct table *t, size_t n_cols);
void table_release(struct table *t);

/*
 * Appends a row of t->n_cols cells, copied. A NULL or empty cell prints as
 * "-", so every column of a row holds a word (the header too: add it first).
 */
void table_add_row(struct table *t, const char *const *cells);

/* Appends the table's text to out. Returns 0 or ERR_TOO_LARGE. */
int table_render(const struct table *t, struct buf *out);

/* Number of UTF-8 characters in s (bytes that do not continue a character). */
size_t table_text_width(const char *s);

#endif
