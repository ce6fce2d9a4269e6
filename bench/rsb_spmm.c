/* SPDX-License-Identifier: MIT */
/* rsb_spmm.c - the second CPU sparse baseline of `make bench`: librsb's
 * sparse x dense product (rsb_spmm, its Recursive Sparse Blocks format) on
 * the same mask as patc's kernel, autotuned for the product as librsb's
 * documentation has users do before repeated products.
 */
#define _POSIX_C_SOURCE 200809L
#include "rsb_spmm.h"

#include "support/util.h"

#include <rsb.h>
#include <stdio.h>
#include <stdlib.h>

/* rsb.h includes complex.h, whose I is a macro: no variable here is named I. */

static bool inited;

bool rsb_bench_init(void)
{
	if (!inited && rsb_lib_init(RSB_NULL_INIT_OPTIONS) != RSB_ERR_NO_ERROR)
		return false;
	inited = true;
	return true;
}

void rsb_bench_exit(void)
{
	if (inited)
		rsb_lib_exit(RSB_NULL_EXIT_OPTIONS);
	inited = false;
}

typedef struct RsbCall {
	struct rsb_mtx_t *a;
	const float *x;
	float *c;
	int64_t N;
} RsbCall;

static void rsb_call(void *arg)
{
	const RsbCall *r = arg;
	const float one = 1, zero = 0;
	rsb_spmm(RSB_TRANSPOSITION_N, &one, r->a, (rsb_coo_idx_t)r->N, RSB_FLAG_WANT_ROW_MAJOR_ORDER, r->x,
	         (rsb_nnz_idx_t)r->N, &zero, r->c, (rsb_nnz_idx_t)r->N);
}

double rsb_spmm_us(const float *w, int64_t M, int64_t K, const float *x, int64_t N, int threads, int reps,
                   float *c)
{
	rsb_int_t nt = threads;
	if (rsb_lib_set_opt(RSB_IO_WANT_EXECUTING_THREADS, &nt) != RSB_ERR_NO_ERROR)
		return -1;
	int64_t nnz = 0;
	for (int64_t i = 0; i < M * K; i++)
		nnz += w[i] != 0.0f;
	rsb_coo_idx_t *ri = malloc((size_t)(nnz ? nnz : 1) * sizeof *ri), *ci = malloc((size_t)(nnz ? nnz : 1) * sizeof *ci);
	float *v = malloc((size_t)(nnz ? nnz : 1) * sizeof *v);
	if (!ri || !ci || !v) {
		free(ri), free(ci), free(v);
		return -1;
	}
	int64_t n = 0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++)
			if (w[m * K + k] != 0.0f)
				ri[n] = (rsb_coo_idx_t)m, ci[n] = (rsb_coo_idx_t)k, v[n] = w[m * K + k], n++;
	rsb_err_t e = RSB_ERR_NO_ERROR;
	struct rsb_mtx_t *a = rsb_mtx_alloc_from_coo_const(v, ri, ci, (rsb_nnz_idx_t)nnz, RSB_NUMERICAL_TYPE_FLOAT,
	                                                   (rsb_coo_idx_t)M, (rsb_coo_idx_t)K, 1, 1, RSB_FLAG_NOFLAGS, &e);
	free(ri), free(ci), free(v);
	if (!a || e != RSB_ERR_NO_ERROR)
		return -1;
	RsbCall r = {a, x, c, N};
	/* a new matrix where the tuner finds a faster layout; the thread count kept */
	const float one = 1, zero = 0;
	e = rsb_tune_spmm(&r.a, NULL, NULL, 0, 0.0, RSB_TRANSPOSITION_N, &one, NULL, (rsb_coo_idx_t)N,
	                  RSB_FLAG_WANT_ROW_MAJOR_ORDER, x, (rsb_nnz_idx_t)N, &zero, c, (rsb_nnz_idx_t)N);
	if (e != RSB_ERR_NO_ERROR) {
		rsb_mtx_free(r.a);
		return -1;
	}
	const double us = util_time_us(rsb_call, &r, reps);
	rsb_call(&r); /* C as the caller checks it */
	rsb_mtx_free(r.a);
	return us;
}
