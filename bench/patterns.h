/* SPDX-License-Identifier: MIT */
/* patterns.h - compiling a pattern for a given shape, for the benchmark
 * and study tools in bench/. */
#ifndef PATC_BENCH_PATTERNS_H
#define PATC_BENCH_PATTERNS_H

#include "frontend/frontend.h"
#include "prune/prune.h"

#include <stdio.h>

/* Compiles `apply_text` (statements of an op body, e.g. "apply block(32,
 * 32, 25%);") for an M x K weight, with the standard library included.
 * Returns false (diagnostics on stderr) when it does not compile. */
static inline bool bench_pattern(const char *stdlib, int64_t M, int64_t K, const char *body, Pir *out)
{
	Arena arena;
	arena_init(&arena);
	Diag diag;
	FILE *sink = fopen("/dev/null", "w");
	diag_init(&diag, &arena, sink ? sink : stderr);
	char *text = arena_printf(&arena,
	                          "include \"all.pat\";\nop w: spmm(M = %lld, K = %lld, N = 1) {\n%s\n}\n",
	                          (long long)M, (long long)K, body);
	FrontendOptions fo = {.stdlib_dir = stdlib, .target = "x86-64"};
	Program prog;
	bool ok = frontend_compile(&fo, &diag, &arena, "bench.pat", text, &prog) == 0 &&
	          prog.nops == 1 && prog.ops[0].ok;
	if (ok)
		*out = *prog.ops[0].ir;
	if (sink)
		fclose(sink);
	arena_free(&arena);
	return ok;
}

/* Compiles `body` for the M x K weight w, builds its mask from imp (lookahead
 * ranking) and packs it: the packed values (free()), the mask in *pm
 * (prune_mask_free), the masked dense weight in `masked`.  NULL, with a
 * message on stderr naming the tool and the shape, when the pattern does
 * not compile or the packed values do not fit in memory. */
static inline float *bench_prune(const char *tool, const char *stdlib, const char *shape, int64_t M, int64_t K,
                                 const char *body, const float *w, const float *imp, Pir *ir, PruneMask *pm,
                                 float *masked)
{
	if (!bench_pattern(stdlib, M, K, body, ir)) {
		fprintf(stderr, "%s: %s does not compile for %s\n", tool, body, shape);
		return NULL;
	}
	prune_mask_build(ir, imp, M, K, PAT_RANK_LOOKAHEAD, pm);
	float *values = prune_pack_new(ir, pm, w, M, K, NULL, masked);
	if (!values) {
		fprintf(stderr, "%s: out of memory packing %s for %s\n", tool, body, shape);
		prune_mask_free(pm);
	}
	return values;
}

#endif
