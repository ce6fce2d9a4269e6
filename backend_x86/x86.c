/* SPDX-License-Identifier: MIT */
/* x86.c - the x86-64 backend; see x86.h.  This file: the update hook, the
 * hook table, the target machine, the pass pipeline, the JIT and the thread
 * slices.  The run kinds are in krun.c and mrun.c, the IR they share in
 * common.c, the backend's choices (column chunks among them) in plan.c, the
 * targets' CPUs and the features they need in target.c.
 *
 * The update hook is a plain loop over the token columns; with X, C and
 * the weights marked noalias, LLVM's loop vectoriser turns it into the
 * host's widest FMA vectors.  LLJIT runs no optimisation itself, so the
 * module goes through LLVMRunPasses("default<O3>") first, with the target
 * machine it will run on.
 */
#define _POSIX_C_SOURCE 200809L
#include "x86_impl.h"
#include "../support/pool.h"
#include "../support/util.h"

#include <llvm-c/Core.h>
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C[m, n] += w * X[k, n] over the columns n0..n1 (contracted to FMA). */
static void x86_update(LowerCtx *c, LLVMValueRef m, LLVMValueRef k, LLVMValueRef w)
{
	const LowerKernel *kk = c->k;
	LowerLoop ln;
	LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "n");
	LLVMValueRef xi, ci;
	if (kk->shape.layout == PAT_LAYOUT_KN) {
		xi = ll_add(c, ll_mulv(c, k, c->N), n);
		ci = ll_add(c, ll_mulv(c, m, c->N), n);
	} else {
		xi = ll_add(c, ll_mul(c, n, kk->shape.K), k);
		ci = ll_add(c, ll_mul(c, n, kk->shape.M), m);
	}
	LLVMValueRef xp = LLVMBuildGEP2(c->b, c->f32, c->X, &xi, 1, "");
	LLVMValueRef cp = LLVMBuildGEP2(c->b, c->f32, c->C, &ci, 1, "");
	LLVMValueRef x = LLVMBuildLoad2(c->b, c->f32, xp, "x");
	LLVMValueRef acc = LLVMBuildLoad2(c->b, c->f32, cp, "c");
	LLVMValueRef prod = LLVMBuildFMul(c->b, w, x, "");
	LLVMSetFastMathFlags(prod, LLVMFastMathAllowContract);
	LLVMValueRef sum = LLVMBuildFAdd(c->b, acc, prod, "");
	LLVMSetFastMathFlags(sum, LLVMFastMathAllowContract);
	LLVMBuildStore(c->b, sum, cp);
	lower_loop_end(c, &ln);
}

const LowerHooks x86_update_hooks = {
	.stores_c = x86_stores_c, .fuses_epilogue = x86_epilogue_fused, .update = x86_update, .krun = x86_krun,
	.mrun = x86_mrun, .minner = x86_minner, .krun_all = x86_krun_all, .mrun_all = x86_mrun_all};

const LowerHooks x86_point_hooks = {.update = x86_update};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_targets(void)
{
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
}

void x86_init_llvm(void) { pthread_once(&init_once, init_targets); }

int x86_schedule_width(const KernelSchedule *s, LLVMTargetMachineRef tm)
{
	const int w = x86_vector_width(tm);
	return s->vector_width > 0 && s->vector_width < w ? s->vector_width : w;
}

int x86_vector_width(LLVMTargetMachineRef tm)
{
	char *cpu = LLVMGetTargetMachineCPU(tm), *feat = LLVMGetTargetMachineFeatureString(tm);
	/* the features string lists +x and -x; a forced CPU may leave it empty */
	int w = strstr(feat, "+avx512f") ? 16 : strstr(feat, "+avx") ? 8 : 4;
	if (!feat[0])
		w = x86_cpu_width(cpu);
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	return w;
}

LLVMTargetMachineRef x86_target_machine(const char *cpu, const char *features, bool pic,
                                        char err[X86_ERR_MAX])
{
	x86_init_llvm();
	char *triple = LLVMGetDefaultTargetTriple();
	char *host_cpu = LLVMGetHostCPUName(), *host_feat = LLVMGetHostCPUFeatures();
	char what[128];
	snprintf(what, sizeof what, "no target for %.100s", triple);
	LLVMTargetRef target = ll_target(triple, err, X86_ERR_MAX, what);
	LLVMTargetMachineRef tm = NULL;
	if (target)
		tm = LLVMCreateTargetMachine(target, triple, cpu ? cpu : host_cpu,
		                             features ? features : host_feat, LLVMCodeGenLevelAggressive,
		                             pic ? LLVMRelocPIC : LLVMRelocDefault,
		                             pic ? LLVMCodeModelDefault : LLVMCodeModelJITDefault);
	LLVMDisposeMessage(triple);
	LLVMDisposeMessage(host_cpu);
	LLVMDisposeMessage(host_feat);
	return tm;
}

