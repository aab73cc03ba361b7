/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rows.c: whole sets of rows for the views that join several resources in
 * memory (the inventory, /metrics): every row of a resource paged through
 * the store, a binary search by id, and open allocations by GPU.
 */
#include "base/common.h"

#include "api/api-int.h"

const struct row *rows_find(const struct row *rows, size_t n, int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int64_t x = model_row_id(&rows[mid]);
        if (x == id)
            return &rows[mid];
        if (x < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int64_t alloc_gpu(const struct row *al)
{
    const struct value *v = row_get(al, F_ALLOCATIONS_GPU_ID);
    return v->null ? 0 : v->i;
}

static int cmp_alloc_gpu(const void *a, const void *b)
{
    const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
    int64_t gx = alloc_gpu(x), gy = alloc_gpu(y), ix = model_row_id(x), iy = model_row_id(y);
    if (gx != gy)
        return (gx > gy) - (gx < gy);
    return (ix > iy) - (ix < iy);
}

void alloc_index_build(struct req *r, const struct row *allocs, size_t n, struct alloc_index *ret)
{
    ret->by_gpu = arena_calloc(&r->arena, n + 1, sizeof(*ret->by_gpu));
    ret->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (alloc_gpu(&allocs[i]))
            ret->by_gpu[ret->n++] = &allocs[i];
    }
    if (ret->n)
        qsort(ret->by_gpu, ret->n, sizeof(*ret->by_gpu), cmp_alloc_gpu);
}

const struct row *alloc_index_find(const struct alloc_index *ix, int64_t gpu_id)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) { /* the first with gpu_id */
        size_t mid = lo + (hi - lo) / 2;
        if (alloc_gpu(ix->by_gpu[mid]) < gpu_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ix->n && alloc_gpu(ix->by_gpu[lo]) == gpu_id ? ix->by_gpu[lo] : NULL;
}

int req_list_all(struct req *r, const struct resource_def *def, bool open_only, struct row **ret,
                 size_t *ret_n, struct error_info *ei)
{
    struct store_filter f;

    store_filter_init(&f);
    if (open_only)
        store_filter_eq_null(&f, model_field_index(def, "ended_ms"));
    return store_list_all(req_db(r), def, &f, &r->arena, ret, ret_n, ei);
}
