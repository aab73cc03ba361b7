/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_resource.c: `gpuaas <resource> list|show|create|update|delete`, the
 * admin verbs for every resource of the model. Flags, their values, help
 * text and which verbs exist all come from the resource's definition in
 * src/model/resources.c, so a new resource or field needs no code here.
 *
 * Arguments are checked in two passes: first the words alone (usage errors,
 * exit 2, before any request), then values that name other objects are
 * resolved through the server.
 */
#include "base/common.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/parse.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/names.h"
#include "cli/render.h"
#include "cli/resolve.h"
#include "cli/units.h"

#define OUTPUT_MAX ((size_t)1 << 30)
#define MAX_FIELD_FLAGS 64
/* The audit log reads newest first; the API lists oldest first, so the table reverses it. */
#define AUDIT_SHOWN 50  /* entries shown without --limit or --all */
#define AUDIT_PAGE 1000 /* the API's largest page */

enum verb { VERB_LIST, VERB_SHOW, VERB_CREATE, VERB_UPDATE, VERB_DELETE };

static const struct verb_def {
    enum verb verb;
    const char *name;
    const char *alias1, *alias2; /* may be NULL */
    enum action action;
    const char *done; /* past participle, for "cannot be ..." */
} verbs[] = {
    {VERB_LIST, "list", "ls", NULL, ACT_READ, "listed"},
    {VERB_SHOW, "show", "get", NULL, ACT_READ, "shown"},
    {VERB_CREATE, "create", "add", NULL, ACT_CREATE, "created"},
    {VERB_UPDATE, "update", "set", NULL, ACT_UPDATE, "updated"},
    {VERB_DELETE, "delete", "rm", "revoke", ACT_DELETE, "deleted"},
};

/* One --field VALUE as typed. */
struct field_arg {
    int idx;     /* field index in the resource */
    char *flag;  /* the flag as typed, without "=VALUE", for messages; owned */
    char *value; /* owned */
};

struct invocation {
    const struct resource_def *def;
    const struct verb_def *verb;
    char cmd[96];       /* "projects create", for hints */
    const char *target; /* ID|NAME, or NAME for create */
    struct field_arg fields[MAX_FIELD_FLAGS];
    size_t n_fields;
    int64_t limit; /* 0 when not given */
    int64_t after; /* 0 when not given */
    bool all;
};

static void invocation_release(struct invocation *inv)
{
    for (size_t i = 0; i < inv->n_fields; i++) {
        free(inv->fields[i].flag);
        free(inv->fields[i].value);
    }
    inv->n_fields = 0;
}

static bool allowed(const struct resource_def *def, enum action act)
{
    return def->need[act] != ROLE_NOBODY;
}

/* ---- help ---- */

/* What a flag's value looks like in help: "N", "ORG|ID", "ready|drain|down". */
static char *placeholder(const struct field_def *f)
{
    const struct resource_def *ref = f->ref ? model_find(f->ref) : NULL;
    struct buf b;

    switch (f->type) {
    case FT_INT:
        return xstrdup("N");
    case FT_BOOL:
        return xstrdup("true|false");
    case FT_STRING:
        return xstrdup("TEXT");
    case FT_NAME:
    case FT_IDENT:
        return xstrdup("NAME");
    case FT_TIME:
        return xstrdup("TIME");
    case FT_LABELS:
        return xstrdup("K=V,...");
    case FT_JSON:
        return xstrdup("JSON");
    case FT_ENUM:
        buf_init(&b, 4096);
        for (const char *const *e = f->enum_values; e && *e; e++)
            buf_printf(&b, "%s%s", e == f->enum_values ? "" : "|", *e);
        return buf_detach(&b, NULL);
    case FT_REF:
    case FT_REFLIST: {
        char *u = xstrdup(ref ? args_resource_short(ref) : "ID");
        char *s;
        for (char *p = u; *p; p++) {
            if (*p >= 'a' && *p <= 'z')
                *p = (char)(*p - 'a' + 'A');
        }
        s = f->type == FT_REF ? xasprintf("%s", u) : xasprintf("%s,...", u);
        free(u);
        return s;
    }
    }
    return xstrdup("VALUE");
}

/* The flag help shows for a field: --org for org_id, else the field's name. */
static char *display_flag(const struct field_def *f)
{
    char *flag = args_flag_name(f);
    size_t n = strlen(flag);

    if (f->type == FT_REF && n > 3 && strcmp(flag + n - 3, "-id") == 0)
        flag[n - 3] = '\0';
    return flag;
}

