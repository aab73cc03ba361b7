/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the Prometheus text-format parser and the
 * dcgm-exporter mapping: any input must parse or fail cleanly (no crash, no
 * leak, no undefined behaviour); on success every sample's strings are
 * NUL-terminated and the label count within the limit.
 */
#include "base/common.h"
#include "base/err.h"
#include "inventory/inventory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *ctx, const struct inv_prom_sample *s)
{
    size_t *total = ctx;
    if (s->n_labels > 4)
        abort(); /* over the limit given below */
    *total += strlen(s->name);
    for (size_t i = 0; i < s->n_labels; i++)
        *total += strlen(s->labels[i].name) + strlen(s->labels[i].value);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct inv_prom_limits lim = {.max_line = 512, .max_labels = 4};
    struct error_info ei = {0};
    struct inv_readings rs;
    size_t total = 0;
    int rc;

    rc = inv_prom_parse((const char *)data, size, &lim, check, &total, &ei);
    if (rc < 0 && ei.message[0] == '\0')
        abort(); /* every error says why */
    inv_readings_init(&rs, 64);
    memset(&ei, 0, sizeof(ei));
    rc = inv_dcgm_parse((const char *)data, size, &rs, NULL, &ei);
    if (rc >= 0 && (size_t)rc != rs.n)
        abort();
    inv_readings_release(&rs);
    return 0;
}
