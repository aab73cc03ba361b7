/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_nvml.c: a test-only libnvidia-ml.so.1 with the ABI of nvml-abi.h.
 * Two devices: 0 is an H200 with MIG off, 1 an H100 with MIG on that does
 * not support power readings, with two MIG devices (slots 0 and 2, GPU
 * instances 1 and 2: 1g.10gb and 3g.40gb). The values are what
 * test_inventory_collectors.c expects to read back. With FAKE_NVML_MIG_FILE
 * set, only as many MIG devices as the number in that file (none when it
 * is missing). Built with FAKE_NVML_NO_MIG: a driver without the MIG calls.
 */
#define NVML_ABI_PROTOTYPES
#include "inventory/nvml-abi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nvmlDevice_st {
    const char *uuid, *name;
    unsigned long long total, used;
    unsigned int util, temp, power_mw, mig;
    unsigned int gi; /* a MIG device's GPU instance id */
};

static struct nvmlDevice_st devices[2] = {
    {"GPU-fa0e0000-0000-4000-8000-000000000000", "NVIDIA H200", 150754820096ULL, 10737418240ULL, 87,
     55, 512250, NVML_DEVICE_MIG_DISABLE, 0},
    {"GPU-fa0e0000-0000-4000-8000-000000000001", "NVIDIA H100 80GB HBM3", 85520809984ULL, 0, 0, 33,
     0, NVML_DEVICE_MIG_ENABLE, 0},
};
static int initialised;

nvmlReturn_t nvmlInit_v2(void)
{
    initialised++;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    return result == NVML_ERROR_NOT_SUPPORTED ? "Not Supported" : "Unknown Error";
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!initialised)
        return 1; /* NVML_ERROR_UNINITIALIZED */
    *deviceCount = 2;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (index >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *device = &devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    snprintf(uuid, length, "%s", device->uuid);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    snprintf(name, length, "%s", device->name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    memory->total = device->total;
    memory->used = device->used;
    memory->free = device->total - device->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    utilization->gpu = device->util;
    utilization->memory = device->util / 2;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp)
{
    if (sensorType != NVML_TEMPERATURE_GPU)
        return 2;
    *temp = device->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    if (device->mig == NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    *power = device->power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    *currentMode = device->mig;
    *pendingMode = device->mig;
    return NVML_SUCCESS;
}

#ifndef FAKE_NVML_NO_MIG
static struct nvmlDevice_st mig_devices[3] = {
    {"MIG-fa0e0000-0000-4000-8000-00000000a001", "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
     10468982784ULL, 0, 0, 0, 0, 0, 1},
    {NULL, NULL, 0, 0, 0, 0, 0, 0, 0},
    {"MIG-fa0e0000-0000-4000-8000-00000000a002", "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
     42580574208ULL, 1073741824ULL, 0, 0, 0, 0, 2},
};

/* How many MIG devices exist now: 2, or the number in FAKE_NVML_MIG_FILE. */
static unsigned int mig_count(void)
{
    const char *path = getenv("FAKE_NVML_MIG_FILE");
    unsigned int n = 0;
    FILE *f;
    if (!path)
        return 2;
    f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%u", &n) != 1)
        n = 0;
    fclose(f);
    return n;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    *count = device->mig == NVML_DEVICE_MIG_ENABLE ? 3 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
    unsigned int n = mig_count();
    if (device->mig != NVML_DEVICE_MIG_ENABLE || index >= 3 || !mig_devices[index].uuid ||
        (index == 0 && n < 1) || (index == 2 && n < 2))
        return NVML_ERROR_NOT_FOUND;
    *migDevice = &mig_devices[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    if (!device->gi)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT: not a MIG device */
    *id = device->gi;
    return NVML_SUCCESS;
}
#endif