static bool field_usable(const struct field_def *f, enum verb v)
{
    if (f->flags & FF_SECRET)
        return false;
    switch (v) {
    case VERB_LIST:
        return (f->flags & FF_FILTER) != 0;
    case VERB_CREATE:
        return !(f->flags & FF_READONLY);
    case VERB_UPDATE:
        return !(f->flags & (FF_READONLY | FF_IMMUTABLE));
    default:
        return false;
    }
}

/* Rows of help text: a flag and what it does, printed aligned. */
struct help_rows {
    char *left[MAX_FIELD_FLAGS + 8];
    char *right[MAX_FIELD_FLAGS + 8];
    size_t n;
};

static void help_add(struct help_rows *h, char *left, char *right)
{
    if (h->n == ARRAY_SIZE(h->left)) {
        free(left);
        free(right);
        return;
    }
    h->left[h->n] = left;
    h->right[h->n] = right;
    h->n++;
}

static void help_print(struct help_rows *h)
{
    size_t width = 0;

    for (size_t i = 0; i < h->n; i++) {
        if (strlen(h->left[i]) > width)
            width = strlen(h->left[i]);
    }
    for (size_t i = 0; i < h->n; i++) {
        printf("  %-*s  %s\n", (int)width, h->left[i], h->right[i]);
        free(h->left[i]);
        free(h->right[i]);
    }
    h->n = 0;
}

/* A field with a unit in its name: its human flag, with the exact one named in the note. */
static void help_add_unit_field(struct help_rows *h, const struct field_def *f, enum verb v,
                                bool mark_fixed)
{
    static const char *const ph[] = {
        [UNITS_NONE] = "N", [UNITS_MILLI] = "N", [UNITS_MIB] = "SIZE", [UNITS_MICROS] = "AMOUNT"};
    static const char *const how[] = {
        [UNITS_NONE] = "",
        [UNITS_MILLI] = "16 or 0.5",
        [UNITS_MIB] = "128GiB or 512MiB (a number is MiB)",
        [UNITS_MICROS] = "1.80 in the currency",
    };
    enum units_kind k = units_of_field(f->name);
    char *human = xstrdup(f->name), *exact = args_flag_name(f);

    human[units_stem_len(f->name)] = '\0';
    for (char *p = human; *p; p++) {
        if (*p == '_')
            *p = '-';
    }
    help_add(h, xasprintf("--%s %s", human, ph[k]),
             xasprintf("%s, or --%s N: %s%s%s%s", how[k], exact, f->help,
                       (v == VERB_CREATE && (f->flags & FF_REQUIRED)) ? " (required)" : "",
                       (v != VERB_LIST && (f->flags & FF_NULLABLE)) ? " (may be null)" : "",
                       (mark_fixed && (f->flags & FF_IMMUTABLE)) ? " (fixed)" : ""));
    free(human);
    free(exact);
}

/* The field flags a verb takes, with notes; fixed marks fields update cannot change. */
static void help_add_fields(struct help_rows *h, const struct resource_def *def, enum verb v,
                            bool mark_fixed)
{
    for (size_t i = 0; i < def->n_fields; i++) {
        const struct field_def *f = &def->fields[i];
        char *flag, *ph;
        if (!field_usable(f, v))
            continue;
        if (f->type == FT_INT && units_stem_len(f->name) > 0) {
            help_add_unit_field(h, f, v, mark_fixed);
            continue;
        }
        flag = display_flag(f);
        ph = placeholder(f);
        help_add(h, xasprintf("--%s %s", flag, ph),
                 xasprintf("%s%s%s%s", f->help,
                           (v == VERB_CREATE && (f->flags & FF_REQUIRED)) ? " (required)" : "",
                           (v != VERB_LIST && (f->flags & FF_NULLABLE)) ? " (may be null)" : "",
                           (mark_fixed && (f->flags & FF_IMMUTABLE)) ? " (fixed)" : ""));
        free(flag);
        free(ph);
    }
}

/* "ID|NAME", or "ID" for resources without names. */
static const char *target_word(const struct resource_def *def)
{
    int idx = model_field_index(def, "name");
    return idx >= 0 && (def->fields[idx].flags & FF_FILTER) ? "ID|NAME" : "ID";
}

/* What follows the verb in its usage line (caller frees). */
static char *verb_args(const struct resource_def *def, const struct verb_def *v)
{
    switch (v->verb) {
    case VERB_SHOW:
    case VERB_DELETE:
        return xstrdup(target_word(def));
    case VERB_UPDATE:
        return xasprintf("%s --FIELD VALUE ...", target_word(def));
    case VERB_CREATE:
        return xstrdup(model_field_index(def, "name") >= 0 ? "[NAME] --FIELD VALUE ..."
                                                           : "--FIELD VALUE ...");
    case VERB_LIST:
        break;
    }
    return xstrdup("[--FILTER VALUE ...] [--limit N] [--after ID] [--all]");
}

