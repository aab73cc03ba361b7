/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inv_test.h: helpers the inventory tests share (header-only, static): read
 * a fixture file whole. Use inside cmocka tests only (they assert).
 */
#ifndef GPUAAS_INV_TEST_H
#define GPUAAS_INV_TEST_H

#include <stdio.h>
#include <stdlib.h>

/* The whole file dir/name, NUL-terminated (caller frees); fails the test when unreadable. */
static inline char *inv_test_read(const char *dir, const char *name, size_t *ret_len)
{
    char path[1024];
    FILE *f;
    char *data;
    long n;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open fixture '%s'\n", path);
        abort();
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n)
        abort();
    data[n] = '\0';
    fclose(f);
    *ret_len = (size_t)n;
    return data;
}

#endif
