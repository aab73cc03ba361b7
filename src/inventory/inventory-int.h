/* SPDX-License-Identifier: Apache-2.0 */
/* inventory-int.h: what only the files of src/inventory share. */
#ifndef GPUAAS_INVENTORY_INT_H
#define GPUAAS_INVENTORY_INT_H

#include "inventory/inventory.h"

/* Copies src into dst[size], cut at a UTF-8 boundary when too long. */
void inv_copy_str(char *dst, size_t size, const char *src);

/* Parses a whole decimal floating-point field (no NaN/Inf spellings); 0 or ERR_INVALID. */
int inv_parse_double(const char *s, size_t n, double *ret);

#endif
