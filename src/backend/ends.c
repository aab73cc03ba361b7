/* SPDX-License-Identifier: Apache-2.0 */
/* ends.c: the queue of ends a backend has seen and poll() has not handed out (backend.h). */
#include "base/common.h"

#include "backend/backend.h"
#include "base/alloc.h"

void backend_ends_push(struct backend_ends *q, const struct backend_event *ev)
{
    ALLOC_GROW(q->ev, q->n + 1, q->cap);
    q->ev[q->n++] = *ev;
}

bool backend_ends_has(const struct backend_ends *q, int64_t workload_id)
{
    for (size_t i = 0; i < q->n; i++) {
        if (q->ev[i].workload_id == workload_id)
            return true;
    }
    return false;
}

size_t backend_ends_take(struct backend_ends *q, struct backend_event *out, size_t max)
{
    size_t n = q->n < max ? q->n : max;
    if (n > 0) {
        memcpy(out, q->ev, n * sizeof(*out));
        memmove(q->ev, q->ev + n, (q->n - n) * sizeof(*q->ev));
        q->n -= n;
    }
    return n;
}

void backend_ends_release(struct backend_ends *q)
{
    free(q->ev);
    *q = (struct backend_ends){0};
}
