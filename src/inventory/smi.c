/* SPDX-License-Identifier: Apache-2.0 */
/*
 * smi.c: the nvidia-smi fallback collector. nvidia-smi is run as a child
 * process (base/run.h: no shell, a deadline); its CSV query output
 * is parsed into readings. Unknown values ("[N/A]", "[Not Supported]")
 * become NaN rather than errors: many fields are legitimately unsupported
 * (power on some boards, utilization with MIG on).
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/run.h"
#include "inventory/inventory-int.h"

#include <math.h>

enum {
    F_INDEX,
    F_UUID,
    F_NAME,
    F_BUS,
    F_MEM_TOTAL,
    F_MEM_USED,
    F_UTIL,
    F_TEMP,
    F_POWER,
    F_MIG,
    N_F
};

static const char *const field_names[N_F] = {
    "index",
    "uuid",
    "name",
    "pci.bus_id",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "mig.mode.current",
};

static bool is_unknown(const char *s, size_t n)
{
    return n == 0 || (s[0] == '[' && s[n - 1] == ']') || (n == 3 && memcmp(s, "N/A", 3) == 0);
}

static int number(const char *s, size_t n, size_t line, int f, double *ret, struct error_info *ei)
{
    if (is_unknown(s, n)) {
        *ret = NAN;
        return 0;
    }
    if (inv_parse_double(s, n, ret) < 0)
        return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: %s '%.*s' is not a number", line,
                           field_names[f], (int)(n > 40 ? 40 : n), s);
    return 0;
}

static int parse_line(const char *p, const char *end, size_t line, struct inv_readings *out,
                      struct error_info *ei)
{
    const char *fs[N_F];
    size_t fn[N_F];
    char str[INV_UUID_MAX];
    struct inv_reading *r;
    double v;
    int n = 0, rc;

    while (p <= end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *fe = comma ? comma : end;
        if (n == N_F)
            return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: more than %d fields", line, N_F);
        while (p < fe && (*p == ' ' || *p == '\t'))
            p++;
        while (fe > p && (fe[-1] == ' ' || fe[-1] == '\t'))
            fe--;
        fs[n] = p;
        fn[n] = (size_t)(fe - p);
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (n != N_F)
        return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: %d fields, expected %d (%s)", line, n,
                           N_F, INV_SMI_QUERY);
    if (is_unknown(fs[F_UUID], fn[F_UUID]) || fn[F_UUID] >= INV_UUID_MAX)
        return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no usable uuid", line);
    memcpy(str, fs[F_UUID], fn[F_UUID]);
    str[fn[F_UUID]] = '\0';
    rc = inv_readings_get(out, str, -1, &r);
    if (rc < 0)
        return errinfo_set(ei, rc, NULL, "line %zu: too many GPUs", line);
    r->source = INV_SRC_SMI;
    if ((rc = number(fs[F_INDEX], fn[F_INDEX], line, F_INDEX, &v, ei)) < 0)
        return rc;
    if (inv_has(v) && (v < 0 || v > 9999 || v != floor(v)))
        return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: index '%.*s' is out of range", line,
                           (int)fn[F_INDEX], fs[F_INDEX]);
    r->index = inv_has(v) ? (int32_t)v : -1;
#define STR_FIELD(f, dst)                                                                          \
    if (!is_unknown(fs[f], fn[f])) {                                                               \
        char tmp_[256];                                                                            \
        size_t k_ = fn[f] < sizeof(tmp_) ? fn[f] : sizeof(tmp_) - 1;                               \
        memcpy(tmp_, fs[f], k_);                                                                   \
        tmp_[k_] = '\0';                                                                           \
        inv_copy_str(dst, sizeof(dst), tmp_);                                                      \
    }
    STR_FIELD(F_NAME, r->model)
    STR_FIELD(F_BUS, r->pci_bus_id)
#undef STR_FIELD
    if ((rc = number(fs[F_MEM_TOTAL], fn[F_MEM_TOTAL], line, F_MEM_TOTAL, &r->fb_total_mib, ei)) <
            0 ||
        (rc = number(fs[F_MEM_USED], fn[F_MEM_USED], line, F_MEM_USED, &r->fb_used_mib, ei)) < 0 ||
        (rc = number(fs[F_UTIL], fn[F_UTIL], line, F_UTIL, &r->util_pct, ei)) < 0 ||
        (rc = number(fs[F_TEMP], fn[F_TEMP], line, F_TEMP, &r->temp_c, ei)) < 0 ||
        (rc = number(fs[F_POWER], fn[F_POWER], line, F_POWER, &r->power_w, ei)) < 0)
        return rc;
    if (inv_has(r->fb_total_mib) && inv_has(r->fb_used_mib))
        r->fb_free_mib = r->fb_total_mib - r->fb_used_mib;
    if (fn[F_MIG] == 7 && memcmp(fs[F_MIG], "Enabled", 7) == 0)
        r->mig_mode = 1;
    else if (fn[F_MIG] == 8 && memcmp(fs[F_MIG], "Disabled", 8) == 0)
        r->mig_mode = 0;
    else if (!is_unknown(fs[F_MIG], fn[F_MIG]))
        return errinfo_set(ei, ERR_INVALID, NULL,
                           "line %zu: mig.mode.current '%.*s' is not Enabled or Disabled", line,
                           (int)(fn[F_MIG] > 40 ? 40 : fn[F_MIG]), fs[F_MIG]);
    return 0;
}

int inv_smi_parse(const char *data, size_t len, struct inv_readings *out, struct error_info *ei)
{
    const char *p = data, *end = data + len;
    size_t line = 0;
    int n = 0, rc;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *q = p;
        line++;
        if (le > p && le[-1] == '\r')
            le--;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (q < le) {
            if (memchr(q, '\0', (size_t)(le - q)))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: NUL byte", line);
            rc = parse_line(q, le, line, out, ei);
            if (rc < 0)
                return rc;
            n++;
        }
        p = nl ? nl + 1 : end;
    }
    return n;
}

/* Skips spaces and tabs. */
static const char *skip_blank(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Whether [p, end) starts with word; *p moves past it. */
static bool eat(const char **p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - *p) < n || memcmp(*p, word, n) != 0)
        return false;
    *p += n;
    return true;
}

