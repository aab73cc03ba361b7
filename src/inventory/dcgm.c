/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm.c: dcgm-exporter series to per-GPU readings. dcgm-exporter prints one
 * HELP/TYPE block per counter with one series per GPU (or per MIG GPU
 * instance, in its default flex mode), identified by the UUID label and,
 * for MIG, GPU_I_ID. Metrics we do not use are dropped before any label is
 * looked at.
 */
#include "base/common.h"
#include "base/err.h"
#include "inventory/inventory-int.h"

#include <math.h>

enum metric {
    M_NONE = 0,
    M_GPU_UTIL,
    M_GR_ACTIVE,
    M_FB_USED,
    M_FB_FREE,
    M_FB_RESERVED,
    M_POWER,
    M_TEMP,
};

static const struct {
    const char *name;
    enum metric m;
} metrics[] = {
    {"DCGM_FI_DEV_GPU_UTIL", M_GPU_UTIL},       {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", M_GR_ACTIVE},
    {"DCGM_FI_DEV_FB_USED", M_FB_USED},         {"DCGM_FI_DEV_FB_FREE", M_FB_FREE},
    {"DCGM_FI_DEV_FB_RESERVED", M_FB_RESERVED}, {"DCGM_FI_DEV_POWER_USAGE", M_POWER},
    {"DCGM_FI_DEV_GPU_TEMP", M_TEMP},
};

struct dctx {
    struct inv_readings *out;
    struct inv_dcgm_stats stats;
    struct error_info *ei;
    char last_name[64]; /* series come grouped by metric: remember the last lookup */
    enum metric last_m;
};

static enum metric metric_of(struct dctx *c, const char *name)
{
    if (strcmp(name, c->last_name) == 0)
        return c->last_m;
    c->last_m = M_NONE;
    for (size_t i = 0; i < ARRAY_SIZE(metrics); i++)
        if (strcmp(name, metrics[i].name) == 0)
            c->last_m = metrics[i].m;
    inv_copy_str(c->last_name, sizeof(c->last_name), name);
    return c->last_m;
}

static int small_int(struct dctx *c, const struct inv_prom_sample *s, const char *label,
                     const char *v, int32_t *ret)
{
    int32_t n = 0;
    if (!*v || strlen(v) > 4)
        goto bad;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            goto bad;
        n = n * 10 + (*p - '0');
    }
    *ret = n;
    return 0;
bad:
    return errinfo_set(c->ei, ERR_INVALID, NULL,
                       "line %zu: label %s=\"%.32s\" is not an integer 0..9999", s->line, label, v);
}

