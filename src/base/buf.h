/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h: a growable byte buffer with a hard maximum (git's strbuf, curl's
 * dynbuf), so no input can grow memory without bound. The data is always
 * NUL-terminated. Appends past the maximum fail with ERR_TOO_LARGE and leave
 * the buffer as it was.
 */
#ifndef GPUAAS_BUF_H
#define GPUAAS_BUF_H

#include <stddef.h>

struct buf {
    char *data; /* NUL-terminated; NULL until the first append */
    size_t len;
    size_t cap;
    size_t max; /* most bytes of content allowed */
};

void buf_init(struct buf *b, size_t max);
/* Frees the data; the buffer is empty and reusable afterwards. */
void buf_release(struct buf *b);
void buf_reset(struct buf *b);
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the data to the caller, who frees it; the buffer is left empty. */
char *buf_detach(struct buf *b, size_t *ret_len);

#endif
