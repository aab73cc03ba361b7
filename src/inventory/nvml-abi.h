/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nvml-abi.h: the few NVML types and signatures gpuaas uses, declared with
 * their real ABI (as in NVIDIA's nvml.h) so that the build needs no NVIDIA
 * package. nvml.c looks the functions up with dlsym; the tests' fake
 * library defines them (with NVML_ABI_PROTOTYPES).
 */
#ifndef GPUAAS_NVML_ABI_H
#define GPUAAS_NVML_ABI_H

typedef int nvmlReturn_t; /* an enum in nvml.h: int-sized */
#define NVML_SUCCESS 0
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6

typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct nvmlMemory_st {
    unsigned long long total; /* bytes */
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlUtilization_st {
    unsigned int gpu;    /* percent of time a kernel ran, over the last sample period */
    unsigned int memory; /* percent of time memory was read or written */
} nvmlUtilization_t;

typedef int nvmlTemperatureSensors_t; /* an enum in nvml.h */
#define NVML_TEMPERATURE_GPU 0

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

#define NVML_FUNCTIONS(X)                                                                          \
    X(nvmlInit_v2, nvmlReturn_t, (void))                                                           \
    X(nvmlShutdown, nvmlReturn_t, (void))                                                          \
    X(nvmlErrorString, const char *, (nvmlReturn_t result))                                        \
    X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *deviceCount))                            \
    X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t, (unsigned int index, nvmlDevice_t *device))     \
    X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char *uuid, unsigned int length))     \
    X(nvmlDeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char *name, unsigned int length))     \
    X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t * memory))         \
    X(nvmlDeviceGetUtilizationRates, nvmlReturn_t,                                                 \
      (nvmlDevice_t device, nvmlUtilization_t * utilization))                                      \
    X(nvmlDeviceGetTemperature, nvmlReturn_t,                                                      \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp))              \
    X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int *power))           \
    X(nvmlDeviceGetMigMode, nvmlReturn_t,                                                          \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))

/*
 * Optional: MIG devices (R470 and later). A library without them is used
 * as before, whole GPUs only.
 */
#define NVML_MIG_FUNCTIONS(X)                                                                      \
    X(nvmlDeviceGetMaxMigDeviceCount, nvmlReturn_t, (nvmlDevice_t device, unsigned int *count))    \
    X(nvmlDeviceGetMigDeviceHandleByIndex, nvmlReturn_t,                                           \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                          \
    X(nvmlDeviceGetGpuInstanceId, nvmlReturn_t, (nvmlDevice_t device, unsigned int *id))

#ifdef NVML_ABI_PROTOTYPES
#define NVML_PROTO_(name, ret, args) ret name args;
NVML_FUNCTIONS(NVML_PROTO_)
NVML_MIG_FUNCTIONS(NVML_PROTO_)
#undef NVML_PROTO_
#endif

#endif
