/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of the simulated fleet (src/engine/simfleet.c): the Alibaba trace's
 * node lists, the JSON format, clear errors for malformed files, and the
 * import into a fresh SQLite store: the right rows and audit entries, a
 * second import that changes nothing, and a failed one that leaves nothing.
 */
#include "base/common.h"

#include <dirent.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include "engine/simfleet.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "store/store.h"

#define TRACE_DIR GPUAAS_DATA_DIR "/alibaba-gpu-v2023"
#define TRACE_GPU_NODES TRACE_DIR "/openb_node_list_gpu_node.csv"
#define TRACE_ALL_NODES TRACE_DIR "/openb_node_list_all_node.csv"

static char *tmp_dir;

static int make_tmp(void **state)
{
    const char *tmp = getenv("TMPDIR");
    (void)state;
    tmp_dir = xasprintf("%s/gpuaas-simfleet-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_dir))
        return -1;
    return 0;
}

static int remove_tmp(void **state)
{
    DIR *d = opendir(tmp_dir);
    struct dirent *e;
    (void)state;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char *p = xasprintf("%s/%s", tmp_dir, e->d_name);
            unlink(p);
            free(p);
        }
    }
    if (d)
        closedir(d);
    rmdir(tmp_dir);
    free(tmp_dir);
    return 0;
}

/* Writes text to a file in the temp dir; the caller frees the path. */
static char *write_file(const char *name, const char *text)
{
    char *path = xasprintf("%s/%s", tmp_dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, strlen(text), fp), strlen(text));
    assert_int_equal(fclose(fp), 0);
    return path;
}

static struct simfleet *load_ok(const char *path)
{
    struct simfleet *f = NULL;
    struct error_info ei = {0};
    int rc = simfleet_load(path, &f, &ei);
    if (rc != 0)
        fail_msg("simfleet_load(%s): %d %s", path, rc, ei.message);
    assert_non_null(f);
    return f;
}

static struct simfleet *load_text_ok(const char *name, const char *text)
{
    char *path = write_file(name, text);
    struct simfleet *f = load_ok(path);
    free(path);
    return f;
}

/* Loading must fail with err and a message containing each of the fragments. */
static void load_fails(const char *name, const char *text, int err, const char *frag1,
                       const char *frag2)
{
    char *path = write_file(name, text);
    struct simfleet *f = (struct simfleet *)0x1;
    struct error_info ei = {0};
    int rc = simfleet_load(path, &f, &ei);
    if (rc != err)
        fail_msg("%s: expected %d, got %d (%s)", name, err, rc, ei.message);
    assert_ptr_equal(f, (struct simfleet *)0x1); /* untouched */
    assert_int_equal(ei.code, err);
    if (!strstr(ei.message, path) || (frag1 && !strstr(ei.message, frag1)) ||
        (frag2 && !strstr(ei.message, frag2)))
        fail_msg("%s: message '%s' lacks '%s' / '%s' / the path", name, ei.message,
                 frag1 ? frag1 : "", frag2 ? frag2 : "");
    free(path);
}

/* ---- GPU classes ---- */

static void test_gpu_class_names(void **state)
{
    static const char *const cases[][2] = {
        {"P100", "p100"},
        {"V100M16", "v100m16"},
        {"A100-SXM4-80GB", "a100-sxm4-80gb"},
        {"H100", "h100"},
        {"G2", "g2"},
        {"Tesla T4", "tesla-t4"},
        {"  NVIDIA  H100 (80GB) ", "nvidia-h100-80gb"},
        {"a100_40gb", "a100-40gb"},
    };
    char out[SIMFLEET_CLASS_MAX + 1], small[4];
    char long_model[100];
    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        assert_int_equal(simfleet_gpu_class(cases[i][0], out, sizeof(out)), 0);
        assert_string_equal(out, cases[i][1]);
    }
    assert_int_equal(simfleet_gpu_class("", out, sizeof(out)), ERR_INVALID);
    assert_int_equal(simfleet_gpu_class("--- ()", out, sizeof(out)), ERR_INVALID);
    /* The output buffer bounds the name too. */
    assert_int_equal(simfleet_gpu_class("H100", small, sizeof(small)), ERR_INVALID);
    assert_int_equal(simfleet_gpu_class("T-4", small, sizeof(small)), 0);
    assert_string_equal(small, "t-4");
    memset(long_model, 'A', sizeof(long_model) - 1);
    long_model[sizeof(long_model) - 1] = '\0';
    assert_int_equal(simfleet_gpu_class(long_model, out, sizeof(out)), ERR_INVALID);
    long_model[SIMFLEET_CLASS_MAX] = '\0';
    assert_int_equal(simfleet_gpu_class(long_model, out, sizeof(out)), 0);
    assert_int_equal(strlen(out), SIMFLEET_CLASS_MAX);
}

