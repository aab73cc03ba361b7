/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client.h: the client's side of the REST API: one HTTP request at a time
 * over libcurl's easy interface (connect timeout 5 s, total 60 s, responses
 * capped at 64 MiB, no redirects), JSON in and out, and the last error kept
 * so the command can report it once with a hint of what to do.
 *
 * The token is sent only in the Authorization header and never appears in a
 * message.
 */
#ifndef GPUAAS_CLI_CLIENT_H
#define GPUAAS_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>

#define CLIENT_MAX_RESPONSE (64u * 1024 * 1024)
#define CLIENT_CONNECT_TIMEOUT_S 5L
#define CLIENT_TIMEOUT_S 60L

enum client_error_kind {
    CLIENT_OK = 0,
    CLIENT_ERR_CONFIG,  /* no server set, bad URL, unreadable config */
    CLIENT_ERR_NETWORK, /* could not connect, timed out, response too large */
    CLIENT_ERR_HTTP,    /* the server answered 4xx/5xx */
    CLIENT_ERR_PROTOCOL /* the server's answer was not what the API promises */
};

struct client {
    char *server; /* base URL without a trailing '/', owned */
    char *token;  /* owned; NULL when none */
    void *curl;   /* CURL *, created on the first request */

    /* The last error, for client_report. */
    enum client_error_kind err_kind;
    long status;       /* HTTP status of the last answer, 0 when none */
    char err_code[64]; /* the API's error code ("not_found"), "" when none */
    char err_message[512];
    char err_hint[256]; /* what to do about it, "" when nothing useful */
};

/*
 * Sets up c for server (http:// or https://, no user name or password in it)
 * and token (may be NULL). Returns 0, or -1 with the error kept in c; either
 * way release c with client_release.
 */
int client_init(struct client *c, const char *server, const char *token);

/*
 * Sets up c from the global flags, then $GPUAAS_SERVER and $GPUAAS_TOKEN,
 * then the config file. Returns 0, or -1 with the error kept in c.
 */
int client_open(struct client *c);

/* Frees what c holds (the token's memory is wiped); accepts a zeroed struct. */
void client_release(struct client *c);

/*
 * Sends method ("GET", "POST", "PATCH", "DELETE") to path (starting with
 * "/", query included) with body as JSON (may be NULL). On a 2xx answer
 * returns the status and sets *ret_json (may be NULL) to the parsed body, a
 * reference the caller owns, or NULL for an empty body. Otherwise returns -1
 * with the error kept in c and *ret_json untouched.
 */
int client_request(struct client *c, const char *method, const char *path, json_t *body,
                   json_t **ret_json);

/*
 * GETs path and hands back the body as it is (exports: CSV, HTML), in
 * *ret_body, which the caller releases. Errors as client_request.
 */
struct buf;
int client_request_raw(struct client *c, const char *path, struct buf *ret_body);
/* POSTs len bytes of data as media type `type` (a CSV file, say); answers as client_request. */
int client_post_file(struct client *c, const char *path, const char *type, const char *data,
                     size_t len, json_t **ret_json);
/*
 * GETs path as a stream of server-sent events (Accept: text/event-stream,
 * no overall timeout) and calls on_event for each, until the server ends the
 * stream (0), on_event returns < 0 (0), or an error (-1, kept in c).
 */
int client_stream(struct client *c, const char *path,
                  int (*on_event)(void *ctx, const char *id, const char *type, const char *data),
                  void *ctx);
/* Prints c's error as "gpuaas: error: ..." plus its hint; returns CLI_ERROR. */
int client_report(const struct client *c);

/* Percent-encodes s for a URL query value (caller frees). */
char *client_escape(const char *s);

#endif