static void print_resource_help(const struct resource_def *def)
{
    struct help_rows h = {0};

    printf("usage: gpuaas %s <verb> [<args>]\n\n%s.\n\nVerbs:\n", def->name, def->help);
    for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
        if (allowed(def, verbs[i].action))
            help_add(&h, xstrdup(verbs[i].name), verb_args(def, &verbs[i]));
    }
    help_print(&h);
    if (allowed(def, ACT_CREATE)) {
        printf("\nFields (update takes those not marked fixed):\n");
        help_add_fields(&h, def, VERB_CREATE, allowed(def, ACT_UPDATE));
        help_print(&h);
    }
    printf("\n");
    if (strcmp(args_resource_short(def), def->name) != 0)
        printf("Also written '%s'. ", args_resource_short(def));
    printf("Run 'gpuaas %s <verb> --help' for the flags of a verb;\n"
           "add -o json for the server's JSON.\n",
           def->name);
}

static void print_verb_help(const struct invocation *inv)
{
    const struct resource_def *def = inv->def;
    enum verb v = inv->verb->verb;
    struct help_rows h = {0};
    char *args = verb_args(def, inv->verb);

    printf("usage: gpuaas %s %s %s\n\n", def->name, inv->verb->name, args);
    free(args);
    switch (v) {
    case VERB_LIST:
        if (def->flags & RF_NEWEST_FIRST)
            printf("Lists the audit log, newest first: the newest %d entries, or --limit N,\n"
                   "or every one with --all (-o json: pages of the server's order).\n\nFlags:\n",
                   AUDIT_SHOWN);
        else
            printf("Lists %s, one page unless --all is given.\n\nFlags:\n", def->name);
        help_add_fields(&h, def, v, false);
        help_add(&h, xstrdup("--limit N"), xstrdup("at most N per page"));
        help_add(&h, xstrdup("--after ID"), xstrdup("start after this id (the next page)"));
        help_add(&h, xstrdup("--all"), xstrdup("fetch every page"));
        help_print(&h);
        break;
    case VERB_SHOW:
        printf("Shows one %s%s.\n", def->singular,
               strcmp(target_word(def), "ID") == 0 ? ", by id" : ", by id or by name");
        break;
    case VERB_CREATE:
        printf("Creates a %s.%s\n\nFlags:\n", def->singular,
               model_field_index(def, "name") >= 0 ? " A NAME given first fills --name." : "");
        help_add_fields(&h, def, v, false);
        help_print(&h);
        break;
    case VERB_UPDATE:
        printf("Changes the given fields of a %s.\n\nFlags:\n", def->singular);
        help_add_fields(&h, def, v, false);
        help_print(&h);
        break;
    case VERB_DELETE:
        printf("%s a %s%s.\n", def->flags & RF_DELETE_REVOKES ? "Revokes" : "Deletes",
               def->singular,
               strcmp(target_word(def), "ID") == 0 ? ", by id" : ", by id or by name");
        break;
    }
    printf("\nFlags that name another object take its id or its name; '' or null clears\n"
           "a field that may be null. Global flags: --server URL, --token TOKEN, -o "
           "table|wide|json.\n");
}

/* ---- pass 1: the words ---- */

/* The flag of a field that takes a human quantity: "memory" for memory_mib (caller frees). */
static char *unit_flag(const struct field_def *f)
{
    char *flag = args_flag_name(f);
    flag[units_stem_len(f->name)] = '\0';
    return flag;
}

/* "unknown flag" with the closest flag the verb takes, when the word looks like a typo of it. */
static int unknown_flag(const struct invocation *inv, const char *flag)
{
    const char *words[2 * MAX_FIELD_FLAGS + 8];
    char *owned[2 * MAX_FIELD_FLAGS];
    size_t n = 0, n_owned = 0;
    const char *close;
    int rc;

    if (inv->verb->verb == VERB_LIST) {
        words[n++] = "limit";
        words[n++] = "after";
        words[n++] = "all";
    }
    for (size_t i = 0; i < inv->def->n_fields && n_owned + 2 <= ARRAY_SIZE(owned); i++) {
        const struct field_def *f = &inv->def->fields[i];
        if (!field_usable(f, inv->verb->verb))
            continue;
        words[n++] = owned[n_owned++] = display_flag(f);
        if (f->type == FT_INT && units_stem_len(f->name) > 0)
            words[n++] = owned[n_owned++] = unit_flag(f);
    }
    words[n] = NULL;
    close = strncmp(flag, "--", 2) == 0 ? cli_closest(flag + 2, words) : NULL;
    if (close)
        rc = cli_usage_error(inv->cmd, "unknown flag '%s' for '%s'; did you mean '--%s'?", flag,
                             inv->cmd, close);
    else
        rc = cli_usage_error(inv->cmd, "unknown flag '%s' for '%s'", flag, inv->cmd);
    for (size_t i = 0; i < n_owned; i++)
        free(owned[i]);
    return rc;
}

