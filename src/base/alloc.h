/* SPDX-License-Identifier: Apache-2.0 */
/*
 * alloc.h: allocation that never returns NULL (it aborts with a message on
 * out-of-memory, as redis and PostgreSQL do), so call sites never test for
 * NULL; and arenas, the per-request memory that is freed in one go after the
 * response is sent.
 */
#ifndef GPUAAS_ALLOC_H
#define GPUAAS_ALLOC_H

#include <stddef.h>

/* Caller frees with free(). Abort on out-of-memory or n * size overflow. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * An arena hands out memory that lives until arena_release(). Blocks are
 * chained; nothing is freed individually. Embed it (struct arena a;
 * arena_init(&a)); arena_release leaves it empty and reusable.
 */
struct arena_block;
struct arena {
    struct arena_block *head;
    size_t total; /* bytes handed out, for accounting */
};

void arena_init(struct arena *a);
void arena_release(struct arena *a);
/* Zeroed memory aligned for any type, owned by the arena. */
void *arena_alloc(struct arena *a, size_t size);
void *arena_calloc(struct arena *a, size_t n, size_t size);
/* Copies owned by the arena; NULL in gives NULL out. */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
