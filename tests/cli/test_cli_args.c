/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_args.c: the CLI's model-driven words: resource aliases, flag to
 * field mapping, and flag values converted per field type, with names
 * resolved through a fake resolver.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>

#include "cli/args.h"
#include "cli/units.h"

/* ---- resource words ---- */

static void test_resource_aliases(void **state)
{
    static const struct {
        const char *word;
        const char *name;
    } cases[] = {
        {"organizations", "organizations"},
        {"organization", "organizations"},
        {"orgs", "organizations"},
        {"org", "organizations"},
        {"project", "projects"},
        {"projects", "projects"},
        {"user", "users"},
        {"role-binding", "role-bindings"},
        {"role_bindings", "role-bindings"},
        {"binding", "role-bindings"},
        {"token", "tokens"},
        {"cluster", "clusters"},
        {"node", "nodes"},
        {"gpu", "gpus"},
        {"gpus", "gpus"},
        {"gpu-class", "gpu-classes"},
        {"gpu_classes", "gpu-classes"},
        {"class", "gpu-classes"},
        {"pool", "pools"},
        {"flavor", "flavors"},
        {"quota", "quotas"},
        {"org-quota", "org-quotas"},
        {"org-quotas", "org-quotas"},
        {"organization-quota", "org-quotas"},
        {"audit", "audit"},
    };
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        const struct resource_def *def = args_find_resource(cases[i].word);
        assert_non_null(def);
        assert_string_equal(def->name, cases[i].name);
    }
    assert_null(args_find_resource("frob"));
    assert_null(args_find_resource(""));
    assert_null(args_find_resource("organizationsx"));
    assert_null(args_find_resource("org-"));
}

static void test_every_resource_has_a_word(void **state)
{
    (void)state;
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        assert_ptr_equal(args_find_resource(def->name), def);
        assert_ptr_equal(args_find_resource(args_resource_short(def)), def);
    }
    assert_string_equal(args_resource_short(&model_organizations), "org");
    assert_string_equal(args_resource_short(&model_projects), "project");
    assert_string_equal(args_resource_short(&model_gpu_classes), "class");
    assert_string_equal(args_resource_short(&model_audit), "audit");
}

/* ---- flags ---- */

static const char *field_for(const struct resource_def *def, const char *flag)
{
    int idx = args_field_for_flag(def, flag);
    return idx < 0 ? NULL : def->fields[idx].name;
}

static void test_flag_to_field(void **state)
{
    (void)state;
    assert_string_equal(field_for(&model_organizations, "display-name"), "display_name");
    assert_string_equal(field_for(&model_organizations, "display_name"), "display_name");
    assert_string_equal(field_for(&model_organizations, "cost_center"), "cost_center");
    assert_string_equal(field_for(&model_organizations, "cost-center"), "cost_center");
    assert_string_equal(field_for(&model_organizations, "parent"), "parent_id");
    assert_string_equal(field_for(&model_organizations, "parent-id"), "parent_id");
    assert_string_equal(field_for(&model_organizations, "manager"), "manager_id");
    assert_string_equal(field_for(&model_projects, "org"), "org_id");
    assert_string_equal(field_for(&model_nodes, "cluster"), "cluster_id");
    assert_string_equal(field_for(&model_gpus, "gpu-class"), "gpu_class_id");
    assert_string_equal(field_for(&model_pools, "owner-org"), "owner_org_id");
    assert_string_equal(field_for(&model_pools, "owner_project"), "owner_project_id");
    assert_string_equal(field_for(&model_quotas, "project"), "project_id");
    assert_string_equal(field_for(&model_role_bindings, "user"), "user_id");
    assert_string_equal(field_for(&model_pools, "gpu-ids"), "gpu_ids");
    assert_string_equal(field_for(&model_pools, "gpus"), "gpu_ids");
    assert_string_equal(field_for(&model_pools, "access-projects"), "access_project_ids");
    assert_string_equal(field_for(&model_flavors, "pools"), "pool_ids");
    assert_string_equal(field_for(&model_gpus, "index"), "index");

    assert_null(field_for(&model_organizations, "display"));
    assert_null(field_for(&model_organizations, "display-name-x"));
    assert_null(field_for(&model_organizations, "name-"));
    assert_null(field_for(&model_organizations, ""));
    /* only references lose their _id */
    assert_null(field_for(&model_audit, "actor-"));
    assert_null(field_for(&model_pools, "gpu"));
    assert_null(field_for(&model_pools, "cost"));
}

