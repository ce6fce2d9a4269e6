/* SPDX-License-Identifier: MIT */
/* x86.h - the x86-64 backend: kernels lowered by lower/ with an x86 update
 * hook, optimised at O3 for the host (or a target's CPU: an x86-64 level),
 * and JIT-compiled with ORC LLJIT to run in-process (tests, --run, the
 * search) or written as an object (emit.c). */
#ifndef PATC_X86_H
#define PATC_X86_H

#include "../lower/lower.h"
#include "../prune/prune.h"
#include "../support/util.h"

#include <llvm-c/TargetMachine.h>

#include <stdbool.h>
#include <stdint.h>

typedef void (*X86KernelFn)(const float *X, float *C, const float *values,
                            const int32_t *const *index, int64_t n0, int64_t n1, int64_t N, const float *bias);

typedef struct X86Kernel {
	void *jit; /* LLVMOrcLLJITRef */
	X86KernelFn fn;
	int64_t N;      /* the N it is specialised on (n_runtime: tuned for) */
	bool n_runtime; /* any N at the call */
	int64_t chunk;  /* x86_run calls fn on at most this many columns at a time
	                 * (column chunks: see plan.c) */
} X86Kernel;

/* The N a kernel for N at run time is chunked for (x86_chunk_columns):
 * any N, as large as it comes. */
#define X86_N_ANY ((int64_t)1 << 40)

enum { X86_ERR_MAX = 512 };

/* Lowers, optimises and JIT-compiles one kernel.  cpu/features: NULL for
 * the host's. */
bool x86_jit(const LowerKernel *k, const char *cpu, const char *features, X86Kernel *out,
             char err[X86_ERR_MAX]);
void x86_kernel_free(X86Kernel *k);

/* The same with other lowering hooks (e.g. the GPU mapping, emulated on
 * the host by the tests). */
bool x86_jit_hooks(const LowerKernel *k, const LowerHooks *hooks, const char *cpu, const char *features,
                   X86Kernel *out, char err[X86_ERR_MAX]);
/* The address of a symbol of the kernel's module, or NULL. */
void *x86_lookup(const X86Kernel *k, const char *name);

/* Thread slices start on multiples of this many columns, so that only the
 * last slice can end in columns that fill no whole vector. */
enum { X86_SLICE_ALIGN = 16 };

/* Where slice s of t starts (s == t: N): N s / t rounded to a multiple of
 * X86_SLICE_ALIGN, at most N.  Nondecreasing in s; slices may be empty. */
static inline int64_t x86_slice_bound(int64_t N, int64_t s, int64_t t)
{
	if (s >= t)
		return N;
	int64_t b = (N * s / t + X86_SLICE_ALIGN / 2) & -(int64_t)X86_SLICE_ALIGN;
	return b < N ? b : N;
}

/* How many columns x86_run (and the emitted _run) give the update kernel
 * of k at a time: N, or a chunk whose X stays in L2 where X is large (see
 * plan.c). */
int64_t x86_chunk_columns(const LowerKernel *k);
/* The end of the chunk of w columns from a in a slice ending at n1: a + w,
 * or n1 where that would leave fewer than w / 2 columns (so the last chunk
 * takes up to 1.5 w). */
static inline int64_t x86_chunk_end(int64_t a, int64_t n1, int64_t w)
{
	return n1 - (a + w) < w / 2 ? n1 : a + w;
}

/* Runs the kernel over all N columns with `threads` threads, each taking a
 * contiguous slice of columns (columns never write the same C element).
 * N: any where k->n_runtime, else k->N (another N is a caller's bug: it
 * aborts).  bias: M floats or NULL, for the op's epilogue (ir/op.h). */
void x86_run(const X86Kernel *k, const float *X, float *C, const float *values,
             const int32_t *const *index, const float *bias, int64_t N, int threads);

/* What the backend will do with a kernel (its vector_width set): the
 * choices that make its speed, for the search's cost model. */
typedef struct X86Traits {
	int path;         /* LowerPath */
	double x_reuse;   /* stored weights per k: the FMAs each X element feeds */
	bool panel;       /* X copied into panels */
	int64_t chunk;    /* columns per chunk (N: none) */
	bool rows_spread; /* X's rows spread over L1's sets (no condensed copy) */
	bool across;      /* small blocks accumulated across the k loops */
	bool stores_c;    /* C stored, not zeroed then added to */
} X86Traits;
void x86_kernel_traits(const LowerKernel *k, X86Traits *t);

/* ---- shared by the JIT and the object emitter ---- */
extern const LowerHooks x86_update_hooks;
/* The update hook alone: the nest walked point by point. */
extern const LowerHooks x86_point_hooks;

/* lower_kernel for the x86 backend: with x86_update_hooks, a kernel of
 * layout nk whose kn form has a fast path runs it on transposed panels
 * (nk.c); *inner (if not NULL): the panel kernel it calls, or NULL. */
LLVMValueRef x86_lower(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k, const LowerHooks *hooks,
                       LLVMValueRef *inner);