/* A human quantity (--memory 128GiB) as the field's exact integer, or the usage error. */
static int exact_value(struct invocation *inv, const struct field_def *f, const char *flag,
                       const char *value, char **ret)
{
    char err[256];
    int64_t v;

    if ((f->flags & FF_NULLABLE) && (*value == '\0' || strcmp(value, "null") == 0)) {
        *ret = xstrdup(value);
        return 0;
    }
    if (units_parse(units_of_field(f->name), value, f->max, &v, err, sizeof(err)) < 0)
        return cli_usage_error(inv->cmd, "%s: %s", flag, err);
    if (v < f->min)
        return cli_usage_error(inv->cmd, "%s: '%s' is below the least allowed", flag, value);
    *ret = xasprintf("%" PRId64, v);
    return 0;
}

static int take_field_flag(struct invocation *inv, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    char *flag = eq ? xstrndup(arg, (size_t)(eq - arg)) : xstrdup(arg);
    const struct field_def *f;
    const char *value;
    char *exact = NULL;
    int idx = args_field_for_flag(inv->def, flag + 2), rc;
    bool human = false;

    if (idx < 0 && (idx = args_field_for_unit_flag(inv->def, flag + 2)) >= 0)
        human = true;
    if (idx < 0) {
        rc = unknown_flag(inv, flag);
        goto fail;
    }
    f = &inv->def->fields[idx];
    if (!field_usable(f, inv->verb->verb)) {
        if (inv->verb->verb == VERB_LIST)
            rc = cli_usage_error(inv->cmd, "%s cannot be filtered by '%s'", inv->def->name, flag);
        else if (f->flags & (FF_READONLY | FF_SECRET))
            rc = cli_usage_error(inv->cmd, "'%s' is set by the server", flag);
        else if (inv->verb->verb == VERB_UPDATE && (f->flags & FF_IMMUTABLE))
            rc = cli_usage_error(inv->cmd, "'%s' cannot be changed after creation", flag);
        else
            rc = cli_usage_error(inv->cmd, "'%s' takes no '%s'", inv->cmd, flag);
        goto fail;
    }
    if (inv->n_fields == MAX_FIELD_FLAGS) {
        rc = cli_usage_error(inv->cmd, "too many flags");
        goto fail;
    }
    if (eq) {
        value = eq + 1;
        *i += 1;
    } else if (f->type == FT_BOOL && (*i + 1 >= argc || argv[*i + 1][0] == '-')) {
        value = "true"; /* a bare boolean flag: --disabled */
        *i += 1;
    } else if (*i + 1 < argc) {
        value = argv[*i + 1];
        *i += 2;
    } else {
        rc = cli_usage_error(inv->cmd, "flag '%s' needs a value", flag);
        goto fail;
    }
    if (human && (rc = exact_value(inv, f, flag, value, &exact)) != 0)
        goto fail;
    inv->fields[inv->n_fields].idx = idx;
    inv->fields[inv->n_fields].flag = flag;
    inv->fields[inv->n_fields].value = exact ? exact : xstrdup(value);
    inv->n_fields++;
    return 1;
fail:
    free(flag);
    return rc;
}

static int parse_words(struct invocation *inv, int argc, char **argv, int start)
{
    bool end_of_flags = false;
    const char *v;
    int i = start, rc;

    while (i < argc) {
        const char *arg = argv[i];
        enum verb verb = inv->verb->verb;

        if (!end_of_flags && arg[0] == '-' && arg[1] != '\0') {
            if (strcmp(arg, "--") == 0) {
                end_of_flags = true;
                i++;
                continue;
            }
            if (cli_is_help(arg)) {
                print_verb_help(inv);
                return -1;
            }
            if ((rc = cli_take_global_flag(inv->cmd, argc, argv, &i)) != 0) {
                if (rc != 1)
                    return rc;
                continue;
            }
            if (verb == VERB_LIST) {
                if ((rc = cli_take_value_flag(inv->cmd, argc, argv, &i, "--limit", NULL, &v))) {
                    if (rc != 1)
                        return rc;
                    if (parse_int64(v, 1, 100000, &inv->limit) < 0)
                        return cli_usage_error(inv->cmd,
                                               "--limit must be a number from 1 to "
                                               "100000, not '%s'",
                                               v);
                    continue;
                }
                if ((rc = cli_take_value_flag(inv->cmd, argc, argv, &i, "--after", NULL, &v))) {
                    if (rc != 1)
                        return rc;
                    if (parse_int64(v, 1, INT64_MAX, &inv->after) < 0)
                        return cli_usage_error(inv->cmd, "--after must be an id, not '%s'", v);
                    continue;
                }
                if (strcmp(arg, "--all") == 0) {
                    inv->all = true;
                    i++;
                    continue;
                }
            }
            if (strncmp(arg, "--", 2) != 0)
                return unknown_flag(inv, arg);
            rc = take_field_flag(inv, argc, argv, &i);
            if (rc != 1)
                return rc;
            continue;
        }
        if (inv->target || verb == VERB_LIST)
            return cli_usage_error(inv->cmd, "unexpected argument '%s'", arg);
        inv->target = arg;
        i++;
    }
    return 0;
}