/* A decimal number 0..9999 at *p (moves past it); -1 when none. */
static int32_t small_number(const char **p, const char *end)
{
    int32_t v = 0;
    size_t k = 0;
    while (*p < end && **p >= '0' && **p <= '9' && k < 5) {
        v = v * 10 + (**p - '0');
        (*p)++;
        k++;
    }
    return k == 0 || k == 5 ? -1 : v;
}

/* "(UUID: <uuid>)" closing the line [p, end), into uuid (INV_UUID_MAX); false when malformed. */
static bool uuid_tail(const char *p, const char *end, const char *prefix, char *uuid)
{
    const char *u;
    size_t n;
    p = skip_blank(p, end);
    if (!eat(&p, end, "(UUID: ") || end - p < 2 || end[-1] != ')')
        return false;
    u = p;
    n = (size_t)(end - 1 - u);
    if (n <= strlen(prefix) || n >= INV_UUID_MAX || memcmp(u, prefix, strlen(prefix)) != 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (u[i] == ' ' || u[i] == '(' || u[i] == ')' || u[i] == '\t')
            return false;
    }
    memcpy(uuid, u, n);
    uuid[n] = '\0';
    return true;
}

int inv_smi_list_parse(const char *data, size_t len, struct inv_readings *out,
                       struct error_info *ei)
{
    const char *p = data, *end = data + len;
    char parent[INV_UUID_MAX] = "", uuid[INV_UUID_MAX], model[96] = "";
    int32_t parent_index = -1;
    size_t line = 0;
    int n = 0, rc;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *q;
        struct inv_reading *r;
        line++;
        if (le > p && le[-1] == '\r')
            le--;
        q = skip_blank(p, le);
        p = nl ? nl + 1 : end;
        if (q == le)
            continue;
        if (memchr(q, '\0', (size_t)(le - q)))
            return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: NUL byte", line);
        if (eat(&q, le, "GPU ")) {
            /* GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...) */
            const char *name, *paren = NULL;
            int32_t index = small_number(&q, le);
            if (index < 0 || !eat(&q, le, ": "))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no GPU number", line);
            name = q;
            for (const char *t = q; t + 7 <= le; t++)
                paren = memcmp(t, "(UUID: ", 7) == 0 ? t : paren;
            if (!paren || !uuid_tail(paren, le, "GPU-", uuid))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no usable GPU UUID", line);
            while (paren > name && paren[-1] == ' ')
                paren--;
            snprintf(model, sizeof(model), "%.*s", (int)(paren - name), name);
            if ((rc = inv_readings_get(out, uuid, -1, &r)) < 0)
                return errinfo_set(ei, rc, NULL, "line %zu: too many GPUs", line);
            r->source = r->source ? r->source : INV_SRC_SMI;
            if (r->index < 0)
                r->index = index;
            if (!r->model[0])
                inv_copy_str(r->model, sizeof(r->model), model);
            memcpy(parent, uuid, sizeof(parent));
            parent_index = r->index;
            inv_copy_str(model, sizeof(model), r->model);
        } else if (eat(&q, le, "MIG ")) {
            /* MIG 1g.10gb     Device  0: (UUID: MIG-...) */
            char profile[32], name[40], check[32];
            const char *pe;
            int32_t dev;
            q = skip_blank(q, le);
            for (pe = q; pe < le && *pe != ' ' && *pe != '\t';)
                pe++;
            if (!parent[0])
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: MIG device before any GPU",
                                   line);
            if ((size_t)(pe - q) >= sizeof(profile))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: MIG profile too long", line);
            memcpy(profile, q, (size_t)(pe - q));
            profile[pe - q] = '\0';
            snprintf(name, sizeof(name), " MIG %s", profile);
            if (inv_mig_profile_of_name(name, check, sizeof(check)) < 0)
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: bad MIG profile '%s'", line,
                                   profile);
            q = skip_blank(pe, le);
            if (!eat(&q, le, "Device"))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no MIG device number", line);
            q = skip_blank(q, le);
            if ((dev = small_number(&q, le)) < 0 || !eat(&q, le, ":"))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no MIG device number", line);
            if (!uuid_tail(q, le, "MIG-", uuid))
                return errinfo_set(ei, ERR_INVALID, NULL, "line %zu: no usable MIG UUID", line);
            if ((rc = inv_readings_get(out, parent, dev, &r)) < 0)
                return errinfo_set(ei, rc, NULL, "line %zu: too many GPUs", line);
            r->source = INV_SRC_SMI;
            r->index = parent_index;
            r->mig_mode = 1;
            inv_copy_str(r->model, sizeof(r->model), model);
            inv_copy_str(r->mig_profile, sizeof(r->mig_profile), profile);
            inv_copy_str(r->mig_uuid, sizeof(r->mig_uuid), uuid);
            {
                int64_t mib = inv_mig_profile_mib(profile);
                r->fb_total_mib = mib > 0 ? (double)mib : NAN;
            }
            n++;
        } else {
            return errinfo_set(ei, ERR_INVALID, NULL,
                               "line %zu: neither a GPU nor a MIG device line", line);
        }
    }
    return n;
}

