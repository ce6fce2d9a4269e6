/* explain.h - human-readable reports of ops and their PatternIR (--explain). */
#ifndef PATC_EXPLAIN_H
#define PATC_EXPLAIN_H

#include "../frontend/frontend.h"
#include "../support/util.h"

/* The loop table of one IR: components, strides, W, Q, regions, storage. */
void explain_nest(StrBuf *out, const Pir *ir, const char *indent);
/* The whole story of one op: header, each primitive with the nest after it,
 * and the final storage.  Needs the op to have been built with tracing. */
void explain_op(StrBuf *out, const OpResult *op, const Diag *diag);
/* One line: "NAME: PAPER-NOTATION  (density D%)". */
void explain_summary(StrBuf *out, const Pir *ir);

#endif