static int check_words(struct invocation *inv)
{
    const struct resource_def *def = inv->def;
    enum verb v = inv->verb->verb;
    int name_idx = model_field_index(def, "name");

    if ((v == VERB_SHOW || v == VERB_UPDATE || v == VERB_DELETE) && !inv->target)
        return cli_usage_error(inv->cmd, "'%s' needs the %s's %s", inv->cmd, def->singular,
                               strcmp(target_word(def), "ID") == 0 ? "id" : "id or name");
    if (v == VERB_UPDATE && inv->n_fields == 0)
        return cli_usage_error(inv->cmd, "nothing to change; give the fields as --FIELD VALUE");
    if (v == VERB_CREATE && inv->target) {
        if (name_idx < 0 || (def->fields[name_idx].flags & FF_READONLY))
            return cli_usage_error(inv->cmd, "'%s' takes no NAME; give the fields as --FIELD VALUE",
                                   inv->cmd);
        for (size_t i = 0; i < inv->n_fields; i++) {
            if (inv->fields[i].idx == name_idx)
                return cli_usage_error(inv->cmd, "the name is given twice, as '%s' and --name",
                                       inv->target);
        }
        if (inv->n_fields == MAX_FIELD_FLAGS)
            return cli_usage_error(inv->cmd, "too many flags");
        inv->fields[inv->n_fields].idx = name_idx;
        inv->fields[inv->n_fields].flag = xstrdup("NAME");
        inv->fields[inv->n_fields].value = xstrdup(inv->target);
        inv->n_fields++;
        inv->target = NULL;
    }
    /* Values that name nothing can be checked now, before any request. */
    for (size_t i = 0; i < inv->n_fields; i++) {
        const struct field_def *f = &def->fields[inv->fields[i].idx];
        json_t *val = NULL;
        char err[512];
        if (f->type == FT_REF || f->type == FT_REFLIST)
            continue;
        if (args_convert(f, inv->fields[i].value, NULL, &val, err, sizeof(err)) < 0)
            return cli_usage_error(inv->cmd, "%s: %s", inv->fields[i].flag, err);
        json_decref(val);
    }
    if (v == VERB_CREATE) {
        for (size_t i = 0; i < def->n_fields; i++) {
            bool given = false;
            char *flag;
            if (!(def->fields[i].flags & FF_REQUIRED))
                continue;
            for (size_t k = 0; k < inv->n_fields; k++)
                given = given || inv->fields[k].idx == (int)i;
            if (given)
                continue;
            flag = display_flag(&def->fields[i]);
            cli_usage_error(inv->cmd, "'%s' needs --%s (%s)", inv->cmd, flag, def->fields[i].help);
            free(flag);
            return CLI_USAGE;
        }
    }
    return 0;
}

/* ---- pass 2: values, requests, output ---- */

/*
 * Reports a failed conversion or lookup and returns the exit code. what is
 * the flag concerned ("--org"), NULL for the command's ID|NAME.
 */
static int report_value_error(struct invocation *inv, struct client *c, const char *what, int rc,
                              const char *err)
{
    if (rc == ERR_INVALID)
        return cli_usage_error(inv->cmd, "%s%s%s", what ? what : "", what ? ": " : "", err);
    if (rc == ERR_IO)
        return client_report(c);
    cli_error("%s%s%s", what ? what : "", what ? ": " : "", err);
    return CLI_ERROR;
}

