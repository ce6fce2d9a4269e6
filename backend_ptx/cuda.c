/* SPDX-License-Identifier: MIT */
/* cuda.c - the CUDA driver API and cuBLAS through dlopen; see cuda.h.
 *
 * The prototypes are written here from the driver's documented ABI (the
 * versioned entry points that cuda.h's macros name), so that patc needs
 * no CUDA headers to build. */
#define _POSIX_C_SOURCE 200809L
#include "cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream;

enum {
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

typedef struct Driver {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*MemAlloc)(CuPtr *, size_t);
	CUresult (*MemFree)(CuPtr);
	CUresult (*MemcpyHtoD)(CuPtr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CuPtr, size_t);
	CUresult (*MemsetD32Async)(CuPtr, unsigned, size_t, CUstream);
	CUresult (*MemcpyDtoDAsync)(CuPtr, CuPtr, size_t, CUstream);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*FuncSetAttribute)(CUfunction, int, int);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
	                         unsigned, CUstream, void **, void **);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventDestroy)(CUevent);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*GetErrorString)(CUresult, const char **);
} Driver;

typedef int (*CublasCreate)(void **);
typedef int (*CublasDestroy)(void *);
typedef int (*CublasSgemm)(void *, int, int, int, int, int, const float *, const float *, int,
                           const float *, int, const float *, float *, int);
/* cublasGemmEx: handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
 * Btype, ldb, beta, C, Ctype, ldc, computeType, algo */
typedef int (*CublasGemmEx)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                            int, const void *, void *, int, int, int, int);

struct Cuda {
	void *lib;
	Driver d;
	CUdevice dev;
	CUcontext ctx;
	CUevent ev[2];
	char name[256];
	int cc, sms;
	/* cuBLAS, loaded on first use */
	int blas_state; /* 0 not tried, 1 loaded, -1 absent */
	void *blas_lib, *blas;
	CublasDestroy blas_destroy;
	CublasSgemm sgemm;
	CublasGemmEx gemm_ex;
	char blas_err[CUDA_ERR_MAX];
};

static bool check(Cuda *cu, CUresult r, const char *call, char err[CUDA_ERR_MAX])
{
	if (r == 0)
		return true;
	const char *msg = NULL;
	if (cu->d.GetErrorString)
		cu->d.GetErrorString(r, &msg);
	snprintf(err, CUDA_ERR_MAX, "CUDA driver: %s failed: %s (error %d)", call, msg ? msg : "unknown error", r);
	return false;
}

/* dlsym of the first of the names that the driver exports. */
static void *sym(void *lib, const char *a, const char *b)
{
	void *p = dlsym(lib, a);
	if (!p && b)
		p = dlsym(lib, b);
	return p;
}