/* ---- the trace ---- */

static void test_trace_gpu_node_list(void **state)
{
    struct simfleet *f;
    int64_t gpus = 0;
    (void)state;
    /* The shared data must be there: a missing file fails this test. */
    f = load_ok(TRACE_GPU_NODES);
    assert_int_equal(f->n_nodes, 1213);
    assert_int_equal(f->n_gpus, 6212);
    for (size_t i = 0; i < f->n_nodes; i++) {
        assert_true(f->nodes[i].n_gpus > 0);
        gpus += f->nodes[i].n_gpus;
    }
    assert_int_equal(gpus, 6212);
    assert_string_equal(f->nodes[0].name, "openb-node-0000");
    assert_int_equal(f->nodes[0].cpu_milli, 64000);
    assert_int_equal(f->nodes[0].memory_mib, 262144);
    assert_int_equal(f->nodes[0].n_gpus, 2);
    assert_string_equal(f->nodes[0].model, "P100");
    assert_string_equal(f->nodes[0].gpu_class, "p100");
    assert_int_equal(f->nodes[0].line, 2);
    assert_int_equal(f->nodes[0].n_labels, 0);
    simfleet_free(f);
}

static void test_trace_all_node_list(void **state)
{
    struct simfleet *f;
    size_t without = 0;
    (void)state;
    f = load_ok(TRACE_ALL_NODES);
    assert_int_equal(f->n_nodes, 1523);
    assert_int_equal(f->n_gpus, 6212);
    for (size_t i = 0; i < f->n_nodes; i++) {
        if (f->nodes[i].n_gpus == 0) {
            without++;
            assert_string_equal(f->nodes[i].model, "");
            assert_string_equal(f->nodes[i].gpu_class, "");
        }
    }
    assert_int_equal(without, 310);
    simfleet_free(f);
}

static void test_csv_variants(void **state)
{
    struct simfleet *f;
    (void)state;
    /* Columns in another order, an extra one, CRLF, a BOM, blank lines, spaces. */
    f = load_text_ok("variants.csv", "\xef\xbb\xbfmodel,gpu,sn,extra,memory_mib,cpu_milli\r\n"
                                     "\r\n"
                                     "A100-SXM4-80GB, 8 ,gpu-a,x,1048576,128000\r\n"
                                     ",0,cpu-a,,65536,32000\r\n"
                                     "\n");
    assert_int_equal(f->n_nodes, 2);
    assert_int_equal(f->n_gpus, 8);
    assert_string_equal(f->nodes[0].name, "gpu-a");
    assert_string_equal(f->nodes[0].gpu_class, "a100-sxm4-80gb");
    assert_string_equal(f->nodes[0].model, "A100-SXM4-80GB");
    assert_int_equal(f->nodes[0].line, 3);
    assert_int_equal(f->nodes[0].memory_mib, 1048576);
    assert_int_equal(f->nodes[1].n_gpus, 0);
    assert_int_equal(f->nodes[1].cpu_milli, 32000);
    simfleet_free(f);
    simfleet_free(NULL);
}

/* ---- JSON ---- */

