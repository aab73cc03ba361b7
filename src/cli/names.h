/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.h: the names of the objects a command's output refers to by id, so
 * tables show "a100-80gb" rather than 3. Each kind of object is listed once
 * per command (every page, on first need) and kept; an id the caller may
 * not see, or a list it may not read, shows as "#N".
 */
#ifndef GPUAAS_CLI_NAMES_H
#define GPUAAS_CLI_NAMES_H

#include <jansson.h>
#include <stdint.h>

#include "cli/client.h"
#include "cli/render.h"
#include "model/model.h"

struct names {
    struct client *c; /* borrowed */
    json_t *maps;     /* resource name -> {"<id>": object}; {} for a list that failed */
};

void names_init(struct names *n, struct client *c);
void names_release(struct names *n);

/*
 * What to show for the object of def with this id (caller frees): its name;
 * its id as digits when it has none; "#N" when it cannot be found. NULL
 * when def's objects have no names.
 */
char *names_get(struct names *n, const struct resource_def *def, int64_t id);

/*
 * Gives n an object of def it already has (whoami's own user), so that the
 * kind is not listed: a kind given this way is known by these objects only.
 */
void names_add(struct names *n, const struct resource_def *def, json_t *obj);

/* A struct render_names that asks n. */
struct render_names names_for_render(struct names *n);

#endif
