/* SPDX-License-Identifier: Apache-2.0 */
/*
 * teststore.h: a SQLite store in a fresh temporary directory for the tests
 * that drive a module on a real store (engine, billing, the API's server),
 * rows with every field at its default to fill in, and the removal of the
 * directory afterwards. Helpers that fail use cmocka, so they may only be
 * called from inside a cmocka test (or its set-up and tear-down).
 */
#ifndef GPUAAS_TESTSTORE_H
#define GPUAAS_TESTSTORE_H

#include <stdint.h>

#include "model/model.h"
#include "store/store.h"

struct teststore {
    char dir[64];         /* the temporary directory holding t.db */
    struct store *s;      /* the store */
    struct store_conn *c; /* one connection, held until teststore_close */
};

/*
 * Opens a new store in a directory /tmp/gpuaas-<tag>-XXXXXX with options opt (NULL: the
 * store's defaults) and takes one connection; fails the test on an error.
 */
void teststore_open(struct teststore *t, const char *tag, const struct store_options *opt);
/* Gives the connection back, closes the store and removes its directory. */
void teststore_close(struct teststore *t);

/* Removes a directory and the files in it (not below); says on stderr what it could not. */
void teststore_remove_dir(const char *dir);

/*
 * A row of def with every field at its default, nullable ones null, enums at their default
 * (else their first value), JSON fields empty; strings in a. The caller sets what it needs.
 */
struct row teststore_row(const struct resource_def *def, struct arena *a);
/* Inserts r into def's table on t's connection; fails the test on an error. Returns the id. */
int64_t teststore_insert(struct teststore *t, const struct resource_def *def, struct row *r);

#endif
