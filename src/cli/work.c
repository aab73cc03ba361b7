/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.c: helpers the workload commands share. Lists are read to the end
 * (the views sort and filter on the client), names come from one list per
 * kind of object, and times are shown in UTC.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/parse.h"
#include "base/timeutil.h"
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/work.h"

static void set_protocol_error(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_protocol_error(struct client *c, const char *fmt, ...)
{
    va_list ap;

    c->err_kind = CLIENT_ERR_PROTOCOL;
    va_start(ap, fmt);
    vsnprintf(c->err_message, sizeof(c->err_message), fmt, ap);
    va_end(ap);
    c->err_hint[0] = '\0';
}

int work_list_all(struct client *c, const char *path, json_t **ret_items)
{
    char sep = strchr(path, '?') ? '&' : '?';
    json_t *all = json_array();
    int64_t after = 0;

    for (;;) {
        char *url =
            after ? xasprintf("%s%climit=%d&after=%" PRId64, path, sep, WORK_PAGE_LIMIT, after)
                  : xasprintf("%s%climit=%d", path, sep, WORK_PAGE_LIMIT);
        json_t *page = NULL, *items, *next;
        int rc = client_request(c, "GET", url, NULL, &page);

        free(url);
        if (rc < 0) {
            json_decref(all);
            return -1;
        }
        items = json_object_get(page, "items");
        next = json_object_get(page, "next_after");
        if (!json_is_array(items) || (next && !json_is_null(next) && !json_is_integer(next))) {
            set_protocol_error(c, "the answer to GET %s is not {\"items\": [...], ...}", path);
            json_decref(page);
            json_decref(all);
            return -1;
        }
        json_array_extend(all, items);
        if (!json_is_integer(next) || json_integer_value(next) <= after) {
            json_decref(page);
            break;
        }
        after = json_integer_value(next);
        json_decref(page);
    }
    *ret_items = all;
    return 0;
}

void work_names_init(struct work_names *n)
{
    memset(n, 0, sizeof(*n));
}

void work_names_release(struct work_names *n)
{
    json_decref(n->projects);
    json_decref(n->flavors);
    json_decref(n->nodes);
    json_decref(n->gpus);
    json_decref(n->classes);
    json_decref(n->clusters);
    work_names_init(n);
}

/* Every object of a list, by id. */
static json_t *load_map(struct client *c, const char *path)
{
    json_t *map = json_object(), *items = NULL, *obj;
    size_t i;

    if (work_list_all(c, path, &items) < 0)
        return map;
    json_array_foreach(items, i, obj)
    {
        json_t *id = json_object_get(obj, "id");
        char key[32];
        if (!json_is_integer(id))
            continue;
        snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(id));
        json_object_set(map, key, obj);
    }
    json_decref(items);
    return map;
}

void work_names_load(struct work_names *n, struct client *c, unsigned mask)
{
    if ((mask & WORK_NAMES_PROJECTS) && !n->projects)
        n->projects = load_map(c, "/v1/projects");
    if ((mask & WORK_NAMES_FLAVORS) && !n->flavors)
        n->flavors = load_map(c, "/v1/flavors");
    if ((mask & WORK_NAMES_NODES) && !n->nodes)
        n->nodes = load_map(c, "/v1/nodes");
    if ((mask & WORK_NAMES_GPUS) && !n->gpus)
        n->gpus = load_map(c, "/v1/gpus");
    if ((mask & WORK_NAMES_CLASSES) && !n->classes)
        n->classes = load_map(c, "/v1/gpu-classes");
    if ((mask & WORK_NAMES_CLUSTERS) && !n->clusters)
        n->clusters = load_map(c, "/v1/clusters");
}

json_t *work_lookup(json_t *map, json_t *idv)
{
    char key[32];

    if (!map || !json_is_integer(idv))
        return NULL;
    snprintf(key, sizeof(key), "%" JSON_INTEGER_FORMAT, json_integer_value(idv));
    return json_object_get(map, key);
}

