/* SPDX-License-Identifier: MIT */
/* costmodel.h - the search's cost models: how long a candidate's kernel
 * will take, before it is compiled (DESIGN.md section 6, step 4).
 *
 * Two models share one interface:
 *   analytic  kept FMAs at a rate set by the rows sharing each X vector and
 *             the contiguous run along k, plus X and C streamed once; no
 *             data needed.
 *   learned   gradient-boosted trees (gbt.h) on the features below, trained
 *             from tuning logs by `patc train-cost-model LOG... -o MODEL`.
 *             They predict the log of the time per kept FMA (one weight
 *             times one column); times the FMAs, that is the latency.
 *
 * The features, per candidate: the paper's per-loop features (length, nnz,
 * axis, level) for the innermost COST_LOOPS loops, plus analytic counts
 * (FMAs, bytes of X, C, values and indices, index loads, the contiguous k
 * run and the rows sharing it, the shape, the lowering path, the analytic
 * model's own estimate) and the kernel schedule.
 */
#ifndef PATC_COSTMODEL_H
#define PATC_COSTMODEL_H

#include "../ir/pir.h"
#include "../lower/lower.h"
#include "gbt.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum { COST_LOOPS = 6, COST_GLOBAL = 27, COST_NFEAT = COST_GLOBAL + 4 * COST_LOOPS };

/* What a prediction needs besides the nest. */
typedef struct CostQuery {
	const Pir *ir;
	int64_t N;
	PatLayout layout;
	int threads;
	double nkept; /* kept real weights */
	KernelSchedule sched;
	int vector_width; /* the host's floats per vector (0: this host's) */
} CostQuery;

typedef struct CostModel {
	Gbt *gbt;          /* NULL: the analytic model */
	char target[32];   /* the target its logs were measured on */
	char device[128];  /* and the device */
	int samples, groups;
	double spearman, recall; /* on held-out searches when it was trained; NAN: none measured */
	double recall_tied;      /* recall counting kernels within COST_RECALL_TIE of the 10th as tied */
} CostModel;

/* The analytic model's latency in microseconds. */
double cost_analytic_us(const CostQuery *q);
/* The model's latency (m NULL or without trees: the analytic one). */
double cost_predict_us(const CostModel *m, const CostQuery *q);
void cost_features(const CostQuery *q, double f[COST_NFEAT]);
extern const char *const cost_feature_names[COST_NFEAT];

/* Top-10 recall also counts a predicted kernel within this fraction of the
 * 10th fastest's latency as one of the 10 (the search's --tie default). */
#define COST_RECALL_TIE 0.02

/* Spearman's rank correlation of a and b (ties averaged); 2 (none) under 3
 * values or where either is constant. */
double cost_spearman(const double *a, const double *b, int n);

/* A model file: a header of key-value lines, then the trees.  Untrusted:
 * anything malformed gives false with err. */
bool cost_model_load(const char *path, CostModel *m, char err[256]);
void cost_model_free(CostModel *m);

/* `patc train-cost-model`: reads the measurements of the logs for target
 * (one sample per kernel of a search: the fastest where a search ran
 * again), evaluates the model by k-fold cross-validation over whole
 * searches (held-out Spearman correlation per search and top-10 recall,
 * and the repeated measurements' agreement with themselves, written to
 * report), then trains on everything and writes the model to out (a
 * temporary file, then renamed).  PATC_EXIT_OK, else err and
 * PATC_EXIT_INPUT (the logs) or PATC_EXIT_ENV (out not written). */
typedef struct CostTrainOptions {
	const char *const *logs;
	int nlogs;
	const char *target; /* x86-64 */
	const char *out;
	int folds;          /* 5 */
	uint64_t seed;
} CostTrainOptions;
int cost_train(const CostTrainOptions *o, FILE *report, char err[256]);

#endif
