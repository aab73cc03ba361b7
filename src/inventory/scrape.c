/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scrape.c: fetching a dcgm-exporter endpoint with libcurl, bounded in time
 * (connect and total timeouts) and in size (the body is refused past
 * max_bytes without being read further), then parsing it.
 */
#include "base/common.h"
#include "base/buf.h"
#include "base/err.h"
#include "inventory/inventory-int.h"

#include <curl/curl.h>

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct buf *b = ctx;
    if (buf_append(b, data, size * n) < 0)
        return 0; /* too large: curl stops with CURLE_WRITE_ERROR */
    return size * n;
}

int inv_scrape_dcgm(const char *url, int64_t timeout_ms, size_t max_bytes, struct inv_readings *out,
                    struct error_info *ei)
{
    CURL *c;
    CURLcode cc;
    struct buf body;
    long status = 0;
    char errbuf[CURL_ERROR_SIZE];
    int rc;

    if (!max_bytes)
        max_bytes = INV_SCRAPE_MAX_BYTES;
    c = curl_easy_init();
    if (!c)
        return errinfo_set(ei, ERR_INTERNAL, NULL, "could not create a curl handle");
    buf_init(&body, max_bytes);
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_bytes);
    cc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);

    if (cc == CURLE_WRITE_ERROR || cc == CURLE_FILESIZE_EXCEEDED)
        rc = errinfo_set(ei, ERR_TOO_LARGE, NULL, "scrape of '%s': body larger than %zu bytes", url,
                         max_bytes);
    else if (cc != CURLE_OK)
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "scrape of '%s' failed: %s", url,
                         errbuf[0] ? errbuf : curl_easy_strerror(cc));
    else if (status != 200)
        rc = errinfo_set(ei, ERR_UNAVAILABLE, NULL, "scrape of '%s': HTTP status %ld", url, status);
    else
        rc = inv_dcgm_parse(body.data ? body.data : "", body.len, out, NULL, ei);
    buf_release(&body);
    return rc;
}