static void test_flag_name(void **state)
{
    char *s = args_flag_name(&model_organizations.fields[F_ORGANIZATIONS_DISPLAY_NAME]);
    (void)state;
    assert_string_equal(s, "display-name");
    free(s);
}

/* ---- values ---- */

static const struct field_def *field(const struct resource_def *def, const char *name)
{
    int idx = model_field_index(def, name);
    assert_true(idx >= 0);
    return &def->fields[idx];
}

/* Converts and returns compact JSON text, or NULL with the error in *ret_rc. */
static char *conv(const struct field_def *f, const char *value, const struct resolver *r,
                  int *ret_rc, char *err, size_t err_size)
{
    json_t *j = NULL;
    char *s;
    int rc = args_convert(f, value, r, &j, err, err_size);

    if (ret_rc)
        *ret_rc = rc;
    if (rc < 0) {
        assert_null(j);
        return NULL;
    }
    s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

static void expect_json(const struct field_def *f, const char *value, const struct resolver *r,
                        const char *want)
{
    char err[256] = "";
    int rc;
    char *got = conv(f, value, r, &rc, err, sizeof(err));
    if (!got)
        fail_msg("converting '%s' for %s failed: %s", value, f->name, err);
    assert_string_equal(got, want);
    free(got);
}

static void expect_error(const struct field_def *f, const char *value, const struct resolver *r,
                         int want_rc, const char *want_err_part)
{
    char err[256] = "";
    int rc = 0;
    char *got = conv(f, value, r, &rc, err, sizeof(err));
    if (got)
        fail_msg("converting '%s' for %s gave %s, wanted an error", value, f->name, got);
    assert_int_equal(rc, want_rc);
    if (!strstr(err, want_err_part))
        fail_msg("error '%s' does not contain '%s'", err, want_err_part);
}

static void test_convert_int(void **state)
{
    const struct field_def *weight = field(&model_projects, "weight");
    const struct field_def *mem = field(&model_nodes, "memory_mib");
    const struct field_def *guaranteed = field(&model_quotas, "guaranteed_milli");
    (void)state;

    expect_json(weight, "1", NULL, "1");
    expect_json(weight, "1000", NULL, "1000");
    expect_json(mem, "1048576", NULL, "1048576");
    expect_json(guaranteed, "null", NULL, "null");
    expect_json(guaranteed, "", NULL, "null");
    expect_error(weight, "abc", NULL, ERR_INVALID, "'abc' is not an integer");
    expect_error(weight, "1.5", NULL, ERR_INVALID, "not an integer");
    expect_error(weight, "12abc", NULL, ERR_INVALID, "not an integer");
    expect_error(weight, " 1", NULL, ERR_INVALID, "not an integer");
    expect_error(weight, "", NULL, ERR_INVALID, "not an integer");
    expect_error(weight, "0", NULL, ERR_INVALID, "out of range (1 to 1000)");
    expect_error(weight, "1001", NULL, ERR_INVALID, "out of range");
    expect_error(weight, "99999999999999999999", NULL, ERR_INVALID, "out of range");
    expect_error(weight, "null", NULL, ERR_INVALID, "may not be null");
}

static void test_convert_bool(void **state)
{
    const struct field_def *disabled = field(&model_users, "disabled");
    static const char *const yes[] = {"true", "TRUE", "yes", "Yes", "1"};
    static const char *const no[] = {"false", "False", "no", "0"};
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(yes); i++)
        expect_json(disabled, yes[i], NULL, "true");
    for (size_t i = 0; i < ARRAY_SIZE(no); i++)
        expect_json(disabled, no[i], NULL, "false");
    expect_error(disabled, "maybe", NULL, ERR_INVALID, "'maybe' is not a boolean");
    expect_error(disabled, "2", NULL, ERR_INVALID, "not a boolean");
    expect_error(disabled, "", NULL, ERR_INVALID, "not a boolean");
}

