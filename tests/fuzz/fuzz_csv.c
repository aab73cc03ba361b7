/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the RFC 4180 reader and the inventory import: any
 * input must import or fail cleanly; an imported table must export and
 * import again to the same table (the round-trip property).
 */
#include "base/common.h"
#include "base/buf.h"
#include "base/err.h"
#include "inventory/inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct error_info ei = {0};
    struct inv_table t, back;
    struct buf out;
    int rc;

    rc = inv_csv_import((const char *)data, size, false, &t, NULL, &ei);
    if (rc < 0) {
        if (ei.message[0] == '\0')
            abort();
        return 0;
    }
    buf_init(&out, 64u << 20);
    if (inv_csv_export(&t, &out) < 0)
        abort();
    memset(&ei, 0, sizeof(ei));
    if (inv_csv_import(out.data, out.len, true, &back, NULL, &ei) != rc || back.n != t.n)
        abort();
    for (size_t i = 0; i < t.n; i++)
        for (int c = 0; c < INV_N_COLS; c++)
            if (strcmp(t.items[i].f[c], back.items[i].f[c]) != 0)
                abort();
    inv_table_release(&back);
    inv_table_release(&t);
    buf_release(&out);
    return 0;
}