static void test_json_count_and_labels(void **state)
{
    struct simfleet *f;
    (void)state;
    f = load_text_ok("fleet.json",
                     "{\"nodes\": [\n"
                     "  {\"name\": \"h\", \"cpu_milli\": 64000, \"memory_mib\": 262144,\n"
                     "   \"gpus\": 8, \"model\": \"H100\", \"labels\": {\"rack\": \"r1\",\n"
                     "   \"zone\": \"a\"}, \"count\": 4},\n"
                     "  {\"name\": \"single\", \"cpu_milli\": 8000, \"memory_mib\": 32768,\n"
                     "   \"gpus\": 1, \"model\": \"A10\"},\n"
                     "  {\"name\": \"cpu\", \"cpu_milli\": 96000, \"memory_mib\": 393216,\n"
                     "   \"gpus\": 0, \"count\": 1}\n"
                     "]}\n");
    assert_int_equal(f->n_nodes, 6);
    assert_int_equal(f->n_gpus, 33);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof(name), "h-%d", i);
        assert_string_equal(f->nodes[i].name, name);
        assert_int_equal(f->nodes[i].n_gpus, 8);
        assert_string_equal(f->nodes[i].gpu_class, "h100");
        assert_int_equal(f->nodes[i].n_labels, 2);
        assert_string_equal(f->nodes[i].labels[0].key, "rack");
        assert_string_equal(f->nodes[i].labels[0].value, "r1");
        assert_string_equal(f->nodes[i].labels[1].key, "zone");
        assert_int_equal(f->nodes[i].line, 1);
    }
    assert_string_equal(f->nodes[4].name, "single");
    assert_string_equal(f->nodes[4].gpu_class, "a10");
    assert_int_equal(f->nodes[4].n_labels, 0);
    assert_string_equal(f->nodes[5].name, "cpu-0");
    assert_int_equal(f->nodes[5].n_gpus, 0);
    simfleet_free(f);
}

/* ---- malformed input ---- */

#define HDR "sn,cpu_milli,memory_mib,gpu,model\n"

static void test_csv_errors(void **state)
{
    char *long_line;
    (void)state;
    load_fails("bad-number.csv", HDR "n1,64000,262144,2,P100\nn2,64000,262144,abc,P100\n",
               ERR_INVALID, "line 3: gpu must be a whole number, not 'abc'", NULL);
    load_fails("bad-cpu.csv", HDR "n1,6.4,262144,2,P100\n", ERR_INVALID,
               "line 2: cpu_milli must be a whole number, not '6.4'", NULL);
    load_fails("negative.csv", HDR "n1,64000,-1,2,P100\n", ERR_INVALID,
               "line 2: memory_mib must be between 0 and", NULL);
    load_fails("too-many-gpus.csv", HDR "n1,64000,262144,2,P100\n\nn2,64000,262144,65,P100\n",
               ERR_INVALID, "line 4: gpu must be between 0 and 64, not '65'", NULL);
    load_fails("missing-column.csv", "sn,cpu_milli,memory_mib,model\nn1,1,1,P100\n", ERR_INVALID,
               "line 1: missing column 'gpu'", NULL);
    load_fails("twice.csv", "sn,cpu_milli,memory_mib,gpu,model,gpu\n", ERR_INVALID,
               "line 1: column 'gpu' appears twice", NULL);
    load_fails("short-row.csv", HDR "n1,64000,262144,2\n", ERR_INVALID,
               "line 2: expected 5 fields as in the header, found 4", NULL);
    load_fails("long-row.csv", HDR "n1,64000,262144,2,P100,x\n", ERR_INVALID,
               "line 2: expected 5 fields", NULL);
    load_fails("no-model.csv", HDR "n1,64000,262144,2,\n", ERR_INVALID,
               "line 2: model is required for a node with GPUs", NULL);
    load_fails("bad-model.csv", HDR "n1,64000,262144,2,--\n", ERR_INVALID,
               "line 2: model '--' does not give a GPU class name", NULL);
    load_fails("bad-name.csv", HDR "n 1,64000,262144,2,P100\n", ERR_INVALID,
               "line 2: sn 'n 1' is not a valid node name", NULL);
    load_fails("empty-name.csv", HDR ",64000,262144,2,P100\n", ERR_INVALID,
               "line 2: sn '' is not a valid node name", NULL);
    load_fails("quoted.csv", HDR "\"n1\",64000,262144,2,P100\n", ERR_INVALID,
               "line 2: quoted fields are not supported", NULL);
    load_fails("dup.csv", HDR "n1,1,1,1,T4\nn2,1,1,1,T4\nn1,1,1,1,T4\n", ERR_INVALID,
               "line 4: node 'n1' is described twice (first on line 2)", NULL);
    load_fails("empty.csv", "", ERR_INVALID, "no header line", NULL);
    load_fails("header-only.csv", HDR, ERR_INVALID, "describes no nodes", NULL);
    long_line = xcalloc(5001, 1);
    memcpy(long_line, HDR, strlen(HDR));
    memset(long_line + strlen(HDR), 'x', 5000 - strlen(HDR));
    load_fails("long-line.csv", long_line, ERR_TOO_LARGE, "line 2: line is longer than 4096", NULL);
    free(long_line);
    load_fails("fleet.txt", "whatever", ERR_INVALID, "expected a .csv or .json file", NULL);
    {
        struct simfleet *f = NULL;
        struct error_info ei = {0};
        assert_int_equal(simfleet_load("/nonexistent/dir/x.csv", &f, &ei), ERR_IO);
        assert_null(f);
        assert_non_null(strstr(ei.message, "'/nonexistent/dir/x.csv': could not open"));
    }
}

