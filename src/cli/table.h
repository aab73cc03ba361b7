/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.h: a plain-text table printer. Columns are left-aligned and separated
 * by two spaces, lines carry no trailing spaces, and cells are made safe for
 * a terminal (control characters become '?'), since they hold what a server
 * sent. Widths count UTF-8 characters, not bytes.
 */
#ifndef GPUAAS_CLI_TABLE_H
#define GPUAAS_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"

struct table {
    size_t n_cols;
    size_t n_rows; /* rows added, the header included */
    size_t cap_cells;
    char **cells;     /* n_rows * n_cols, owned */
    size_t max_width; /* longer cells are cut to this many characters; 0 for no limit */
    bool blank_empty; /* empty cells print as nothing instead of "-" (header excepted) */
};

/* An empty table of n_cols columns; release it with table_release. */
void table_init(struct table *t, size_t n_cols);
void table_release(struct table *t);

/*
 * Appends a row of t->n_cols cells, copied. A NULL or empty cell prints as
 * "-", so every column of a row holds a word (the header too: add it first),
 * unless t->blank_empty is set.
 */
void table_add_row(struct table *t, const char *const *cells);

/*
 * Cuts the cells of column col (the header excepted) with "..." so that no
 * line is wider than line_width characters, given the widths of the other
 * columns; the column keeps at least its header's width and 12 characters.
 * For a last column of free text (a reason, a message).
 */
void table_fit_column(struct table *t, size_t col, size_t line_width);

/* Appends the table's text to out. Returns 0 or ERR_TOO_LARGE. */
int table_render(const struct table *t, struct buf *out);

/*
 * A copy of s made safe for a terminal and cut with "..." to max characters
 * (0: no limit); NULL or "" is "-". Caller frees.
 */
char *table_cut(const char *s, size_t max);

/* Number of UTF-8 characters in s (bytes that do not continue a character). */
size_t table_text_width(const char *s);

#endif
