/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm-parse.c: the parsers of what Slurm's tools print, pure and
 * strict (a malformed line refuses the whole answer): squeue's and sacct's
 * job lines, Slurm's times and exit codes, and the settings the backend
 * reads from `scontrol show config`. Tested on their own
 * (tests/backend/test_backend_slurm_parse.c).
 */
#include "base/common.h"

#include "backend/slurm-int.h"
#include "base/alloc.h"
#include "base/parse.h"

int slurm__exit_pair(const char *v, size_t len, int64_t *ret_code, int64_t *ret_sig)
{
    char num[32], *colon;
    if (len == 0 || len >= sizeof(num))
        return -1;
    memcpy(num, v, len);
    num[len] = '\0';
    colon = strchr(num, ':');
    if (!colon)
        return -1;
    *colon = '\0';
    return parse_int64(num, 0, 255, ret_code) < 0 || parse_int64(colon + 1, 0, 127, ret_sig) < 0
               ? -1
               : 0;
}

/* Slurm writes such times in the controller's local time, taken to be the daemon's too. */
int64_t slurm__jobcomp_time(const char *v, size_t len)
{
    char tmp[32];
    struct tm tm;
    char *end;
    time_t t;
    if (len == 0 || len >= sizeof(tmp))
        return -1;
    memcpy(tmp, v, len);
    tmp[len] = '\0';
    memset(&tm, 0, sizeof(tm));
    end = strptime(tmp, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end || *end)
        return -1;
    tm.tm_isdst = -1;
    t = mktime(&tm);
    return t == (time_t)-1 ? -1 : (int64_t)t;
}

/* Copies [p, p + len) into dst (size bytes), truncating. */
static void copy_span(char *dst, size_t size, const char *p, size_t len)
{
    snprintf(dst, size, "%.*s", (int)(len < size ? len : size - 1), p);
}

/* A time field: seconds, or 0 for Slurm's words for none. Returns -1 when malformed. */
static int64_t queue_time(const char *p, size_t len)
{
    char tmp[32];
    int64_t v;
    if (len == 0 || (len == 3 && memcmp(p, "N/A", 3) == 0) ||
        (len == 4 && memcmp(p, "NONE", 4) == 0) || (len == 7 && memcmp(p, "Unknown", 7) == 0))
        return 0;
    if (len >= sizeof(tmp))
        return -1;
    memcpy(tmp, p, len);
    tmp[len] = '\0';
    return parse_int64(tmp, 0, INT64_MAX / 1000, &v) < 0 ? -1 : v;
}