bool x86_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, char err[X86_ERR_MAX])
{
	char *cpu = LLVMGetTargetMachineCPU(tm), *feat = LLVMGetTargetMachineFeatureString(tm);
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (LLVMCountBasicBlocks(f) > 0) {
			LLVMAddTargetDependentFunctionAttr(f, "target-cpu", cpu);
			LLVMAddTargetDependentFunctionAttr(f, "target-features", feat);
		}
	LLVMDisposeMessage(cpu);
	LLVMDisposeMessage(feat);
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
	LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
	LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, po);
	LLVMDisposePassBuilderOptions(po);
	return ll_ok(e, err, X86_ERR_MAX, "optimising the kernel");
}

bool x86_jit(const LowerKernel *k, const char *cpu, const char *features, X86Kernel *out,
             char err[X86_ERR_MAX])
{
	return x86_jit_hooks(k, &x86_update_hooks, cpu, features, out, err);
}

void *x86_lookup(const X86Kernel *k, const char *name)
{
	LLVMOrcExecutorAddress addr;
	LLVMErrorRef e = LLVMOrcLLJITLookup(k->jit, &addr, name);
	if (e) {
		LLVMConsumeError(e);
		return NULL;
	}
	return (void *)(uintptr_t)addr;
}

bool x86_jit_hooks(const LowerKernel *k, const LowerHooks *hooks, const char *cpu, const char *features,
                   X86Kernel *out, char err[X86_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	LLVMTargetMachineRef tm = x86_target_machine(cpu, features, false, err);
	if (!tm)
		return false;
	bool ok = false;
	LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
	LLVMOrcLLJITRef jit = NULL;
	LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
	LLVMModuleRef mod = ll_module(ctx, k->name, tm);
	LowerKernel kv = *k;
	kv.vector_width = x86_schedule_width(&k->sched, tm);
	x86_lower(ctx, mod, &kv, hooks, NULL);
	if (!ll_verify(mod, err, X86_ERR_MAX, "internal: invalid kernel module") || !x86_optimize(mod, tm, err)) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcJITTargetMachineBuilderRef jtmb;
	if (!ll_ok(LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb), err, X86_ERR_MAX, "detecting the host")) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
	LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, jtmb);
	if (!ll_ok(LLVMOrcCreateLLJIT(&jit, builder), err, X86_ERR_MAX, "creating the JIT")) {
		LLVMDisposeModule(mod);
		goto done;
	}
	LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
	if (!ll_ok(LLVMOrcLLJITAddLLVMIRModule(jit, LLVMOrcLLJITGetMainJITDylib(jit), tsm), err, X86_ERR_MAX,
	           "adding the kernel")) {
		LLVMOrcDisposeThreadSafeModule(tsm);
		goto done;
	}
	LLVMOrcExecutorAddress addr;
	if (!ll_ok(LLVMOrcLLJITLookup(jit, &addr, k->name), err, X86_ERR_MAX, "finding the kernel"))
		goto done;
	out->fn = (X86KernelFn)(uintptr_t)addr;
	out->jit = jit;
	out->N = k->shape.N;
	out->n_runtime = k->n_runtime;
	out->chunk = hooks == &x86_update_hooks ? x86_chunk_columns(&kv) : k->shape.N;
	jit = NULL;
	ok = true;
done:
	if (jit)
		LLVMOrcDisposeLLJIT(jit);
	LLVMOrcDisposeThreadSafeContext(tsc);
	LLVMDisposeTargetMachine(tm);
	return ok;
}

void x86_kernel_free(X86Kernel *k)
{
	if (k->jit)
		LLVMOrcDisposeLLJIT((LLVMOrcLLJITRef)k->jit);
	memset(k, 0, sizeof *k);
}

typedef struct Job {
	const X86Kernel *k;
	const float *X, *values, *bias;
	float *C;
	const int32_t *const *index;
	int64_t N;
	int threads;
} Job;

static void run_slice(void *arg, int t)
{
	const Job *j = arg;
	const int64_t n0 = x86_slice_bound(j->N, t, j->threads), n1 = x86_slice_bound(j->N, t + 1, j->threads);
	const int64_t w = j->k->chunk > 0 && j->k->chunk < n1 - n0 ? j->k->chunk : n1 - n0;
	for (int64_t a = n0, b; a < n1; a = b) {
		b = x86_chunk_end(a, n1, w);
		j->k->fn(j->X, j->C, j->values, j->index, a, b, j->N, j->bias);
	}
}

void x86_run(const X86Kernel *k, const float *X, float *C, const float *values,
             const int32_t *const *index, const float *bias, int64_t N, int threads)
{
	if (!k->n_runtime && N != k->N) {
		fprintf(stderr, "patc: internal error: a kernel for N = %lld run with N = %lld\n", (long long)k->N,
		        (long long)N);
		abort();
	}
	if (N < 1)
		return;
	if (threads < 1)
		threads = 1;
	if (threads > N)
		threads = (int)N;
	if (threads > POOL_MAX_THREADS)
		threads = POOL_MAX_THREADS;
	Job j = {k, X, values, bias, C, index, N, threads};
	pool_run(threads, run_slice, &j);
}
