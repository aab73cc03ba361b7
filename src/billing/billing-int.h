/* SPDX-License-Identifier: Apache-2.0 */
/* billing-int.h: helpers the files of src/billing share; nothing else includes it. */
#ifndef GPUAAS_BILLING_INT_H
#define GPUAAS_BILLING_INT_H

#include "billing/billing.h"

/* meter class of a priority class name ("owned" -> METER_OWNED). */
int billing__class_of(const char *priority_class);

/* GPU milli per replica of every flavor, for GPU-hour figures: sorted (id, gpu_milli) pairs. */
struct billing__flavor {
    int64_t id;
    int64_t gpu_milli;
    const char *name;
};
int billing__load_flavors(struct store_conn *c, struct arena *a, struct billing__flavor **ret,
                          size_t *ret_n, struct error_info *ei);
const struct billing__flavor *billing__flavor(const struct billing__flavor *fl, size_t n,
                                              int64_t id);

/* A run still open: a workload's open allocations, which all started together. */
struct billing__run {
    int64_t workload_id;
    int64_t started_ms;
    int replicas;
    const char *priority_class; /* what it runs as (its allocations'); in the caller's arena */
};
int billing__open_runs(struct store_conn *c, struct arena *a, struct billing__run **ret,
                       size_t *ret_n, struct error_info *ei);
/* End of the run's last ledger record, or run_started_ms when it has none. */
int billing__metered_until(struct store_conn *c, int64_t workload_id, int64_t run_started_ms,
                           struct arena *a, int64_t *ret, struct error_info *ei);

#endif
