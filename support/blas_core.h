/* SPDX-License-Identifier: MIT */
/* blas_core.h - which OpenBLAS kernel set (its "core") a dense baseline
 * ran, and the strongest one this CPU runs.
 *
 * OpenBLAS built with DYNAMIC_ARCH picks its core once, when the library
 * loads: $OPENBLAS_CORETYPE's where it is set, else its own detection.  An
 * environment that sets a weaker one (OPENBLAS_CORETYPE=Haswell on an
 * AVX-512 machine) makes every dense baseline slower than this CPU's best,
 * and every speedup over it larger.  --run and --search therefore name the
 * core that ran and, where it is weaker than the strongest this CPU runs,
 * time the same sgemm again with that one in a fresh patc process (the
 * internal subcommand BLAS_CORE_SUBCOMMAND, run through /proc/self/exe) and
 * take the faster of the two as the baseline.
 *
 * The dense sgemm and its two timing methods (--run's and the search's) are
 * here too, so that the fresh process times exactly what the caller does.
 * No LLVM: OpenBLAS and libc only. */
#ifndef PATC_BLAS_CORE_H
#define PATC_BLAS_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the pure parts (tests/unit/test_blas_core.c) ---- */

/* The CPU features the choice of a core looks at. */
typedef struct BlasCpu {
	bool avx2, fma, avx512f, avx512bw, avx512dq, avx512vl;
} BlasCpu;

/* A core name's rank by the vector ISA of its sgemm kernels, as OpenBLAS
 * spells it (case ignored, as OPENBLAS_CORETYPE is read): 3 AVX-512
 * (SkylakeX, Cooperlake, SapphireRapids), 2 AVX2 with FMA (Haswell, Zen),
 * 1 AVX (Sandybridge and AMD's Bulldozer line), 0 the older ones and
 * "Unknown"; -1 for a name patc does not know (never called weaker). */
int blas_core_rank(const char *name);
/* The strongest core for a CPU with these features: "SkylakeX" with
 * AVX-512 F, BW, DQ and VL, else "Haswell" with AVX2 and FMA, else NULL
 * (none that patc would time beside the one in use). */
const char *blas_core_strongest(const BlasCpu *f);
/* strongest, where the core in use ranks below it (both known); else NULL. */
const char *blas_core_stronger(const char *in_use, const char *strongest);
/* The fresh process's answer ("US CORE\n") into *us and core[32]; false
 * where it is not one. */
bool blas_core_parse_answer(const char *text, double *us, char core[32]);

/* ---- this process and this CPU ---- */

typedef struct BlasCoreInfo {
	char in_use[32];        /* openblas_get_corename() */
	const char *strongest;  /* blas_core_strongest of this CPU (NULL: none) */
	const char *stronger;   /* strongest where in_use is weaker, else NULL */
	char env[64];           /* $OPENBLAS_CORETYPE ("" where unset) */
} BlasCoreInfo;

/* This CPU's features (CPUID through __builtin_cpu_supports; none off x86). */
void blas_core_host_cpu(BlasCpu *f);
void blas_core_info(BlasCoreInfo *b);
/* One line's text for the core in use: "Haswell, weaker than SkylakeX, the
 * strongest this CPU runs (OPENBLAS_CORETYPE=Haswell)", "SkylakeX, the
 * strongest this CPU runs", or the name alone. */
void blas_core_text(const BlasCoreInfo *b, char *buf, size_t len);

/* ---- the dense baseline ---- */

/* C = W X (kn: W M x K, X K x N, C M x N) or C = X W^T (nk: X N x K, C
 * N x M), row-major, single precision. */
void blas_sgemm(bool kn, int64_t M, int64_t K, int64_t N, const float *w, const float *x, float *c);

typedef enum BlasTiming {
	BLAS_TIMING_RUN,    /* --run's: a warm-up call, then the median of BLAS_RUN_REPS */
	BLAS_TIMING_SEARCH, /* the search's: util_time_min_us over at least 3 calls */
} BlasTiming;
enum { BLAS_RUN_REPS = 7 };
extern const char *const blas_timing_names[]; /* "run", "search" */

/* blas_sgemm timed with `threads` OpenBLAS threads by the method how; in
 * microseconds.  The buffers are the caller's: util_alloc_timed's for
 * --run, util_alloc_measured's for the search. */
double blas_time_sgemm_us(BlasTiming how, bool kn, int64_t M, int64_t K, int64_t N, const float *w, const float *x,
                          float *c, int threads);

/* The internal subcommand: `patc BLAS_CORE_SUBCOMMAND HOW M K N kn|nk
 * THREADS CORE` times one dense sgemm of that shape (random operands, in
 * HOW's buffers) and prints "US CORE"; exit 3 with the reason where
 * OpenBLAS runs another core than CORE (or, for the tests, where
 * $PATC_BLAS_INJECT is "fail").  Not in --help: patc runs it. */
#define BLAS_CORE_SUBCOMMAND "internal-time-sgemm"
int blas_core_subcommand(int argc, char **argv);

/* The same sgemm timed with core's kernels in a fresh process: exe (patc,
 * "/proc/self/exe") run as BLAS_CORE_SUBCOMMAND with OPENBLAS_CORETYPE set
 * to core, killed after timeout_s.  *us, or false with why[160] (one line). */
bool blas_core_time_fresh(const char *exe, const char *core, BlasTiming how, bool kn, int64_t M, int64_t K,
                          int64_t N, int threads, double timeout_s, double *us, char why[160]);

#endif
