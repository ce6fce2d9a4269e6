/* prune.h - from a PatternIR and real weights to a mask, metrics and the
 * packed Fractal-ELL tensor (DESIGN.md §3-§5).
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

enum { PRUNE_ERR_MAX = 512 };

/* The decided perforations: for every perforated loop L (by nest index),
 * index[L] holds regions(L) rows of nnz(L) kept positions in 0..len(L)-1,
 * ascending, in the storage order of DESIGN.md §4 (rows enumerate the
 * storage extents of the loops outside L, row-major). */
typedef struct PruneMask {
	int32_t *index[PIR_MAX_LOOPS]; /* NULL for dense loops */
	int64_t rows[PIR_MAX_LOOPS];
} PruneMask;

/* Ties between candidate iterations of equal score go to the lower
 * iteration index; sums are accumulated in double, in a fixed order, so a
 * mask is the same on every run. */
bool prune_mask_build(const Pir *ir, const float *imp, int64_t M, int64_t K, PatRank rank,
                      PruneMask *out, char err[PRUNE_ERR_MAX]);
void prune_mask_free(PruneMask *m);

/* ---- the packed tensor (pack.c) ---- */

/* values: metrics.values entries (pir_metrics), storage order; padding
 * positions hold 0. */
void prune_pack(const Pir *ir, const PruneMask *m, const float *w, int64_t M, int64_t K,
                float *values);
/* w: M x K, zero where the mask prunes. */
void prune_unpack(const Pir *ir, const PruneMask *m, const float *values, int64_t M, int64_t K,
                  float *w);
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
	double loss_ratio;      /* loss / bound_loss (1 when both are 0) */
	double log_diversity;   /* from pir_metrics */
	bool has_output_error;
	double output_error;    /* ||W X - W_s X|| / ||W X|| with calibration X */
} PruneMetrics;

void prune_metrics(const Pir *ir, const PruneMask *m, const float *imp, const float *w,
                   const float *x, int64_t n, int64_t M, int64_t K, PruneMetrics *out);

/* The sum of the `count` largest values of v (non-negative, n of them):
 * the unstructured bound.  Linear time (radix selection on float bits). */
double prune_top_sum(const float *v, int64_t n, int64_t count);

/* ---- one op, end to end (load.c) ---- */

typedef struct PruneOp {
	int64_t M, K;
	float *w;      /* M x K, C order */
	float *imp;    /* M x K */
	float *x;      /* calibration activations, ncalib x K, or NULL */
	int64_t ncalib;
	PruneMask mask;
	PruneMetrics metrics;
} PruneOp;

/* Loads the op's weights (and calibration and scores), computes importance,
 * the mask and the metrics.  On failure fills err (naming the file and the
 * tensor) and *where (the setting at fault). */
bool prune_op(const OpResult *op, PruneOp *out, char err[PRUNE_ERR_MAX], SrcLoc *where);
void prune_op_free(PruneOp *p);

#endif
