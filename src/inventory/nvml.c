/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvml.c: the NVML collector. libnvidia-ml.so.1 is loaded with dlopen at
 * each collection and unloaded after it, so a host without the NVIDIA
 * driver runs the same binary and gets a clear "NVML not available" error.
 */
#include "base/common.h"
#include "base/err.h"
#include "inventory/inventory-int.h"
#include "inventory/nvml-abi.h"

#include <dlfcn.h>

struct nvml {
#define NVML_PTR_(name, ret, args) ret(*name) args;
    NVML_FUNCTIONS(NVML_PTR_)
    NVML_MIG_FUNCTIONS(NVML_PTR_) /* NULL when the library lacks them */
#undef NVML_PTR_
};

static int load(void *lib, struct nvml *api, struct error_info *ei)
{
    void *sym;
    const char *why;

    memset(api, 0, sizeof(*api));
#define NVML_LOAD_(name, ret, args)                                                                \
    dlerror();                                                                                     \
    sym = dlsym(lib, #name);                                                                       \
    if (!sym) {                                                                                    \
        why = dlerror();                                                                           \
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "NVML not available: %s",                    \
                           why ? why : "symbol " #name " is NULL");                                \
    }                                                                                              \
    memcpy(&api->name, &sym, sizeof(sym));
    NVML_FUNCTIONS(NVML_LOAD_)
#undef NVML_LOAD_
#define NVML_LOAD_OPTIONAL_(name, ret, args)                                                       \
    sym = dlsym(lib, #name);                                                                       \
    if (sym)                                                                                       \
        memcpy(&api->name, &sym, sizeof(sym));
    NVML_MIG_FUNCTIONS(NVML_LOAD_OPTIONAL_)
#undef NVML_LOAD_OPTIONAL_
    dlerror();
    return 0;
}

static int failed(const struct nvml *api, struct error_info *ei, const char *call, nvmlReturn_t rc)
{
    const char *s = api->nvmlErrorString(rc);
    return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "nvml %s failed: %s (%d)", call,
                       s ? s : "unknown error", rc);
}

/*
 * The MIG devices of parent (its reading p, copied: adding readings may move
 * it). Without the optional MIG calls, none. A MIG device whose UUID cannot
 * be read is skipped; one without a profile in its name too.
 */
static int read_mig_devices(const struct nvml *api, nvmlDevice_t parent,
                            const struct inv_reading *p, struct inv_readings *out,
                            struct error_info *ei)
{
    struct inv_reading whole = *p;
    unsigned int max = 0;

    if (!api->nvmlDeviceGetMaxMigDeviceCount || !api->nvmlDeviceGetMigDeviceHandleByIndex ||
        api->nvmlDeviceGetMaxMigDeviceCount(parent, &max) != NVML_SUCCESS)
        return 0;
    for (unsigned int k = 0; k < max && k < 64; k++) {
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        char profile[sizeof(whole.mig_profile)];
        unsigned int gi;
        nvmlDevice_t mig;
        nvmlMemory_t mem;
        struct inv_reading *r;
        int32_t id = (int32_t)k;
        int err;

        /* NOT_FOUND: no MIG device at this index (the slots are sparse) */
        if (api->nvmlDeviceGetMigDeviceHandleByIndex(parent, k, &mig) != NVML_SUCCESS)
            continue;
        memset(uuid, 0, sizeof(uuid));
        memset(name, 0, sizeof(name));
        if (api->nvmlDeviceGetUUID(mig, uuid, sizeof(uuid)) != NVML_SUCCESS ||
            api->nvmlDeviceGetName(mig, name, sizeof(name)) != NVML_SUCCESS)
            continue;
        uuid[sizeof(uuid) - 1] = '\0';
        name[sizeof(name) - 1] = '\0';
        if (inv_mig_profile_of_name(name, profile, sizeof(profile)) < 0 ||
            strncmp(uuid, "MIG-", 4) != 0)
            continue;
        if (api->nvmlDeviceGetGpuInstanceId &&
            api->nvmlDeviceGetGpuInstanceId(mig, &gi) == NVML_SUCCESS && gi < 10000)
            id = (int32_t)gi;
        err = inv_readings_get(out, whole.uuid, id, &r);
        if (err < 0)
            return errinfo_set(ei, err, NULL, "nvml device %d: too many MIG devices", whole.index);
        r->source = INV_SRC_NVML;
        r->index = whole.index;
        r->mig_mode = 1;
        inv_copy_str(r->model, sizeof(r->model), whole.model);
        inv_copy_str(r->mig_profile, sizeof(r->mig_profile), profile);
        inv_copy_str(r->mig_uuid, sizeof(r->mig_uuid), uuid);
        if (api->nvmlDeviceGetMemoryInfo(mig, &mem) == NVML_SUCCESS) {
            r->fb_total_mib = (double)(mem.total >> 20);
            r->fb_free_mib = (double)(mem.free >> 20);
            r->fb_used_mib = (double)(mem.used >> 20);
        }
    }
    return 0;
}

static int read_device(const struct nvml *api, unsigned int i, struct inv_readings *out,
                       struct error_info *ei)
{
    nvmlDevice_t dev;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    nvmlMemory_t mem;
    nvmlUtilization_t util;
    unsigned int temp, power, cur, pending;
    struct inv_reading *r;
    nvmlReturn_t rc;
    int err;

    rc = api->nvmlDeviceGetHandleByIndex_v2(i, &dev);
    if (rc != NVML_SUCCESS)
        return failed(api, ei, "nvmlDeviceGetHandleByIndex_v2", rc);
    memset(uuid, 0, sizeof(uuid));
    rc = api->nvmlDeviceGetUUID(dev, uuid, sizeof(uuid));
    if (rc != NVML_SUCCESS)
        return failed(api, ei, "nvmlDeviceGetUUID", rc);
    uuid[sizeof(uuid) - 1] = '\0';
    err = inv_readings_get(out, uuid, -1, &r);
    if (err < 0)
        return errinfo_set(ei, err, NULL, "nvml device %u: bad or too many UUIDs", i);
    r->source = INV_SRC_NVML;
    r->index = (int32_t)i;
    memset(name, 0, sizeof(name));
    if (api->nvmlDeviceGetName(dev, name, sizeof(name)) == NVML_SUCCESS) {
        name[sizeof(name) - 1] = '\0';
        inv_copy_str(r->model, sizeof(r->model), name);
    }
    if (api->nvmlDeviceGetMemoryInfo(dev, &mem) == NVML_SUCCESS) {
        r->fb_total_mib = (double)(mem.total >> 20);
        r->fb_free_mib = (double)(mem.free >> 20);
        r->fb_used_mib = (double)(mem.used >> 20);
    }
    if (api->nvmlDeviceGetUtilizationRates(dev, &util) == NVML_SUCCESS)
        r->util_pct = util.gpu;
    if (api->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &temp) == NVML_SUCCESS)
        r->temp_c = temp;
    if (api->nvmlDeviceGetPowerUsage(dev, &power) == NVML_SUCCESS)
        r->power_w = power / 1000.0; /* milliwatts */
    if (api->nvmlDeviceGetMigMode(dev, &cur, &pending) == NVML_SUCCESS)
        r->mig_mode = cur == NVML_DEVICE_MIG_ENABLE ? 1 : 0;
    if (r->mig_mode == 1)
        return read_mig_devices(api, dev, r, out, ei);
    return 0;
}

int inv_nvml_collect(const char *library, struct inv_readings *out, struct error_info *ei)
{
    struct nvml api = {0};
    void *lib;
    unsigned int count = 0;
    nvmlReturn_t rc;
    int err;

    lib = dlopen(library ? library : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return errinfo_set(ei, ERR_UNAVAILABLE, NULL, "NVML not available: %s",
                           why ? why : "dlopen failed");
    }
    err = load(lib, &api, ei);
    if (err < 0) {
        dlclose(lib);
        return err;
    }
    rc = api.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        err = failed(&api, ei, "nvmlInit_v2", rc);
        dlclose(lib);
        return err;
    }
    rc = api.nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS)
        err = failed(&api, ei, "nvmlDeviceGetCount_v2", rc);
    for (unsigned int i = 0; err == 0 && i < count; i++)
        err = read_device(&api, i, out, ei);
    api.nvmlShutdown();
    dlclose(lib);
    return err < 0 ? err : (int)count;
}
