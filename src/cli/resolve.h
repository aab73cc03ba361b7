/* SPDX-License-Identifier: Apache-2.0 */
/*
 * resolve.h: names to ids through the server's list endpoints
 * (GET /v1/<resource>?name=NAME). A name must match exactly one object the
 * caller can see; projects and nodes, which are unique only within their
 * organization or cluster, may also be written ORG/NAME or CLUSTER/NAME.
 */
#ifndef GPUAAS_CLI_RESOLVE_H
#define GPUAAS_CLI_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "cli/args.h"
#include "cli/client.h"

/*
 * Finds the id of the object of def named name. Returns 0 and sets *ret_id;
 * ERR_NOT_FOUND or ERR_CONFLICT (ambiguous) with a message in err;
 * ERR_INVALID when def has no names (a usage error); ERR_IO when the request
 * failed, with the error kept in c for client_report.
 */
int resolve_name(struct client *c, const struct resource_def *def, const char *name,
                 int64_t *ret_id, char *err, size_t err_size);

/* As resolve_name, but a word of digits is taken as the id itself. */
int resolve_id(struct client *c, const struct resource_def *def, const char *word, int64_t *ret_id,
               char *err, size_t err_size);

/* A resolver for args_convert that asks c's server. */
struct resolver resolve_with(struct client *c);

#endif
