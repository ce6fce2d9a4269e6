/* SPDX-License-Identifier: MIT */
/* run.h - `--run`: time an op's kernel beside a dense OpenBLAS sgemm. */
#ifndef PATC_RUN_H
#define PATC_RUN_H

#include "../backend_ptx/ptx.h"
#include "../prune/prune.h"
#include "../support/util.h"

/* JIT-compiles the op's x86 kernel, runs it on its pruned weights and a
 * fresh random X (C poisoned with NaN first), checks it against the
 * float64 product of the masked weight, and reports the timing beside
 * OpenBLAS sgemm.  False with err and *code: PATC_EXIT_ENV when out of
 * memory, PATC_EXIT_INTERNAL where the kernel did not compile or its
 * result is wrong.  cpu: the kernel's (x86_target_cpu; NULL: the host's). */
bool run_op(const OpResult *op, const PruneOp *p, const char *cpu, int threads, StrBuf *out, char err[512],
            int *code);

/* --run on a GPU target: the ops' kernels for sm (sm_80..) under the
 * schedule `given` (patc's choice but for its wg and wsum) through the CUDA driver,
 * each checked against a float64 reference (C poisoned first) and timed
 * beside cuBLAS.  An op whose result is wrong is named on stderr and the
 * next one runs.  False with err and *code: PATC_EXIT_ENV for no driver or
 * GPU, or a driver call that failed (the ops after it are not run: the
 * device may be left unusable), PATC_EXIT_INTERNAL where a result was
 * wrong. */
bool run_ops_gpu(const Program *prog, const PruneOp *pruned, const char *sm, PtxSchedule given, StrBuf *out,
                 char err[512], int *code);

#endif