/* Converts the field flags into a JSON object (new reference in *ret). */
static int build_fields(struct invocation *inv, struct client *c, json_t **ret)
{
    struct resolver r = resolve_with(c);
    json_t *obj = json_object();
    char err[512];

    for (size_t i = 0; i < inv->n_fields; i++) {
        const struct field_def *f = &inv->def->fields[inv->fields[i].idx];
        json_t *val = NULL;
        int rc = args_convert(f, inv->fields[i].value, &r, &val, err, sizeof(err));
        if (rc < 0) {
            rc = report_value_error(inv, c, inv->fields[i].flag, rc, err);
            json_decref(obj);
            return rc;
        }
        json_object_set_new(obj, f->name, val);
    }
    *ret = obj;
    return 0;
}

static int resolve_target(struct invocation *inv, struct client *c, int64_t *ret_id)
{
    char err[512];
    int rc = resolve_id(c, inv->def, inv->target, ret_id, err, sizeof(err));
    if (rc < 0)
        return report_value_error(inv, c, NULL, rc, err);
    return 0;
}

static int print_object(const struct resource_def *def, json_t *obj)
{
    struct buf out;
    int rc;

    buf_init(&out, OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON)
        render_json(obj, &out);
    else if (json_is_object(obj))
        render_object(def, obj, &out);
    rc = render_flush(&out);
    buf_release(&out);
    return rc;
}

/* A filter value as query text: ids and numbers as digits, booleans as true/false. */
static char *query_value(json_t *v)
{
    char *s, *esc;

    if (json_is_string(v))
        return client_escape(json_string_value(v));
    if (json_is_integer(v))
        return xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
    if (json_is_boolean(v))
        return xstrdup(json_is_true(v) ? "true" : "false");
    if (json_is_null(v))
        return xstrdup("null");
    s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    esc = client_escape(s ? s : "");
    free(s);
    return esc;
}

static char *list_path(const struct invocation *inv, json_t *filters, int64_t after)
{
    struct buf b;
    const char *key;
    json_t *v;
    char sep = '?';

    buf_init(&b, 1 << 20);
    buf_printf(&b, "/v1/%s", inv->def->name);
    if (inv->limit) {
        buf_printf(&b, "%climit=%" PRId64, sep, inv->limit);
        sep = '&';
    }
    if (after) {
        buf_printf(&b, "%cafter=%" PRId64, sep, after);
        sep = '&';
    }
    json_object_foreach(filters, key, v)
    {
        char *q = query_value(v);
        buf_printf(&b, "%c%s=%s", sep, key, q);
        free(q);
        sep = '&';
    }
    return buf_detach(&b, NULL);
}

/* The page's items and next_after (0 when there are no more pages). */
static int page_parts(const struct invocation *inv, json_t *page, json_t **ret_items,
                      int64_t *ret_next)
{
    json_t *items = json_object_get(page, "items");
    json_t *next = json_object_get(page, "next_after");

    if (!json_is_array(items) || (next && !json_is_null(next) && !json_is_integer(next))) {
        cli_error("the server's list of %s is not {\"items\": [...], \"next_after\": ...}",
                  inv->def->name);
        return CLI_ERROR;
    }
    *ret_items = items;
    *ret_next = json_is_integer(next) ? json_integer_value(next) : 0;
    return 0;
}

/* The audit log reads newest first; the API lists oldest first, so the table reverses it. */
#define AUDIT_SHOWN 50  /* entries shown without --limit or --all */
#define AUDIT_PAGE 1000 /* the API's largest page */

static bool newest_first(const struct invocation *inv)
{
    return (inv->def->flags & RF_NEWEST_FIRST) && cli_opts.output == CLI_OUTPUT_TABLE;
}

/* Every page (or one, as asked) of the list into *ret_all; *ret_page keeps the last page. */
static int fetch_pages(struct invocation *inv, struct client *c, json_t *filters, json_t **ret_page,
                       json_t *all, int64_t *ret_next)
{
    int64_t after = inv->after, next = 0, limit = inv->limit;
    bool every = inv->all || newest_first(inv);
    json_t *page = NULL, *items = NULL;
    int rc = 0;

    if (newest_first(inv))
        inv->limit = AUDIT_PAGE; /* --limit counts the newest shown, not the page */
    for (;;) {
        char *path = list_path(inv, filters, after);
        json_decref(page);
        page = NULL;
        rc = client_request(c, "GET", path, NULL, &page);
        free(path);
        if (rc < 0) {
            rc = client_report(c);
            break;
        }
        rc = page_parts(inv, page, &items, &next);
        if (rc != 0)
            break;
        json_array_extend(all, items);
        if (!every || next == 0)
            break;
        if (next == after) {
            cli_error("the server sent the same page of %s twice (after=%" PRId64 ")",
                      inv->def->name, after);
            rc = CLI_ERROR;
            break;
        }
        after = next;
    }
    inv->limit = limit;
    *ret_page = page;
    *ret_next = next;
    return rc;
}