Cuda *cuda_open(char err[CUDA_ERR_MAX])
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		snprintf(err, CUDA_ERR_MAX, "no CUDA driver: cannot load libcuda.so.1 (%s)",
		         why ? why : "not found");
		return NULL;
	}
	Cuda *cu = calloc(1, sizeof *cu);
	if (!cu) {
		dlclose(lib);
		snprintf(err, CUDA_ERR_MAX, "out of memory");
		return NULL;
	}
	cu->lib = lib;
	Driver *d = &cu->d;
	struct {
		void **slot;
		const char *a, *b;
	} syms[] = {
		{(void **)&d->Init, "cuInit", NULL},
		{(void **)&d->DeviceGetCount, "cuDeviceGetCount", NULL},
		{(void **)&d->DeviceGet, "cuDeviceGet", NULL},
		{(void **)&d->DeviceGetName, "cuDeviceGetName", NULL},
		{(void **)&d->DeviceGetAttribute, "cuDeviceGetAttribute", NULL},
		{(void **)&d->DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL},
		{(void **)&d->DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
		{(void **)&d->CtxSetCurrent, "cuCtxSetCurrent", NULL},
		{(void **)&d->CtxSynchronize, "cuCtxSynchronize", NULL},
		{(void **)&d->MemAlloc, "cuMemAlloc_v2", NULL},
		{(void **)&d->MemFree, "cuMemFree_v2", NULL},
		{(void **)&d->MemcpyHtoD, "cuMemcpyHtoD_v2", NULL},
		{(void **)&d->MemcpyDtoH, "cuMemcpyDtoH_v2", NULL},
		{(void **)&d->MemsetD32Async, "cuMemsetD32Async", NULL},
		{(void **)&d->MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL},
		{(void **)&d->ModuleLoadDataEx, "cuModuleLoadDataEx", NULL},
		{(void **)&d->ModuleUnload, "cuModuleUnload", NULL},
		{(void **)&d->ModuleGetFunction, "cuModuleGetFunction", NULL},
		{(void **)&d->FuncSetAttribute, "cuFuncSetAttribute", NULL},
		{(void **)&d->LaunchKernel, "cuLaunchKernel", NULL},
		{(void **)&d->EventCreate, "cuEventCreate", NULL},
		{(void **)&d->EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"},
		{(void **)&d->EventRecord, "cuEventRecord", NULL},
		{(void **)&d->EventSynchronize, "cuEventSynchronize", NULL},
		{(void **)&d->EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
		{(void **)&d->GetErrorString, "cuGetErrorString", NULL},
	};
	for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
		*syms[i].slot = sym(lib, syms[i].a, syms[i].b);
		if (!*syms[i].slot) {
			snprintf(err, CUDA_ERR_MAX, "the CUDA driver (libcuda.so.1) lacks %s: too old", syms[i].a);
			dlclose(lib);
			free(cu);
			return NULL;
		}
	}
	int count = 0, major = 0, minor = 0;
	bool ok = check(cu, d->Init(0), "cuInit", err) &&
	          check(cu, d->DeviceGetCount(&count), "cuDeviceGetCount", err);
	if (ok && count < 1) {
		snprintf(err, CUDA_ERR_MAX, "no CUDA device: the driver sees no GPU");
		ok = false;
	}
	ok = ok && check(cu, d->DeviceGet(&cu->dev, 0), "cuDeviceGet", err) &&
	     check(cu, d->DeviceGetName(cu->name, sizeof cu->name, cu->dev), "cuDeviceGetName", err) &&
	     check(cu, d->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev),
	           "cuDeviceGetAttribute", err) &&
	     check(cu, d->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev),
	           "cuDeviceGetAttribute", err) &&
	     check(cu, d->DeviceGetAttribute(&cu->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu->dev),
	           "cuDeviceGetAttribute", err) &&
	     check(cu, d->DevicePrimaryCtxRetain(&cu->ctx, cu->dev), "cuDevicePrimaryCtxRetain", err) &&
	     check(cu, d->CtxSetCurrent(cu->ctx), "cuCtxSetCurrent", err) &&
	     check(cu, d->EventCreate(&cu->ev[0], 0), "cuEventCreate", err) &&
	     check(cu, d->EventCreate(&cu->ev[1], 0), "cuEventCreate", err);
	if (!ok) {
		if (cu->ctx)
			d->DevicePrimaryCtxRelease(cu->dev);
		dlclose(lib);
		free(cu);
		return NULL;
	}
	cu->cc = major * 10 + minor;
	return cu;
}

void cuda_close(Cuda *cu)
{
	if (!cu)
		return;
	if (cu->blas)
		cu->blas_destroy(cu->blas);
	if (cu->blas_lib)
		dlclose(cu->blas_lib);
	for (int i = 0; i < 2; i++)
		if (cu->ev[i])
			cu->d.EventDestroy(cu->ev[i]);
	cu->d.DevicePrimaryCtxRelease(cu->dev);
	dlclose(cu->lib);
	free(cu);
}

const char *cuda_device_name(const Cuda *cu) { return cu->name; }
int cuda_compute_capability(const Cuda *cu) { return cu->cc; }
int cuda_multiprocessors(const Cuda *cu) { return cu->sms; }

bool cuda_alloc(Cuda *cu, CuPtr *p, size_t bytes, char err[CUDA_ERR_MAX])
{
	*p = 0;
	return check(cu, cu->d.MemAlloc(p, bytes ? bytes : 4), "cuMemAlloc", err);
}

