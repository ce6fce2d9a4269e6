/* SPDX-License-Identifier: MIT */
/* main.c - uses kernels patc compiled to an object (see README.md here).
 *
 *   patc layer.pat -o out && cc -O2 -iquote out main.c out/layer.o -lm -lpthread -o demo && ./demo
 *
 * Says which x86 target the kernels were compiled for, runs each op's kernel
 * asking for two threads (the small ones use one: see layer.h) on a
 * deterministic X of the op's N tokens and of 1, 7 and 333 (one kernel
 * takes any N), rebuilds the dense masked weight with the op's unpack
 * function, and checks each result against a float64 product with the
 * op's epilogue: its bias (layer_OP_packed.bias, or NULL) and activation,
 * and for the op that accumulates, the C it adds to.
 * Exits 1 if any run is off by more than 1e-5. */
#include "layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { NONE, RELU, GELU_ERF };

/* ||C - R|| / ||R||, R = act(W X + bias + old) (bias, old: NULL for none);
 * kn: X is K x N, C is M x N; otherwise N x K, N x M. */
static double check(int kn, int M, int K, int N, const float *W, const float *X, const float *C, int act,
                    const float *bias, const float *old)
{
	double num = 0, den = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)W[m * K + k] * (kn ? X[k * N + n] : X[n * K + k]);
			const int at = kn ? m * N + n : n * M + m;
			ref += (bias ? bias[m] : 0) + (old ? old[at] : 0);
			ref = act == RELU ? (ref < 0 ? 0 : ref) : act == GELU_ERF ? 0.5 * ref * (1 + erf(ref / sqrt(2.0))) : ref;
			double got = C[at];
			num += (got - ref) * (got - ref);
			den += ref * ref;
		}
	return sqrt(num / (den > 0 ? den : 1));
}

/* Runs op OP (run, unpack, M, K: from layer.h) for each N in ns on a
 * deterministic X; kn: X is K x N, else N x K; ACT its activation, ACC
 * whether it adds to C (which then starts with values).  Sets bad on an
 * error over 1e-5 or a refused N. */
#define RUN_OP(OP, KN, MUL, MOD, ACT, ACC)                                                              \
	do {                                                                                              \
		enum { M = layer_##OP##_M, K = layer_##OP##_K };                                          \
		static float W[M * K];                                                                    \
		layer_##OP##_unpack(&layer_##OP##_packed, W);                                             \
		const int64_t ns[] = {layer_##OP##_N, 1, 7, 333};                                         \
		for (int j = 0; j < 4; j++) {                                                             \
			const int64_t N = ns[j];                                                          \
			float *X = malloc((size_t)(N * K) * sizeof *X), *C = malloc((size_t)(N * M) * sizeof *C); \
			float *old = malloc((size_t)(N * M) * sizeof *old);                               \
			for (int64_t i = 0; i < N * K; i++)                                               \
				X[i] = (float)((i * MUL) % MOD) / 11.0f - 1.0f;                           \
			for (int64_t i = 0; i < N * M; i++) /* what C holds before the call */            \
				C[i] = old[i] = (float)(i % 7) - 3.0f;                                    \
			int rc = layer_##OP##_run(X, C, N, &layer_##OP##_packed, 2);                      \
			double e = rc ? 1 : check(KN, M, K, (int)N, W, X, C, ACT, layer_##OP##_packed.bias, ACC ? old : NULL); \
			printf(#OP ": N = %lld, relative error %.2e\n", (long long)N, e);                \
			bad |= !(e < 1e-5);                                                               \
			free(X), free(C), free(old);                                                      \
		}                                                                                         \
	} while (0)

int main(void)
{
	int bad = 0;
	/* the x86 target it was compiled for, and the x86-64 level that needs
	 * (-o compiles for x86-64-v3 unless told otherwise) */
	printf("compiled for %s (needs %s)\n", layer_TARGET, layer_TARGET_LEVEL);
	/* each kernel takes any N at the call: the op's own and three others */
	RUN_OP(attn, 0, 37, 23, GELU_ERF, 0); /* C = gelu(X W^T + bias) */
	RUN_OP(proj, 1, 29, 17, NONE, 1);     /* C += W X */
	RUN_OP(ffn, 1, 13, 19, RELU, 0);      /* C = relu(W X + bias) */
	return bad;
}
