/* SPDX-License-Identifier: MIT */
/* search.h - `patc --search`: a joint search over sparse patterns and
 * kernel schedules for one op (DESIGN.md section 6).
 *
 *   1. The pattern space.  Each axis is tiled into up to max_depth levels
 *      (split with padding), every inner level a power of two from
 *      min_length to max_pattern; one level is perforated (the region it
 *      chooses in spans the loops inside it: the inner levels of its own
 *      axis and, of the other axis, every level from a cut point on), and
 *      optionally the innermost k level too, 2 or 1 of 4 or 8 (the
 *      hybrid's N:M inside).  Candidates are kept where the density is the
 *      target's within the tolerance.  Two tilings whose perforations
 *      choose among the same blocks in the same regions make the same mask:
 *      they are one candidate (its key).
 *   2. The accuracy filter: every candidate's mask is built from the op's
 *      importance and scored (magnitude loss beside the unstructured
 *      bound, one PruneBound for all; block sums shared by the candidates
 *      that choose among blocks of one shape); those whose loss exceeds the
 *      bound's by more than the budget are dropped.
 *   3. Schedules and the cost model: each survivor gets the loop orders
 *      that realise it (the dense loops inside and outside the perforated
 *      one, rows or columns first), ranked by the cost model (costmodel.h:
 *      learned from tuning logs, or analytic).
 *   4. Measurement: the top candidates are compiled and timed, each in a
 *      child process with a timeout (on the GPU for GPU targets), and
 *      checked against a float64 reference before they count; a crash,
 *      hang or wrong result costs that candidate, not the search, and one
 *      already twice as slow as the fastest after 3 runs stops there.  The
 *      dense baseline (OpenBLAS, cuBLAS) is timed the same way, and the
 *      standard library's patterns beside the search.
 *   5. Kernel schedules: the fastest are measured again with other vector
 *      widths, accumulator counts and column chunks (KernelSchedule).
 *   6. The best: of the kernels measured within the budget as fast as the
 *      fastest (within s->tie, timing noise) and no slower than the
 *      fastest reference pattern, the most accurate.
 *
 * The result is every candidate with its metrics, prediction and (for the
 * measured ones) latency; the caller writes the reports. */
#ifndef PATC_SEARCH_H
#define PATC_SEARCH_H

#include "../frontend/frontend.h"
#include "../lower/lower.h"
#include "../prune/prune.h"
#include "costmodel.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the tuning log (tune.jsonl: one JSON object per line, appended
 * as each measurement is made) ---- */

/* The largest relative error against float64 a measured kernel may have
 * (its result is wrong past it), and the least time a measurement can
 * take (a log line under it is no measurement). */
#define SEARCH_MAX_REL_ERR 1e-4
#define SEARCH_MIN_US 1e-3
/* ... and the longest (a day: no measurement runs that long) */
#define SEARCH_MAX_US 86400e6
/* The longest tuning-log line read (a line patc writes is a few kB). */
#define SEARCH_LOG_LINE_MAX ((size_t)1 << 20)

typedef struct SearchLogInfo {
	const char *version, *target, *device, *source, *op;
	int64_t M, K, N;
	const char *layout; /* kn or nk */
	const char *dtype;  /* f32, bf16 or f16 (NULL: f32) */
	int threads;
	uint64_t seed;
} SearchLogInfo;

/* A measurement read back from a log. */
typedef struct SearchLogged {
	char *pir;          /* the candidate's PatternIR text form */
	double latency_us;  /* < 0: it failed (why) */
	double dense_us, rel_err;
	char blas_core[32]; /* the OpenBLAS kernel set dense_us is of ("" where not logged) */
	KernelSchedule sched;
	bool early;         /* stopped early (latency_us is coarse) */
	char why[160];
	char time[32];      /* when, as logged ("" where absent) */
} SearchLogged;