void cuda_free(Cuda *cu, CuPtr p)
{
	if (p)
		cu->d.MemFree(p);
}

bool cuda_upload(Cuda *cu, CuPtr dst, const void *src, size_t bytes, char err[CUDA_ERR_MAX])
{
	return !bytes || check(cu, cu->d.MemcpyHtoD(dst, src, bytes), "cuMemcpyHtoD", err);
}

bool cuda_download(Cuda *cu, void *dst, CuPtr src, size_t bytes, char err[CUDA_ERR_MAX])
{
	return !bytes || check(cu, cu->d.MemcpyDtoH(dst, src, bytes), "cuMemcpyDtoH", err);
}

bool cuda_fill32(Cuda *cu, CuPtr p, uint32_t v, size_t n, char err[CUDA_ERR_MAX])
{
	return !n || check(cu, cu->d.MemsetD32Async(p, v, n, NULL), "cuMemsetD32Async", err);
}

bool cuda_copy(Cuda *cu, CuPtr dst, CuPtr src, size_t bytes, char err[CUDA_ERR_MAX])
{
	return !bytes || check(cu, cu->d.MemcpyDtoDAsync(dst, src, bytes, NULL), "cuMemcpyDtoDAsync", err);
}

bool cuda_sync(Cuda *cu, char err[CUDA_ERR_MAX])
{
	return check(cu, cu->d.CtxSynchronize(), "cuCtxSynchronize (a kernel failed)", err);
}

bool cuda_load_ptx(Cuda *cu, const char *ptx, void **module, char err[CUDA_ERR_MAX])
{
	static char log[4096];
	log[0] = 0;
	int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *vals[] = {log, (void *)(uintptr_t)sizeof log};
	CUresult r = cu->d.ModuleLoadDataEx(module, ptx, 2, opts, vals);
	if (r != 0) {
		check(cu, r, "cuModuleLoadDataEx", err);
		if (log[0]) {
			size_t n = strlen(err);
			snprintf(err + n, CUDA_ERR_MAX - n, ": %s", log);
		}
		return false;
	}
	return true;
}

void cuda_unload(Cuda *cu, void *module)
{
	if (module)
		cu->d.ModuleUnload(module);
}

bool cuda_kernel(Cuda *cu, void *module, const char *name, void **fn, char err[CUDA_ERR_MAX])
{
	return check(cu, cu->d.ModuleGetFunction(fn, module, name), "cuModuleGetFunction", err);
}

bool cuda_kernel_smem(Cuda *cu, void *fn, int bytes, char err[CUDA_ERR_MAX])
{
	/* cuda.h: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES 8 */
	return check(cu, cu->d.FuncSetAttribute(fn, 8, bytes),
	             "cuFuncSetAttribute (the kernel's dynamic shared memory)", err);
}

bool cuda_launch(Cuda *cu, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem, void **args,
                 char err[CUDA_ERR_MAX])
{
	return check(cu,
	             cu->d.LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem, NULL,
	                                args, NULL),
	             "cuLaunchKernel", err);
}

bool cuda_record(Cuda *cu, int which, char err[CUDA_ERR_MAX])
{
	return check(cu, cu->d.EventRecord(cu->ev[which], NULL), "cuEventRecord", err);
}

bool cuda_elapsed_ms(Cuda *cu, float *ms, char err[CUDA_ERR_MAX])
{
	return check(cu, cu->d.EventSynchronize(cu->ev[1]), "cuEventSynchronize (a kernel failed)", err) &&
	       check(cu, cu->d.EventElapsedTime(ms, cu->ev[0], cu->ev[1]), "cuEventElapsedTime", err);
}