/* Reverses all in place, keeping the newest max (0: all); returns how many there were. */
static size_t newest(json_t *all, size_t max)
{
    size_t n = json_array_size(all);
    json_t *rev = json_array();

    for (size_t i = n; i > 0 && (max == 0 || json_array_size(rev) < max); i--)
        json_array_append(rev, json_array_get(all, i - 1));
    json_array_clear(all);
    json_array_extend(all, rev);
    json_decref(rev);
    return n;
}

static int do_list(struct invocation *inv, struct client *c)
{
    json_t *filters = NULL, *page = NULL, *all = NULL;
    int64_t next = 0;
    size_t total = 0;
    struct buf out;
    int rc;

    rc = build_fields(inv, c, &filters);
    if (rc != 0)
        return rc;
    all = json_array();
    rc = fetch_pages(inv, c, filters, &page, all, &next);
    if (rc != 0)
        goto out;
    if (newest_first(inv))
        total = newest(all, inv->all ? 0 : inv->limit ? (size_t)inv->limit : AUDIT_SHOWN);

    buf_init(&out, OUTPUT_MAX);
    if (cli_opts.output == CLI_OUTPUT_JSON) {
        if (inv->all) {
            json_t *whole = json_pack("{s:O,s:n}", "items", all, "next_after");
            render_json(whole, &out);
            json_decref(whole);
        } else {
            render_json(page, &out);
        }
    } else if (json_array_size(all) > 0) {
        struct names names;
        struct render_names rn;
        names_init(&names, c);
        rn = names_for_render(&names);
        render_list_named(inv->def, all, &rn, &out);
        names_release(&names);
    }
    rc = render_flush(&out);
    buf_release(&out);
    if (cli_opts.output == CLI_OUTPUT_TABLE) {
        if (json_array_size(all) == 0)
            fprintf(stderr, "no %s found\n", inv->def->name);
        if (newest_first(inv) && json_array_size(all) < total)
            fprintf(stderr, "(the newest %zu of %zu shown; --limit N for more, --all for all)\n",
                    json_array_size(all), total);
        else if (!inv->all && !newest_first(inv) && next != 0)
            fprintf(stderr, "(more %s: add --all, or --after %" PRId64 " for the next page)\n",
                    inv->def->name, next);
    }
out:
    json_decref(page);
    json_decref(all);
    json_decref(filters);
    return rc;
}

static int do_show(struct invocation *inv, struct client *c)
{
    json_t *obj = NULL;
    int64_t id;
    char *path;
    int rc = resolve_target(inv, c, &id);

    if (rc != 0)
        return rc;
    path = xasprintf("/v1/%s/%" PRId64, inv->def->name, id);
    rc = client_request(c, "GET", path, NULL, &obj);
    free(path);
    if (rc < 0)
        return client_report(c);
    rc = print_object(inv->def, obj);
    json_decref(obj);
    return rc;
}

/* The token's secret comes back once; show it apart from the rest. */
static int print_new_secret(const struct resource_def *def, json_t *obj)
{
    json_t *copy = json_deep_copy(obj);
    const char *secret = json_string_value(json_object_get(obj, "token"));
    struct buf out;
    int rc;

    json_object_del(copy, "token");
    buf_init(&out, OUTPUT_MAX);
    render_object(def, copy, &out);
    if (secret)
        buf_printf(&out,
                   "\nThe token is shown once, now; store it safely, it cannot be shown again:\n"
                   "\n    %s\n\n",
                   secret);
    rc = render_flush(&out);
    buf_release(&out);
    json_decref(copy);
    if (!secret)
        cli_warn("the server did not send the token's secret");
    return rc;
}

static int do_create(struct invocation *inv, struct client *c)
{
    json_t *body = NULL, *obj = NULL;
    char *path;
    int rc = build_fields(inv, c, &body);

    if (rc != 0)
        return rc;
    path = xasprintf("/v1/%s", inv->def->name);
    rc = client_request(c, "POST", path, body, &obj);
    free(path);
    json_decref(body);
    if (rc < 0)
        return client_report(c);
    if ((inv->def->flags & RF_SECRET_ONCE) && cli_opts.output == CLI_OUTPUT_TABLE)
        rc = print_new_secret(inv->def, obj);
    else
        rc = print_object(inv->def, obj);
    json_decref(obj);
    return rc;
}