static void test_csv_node_limit(void **state)
{
    struct buf b;
    (void)state;
    /* One node over the limit: refused as too large, nothing kept. */
    buf_init(&b, 8 << 20);
    assert_int_equal(buf_puts(&b, HDR), 0);
    for (int i = 0; i <= SIMFLEET_MAX_NODES; i++)
        assert_int_equal(buf_printf(&b, "n%d,1,1,0,\n", i), 0);
    load_fails("too-many.csv", b.data, ERR_TOO_LARGE, "line 100002: more than 100000 nodes", NULL);
    buf_release(&b);
}

static void test_json_errors(void **state)
{
    (void)state;
    load_fails("syntax.json", "{\"nodes\": [\n  {\"name\": \"a\",,}\n]}\n", ERR_BAD_JSON, "line 2",
               NULL);
    load_fails("not-object.json", "[1]", ERR_INVALID, "must hold a JSON object, not an array",
               NULL);
    load_fails("no-nodes.json", "{}", ERR_INVALID, "\"nodes\" must be an array", NULL);
    load_fails("nodes-object.json", "{\"nodes\": {}}", ERR_INVALID,
               "\"nodes\" must be an array of nodes, not an object", NULL);
    load_fails("extra.json", "{\"nodes\": [], \"cluster\": 1}", ERR_INVALID,
               "unknown member 'cluster'", NULL);
    load_fails("empty.json", "{\"nodes\": []}", ERR_INVALID, "describes no nodes", NULL);
    load_fails("gpus-string.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":1,"
               "\"model\":\"T4\"}, {\"name\":\"b\",\"cpu_milli\":1,\"memory_mib\":1,"
               "\"gpus\":\"8\",\"model\":\"T4\"}]}",
               ERR_INVALID, "nodes[1]: gpus must be a whole number, not a string", NULL);
    load_fails("gpus-real.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1.5,\"memory_mib\":1,\"gpus\":1}]}",
               ERR_INVALID, "nodes[0]: cpu_milli must be a whole number", NULL);
    load_fails("too-many-gpus.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":65,"
               "\"model\":\"T4\"}]}",
               ERR_INVALID, "nodes[0]: gpus must be between 0 and 64, not 65", NULL);
    load_fails("missing.json", "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"gpus\":0}]}",
               ERR_INVALID, "nodes[0]: memory_mib is required", NULL);
    load_fails("no-name.json", "{\"nodes\": [{\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0}]}",
               ERR_INVALID, "nodes[0]: name is required", NULL);
    load_fails("name-type.json",
               "{\"nodes\": [{\"name\":7,\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0}]}",
               ERR_INVALID, "nodes[0]: name must be a string, not an integer", NULL);
    load_fails("no-model.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":2}]}",
               ERR_INVALID, "nodes[0]: model is required for a node with GPUs", NULL);
    load_fails("unknown.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"gpu\":1}]}",
               ERR_INVALID, "nodes[0]: unknown member 'gpu'", NULL);
    load_fails("labels-type.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"labels\":[\"x\"]}]}",
               ERR_INVALID, "nodes[0]: labels must be an object, not an array", NULL);
    load_fails("label-value.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"labels\":{\"rack\":1}}]}",
               ERR_INVALID, "nodes[0]: label 'rack' must be a string", NULL);
    load_fails("label-key.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"labels\":{\"bad key\":\"x\"}}]}",
               ERR_INVALID, "nodes[0]: label key 'bad key' is not valid", NULL);
    load_fails("count-zero.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"count\":0}]}",
               ERR_INVALID, "nodes[0]: count must be between 1 and 100000, not 0", NULL);
    load_fails("count-total.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"count\":60000},{\"name\":\"b\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"count\":60000}]}",
               ERR_TOO_LARGE, "nodes[1]: more than 100000 nodes in all", NULL);
    load_fails("dup.json",
               "{\"nodes\": [{\"name\":\"a\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0,"
               "\"count\":3},{\"name\":\"a-1\",\"cpu_milli\":1,\"memory_mib\":1,\"gpus\":0}]}",
               ERR_INVALID, "nodes[1]: node 'a-1' is described twice (first in nodes[0])", NULL);
    load_fails("dup-key.json",
               "{\"nodes\": [{\"name\":\"a\",\"name\":\"b\",\"cpu_milli\":1,\"memory_mib\":1,"
               "\"gpus\":0}]}",
               ERR_BAD_JSON, "duplicate", NULL);
}

