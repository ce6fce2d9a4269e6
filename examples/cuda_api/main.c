/* SPDX-License-Identifier: MIT */
/* main.c - runs kernels patc compiled for a GPU (see README.md here).
 *
 *   patc layer.pat --target=sm_80 -o out
 *   cc -O2 -iquote out main.c out/layer_launch.c -ldl -lm -o demo && ./demo out
 *
 * Opens the launcher (it loads out/layer.ptx through libcuda.so.1 and
 * uploads the packed weights), runs each op on a deterministic X for its
 * own N and for N = 1, 7 and 333, and checks each C against a float64
 * product of the masked weight.  Exits 1 if an op is off by more than
 * 1e-5, 3 when there is no GPU or driver. */
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

typedef int (*Launch)(layer_gpu *, layer_devptr, layer_devptr, size_t);
typedef int (*Dense)(layer_gpu *, float *);

/* Runs one op for N tokens; returns its relative error, or -1 when a call
 * fails. */
static double run_n(layer_gpu *g, const char *name, int M, int K, int N, int kn, Launch launch, const float *w)
{
	float *x = malloc((size_t)K * N * sizeof *x), *c = malloc((size_t)M * N * sizeof *c);
	layer_devptr dx = 0, dc = 0;
	double e = -1;
	for (int i = 0; x && i < K * N; i++)
		x[i] = (float)((i * 37) % 23) / 11.0f - 1.0f;
	if (x && c && !layer_gpu_alloc(g, &dx, (size_t)K * N * 4) && !layer_gpu_alloc(g, &dc, (size_t)M * N * 4) &&
	    !layer_gpu_upload(g, dx, x, (size_t)K * N * 4) && !launch(g, dx, dc, (size_t)N) && !layer_gpu_sync(g) &&
	    !layer_gpu_download(g, c, dc, (size_t)M * N * 4)) {
		e = check(kn, M, K, N, w, x, c);
		printf("%s, N = %d: relative error %.2e\n", name, N, e);
	} else
		fprintf(stderr, "%s, N = %d: %s\n", name, N, layer_gpu_error(g));
	layer_gpu_free(g, dx), layer_gpu_free(g, dc);
	free(x), free(c);
	return e;
}

/* Runs one op at its own N and at 1, 7 and 333 (a kernel takes any N at
 * the launch; partial blocks of columns included); returns the largest
 * relative error, or -1 when a call fails. */
static double run(layer_gpu *g, const char *name, int M, int K, int N, int kn, Launch launch, Dense dense)
{
	float *w = malloc((size_t)M * K * sizeof *w);
	if (!w || dense(g, w)) {
		fprintf(stderr, "%s: %s\n", name, w ? layer_gpu_error(g) : "out of memory");
		free(w);
		return -1;
	}
	const int ns[] = {N, 1, 7, 333};
	double worst = 0;
	for (size_t i = 0; i < sizeof ns / sizeof *ns && worst >= 0; i++) {
		double e = run_n(g, name, M, K, ns[i], kn, launch, w);
		worst = e < 0 ? -1 : e > worst ? e : worst;
	}
	free(w);
	return worst;
}

int main(int argc, char **argv)
{
	char err[512];
	layer_gpu *g = layer_gpu_open(argc > 1 ? argv[1] : ".", err, sizeof err);
	if (!g) {
		fprintf(stderr, "demo: %s\n", err);
		return 3;
	}
	double e1 = run(g, "up", layer_up_M, layer_up_K, layer_up_N, layer_up_KN, layer_up_launch, layer_up_dense);
	double e2 = run(g, "proj", layer_proj_M, layer_proj_K, layer_proj_N, layer_proj_KN, layer_proj_launch,
	                layer_proj_dense);
	layer_gpu_close(g);
	return e1 >= 0 && e1 < 1e-5 && e2 >= 0 && e2 < 1e-5 ? 0 : 1;
}
