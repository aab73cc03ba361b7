/* SPDX-License-Identifier: Apache-2.0 */
/*
 * names.c: ids to names for output. One list request per kind of object
 * and command, not one per row: a table of 500 quotas refers to a few
 * dozen projects and classes, and the list answers all of them at once.
 * Names only decorate the output, so a failed list is not an error; its ids
 * show as "#N", the form users can tell from a name.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "cli/names.h"
#include "cli/work.h"

void names_init(struct names *n, struct client *c)
{
    n->c = c;
    n->maps = json_object();
}

void names_release(struct names *n)
{
    json_decref(n->maps);
    n->maps = NULL;
}

/* Every object of def the caller can see, by id; {} when the list fails. */
static json_t *load(struct names *n, const struct resource_def *def)
{
    json_t *map = json_object_get(n->maps, def->name), *items = NULL, *obj;
    char *path;
    size_t i;

    if (map)
        return map;
    map = json_object();
    path = xasprintf("/v1/%s", def->name);
    if (work_list_all(n->c, path, &items) == 0) {
        json_array_foreach(items, i, obj)
        {
            json_t *id = json_object_get(obj, "id");
            char key[32];
            if (!json_is_integer(id))
                continue;
            snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
            json_object_set(map, key, obj);
        }
    }
    free(path);
    json_decref(items);
    json_object_set_new(n->maps, def->name, map);
    return map;
}

char *names_get(struct names *n, const struct resource_def *def, int64_t id)
{
    char key[32];
    const char *name;
    json_t *obj;

    if (model_field_index(def, "name") < 0)
        return NULL;
    snprintf(key, sizeof(key), "%" PRId64, id);
    obj = json_object_get(load(n, def), key);
    name = json_string_value(json_object_get(obj, "name"));
    if (name && *name)
        return xstrdup(name);
    /* an object without a name (a workload may have none) is known by its id */
    return obj ? xasprintf("%" PRId64, id) : xasprintf("#%" PRId64, id);
}

void names_add(struct names *n, const struct resource_def *def, json_t *obj)
{
    json_t *map = json_object_get(n->maps, def->name), *id = json_object_get(obj, "id");
    char key[32];

    if (!json_is_integer(id))
        return;
    if (!map) {
        map = json_object();
        json_object_set_new(n->maps, def->name, map);
    }
    snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
    json_object_set(map, key, obj);
}

static char *render_cb(void *ctx, const struct resource_def *ref, int64_t id)
{
    return names_get(ctx, ref, id);
}

struct render_names names_for_render(struct names *n)
{
    struct render_names r = {render_cb, n};
    return r;
}
