/* SPDX-License-Identifier: MIT */
/* emit_kernels.h - a program's kernels written into a directory, as -o
 * DIR writes them: the one path of `patc FILE -o DIR` and of --search's
 * best kernel. */
#ifndef PATC_EMIT_KERNELS_H
#define PATC_EMIT_KERNELS_H

#include "../lower/lower.h"
#include "../prune/prune.h"

#include <stdbool.h>

typedef struct KernelFiles {
	const char *dir, *base; /* DIR/BASE.* */
	const char *source;     /* the program's file, named in the files */
	const char *target;     /* a --target name */
	bool gpu;               /* whether it is a GPU's */
	const Program *prog;
	const PruneOp *pruned;         /* per op */
	const KernelSchedule *scheds;  /* per op, or NULL: patc's own */
	bool llvm, asm_;               /* also BASE.ll, and (x86-64) BASE.s */
	bool fixed_n;                  /* x86-64: each kernel for its op's N only */
} KernelFiles;

/* Writes the kernels (x86-64: BASE.o and BASE.h; a GPU: BASE.ptx, BASE.h,
 * BASE_launch.c and BASE.bin) and the packed weights (BASE.safetensors),
 * each atomically, inside the caller's output group (outfile.h).  Returns
 * patc's exit code, the error said on stderr where it is not 0. */
int emit_kernels(const KernelFiles *k);

/* Warns on stderr where op's kernel with pattern ir has no fast x86-64
 * path (x86_fast_path) and returns whether it did. */
bool kernel_warn_slow(const OpResult *op, const Pir *ir);

#endif
