/* SPDX-License-Identifier: MIT */
/* explain.h - human-readable reports of ops and their PatternIR (--explain). */
#ifndef PATC_EXPLAIN_H
#define PATC_EXPLAIN_H

#include "../frontend/frontend.h"
#include "../prune/prune.h"
#include "../support/util.h"

/* The loop table of one IR: components, strides, W, Q, regions, storage. */
void explain_nest(StrBuf *out, const Pir *ir, const char *indent);
/* The whole story of one op: header, each primitive with the nest after it,
 * and the final storage.  Needs the op to have been built with tracing. */
void explain_op(StrBuf *out, const OpResult *op, const Diag *diag, const PruneOp *pruned);
/* One line: "NAME: PAPER-NOTATION  (density D%)", with the retained
 * importance and its unstructured bound when the op was pruned. */
void explain_summary(StrBuf *out, const Pir *ir, const PruneMetrics *pm);
/* The pruning metrics, one per line. */
void explain_metrics(StrBuf *out, const PruneMetrics *pm, const char *indent);

#endif
