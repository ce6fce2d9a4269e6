/* SPDX-License-Identifier: MIT */
/* search_impl.h - what the search's files share inside search/: the
 * candidate patterns of the pattern space (space.c), a measurement in a
 * child process and its tuning-log line (measure.c), and the measuring
 * rounds with their progress line and schedule tuning (bench.c), which the
 * driver (search.c) calls.  The calls go one way: search.c calls the
 * others, bench.c calls measure.c, and space.c and measure.c call none of
 * them. */
#ifndef PATC_SEARCH_IMPL_H
#define PATC_SEARCH_IMPL_H

#include "search.h"

/* ---- the pattern space (space.c) ---- */

enum { MAX_DEPTH = 3 };

/* One axis tiled into depth levels, f[0] outermost (inferred), f[1..]
 * the inner factors. */
typedef struct Tiling {
	int depth;
	int64_t f[MAX_DEPTH];
	int64_t ext; /* padded extent */
} Tiling;

/* A candidate pattern: the tilings, the perforated level (axis pa, level
 * pi, keep nnz) with the other axis's levels from cut on inside it, and
 * optionally the innermost k level keeping nm_n of each group. */
typedef struct Spec {
	Tiling t[PIR_NAXES];
	int pa, pi, cut;
	int64_t nnz;
	int64_t nm_n; /* 0: no second perforation */
	int inner_k_first; /* the loops inside the perforated one: k levels first */
} Spec;

/* A growing array of candidates with their specs. */
typedef struct Pool {
	SearchCandidate *c;
	Spec *spec;
	int n, cap;
} Pool;

/* Every candidate pattern (one per key), its IR built, at every target
 * density, into pool; *considered counts the tilings and perforations
 * tried.  false when out of memory. */
bool search_enumerate(const char *op, int64_t M, int64_t K, const SearchSettings *s, Pool *pool,
                      int64_t *considered);
/* Builds the candidate's IR; false where a primitive refuses it. */
bool search_spec_ir(const Spec *sp, const char *op, int64_t M, int64_t K, Pir *ir);
/* Appends c with its spec; false when out of memory. */
bool search_pool_add(Pool *p, const SearchCandidate *c, const Spec *sp);

/* Region scores (space.c): the importance sums of each block shape, computed
 * once and shared by the candidates that choose among blocks of that shape. */
typedef struct Regions {
	int64_t bm, bk, rm, rk; /* the block; the blocks per axis */
	float *sum;             /* rm x rk: a block's importance, to rank it (its rank among the blocks) */
	double *dsum;           /* its importance, for the kept importance */
	int64_t *count;         /* real weights per block */
} Regions;

typedef struct RegionCache {
	Regions *r;
	int n, cap;
	int64_t hits; /* candidates scored on cached sums */
} RegionCache;

/* c's metrics from the cached block sums; false where it cannot be scored
 * that way (then the full mask is built). */
bool search_score_reduced(RegionCache *rc, const Spec *sp, SearchCandidate *c, const float *imp, int64_t M,
                          int64_t K, PatRank rank, PruneWorkspace *ws, const PruneBound *bound);
void search_regions_free(RegionCache *rc);

/* ---- measurement in a child process (measure.c) ---- */

typedef struct Measured {
	double us, rel_err;
	int ok; /* 1: checked and timed */
	bool early; /* stopped after a few runs: us is their fastest */
	char why[120];
} Measured;

typedef struct Problem {
	const OpResult *op;
	const float *w, *imp, *x;
	int64_t M, K, N;
	int threads;
	int which; /* the candidate's place in the measuring order */
	double stop_us;       /* stop early where a few runs take longer (0: never) */
	const char *cpu;      /* x86: the kernels' CPU (NULL: the host's) */
	const char *sm;       /* a GPU target: measure there */
	bool emulate;         /* on the host emulator instead (its times are not a GPU's) */
	KernelSchedule sched; /* the kernel's */
} Problem;

/* Runs the candidate's measurement (ir; NULL: the dense baseline) in a
 * child process with a timeout. */
Measured search_measure(const Problem *p, const Pir *ir, double timeout_s);
/* --resume: c's measurement as logged, if it is (see measure.c). */
bool search_taken_over(const SearchSettings *s, const SearchCandidate *c, Measured *m);
/* Appends c's measurement to the log at once, so that a search killed
 * later keeps it; false where it could not (said on progress). */
bool search_log_measurement(const SearchSettings *s, const SearchCandidate *c, Measured m, double dense_us,
                            const char *blas_core, FILE *progress);
/* A measurement's outcome into its candidate. */
void search_record(SearchCandidate *c, const Measured *m);

/* ---- measuring candidates (bench.c) ---- */

typedef struct Progress {
	FILE *f;
	bool tty;
	int done, total;
	double fastest_us;
} Progress;

typedef struct Bench {
	Problem p;
	const SearchSettings *s;
	SearchResult *r;
	Progress pr;
} Bench;

/* A line that stays (a round's summary, a failure), clearing the bar. */
void search_progress_line(Progress *pr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Whether c counts for the best: measured in full within the budget, at
 * the target's density. */
bool search_eligible(const SearchCandidate *c, const SearchSettings *s);
/* Candidate i as the fastest so far, the standard library's patterns
 * included. */
void search_consider_fastest(Bench *b, int i);
/* Measures candidate i (or takes its measurement over from the log),
 * records and logs it; the best is updated for searched candidates. */
void search_bench_one(Bench *b, int i, const char *kind);
/* Kernel-schedule tuning of the best so far and the fastest others (see
 * bench.c).  Returns the number measured, -1 when out of memory. */
int search_tune_schedules(Bench *b);

#endif
