/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.c: a streaming parser of the Prometheus text exposition format 0.0.4.
 * One pass over the buffer, line by line; each sample's name, labels and
 * unescaped values are copied into one scratch area allocated per call, so
 * nothing is allocated per sample. Limits on line length and label count
 * bound the scratch area.
 */
#include "base/common.h"
#include "base/alloc.h"
#include "base/err.h"
#include "inventory/inventory.h"

#include <math.h>

struct pstate {
    const struct inv_prom_limits *lim;
    char *scratch; /* names and unescaped values, NUL-terminated */
    size_t scratch_len, scratch_cap;
    struct inv_prom_label *labels;
    char family[256]; /* the metric named by the last TYPE line */
    enum inv_prom_type family_type;
    size_t lineno;
    struct error_info *ei;
};

static bool is_name_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static bool is_name_char(int c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static bool is_blank(int c)
{
    return c == ' ' || c == '\t';
}

static int perr(struct pstate *ps, int code, const char *what)
{
    return errinfo_set(ps->ei, code, NULL, "line %zu: %s", ps->lineno, what);
}

static const char *skip_blank(const char *p, const char *end)
{
    while (p < end && is_blank((unsigned char)*p))
        p++;
    return p;
}

/* Copies [s, s+n) into scratch with a NUL; the scratch is sized so this cannot overflow. */
static char *scratch_put(struct pstate *ps, const char *s, size_t n)
{
    char *dst = ps->scratch + ps->scratch_len;
    assert(ps->scratch_len + n + 1 <= ps->scratch_cap);
    memcpy(dst, s, n);
    dst[n] = '\0';
    ps->scratch_len += n + 1;
    return dst;
}

/* A metric name at *pp; advances past it. */
static int read_name(const char **pp, const char *end, bool metric, const char **ret_s,
                     size_t *ret_n)
{
    const char *p = *pp, *s = p;
    if (p >= end || !(metric ? is_name_start((unsigned char)*p)
                             : (is_name_start((unsigned char)*p) && *p != ':')))
        return -1;
    while (p < end && (metric ? is_name_char((unsigned char)*p)
                              : (is_name_char((unsigned char)*p) && *p != ':')))
        p++;
    *ret_s = s;
    *ret_n = (size_t)(p - s);
    *pp = p;
    return 0;
}

static bool token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static int parse_value(struct pstate *ps, const char *s, size_t n, double *ret)
{
    char tmp[64];
    char *end;
    double v;

    if (n == 0)
        return perr(ps, ERR_INVALID, "missing value");
    if (token_is(s, n, "NaN")) {
        *ret = NAN;
        return 0;
    }
    if (token_is(s, n, "+Inf") || token_is(s, n, "Inf")) {
        *ret = INFINITY;
        return 0;
    }
    if (token_is(s, n, "-Inf")) {
        *ret = -INFINITY;
        return 0;
    }
    if (n >= sizeof(tmp))
        return perr(ps, ERR_INVALID, "value is too long");
    /* Only digits, signs, a point and exponents: no "nan", "inf" or hex spellings. */
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
            return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: value '%.*s' is not a number",
                               ps->lineno, (int)n, s);
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    errno = 0;
    v = strtod(tmp, &end);
    if (end != tmp + n || end == tmp)
        return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: value '%.*s' is not a number",
                           ps->lineno, (int)n, s);
    *ret = v; /* overflow gives +-HUGE_VAL = +-Inf, as Prometheus does */
    return 0;
}

static int parse_timestamp(struct pstate *ps, const char *s, size_t n, int64_t *ret)
{
    int64_t v = 0;
    size_t i = 0;
    bool neg = false;

    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    if (i == n)
        return perr(ps, ERR_INVALID, "timestamp is not an integer");
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return perr(ps, ERR_INVALID, "timestamp is not an integer");
        if (v > (INT64_MAX - (s[i] - '0')) / 10)
            return perr(ps, ERR_INVALID, "timestamp is out of range");
        v = v * 10 + (s[i] - '0');
    }
    *ret = neg ? -v : v;
    return 0;
}

/* A quoted label value at *pp (just past the opening quote), unescaped into scratch. */
static int read_label_value(struct pstate *ps, const char **pp, const char *end, const char **ret)
{
    const char *p = *pp;
    char *dst = ps->scratch + ps->scratch_len, *start = dst;

    while (p < end && *p != '"') {
        if (*p == '\\') {
            if (p + 1 >= end)
                return perr(ps, ERR_INVALID, "unterminated label value");
            switch (p[1]) {
            case '\\':
                *dst++ = '\\';
                break;
            case '"':
                *dst++ = '"';
                break;
            case 'n':
                *dst++ = '\n';
                break;
            default:
                return errinfo_set(ps->ei, ERR_INVALID, NULL,
                                   "line %zu: invalid escape '\\%c' in label value", ps->lineno,
                                   p[1]);
            }
            p += 2;
        } else {
            *dst++ = *p++;
        }
    }
    if (p >= end)
        return perr(ps, ERR_INVALID, "unterminated label value");
    *dst++ = '\0';
    ps->scratch_len += (size_t)(dst - start);
    *pp = p + 1;
    *ret = start;
    return 0;
}