typedef struct SearchSettings {
	double sparsity;   /* target, in (0, 1) */
	double max_sparsity; /* > sparsity: a range of targets up to it (0: none) */
	double tolerance;  /* |density - (1 - sparsity)| allowed */
	double budget;     /* loss - unstructured bound's loss allowed (0.05: 5 points) */
	int max_depth;     /* levels per axis */
	int min_length;    /* shortest loop */
	int max_pattern;   /* longest inner level */
	int topk;          /* schedules measured */
	int tune;          /* of the measured, the best and the fastest whose schedules are tuned */
	double stop_ratio; /* a measurement stops early where a few runs already take
	                    * this many times the fastest's latency (0: never) */
	double explore;    /* the share of the topk drawn at random from the ranked rest */
	double tie;        /* kernels within this fraction of the fastest count as equally
	                    * fast: the best is the most accurate of them (0: the fastest) */
	int threads;       /* for the measured kernels */
	double timeout_s;  /* per measurement */
	uint64_t seed;     /* the order of equally ranked candidates */
	bool measure;      /* false: rank by the cost model alone */
	const CostModel *model; /* NULL: the analytic one */
	const char *cpu;   /* x86: the CPU the kernels are compiled for (x86_target_cpu; NULL: the host's) */
	const char *blas_exe; /* x86: patc, to time the dense baseline again with the strongest
	                       * OpenBLAS kernel set this CPU runs where the one in use is
	                       * weaker (support/blas_core.h; NULL: never) */
	bool gpu;          /* keep only candidates the GPU legality rules allow */
	const char *sm;    /* gpu: the target (sm_80...), measured on the GPU through the driver */
	bool emulate;      /* gpu: on the host emulator instead (gpu_emulate; for tests) */
	int shard, shards; /* measure only the ranked candidates j with j % shards == shard */
	const char *log_path;   /* tune.jsonl: each measurement appended (NULL: none) */
	const SearchLogInfo *log_info;
	const SearchLogged *logged; /* --resume: measurements taken over, not redone */
	int nlogged;
	/* fixed patterns (the standard library's) scored and measured beside the
	 * search as reference points, eligible as its best */
	const Pir *refs;
	const char *const *ref_names;
	int nrefs;
} SearchSettings;

extern const SearchSettings search_defaults;

/* The densities the search aims at: 1 - sparsity, or for a range samples
 * from 1 - sparsity down to 1 - max_sparsity.  Returns their number. */
enum { SEARCH_MAX_TARGETS = 10 };
int search_targets(const SearchSettings *s, double dens[SEARCH_MAX_TARGETS]);
/* Whether a density (of the weight: kept weights over M x K) is the
 * target's within the tolerance; for a range, within it widened by the
 * tolerance at both ends. */
bool search_density_ok(const SearchSettings *s, double density);

typedef enum SearchStatus {
	SEARCH_REJECTED,  /* over the accuracy budget */
	SEARCH_RANKED,    /* within it, not measured */
	SEARCH_MEASURED,  /* timed and checked */
	SEARCH_FAILED,    /* its measurement crashed, timed out or was wrong */
} SearchStatus;

extern const char *const search_status_names[];

typedef struct SearchCandidate {
	Pir ir;
	char notation[256]; /* the paper's notation (pir_print_paper) */
	char key[128];      /* what makes its mask: candidates with one key share it */
	PruneMetrics metrics;
	double predicted_us;
	double measured_us; /* SEARCH_MEASURED */
	double rel_err;     /* of the checked run */
	KernelSchedule sched; /* the kernel's (zero: the backend's own) */
	bool early;         /* SEARCH_MEASURED, stopped early: measured_us is coarse */
	SearchStatus status;
	char why[160];      /* SEARCH_FAILED: what went wrong */
	bool pareto;        /* on the measured candidates' loss / latency front */
	bool off_target;    /* its density is not the target's within the tolerance (search_density_ok):
	                     * rejected, or, a reference pattern, measured but never the best */
	char ref[64];       /* a reference pattern's name ("" for the search's own) */
} SearchCandidate;

typedef struct SearchResult {
	SearchCandidate *c; /* malloc'd */
	int n;
	int best;           /* measured: the least loss among the kernels measured in full within
	                     * the budget, a reference pattern or not, within s->tie of the
	                     * fastest and no slower than best_ref (ties: the faster); unmeasured:
	                     * the best predicted of the search's own; -1: none */
	int fastest;        /* the fastest measured in full within the budget; -1: none */
	int tied;           /* the kernels best was chosen from (within the tie) */
	double dense_us;    /* OpenBLAS sgemm with the same threads, the faster of the kernel set in
	                     * use and the stronger one (blas); < 0 when not measured */
	char blas_core[32]; /* x86: the OpenBLAS kernel set dense_us is of ("" where unknown: taken
	                     * from a log that did not say) */
	struct {            /* x86: the kernel sets timed for the baseline, where it was measured */
		char in_use[32], stronger[32]; /* stronger: "" where in_use is as strong as any this CPU runs */
		double in_use_us, stronger_us;  /* < 0: not measured */
		char text[256];                 /* in_use described (blas_core_text) */
		char why[160];                  /* why stronger_us is missing */
	} blas;
	int64_t patterns;   /* pattern candidates considered (before the filter) */
	int64_t masks;      /* distinct masks among them (the candidates before schedules) */
	int64_t within;     /* within the accuracy budget */
	double seconds;
	int resumed;        /* measurements taken from the log */
	int logged;         /* measurements appended to the log */
	int unlogged;       /* measurements that could not be (resumed, they are measured again) */
	int tuned;          /* schedules measured beyond the backend's own */
	int region_shapes;  /* block shapes whose importance sums were shared */
	int64_t region_hits; /* candidates scored on them */
	int stopped;        /* measurements stopped early */
	int best_ref;       /* the fastest reference (any schedule) measured in full within the budget; -1: none */
} SearchResult;

