/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.h: turning command-line words into API terms, driven by the model
 * table (src/model/resources.c) so a new resource or field needs no CLI
 * code: resource words and their aliases, --flag names to fields, and flag
 * values to JSON values of the field's type.
 *
 * Names of other objects (`--org acme`) become ids through a struct
 * resolver, which the commands back with the server and tests with a fake.
 */
#ifndef GPUAAS_CLI_ARGS_H
#define GPUAAS_CLI_ARGS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/*
 * The resource a word names: its plural URL segment ("role-bindings"), its
 * singular ("role-binding"), or an alias ("binding", "org", "class"), with
 * '_' accepted for '-'. NULL when the word names none.
 */
const struct resource_def *args_find_resource(const char *word);

/* The shortest word that names def, for help text ("org" for organizations). */
const char *args_resource_short(const struct resource_def *def);

/*
 * The field a flag names (flag without its leading "--"): the field's name
 * with '-' or '_' between words; for FT_REF fields also the name without
 * "_id" (--org for org_id); for FT_REFLIST fields also the plural without
 * "_ids" (--gpus for gpu_ids). Returns the field index, or -1.
 */
int args_field_for_flag(const struct resource_def *def, const char *flag);

/*
 * The field whose unit-less name a flag is (--memory for memory_mib,
 * --guaranteed for guaranteed_milli, --price-per-hour for
 * price_per_hour_micros): such flags take human quantities (units.h).
 * Returns the field index, or -1.
 */
int args_field_for_unit_flag(const struct resource_def *def, const char *flag);

/* The flag of a field as help shows it: "display-name" (caller frees). */
char *args_flag_name(const struct field_def *f);

/*
 * Finds the id of the object of def called name. Returns 0 and sets *ret_id;
 * on failure returns ERR_NOT_FOUND, ERR_CONFLICT (ambiguous), ERR_INVALID (the
 * resource has no names) or another negative error, with a message in err.
 */
struct resolver {
    int (*lookup)(void *ctx, const struct resource_def *def, const char *name, int64_t *ret_id,
                  char *err, size_t err_size);
    void *ctx;
};

/*
 * Converts a flag value to the JSON value of field f:
 *   FT_INT     decimal integer within the field's range
 *   FT_BOOL    true/false, yes/no, 1/0 (any case)
 *   FT_TIME    RFC 3339, passed on as written
 *   FT_ENUM    one of the field's values
 *   FT_REF     a positive id, or a name resolved through r (may be NULL)
 *   FT_LABELS  k=v,k2=v2 or a JSON object; "" is {}
 *   FT_REFLIST 1,2,3 (names resolved too) or a JSON array; "" is []
 *   FT_JSON    any JSON text
 *   strings    as written
 * "null" or "" is JSON null for nullable fields. On success *ret is a new
 * reference the caller owns. Returns 0; ERR_INVALID with a message in err
 * when the value is malformed (a usage error); or the resolver's error.
 */
int args_convert(const struct field_def *f, const char *value, const struct resolver *r,
                 json_t **ret, char *err, size_t err_size);

/*
 * Parses the words args_convert takes as a boolean (true/false, yes/no, 1/0,
 * any case) into *ret_value (1 or 0). Returns 0, or -1 for any other word.
 */
int args_parse_bool(const char *s, int *ret_value);

#endif
