/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schedule.c: when each collector source runs. A pure state machine per
 * source: a fixed interval while healthy; after failures an exponential
 * delay (interval, 2x, 4x ... capped); stale at the first failure or when
 * no run succeeded for stale_after_ms. It never touches the data: the
 * caller keeps the last good readings and shows them as stale, with
 * last_ok_ms as their time.
 */
#include "base/common.h"
#include "inventory/inventory.h"

void inv_sched_init(struct inv_sched *s, int64_t interval_ms, int64_t timeout_ms,
                    int64_t backoff_max_ms, int64_t now_ms)
{
    assert(interval_ms > 0 && timeout_ms > 0 && backoff_max_ms >= interval_ms);
    memset(s, 0, sizeof(*s));
    s->interval_ms = interval_ms;
    s->timeout_ms = timeout_ms;
    s->backoff_max_ms = backoff_max_ms;
    s->stale_after_ms = 3 * interval_ms;
    s->next_due_ms = now_ms;
    s->stale = true; /* nothing collected yet */
}

bool inv_sched_due(struct inv_sched *s, int64_t now_ms)
{
    if (s->last_ok_ms > 0 && now_ms - s->last_ok_ms >= s->stale_after_ms)
        s->stale = true;
    return now_ms >= s->next_due_ms;
}

void inv_sched_ok(struct inv_sched *s, int64_t now_ms)
{
    s->last_ok_ms = now_ms;
    s->last_try_ms = now_ms;
    s->failures = 0;
    s->delay_ms = 0;
    s->stale = false;
    s->next_due_ms = now_ms + s->interval_ms;
}

void inv_sched_failed(struct inv_sched *s, int64_t now_ms)
{
    s->last_try_ms = now_ms;
    s->failures++;
    if (s->delay_ms == 0)
        s->delay_ms = s->interval_ms;
    else if (s->delay_ms > s->backoff_max_ms / 2)
        s->delay_ms = s->backoff_max_ms;
    else
        s->delay_ms *= 2;
    if (s->delay_ms > s->backoff_max_ms)
        s->delay_ms = s->backoff_max_ms;
    s->stale = true;
    s->next_due_ms = now_ms + s->delay_ms;
}
