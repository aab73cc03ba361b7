/* SPDX-License-Identifier: Apache-2.0 */
/*
 * meter_bench: the rating benchmark of issue 6. It rates --records
 * synthetic usage records (default 10,000,000) of --orgs organizations
 * (default 1,000, 10 projects each) on 8 flavors, each with a price change
 * in the middle of the second month, both classes, over three calendar
 * months (records of 1 minute to 3 days, so many cross a month boundary or
 * the price change), then builds every invoice and serializes them all to
 * their canonical text. Records are generated in chunks of 65,536 outside
 * the timed part; it reports the seconds spent rating, building and
 * writing, the invoices and lines, a checksum of the totals, and peak RSS
 * (getrusage ru_maxrss). The library has no clock: this program times it
 * with CLOCK_MONOTONIC. Target: rating + building <= 5 s; --check makes
 * the exit status say whether it holds.
 *
 * Usage: meter_bench [--seed N] [--records N] [--orgs N] [--check]
 */
#include "base/common.h"

#include <sys/resource.h>

#include "base/buf.h"
#include "base/parse.h"
#include "meter/meter.h"
#include "bench-util.h"

#define CHUNK 65536
#define N_FLAVORS 8
#define PROJECTS_PER_ORG 10

static int usage(void)
{
    fprintf(stderr, "usage: meter_bench [--seed N] [--records N] [--orgs N] [--check]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int64_t seed = 1, n_records = 10000000, n_orgs = 1000;
    bool check = false;
    for (int i = 1; i < argc; i++) {
        int64_t *target = NULL;
        if (strcmp(argv[i], "--check") == 0) {
            check = true;
            continue;
        } else if (strcmp(argv[i], "--seed") == 0) {
            target = &seed;
        } else if (strcmp(argv[i], "--records") == 0) {
            target = &n_records;
        } else if (strcmp(argv[i], "--orgs") == 0) {
            target = &n_orgs;
        } else {
            return usage();
        }
        if (i + 1 >= argc || parse_int64(argv[++i], 1, INT64_MAX / 2, target) < 0)
            return usage();
    }
    rng_state = (uint64_t)seed;

    /* 2026-01-01 .. 2026-04-01; the price change on 2026-02-14T12:00Z. */
    const int64_t day = 86400000;
    const int64_t t0 = meter_days_from_civil(2026, 1, 1) * day;
    const int64_t t1 = meter_days_from_civil(2026, 4, 1) * day;
    const int64_t change = meter_days_from_civil(2026, 2, 14) * day + day / 2;
    struct meter_price prices[2 * N_FLAVORS];
    for (int f = 0; f < N_FLAVORS; f++)
        for (int v = 0; v < 2; v++)
            prices[2 * f + v] = (struct meter_price){
                .id = 100 + 2 * f + v,
                .flavor_id = f + 1,
                .currency = "EUR",
                .minor_digits = 2,
                .price_per_hour_micro = 1234567 * (f + 1) + 111111 * v,
                .mult_ppm = {1000000, 600000},
                .effective_from_ms = v == 0 ? t0 - 365 * day : change,
            };
    struct meter_rater *r = NULL;
    if (meter_rater_new(prices, ARRAY_SIZE(prices), NULL, NULL, &r) < 0) {
        fprintf(stderr, "meter_bench: could not create the rater\n");
        return 1;
    }
    static const int32_t shapes[] = {250, 500, 1000, 2000, 4000, 8000};
    struct meter_record *chunk = calloc(CHUNK, sizeof(*chunk));
    if (!chunk)
        return 1;
    int64_t rate_ns = 0, gen_ns = 0;
    for (int64_t done = 0; done < n_records;) {
        int64_t g0 = now_ns();
        size_t n = (size_t)(n_records - done < CHUNK ? n_records - done : CHUNK);
        for (size_t i = 0; i < n; i++) {
            int64_t org = rng_range(1, n_orgs);
            int64_t dur = rng_range(60000, 3 * day);
            int64_t start = rng_range(t0, t1 - dur);
            int32_t milli = shapes[rng_next() % ARRAY_SIZE(shapes)];
            chunk[i] = (struct meter_record){
                .id = done + (int64_t)i + 1,
                .org_id = org,
                .project_id = org * PROJECTS_PER_ORG + rng_range(0, PROJECTS_PER_ORG - 1),
                .flavor_id = rng_range(1, N_FLAVORS),
                .cls = (int32_t)(rng_next() & 1),
                .replicas = (int32_t)rng_range(1, 4),
                .gpu_milli = milli,
                .started_ms = start,
                .ended_ms = start + dur,
            };
        }
        int64_t g1 = now_ns();
        size_t failed = 0;
        if (meter_rate_many(r, chunk, n, &failed) < 0) {
            fprintf(stderr, "meter_bench: record %zu was refused\n", failed);
            return 1;
        }
        rate_ns += now_ns() - g1;
        gen_ns += g1 - g0;
        done += (int64_t)n;
    }
    free(chunk);

    int64_t b0 = now_ns();
    struct meter_invoices inv;
    meter_invoices_init(&inv);
    if (meter_invoices_build(r, &inv) < 0) {
        fprintf(stderr, "meter_bench: could not build the invoices\n");
        return 1;
    }
    int64_t b1 = now_ns();
    struct buf out;
    buf_init(&out, (size_t)1 << 34);
    uint64_t checksum = 0, fnv = 1469598103934665603ULL;
    for (size_t i = 0; i < inv.n; i++) {
        checksum += (uint64_t)inv.items[i].total_micro;
        if (meter_invoice_write(&inv.items[i], &out) < 0)
            return 1;
    }
    for (size_t i = 0; i < out.len; i++)
        fnv = (fnv ^ (uint8_t)out.data[i]) * 1099511628211ULL;
    int64_t b2 = now_ns();

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rate_s = (double)rate_ns / 1e9, build_s = (double)(b1 - b0) / 1e9;
    double write_s = (double)(b2 - b1) / 1e9;
    printf("records           %" PRId64 " (%" PRId64 " organizations, seed %" PRId64 ")\n",
           n_records, n_orgs, seed);
    printf("invoices          %zu, lines %zu, canonical text %zu bytes (fnv1a %016" PRIx64 ")\n",
           inv.n, inv.n_lines, out.len, fnv);
    printf("sum of totals     %" PRIu64 " micro-units\n", checksum);
    printf("generate          %.3f s (untimed)\n", (double)gen_ns / 1e9);
    printf("rate              %.3f s (%.0f records/s)\n", rate_s, (double)n_records / rate_s);
    printf("build invoices    %.3f s\n", build_s);
    printf("write text        %.3f s\n", write_s);
    printf("rate + build      %.3f s (target <= 5 s)\n", rate_s + build_s);
    printf("peak RSS          %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
    buf_release(&out);
    meter_invoices_release(&inv);
    meter_rater_free(r);
    return check && rate_s + build_s > 5.0 ? 1 : 0;
}