static bool load_cublas(Cuda *cu)
{
	if (cu->blas_state)
		return cu->blas_state > 0;
	cu->blas_state = -1;
	const char *env = getenv("PATC_CUBLAS");
	const char *names[] = {env && *env ? env : NULL, "libcublas.so.13", "libcublas.so.12",
	                       "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12"};
	for (size_t i = 0; i < sizeof names / sizeof *names && !cu->blas_lib; i++)
		if (names[i])
			cu->blas_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!cu->blas_lib) {
		snprintf(cu->blas_err, CUDA_ERR_MAX, "cuBLAS not found (libcublas.so.13; set PATC_CUBLAS to its path)");
		return false;
	}
	CublasCreate create = (CublasCreate)sym(cu->blas_lib, "cublasCreate_v2", NULL);
	cu->blas_destroy = (CublasDestroy)sym(cu->blas_lib, "cublasDestroy_v2", NULL);
	cu->sgemm = (CublasSgemm)sym(cu->blas_lib, "cublasSgemm_v2", NULL);
	cu->gemm_ex = (CublasGemmEx)sym(cu->blas_lib, "cublasGemmEx", NULL);
	int r = -1;
	if (!create || !cu->blas_destroy || !cu->sgemm || !cu->gemm_ex || (r = create(&cu->blas)) != 0) {
		snprintf(cu->blas_err, CUDA_ERR_MAX, "cuBLAS could not start (cublasCreate: status %d)", r);
		cu->blas = NULL;
		return false;
	}
	cu->blas_state = 1;
	return true;
}

bool cuda_sgemm(Cuda *cu, bool kn, int64_t M, int64_t K, int64_t N, CuPtr w, CuPtr x, CuPtr c,
                char err[CUDA_ERR_MAX])
{
	if (!load_cublas(cu)) {
		snprintf(err, CUDA_ERR_MAX, "%s", cu->blas_err);
		return false;
	}
	const float one = 1, zero = 0;
	enum { N_ = 0, T_ = 1 };
	/* column-major views of the row-major operands */
	int r = kn ? cu->sgemm(cu->blas, N_, N_, (int)N, (int)M, (int)K, &one, (const float *)(uintptr_t)x,
	                       (int)N, (const float *)(uintptr_t)w, (int)K, &zero, (float *)(uintptr_t)c, (int)N)
	           : cu->sgemm(cu->blas, T_, N_, (int)M, (int)N, (int)K, &one, (const float *)(uintptr_t)w,
	                       (int)K, (const float *)(uintptr_t)x, (int)K, &zero, (float *)(uintptr_t)c, (int)M);
	if (r != 0) {
		snprintf(err, CUDA_ERR_MAX, "cublasSgemm failed: status %d", r);
		return false;
	}
	return true;
}

bool cuda_gemm16(Cuda *cu, bool f16, bool kn, int64_t M, int64_t K, int64_t N, CuPtr w, CuPtr x, CuPtr c,
                 char err[CUDA_ERR_MAX])
{
	if (!load_cublas(cu)) {
		snprintf(err, CUDA_ERR_MAX, "%s", cu->blas_err);
		return false;
	}
	const float one = 1, zero = 0;
	/* library_types.h and cublas_api.h: CUDA_R_32F 0, CUDA_R_16F 2,
	 * CUDA_R_16BF 14; CUBLAS_COMPUTE_32F 68; CUBLAS_GEMM_DEFAULT -1 */
	enum { N_ = 0, T_ = 1, R32F = 0, R16F = 2, R16BF = 14, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
	const int in = f16 ? R16F : R16BF;
	/* column-major views of the row-major operands, as cuda_sgemm */
	int r = kn ? cu->gemm_ex(cu->blas, N_, N_, (int)N, (int)M, (int)K, &one, (const void *)(uintptr_t)x, in, (int)N,
	                         (const void *)(uintptr_t)w, in, (int)K, &zero, (void *)(uintptr_t)c, R32F, (int)N,
	                         COMPUTE_32F, GEMM_DEFAULT)
	           : cu->gemm_ex(cu->blas, T_, N_, (int)M, (int)N, (int)K, &one, (const void *)(uintptr_t)w, in, (int)K,
	                         (const void *)(uintptr_t)x, in, (int)K, &zero, (void *)(uintptr_t)c, R32F, (int)M,
	                         COMPUTE_32F, GEMM_DEFAULT);
	if (r != 0) {
		snprintf(err, CUDA_ERR_MAX, "cublasGemmEx (%s) failed: status %d", f16 ? "f16" : "bf16", r);
		return false;
	}
	return true;
}