/* ---- into the store ---- */

struct db {
    struct store *s;
    struct store_conn *c;
};

static struct db db_open(const char *name)
{
    struct db d = {0};
    struct error_info ei = {0};
    char *path = xasprintf("%s/%s", tmp_dir, name);
    if (store_open(path, NULL, &d.s, &ei) < 0)
        fail_msg("store_open(%s): %s", path, ei.message);
    free(path);
    d.c = store_conn_get(d.s);
    return d;
}

static void db_close(struct db *d)
{
    store_conn_put(d->c);
    store_close(d->s);
}

/* Rows of def matching field == value (value NULL: all rows). */
static size_t count_rows(struct db *d, const struct resource_def *def, const char *field,
                         const char *value)
{
    size_t total = 0;
    int64_t after = 0;
    for (;;) {
        struct arena a;
        struct store_filter f;
        struct row *rows;
        size_t n;
        struct error_info ei = {0};
        arena_init(&a);
        store_filter_init(&f);
        f.limit = 10000;
        f.after_id = after;
        if (field)
            store_filter_eq_str(&f, model_field_index(def, field), value);
        if (store_list(d->c, def, &f, &a, &rows, &n, &ei) < 0)
            fail_msg("store_list %s: %s", def->name, ei.message);
        total += n;
        if (n > 0)
            after = model_row_id(&rows[n - 1]);
        arena_release(&a);
        if (n < 10000)
            return total;
    }
}

struct counts {
    size_t clusters, classes, nodes, gpus, audit;
};

static struct counts count_all(struct db *d)
{
    return (struct counts){
        count_rows(d, &model_clusters, NULL, NULL), count_rows(d, &model_gpu_classes, NULL, NULL),
        count_rows(d, &model_nodes, NULL, NULL), count_rows(d, &model_gpus, NULL, NULL),
        count_rows(d, &model_audit, NULL, NULL)};
}

static void assert_counts(struct counts got, struct counts want)
{
    assert_int_equal(got.clusters, want.clusters);
    assert_int_equal(got.classes, want.classes);
    assert_int_equal(got.nodes, want.nodes);
    assert_int_equal(got.gpus, want.gpus);
    assert_int_equal(got.audit, want.audit);
}

