/* SPDX-License-Identifier: MIT */
/* pir_metrics.c - static analysis of a PatternIR: storage shape, strides,
 * pattern size W, selection-region size Q, density and mask diversity.
 *
 * Definitions (paper §3.1, stated precisely here because later stages and
 * the docs rely on them), for loop i of the nest, outermost first:
 *   extent(i)       nnz(i): the loop's extent in the packed value array;
 *   value_stride(i) product of extent(j) for j > i (row-major values);
 *   W(i)            product of len(j) for j > i: the weights one iteration
 *                   of loop i addresses (the pattern size it selects);
 *   Q(i)            len(i) * W(i): the weights among which one selection of
 *                   nnz(i) iterations is made (the selection region);
 *   regions(i)      product of extent(j) for j < i: how many selections are
 *                   made (inner perforations happen only inside kept outer
 *                   iterations);
 *   diversity(i)    regions(i) * ln C(len(i), nnz(i)).
 * Density is the product of nnz/len; log mask diversity sums diversity(i).
 */
#include "pir.h"

#include <math.h>
#include <string.h>

static double log_choose(int64_t n, int64_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

void pir_metrics(const Pir *ir, PirMetrics *out)
{
	memset(out, 0, sizeof *out);
	int n = ir->nloops;
	out->density = 1.0;
	int64_t inner_ext = 1, inner_len = 1;
	for (int i = n - 1; i >= 0; i--) {
		const PirLoop *l = &ir->loops[i];
		PirLoopMetrics *lm = &out->loop[i];
		lm->extent = l->nnz;
		lm->value_stride = inner_ext;
		lm->W = inner_len;
		lm->Q = l->len * inner_len;
		inner_ext *= l->nnz;
		inner_len *= l->len;
	}
	out->values = inner_ext;
	int64_t outer = 1;
	for (int i = 0; i < n; i++) {
		const PirLoop *l = &ir->loops[i];
		PirLoopMetrics *lm = &out->loop[i];
		lm->regions = outer;
		if (pir_loop_is_perforated(l)) {
			out->nperforated++;
			lm->index_len = outer * l->nnz;
			lm->log_diversity = (double)outer * log_choose(l->len, l->nnz);
			out->index_entries += lm->index_len;
			out->log_diversity += lm->log_diversity;
			out->density *= (double)l->nnz / (double)l->len;
		}
		outer *= l->nnz;
	}
	out->dense_padded = ir->ext[PIR_AXIS_M] * ir->ext[PIR_AXIS_K];
	for (int a = 0; a < PIR_NAXES; a++)
		out->pad[a] = ir->ext[a] - ir->len[a];
}
