/* SPDX-License-Identifier: Apache-2.0 */
/* err.c: lookups over the ERR_MAP table. */
#include "base/common.h"
#include "base/err.h"

struct err_entry {
    const char *code;
    int status;
    const char *msg;
};

static const struct err_entry err_table[] = {
#define ERR_ROW_(name, code, status, msg) {code, status, msg},
    ERR_MAP(ERR_ROW_)
#undef ERR_ROW_
};

static const struct err_entry *err_lookup(int err)
{
    size_t idx;
    if (err >= 0 || err <= ERR_BASE_)
        return NULL;
    idx = (size_t)(err - ERR_BASE_ - 1);
    return idx < ARRAY_SIZE(err_table) ? &err_table[idx] : NULL;
}

const char *err_str(int err)
{
    const struct err_entry *e = err_lookup(err);
    if (err >= 0)
        return "ok";
    return e ? e->msg : "unknown error";
}

const char *err_code_name(int err)
{
    const struct err_entry *e = err_lookup(err);
    if (err >= 0)
        return "ok";
    return e ? e->code : "internal";
}

int err_http_status(int err)
{
    const struct err_entry *e = err_lookup(err);
    if (err >= 0)
        return 200;
    return e ? e->status : 500;
}

int errinfo_set(struct error_info *ei, int err, const char *field, const char *fmt, ...)
{
    va_list ap;

    if (!ei || ei->code != 0)
        return err;
    ei->code = err;
    snprintf(ei->field, sizeof(ei->field), "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(ei->message, sizeof(ei->message), fmt, ap);
    va_end(ap);
    return err;
}
