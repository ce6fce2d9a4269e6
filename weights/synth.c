/* SPDX-License-Identifier: MIT */
/* synth.c - seeded synthetic weights.
 *
 * The same seed gives the same weights on every run (xoshiro256** seeded by
 * splitmix64, normals by Box-Muller).  Besides i.i.d. normal weights, three
 * structured kinds give patterns something to prefer, as real layers do:
 * a log-normal scale (sigma 1) per output row, per input column, or per
 * group x group block ("heads").  Values are N(0, 1/K) times the scale.
 */
#include "tensor.h"

#include "../support/util.h"

#include <math.h>
#include <stdlib.h>

const char *const synth_kind_names[SYNTH_COUNT] = {
#define X(e, name) name,
	SYNTH_KINDS(X)
#undef X
};

typedef struct Rng {
	uint64_t s[4];
} Rng;

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_seed(Rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(Rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
	return out;
}

/* Uniform in (0, 1]. */
static double rng_unit(Rng *r) { return ((double)(rng_next(r) >> 11) + 1.0) * 0x1.0p-53; }

static double rng_normal(Rng *r)
{
	double u = rng_unit(r), v = rng_unit(r);
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

void synth_weights(float *w, int64_t M, int64_t K, uint64_t seed, SynthKind kind, int64_t group)
{
	Rng r, rs;
	rng_seed(&r, seed);
	rng_seed(&rs, seed ^ 0x5ca1ab1e5ca1ab1eULL); /* scales: a stream of their own */
	if (group < 1)
		group = 1;
	int64_t gk = (K + group - 1) / group;
	int64_t nscale = kind == SYNTH_ROWS    ? M
	                 : kind == SYNTH_COLS  ? K
	                 : kind == SYNTH_HEADS ? ((M + group - 1) / group) * gk
	                                       : 0;
	double *scale = NULL;
	if (nscale > 0) {
		scale = malloc((size_t)nscale * sizeof *scale);
		if (!scale)
			util_oom();
		for (int64_t i = 0; i < nscale; i++)
			scale[i] = exp(rng_normal(&rs));
	}
	double sd = 1.0 / sqrt((double)K);
	for (int64_t m = 0; m < M; m++)
		for (int64_t k = 0; k < K; k++) {
			double s = kind == SYNTH_ROWS    ? scale[m]
			           : kind == SYNTH_COLS  ? scale[k]
			           : kind == SYNTH_HEADS ? scale[(m / group) * gk + k / group]
			                                 : 1.0;
			w[m * K + k] = (float)(rng_normal(&r) * sd * s);
		}
	free(scale);
}
