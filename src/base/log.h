/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h: structured logs on stderr in logfmt:
 *   time=2026-11-30T15:49:47.123Z level=info msg="listening" request_id=... port=8080
 * Each thread may carry a request id that is added to every line it logs.
 * Only the edges (API handlers, daemon main) log; library code returns errors.
 */
#ifndef GPUAAS_LOG_H
#define GPUAAS_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level level);
/* Parses "debug", "info", "warn", "error"; returns 0 or ERR_INVALID. */
int log_parse_level(const char *s, enum log_level *ret_level);
/* The calling thread's request id (copied); NULL clears it. */
void log_set_request_id(const char *id);
const char *log_request_id(void);

/*
 * Writes one line: msg, then key/value string pairs ending with NULL. Values
 * are quoted and escaped when needed. A NULL value is written as "".
 */
void log_kv(enum log_level level, const char *msg, ...) __attribute__((sentinel));

#define log_debug(...) log_kv(LOG_DEBUG, __VA_ARGS__, (const char *)NULL)
#define log_info(...) log_kv(LOG_INFO, __VA_ARGS__, (const char *)NULL)
#define log_warn(...) log_kv(LOG_WARN, __VA_ARGS__, (const char *)NULL)
#define log_error(...) log_kv(LOG_ERROR, __VA_ARGS__, (const char *)NULL)

#endif