static int parse_labels(struct pstate *ps, const char **pp, const char *end, size_t *ret_n)
{
    const char *p = *pp; /* just past '{' */
    size_t n = 0;

    for (;;) {
        const char *name;
        size_t name_n;

        p = skip_blank(p, end);
        if (p < end && *p == '}')
            break;
        if (read_name(&p, end, false, &name, &name_n) < 0)
            return perr(ps, ERR_INVALID, "expected a label name or '}'");
        if (n >= ps->lim->max_labels)
            return errinfo_set(ps->ei, ERR_TOO_LARGE, NULL, "line %zu: more than %zu labels",
                               ps->lineno, ps->lim->max_labels);
        ps->labels[n].name = scratch_put(ps, name, name_n);
        for (size_t i = 0; i < n; i++)
            if (strcmp(ps->labels[i].name, ps->labels[n].name) == 0)
                return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: duplicate label '%s'",
                                   ps->lineno, ps->labels[n].name);
        p = skip_blank(p, end);
        if (p >= end || *p != '=')
            return errinfo_set(ps->ei, ERR_INVALID, NULL,
                               "line %zu: expected '=' after label name '%s'", ps->lineno,
                               ps->labels[n].name);
        p = skip_blank(p + 1, end);
        if (p >= end || *p != '"')
            return errinfo_set(ps->ei, ERR_INVALID, NULL,
                               "line %zu: expected '\"' to open the value of label '%s'",
                               ps->lineno, ps->labels[n].name);
        p++;
        int rc = read_label_value(ps, &p, end, &ps->labels[n].value);
        if (rc < 0)
            return rc;
        n++;
        p = skip_blank(p, end);
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == '}')
            break;
        return perr(ps, ERR_INVALID, "expected ',' or '}' after a label value");
    }
    *pp = p + 1;
    *ret_n = n;
    return 0;
}

static enum inv_prom_type type_of_sample(struct pstate *ps, const char *name)
{
    size_t fl = strlen(ps->family), nl;
    static const char *const suffixes[] = {"_sum", "_count", "_bucket"};

    if (!ps->family[0] || strncmp(name, ps->family, fl) != 0)
        return INV_PROM_UNTYPED;
    if (name[fl] == '\0')
        return ps->family_type;
    if (ps->family_type != INV_PROM_HISTOGRAM && ps->family_type != INV_PROM_SUMMARY)
        return INV_PROM_UNTYPED;
    nl = strlen(name + fl);
    for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
        if (nl == strlen(suffixes[i]) && strcmp(name + fl, suffixes[i]) == 0)
            return ps->family_type;
    return INV_PROM_UNTYPED;
}

/* "# HELP name text" / "# TYPE name type" / any other comment. p is past '#'. */
static int parse_comment(struct pstate *ps, const char *p, const char *end)
{
    const char *kw, *name;
    size_t kw_n, name_n;
    bool is_type;

    p = skip_blank(p, end);
    kw = p;
    while (p < end && !is_blank((unsigned char)*p))
        p++;
    kw_n = (size_t)(p - kw);
    if (token_is(kw, kw_n, "TYPE"))
        is_type = true;
    else if (token_is(kw, kw_n, "HELP"))
        is_type = false;
    else
        return 0; /* a plain comment */
    p = skip_blank(p, end);
    if (read_name(&p, end, true, &name, &name_n) < 0)
        return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: %s without a metric name",
                           ps->lineno, is_type ? "TYPE" : "HELP");
    if (p < end && !is_blank((unsigned char)*p))
        return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: invalid metric name in %s",
                           ps->lineno, is_type ? "TYPE" : "HELP");
    p = skip_blank(p, end);
    if (!is_type) {
        /* HELP text: only \\ and \n are escapes. */
        for (; p < end; p++)
            if (*p == '\\' && (p + 1 >= end || (p[1] != '\\' && p[1] != 'n')))
                return perr(ps, ERR_INVALID, "invalid escape in HELP text");
            else if (*p == '\\')
                p++;
        return 0;
    }
    {
        const char *t = p;
        static const struct {
            const char *word;
            enum inv_prom_type type;
        } types[] = {{"counter", INV_PROM_COUNTER},
                     {"gauge", INV_PROM_GAUGE},
                     {"histogram", INV_PROM_HISTOGRAM},
                     {"summary", INV_PROM_SUMMARY},
                     {"untyped", INV_PROM_UNTYPED}};
        while (p < end && !is_blank((unsigned char)*p))
            p++;
        size_t t_n = (size_t)(p - t);
        if (skip_blank(p, end) != end)
            return perr(ps, ERR_INVALID, "text after the type in TYPE");
        for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
            if (token_is(t, t_n, types[i].word)) {
                if (name_n >= sizeof(ps->family))
                    return perr(ps, ERR_TOO_LARGE, "metric name too long in TYPE");
                memcpy(ps->family, name, name_n);
                ps->family[name_n] = '\0';
                ps->family_type = types[i].type;
                return 0;
            }
        }
        return errinfo_set(ps->ei, ERR_INVALID, NULL, "line %zu: unknown metric type '%.*s'",
                           ps->lineno, (int)(t_n > 32 ? 32 : t_n), t);
    }
}

