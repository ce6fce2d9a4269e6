/* SPDX-License-Identifier: MIT */
/* cuda.h - the CUDA driver API and cuBLAS, loaded at run time with dlopen
 * ("libcuda.so.1", "libcublas.so.13"), so that patc builds, runs and
 * passes its tests on machines with no GPU and no driver.  Every call's
 * result is checked; a failure fills err with the call and the driver's
 * message. */
#ifndef PATC_CUDA_H
#define PATC_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CUDA_ERR_MAX = 512 };

typedef unsigned long long CuPtr;
typedef struct Cuda Cuda;

/* Loads the driver, takes device 0's primary context.  NULL when there is
 * no driver or no device (err says which). */
Cuda *cuda_open(char err[CUDA_ERR_MAX]);
void cuda_close(Cuda *cu);
const char *cuda_device_name(const Cuda *cu);
int cuda_compute_capability(const Cuda *cu); /* e.g. 90 */
int cuda_multiprocessors(const Cuda *cu);

bool cuda_alloc(Cuda *cu, CuPtr *p, size_t bytes, char err[CUDA_ERR_MAX]);
void cuda_free(Cuda *cu, CuPtr p);
bool cuda_upload(Cuda *cu, CuPtr dst, const void *src, size_t bytes, char err[CUDA_ERR_MAX]);
bool cuda_download(Cuda *cu, void *dst, CuPtr src, size_t bytes, char err[CUDA_ERR_MAX]);
/* Sets n 32-bit words to v (asynchronously, on the default stream). */
bool cuda_fill32(Cuda *cu, CuPtr p, uint32_t v, size_t n, char err[CUDA_ERR_MAX]);
/* Copies bytes from src to dst on the device (asynchronously, likewise). */
bool cuda_copy(Cuda *cu, CuPtr dst, CuPtr src, size_t bytes, char err[CUDA_ERR_MAX]);
bool cuda_sync(Cuda *cu, char err[CUDA_ERR_MAX]);

/* A module from PTX text, and a kernel of it. */
bool cuda_load_ptx(Cuda *cu, const char *ptx, void **module, char err[CUDA_ERR_MAX]);
void cuda_unload(Cuda *cu, void *module);
bool cuda_kernel(Cuda *cu, void *module, const char *name, void **fn, char err[CUDA_ERR_MAX]);
/* Lets fn take up to bytes of dynamic shared memory a block (past 48 KiB
 * a kernel must opt in); a launch gives it smem bytes. */
bool cuda_kernel_smem(Cuda *cu, void *fn, int bytes, char err[CUDA_ERR_MAX]);
bool cuda_launch(Cuda *cu, void *fn, const unsigned grid[3], const unsigned block[3], unsigned smem, void **args,
                 char err[CUDA_ERR_MAX]);

/* Events on the default stream: a pair brackets what is timed. */
bool cuda_record(Cuda *cu, int which, char err[CUDA_ERR_MAX]); /* which: 0 start, 1 stop */
bool cuda_elapsed_ms(Cuda *cu, float *ms, char err[CUDA_ERR_MAX]);

/* Dense sgemm through cuBLAS (default math: no TF32), row-major: layout
 * kn: C[M x N] = W[M x K] X[K x N]; nk: C[N x M] = X[N x K] W^T.  false
 * with err when cuBLAS is absent ($PATC_CUBLAS names the library to try
 * first) or the call fails. */
bool cuda_sgemm(Cuda *cu, bool kn, int64_t M, int64_t K, int64_t N, CuPtr w, CuPtr x, CuPtr c,
                char err[CUDA_ERR_MAX]);
/* The same with W and X in f16 (f16) or bf16, C in f32, accumulating in
 * f32 (cublasGemmEx). */
bool cuda_gemm16(Cuda *cu, bool f16, bool kn, int64_t M, int64_t K, int64_t N, CuPtr w, CuPtr x, CuPtr c,
                 char err[CUDA_ERR_MAX]);

#endif
