/* SPDX-License-Identifier: MIT */
/* libcuda.c - a stand-in for the CUDA driver (libcuda.so.1), for testing
 * patc's host side of the GPU path on a machine without one (mock_gpu.sh).
 * Device memory is host memory; modules load and kernels "launch" without
 * running, so C keeps what the host left there (NaN, or zeros where the
 * kernel adds into it) and every check must catch that.  Events read the
 * host clock.  MOCK_CUDA_FAIL=NAME makes the call NAME (say cuMemAlloc_v2)
 * fail with CUDA_ERROR_OUT_OF_MEMORY (2), to test that each failure is
 * reported. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long CuPtr;

/* the driver's entry points patc loads (backend_ptx/cuda.c) */
int cuInit(unsigned flags);
int cuDeviceGetCount(int *n);
int cuDeviceGet(int *dev, int ordinal);
int cuDeviceGetName(char *name, int len, int dev);
int cuDeviceGetAttribute(int *v, int attr, int dev);
int cuDevicePrimaryCtxRetain(void **ctx, int dev);
int cuDevicePrimaryCtxRelease_v2(int dev);
int cuCtxSetCurrent(void *ctx);
int cuCtxSynchronize(void);
int cuMemAlloc_v2(CuPtr *p, size_t bytes);
int cuMemFree_v2(CuPtr p);
int cuMemcpyHtoD_v2(CuPtr dst, const void *src, size_t n);
int cuMemcpyDtoH_v2(void *dst, CuPtr src, size_t n);
int cuMemcpyDtoDAsync_v2(CuPtr dst, CuPtr src, size_t n, void *stream);
int cuMemsetD32Async(CuPtr p, unsigned v, size_t n, void *stream);
int cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals);
int cuModuleLoadData(void **mod, const void *image);
int cuModuleUnload(void *mod);
int cuModuleGetFunction(void **fn, void *mod, const char *name);
int cuFuncSetAttribute(void *fn, int attr, int value);
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void *stream, void **args, void **extra);
int cuEventCreate(void **ev, unsigned flags);
int cuEventDestroy_v2(void *ev);
int cuEventRecord(void *ev, void *stream);
int cuEventSynchronize(void *ev);
int cuEventElapsedTime_v2(float *ms, void *a, void *b);
int cuGetErrorString(int r, const char **s);

/* MOCK_CUDA_FAIL names a call that fails, every time or (MOCK_CUDA_FAIL_AT
 * = n) only the nth time in the process (with MOCK_CUDA_STICKY, every call
 * after it too, as after a kernel's fault), as a kernel's fault would once
 * (the library is linked never to unload, so the count holds when the
 * driver is closed and opened again). */
static int fails(const char *name)
{
	const char *f = getenv("MOCK_CUDA_FAIL"), *at = getenv("MOCK_CUDA_FAIL_AT");
	static long calls;
	static bool stuck; /* MOCK_CUDA_STICKY: after a failure, every call fails (a kernel's fault) */
	if (stuck)
		return 2;
	if (!f || strcmp(f, name))
		return 0;
	if (at && ++calls != atol(at))
		return 0;
	stuck = getenv("MOCK_CUDA_STICKY") != NULL;
	return 2;
}

static void *host(CuPtr p) { return (void *)(uintptr_t)p; }

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

int cuInit(unsigned flags) { return flags ? 1 : fails("cuInit"); }
int cuDeviceGetCount(int *n) { return *n = 1, fails("cuDeviceGetCount"); }
int cuDeviceGet(int *dev, int ordinal) { return *dev = ordinal, fails("cuDeviceGet"); }

int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "mock GPU (no device)", (size_t)len - 1);
	name[len - 1] = 0;
	return fails("cuDeviceGetName");
}

int cuDeviceGetAttribute(int *v, int attr, int dev)
{
	(void)dev;
	*v = attr == 75 ? 9 : attr == 76 ? 0 : 132; /* compute capability 9.0, 132 multiprocessors */
	return fails("cuDeviceGetAttribute");
}

