/* SPDX-License-Identifier: MIT */
/* kernelcase.h - one SpMM case for the kernel suites (x86, ptx): an op's
 * seeded weights pruned by magnitude and packed, a seeded X in the op's
 * layout, and the relative error of a kernel's C against a float64
 * product of the masked weight. */
#ifndef PATC_KERNELCASE_H
#define PATC_KERNELCASE_H

#include "testutil.h"
#include "prune/prune.h"

#include <math.h>
#include <string.h>

/* C lies between guards of KERNEL_GUARD floats before it and
 * KERNEL_GUARD + 2 N after it, filled with a NaN no kernel computes: a
 * store outside C (a row past M, a column past N) changes them. */
enum { KERNEL_GUARD = 64 };
static const uint32_t kernel_guard_bits = 0x7fc0deadu;

/* C's allocation, in floats: C and its guards. */
static inline int64_t kernel_case_guarded(int64_t M, int64_t N) { return M * N + 2 * KERNEL_GUARD + 2 * N; }

typedef struct KernelCase {
	int64_t M, K, N;
	PatLayout layout;
	float *w, *imp, *dense, *x, *c, *values;
	float *cbase; /* C's allocation, the guards included */
	int64_t nvalues;
	PruneMask mask;
} KernelCase;

static inline void kernel_case_init(KernelCase *kc, const OpResult *op, PatLayout layout, int64_t N)
{
	const int64_t M = op->shape.M, K = op->shape.K;
	*kc = (KernelCase){.M = M, .K = K, .N = N, .layout = layout};
	kc->w = malloc((size_t)(M * K) * sizeof *kc->w), kc->imp = malloc((size_t)(M * K) * sizeof *kc->imp);
	kc->dense = malloc((size_t)(M * K) * sizeof *kc->dense);
	kc->x = malloc((size_t)(K * N) * sizeof *kc->x);
	const int64_t guarded = kernel_case_guarded(M, N);
	kc->cbase = malloc((size_t)guarded * sizeof *kc->cbase);
	ck_assert(kc->w && kc->imp && kc->dense && kc->x && kc->cbase);
	for (int64_t i = 0; i < guarded; i++)
		memcpy(&kc->cbase[i], &kernel_guard_bits, sizeof kernel_guard_bits);
	kc->c = kc->cbase + KERNEL_GUARD;
	synth_weights(kc->w, M, K, 5, SYNTH_HEADS, 16);
	synth_weights(kc->x, layout == PAT_LAYOUT_KN ? K : N, layout == PAT_LAYOUT_KN ? N : K, 6, SYNTH_PLAIN, 1);
	prune_importance(PAT_IMP_MAGNITUDE, kc->w, NULL, NULL, 0, M, K, kc->imp);
	prune_mask_build(op->ir, kc->imp, M, K, PAT_RANK_LOOKAHEAD, &kc->mask);
	kc->values = prune_pack_new(op->ir, &kc->mask, kc->w, M, K, &kc->nvalues, kc->dense);
	ck_assert_ptr_nonnull(kc->values);
}

/* An op's activation (ir/op.h) in float64, with libm's tanh and erf. */
static inline double kernel_act(PatAct act, double x)
{
	switch (act) {
	case PAT_ACT_RELU: return x < 0 ? 0 : x;
	case PAT_ACT_GELU_TANH: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
	case PAT_ACT_GELU_ERF: return 0.5 * x * (1 + erf(x * 0.70710678118654752440));
	case PAT_ACT_SILU: return x / (1 + exp(-x));
	default: return x;
	}
}

/* ||C - R|| / ||R|| for R = act(W_s X + bias (+ old)) in double (bias: M
 * floats or NULL; old: C before the kernel ran, in the layout's order, or
 * NULL); +inf when C holds a NaN (an element the kernel left unwritten) or
 * a guard around it changed (a store outside C). */
static inline double kernel_case_error_epi(const KernelCase *kc, PatAct act, const float *bias, const float *old)
{
	const int64_t M = kc->M, K = kc->K, N = kc->N;
	const bool kn = kc->layout == PAT_LAYOUT_KN;
	for (int64_t i = 0; i < kernel_case_guarded(M, N); i++)
		if ((i < KERNEL_GUARD || i >= KERNEL_GUARD + M * N) &&
		    memcmp(&kc->cbase[i], &kernel_guard_bits, sizeof kernel_guard_bits))
			return INFINITY;
	double num = 0, den = 0;
	for (int64_t i = 0; i < M; i++)
		for (int64_t n = 0; n < N; n++) {
			double ref = 0;
			for (int64_t kk = 0; kk < K; kk++)
				ref += (double)kc->dense[i * K + kk] * (kn ? kc->x[kk * N + n] : kc->x[n * K + kk]);
			const int64_t at = kn ? i * N + n : n * M + i;
			ref = kernel_act(act, ref + (bias ? bias[i] : 0) + (old ? old[at] : 0));
			double got = kc->c[at];
			if (isnan(got))
				return INFINITY;
			num += (got - ref) * (got - ref);
			den += ref * ref;
		}
	return sqrt(num / (den > 0 ? den : 1));
}

/* The same for the plain product, C = W_s X. */
static inline double kernel_case_error(const KernelCase *kc) { return kernel_case_error_epi(kc, PAT_ACT_NONE, NULL, NULL); }

static inline void kernel_case_free(KernelCase *kc)
{
	prune_mask_free(&kc->mask);
	free(kc->w), free(kc->imp), free(kc->dense), free(kc->x), free(kc->cbase), free(kc->values);
}

#endif