static void test_convert_strings_enums_times(void **state)
{
    (void)state;
    expect_json(field(&model_organizations, "display_name"), "Acme \"Corp\"", NULL,
                "\"Acme \\\"Corp\\\"\"");
    expect_json(field(&model_organizations, "cost_center"), "", NULL, "\"\"");
    /* "null" is text for a field that may not be null */
    expect_json(field(&model_organizations, "cost_center"), "null", NULL, "\"null\"");
    expect_json(field(&model_nodes, "state"), "drain", NULL, "\"drain\"");
    expect_error(field(&model_nodes, "state"), "drained", NULL, ERR_INVALID,
                 "'drained' is not one of: ready drain down");
    expect_json(field(&model_tokens, "expires_at"), "2027-01-01T00:00:00Z", NULL,
                "\"2027-01-01T00:00:00Z\"");
    expect_json(field(&model_tokens, "expires_at"), "2027-01-01T02:00:00+02:00", NULL,
                "\"2027-01-01T02:00:00+02:00\"");
    expect_json(field(&model_tokens, "expires_at"), "null", NULL, "null");
    expect_error(field(&model_tokens, "expires_at"), "tomorrow", NULL, ERR_INVALID,
                 "not an RFC 3339 time");
    expect_error(field(&model_organizations, "display_name"), "\xff\xfe", NULL, ERR_INVALID,
                 "UTF-8");
}

static void test_convert_labels(void **state)
{
    const struct field_def *labels = field(&model_clusters, "labels");
    (void)state;

    expect_json(labels, "site=a,rack=b", NULL, "{\"site\":\"a\",\"rack\":\"b\"}");
    expect_json(labels, "k=", NULL, "{\"k\":\"\"}");
    expect_json(labels, "k=a=b", NULL, "{\"k\":\"a=b\"}");
    expect_json(labels, "", NULL, "{}");
    expect_json(labels, "{\"site\":\"a,b\"}", NULL, "{\"site\":\"a,b\"}");
    expect_error(labels, "site", NULL, ERR_INVALID, "key=value");
    expect_error(labels, "=a", NULL, ERR_INVALID, "key=value");
    expect_error(labels, "a=1,", NULL, ERR_INVALID, "key=value");
    expect_error(labels, "{\"site\":1}", NULL, ERR_INVALID, "string value");
    expect_error(labels, "{oops", NULL, ERR_INVALID, "not a JSON object");
    expect_error(labels, "null", NULL, ERR_INVALID, "may not be null");
}

/* A fake server: organizations acme=7 and beta=8; project "ml" is ambiguous. */
struct fake_ctx {
    int calls;
    char last[64];
};

static int fake_lookup(void *ctx, const struct resource_def *def, const char *name, int64_t *ret_id,
                       char *err, size_t err_size)
{
    struct fake_ctx *fc = ctx;

    fc->calls++;
    snprintf(fc->last, sizeof(fc->last), "%s:%s", def->name, name);
    if (def == &model_organizations && strcmp(name, "acme") == 0) {
        *ret_id = 7;
        return 0;
    }
    if (def == &model_organizations && strcmp(name, "beta") == 0) {
        *ret_id = 8;
        return 0;
    }
    if (def == &model_gpus && strcmp(name, "gpu-a") == 0) {
        *ret_id = 11;
        return 0;
    }
    if (def == &model_projects && strcmp(name, "ml") == 0) {
        snprintf(err, err_size, "project 'ml' is ambiguous; give its id");
        return ERR_CONFLICT;
    }
    snprintf(err, err_size, "no %s named '%s'", def->singular, name);
    return ERR_NOT_FOUND;
}