/* The one row of def whose field is value, in a. */
static struct row find_one(struct db *d, const struct resource_def *def, const char *field,
                           const char *value, struct arena *a)
{
    struct store_filter f;
    struct row *rows;
    size_t n;
    struct error_info ei = {0};
    store_filter_init(&f);
    store_filter_eq_str(&f, model_field_index(def, field), value);
    if (store_list(d->c, def, &f, a, &rows, &n, &ei) < 0)
        fail_msg("store_list %s: %s", def->name, ei.message);
    assert_int_equal(n, 1);
    return rows[0];
}

static const char *const small_fleet =
    "{\"nodes\": [\n"
    "  {\"name\": \"h\", \"cpu_milli\": 64000, \"memory_mib\": 262144, \"gpus\": 8,\n"
    "   \"model\": \"H100\", \"labels\": {\"rack\": \"r1\"}, \"count\": 2},\n"
    "  {\"name\": \"a\", \"cpu_milli\": 8000, \"memory_mib\": 32768, \"gpus\": 2,\n"
    "   \"model\": \"A10\"},\n"
    "  {\"name\": \"c\", \"cpu_milli\": 32000, \"memory_mib\": 65536, \"gpus\": 0}\n"
    "]}\n";

static void test_store_small_fleet(void **state)
{
    struct db d = db_open("small.db");
    struct simfleet *f = load_text_ok("small.json", small_fleet);
    struct error_info ei = {0};
    struct arena a;
    struct row r;
    int64_t cluster_id = 0, again_id = 0, class_a10;
    size_t n_nodes = 99;
    json_t *j;
    (void)state;

    /* A GPU class that exists already is reused, not duplicated. */
    {
        const struct resource_def *def = &model_gpu_classes;
        struct row cr;
        int64_t id;
        arena_init(&a);
        cr = model_row_new(def, &a);
        row_set_str(&cr, &a, F_GPU_CLASSES_NAME, "a10");
        row_set_str(&cr, &a, F_GPU_CLASSES_MODEL, "NVIDIA A10");
        row_set_str(&cr, &a, F_GPU_CLASSES_VENDOR, "nvidia");
        row_set_int(&cr, F_GPU_CLASSES_MEMORY_MIB, 24576);
        row_set_null(&cr, F_GPU_CLASSES_PARENT_ID);
        row_set_int(&cr, F_GPU_CLASSES_MILLI, 1000);
        row_set_int(&cr, F_GPU_CLASSES_CREATED_AT, 1);
        row_set_int(&cr, F_GPU_CLASSES_UPDATED_AT, 1);
        assert_int_equal(store_insert(d.c, def, &cr, &id, &ei), 0);
        class_a10 = id;
        arena_release(&a);
    }

    assert_int_equal(simfleet_store(d.c, "sim1", f, 1700000000, &cluster_id, &n_nodes, &ei), 0);
    assert_int_equal(n_nodes, 4);
    assert_true(cluster_id > 0);
    /* 1 cluster, 1 new class (h100), 4 nodes, 18 GPUs: one audit entry each. */
    assert_counts(count_all(&d), (struct counts){1, 2, 4, 18, 1 + 1 + 4 + 18});

    arena_init(&a);
    r = find_one(&d, &model_clusters, "name", "sim1", &a);
    assert_int_equal(model_row_id(&r), cluster_id);
    assert_string_equal(row_get(&r, F_CLUSTERS_BACKEND)->s, "sim");
    assert_string_equal(row_get(&r, F_CLUSTERS_DESCRIPTION)->s, "SIMULATED cluster: no real GPUs");
    assert_string_equal(row_get(&r, F_CLUSTERS_LABELS)->s, "{\"simulated\":\"true\"}");
    assert_int_equal(row_int(&r, F_CLUSTERS_CREATED_AT), 1700000000);

    r = find_one(&d, &model_gpu_classes, "name", "h100", &a);
    assert_string_equal(row_get(&r, F_GPU_CLASSES_MODEL)->s, "H100");
    assert_string_equal(row_get(&r, F_GPU_CLASSES_VENDOR)->s, "nvidia");
    assert_int_equal(row_int(&r, F_GPU_CLASSES_MILLI), 1000);

    r = find_one(&d, &model_nodes, "name", "h-1", &a);
    assert_int_equal(row_int(&r, F_NODES_CLUSTER_ID), cluster_id);
    assert_int_equal(row_int(&r, F_NODES_CPU_MILLI), 64000);
    assert_string_equal(row_get(&r, F_NODES_LABELS)->s, "{\"rack\":\"r1\",\"simulated\":\"true\"}");
    assert_string_equal(row_get(&r, F_NODES_STATE)->s, "ready");
    r = find_one(&d, &model_nodes, "name", "c", &a);
    assert_string_equal(row_get(&r, F_NODES_LABELS)->s, "{\"simulated\":\"true\"}");

    r = find_one(&d, &model_gpus, "uuid", "SIM-sim1-a-1", &a);
    assert_int_equal(row_int(&r, F_GPUS_INDEX), 1);
    assert_int_equal(row_int(&r, F_GPUS_GPU_CLASS_ID), class_a10);
    assert_string_equal(row_get(&r, F_GPUS_HEALTH)->s, "ok");
    r = find_one(&d, &model_gpus, "uuid", "SIM-sim1-h-0-7", &a);
    assert_int_equal(row_int(&r, F_GPUS_INDEX), 7);

    /* Audit: "import" by the system, the object's JSON as "after". */
    assert_int_equal(count_rows(&d, &model_audit, "action", "import"), 24);
    assert_int_equal(count_rows(&d, &model_audit, "request_id", "simfleet"), 24);
    assert_int_equal(count_rows(&d, &model_audit, "resource", "gpus"), 18);
    assert_int_equal(count_rows(&d, &model_audit, "resource", "gpu-classes"), 1);
    r = find_one(&d, &model_audit, "resource", "clusters", &a);
    assert_string_equal(row_get(&r, F_AUDIT_ACTOR)->s, "system");
    assert_true(row_is_null(&r, F_AUDIT_ACTOR_ID));
    assert_true(row_is_null(&r, F_AUDIT_BEFORE));
    assert_int_equal(row_int(&r, F_AUDIT_OBJECT_ID), cluster_id);
    assert_int_equal(row_int(&r, F_AUDIT_TIME), 1700000000);
    j = json_loads(row_get(&r, F_AUDIT_AFTER)->s, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "name")), "sim1");
    assert_int_equal(json_integer_value(json_object_get(j, "id")), cluster_id);
    json_decref(j);
    arena_release(&a);

    /* Again (a restart): nothing changes, the same cluster is found. */
    n_nodes = 99;
    assert_int_equal(simfleet_store(d.c, "sim1", f, 1700000100, &again_id, &n_nodes, &ei), 0);
    assert_int_equal(n_nodes, 0);
    assert_int_equal(again_id, cluster_id);
    assert_counts(count_all(&d), (struct counts){1, 2, 4, 18, 24});
    assert_int_equal(simfleet_store(d.c, "sim1", f, 1700000100, NULL, NULL, &ei), 0);

    /* A second simulated cluster reuses both classes; uuids carry its name. */
    assert_int_equal(simfleet_store(d.c, "sim2", f, 1700000200, NULL, &n_nodes, &ei), 0);
    assert_int_equal(n_nodes, 4);
    assert_counts(count_all(&d), (struct counts){2, 2, 8, 36, 24 + 1 + 4 + 18});

    simfleet_free(f);
    db_close(&d);
}

