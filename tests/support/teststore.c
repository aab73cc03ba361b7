/* SPDX-License-Identifier: Apache-2.0 */
/* teststore.c: see teststore.h. */
#include "base/common.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "support/teststore.h"

void teststore_open(struct teststore *t, const char *tag, const struct store_options *opt)
{
    struct error_info ei = {0};
    char db[128];

    memset(t, 0, sizeof(*t));
    snprintf(t->dir, sizeof(t->dir), "/tmp/gpuaas-%.20s-XXXXXX", tag);
    if (!mkdtemp(t->dir))
        fail_msg("mkdtemp(%s): %s", t->dir, strerror(errno));
    snprintf(db, sizeof(db), "%s/t.db", t->dir);
    if (store_open(db, opt, &t->s, &ei) < 0)
        fail_msg("store_open(%s): %s", db, ei.message);
    t->c = store_conn_get(t->s);
}

void teststore_close(struct teststore *t)
{
    if (t->c)
        store_conn_put(t->c);
    store_close(t->s);
    teststore_remove_dir(t->dir);
    t->c = NULL;
    t->s = NULL;
}

void teststore_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];

    if (!d)
        return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            fprintf(stderr, "teststore: could not remove '%s': %s\n", path, strerror(errno));
    }
    closedir(d);
    if (rmdir(dir) != 0)
        fprintf(stderr, "teststore: could not remove '%s': %s\n", dir, strerror(errno));
}

struct row teststore_row(const struct resource_def *def, struct arena *a)
{
    struct row r = model_row_new(def, a);
    for (size_t i = 1; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        if (f->flags & FF_NULLABLE)
            row_set_null(&r, (int)i);
        else if (f->type == FT_ENUM)
            row_set_str(&r, a, (int)i, f->default_str ? f->default_str : f->enum_values[0]);
        else if (f->type == FT_STRING || f->type == FT_NAME || f->type == FT_IDENT)
            row_set_str(&r, a, (int)i, f->default_str ? f->default_str : "");
        else if (f->type == FT_LABELS || f->type == FT_JSON)
            row_set_str(&r, a, (int)i, "{}");
        else if (f->type == FT_REFLIST)
            row_set_str(&r, a, (int)i, "[]");
        else
            row_set_int(&r, (int)i, f->default_int);
    }
    return r;
}

int64_t teststore_insert(struct teststore *t, const struct resource_def *def, struct row *r)
{
    struct error_info ei = {0};
    int64_t id = 0;
    if (store_insert(t->c, def, r, &id, &ei) < 0)
        fail_msg("insert %s: %s", def->name, ei.message);
    return id;
}
