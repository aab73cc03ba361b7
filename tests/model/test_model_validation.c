/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of src/model: decoding JSON into rows with precise errors,
 * defaults, cross-field rules, merging updates and encoding rows.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>

#include "model/model.h"

/* Decodes text as def in mode; returns the error code and fills ei and row. */
static int decode(const struct resource_def *def, const char *text, enum decode_mode mode,
                  struct arena *a, struct row *row, struct error_info *ei)
{
    json_t *j = json_loads(text, 0, NULL);
    int rc;
    assert_non_null(j);
    memset(ei, 0, sizeof(*ei));
    rc = model_decode(def, j, mode, a, row, ei);
    json_decref(j);
    return rc;
}

static void expect_invalid(const struct resource_def *def, const char *text, enum decode_mode mode,
                           const char *field, const char *msg_part)
{
    struct arena a;
    struct row row;
    struct error_info ei;
    arena_init(&a);
    assert_int_equal(decode(def, text, mode, &a, &row, &ei), ERR_INVALID);
    assert_string_equal(ei.field, field);
    if (!strstr(ei.message, msg_part))
        fail_msg("message '%s' lacks '%s'", ei.message, msg_part);
    arena_release(&a);
}

static void test_create_fills_defaults(void **state)
{
    struct arena a;
    struct row row;
    struct error_info ei;
    (void)state;
    arena_init(&a);
    assert_int_equal(decode(&model_projects, "{\"org_id\":3,\"name\":\"vision\"}", DECODE_CREATE,
                            &a, &row, &ei),
                     0);
    assert_int_equal(row_int(&row, F_PROJECTS_ORG_ID), 3);
    assert_string_equal(row_get(&row, F_PROJECTS_NAME)->s, "vision");
    assert_int_equal(row_int(&row, F_PROJECTS_WEIGHT), 1);
    assert_string_equal(row_get(&row, F_PROJECTS_DESCRIPTION)->s, "");
    assert_false(row_get(&row, F_PROJECTS_ID)->set); /* read-only: left to the server */
    assert_int_equal(
        decode(&model_nodes, "{\"cluster_id\":1,\"name\":\"n1\"}", DECODE_CREATE, &a, &row, &ei),
        0);
    assert_string_equal(row_get(&row, F_NODES_STATE)->s, "ready");
    assert_string_equal(row_get(&row, F_NODES_LABELS)->s, "{}");
    arena_release(&a);
}

static void test_field_errors_name_the_field(void **state)
{
    (void)state;
    expect_invalid(&model_projects, "{\"name\":\"x\"}", DECODE_CREATE, "org_id", "required");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"x\",\"colour\":1}", DECODE_CREATE,
                   "colour", "unknown field 'colour'");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"x\",\"id\":5}", DECODE_CREATE, "id",
                   "read-only");
    expect_invalid(&model_projects, "{\"org_id\":\"1\",\"name\":\"x\"}", DECODE_CREATE, "org_id",
                   "must be an integer, not a string");
    expect_invalid(&model_projects, "{\"org_id\":0,\"name\":\"x\"}", DECODE_CREATE, "org_id",
                   "positive id");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"Vision\"}", DECODE_CREATE, "name",
                   "lower-case");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"-x\"}", DECODE_CREATE, "name",
                   "lower-case");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"x\",\"weight\":0}", DECODE_CREATE,
                   "weight", "between 1 and 1000");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":\"x\",\"weight\":1.5}", DECODE_CREATE,
                   "weight", "fraction");
    expect_invalid(&model_projects, "{\"org_id\":1,\"name\":null}", DECODE_CREATE, "name",
                   "may not be null");
    expect_invalid(&model_projects, "{\"org_id\":2}", DECODE_UPDATE, "org_id",
                   "cannot be changed");
    expect_invalid(&model_nodes, "{\"cluster_id\":1,\"name\":\"n\",\"state\":\"broken\"}",
                   DECODE_CREATE, "state", "unknown value 'broken'");
    expect_invalid(&model_nodes, "{\"cluster_id\":1,\"name\":\"n\",\"labels\":{\"a\":1}}",
                   DECODE_CREATE, "labels", "must be a string");
    expect_invalid(&model_nodes, "{\"cluster_id\":1,\"name\":\"n\",\"labels\":[]}", DECODE_CREATE,
                   "labels", "must be an object");
    expect_invalid(&model_pools, "{\"name\":\"p\",\"gpu_ids\":[1,-2]}", DECODE_CREATE, "gpu_ids",
                   "positive ids");
    expect_invalid(&model_tokens, "{\"expires_at\":\"tomorrow\"}", DECODE_CREATE, "expires_at",
                   "RFC 3339");
    expect_invalid(&model_organizations, "{\"name\":\"a\",\"cost_center\":\"x\\u0001\"}",
                   DECODE_CREATE, "cost_center", "control characters");
}