char *work_name(json_t *map, json_t *idv)
{
    const char *name = json_string_value(json_object_get(work_lookup(map, idv), "name"));

    if (name && *name)
        return xstrdup(name);
    if (json_is_integer(idv))
        return xasprintf("#%" JSON_INTEGER_FORMAT, json_integer_value(idv));
    return xstrdup("-");
}

const char *work_class_label(const char *priority_class)
{
    if (!priority_class)
        return "-";
    if (strcmp(priority_class, "owned") == 0)
        return "P1";
    if (strcmp(priority_class, "opportunistic") == 0)
        return "P2";
    return priority_class;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b < 0);
}

char *work_time_rfc3339(int64_t ms)
{
    char ts[40];

    time_format_rfc3339(floor_div(ms, 1000), ts, sizeof(ts));
    return xstrdup(ts);
}

char *work_time_short(int64_t ms)
{
    char *s = work_time_rfc3339(ms);
    size_t n = strlen(s);

    /* 2026-11-30T16:30:13Z -> 2026-11-30 16:30:13 */
    if (n == 20 && s[10] == 'T' && s[19] == 'Z') {
        s[10] = ' ';
        s[19] = '\0';
    }
    return s;
}

int work_time_of(json_t *obj, const char *key, int64_t *ret_ms)
{
    json_t *v = json_object_get(obj, key);
    int64_t s;

    if (json_is_integer(v)) {
        *ret_ms = json_integer_value(v);
        return 0;
    }
    if (json_is_string(v) && time_parse_rfc3339(json_string_value(v), &s) == 0 &&
        s < INT64_MAX / 1000 && s > INT64_MIN / 1000) {
        *ret_ms = s * 1000;
        return 0;
    }
    return -1;
}