/* Parses one line (without its newline). Returns 1 (a job), 0 (not a plain job id: skip), -1. */
static int queue_line(const char *line, size_t len, struct slurm_queue_job *j)
{
    const char *f[7];
    size_t flen[7], n = 0;
    const char *p = line, *end = line + len;
    char num[32];

    /* Six fields end at the first six '|'; the name is what is left, up to the final '|'. */
    while (n < 6) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            return -1;
        f[n] = p;
        flen[n++] = (size_t)(bar - p);
        p = bar + 1;
    }
    if (p >= end || end[-1] != '|')
        return -1;
    f[6] = p;
    flen[6] = (size_t)(end - 1 - p);

    memset(j, 0, sizeof(*j));
    if (flen[0] == 0 || flen[0] >= sizeof(num))
        return -1;
    memcpy(num, f[0], flen[0]);
    num[flen[0]] = '\0';
    if (strspn(num, "0123456789") != flen[0])
        return strspn(num, "0123456789_+[]-,") == flen[0] && num[0] != '_' ? 0 : -1;
    if (parse_int64(num, 1, INT64_MAX, &j->job_id) < 0)
        return -1;
    if (flen[1] == 0 || flen[1] >= sizeof(j->state) ||
        strspn(f[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") < flen[1])
        return -1;
    copy_span(j->state, sizeof(j->state), f[1], flen[1]);
    j->start_s = queue_time(f[2], flen[2]);
    j->end_s = queue_time(f[3], flen[3]);
    if (j->start_s < 0 || j->end_s < 0)
        return -1;
    if (flen[4] == 0 || (flen[4] == 3 && memcmp(f[4], "N/A", 3) == 0)) {
        j->exit_status = -1;
    } else {
        if (flen[4] >= sizeof(num))
            return -1;
        memcpy(num, f[4], flen[4]);
        num[flen[4]] = '\0';
        if (parse_int64(num, 0, INT32_MAX, &j->exit_status) < 0)
            return -1;
    }
    copy_span(j->nodes, sizeof(j->nodes), f[5], flen[5]);
    copy_span(j->name, sizeof(j->name), f[6], flen[6]);
    return 1;
}

/*
 * Parses a tool's output line by line: parse_line gives 1 (a record of
 * rec_size bytes into rec), 0 (a line to skip) or -1 (malformed: the whole
 * answer is refused, naming tool and the line). Empty lines are skipped.
 * Returns 0 with *ret (caller frees; NULL when none) and *ret_n, or
 * ERR_INVALID with ei.
 */
static int parse_lines(const char *text, size_t len, const char *tool,
                       int (*parse_line)(const char *line, size_t len, void *rec), size_t rec_size,
                       void **ret, size_t *ret_n, struct error_info *ei)
{
    _Alignas(max_align_t) char rec[512]; /* one record, of either kind */
    char *recs = NULL;
    size_t n = 0, cap = 0, line_no = 0;
    const char *p = text ? text : "", *end = p + (text ? len : 0);

    assert(rec_size <= sizeof(rec));
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        int rc;

        line_no++;
        if (l > 0) {
            rc = parse_line(p, l, rec);
            if (rc < 0) {
                free(recs);
                return errinfo_set(ei, ERR_INVALID, NULL, "%s: line %zu is malformed: '%.*s'", tool,
                                   line_no, (int)(l < 80 ? l : 80), p);
            }
            if (rc > 0) {
                ALLOC_GROW(recs, (n + 1) * rec_size, cap); /* recs and cap count bytes */
                memcpy(recs + n * rec_size, rec, rec_size);
                n++;
            }
        }
        p += l + (nl ? 1 : 0);
    }
    *ret = recs;
    *ret_n = n;
    return 0;
}

static int queue_line_rec(const char *line, size_t len, void *rec)
{
    return queue_line(line, len, rec);
}

int slurm_parse_queue(const char *text, size_t len, struct slurm_queue_job **ret, size_t *ret_n,
                      struct error_info *ei)
{
    void *jobs = NULL;
    int rc = parse_lines(text, len, "squeue", queue_line_rec, sizeof(**ret), &jobs, ret_n, ei);
    *ret = jobs;
    return rc;
}

/* A sacct time: seconds, local YYYY-MM-DDTHH:MM:SS, or 0 for none. -1 when malformed. */
static int64_t sacct_time(const char *p, size_t len)
{
    if ((len == 4 && memcmp(p, "None", 4) == 0) || (len == 7 && memcmp(p, "Unknown", 7) == 0))
        return 0;
    if (len > 0 && strspn(p, "0123456789") >= len)
        return queue_time(p, len);
    return len > 0 && len < 32 && strspn(p, "0123456789-T:") >= len ? slurm__jobcomp_time(p, len)
                                                                    : -1;
}

/* Parses one sacct line (without its newline). Returns 1 (a job), 0 (not a plain job: skip), -1. */
static int sacct_line(const char *line, size_t len, struct slurm_acct_job *j)
{
    static const char upper[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    const char *f[6], *p = line, *end = line + len;
    size_t flen[6], n = 0, word;
    char num[32];
    int64_t code, sig;

    /* Five fields end at the first five '|'; the name is the rest (sacct -P ends none). */
    while (n < 5) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        if (!bar)
            return -1;
        f[n] = p;
        flen[n++] = (size_t)(bar - p);
        p = bar + 1;
    }
    f[5] = p;
    flen[5] = (size_t)(end - p);

    memset(j, 0, sizeof(*j));
    if (flen[0] == 0 || flen[0] >= sizeof(num))
        return -1;
    memcpy(num, f[0], flen[0]);
    num[flen[0]] = '\0';
    if (strspn(num, "0123456789") != flen[0]) {
        /* 12_3, 12_[4-5], 12+0, 12.batch, 12.0: array, heterogeneous, steps */
        size_t head = strspn(num, "0123456789");
        return head > 0 && strchr("_+.", num[head]) ? 0 : -1;
    }
    if (parse_int64(num, 1, INT64_MAX, &j->job_id) < 0)
        return -1;
    /* "CANCELLED by 0": the word, then who */
    word = strspn(f[1], upper);
    if (word > flen[1])
        word = flen[1];
    if (word == 0 || word >= sizeof(j->state) ||
        (word < flen[1] && (flen[1] - word < 5 || memcmp(f[1] + word, " by ", 4) != 0)))
        return -1;
    copy_span(j->state, sizeof(j->state), f[1], word);
    j->start_s = sacct_time(f[2], flen[2]);
    j->end_s = sacct_time(f[3], flen[3]);
    if (j->start_s < 0 || j->end_s < 0)
        return -1;
    if (slurm__exit_pair(f[4], flen[4], &code, &sig) < 0)
        return -1;
    j->exit_code = (int)code;
    j->signal = (int)sig;
    copy_span(j->name, sizeof(j->name), f[5], flen[5]);
    return 1;
}

static int sacct_line_rec(const char *line, size_t len, void *rec)
{
    return sacct_line(line, len, rec);
}

int slurm_parse_sacct(const char *text, size_t len, struct slurm_acct_job **ret, size_t *ret_n,
                      struct error_info *ei)
{
    void *jobs = NULL;
    int rc = parse_lines(text, len, "sacct", sacct_line_rec, sizeof(**ret), &jobs, ret_n, ei);
    *ret = jobs;
    return rc;
}

/*
 * The value of key in `scontrol show config` output ("AccountingStorageType
 * = accounting_storage/slurmdbd", one setting a line), the last if several,
 * trimmed: 1 with *ret and *ret_len, 0 when absent.
 */
static int config_value(const char *text, size_t len, const char *key, const char **ret,
                        size_t *ret_len)
{
    const char *end = text + len;
    int found = 0;

    for (const char *line = text; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line)), *v, *ve;
        size_t n = eol ? (size_t)(eol - line) : (size_t)(end - line);
        size_t k = strcspn(line, " =");
        if (k > n)
            k = n;
        v = line + k;
        ve = line + n;
        while (v < ve && (*v == ' ' || *v == '='))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\r'))
            ve--;
        if (k == strlen(key) && memcmp(line, key, k) == 0) {
            *ret = v;
            *ret_len = (size_t)(ve - v);
            found = 1;
        }
        line = eol ? eol + 1 : end;
    }
    return found;
}

int slurm_parse_accounting_config(const char *text, size_t len)
{
    static const char dbd[] = "accounting_storage/slurmdbd";
    const char *v;
    size_t n;
    return text && config_value(text, len, "AccountingStorageType", &v, &n) && n == strlen(dbd) &&
           memcmp(v, dbd, n) == 0;
}

int slurm_parse_jobcomp_config(const char *text, size_t len, char *out, size_t out_len)
{
    static const char filetxt[] = "jobcomp/filetxt";
    const char *type, *loc;
    size_t type_len, loc_len;

    /* "JobCompLoc              = /var/log/slurm/jobcomp.txt" */
    if (!text || !config_value(text, len, "JobCompType", &type, &type_len) ||
        type_len != strlen(filetxt) || memcmp(type, filetxt, type_len) != 0 ||
        !config_value(text, len, "JobCompLoc", &loc, &loc_len) || loc_len == 0 || loc[0] != '/')
        return 0;
    if (loc_len >= out_len)
        return -1;
    memcpy(out, loc, loc_len);
    out[loc_len] = '\0';
    return 1;
}
