/* SPDX-License-Identifier: MIT */
/* metrics.c - what a mask keeps (docs/language.md §13).
 *
 * Retained importance R = kept / total over the real weights (padding has
 * none); the unstructured bound R_u keeps the same number of weights, the
 * largest ones, and so bounds R from above for any pattern.  The loss rates
 * 1 - R and 1 - R_u, their difference and ratio are reported.  With
 * calibration activations X (n tokens x K), the relative output error
 * ||X (W - W_s)^T||_F / ||X W^T||_F is computed with OpenBLAS sgemm, on
 * inputs scaled by powers of two where float32 cannot hold the product.
 */
#include "prune.h"
#include "../support/util.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { BUCKETS = 1 << 16 };

static uint32_t key_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u & 0x7fffffffu; /* non-negative: -0 is 0; order of bits = order of values */
}

double prune_top_sum(const float *v, int64_t n, int64_t count)
{
	if (count <= 0)
		return 0;
	if (count >= n) {
		double s = 0;
		for (int64_t i = 0; i < n; i++)
			s += v[i];
		return s;
	}
	/* Radix selection in two passes of 16 bits: count the high halves to
	 * find the bucket holding the count-th largest value; then add every
	 * value above that bucket, histogram the bucket by its low half, and
	 * take what is still needed from its top. */
	int64_t *cnt = calloc(BUCKETS, sizeof *cnt);
	double *sum = calloc(BUCKETS, sizeof *sum);
	if (!cnt || !sum)
		util_oom();
	for (int64_t i = 0; i < n; i++)
		cnt[key_of(v[i]) >> 16]++;
	int64_t need = count;
	int hi = BUCKETS - 1;
	for (; hi >= 0; hi--) {
		if (cnt[hi] >= need)
			break;
		need -= cnt[hi];
	}
	memset(cnt, 0, BUCKETS * sizeof *cnt);
	double total = 0;
	const uint32_t top = (uint32_t)hi << 16;
	for (int64_t i = 0; i < n; i++) {
		uint32_t k = key_of(v[i]);
		if (k >= top + 0x10000u) {
			total += v[i];
		} else if (k >= top) {
			cnt[k & 0xffff]++;
			sum[k & 0xffff] += v[i];
		}
	}
	for (int lo = BUCKETS - 1; lo >= 0 && need > 0; lo--) {
		if (cnt[lo] <= need) {
			need -= cnt[lo];
			total += sum[lo];
		} else {
			uint32_t bits = top | (uint32_t)lo;
			float f;
			memcpy(&f, &bits, 4);
			total += (double)need * f; /* equal values: any need of them */
			need = 0;
		}
	}
	free(cnt);
	free(sum);
	return total;
}

void prune_bound_init(PruneBound *b, const float *v, int64_t n)
{
	memset(b, 0, sizeof *b);
	b->n = n;
	b->start = calloc(BUCKETS + 1, sizeof *b->start);
	b->sum = calloc(BUCKETS, sizeof *b->sum);
	b->keys = malloc((size_t)(n > 0 ? n : 1) * sizeof *b->keys);
	int64_t *at = malloc(BUCKETS * sizeof *at);
	if (!b->start || !b->sum || !b->keys || !at)
		util_oom();
	for (int64_t i = 0; i < n; i++) {
		uint32_t k = key_of(v[i]) >> 16;
		b->start[k + 1]++;
		b->sum[k] += v[i];
		b->total += v[i];
	}
	for (int i = 0; i < BUCKETS; i++)
		b->start[i + 1] += b->start[i];
	memcpy(at, b->start, BUCKETS * sizeof *at);
	for (int64_t i = 0; i < n; i++) {
		uint32_t k = key_of(v[i]);
		b->keys[at[k >> 16]++] = k;
	}
	free(at);
}

void prune_bound_free(PruneBound *b)
{
	free(b->start);
	free(b->sum);
	free(b->keys);
	memset(b, 0, sizeof *b);
}

static int cmp_key_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x < y) - (x > y);
}

double prune_bound_top(const PruneBound *b, int64_t count)
{
	if (count <= 0)
		return 0;
	if (count >= b->n)
		return b->total;
	double total = 0;
	int64_t need = count;
	int hi = BUCKETS - 1;
	for (; hi >= 0; hi--) {
		int64_t c = b->start[hi + 1] - b->start[hi];
		if (c >= need)
			break;
		need -= c;
		total += b->sum[hi];
	}
	/* the boundary bucket: its largest `need` values */
	int64_t c = b->start[hi + 1] - b->start[hi];
	uint32_t *tmp = malloc((size_t)c * sizeof *tmp);
	if (!tmp)
		util_oom();
	memcpy(tmp, b->keys + b->start[hi], (size_t)c * sizeof *tmp);
	qsort(tmp, (size_t)c, sizeof *tmp, cmp_key_desc);
	for (int64_t i = 0; i < need; i++) {
		float f;
		memcpy(&f, &tmp[i], 4);
		total += f;
	}
	free(tmp);
	return total;
}

static double sum_squares(const float *a, int64_t n)
{
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += (double)a[i] * a[i];
	return s;
}