/* Whether k has a fast path (k runs, m runs, an m loop innermost, or nk
 * on the panels of one): false where the kernel walks its nest one weight
 * at a time, which patc says with a warning. */
bool x86_fast_path(const LowerKernel *k);
/* Whether x86_lower runs k (layout nk) on panels, and the tokens of one
 * panel. */
bool x86_nk_panels(const LowerKernel *k, const LowerHooks *hooks);
int64_t x86_nk_panel(const LowerKernel *k);
/* Whether x86_lower runs k (layout nk, its vector_width set) on a kernel
 * that reads X and C in place (tiles, channel_in, blocks: nkdot.c) rather
 * than on the panels alone. */
bool x86_nk_dot(const LowerKernel *k, const LowerHooks *hooks);
/* The kn kernel a panel of k runs: its pattern on N = x86_nk_panel(k). */
LowerKernel x86_nk_panel_kernel(const LowerKernel *k, const char *name);
void x86_init_llvm(void);
/* The target machine for cpu/features (NULL: the host's); pic for objects
 * that link into position-independent executables. */
LLVMTargetMachineRef x86_target_machine(const char *cpu, const char *features, bool pic,
                                        char err[X86_ERR_MAX]);
/* Floats per vector register on the machine: 16 (AVX-512), 8 (AVX), 4. */
int x86_vector_width(LLVMTargetMachineRef tm);

/* The vector width a kernel of schedule s gets on tm: the schedule's where
 * it asks for a narrower one than tm's. */
int x86_schedule_width(const KernelSchedule *s, LLVMTargetMachineRef tm);
/* Gives every function the machine's CPU and features and runs O3. */
bool x86_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char err[X86_ERR_MAX]);

/* ---- the targets (target.c) ---- */
/* An x86-64 psABI microarchitecture level: x86-64-v2 (SSE4.2, 4 floats a
 * vector), -v3 (AVX2 and FMA, 8), -v4 (AVX-512, 16). */
typedef struct X86Level {
	const char *name; /* "x86-64-v3", LLVM's CPU of the same name */
	const char *isa;  /* what the kernels use of it: "AVX2, FMA" */
	const char *cpus; /* which CPUs have it, in words */
	int width;        /* floats per vector */
	int nfeat;        /* the CPU features it needs (target.c's table) */
} X86Level;
/* The CPU an x86 target compiles for: "x86-64-v2", "x86-64-v3",
 * "x86-64-v4" for those levels, "haswell" (x86-64-avx2), "skylake-avx512"
 * (x86-64-avx512), NULL (native and x86-64: the host's; GPU targets).
 * With it, x86_jit and x86_target_machine take features "" (the CPU's
 * own). */
const char *x86_target_cpu(const char *target);
/* The level an x86 target's code needs: its own for x86-64-vN, x86-64-v3
 * for x86-64-avx2 and x86-64-v4 for x86-64-avx512 (whose CPUs have more,
 * which the kernels do not use); for native, the host's highest. */
const X86Level *x86_target_level(const char *target);
/* The highest level this machine has, or NULL (below x86-64-v2). */
const X86Level *x86_host_level(void);
/* The first feature this machine lacks of those code compiled for cpu
 * (x86_target_cpu's) may use, or NULL where it runs it (cpu NULL: the
 * host's).  Test hook: PATC_TEST_CPU_LACKS=F[,F...] makes the host lack
 * the features F (LLVM's names: avx512f...) here, in x86_host_level and in
 * the check x86_cpu_check_c writes. */
const char *x86_host_lacks(const char *cpu);
/* Floats per vector of a CPU x86_target_cpu names (4 for others). */
int x86_cpu_width(const char *cpu);
/* What an x86 target's code needs of the CPU, in words: "x86-64-v3 (AVX2,
 * FMA)", or for another name "x86-64-v4 (AVX-512) at least (compiled for
 * native, the CPU znver4)". */
void x86_target_needs(const char *target, char *buf, size_t len);
/* Appends to out a C file to be compiled into BASE.so with the object of
 * target: a constructor that checks with CPUID (and XGETBV, for the state
 * the OS enables) that the CPU has every feature of the target's level,
 * and where it lacks one says so on stderr ("BASE.so needs x86-64-v4
 * (AVX-512); this CPU lacks avx512f, avx512bw") and ends the process with
 * _exit(127).  Nothing where the target needs no level (native on a host
 * below x86-64-v2). */
void x86_cpu_check_c(StrBuf *out, const char *base, const char *target);

/* ---- objects (emit.c) ---- */
typedef struct X86Emit {
	const char *dir, *base;    /* DIR/BASE.o, .h, and with llvm/asm .ll, .s */
	const char *target;         /* its --target (x86-64-v3, native...), for the header */
	const char *cpu, *features; /* NULL: the host's */
	const char *version, *source;
	int nops;
	const OpResult *ops;
	const PruneOp *pruned;
	const KernelSchedule *schedules; /* per op, or NULL: the backend's own */
	bool llvm, asm_;
	bool fixed_n; /* each kernel for its op's N only (else any N at the call) */
} X86Emit;
bool x86_emit(const X86Emit *e, char err[X86_ERR_MAX]);

#endif
