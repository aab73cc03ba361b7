/* SPDX-License-Identifier: Apache-2.0 */
/* buf.c: bounded growable buffer. */
#include "base/common.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void buf_release(struct buf *b)
{
    free(b->data);
    buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int buf_grow(struct buf *b, size_t extra)
{
    size_t want;
    if (extra > b->max || b->len > b->max - extra)
        return ERR_TOO_LARGE;
    want = b->len + extra + 1;
    if (want > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < want)
            cap *= 2;
        b->data = xreallocarray(b->data, cap, 1);
        b->cap = cap;
    }
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    int rc = buf_grow(b, len);
    if (rc < 0)
        return rc;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n, rc;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return ERR_INTERNAL;
    rc = buf_grow(b, (size_t)n);
    if (rc < 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *buf_detach(struct buf *b, size_t *ret_len)
{
    char *p = b->data ? b->data : xstrdup("");
    if (ret_len)
        *ret_len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