/* ||X D^T||_F in *ne and ||X W^T||_F in *ny, D the part of W the mask
 * prunes, both scaled alike.  W, D and X are scaled by powers of two, which
 * is exact, to largest magnitudes just below 1: then the float32 product
 * X W^T, at most K in magnitude, neither goes past float32's range nor
 * sinks into its subnormals (the ratio of weights and activations of
 * 1e-23 read 0.12 instead of 0.51), unless a term is too small to count
 * beside the largest.  X goes through a slab of tokens at a time, so that
 * no n x M product is held whole. */
static void output_norms(const float *x, const float *w, const uint8_t *mask, int64_t n, int64_t M, int64_t K,
                         double *ne, double *ny)
{
	*ne = *ny = 0;
	const int64_t count = M * K;
	float wmax = 0, xmax = 0;
	for (int64_t i = 0; i < count; i++)
		wmax = fmaxf(wmax, fabsf(w[i]));
	for (int64_t i = 0; i < n * K; i++)
		xmax = fmaxf(xmax, fabsf(x[i]));
	if (!(wmax > 0) || !(xmax > 0)) /* X W^T is 0 */
		return;
	int ew, ex;
	frexpf(wmax, &ew);
	frexpf(xmax, &ex);
	int64_t slab = ((int64_t)1 << 22) / (M > K ? M : K); /* tokens: products of 16 MB at most */
	slab = slab < 1 ? 1 : slab > n ? n : slab;
	float *ws = malloc((size_t)count * sizeof *ws), *d = malloc((size_t)count * sizeof *d);
	float *xs = malloc((size_t)(slab * K) * sizeof *xs), *y = malloc((size_t)(slab * M) * sizeof *y);
	if (!ws || !d || !xs || !y)
		util_oom_for("the output error of a %lld x %lld weight", (long long)M, (long long)K);
	for (int64_t i = 0; i < count; i++) {
		ws[i] = ldexpf(w[i], -ew);
		d[i] = mask[i] ? 0.0f : ws[i];
	}
	double se = 0, sy = 0;
	for (int64_t t0 = 0; t0 < n; t0 += slab) {
		const int64_t t = n - t0 < slab ? n - t0 : slab;
		for (int64_t i = 0; i < t * K; i++)
			xs[i] = ldexpf(x[t0 * K + i], -ex);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)t, (int)M, (int)K, 1.0f, xs, (int)K, ws,
		            (int)K, 0.0f, y, (int)M);
		sy += sum_squares(y, t * M);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)t, (int)M, (int)K, 1.0f, xs, (int)K, d,
		            (int)K, 0.0f, y, (int)M);
		se += sum_squares(y, t * M);
	}
	*ne = sqrt(se);
	*ny = sqrt(sy);
	free(ws), free(d), free(xs), free(y);
}

void prune_metrics_from(const Pir *ir, double kept, int64_t nkept, const PruneBound *bound, int64_t count,
                        PruneMetrics *out)
{
	memset(out, 0, sizeof *out);
	PirMetrics pm;
	pir_metrics(ir, &pm);
	out->total = bound->total;
	out->kept = kept;
	out->nkept = nkept;
	out->nreal = count;
	out->density = (double)out->nkept / (double)count;
	out->retained = out->total > 0 ? out->kept / out->total : 1.0;
	out->loss = 1.0 - out->retained;
	double top = prune_bound_top(bound, out->nkept);
	out->bound_retained = out->total > 0 ? top / out->total : 1.0;
	out->bound_loss = 1.0 - out->bound_retained;
	out->loss_over_bound = out->loss - out->bound_loss;
	/* 1 when neither loses anything; infinite when only the pattern does */
	out->loss_ratio = out->bound_loss > 0 ? out->loss / out->bound_loss
	                  : out->loss > 1e-12  ? INFINITY
	                                       : 1.0;
	out->log_diversity = pm.log_diversity;
}

void prune_metrics(const Pir *ir, const PruneMask *m, const float *imp, const PruneBound *bound,
                   const float *w, const float *x, int64_t n, int64_t M, int64_t K,
                   PruneMetrics *out)
{
	const int64_t count = M * K;
	PruneBound own;
	if (!bound) {
		prune_bound_init(&own, imp, count);
		bound = &own;
	}
	PirMetrics pm;
	pir_metrics(ir, &pm);
	double kept;
	int64_t nkept;
	if (m->has_kept && pm.pad[PIR_AXIS_M] == 0 && pm.pad[PIR_AXIS_K] == 0) {
		/* no padding: every packed slot is a kept real weight */
		kept = m->kept;
		nkept = pm.values;
	} else {
		prune_kept_sum(ir, m, imp, M, K, &kept, &nkept);
	}
	prune_metrics_from(ir, kept, nkept, bound, count, out);
	if (bound == &own)
		prune_bound_free(&own);
	if (x && n > 0) {
		uint8_t *mask = malloc((size_t)count);
		if (!mask)
			util_oom();
		prune_dense_mask(ir, m, M, K, mask);
		double ne, ny;
		output_norms(x, w, mask, n, M, K, &ne, &ny);
		out->has_output_error = true;
		out->output_error = ny > 0 ? ne / ny : 0.0;
		free(mask);
	}
}