static void test_convert_refs(void **state)
{
    struct fake_ctx fc = {0};
    struct resolver r = {fake_lookup, &fc};
    const struct field_def *org = field(&model_projects, "org_id");
    const struct field_def *parent = field(&model_organizations, "parent_id");
    const struct field_def *owner_project = field(&model_pools, "owner_project_id");
    (void)state;

    expect_json(org, "42", &r, "42");
    assert_int_equal(fc.calls, 0); /* ids need no lookup */
    expect_json(org, "acme", &r, "7");
    assert_int_equal(fc.calls, 1);
    assert_string_equal(fc.last, "organizations:acme");
    expect_json(parent, "null", &r, "null");
    expect_json(parent, "", &r, "null");
    expect_error(org, "null", &r, ERR_INVALID, "may not be null");
    expect_error(org, "0", &r, ERR_INVALID, "not a valid id");
    expect_error(org, "12x", &r, ERR_INVALID, "not a valid id");
    expect_error(org, "nosuch", &r, ERR_NOT_FOUND, "no organization named 'nosuch'");
    expect_error(owner_project, "ml", &r, ERR_CONFLICT, "project 'ml' is ambiguous; give its id");
    /* without a resolver a name is a usage error */
    expect_error(org, "acme", NULL, ERR_INVALID, "'acme' is not an id");
}

static void test_convert_reflist(void **state)
{
    struct fake_ctx fc = {0};
    struct resolver r = {fake_lookup, &fc};
    const struct field_def *gpus = field(&model_pools, "gpu_ids");
    const struct field_def *orgs = field(&model_pools, "access_org_ids");
    (void)state;

    expect_json(gpus, "1,2,3", &r, "[1,2,3]");
    expect_json(gpus, "5", &r, "[5]");
    expect_json(gpus, "", &r, "[]");
    expect_json(gpus, "[4,5]", &r, "[4,5]");
    expect_json(gpus, "1,gpu-a", &r, "[1,11]");
    expect_json(orgs, "acme,beta", &r, "[7,8]");
    expect_error(gpus, "1,,2", &r, ERR_INVALID, "empty item");
    expect_error(gpus, "1,", &r, ERR_INVALID, "empty item");
    expect_error(gpus, "1,0", &r, ERR_INVALID, "not a valid id");
    expect_error(gpus, "[1,\"a\"]", &r, ERR_INVALID, "JSON array of ids");
    expect_error(orgs, "acme,zeta", &r, ERR_NOT_FOUND, "no organization named 'zeta'");
}

static void test_convert_json(void **state)
{
    const struct field_def f = {"x", NULL, FT_JSON, 0, 0, 0, NULL, NULL, 0, NULL, "test"};
    (void)state;
    expect_json(&f, "{\"a\":[1,2]}", NULL, "{\"a\":[1,2]}");
    expect_json(&f, "3", NULL, "3");
    expect_error(&f, "{", NULL, ERR_INVALID, "not JSON");
}

