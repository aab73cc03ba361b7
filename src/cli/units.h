/* SPDX-License-Identifier: Apache-2.0 */
/*
 * units.h: quantities as people write them, turned into the API's exact
 * integers: GPUs ("16", "0.5") into milli-GPU, sizes ("128GiB", "512MiB",
 * a plain number of MiB) into MiB, money ("1.80") into micro-units. Decimal
 * text is read digit by digit into integers, never through floating point,
 * so "0.1" of money is exactly 100000 micros.
 *
 * The model's fields carry their unit in their name (guaranteed_milli,
 * memory_mib, price_per_hour_micros); the flag without the suffix
 * (--guaranteed, --memory, --price-per-hour) takes the human form.
 */
#ifndef GPUAAS_CLI_UNITS_H
#define GPUAAS_CLI_UNITS_H

#include <stddef.h>
#include <stdint.h>

enum units_kind {
    UNITS_NONE,   /* the field's own integer */
    UNITS_MILLI,  /* whole units with up to 3 decimals: GPUs, CPUs */
    UNITS_MIB,    /* a size: N, NMiB, NGiB, NTiB (decimals when whole MiB) */
    UNITS_MICROS, /* money: up to 6 decimals */
};

/* The unit a field's name ends in ("_milli", "_mib", "_micros"); UNITS_NONE for others. */
enum units_kind units_of_field(const char *field_name);

/* The length of the field's name without its unit suffix (0 when it has none). */
size_t units_stem_len(const char *field_name);

/*
 * Parses s as a quantity of kind into the API's integer, within [0, max].
 * Returns 0, or -1 with why in err ("'0.0001' has more than 3 decimals").
 */
int units_parse(enum units_kind kind, const char *s, int64_t max, int64_t *ret, char *err,
                size_t err_size);

/* MiB as "80 GiB" when whole GiB, else "512 MiB". Caller frees. */
char *units_format_mib(int64_t mib);

#endif
