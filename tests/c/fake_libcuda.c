/*
 * A stand-in for the NVIDIA driver's libcuda.so.1, for tests on machines without a GPU: the
 * CUDA driver API calls pulpie-rt asks before it opens a GPU provider (core/src/ort/cuda.rs),
 * answering for FAKE_CUDA_DEVICES GPUs (default 1; 0: cuInit fails as a driver without a
 * device does) named "Fake GPU", compute capability 9.0. Built by tests/test_gpu_devices.py:
 *   cc -shared -fPIC -o libcuda.so.1 tests/c/fake_libcuda.c
 */
#include <stdio.h>
#include <stdlib.h>

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101

static int devices(void) {
    const char *value = getenv("FAKE_CUDA_DEVICES");
    return value ? atoi(value) : 1;
}

int cuInit(unsigned int flags) {
    (void)flags;
    return devices() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

int cuDeviceGetCount(int *count) {
    *count = devices();
    return CUDA_SUCCESS;
}

int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

int cuDeviceGetName(char *name, int len, int device) {
    snprintf(name, (size_t)len, "Fake GPU %d", device);
    return CUDA_SUCCESS;
}

int cuDeviceGetAttribute(int *value, int attribute, int device) {
    (void)device;
    *value = attribute == 75 ? 9 : 0; /* COMPUTE_CAPABILITY_MAJOR 9, MINOR 0 */
    return CUDA_SUCCESS;
}

int cuGetErrorName(int error, const char **name) {
    *name = error == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE"
          : error == CUDA_ERROR_INVALID_DEVICE ? "CUDA_ERROR_INVALID_DEVICE"
          : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}