int inv_run_command(char *const argv[], int64_t timeout_ms, size_t max_output, char **ret_out,
                    size_t *ret_len, struct error_info *ei)
{
    /* its own process group: a wrapper script's children die with it at the deadline */
    struct run_spec spec = {.path = argv[0],
                            .argv = (const char *const *)argv,
                            .out_max = max_output,
                            .timeout_ms = timeout_ms,
                            .own_group = true};
    struct run_result r;
    int rc = run_command(&spec, &r, ei);

    if (rc < 0)
        return rc;
    if (r.status != 0) {
        run_result_release(&r);
        if (r.status < 0)
            return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "'%s' was killed by signal %d", argv[0],
                               -r.status);
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "'%s' exited with status %d", argv[0],
                           r.status);
    }
    if (!r.out.data)
        (void)buf_append(&r.out, "", 0);
    *ret_out = buf_detach(&r.out, ret_len);
    run_result_release(&r);
    return 0;
}

int inv_smi_collect(const char *program, int64_t timeout_ms, struct inv_readings *out,
                    struct error_info *ei)
{
    char prog[256], query[] = "--query-gpu=" INV_SMI_QUERY,
                    format[] = "--format=csv,noheader,nounits", list[] = "-L";
    char *argv[] = {prog, query, format, NULL}, *argv_list[] = {prog, list, NULL};
    char *text;
    size_t len;
    bool mig = false;
    int rc, n;

    snprintf(prog, sizeof(prog), "%s", program ? program : "nvidia-smi");
    rc = inv_run_command(argv, timeout_ms, 1 << 20, &text, &len, ei);
    if (rc < 0)
        return rc;
    n = rc = inv_smi_parse(text, len, out, ei);
    free(text);
    for (size_t i = 0; rc >= 0 && i < out->n; i++)
        mig |= out->v[i].mig_mode == 1;
    if (rc < 0 || !mig)
        return rc;
    /* the query has no MIG instances: their UUIDs come from the device list */
    rc = inv_run_command(argv_list, timeout_ms, 1 << 20, &text, &len, ei);
    if (rc < 0)
        return rc;
    rc = inv_smi_list_parse(text, len, out, ei);
    free(text);
    return rc < 0 ? rc : n;
}
