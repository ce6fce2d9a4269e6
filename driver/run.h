/* run.h - `--run`: time an op's kernel beside a dense OpenBLAS sgemm. */
#ifndef PATC_RUN_H
#define PATC_RUN_H

#include "../prune/prune.h"
#include "../support/util.h"

/* JIT-compiles the op's x86 kernel, runs it on its pruned weights and a
 * seeded random X, checks it against the dense product of the masked
 * weight, and reports the timing.  False with err on failure. */
bool run_op(const OpResult *op, const PruneOp *p, int threads, StrBuf *out, char err[512]);

#endif