static int on_sample(void *ctx, const struct inv_prom_sample *s)
{
    struct dctx *c = ctx;
    enum metric m;
    const char *uuid = NULL, *gi_id = NULL, *gi_prof = NULL, *gpu = NULL, *model = NULL;
    const char *host = NULL, *pci = NULL, *pod = NULL, *ns = NULL, *ctr = NULL;
    struct inv_reading *r;
    int32_t inst = -1, idx = -1;
    int rc;

    c->stats.n_samples++;
    m = metric_of(c, s->name);
    if (m == M_NONE)
        return 0;
    for (size_t i = 0; i < s->n_labels; i++) {
        const char *n = s->labels[i].name, *v = s->labels[i].value;
        if (strcmp(n, "UUID") == 0)
            uuid = v;
        else if (strcmp(n, "gpu") == 0)
            gpu = v;
        else if (strcmp(n, "modelName") == 0)
            model = v;
        else if (strcmp(n, "Hostname") == 0 || strcmp(n, "hostname") == 0)
            host = v;
        else if (strcmp(n, "pci_bus_id") == 0)
            pci = v;
        else if (strcmp(n, "GPU_I_ID") == 0)
            gi_id = v;
        else if (strcmp(n, "GPU_I_PROFILE") == 0)
            gi_prof = v;
        else if (strcmp(n, "pod") == 0 || (!pod && strcmp(n, "pod_name") == 0))
            pod = v;
        else if (strcmp(n, "namespace") == 0 || (!ns && strcmp(n, "pod_namespace") == 0))
            ns = v;
        else if (strcmp(n, "container") == 0 || (!ctr && strcmp(n, "container_name") == 0))
            ctr = v;
    }
    if (!uuid || !*uuid) {
        c->stats.n_no_uuid++;
        return 0;
    }
    if (gi_id && *gi_id && (rc = small_int(c, s, "GPU_I_ID", gi_id, &inst)) < 0)
        return rc;
    if (gpu && (rc = small_int(c, s, "gpu", gpu, &idx)) < 0)
        return rc;
    rc = inv_readings_get(c->out, uuid, inst, &r);
    if (rc == ERR_INVALID)
        return errinfo_set(c->ei, rc, NULL, "line %zu: UUID label longer than %d bytes", s->line,
                           INV_UUID_MAX - 1);
    if (rc < 0)
        return errinfo_set(c->ei, rc, NULL, "line %zu: more than %zu GPUs in one scrape", s->line,
                           c->out->max);
    if (r->source == 0) {
        /* first sight of this GPU (instance) in the scrape: its identity */
        r->source = INV_SRC_DCGM;
        r->index = idx;
        if (model)
            inv_copy_str(r->model, sizeof(r->model), model);
        if (host)
            inv_copy_str(r->host, sizeof(r->host), host);
        if (pci)
            inv_copy_str(r->pci_bus_id, sizeof(r->pci_bus_id), pci);
        if (gi_prof)
            inv_copy_str(r->mig_profile, sizeof(r->mig_profile), gi_prof);
        if (pod)
            inv_copy_str(r->pod, sizeof(r->pod), pod);
        if (ns)
            inv_copy_str(r->namespace_, sizeof(r->namespace_), ns);
        if (ctr)
            inv_copy_str(r->container, sizeof(r->container), ctr);
        if (inst >= 0) {
            /* The parent of a MIG instance exists too, with MIG on and no metrics of its own. */
            struct inv_reading *parent;
            rc = inv_readings_get(c->out, uuid, -1, &parent);
            if (rc < 0)
                return errinfo_set(c->ei, rc, NULL, "line %zu: more than %zu GPUs in one scrape",
                                   s->line, c->out->max);
            r = inv_readings_find(c->out, uuid, inst); /* the get may have moved it */
            if (parent->source == 0) {
                parent->source = INV_SRC_DCGM;
                parent->index = idx;
                memcpy(parent->model, r->model, sizeof(r->model));
                memcpy(parent->host, r->host, sizeof(r->host));
                memcpy(parent->pci_bus_id, r->pci_bus_id, sizeof(r->pci_bus_id));
            }
            parent->mig_mode = 1;
            r->mig_mode = 1;
        }
    }
    c->stats.n_used++;
    switch (m) {
    case M_GPU_UTIL:
        r->util_pct = s->value;
        break;
    case M_GR_ACTIVE:
        r->gr_active = s->value;
        break;
    case M_FB_USED:
        r->fb_used_mib = s->value;
        break;
    case M_FB_FREE:
        r->fb_free_mib = s->value;
        break;
    case M_FB_RESERVED:
        r->fb_reserved_mib = s->value;
        break;
    case M_POWER:
        r->power_w = s->value;
        break;
    case M_TEMP:
        r->temp_c = s->value;
        break;
    case M_NONE:
        break;
    }
    return 0;
}

int inv_dcgm_parse(const char *data, size_t len, struct inv_readings *out,
                   struct inv_dcgm_stats *stats, struct error_info *ei)
{
    struct dctx c;
    int rc;

    memset(&c, 0, sizeof(c));
    c.out = out;
    c.ei = ei;
    rc = inv_prom_parse(data, len, NULL, on_sample, &c, ei);
    if (stats)
        *stats = c.stats;
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < out->n; i++) {
        struct inv_reading *r = &out->v[i];
        if (r->source == INV_SRC_DCGM && inv_has(r->fb_used_mib) && inv_has(r->fb_free_mib))
            r->fb_total_mib = r->fb_used_mib + r->fb_free_mib +
                              (inv_has(r->fb_reserved_mib) ? r->fb_reserved_mib : 0);
    }
    return (int)out->n;
}
