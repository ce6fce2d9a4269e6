/* SPDX-License-Identifier: MIT */
/* search_cli.h - `patc FILE.pat --search`: runs search/ on one op and
 * writes its reports and the best kernel. */
#ifndef PATC_SEARCH_CLI_H
#define PATC_SEARCH_CLI_H

#include "../search/search.h"
#include "../support/util.h"

typedef struct SearchCli {
	const char *input, *dir, *base; /* reports and kernel go to dir */
	const char *op;                 /* --op, or NULL: the one op with weights */
	const char *target;
	bool gpu;
	bool resume;                    /* take over what DIR/tune.jsonl has measured */
	const char *stdlib;             /* for the reference patterns and the default cost model */
	SearchSettings s;
	const char *cost_model;         /* a model file, "analytic", or NULL: the stdlib's for the target */
} SearchCli;

/* Returns patc's exit code; the summary goes to out. */
int search_cli(const SearchCli *c, const Program *prog, const PruneOp *pruned, StrBuf *out);

/* `patc merge LOG... -o OUT`: the tuning logs' measurements, each kernel
 * once (its newest measurement, in its first's place), in one log written
 * atomically.  Returns patc's exit code. */
int search_merge(int n, const char *const *paths, const char *output);

/* `patc train-cost-model LOG... -o MODEL`.  Returns patc's exit code. */
int search_train(const CostTrainOptions *o);

#endif
