/* SPDX-License-Identifier: MIT */
/* libcublas.c - a stand-in for cuBLAS (libcublas.so.13) beside the mock
 * driver (libcuda.c): handles and GEMM calls that return success without
 * computing, so the callers' timing paths run. */
int cublasCreate_v2(void **h);
int cublasDestroy_v2(void *h);
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c, int ldc);
int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int at, int lda,
                 const void *b, int bt, int ldb, const void *beta, void *c, int ct, int ldc, int compute, int algo);

int cublasCreate_v2(void **h) { return *h = (void *)1, 0; }
int cublasDestroy_v2(void *h) { return (void)h, 0; }

int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c, int ldc)
{
	(void)h, (void)ta, (void)tb, (void)alpha, (void)a, (void)b, (void)beta, (void)c;
	return m > 0 && n > 0 && k > 0 && lda > 0 && ldb > 0 && ldc > 0 ? 0 : 7; /* CUBLAS_STATUS_INVALID_VALUE */
}

int cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *a, int at, int lda,
                 const void *b, int bt, int ldb, const void *beta, void *c, int ct, int ldc, int compute, int algo)
{
	(void)h, (void)ta, (void)tb, (void)alpha, (void)a, (void)at, (void)b, (void)bt, (void)beta, (void)c, (void)ct;
	(void)compute, (void)algo;
	return m > 0 && n > 0 && k > 0 && lda > 0 && ldb > 0 && ldc > 0 ? 0 : 7;
}
