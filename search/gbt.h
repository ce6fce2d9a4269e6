/* SPDX-License-Identifier: MIT */
/* gbt.h - gradient-boosted regression trees, the learned cost model's
 * predictor (log kernel latency from a few dozen numeric features).
 *
 * Squared-error loss: the prediction is base (the mean target) plus the sum
 * of the trees' leaf values; each tree is fitted to the residuals of those
 * before it on a random subsample of the rows.  Training is deterministic
 * for a given seed.  A model is read-only once built: any number of threads
 * may predict with one model.
 */
#ifndef PATC_GBT_H
#define PATC_GBT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { GBT_ERR_MAX = 256 };

typedef struct GbtParams {
	int trees;            /* boosting rounds, 0..100000 */
	int max_depth;        /* of each tree, 1..30 */
	double learning_rate; /* shrinkage of each tree's leaves, in (0, 1] */
	int min_leaf;         /* fewest sampled rows in a leaf, >= 1 */
	double subsample;     /* fraction of the rows each tree sees, in (0, 1] */
	uint64_t seed;
} GbtParams;

/* 300 trees of depth 4, learning rate 0.05, 3 rows a leaf, 80% rows. */
extern const GbtParams gbt_defaults;

typedef struct Gbt Gbt;

/* The largest |y| a model is fitted to (squares and sums of residuals
 * stay finite). */
#define GBT_MAX_ABS_Y 1e100

/* Fits a model to n rows of nfeat features (X, row-major) and their
 * targets y with parameters p (NULL: gbt_defaults).  Returns NULL with err
 * set on out-of-range parameters, n outside 2..2^23, a non-finite value in
 * X or y, |y| > GBT_MAX_ABS_Y, or when out of memory. */
Gbt *gbt_train(const double *X, const double *y, int n, int nfeat, const GbtParams *p,
               char err[GBT_ERR_MAX]);

/* The prediction for one row of gbt_nfeat(g) features.  A NaN feature
 * takes the right branch of every split on it. */
double gbt_predict(const Gbt *g, const double *x);
int gbt_nfeat(const Gbt *g);
/* Bounds on any prediction: the base plus each tree's least (greatest)
 * leaf. */
void gbt_range(const Gbt *g, double *lo, double *hi);

/* Text form, exact on a round trip (numbers as %.17g):
 *     gbt <nfeat> <ntrees> <base>
 *     <nnodes> <node>...          one line per tree, its root first
 *     end
 * A node is "-1 <value>" for a leaf or "<feat> <threshold> <left> <right>"
 * for a split (x[feat] < threshold goes left); children are node indices
 * within the tree, greater than the node's own.  The trailing "end" makes a
 * truncated file an error.  gbt_write returns false on a write error. */
bool gbt_write(const Gbt *g, FILE *f);

/* Reads gbt_write's text, from f's line first_line on (what the lines
 * err names count from).  The file is untrusted: anything malformed,
 * truncated, out of range or non-finite gives NULL and an err naming the
 * line and what is wrong; memory stays proportional to the file's size. */
Gbt *gbt_read(FILE *f, int first_line, char err[GBT_ERR_MAX]);

void gbt_free(Gbt *g); /* NULL is fine */

#endif
