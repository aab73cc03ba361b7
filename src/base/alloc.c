/* SPDX-License-Identifier: Apache-2.0 */
/* alloc.c: aborting allocators and a simple block arena. */
#include "base/common.h"
#include "base/alloc.h"

#include <sys/mman.h>

/*
 * The leak checker scans the heap, globals and stacks for pointers, not pages
 * mapped by hand: a table of alloc_table_grow that holds the only pointer to
 * a heap block would make that block look leaked. Such a table is registered
 * as a root region while it exists.
 */
#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define ALLOC_LSAN 1
#endif
#endif
#ifdef ALLOC_LSAN
#include <sanitizer/lsan_interface.h>
#define leak_roots_add(p, size) __lsan_register_root_region(p, size)
#define leak_roots_remove(p, size) __lsan_unregister_root_region(p, size)
#else
#define leak_roots_add(p, size) ((void)(p), (void)(size))
#define leak_roots_remove(p, size) ((void)(p), (void)(size))
#endif

static void oom(size_t size)
{
    fprintf(stderr, "gpuaas: out of memory allocating %zu bytes\n", size);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        oom(size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        oom(SIZE_MAX);
    p = realloc(p, total ? total : 1);
    if (!p)
        oom(total);
    return p;
}

void *alloc_table_grow(void *p, size_t old_size, size_t size)
{
    void *q;

    if (p)
        leak_roots_remove(p, old_size);
    q = p ? mremap(p, old_size, size, MREMAP_MAYMOVE)
          : mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) {
        fprintf(stderr, "gpuaas: out of memory (a table of %zu bytes): %s\n", size,
                strerror(errno));
        abort();
    }
    /*
     * A hint (the kernel may refuse), for the whole mapping: a part would
     * split it in two, and mremap grows one mapping only.
     */
    (void)madvise(q, size, MADV_HUGEPAGE);
    leak_roots_add(q, size);
    return q;
}

void alloc_table_free(void *p, size_t size)
{
    if (p) {
        leak_roots_remove(p, size);
        (void)munmap(p, size);
    }
}

size_t alloc_grow_slow(int64_t n, int64_t cap)
{
    int64_t to;

    if (n < 0 || n > ALLOC_GROW_MAX) {
        fprintf(stderr, "gpuaas: an array of %" PRId64 " elements is too large\n", n);
        abort();
    }
    to = cap < 8 ? 16 : cap * 2; /* cap < n <= ALLOC_GROW_MAX: no overflow */
    if (to < n)
        to = n;
    if (to > ALLOC_GROW_MAX)
        to = ALLOC_GROW_MAX;
    return (size_t)to;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        oom(strlen(s) + 1);
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        oom(n + 1);
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *p = NULL;
    int n;

    va_start(ap, fmt);
    n = vasprintf(&p, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    return p;
}

/* ---- arena ---- */

#define ARENA_BLOCK_MIN 4096
#define ARENA_ALIGN 16

struct arena_block {
    struct arena_block *next;
    size_t used, size;
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void arena_init(struct arena *a)
{
    a->head = NULL;
    a->total = 0;
}

void arena_release(struct arena *a)
{
    struct arena_block *b = a->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    arena_init(a);
}

void *arena_alloc(struct arena *a, size_t size)
{
    struct arena_block *b = a->head;
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    void *p;

    if (need < size)
        oom(size);
    if (!b || b->size - b->used < need) {
        size_t bsize = need > ARENA_BLOCK_MIN ? need : ARENA_BLOCK_MIN;
        /* Keep a partially used head when the new block is a one-off big one. */
        b = xmalloc(sizeof(*b) + bsize);
        b->used = 0;
        b->size = bsize;
        if (a->head && need > ARENA_BLOCK_MIN) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    p = b->data + b->used;
    b->used += need;
    a->total += need;
    memset(p, 0, size);
    return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        oom(SIZE_MAX);
    return arena_alloc(a, total);
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p;
    if (!s)
        return NULL;
    n = strnlen(s, n);
    p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
    return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(0);
    p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}
