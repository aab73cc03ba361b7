/* SPDX-License-Identifier: Apache-2.0 */
/* log.c: logfmt writer; one write(2) per line so lines from threads never interleave. */
#include "base/common.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/err.h"
#include "base/timeutil.h"

static enum log_level log_min_level = LOG_INFO;
static _Thread_local char log_req_id[64];

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void log_set_level(enum log_level level)
{
    log_min_level = level;
}

int log_parse_level(const char *s, enum log_level *ret_level)
{
    for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *ret_level = (enum log_level)i;
            return 0;
        }
    }
    return ERR_INVALID;
}

void log_set_request_id(const char *id)
{
    snprintf(log_req_id, sizeof(log_req_id), "%s", id ? id : "");
}

const char *log_request_id(void)
{
    return log_req_id;
}

static bool needs_quotes(const char *v)
{
    if (!*v)
        return true;
    for (; *v; v++) {
        if (*v <= ' ' || *v == '"' || *v == '=' || *v == '\\' || (unsigned char)*v >= 0x7f)
            return true;
    }
    return false;
}

static void put_value(struct buf *b, const char *v)
{
    if (!needs_quotes(v)) {
        buf_puts(b, v);
        return;
    }
    buf_puts(b, "\"");
    for (; *v; v++) {
        switch (*v) {
        case '"':
            buf_puts(b, "\\\"");
            break;
        case '\\':
            buf_puts(b, "\\\\");
            break;
        case '\n':
            buf_puts(b, "\\n");
            break;
        case '\t':
            buf_puts(b, "\\t");
            break;
        default:
            if ((unsigned char)*v < ' ')
                buf_printf(b, "\\x%02x", (unsigned char)*v);
            else
                buf_append(b, v, 1);
        }
    }
    buf_puts(b, "\"");
}

void log_kv(enum log_level level, const char *msg, ...)
{
    struct buf b;
    char ts[40];
    va_list ap;
    const char *key;

    if (level < log_min_level)
        return;
    buf_init(&b, 16384);
    time_format_rfc3339_ms(time_now_ms(), ts, sizeof(ts));
    buf_printf(&b, "time=%s level=%s msg=", ts, level_names[level]);
    put_value(&b, msg);
    if (log_req_id[0]) {
        buf_puts(&b, " request_id=");
        put_value(&b, log_req_id);
    }
    va_start(ap, msg);
    while ((key = va_arg(ap, const char *)) != NULL) {
        const char *val = va_arg(ap, const char *);
        buf_printf(&b, " %s=", key);
        put_value(&b, val ? val : "");
    }
    va_end(ap);
    buf_puts(&b, "\n");
    if (write(STDERR_FILENO, b.data, b.len) < 0) {
        /* nowhere left to report a failing stderr */
    }
    buf_release(&b);
}