int cuDevicePrimaryCtxRetain(void **ctx, int dev) { return *ctx = (void *)(uintptr_t)(dev + 1), fails("cuDevicePrimaryCtxRetain"); }
int cuDevicePrimaryCtxRelease_v2(int dev) { return (void)dev, 0; }
int cuCtxSetCurrent(void *ctx) { return (void)ctx, fails("cuCtxSetCurrent"); }
int cuCtxSynchronize(void) { return fails("cuCtxSynchronize"); }

int cuMemAlloc_v2(CuPtr *p, size_t bytes)
{
	if (fails("cuMemAlloc_v2"))
		return 2;
	void *m = malloc(bytes);
	*p = (CuPtr)(uintptr_t)m;
	return m ? 0 : 2;
}

int cuMemFree_v2(CuPtr p) { return free(host(p)), 0; }
int cuMemcpyHtoD_v2(CuPtr dst, const void *src, size_t n) { return memcpy(host(dst), src, n), fails("cuMemcpyHtoD_v2"); }
int cuMemcpyDtoH_v2(void *dst, CuPtr src, size_t n) { return memcpy(dst, host(src), n), fails("cuMemcpyDtoH_v2"); }

int cuMemcpyDtoDAsync_v2(CuPtr dst, CuPtr src, size_t n, void *stream)
{
	(void)stream;
	memcpy(host(dst), host(src), n);
	return fails("cuMemcpyDtoDAsync_v2");
}

int cuMemsetD32Async(CuPtr p, unsigned v, size_t n, void *stream)
{
	(void)stream;
	uint32_t *w = host(p);
	for (size_t i = 0; i < n; i++)
		w[i] = v;
	return fails("cuMemsetD32Async");
}

int cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals)
{
	(void)n, (void)opts, (void)vals;
	*mod = (void *)(uintptr_t)1;
	return image && strstr(image, ".entry") ? fails("cuModuleLoadDataEx") : 218; /* not PTX */
}

int cuModuleLoadData(void **mod, const void *image)
{
	*mod = (void *)(uintptr_t)1;
	return image && strstr(image, ".entry") ? fails("cuModuleLoadData") : 218;
}

int cuModuleUnload(void *mod) { return (void)mod, 0; }
int cuModuleGetFunction(void **fn, void *mod, const char *name) { return (void)mod, (void)name, *fn = mod, fails("cuModuleGetFunction"); }

/* The dynamic shared memory a kernel opted in to (the last one that did),
 * as an H200 allows it: 227 KiB at most; a launch past 48 KiB without it
 * fails as a driver's would. */
static void *smem_fn;
static int smem_max;

int cuFuncSetAttribute(void *fn, int attr, int value)
{
	if (attr != 8 || value < 0 || value > 227 * 1024) /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
		return 1;
	const int r = fails("cuFuncSetAttribute");
	if (!r)
		smem_fn = fn, smem_max = value;
	return r;
}

int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem, void *stream, void **args, void **extra)
{
	(void)stream, (void)args, (void)extra;
	if (!gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024)
		return 1; /* CUDA_ERROR_INVALID_VALUE */
	if (smem > 48 * 1024 && (fn != smem_fn || smem > (unsigned)smem_max))
		return 1;
	return fails("cuLaunchKernel");
}

static double recorded[2];
int cuEventCreate(void **ev, unsigned flags)
{
	static uintptr_t next;
	(void)flags;
	*ev = (void *)++next;
	return fails("cuEventCreate");
}
int cuEventDestroy_v2(void *ev) { return (void)ev, 0; }
int cuEventRecord(void *ev, void *stream) { return (void)stream, recorded[((uintptr_t)ev - 1) & 1] = now_ms(), 0; }
int cuEventSynchronize(void *ev) { return (void)ev, fails("cuEventSynchronize"); }
int cuEventElapsedTime_v2(float *ms, void *a, void *b)
{
	(void)a, (void)b;
	*ms = (float)(recorded[1] - recorded[0]) + 1e-3f;
	return 0;
}

int cuGetErrorString(int r, const char **s)
{
	*s = r == 2 ? "out of memory (mock)" : r == 218 ? "not PTX (mock)" : "error (mock)";
	return 0;
}
