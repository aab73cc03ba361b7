/* SPDX-License-Identifier: Apache-2.0 */
/*
 * classify.c: the state of a GPU (busy, idle-allocated, free, down) and
 * idle policies, pure functions of their inputs. The thresholds are the
 * documented defaults of docs/inventory.md; each rule says why it exists.
 */
#include "base/common.h"
#include "inventory/inventory.h"

#include <math.h>

const char *inv_state_name(int state)
{
    switch (state) {
    case INV_STATE_FREE:
        return "free";
    case INV_STATE_BUSY:
        return "busy";
    case INV_STATE_IDLE_ALLOCATED:
        return "idle-allocated";
    case INV_STATE_DOWN:
        return "down";
    default:
        return "unknown";
    }
}

void inv_class_config_default(struct inv_class_config *cfg)
{
    cfg->window_ms = 30 * 60 * 1000;
    cfg->busy_activity = 0.05;
    cfg->busy_peak = 0.30;
    cfg->mem_busy_mib = 1024;
    cfg->down_after_missed = 3;
    cfg->down_after_ms = 5 * 60 * 1000;
}

static void set(struct inv_class_result *ret, int state, const char *reason)
{
    ret->state = state;
    ret->reason = reason;
}

void inv_classify(const struct inv_class_config *cfg, const struct inv_class_input *in,
                  struct inv_class_result *ret)
{
    bool has_act = !isnan(in->activity_avg) && in->n_samples > 0;
    bool mem_used = !isnan(in->mem_used_mib) && in->mem_used_mib >= cfg->mem_busy_mib;
    bool active;

    if (in->last_seen_ms <= 0) {
        set(ret, INV_STATE_DOWN, "never reported by any collector");
        return;
    }
    if (cfg->down_after_missed > 0 && in->missed_scrapes >= cfg->down_after_missed) {
        set(ret, INV_STATE_DOWN, "missing from the last scrapes");
        return;
    }
    if (cfg->down_after_ms > 0 && in->now_ms - in->last_seen_ms >= cfg->down_after_ms) {
        set(ret, INV_STATE_DOWN, "not seen for too long");
        return;
    }
    if (has_act)
        active = in->activity_avg >= cfg->busy_activity ||
                 (!isnan(in->activity_max) && in->activity_max >= cfg->busy_peak);
    else
        active = in->n_procs > 0 || mem_used;
    if (!in->allocated) {
        set(ret, INV_STATE_FREE,
            active ? "not allocated, but in use outside gpuaas" : "not allocated");
        return;
    }
    if (in->covered_ms < cfg->window_ms) {
        /* never call something reclaimable without a whole window of evidence */
        set(ret, INV_STATE_BUSY, "allocated; less than one window of samples");
        return;
    }
    if (active) {
        set(ret, INV_STATE_BUSY,
            has_act ? "allocated and active" : "allocated; processes or memory in use");
        return;
    }
    set(ret, INV_STATE_IDLE_ALLOCATED,
        has_act ? (mem_used || in->n_procs > 0
                       ? "allocated, holding memory or processes, but inactive for the window"
                       : "allocated and inactive for the window")
                : "allocated; no processes and no memory in use");
}

size_t inv_idle_apply(const struct inv_idle_policy *pol, const struct inv_idle_alloc *allocs,
                      size_t n, int *ret_actions)
{
    size_t n_act = 0;
    for (size_t i = 0; i < n; i++) {
        const struct inv_idle_alloc *a = &allocs[i];
        int act = INV_IDLE_NONE;
        if (pol->notify_after_ms > 0 && !a->notified && a->idle_ms >= pol->notify_after_ms)
            act |= INV_IDLE_NOTIFY;
        if (pol->stop_p2_after_ms > 0 && a->opportunistic && a->idle_ms >= pol->stop_p2_after_ms)
            act |= INV_IDLE_STOP;
        ret_actions[i] = act;
        if (act)
            n_act++;
    }
    return n_act;
}