static int parse_sample(struct pstate *ps, const char *p, const char *end, inv_prom_sample_fn fn,
                        void *ctx)
{
    struct inv_prom_sample s;
    const char *name, *tok;
    size_t name_n;
    int rc;

    memset(&s, 0, sizeof(s));
    ps->scratch_len = 0;
    if (read_name(&p, end, true, &name, &name_n) < 0)
        return perr(ps, ERR_INVALID, "expected a metric name");
    s.name = scratch_put(ps, name, name_n);
    tok = p;
    p = skip_blank(p, end);
    if (p < end && *p == '{') {
        p++;
        rc = parse_labels(ps, &p, end, &s.n_labels);
        if (rc < 0)
            return rc;
        s.labels = ps->labels;
    } else if (p == tok && p < end) {
        return errinfo_set(ps->ei, ERR_INVALID, NULL,
                           "line %zu: expected a space before the value of '%s'", ps->lineno,
                           s.name);
    }
    p = skip_blank(p, end);
    tok = p;
    while (p < end && !is_blank((unsigned char)*p))
        p++;
    rc = parse_value(ps, tok, (size_t)(p - tok), &s.value);
    if (rc < 0)
        return rc;
    p = skip_blank(p, end);
    if (p < end) {
        tok = p;
        while (p < end && !is_blank((unsigned char)*p))
            p++;
        rc = parse_timestamp(ps, tok, (size_t)(p - tok), &s.timestamp_ms);
        if (rc < 0)
            return rc;
        s.has_timestamp = true;
        if (skip_blank(p, end) != end)
            return perr(ps, ERR_INVALID, "text after the timestamp");
    }
    s.type = type_of_sample(ps, s.name);
    s.line = ps->lineno;
    return fn ? fn(ctx, &s) : 0;
}

int inv_prom_parse(const char *data, size_t len, const struct inv_prom_limits *lim,
                   inv_prom_sample_fn fn, void *ctx, struct error_info *ei)
{
    struct inv_prom_limits l = {INV_PROM_MAX_LINE, INV_PROM_MAX_LABELS};
    struct pstate ps;
    const char *p = data, *end = data + len;
    int count = 0, rc = 0;

    if (lim && lim->max_line)
        l.max_line = lim->max_line;
    if (lim && lim->max_labels)
        l.max_labels = lim->max_labels;
    memset(&ps, 0, sizeof(ps));
    ps.lim = &l;
    ps.ei = ei;
    /* Every byte of a line lands in the scratch at most once, plus one NUL per name or value. */
    ps.scratch_cap = l.max_line + 2 * l.max_labels + 2;
    ps.scratch = xmalloc(ps.scratch_cap);
    ps.labels = xcalloc(l.max_labels, sizeof(*ps.labels));

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        const char *q;

        ps.lineno++;
        if (le > p && le[-1] == '\r')
            le--;
        if ((size_t)(le - p) > l.max_line) {
            rc = errinfo_set(ei, ERR_TOO_LARGE, NULL, "line %zu: longer than %zu bytes", ps.lineno,
                             l.max_line);
            break;
        }
        if (memchr(p, '\0', (size_t)(le - p)) || memchr(p, '\r', (size_t)(le - p))) {
            rc = perr(&ps, ERR_INVALID, "NUL byte or stray carriage return");
            break;
        }
        q = skip_blank(p, le);
        if (q == le) {
            /* blank line */
        } else if (*q == '#') {
            rc = parse_comment(&ps, q + 1, le);
        } else {
            rc = parse_sample(&ps, q, le, fn, ctx);
            if (rc >= 0) {
                if (count == INT_MAX) {
                    rc = perr(&ps, ERR_TOO_LARGE, "too many samples");
                    break;
                }
                count++;
            }
        }
        if (rc < 0)
            break;
        p = next;
    }
    free(ps.scratch);
    free(ps.labels);
    return rc < 0 ? rc : count;
}

const char *inv_prom_label(const struct inv_prom_sample *s, const char *name)
{
    for (size_t i = 0; i < s->n_labels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return s->labels[i].value;
    return NULL;
}