static void test_string_length_limits(void **state)
{
    char body[400];
    char name[70];
    (void)state;
    memset(name, 'a', 64);
    name[64] = '\0';
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
    expect_invalid(&model_organizations, body, DECODE_CREATE, "name", "longer than 63");
    name[63] = '\0';
    snprintf(body, sizeof(body), "{\"name\":\"%s\"}", name);
    {
        struct arena a;
        struct row row;
        struct error_info ei;
        arena_init(&a);
        assert_int_equal(decode(&model_organizations, body, DECODE_CREATE, &a, &row, &ei), 0);
        arena_release(&a);
    }
    expect_invalid(&model_pools, "{\"name\":\"p\",\"currency\":\"EURO\"}", DECODE_CREATE,
                   "currency", "longer than 3");
}

static int check(const struct resource_def *def, const char *text, struct error_info *ei)
{
    struct arena a;
    struct row row;
    int rc;
    arena_init(&a);
    assert_int_equal(decode(def, text, DECODE_CREATE, &a, &row, ei), 0);
    rc = model_check_row(def, &row, ei);
    arena_release(&a);
    return rc;
}

static void test_cross_field_rules(void **state)
{
    struct error_info ei;
    (void)state;
    assert_int_equal(check(&model_role_bindings, "{\"user_id\":1,\"role\":\"admin\"}", &ei), 0);
    assert_int_equal(
        check(&model_role_bindings, "{\"user_id\":1,\"role\":\"admin\",\"org_id\":1}", &ei),
        ERR_INVALID);
    assert_string_equal(ei.field, "role");
    assert_int_equal(check(&model_role_bindings,
                           "{\"user_id\":1,\"role\":\"org-admin\",\"project_id\":1}", &ei),
                     ERR_INVALID);
    assert_string_equal(ei.field, "org_id");
    assert_int_equal(check(&model_role_bindings,
                           "{\"user_id\":1,\"role\":\"member\",\"org_id\":1,\"project_id\":2}",
                           &ei),
                     ERR_INVALID);
    assert_int_equal(check(&model_role_bindings, "{\"user_id\":1,\"role\":\"viewer\"}", &ei),
                     ERR_INVALID);
    assert_int_equal(
        check(&model_role_bindings, "{\"user_id\":1,\"role\":\"viewer\",\"project_id\":4}", &ei),
        0);

    assert_int_equal(check(&model_pools, "{\"name\":\"p\"}", &ei), ERR_INVALID);
    assert_string_equal(ei.field, "owner_org_id");
    assert_int_equal(
        check(&model_pools, "{\"name\":\"p\",\"owner_org_id\":1,\"owner_project_id\":2}", &ei),
        ERR_INVALID);
    assert_int_equal(check(&model_pools, "{\"name\":\"p\",\"owner_project_id\":2}", &ei), 0);
    assert_int_equal(
        check(&model_pools, "{\"name\":\"p\",\"owner_project_id\":2,\"currency\":\"usd\"}", &ei),
        ERR_INVALID);
    assert_string_equal(ei.field, "currency");

    assert_int_equal(check(&model_flavors, "{\"name\":\"cpu.small\",\"vcpus\":2}", &ei), 0);
    assert_int_equal(check(&model_flavors, "{\"name\":\"f\",\"gpu_milli\":1000}", &ei),
                     ERR_INVALID);
    assert_string_equal(ei.field, "gpu_class_id");
    assert_int_equal(
        check(&model_flavors, "{\"name\":\"f\",\"gpu_class_id\":1,\"gpu_milli\":1500}", &ei),
        ERR_INVALID);
    assert_string_equal(ei.field, "gpu_milli");
    assert_int_equal(
        check(&model_flavors, "{\"name\":\"f\",\"gpu_class_id\":1,\"gpu_milli\":500}", &ei), 0);
    assert_int_equal(
        check(&model_flavors, "{\"name\":\"f\",\"gpu_class_id\":1,\"gpu_milli\":8000}", &ei), 0);

    assert_int_equal(check(&model_quotas,
                           "{\"project_id\":1,\"gpu_class_id\":1,\"guaranteed_milli\":9000,"
                           "\"limit_milli\":8000}",
                           &ei),
                     ERR_INVALID);
    assert_string_equal(ei.field, "guaranteed_milli");
    assert_int_equal(check(&model_quotas,
                           "{\"project_id\":1,\"gpu_class_id\":1,\"guaranteed_milli\":9000}", &ei),
                     0);
}