char *work_duration(int64_t ms)
{
    int64_t s = ms > 0 ? ms / 1000 : 0;

    if (s < 60)
        return xasprintf("%" PRId64 "s", s);
    if (s < 3600)
        return xasprintf("%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
    if (s < 86400)
        return xasprintf("%" PRId64 "h%02" PRId64 "m", s / 3600, s % 3600 / 60);
    return xasprintf("%" PRId64 "d%02" PRId64 "h", s / 86400, s % 86400 / 3600);
}

/* The distinct projects the caller's role bindings name. */
static int bound_projects(struct client *c, int64_t *ids, size_t max, size_t *ret_n)
{
    json_t *who = NULL, *b;
    size_t i, n = 0;

    if (client_request(c, "GET", "/v1/whoami", NULL, &who) < 0)
        return -1;
    json_array_foreach(json_object_get(who, "bindings"), i, b)
    {
        json_t *p = json_object_get(b, "project_id");
        bool seen = false;
        if (!json_is_integer(p))
            continue;
        for (size_t k = 0; k < n && k < max; k++)
            seen = seen || ids[k] == json_integer_value(p);
        if (seen)
            continue;
        if (n < max)
            ids[n] = json_integer_value(p);
        n++;
    }
    json_decref(who);
    *ret_n = n;
    return 0;
}

int work_project(struct client *c, const char *cmd, const char *word, int64_t *ret_id)
{
    char err[512];
    int64_t ids[64];
    size_t n = 0;
    int rc;

    if (word) {
        rc = resolve_id(c, &model_projects, word, ret_id, err, sizeof(err));
        if (rc == 0)
            return 0;
        if (rc == ERR_INVALID)
            return cli_usage_error(cmd, "--project: %s", err);
        if (rc == ERR_IO)
            return client_report(c);
        cli_error("--project: %s", err);
        cli_hint("'gpuaas projects list' shows the projects you can see");
        return CLI_ERROR;
    }
    if (bound_projects(c, ids, ARRAY_SIZE(ids), &n) < 0)
        return client_report(c);
    if (n == 1) {
        *ret_id = ids[0];
        return 0;
    }
    if (n == 0)
        return cli_usage_error(cmd, "give --project: your role bindings name no project");
    cli_error("give --project: you belong to %zu projects", n);
    cli_hint("'gpuaas whoami' lists them; write --project NAME, ORG/NAME or an id");
    return CLI_USAGE;
}

static bool shell_safe(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("@%+=:,./-_", ch) != NULL;
}

char *work_join_command(int n, char *const *words)
{
    struct buf b;

    buf_init(&b, SIZE_MAX / 4);
    buf_puts(&b, "");
    for (int i = 0; i < n; i++) {
        const char *w = words[i];
        bool safe = *w != '\0';

        for (const char *p = w; *p && safe; p++)
            safe = shell_safe((unsigned char)*p);
        if (i > 0)
            buf_puts(&b, " ");
        if (safe) {
            buf_puts(&b, w);
            continue;
        }
        buf_puts(&b, "'");
        for (const char *p = w; *p; p++) {
            if (*p == '\'')
                buf_puts(&b, "'\\''");
            else
                buf_append(&b, p, 1);
        }
        buf_puts(&b, "'");
    }
    return buf_detach(&b, NULL);
}

int work_parse_duration(const char *cmd, const char *flag, const char *value, int64_t min,
                        int64_t max, int64_t *ret_s)
{
    int64_t s;

    if (parse_duration_s(value, &s) < 0)
        return cli_usage_error(
            cmd, "%s: '%s' is not a duration; write it as 90, 90s, 15m, 2h or 7d", flag, value);
    if (s < min || s > max)
        return cli_usage_error(cmd, "%s: '%s' is out of range (%" PRId64 " to %" PRId64 " seconds)",
                               flag, value, min, max);
    *ret_s = s;
    return 0;
}

int work_check_period(const char *cmd, const char *value)
{
    bool ok = strlen(value) == 7 && value[4] == '-';
    int month = 0;

    for (int k = 0; ok && k < 7; k++)
        ok = k == 4 || (value[k] >= '0' && value[k] <= '9');
    if (ok)
        month = (value[5] - '0') * 10 + (value[6] - '0');
    if (!ok || month < 1 || month > 12 || strncmp(value, "1970", 4) < 0)
        return cli_usage_error(cmd, "--period must be a month written YYYY-MM (2026-11), not '%s'",
                               value);
    return 0;
}

int work_flush(struct buf *b)
{
    int rc = render_flush(b);

    buf_release(b);
    return rc;
}

/* work_show and work_show_with: one of fn and fn_c is set, or neither for JSON. */
static int show(const char *method, const char *path, json_t *body,
                int (*fn)(json_t *ans, struct buf *out),
                int (*fn_c)(struct client *c, json_t *ans, struct buf *out))
{
    struct client c;
    struct buf out;
    json_t *ans = NULL;
    int rc;

    if (client_open(&c) < 0 || client_request(&c, method, path, body, &ans) < 0) {
        rc = client_report(&c);
        client_release(&c);
        json_decref(body);
        return rc;
    }
    json_decref(body);
    buf_init(&out, WORK_OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON || (!fn && !fn_c))
        render_json(ans, &out);
    else if (fn)
        fn(ans, &out);
    else
        fn_c(&c, ans, &out);
    rc = work_flush(&out);
    json_decref(ans);
    client_release(&c);
    return rc;
}

int work_show(const char *method, const char *path, json_t *body,
              int (*fn)(json_t *ans, struct buf *out))
{
    return show(method, path, body, fn, NULL);
}

int work_show_with(const char *method, const char *path, json_t *body,
                   int (*fn)(struct client *c, json_t *ans, struct buf *out))
{
    return show(method, path, body, NULL, fn);
}

int work_download(const char *path)
{
    struct client c;
    struct buf body = {0};
    int rc = CLI_OK;

    if (client_open(&c) < 0 || client_request_raw(&c, path, &body) < 0)
        rc = client_report(&c);
    else if (body.len && fwrite(body.data, 1, body.len, stdout) != body.len)
        rc = CLI_ERROR;
    buf_release(&body);
    client_release(&c);
    return rc;
}
