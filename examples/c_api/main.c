/* SPDX-License-Identifier: MIT */
/* main.c - uses kernels patc compiled to an object (see README.md here).
 *
 *   patc layer.pat -o out && cc -O2 -iquote out main.c out/layer.o -lm -lpthread -o demo && ./demo
 *
 * Says which x86 target the kernels were compiled for, runs each op's kernel
 * asking for two threads (the small ones use one: see layer.h) on a
 * deterministic X, rebuilds the dense masked weight with the op's unpack
 * function, and checks the result against a float64 product.
 * Exits 1 if any op is off by more than 1e-5. */
#include "layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ||C - W X|| / ||W X||; kn: X is K x N, C is M x N; otherwise N x K, N x M. */
static double check(int kn, int M, int K, int N, const float *W, const float *X, const float *C)
{
	double num = 0, den = 0;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)W[m * K + k] * (kn ? X[k * N + n] : X[n * K + k]);
			double got = kn ? C[m * N + n] : C[n * M + m];
			num += (got - ref) * (got - ref);
			den += ref * ref;
		}
	return sqrt(num / (den > 0 ? den : 1));
}

int main(void)
{
	int bad = 0;
	/* the x86 target it was compiled for, and the x86-64 level that needs
	 * (-o compiles for x86-64-v3 unless told otherwise) */
	printf("compiled for %s (needs %s)\n", layer_TARGET, layer_TARGET_LEVEL);
	{
		enum { M = layer_attn_M, K = layer_attn_K, N = layer_attn_N };
		static float X[N * K], C[N * M], W[M * K];
		for (int i = 0; i < N * K; i++)
			X[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
		layer_attn_run(X, C, &layer_attn_packed, 2);
		layer_attn_unpack(&layer_attn_packed, W);
		double e = check(0, M, K, N, W, X, C);
		printf("attn: relative error %.2e\n", e);
		bad |= !(e < 1e-5);
	}
	{
		enum { M = layer_proj_M, K = layer_proj_K, N = layer_proj_N };
		static float X[K * N], C[M * N], W[M * K];
		for (int i = 0; i < K * N; i++)
			X[i] = (float)((i * 29) % 17) / 8.0f - 1.0f;
		layer_proj_run(X, C, &layer_proj_packed, 2);
		layer_proj_unpack(&layer_proj_packed, W);
		double e = check(1, M, K, N, W, X, C);
		printf("proj: relative error %.2e\n", e);
		bad |= !(e < 1e-5);
	}
	{
		enum { M = layer_ffn_M, K = layer_ffn_K, N = layer_ffn_N };
		static float X[K * N], C[M * N], W[M * K];
		for (int i = 0; i < K * N; i++)
			X[i] = (float)((i * 13) % 19) / 9.0f - 1.0f;
		layer_ffn_run(X, C, &layer_ffn_packed, 2);
		layer_ffn_unpack(&layer_ffn_packed, W);
		double e = check(1, M, K, N, W, X, C);
		printf("ffn: relative error %.2e\n", e);
		bad |= !(e < 1e-5);
	}
	return bad;
}
