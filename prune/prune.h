/* SPDX-License-Identifier: MIT */
/* prune.h - from a PatternIR and real weights to a mask, metrics and the
 * packed Fractal-ELL tensor (docs/language.md §13).
 *
 * The stage reads an op (frontend/frontend.h), loads its tensors
 * (load.c), scores every weight (importance.c), decides the perforations
 * greedily from coarse to fine (mask.c), measures what the mask keeps
 * (metrics.c) and packs the survivors (pack.c).
 */
#ifndef PATC_PRUNE_H
#define PATC_PRUNE_H

#include "../frontend/frontend.h"
#include "../ir/pir.h"

enum { PRUNE_ERR_MAX = TENSOR_ERR_MAX };

/* The decided perforations: for every perforated loop L (by nest index),
 * index[L] holds regions(L) rows of nnz(L) kept positions in 0..len(L)-1,
 * ascending, in the storage order of docs/language.md (Fractal-ELL) (rows enumerate the
 * storage extents of the loops outside L, row-major). */
typedef struct PruneMask {
	int32_t *index[PIR_MAX_LOOPS]; /* NULL for dense loops */
	int64_t rows[PIR_MAX_LOOPS];
	/* The greedy pass sums what survives on its way up: the kept
	 * importance, in a hierarchical order (the metrics use it). */
	bool has_kept;
	double kept;
} PruneMask;

/* Scratch memory for prune_mask_build, kept between calls so that a search
 * pruning many candidates of one weight does not pay fresh pages each time.
 * Zero-initialise; free with prune_workspace_free. */
typedef struct PruneWorkspace {
	double *r;
	int32_t *sel;
	size_t rcap, selcap;
} PruneWorkspace;
void prune_workspace_free(PruneWorkspace *ws);

/* Ties between candidate iterations of equal score go to the lower
 * iteration index; sums are accumulated in double, in a fixed order, so a
 * mask is the same on every run.  Out of memory is util_oom's. */
void prune_mask_build(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank, PruneMask *out);
void prune_mask_build_ws(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank, PruneWorkspace *ws,
                         PruneMask *out);
void prune_mask_free(PruneMask *m);

/* ---- coordinates (pack.c) ---- */

/* Per loop i and iteration v, the (m, k) offset v contributes:
 * coordinates of a nest point are sums over the loops.  Free with
 * prune_coords_free. */
typedef struct PruneCoords {
	int64_t *cm[PIR_MAX_LOOPS], *ck[PIR_MAX_LOOPS];
	int64_t len[PIR_MAX_LOOPS];
	int n;
} PruneCoords;
void prune_coords_init(PruneCoords *c, const Pir *ir);
void prune_coords_free(PruneCoords *c);

/* ---- the packed tensor (pack.c) ---- */

/* values: metrics.values entries (pir_metrics), storage order; padding
 * positions hold 0. */
void prune_pack(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                float *values);
/* The packed values in a new buffer (free()), their count in *nvalues
 * (may be NULL), and the masked dense weight in dense (M x K; may be NULL:
 * not written).  NULL when out of memory. */
float *prune_pack_new(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                      int64_t *nvalues, float *dense);
/* w: M x K, zero where the mask prunes. */
void prune_unpack(const Pir *ir, const PruneMask *m, const float *values, int64_t M, int64_t K,
                  float *w);
/* The sum of v (M x K) over the kept weights, and their number. */
void prune_kept_sum(const Pir *ir, const PruneMask *m, const float *v, int64_t M, int64_t K,
                    double *sum, int64_t *count);
/* mask: M x K, 1 where a weight is kept. */
void prune_dense_mask(const Pir *ir, const PruneMask *m, int64_t M, int64_t K, uint8_t *mask);

/* ---- importance (importance.c) ---- */

/* imp (M x K) from the weights and, as the kind needs, the calibration
 * activations x (n x K, one row per token) or the user's scores. */
void prune_importance(PatImportance kind, const float *w, const float *scores, const float *x,
                      int64_t n, int64_t M, int64_t K, float *imp);

/* ---- metrics (metrics.c) ---- */

typedef struct PruneMetrics {
	double total, kept;     /* importance: all real weights, kept ones */
	double retained;        /* R = kept / total */
	double loss;            /* magnitude loss rate 1 - R */
	int64_t nkept, nreal;   /* kept real weights, real weights */
	double density;         /* nkept / nreal */
	double bound_retained;  /* R_u: unstructured pruning keeping nkept weights */
	double bound_loss;      /* 1 - R_u */
	double loss_over_bound; /* loss - bound_loss (>= 0) */
	double loss_ratio;      /* loss / bound_loss (1 when both are 0, inf when only loss is) */
	double log_diversity;   /* from pir_metrics */
	bool has_output_error;
	double output_error;    /* ||W X - W_s X|| / ||W X|| with calibration X */
} PruneMetrics;

