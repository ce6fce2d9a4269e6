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
	                                 k->llvm, err);
	free(scheds);
	if (rc != PATC_EXIT_OK)
		fprintf(stderr, "patc: error: %s\n", err);
	return rc;
}

static int emit_x86(const KernelFiles *k)
{
	const char *cpu = x86_target_cpu(k->target);
	const X86Emit e = {.dir = k->dir,         .base = k->base,         .target = k->target,
	                   .cpu = cpu,            .features = cpu ? "" : NULL, .version = PATC_VERSION,
	                   .source = k->source,   .nops = k->prog->nops,   .ops = k->prog->ops,
	                   .pruned = k->pruned,   .schedules = k->scheds,  .llvm = k->llvm,
	                   .asm_ = k->asm_};
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
