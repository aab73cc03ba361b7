/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scraping a dcgm-exporter endpoint over HTTP: a small libmicrohttpd server
 * on 127.0.0.1 (ephemeral port) serves the shared 2 x H200 fixture; the
 * scraper fetches and parses it, feeds the telemetry store and the
 * schedule. Then the failure paths: HTTP 500, a body over the limit, a
 * malformed body, and the server stopped: the source goes stale, its data
 * (last good readings, stored telemetry) is kept.
 */
#include "base/common.h"

#include <setjmp.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>

#include "base/err.h"
#include "inventory/inventory.h"
#include "inv_test.h"

#define GPU0 "GPU-3f1c9a52-7d2e-4b8a-9c41-0e6f2d8b5a17"

struct server {
    struct MHD_Daemon *d;
    char url[128];
    char *fixture;
    size_t fixture_len;
};

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    struct server *s = cls;
    struct MHD_Response *resp;
    unsigned int status = MHD_HTTP_OK;
    enum MHD_Result ret;
    (void)method;
    (void)version;
    (void)upload;
    (void)upload_size;
    (void)con_cls;

    if (strcmp(url, "/metrics") == 0) {
        resp = MHD_create_response_from_buffer(s->fixture_len, s->fixture, MHD_RESPMEM_PERSISTENT);
    } else if (strcmp(url, "/broken") == 0) {
        static char bad[] = "DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-a\" 1\n";
        resp = MHD_create_response_from_buffer(strlen(bad), bad, MHD_RESPMEM_PERSISTENT);
    } else {
        static char err[] = "internal error\n";
        resp = MHD_create_response_from_buffer(strlen(err), err, MHD_RESPMEM_PERSISTENT);
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4");
    ret = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void server_start(struct server *s)
{
    const union MHD_DaemonInfo *info;
    struct sockaddr_in addr;

    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_port = 0;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, s,
                            MHD_OPTION_SOCK_ADDR, &addr, MHD_OPTION_END);
    assert_non_null(s->d);
    info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    assert_non_null(info);
    assert_true(info->port > 0);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u", (unsigned)info->port);
}

static void test_scrape(void **state)
{
    struct server s;
    struct inv_readings good, fresh;
    struct inv_tstore *ts = inv_tstore_new(NULL);
    struct inv_sched sched;
    struct error_info ei = {0};
    struct inv_series_query q;
    const char *keys[] = {GPU0};
    char url[200];
    int64_t t = INT64_C(1764460800000);
    (void)state;

    memset(&s, 0, sizeof(s));
    s.fixture =
        inv_test_read(GPUAAS_DATA_DIR, "telemetry/dcgm-exporter-2xh200-mig.prom", &s.fixture_len);
    server_start(&s);
    inv_readings_init(&good, 0);
    inv_readings_init(&fresh, 0);
    inv_sched_init(&sched, 10000, 2000, 60000, t);

    /* three good scrapes */
    snprintf(url, sizeof(url), "%s/metrics", s.url);
    for (int i = 0; i < 3; i++, t += 10000) {
        assert_true(inv_sched_due(&sched, t));
        inv_readings_reset(&fresh);
        assert_int_equal(inv_scrape_dcgm(url, 5000, 0, &fresh, &ei), 5);
        for (size_t k = 0; k < fresh.n; k++) {
            char key[INV_KEY_MAX];
            inv_reading_key(&fresh.v[k], key, sizeof(key));
            assert_int_equal(inv_tstore_ingest(ts, key, t, &fresh.v[k], true), 0);
        }
        inv_tstore_end_scrape(ts);
        struct inv_readings tmp = good;
        good = fresh;
        fresh = tmp;
        inv_sched_ok(&sched, t);
        assert_false(sched.stale);
    }
    assert_int_equal(inv_tstore_count(ts), 5);
    assert_non_null(inv_readings_find(&good, GPU0, -1));

    /* failures: status 500, a body over the limit, a malformed body */
    char u500[200], ubroken[200];
    snprintf(u500, sizeof(u500), "%s/nope", s.url);
    snprintf(ubroken, sizeof(ubroken), "%s/broken", s.url);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_scrape_dcgm(u500, 5000, 0, &fresh, &ei), ERR_UNAVAILABLE);
    assert_non_null(strstr(ei.message, "HTTP status 500"));
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_scrape_dcgm(url, 5000, 1000, &fresh, &ei), ERR_TOO_LARGE);
    assert_non_null(strstr(ei.message, "body larger than 1000 bytes"));
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_scrape_dcgm(ubroken, 5000, 0, &fresh, &ei), ERR_INVALID);
    assert_string_equal(ei.message, "line 1: expected ',' or '}' after a label value");

    /* the server goes away: the source is stale, nothing is wiped */
    MHD_stop_daemon(s.d);
    s.d = NULL;
    assert_true(inv_sched_due(&sched, t));
    inv_readings_reset(&fresh);
    memset(&ei, 0, sizeof(ei));
    assert_int_equal(inv_scrape_dcgm(url, 2000, 0, &fresh, &ei), ERR_UNAVAILABLE);
    assert_true(strncmp(ei.message, "scrape of 'http://127.0.0.1:", 28) == 0);
    inv_sched_failed(&sched, t);
    inv_tstore_end_scrape(ts);
    assert_true(sched.stale);
    assert_int_equal(sched.last_ok_ms, t - 10000);
    assert_int_equal(good.n, 5); /* the last good readings are still there */
    assert_int_equal(inv_tstore_count(ts), 5);
    assert_int_equal(inv_tstore_query(ts, keys, 1, t - 60000, t, &q), 3);
    free(q.points);
    struct inv_class_input in;
    assert_int_equal(inv_tstore_class_input(ts, GPU0, t, 1800000, true, &in), 0);
    assert_int_equal(in.missed_scrapes, 1);
    assert_int_equal(in.last_seen_ms, t - 10000);

    inv_readings_release(&good);
    inv_readings_release(&fresh);
    inv_tstore_free(ts);
    free(s.fixture);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scrape),
    };
    int rc;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
