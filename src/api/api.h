/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api.h: the HTTP API server (REST under /v1, JSON, bearer tokens, RBAC,
 * audit). It owns a libmicrohttpd daemon with a bounded thread pool and
 * serves requests from the store it is given (which it does not own).
 */
#ifndef GPUAAS_API_H
#define GPUAAS_API_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "store/store.h"

struct api;
struct engine;

struct collector;

struct api_options {
    const char *bind_addr;  /* IPv4 address to listen on, e.g. "127.0.0.1" */
    int port;               /* 0 picks a free port; see api_port() */
    int threads;            /* worker threads, >= 1 */
    size_t max_body_bytes;  /* larger request bodies get 413 */
    int max_connections;    /* concurrent connections accepted */
    int per_ip_connections; /* of them from one address; 0: no cap */
    int conn_timeout_s;     /* a connection silent this long is closed */
    int header_timeout_s;   /* a request's headers must come within; 0: no limit */
    struct engine *engine;  /* runs submitted work; NULL: work stays queued (tests) */
    const char *issuer;     /* who issues invoices, printed on them */
    struct collector *collector; /* GPU telemetry; NULL: none configured */
    /*
     * The most a submit may ask for as min_runtime_s and grace_s: together they
     * bound how long an owner waits to reclaim its GPUs from borrowers.
     */
    int64_t max_min_runtime_s;
    int64_t max_grace_s;
};

/* Defaults of max_min_runtime_s and max_grace_s (docs/configuration.md says why). */
#define API_DEFAULT_MAX_MIN_RUNTIME_S 3600
#define API_DEFAULT_MAX_GRACE_S 600

/* Defaults suitable for a small server. */
void api_options_init(struct api_options *opt);

/*
 * Starts listening. On failure ei says why in one line (for example
 * "could not listen on 127.0.0.1:8080: address already in use").
 * The caller frees the server with api_stop().
 */
int api_start(struct store *store, const struct api_options *opt, struct api **ret_api,
              struct error_info *ei);
/* The port actually listened on (useful with port 0). */
int api_port(const struct api *api);
/* Stops accepting, finishes requests in flight, frees; NULL is fine. */
void api_stop(struct api *api);

/*
 * Creates the first admin on an empty store: user "admin", a global admin
 * role binding and one token, in one transaction, audited. Does nothing and
 * returns 0 with *ret_token NULL when the store was bootstrapped before.
 * On creation *ret_token is the new token (caller frees): it exists nowhere
 * else, since only its hash is stored.
 */
int api_bootstrap(struct store *store, char **ret_token, struct error_info *ei);

struct api_recovery {
    int64_t user_id;
    bool created; /* the user did not exist */
    char *token;  /* its new token's secret (caller frees); only its hash is stored */
};

/*
 * The break-glass: makes user `user` an enabled global admin (creating the
 * user when missing, enabling it when disabled, adding the admin binding when
 * it has none) and gives it a new token named "break-glass", in one
 * transaction, every row audited with action "break-glass". For the daemon's
 * recover-admin command, run while no daemon serves the store.
 */
int api_recover_admin(struct store *store, const char *user, struct api_recovery *ret,
                      struct error_info *ei);

#endif
