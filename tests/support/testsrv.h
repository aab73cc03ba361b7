/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testsrv.h: an in-process API server for integration tests. It opens a
 * SQLite store in a fresh temporary directory, bootstraps the first admin,
 * serves the API on 127.0.0.1 on a free port, and drives it over real HTTP
 * with one reused libcurl handle. Responses are parsed with jansson.
 *
 * The helpers that assert (testsrv_create, testsrv_expect, ...) use cmocka,
 * so they may only be called from inside a cmocka test.
 */
#ifndef GPUAAS_TESTSRV_H
#define GPUAAS_TESTSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct store;
struct api;
struct engine;
struct resource_def;

struct testsrv_options {
    size_t max_body_bytes; /* 0: the server's default */
    int threads;           /* 0: 2 */
};

struct testsrv {
    char dir[256];     /* temporary directory holding the store */
    char base_url[64]; /* "http://127.0.0.1:PORT" */
    struct store *store;
    struct api *api;
    struct engine *engine;
    char *admin_token; /* the bootstrap admin's token */
    void *curl;        /* CURL *, reused for every request */
    /* the last response */
    char request_id[64]; /* its X-Request-Id header, "" when none */
    char content_type[128];
    char *body; /* its raw body, NUL-terminated (owned) */
    size_t body_len;
};

/* Starts a server with default options; aborts the test on failure. */
struct testsrv *testsrv_start(void);
struct testsrv *testsrv_start_with(const struct testsrv_options *opt);
/* Stops the server, closes the store and removes the temporary directory; NULL is fine. */
void testsrv_stop(struct testsrv *srv);

/*
 * One request. body is a JSON text or NULL for none (then no Content-Type is
 * sent); token NULL sends no Authorization header. *ret_status gets the HTTP
 * status; when ret_json is not NULL it gets the parsed response (caller
 * decrefs; NULL when the body is empty or not JSON). Returns 0, or -1 when
 * the request could not be made at all (the reason is printed).
 */
int testsrv_req(struct testsrv *srv, const char *method, const char *path, const char *token,
                const char *body, long *ret_status, json_t **ret_json);

/* A request with full control over headers and body. */
struct testsrv_raw {
    const char *method;
    const char *path;           /* may carry a query string */
    const char *token;          /* NULL: no Authorization header */
    const char *authorization;  /* a literal Authorization value; overrides token */
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated, or NULL */
    const void *body;           /* NULL: no body */
    size_t body_len;
    bool chunked; /* send the body chunked, without Content-Length */
};

/*
 * Performs req; a body without a Content-Type header in headers is sent as
 * application/json. The response lies in srv->body / srv->request_id.
 */
int testsrv_req_raw(struct testsrv *srv, const struct testsrv_raw *req, long *ret_status);

/* testsrv_req returning only the status (-1 on transport failure). */
long testsrv_status(struct testsrv *srv, const char *method, const char *path, const char *token,
                    const char *body);

/* Asserts that the request gets status want; on mismatch prints the response body. */
void testsrv_expect(struct testsrv *srv, const char *method, const char *path, const char *token,
                    const char *body, long want);

/*
 * POST /v1/<resource> with a body built by printf from fmt; asserts 201 and
 * returns the new object (caller decrefs) / its id.
 */
json_t *testsrv_create_json(struct testsrv *srv, const char *token, const char *resource,
                            const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int64_t testsrv_create(struct testsrv *srv, const char *token, const char *resource,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Writes a row straight into the store, past the API and its rules (for a
 * history the API would refuse to make, such as a price that began in the
 * past): the JSON built by printf from fmt is decoded through the model, so
 * defaults apply; created_at / updated_at are now. Asserts; returns the id.
 */
int64_t testsrv_insert(struct testsrv *srv, const struct resource_def *def, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Creates a token for user_id as the admin and returns its secret (caller
 * frees); *ret_id gets the token's id when not NULL.
 */
char *testsrv_token_for(struct testsrv *srv, int64_t user_id, int64_t *ret_id);

/*
 * Every id of GET path (a list route, may carry filters) walked page by page
 * with limit/after as token; asserts 200 on every page. *ret_ids is
 * malloc'ed (caller frees). Returns the count.
 */
size_t testsrv_list_ids(struct testsrv *srv, const char *token, const char *path,
                        int64_t **ret_ids);
/* Just the count of testsrv_list_ids. */
size_t testsrv_count(struct testsrv *srv, const char *token, const char *path);

/* The error code of an error response ("not_found"), or "" when it has none. */
const char *testsrv_err_code(json_t *resp);
/* The error message, detail.field: "" when absent. */
const char *testsrv_err_message(json_t *resp);
const char *testsrv_err_field(json_t *resp);

/* The integer member "id" of an object, or -1. */
int64_t testsrv_id(json_t *obj);

#endif