static void test_parse_bool(void **state)
{
    int v = -1;
    (void)state;
    assert_int_equal(args_parse_bool("yes", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(args_parse_bool("off", &v), 0);
    assert_int_equal(v, 0);
    v = -1;
    assert_int_equal(args_parse_bool("nope", &v), -1);
    assert_int_equal(v, -1);
}

/* ---- human quantities ---- */

static void test_units_parse(void **state)
{
    static const struct {
        enum units_kind kind;
        const char *text;
        int64_t want; /* -1: an error */
    } cases[] = {
        {UNITS_MILLI, "16", 16000},
        {UNITS_MILLI, "0.5", 500},
        {UNITS_MILLI, "0.125", 125},
        {UNITS_MILLI, "2.5000", 2500}, /* zeros past the precision change nothing */
        {UNITS_MILLI, "0.0001", -1},
        {UNITS_MILLI, "1e3", -1},
        {UNITS_MILLI, "-1", -1},
        {UNITS_MILLI, ".5", -1},
        {UNITS_MILLI, "5.", -1},
        {UNITS_MILLI, "", -1},
        {UNITS_MICROS, "1.80", 1800000},
        {UNITS_MICROS, "0.1", 100000}, /* exact: no binary fraction on the way */
        {UNITS_MICROS, "12", 12000000},
        {UNITS_MICROS, "0.0000001", -1},
        {UNITS_MICROS, "1,80", -1},
        {UNITS_MICROS, "99999999999999999999", -1},
        {UNITS_MIB, "512", 512},
        {UNITS_MIB, "512MiB", 512},
        {UNITS_MIB, "128GiB", 131072},
        {UNITS_MIB, "128gib", 131072},
        {UNITS_MIB, "1.5GiB", 1536},
        {UNITS_MIB, "1TiB", 1048576},
        {UNITS_MIB, "1.5MiB", -1},
        {UNITS_MIB, "128GB", -1},
        {UNITS_MIB, "GiB", -1},
    };
    char err[256];
    (void)state;

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int64_t v = -1;
        int rc = units_parse(cases[i].kind, cases[i].text, INT64_C(1) << 40, &v, err, sizeof(err));
        if (cases[i].want < 0) {
            if (rc == 0)
                fail_msg("'%s' parsed as %" PRId64 ", want an error", cases[i].text, v);
            assert_true(strstr(err, cases[i].text) != NULL);
        } else {
            if (rc != 0)
                fail_msg("'%s': %s", cases[i].text, err);
            assert_int_equal(v, cases[i].want);
        }
    }
    assert_int_equal(units_parse(UNITS_MILLI, "17", 16000, &(int64_t){0}, err, sizeof(err)), -1);
    assert_string_equal(err, "'17' is too large");
    assert_int_equal(units_of_field("guaranteed_milli"), UNITS_MILLI);
    assert_int_equal(units_of_field("memory_mib"), UNITS_MIB);
    assert_int_equal(units_of_field("price_per_hour_micros"), UNITS_MICROS);
    assert_int_equal(units_of_field("milli"), UNITS_NONE);
    assert_int_equal(args_field_for_unit_flag(&model_flavors, "memory"), F_FLAVORS_MEMORY_MIB);
    assert_int_equal(args_field_for_unit_flag(&model_pools, "cost-per-gpu-hour"),
                     F_POOLS_COST_PER_GPU_HOUR_MICROS);
    assert_int_equal(args_field_for_unit_flag(&model_quotas, "guaranteed"),
                     F_QUOTAS_GUARANTEED_MILLI);
    assert_int_equal(args_field_for_unit_flag(&model_quotas, "project"), -1);
    {
        char *s = units_format_mib(81920);
        assert_string_equal(s, "80 GiB");
        free(s);
        s = units_format_mib(1536);
        assert_string_equal(s, "1536 MiB");
        free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resource_aliases),
        cmocka_unit_test(test_every_resource_has_a_word),
        cmocka_unit_test(test_flag_to_field),
        cmocka_unit_test(test_flag_name),
        cmocka_unit_test(test_convert_int),
        cmocka_unit_test(test_convert_bool),
        cmocka_unit_test(test_convert_strings_enums_times),
        cmocka_unit_test(test_convert_labels),
        cmocka_unit_test(test_convert_refs),
        cmocka_unit_test(test_convert_reflist),
        cmocka_unit_test(test_convert_json),
        cmocka_unit_test(test_parse_bool),
        cmocka_unit_test(test_units_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