/* Searches op's pattern and schedule for weights w and importance imp (M x
 * K) with N tokens (layout kn).  progress: one line per stage (NULL: none).
 * PATC_EXIT_OK, or with err where the search cannot run: PATC_EXIT_INPUT
 * (no candidate at all), PATC_EXIT_ENV (out of memory); a candidate that
 * fails is only marked. */
int search_run(const OpResult *op, const float *w, const float *imp, const SearchSettings *s,
               FILE *progress, SearchResult *out, char err[256]);
void search_result_free(SearchResult *r);

/* "75%", or "70%..80%" for a range. */
void search_sparsity_text(const SearchSettings *s, char *buf, size_t len);

/* ---- the tuning log's functions (tunelog.c) ---- */

/* The line for candidate c (malloc'd, no newline; NULL when out of memory). */
/* blas_core: dense_us's OpenBLAS kernel set (NULL or "": not logged). */
char *search_log_line(const SearchLogInfo *info, const SearchCandidate *c, double dense_us, const char *blas_core);
/* The measurements in the log at path whose target, device, N and threads
 * are info's (none when the file does not exist). */
bool search_log_load(const char *path, const SearchLogInfo *info, SearchLogged **out, int *n, char err[256]);
void search_log_free(SearchLogged *l, int n);
/* One log line's fields, strings borrowed from its JSON (NULL, or 0 for
 * numbers, where absent). */
typedef struct SearchLogEntry {
	const char *pir, *target, *device, *source, *op, *layout, *version;
	const char *dtype;         /* NULL where absent (logs before it was logged): f32 on
	                            * x86 targets, whose kernels compute in f32, else unknown */
	const char *failed;        /* why it failed */
	double M, K, N, threads, density;
	double latency_us;         /* > 0, or < 0: absent (it failed) */
	double dense_us, rel_err;  /* -1 and 0 where absent */
	const char *blas_core;     /* dense_us's OpenBLAS kernel set (NULL in logs before it was logged) */
	KernelSchedule sched;      /* absent: the backend's own */
	bool early;                /* stopped early */
	const char *early_why;     /* why (NULL in logs before it was logged) */
} SearchLogEntry;
/* false where the line is no measurement: no PatternIR that reads, a
 * malformed schedule, a field of another type than patc writes, neither a
 * failure nor a latency from SEARCH_MIN_US to SEARCH_MAX_US with a
 * relative error under SEARCH_MAX_REL_ERR (as a measurement must have:
 * a line edited or corrupted past that is not taken over). */
struct cJSON;
bool search_log_entry(const struct cJSON *line, SearchLogEntry *e);
/* A log line of len bytes (as util_getline_max read it) parsed as JSON;
 * NULL where it is not JSON or holds a NUL byte (a JSON text before one
 * is no line of ours). */
struct cJSON *search_log_parse(const char *line, size_t len);
/* Spearman's rank correlation between the cost model's predictions and the
 * measured latencies of the searched (not reference) candidates, over *n
 * of them; 2 where fewer than 3 were measured. */
double search_spearman(const SearchResult *r, int *n);
/* The CPU's model name. */
void search_device_name(char *buf, size_t len);

/* report.json, report.csv and pareto.svg in dir; version: patc's.  kernel:
 * the names of the best kernel's files beside them (NULL-terminated; NULL
 * where none are written), listed in report.json as "kernel". */
bool search_write_reports(const char *dir, const char *version, const char *source, const OpResult *op,
                          const SearchSettings *s, const SearchResult *r, const char *target,
                          const char *const *kernel, char err[256]);

#endif