static void test_merge_and_encode(void **state)
{
    struct arena a;
    struct row base, patch;
    struct error_info ei;
    json_t *out;
    (void)state;
    arena_init(&a);
    assert_int_equal(decode(&model_tokens, "{\"name\":\"ci\"}", DECODE_CREATE, &a, &base, &ei), 0);
    row_set_int(&base, 0, 9);
    row_set_str(&base, &a, F_TOKENS_HASH, "deadbeef");
    row_set_int(&base, F_TOKENS_CREATED_AT, 1796053787);
    assert_int_equal(decode(&model_tokens, "{\"name\":\"renamed\"}", DECODE_UPDATE, &a, &patch,
                            &ei),
                     0);
    model_merge(&model_tokens, &base, &patch);
    out = model_encode(&model_tokens, &base);
    assert_string_equal(json_string_value(json_object_get(out, "name")), "renamed");
    assert_int_equal(json_integer_value(json_object_get(out, "id")), 9);
    assert_null(json_object_get(out, "hash")); /* secret: never encoded */
    assert_string_equal(json_string_value(json_object_get(out, "created_at")),
                        "2026-11-30T15:49:47Z");
    assert_true(json_is_null(json_object_get(out, "expires_at")));
    json_decref(out);
    arena_release(&a);
}

/* A field a scope reads holds an id: the row's own (index 0) or a reference. */
static void check_scope_field(const struct resource_def *def, int f, const char *what)
{
    if (f < 0 || (size_t)f >= def->n_fields ||
        (f > 0 && def->fields[f].type != FT_REF && def->fields[f].type != FT_INT))
        fail_msg("%s: its %s (field %d) is not an id", def->name, what, f);
}

/* The fields each scope kind reads (model.h) are ids; the ones it does not read are unset. */
static void check_scope_fields(const struct resource_def *def)
{
    bool two = def->scope == SCOPE_OWNER || def->scope == SCOPE_BINDING ||
               def->scope == SCOPE_PROJECT_OR_ORG;
    if (def->scope != SCOPE_GLOBAL)
        check_scope_field(def, def->scope_field, "scope field");
    if (two) {
        check_scope_field(def, def->scope_org_field, "organization scope field");
        assert_true(def->scope_org_field > 0 && def->scope_field > 0);
    } else {
        assert_int_equal(def->scope_org_field, 0);
    }
    if (def->scope == SCOPE_BINDING)
        assert_true(def->scope_user_field > 0);
    else
        assert_int_equal(def->scope_user_field, 0);
    if (def->create_scope_field)
        assert_int_equal(def->fields[def->create_scope_field].type, FT_REF);
}

static void test_every_resource_is_consistent(void **state)
{
    (void)state;
    for (size_t i = 0; i < model_n_resources; i++) {
        const struct resource_def *def = model_resources[i];
        assert_string_equal(def->fields[0].name, "id");
        assert_ptr_equal(model_find(def->name), def);
        for (size_t k = 0; k < def->n_fields; k++) {
            const struct field_def *f = &def->fields[k];
            if (f->type == FT_REF || f->type == FT_REFLIST) {
                if (!model_find(f->ref))
                    fail_msg("%s.%s refers to unknown resource '%s'", def->name, f->name, f->ref);
            }
            if (f->type == FT_ENUM)
                assert_non_null(f->enum_values);
            assert_non_null(f->help);
        }
        check_scope_fields(def);
    }
    assert_null(model_find("nope"));
}

static void test_name_and_ident_syntax(void **state)
{
    (void)state;
    assert_true(model_valid_name("h100.1x", 63));
    assert_true(model_valid_name("ml_research-2", 63));
    assert_false(model_valid_name("", 63));
    assert_false(model_valid_name("A", 63));
    assert_false(model_valid_name("a b", 63));
    assert_false(model_valid_name(".a", 63));
    assert_true(model_valid_ident("GPU-6f1b2c3d-aaaa-bbbb-cccc-000000000000", 128));
    assert_true(model_valid_ident("h100-80gb/1g.10gb", 63));
    assert_true(model_valid_ident("openb-node-0001", 128));
    assert_false(model_valid_ident("/x", 128));
    assert_false(model_valid_ident("a;b", 128));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_fills_defaults),
        cmocka_unit_test(test_field_errors_name_the_field),
        cmocka_unit_test(test_string_length_limits),
        cmocka_unit_test(test_cross_field_rules),
        cmocka_unit_test(test_merge_and_encode),
        cmocka_unit_test(test_every_resource_is_consistent),
        cmocka_unit_test(test_name_and_ident_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