static void test_store_failure_leaves_nothing(void **state)
{
    struct db d = db_open("fail.db");
    struct simfleet *f = load_text_ok("fail.json", small_fleet);
    struct simfleet_node saved;
    struct error_info ei = {0};
    int64_t cluster_id = -1;
    size_t n_nodes = 99;
    (void)state;

    /* A fleet made by hand with the last node named as the first: fails at the last node. */
    saved = f->nodes[3];
    f->nodes[3].name = f->nodes[0].name;
    assert_int_equal(simfleet_store(d.c, "bad", f, 1, &cluster_id, &n_nodes, &ei), ERR_CONFLICT);
    assert_int_equal(cluster_id, -1);
    assert_int_equal(n_nodes, 99);
    assert_counts(count_all(&d), (struct counts){0, 0, 0, 0, 0});
    /* The connection is usable again, and a good fleet goes in. */
    f->nodes[3] = saved;
    ei = (struct error_info){0};
    assert_int_equal(simfleet_store(d.c, "bad", f, 1, &cluster_id, &n_nodes, &ei), 0);
    assert_counts(count_all(&d), (struct counts){1, 2, 4, 18, 25});

    /* Invalid names are refused before anything is written. */
    ei = (struct error_info){0};
    assert_int_equal(simfleet_store(d.c, "Bad Name", f, 1, NULL, NULL, &ei), ERR_INVALID);
    assert_non_null(strstr(ei.message, "not a valid cluster name"));
    saved = f->nodes[0];
    f->nodes[0].name = "x y";
    ei = (struct error_info){0};
    assert_int_equal(simfleet_store(d.c, "other", f, 1, NULL, NULL, &ei), ERR_INVALID);
    assert_non_null(strstr(ei.message, "is not valid"));
    f->nodes[0] = saved;
    assert_counts(count_all(&d), (struct counts){1, 2, 4, 18, 25});
    simfleet_free(f);
    db_close(&d);
}