/* What the metrics need of an importance tensor, whatever the pattern:
 * its total, and its values grouped by the high 16 bits of their float
 * representation (a counting sort), so that the sum of the `count` largest
 * (the unstructured bound) costs one small sort of the boundary group.
 * Built once per weight, shared by every candidate pattern. */
typedef struct PruneBound {
	int64_t n;
	double total;
	int64_t *start; /* BUCKETS + 1 offsets into keys */
	double *sum;    /* per bucket */
	uint32_t *keys; /* float bits, grouped by bucket */
} PruneBound;

void prune_bound_init(PruneBound *b, const float *v, int64_t n);
void prune_bound_free(PruneBound *b);
/* The sum of the `count` largest values. */
double prune_bound_top(const PruneBound *b, int64_t count);

/* bound may be NULL: one is built for the call. */
void prune_metrics(const Pir *ir, const PruneMask *m, const float *imp, const PruneBound *bound,
                   const float *w, const float *x, int64_t n, int64_t M, int64_t K,
                   PruneMetrics *out);

/* The metrics of a pattern (ir: for its mask diversity) that keeps nkept
 * real weights of importance kept, of count, with the bound of all. */
void prune_metrics_from(const Pir *ir, double kept, int64_t nkept, const PruneBound *bound, int64_t count,
                        PruneMetrics *out);

/* The sum of the `count` largest values of v (non-negative, n of them):
 * the unstructured bound, without a PruneBound.  Linear time (radix
 * selection on float bits). */
double prune_top_sum(const float *v, int64_t n, int64_t count);

/* ---- checking a kernel's result (check.c) ---- */

/* ||C - ref|| / ||ref|| over ncols columns of C spread evenly over N (all
 * of them where ncols <= 0 or N <= ncols), ref the masked dense weight
 * (M x K) times X in float64, every input rounded to dt first as a
 * tensor-core kernel reads it (f32: as is).  X and C in the op's layout:
 * kn, X K x N and C M x N; nk, X N x K and C N x M.  A NaN in a sampled
 * element of C makes it NaN; -1 when out of memory. */
double prune_check_error(const float *dense, const float *x, const float *c, int64_t M, int64_t K, int64_t N,
                         bool kn, PatDtype dt, int64_t ncols);

/* prune_check_error, and whether the input is to blame rather than the
 * kernel: finite weights and activations whose product no float32 kernel
 * can compute. */
typedef struct PruneCheck {
	double rel;    /* what prune_check_error returns */
	/* A sampled element of the float64 reference is past float32's range
	 * (ref_past), or its terms' magnitudes add up past it and C holds no
	 * finite value there (a partial sum overflowed, in whatever order the
	 * kernel adds).  m, n: the element of C (row of the weight, column of
	 * X), the largest such; ref its float64 value, mag the sum of its
	 * terms' magnitudes. */
	bool overflow, ref_past;
	int64_t m, n;
	double ref, mag;
} PruneCheck;
/* c may be NULL: the reference alone is looked at (before a kernel runs;
 * rel 0, overflow only where the reference is past float32's range). */
void prune_check(const float *dense, const float *x, const float *c, int64_t M, int64_t K, int64_t N, bool kn,
                 PatDtype dt, int64_t ncols, PruneCheck *out);

/* ---- one op, end to end (load.c) ---- */

typedef struct PruneOp {
	int64_t M, K;
	float *w;      /* M x K, C order */
	float *imp;    /* M x K */
	float *x;      /* calibration activations, ncalib x K, or NULL */
	int64_t ncalib;
	PruneMask mask;
	PruneMetrics metrics;
	/* The kept weights packed in storage order (Fractal-ELL's values; the
	 * mask holds its index arrays), made once by prune_op and handed to
	 * every emitter: nvalues floats, f32 (an emitter rounds them to the
	 * op's dtype where it stores that). */
	float *values;
	int64_t nvalues;
	float *bias; /* the op's `bias = ...`: M floats, or NULL */
} PruneOp;

/* Loads the op's weights (and calibration and scores), computes importance,
 * the mask and the metrics.  On failure fills err (naming the file and the
 * tensor) and *where (the setting at fault). */
bool prune_op(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where);
/* p->values and p->nvalues from p->w under p->mask (ir's), replacing any
 * before: for a PruneOp whose mask was made again (the search's best). */
void prune_op_pack(const Pir *ir, PruneOp *p);
void prune_op_free(PruneOp *p);

#endif
