/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the typed fields of src/model: the F_ indices generated from
 * fields.h name, for every resource, the field its table holds at that index
 * (so the lists and the tables cannot drift apart), every resource is listed,
 * and the row accessors read and write what they say.
 */
#include "base/common.h"

#include <ctype.h>
#include <setjmp.h>
#include <cmocka.h>

#include "model/model.h"

struct listed_field {
    int index;
    const char *upper; /* the F_ name's field part, e.g. "PROJECT_ID" */
};

struct listed_resource {
    const struct resource_def *def;
    const char *prefix;
    const struct listed_field *fields;
    size_t n_fields;
    int count; /* F_<PREFIX>_COUNT_ */
};

#define FIELD_ENTRY_(R, F) {F_##R##_##F, #F},
#define RESOURCE_FIELDS_(R, name)                                                                  \
    static const struct listed_field name##_listed[] = {MODEL_##R##_FIELDS(FIELD_ENTRY_, R)};
MODEL_RESOURCES(RESOURCE_FIELDS_)
#define RESOURCE_ENTRY_(R, name)                                                                   \
    {&model_##name, #R, name##_listed, ARRAY_SIZE(name##_listed), F_##R##_COUNT_},
static const struct listed_resource listed[] = {MODEL_RESOURCES(RESOURCE_ENTRY_)};

static void lower(const char *s, char *out, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

/* Every F_ index names the field its resource's table holds there, and no field is unlisted. */
static void test_indices_name_the_table_fields(void **state)
{
    (void)state;
    for (size_t r = 0; r < ARRAY_SIZE(listed); r++) {
        const struct listed_resource *lr = &listed[r];
        assert_int_equal(lr->count, (int)lr->n_fields);
        if (lr->def->n_fields != lr->n_fields)
            fail_msg("%s has %zu fields, fields.h lists %zu", lr->def->name, lr->def->n_fields,
                     lr->n_fields);
        assert_true(lr->n_fields <= MODEL_MAX_FIELDS);
        for (size_t i = 0; i < lr->n_fields; i++) {
            char want[64];
            const char *have = lr->def->fields[i].name;
            lower(lr->fields[i].upper, want, sizeof(want));
            assert_int_equal(lr->fields[i].index, (int)i);
            if (!have || strcmp(have, want) != 0)
                fail_msg("F_%s_%s is index %zu, where %s has field '%s'", lr->prefix,
                         lr->fields[i].upper, i, lr->def->name, have ? have : "(none)");
        }
    }
}

/* fields.h lists every resource of model_resources, once. */
static void test_every_resource_is_listed(void **state)
{
    (void)state;
    assert_int_equal(ARRAY_SIZE(listed), model_n_resources);
    for (size_t i = 0; i < model_n_resources; i++) {
        int seen = 0;
        for (size_t r = 0; r < ARRAY_SIZE(listed); r++)
            seen += listed[r].def == model_resources[i];
        if (seen != 1)
            fail_msg("resource %s is listed %d times in fields.h", model_resources[i]->name, seen);
    }
}

/* The shapes the rest of the code relies on: field 0 is the id everywhere. */
static void test_id_is_field_zero(void **state)
{
    (void)state;
    assert_int_equal(F_WORKLOADS_ID, 0);
    assert_int_equal(F_INVENTORY_ITEMS_ID, 0);
    for (size_t r = 0; r < ARRAY_SIZE(listed); r++)
        assert_string_equal(listed[r].fields[0].upper, "ID");
}

static void test_row_accessors(void **state)
{
    struct arena a;
    struct row r;
    char text[] = "queued";
    (void)state;
    arena_init(&a);
    r = model_row_new(&model_workloads, &a);
    assert_false(row_get(&r, F_WORKLOADS_STATE)->set);
    assert_string_equal(row_str(&r, F_WORKLOADS_STATE), ""); /* unset: "", never NULL */

    row_set_str(&r, &a, F_WORKLOADS_STATE, text);
    text[0] = 'X'; /* the row holds a copy */
    assert_string_equal(row_str(&r, F_WORKLOADS_STATE), "queued");
    assert_true(row_get(&r, F_WORKLOADS_STATE)->set);
    assert_false(row_is_null(&r, F_WORKLOADS_STATE));

    row_set_int(&r, F_WORKLOADS_REPLICAS, 4);
    assert_int_equal(row_int(&r, F_WORKLOADS_REPLICAS), 4);
    assert_int_equal(r.v[F_WORKLOADS_REPLICAS].i, 4); /* plain indexing, in table order */
    assert_string_equal(model_workloads.fields[F_WORKLOADS_REPLICAS].name, "replicas");

    row_set_null(&r, F_WORKLOADS_EXIT_CODE);
    assert_true(row_is_null(&r, F_WORKLOADS_EXIT_CODE));
    assert_int_equal(row_int(&r, F_WORKLOADS_EXIT_CODE), 0);
    row_set_str(&r, &a, F_WORKLOADS_REASON, NULL); /* NULL text is null */
    assert_true(row_is_null(&r, F_WORKLOADS_REASON));
    assert_string_equal(row_str(&r, F_WORKLOADS_REASON), "");
    assert_null(row_get(&r, F_WORKLOADS_REASON)->s);
    arena_release(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_indices_name_the_table_fields),
        cmocka_unit_test(test_every_resource_is_listed),
        cmocka_unit_test(test_id_is_field_zero),
        cmocka_unit_test(test_row_accessors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