static void test_store_refuses_a_real_cluster_of_that_name(void **state)
{
    struct db d = db_open("real.db");
    struct simfleet *f = load_text_ok("real.json", small_fleet);
    const struct resource_def *def = &model_clusters;
    struct error_info ei = {0};
    struct arena a;
    struct row r;
    int64_t id;
    (void)state;

    arena_init(&a);
    r = model_row_new(def, &a);
    row_set_str(&r, &a, F_CLUSTERS_NAME, "prod");
    row_set_str(&r, &a, F_CLUSTERS_BACKEND, "slurm");
    row_set_str(&r, &a, F_CLUSTERS_ENDPOINT, "ctl:6817");
    row_set_str(&r, &a, F_CLUSTERS_LABELS, "{}");
    row_set_str(&r, &a, F_CLUSTERS_DESCRIPTION, "");
    row_set_int(&r, F_CLUSTERS_CREATED_AT, 1);
    row_set_int(&r, F_CLUSTERS_UPDATED_AT, 1);
    assert_int_equal(store_insert(d.c, def, &r, &id, &ei), 0);
    arena_release(&a);

    assert_int_equal(simfleet_store(d.c, "prod", f, 1, NULL, NULL, &ei), ERR_CONFLICT);
    assert_non_null(strstr(ei.message, "is not simulated"));
    assert_counts(count_all(&d), (struct counts){1, 0, 0, 0, 0});
    simfleet_free(f);
    db_close(&d);
}

static void test_store_trace(void **state)
{
    struct db d = db_open("trace.db");
    struct simfleet *f = load_ok(TRACE_GPU_NODES);
    struct error_info ei = {0};
    size_t n_nodes = 0;
    (void)state;

    if (simfleet_store(d.c, "openb", f, 1700000000, NULL, &n_nodes, &ei) < 0)
        fail_msg("simfleet_store: %s", ei.message);
    assert_int_equal(n_nodes, 1213);
    /* Classes: p100, t4, g2, g3, v100m16, v100m32, a10. */
    assert_counts(count_all(&d), (struct counts){1, 7, 1213, 6212, 1 + 7 + 1213 + 6212});
    assert_int_equal(count_rows(&d, &model_gpu_classes, "name", "v100m16"), 1);
    simfleet_free(f);
    db_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_class_names),
        cmocka_unit_test(test_trace_gpu_node_list),
        cmocka_unit_test(test_trace_all_node_list),
        cmocka_unit_test(test_csv_variants),
        cmocka_unit_test(test_json_count_and_labels),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_csv_node_limit),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_store_small_fleet),
        cmocka_unit_test(test_store_failure_leaves_nothing),
        cmocka_unit_test(test_store_refuses_a_real_cluster_of_that_name),
        cmocka_unit_test(test_store_trace),
    };
    return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
