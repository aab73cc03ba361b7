/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.h: what the workload commands (run, ps, show, cancel, queue,
 * preemptions, events, timeline, capacity) share: reading every page of a
 * list, the names of the objects rows refer to (one list call per kind,
 * not one call per row), times and durations as text, and the project a
 * command works on.
 */
#ifndef GPUAAS_CLI_WORK_H
#define GPUAAS_CLI_WORK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "cli/client.h"

#define WORK_PAGE_LIMIT 1000 /* items asked for per page */
#define WORK_OUTPUT_MAX ((size_t)1 << 30)
#define WORK_LINE_WIDTH 120 /* tables with a free-text column are cut to this */

/*
 * Fetches every page of a list. path is "/v1/<resource>" with an optional
 * "?query" (without limit or after). On success returns 0 and sets
 * *ret_items to a new array the caller owns; otherwise returns -1 with the
 * error kept in c for client_report.
 */
int work_list_all(struct client *c, const char *path, json_t **ret_items);

/* The kinds of names work_names_load fetches. */
enum work_names_kind {
    WORK_NAMES_PROJECTS = 1,
    WORK_NAMES_FLAVORS = 2,
    WORK_NAMES_NODES = 4,
    WORK_NAMES_GPUS = 8,
    WORK_NAMES_CLASSES = 16,
    WORK_NAMES_CLUSTERS = 32,
};

/* Objects by id ("7" -> the object), for each kind loaded; NULL when not loaded. */
struct work_names {
    json_t *projects, *flavors, *nodes, *gpus, *classes, *clusters;
};

void work_names_init(struct work_names *n);
void work_names_release(struct work_names *n);

/*
 * Loads the kinds in mask (an OR of enum work_names_kind) not loaded yet,
 * in the order of the enum, with one list (every page) each. Names only
 * decorate the output: a list that fails (a role that may not see it)
 * leaves that kind empty and its ids show as numbers.
 */
void work_names_load(struct work_names *n, struct client *c, unsigned mask);

/*
 * The name of the object of map (one of n's members) with id idv (a JSON
 * integer): its "name", else "#N" (an object the caller may not see, told
 * apart from a name that is digits); "-" for null or a missing id. Caller
 * frees.
 */
char *work_name(json_t *map, json_t *idv);

/* The object of map with the id of idv, or NULL. Borrowed. */
json_t *work_lookup(json_t *map, json_t *idv);

/* "P1" for owned, "P2" for opportunistic, else the text as is; "-" for NULL. */
const char *work_class_label(const char *priority_class);

/* Epoch ms as "2026-11-30 16:30:13" (table) or "2026-11-30T16:30:13Z" (RFC 3339). Caller frees. */
char *work_time_short(int64_t ms);
char *work_time_rfc3339(int64_t ms);

/*
 * A time member of a JSON object in epoch ms: an integer of ms, or an RFC
 * 3339 string. Returns 0, or -1 when the member is missing, null or not a
 * time.
 */
int work_time_of(json_t *obj, const char *key, int64_t *ret_ms);

/* A duration as "45s", "12m05s", "2h03m", "3d04h"; negative counts as 0. Caller frees. */
char *work_duration(int64_t ms);

/*
 * The project a command works on: word (an id, NAME or ORG/NAME) when not
 * NULL; else the one project the caller's role bindings name (GET
 * /v1/whoami). Sets *ret_id and returns 0, or prints why not and returns
 * the exit code (CLI_USAGE when the project must be given, CLI_ERROR when
 * a request failed or a name names nothing). cmd is the command for hints.
 */
int work_project(struct client *c, const char *cmd, const char *word, int64_t *ret_id);

/*
 * Joins command words into one command line, separated by single spaces. A
 * word that is empty or holds anything but letters, digits and @%+=:,./-_
 * is written in single quotes, POSIX-shell style (' as '\''), so the line
 * splits back into the same words. Caller frees.
 */
char *work_join_command(int n, char *const *words);

/*
 * Parses the duration given to flag ("90", "90s", "15m", "2h", "7d") into
 * seconds within [min, max]. Returns 0, or prints a usage error and returns
 * CLI_USAGE.
 */
int work_parse_duration(const char *cmd, const char *flag, const char *value, int64_t min,
                        int64_t max, int64_t *ret_s);

/*
 * Checks a --period value: a month written YYYY-MM (2026-11). Returns 0, or
 * prints a usage error and returns CLI_USAGE.
 */
int work_check_period(const char *cmd, const char *value);

/* Writes b to stdout and releases it; returns CLI_OK or CLI_ERROR. */
int work_flush(struct buf *b);

/*
 * Sends one request (body, may be NULL, is consumed) and prints the answer:
 * as JSON with -o json or when fn is NULL, else as fn renders it. Returns
 * CLI_OK, or reports the request's error (CLI_ERROR).
 */
int work_show(const char *method, const char *path, json_t *body,
              int (*fn)(json_t *ans, struct buf *out));
/* As work_show, for renderings that ask the server more (names, through c). */
int work_show_with(const char *method, const char *path, json_t *body,
                   int (*fn)(struct client *c, json_t *ans, struct buf *out));
/* GETs path and copies the body as it is to stdout (exports: CSV, HTML). */
int work_download(const char *path);

#endif
