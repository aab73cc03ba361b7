/* SPDX-License-Identifier: Apache-2.0 */
/*
 * decide.c: the retention's pure part: which directory entries are the
 * per-workload files of log-dir, and which of them have been kept long
 * enough. No clock and no I/O, so the rule is tested with plain data
 * (tests/retention/test_retention_decide.c).
 */
#include "base/common.h"

#include "model/model.h"
#include "retention/retention.h"

/*
 * A plain decimal number at *p (no sign, no leading zero unless it is "0")
 * within [min, max]; advances *p past it. False when there is none.
 */
static bool take_number(const char **p, int64_t min, int64_t max, int64_t *ret)
{
    const char *s = *p;
    int64_t v = 0;

    if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
        return false;
    for (; *s >= '0' && *s <= '9'; s++) {
        int d = *s - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return false;
    *p = s;
    *ret = v;
    return true;
}

bool retention_parse_name(const char *name, int64_t *ret_id)
{
    const char *p = name;
    int64_t id, replica;

    if (!take_number(&p, 1, INT64_MAX, &id) || *p++ != '.')
        return false;
    if (strcmp(p, "log") != 0 && strcmp(p, "slurm") != 0 &&
        !(take_number(&p, 0, INT32_MAX, &replica) && strcmp(p, ".run") == 0))
        return false;
    *ret_id = id;
    return true;
}

static const struct retention_workload *find(const struct retention_workload *ws, size_t n,
                                             int64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ws[mid].id == id)
            return &ws[mid];
        if (ws[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

size_t retention_decide(const char *const *names, size_t n_names,
                        const struct retention_workload *ws, size_t n_ws, int64_t now_ms,
                        int64_t keep_ms, bool *ret_remove)
{
    size_t n = 0;

    for (size_t i = 1; i < n_ws; i++)
        assert(ws[i - 1].id < ws[i].id);
    for (size_t i = 0; i < n_names; i++) {
        const struct retention_workload *w;
        int64_t id;

        ret_remove[i] = false;
        if (keep_ms <= 0 || !retention_parse_name(names[i], &id))
            continue;
        w = find(ws, n_ws, id);
        /* Kept unless the store says it ended, and when: ended_ms <= now - keep. */
        if (!w || !model_workload_state_ended(w->state) || w->finished_ms < 0 ||
            w->finished_ms > now_ms - keep_ms)
            continue;
        ret_remove[i] = true;
        n++;
    }
    return n;
}
