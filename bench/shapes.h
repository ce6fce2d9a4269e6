/* SPDX-License-Identifier: MIT */
/* shapes.h - what the kernel benchmarks measure (cpu_bench, gpu_bench). */
#ifndef PATC_BENCH_SHAPES_H
#define PATC_BENCH_SHAPES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The paper's 12 SpMM shapes (DESIGN.md section 9), the sparsities and
 * the patterns every benchmark measures. */
typedef struct Shape {
	const char *name;
	int64_t M, K, N;
} Shape;

static const Shape shapes[] = {
	{"1024/1024/1024", 1024, 1024, 1024}, {"4096/1024/1024", 4096, 1024, 1024},
	{"1024/4096/1024", 1024, 4096, 1024}, {"768/768/512", 768, 768, 512},
	{"3072/768/512", 3072, 768, 512},     {"768/3072/512", 768, 3072, 512},
	{"128/576/784", 128, 576, 784},       {"64/576/3136", 64, 576, 3136},
	{"256/1152/3136", 256, 1152, 3136},   {"4096/4096/4096", 4096, 4096, 4096},
	{"16384/4096/4096", 16384, 4096, 4096}, {"4096/16384/4096", 4096, 16384, 4096},
};
enum { NSHAPES = sizeof shapes / sizeof shapes[0] };

static const double sparsities[] = {50, 75, 93.75};
static const char *const pattern_names[] = {"block8", "block32", "nm", "tile", "hybrid", "rowbal"};
enum { NPAT = 6 };

/* Whether `name` is one of the comma-separated names in `list`. */
static inline bool shape_listed(const char *list, const char *name)
{
	const size_t n = strlen(name);
	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (strcspn(p, ",") == n && !strncmp(p, name, n))
			return true;
	return false;
}

/* Whether a run over `quick` shapes (at most 2^32 multiply-adds) or the
 * shapes named in `only` (NULL: all) measures sh. */
static inline bool shape_selected(const Shape *sh, bool quick, const char *only)
{
	if (quick && (double)sh->M * (double)sh->K * (double)sh->N > 4294967296.0)
		return false;
	return !only || shape_listed(only, sh->name);
}

/* The least timed calls of a kernel of sh: 3 to 15, about 4 GFLOP. */
static inline int shape_reps(const Shape *sh)
{
	const double r = 4e9 / (2.0 * (double)sh->M * (double)sh->K * (double)sh->N);
	return r < 3 ? 3 : r > 15 ? 15 : (int)r;
}

/* The .pat body of pattern p at sparsity s. */
static inline void pattern_body(int p, double s, char *buf, size_t len)
{
	double d = 100 - s;
	switch (p) {
	case 0: snprintf(buf, len, "apply block(8, 8, %g%%);", d); break;
	case 1: snprintf(buf, len, "apply block(32, 32, %g%%);", d); break;
	case 2: snprintf(buf, len, "apply nm(%s);", s == 50 ? "2, 4" : s == 75 ? "1, 4" : "1, 16"); break;
	case 3: snprintf(buf, len, "apply tile_v(32, %g%%);", d); break;
	case 4: snprintf(buf, len, "apply hybrid(32, 32, %g%%, 2, 4);", 2 * d); break;
	default: snprintf(buf, len, "apply row_balanced(%g%%);", d); break;
	}
}

#endif
