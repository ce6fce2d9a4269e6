/* SPDX-License-Identifier: MIT */
/* kernel_call.h - one call of a JIT-compiled x86 kernel, as the CPU
 * benchmarks time it (util_time_us takes a function and its argument). */
#ifndef PATC_BENCH_KERNEL_CALL_H
#define PATC_BENCH_KERNEL_CALL_H

#include "backend_x86/x86.h"

typedef struct KernelCall {
	const X86Kernel *kern;
	const float *x, *values;
	float *c;
	const int32_t *const *index;
	int64_t N;
	int threads;
	const float *bias; /* the epilogue's, or NULL */
} KernelCall;

/* x86_run of the call's kernel on its N columns. */
static inline void kernel_call(void *arg)
{
	const KernelCall *k = arg;
	x86_run(k->kern, k->x, k->c, k->values, k->index, k->bias, k->N, k->threads);
}

#endif
