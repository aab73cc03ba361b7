/* SPDX-License-Identifier: Apache-2.0 */
/*
 * err.h: every error gpuaas can return, in one X-macro table that also gives
 * each error its API code string and HTTP status. Functions return 0 (or a
 * positive count) on success and one of these negative values on failure, so
 * nothing can fail in a way the API cannot express.
 *
 * struct error_info carries the human part of an error (message and the
 * field it concerns) from deep code to the edge that reports it.
 */
#ifndef GPUAAS_ERR_H
#define GPUAAS_ERR_H

/* X(name, api_code, http_status, default_message) */
#define ERR_MAP(X)                                                                         \
    X(INVALID, "invalid_argument", 400, "invalid argument")                                \
    X(BAD_JSON, "malformed_json", 400, "request body is not valid JSON")                   \
    X(UNAUTHENTICATED, "unauthenticated", 401, "missing, invalid or expired token")       \
    X(FORBIDDEN, "forbidden", 403, "your role does not allow this")                        \
    X(NOT_FOUND, "not_found", 404, "no such object")                                       \
    X(METHOD, "method_not_allowed", 405, "method not allowed on this path")                \
    X(CONFLICT, "conflict", 409, "conflicts with an existing object")                      \
    X(GONE, "gone", 410, "no longer kept")                                                 \
    X(TOO_LARGE, "too_large", 413, "request or value too large")                           \
    X(MEDIA_TYPE, "unsupported_media_type", 415, "body must be application/json")          \
    X(BUSY, "busy", 503, "the store is busy, try again")                                   \
    X(UNAVAILABLE, "unavailable", 503, "service unavailable")                              \
    X(STORE, "store_error", 500, "the store failed")                                       \
    X(SCHEMA_NEWER, "schema_newer", 500, "store schema is newer than this binary")         \
    X(IO, "io_error", 500, "input/output error")                                           \
    X(INTERNAL, "internal", 500, "internal error")

enum err_code {
    ERR_BASE_ = -1000,
#define ERR_ENUM_(name, code, status, msg) ERR_##name,
    ERR_MAP(ERR_ENUM_)
#undef ERR_ENUM_
        ERR_END_
};

/* Default human message for an error; "ok" for values >= 0. Never NULL. */
const char *err_str(int err);
/* API code string ("not_found"); "ok" for values >= 0. Never NULL. */
const char *err_code_name(int err);
/* HTTP status for an error; 200 for values >= 0, 500 for unknown values. */
int err_http_status(int err);

struct error_info {
    int code;          /* one of enum err_code, 0 when no error was set */
    char message[256]; /* lower case, says what failed and why */
    char field[64];    /* the request field concerned, "" when none */
};

/*
 * Records an error in ei (which may be NULL) unless one is already recorded,
 * so the innermost, most precise message wins. field may be NULL. Returns err
 * so callers can write `return errinfo_set(ei, ERR_INVALID, "name", ...)`.
 */
int errinfo_set(struct error_info *ei, int err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
