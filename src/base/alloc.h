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
#include <stdint.h>

/* Caller frees with free(). Abort on out-of-memory or n * size overflow. */
void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A large table read at random (the scheduler's workloads): mapped pages of
 * its own, so it starts on a page (a row type may ask for cache-line
 * alignment), backed by huge pages where the kernel has them (4 KiB pages
 * make every lookup a TLB miss), and grown without a copy (mremap). Grows the
 * table at p of old_size bytes (NULL, 0 for a new one) to size bytes; the
 * bytes past old_size are zero. Aborts on out-of-memory.
 */
void *alloc_table_grow(void *p, size_t old_size, size_t size);
/* Unmaps a table of alloc_table_grow (NULL: nothing). */
void alloc_table_free(void *p, size_t size);

/*
 * ALLOC_GROW(arr, n, cap): the one way to grow a heap array (git's ALLOC_GROW). Makes arr,
 * which has room for cap elements, hold at least n: when n > cap it reallocates arr to
 * twice cap (16 at first) or to n if that is more, and sets cap. New elements are
 * uninitialized; arr keeps its contents. n and cap may be of any integer type (cap is
 * assigned, so an lvalue). Aborts, as on out-of-memory, when n is negative (a size_t count
 * past INT64_MAX reads as negative) or more than ALLOC_GROW_MAX elements, so a capacity
 * always fits an int32_t and n * size is checked once, here. Appending one element:
 *     ALLOC_GROW(v, n_v + 1, cap_v);
 *     v[n_v++] = x;
 */
#define ALLOC_GROW_MAX ((int64_t)INT32_MAX)
#define ALLOC_GROW(arr, n, cap)                                                                    \
    do {                                                                                           \
        size_t alloc_grow_to_ = alloc_grow_nr((int64_t)(n), (int64_t)(cap));                       \
        if (alloc_grow_to_ > 0) {                                                                  \
            (arr) = xreallocarray((arr), alloc_grow_to_, sizeof(*(arr)));                          \
            (cap) = alloc_grow_to_;                                                                \
        }                                                                                          \
    } while (0)

/* For ALLOC_GROW: the capacity to grow to, past cap, for n elements. Aborts on a bad n. */
size_t alloc_grow_slow(int64_t n, int64_t cap);
/* For ALLOC_GROW: 0 when cap already holds n elements, else the new capacity. */
static inline size_t alloc_grow_nr(int64_t n, int64_t cap)
{
    return n >= 0 && n <= cap ? 0 : alloc_grow_slow(n, cap);
}

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
