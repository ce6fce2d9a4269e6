/* SPDX-License-Identifier: MIT */
/* emit_kernels.c - a program's kernels written into a directory; see
 * emit_kernels.h. */
#include "emit_kernels.h"
#include "emit_cuda.h"
#include "emit_weights.h"
#include "../backend_ptx/ptx.h"
#include "../backend_x86/x86.h"
#include "../support/util.h"

#include <stdio.h>
#include <stdlib.h>

static int emit_gpu(const KernelFiles *k)
{
	const int nops = k->prog->nops;
	PtxSchedule *scheds = NULL;
	if (k->scheds) {
		scheds = calloc((size_t)nops + 1, sizeof *scheds);
		if (!scheds)
			util_oom();
		for (int i = 0; i < nops; i++)
			scheds[i] = ptx_schedule_of(&k->scheds[i]);
	}
	char err[512];
	const int rc = emit_cuda_program(k->dir, k->base, PATC_VERSION, k->source, k->target, k->prog, k->pruned, scheds,
	                                 k->llvm, k->fixed_n, err);
	free(scheds);
	if (rc != PATC_EXIT_OK)
		fprintf(stderr, "patc: error: %s\n", err);
	return rc;
}

bool kernel_warn_slow(const OpResult *op, const Pir *ir)
{
	const LowerKernel lk = {ir, op->shape, op->name, 0, {0}, false, 0};
	if (x86_fast_path(&lk))
		return false;
	char paper[PIR_PAPER_MAX];
	pir_print_paper(ir, paper, sizeof paper);
	fprintf(stderr,
	        "patc: warning: op '%s': %s in layout %s has no fast x86-64 kernel: it walks the weights one at a "
	        "time, and is likely slower than dense\n",
	        op->name, paper, pat_layout_names[op->shape.layout]);
	return true;
}

static int emit_x86(const KernelFiles *k)
{
	for (int i = 0; i < k->prog->nops; i++)
		kernel_warn_slow(&k->prog->ops[i], k->prog->ops[i].ir);
	const char *cpu = x86_target_cpu(k->target);
	const X86Emit e = {.dir = k->dir,         .base = k->base,         .target = k->target,
	                   .cpu = cpu,            .features = cpu ? "" : NULL, .version = PATC_VERSION,
	                   .source = k->source,   .nops = k->prog->nops,   .ops = k->prog->ops,
	                   .pruned = k->pruned,   .schedules = k->scheds,  .llvm = k->llvm,
	                   .asm_ = k->asm_,       .fixed_n = k->fixed_n};
	char err[X86_ERR_MAX];
	if (!x86_emit(&e, err)) {
		fprintf(stderr, "patc: error: %s\n", err);
		return PATC_EXIT_ENV;
	}
	char path[4096], terr[TENSOR_ERR_MAX];
	snprintf(path, sizeof path, "%s/%s.safetensors", k->dir, k->base);
	if (!emit_weights(path, k->prog, k->pruned, false, PATC_VERSION, terr)) {
		fprintf(stderr, "patc: error: %s\n", terr);
		return PATC_EXIT_ENV;
	}
	return PATC_EXIT_OK;
}

int emit_kernels(const KernelFiles *k) { return k->gpu ? emit_gpu(k) : emit_x86(k); }