static int do_update(struct invocation *inv, struct client *c)
{
    json_t *body = NULL, *obj = NULL;
    int64_t id;
    char *path;
    int rc = resolve_target(inv, c, &id);

    if (rc != 0)
        return rc;
    rc = build_fields(inv, c, &body);
    if (rc != 0)
        return rc;
    path = xasprintf("/v1/%s/%" PRId64, inv->def->name, id);
    rc = client_request(c, "PATCH", path, body, &obj);
    free(path);
    json_decref(body);
    if (rc < 0)
        return client_report(c);
    rc = print_object(inv->def, obj);
    json_decref(obj);
    return rc;
}

static int do_delete(struct invocation *inv, struct client *c)
{
    json_t *obj = NULL;
    int64_t id;
    char *path;
    int rc = resolve_target(inv, c, &id);

    if (rc != 0)
        return rc;
    path = xasprintf("/v1/%s/%" PRId64, inv->def->name, id);
    rc = client_request(c, "DELETE", path, NULL, &obj);
    free(path);
    if (rc < 0)
        return client_report(c);
    if (obj) {
        rc = print_object(inv->def, obj);
    } else if (cli_opts.output == CLI_OUTPUT_TABLE) {
        const char *done = inv->def->flags & RF_DELETE_REVOKES ? "revoked" : "deleted";
        if (*inv->target < '0' || *inv->target > '9')
            printf("%s %s '%s' (id %" PRId64 ")\n", done, inv->def->singular, inv->target, id);
        else
            printf("%s %s %" PRId64 "\n", done, inv->def->singular, id);
        rc = CLI_OK;
    } else {
        rc = CLI_OK;
    }
    json_decref(obj);
    return rc;
}

static const struct verb_def *find_verb(const char *word)
{
    for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
        const struct verb_def *v = &verbs[i];
        if (strcmp(word, v->name) == 0 || (v->alias1 && strcmp(word, v->alias1) == 0) ||
            (v->alias2 && strcmp(word, v->alias2) == 0))
            return v;
    }
    return NULL;
}

static int unknown_verb(const struct resource_def *def, const char *word)
{
    static const char *const words[] = {"list",   "ls",  "show",   "get", "create", "add",
                                        "update", "set", "delete", "rm",  "revoke", NULL};
    const char *close = cli_closest(word, words);

    if (close)
        return cli_usage_error(def->name, "unknown verb '%s' for %s; did you mean '%s'?", word,
                               def->name, close);
    return cli_usage_error(def->name,
                           "unknown verb '%s' for %s; use list, show, create, update or delete",
                           word, def->name);
}

int cmd_resource(int argc, char **argv)
{
    struct invocation inv;
    struct client c;
    int i = 1, rc;

    memset(&inv, 0, sizeof(inv));
    inv.def = args_find_resource(argv[0]);
    if (!inv.def)
        return cli_usage_error(NULL, "unknown resource '%s'", argv[0]);

    /* gpuaas <resource> [global flags] [<verb>] ... */
    while (i < argc && argv[i][0] == '-') {
        if (cli_is_help(argv[i])) {
            print_resource_help(inv.def);
            return CLI_OK;
        }
        rc = cli_take_global_flag(inv.def->name, argc, argv, &i);
        if (rc == 0)
            break; /* a verb's flag: the verb is list */
        if (rc != 1)
            return rc;
    }
    if (i < argc && argv[i][0] != '-') {
        inv.verb = find_verb(argv[i]);
        if (!inv.verb)
            return unknown_verb(inv.def, argv[i]);
        i++;
    } else {
        inv.verb = &verbs[VERB_LIST];
    }
    snprintf(inv.cmd, sizeof(inv.cmd), "%s %s", inv.def->name, inv.verb->name);
    if (!allowed(inv.def, inv.verb->action))
        return cli_usage_error(inv.def->name, "%s cannot be %s through the API", inv.def->name,
                               inv.verb->done);

    rc = parse_words(&inv, argc, argv, i);
    if (rc == 0)
        rc = check_words(&inv);
    if (rc != 0) {
        invocation_release(&inv);
        return rc < 0 ? CLI_OK : rc; /* -1: help was printed */
    }

    if (client_open(&c) < 0) {
        rc = client_report(&c);
        client_release(&c);
        invocation_release(&inv);
        return rc;
    }
    switch (inv.verb->verb) {
    case VERB_LIST:
        rc = do_list(&inv, &c);
        break;
    case VERB_SHOW:
        rc = do_show(&inv, &c);
        break;
    case VERB_CREATE:
        rc = do_create(&inv, &c);
        break;
    case VERB_UPDATE:
        rc = do_update(&inv, &c);
        break;
    case VERB_DELETE:
        rc = do_delete(&inv, &c);
        break;
    }
    client_release(&c);
    invocation_release(&inv);
    return rc;
}
