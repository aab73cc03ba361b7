/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.h: how the client shows the server's objects. Lists are tables with
 * a short list of columns per resource (times shortened, milli-GPU as GPUs,
 * micro-units as money); one object is shown field by field; -o json prints
 * the server's JSON pretty-printed. Everything is appended to a struct buf so
 * it can be tested as text.
 */
#ifndef GPUAAS_CLI_RENDER_H
#define GPUAAS_CLI_RENDER_H

#include <jansson.h>

#include "base/buf.h"
#include "model/model.h"

/* Appends a table of items (a JSON array of objects of def), header first. */
int render_list(const struct resource_def *def, json_t *items, struct buf *out);

/*
 * Where a list finds the names of the objects its rows refer to. name
 * returns what to show for the object of ref with this id (caller frees),
 * or NULL when ref objects have no names, so the column keeps the id.
 */
struct render_names {
    char *(*name)(void *ctx, const struct resource_def *ref, int64_t id);
    void *ctx;
};

/*
 * As render_list, but columns that refer to objects with names show the
 * names ("CLASS" with "a100-80gb" instead of "CLASS_ID" with 3).
 */
int render_list_named(const struct resource_def *def, json_t *items,
                      const struct render_names *names, struct buf *out);

/*
 * Appends one object as "field:  value" lines: the fields of def in model
 * order, then any members def does not know. def may be NULL.
 */
int render_object(const struct resource_def *def, json_t *obj, struct buf *out);

/* Appends v as indented JSON and a newline. */
int render_json(json_t *v, struct buf *out);

/*
 * Formats a JSON value for a table cell (caller frees): null is "-", booleans
 * yes/no, label objects k=v,k2=v2, id arrays 1,2,3, anything else compact.
 */
char *render_cell(json_t *v);

/* "2026-11-30T15:49:47Z" -> "2026-11-30 15:49" (caller frees); other text as is. */
char *render_short_time(const char *s);

/* Fixed-point integers: 1500 milli -> "1.5"; 2500000 micros -> "2.50". Caller frees. */
char *render_milli(int64_t v);
char *render_micros(int64_t v);

/* Writes b to stdout; returns CLI_OK, or CLI_ERROR if it could not be written. */
int render_flush(struct buf *b);

#endif
