/* SPDX-License-Identifier: MIT */
/* emit.c - `-o DIR` on an x86 target: an object file, a C header and the
 * packed weights, for linking into a C program.
 *
 * One module per program, BASE from the .pat file's name.  For each op:
 *   BASE_OP_packed   the pruned, packed weights, embedded as constants
 *   BASE_OP_run      C = W_s X over all token columns with a thread count
 *                    (threads split the columns; pthreads from libc)
 *   BASE_OP_unpack   the dense masked weight, for checking
 * all built from the shared lowering (lower/): the run kernel with the x86
 * update hook, the unpack kernel with a hook that stores the weight.
 */
#define _POSIX_C_SOURCE 200809L
#include "x86.h"
#include "../lower/llvm_util.h"
#include "../support/outfile.h"
#include "../support/util.h"
#include "../weights/tensor.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* unpack: zero W (M x K, passed as C), then W[m, k] = w */
static void unpack_prologue(LowerCtx *c)
{
	LLVMValueRef size = LLVMConstInt(c->i64, (unsigned long long)(c->k->shape.M * c->k->shape.K * 4), 0);
	LLVMBuildMemSet(c->b, c->C, LLVMConstInt(LLVMInt8TypeInContext(c->ctx), 0, 0), size, 4);
}

static void unpack_update(LowerCtx *c, LLVMValueRef m, LLVMValueRef k, LLVMValueRef w)
{
	LLVMValueRef at = ll_add(c, ll_mul(c, m, c->k->shape.K), k);
	LLVMBuildStore(c->b, w, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
}

static const LowerHooks unpack_hooks = {.prologue = unpack_prologue, .update = unpack_update};

/* A constant global holding raw bytes, for embedded weights. */
static LLVMValueRef blob(LLVMContextRef ctx, LLVMModuleRef mod, const char *name, const void *data,
                         size_t len)
{
	LLVMValueRef init = LLVMConstStringInContext2(ctx, data, len, 1);
	LLVMValueRef g = LLVMAddGlobal(mod, LLVMTypeOf(init), name);
	LLVMSetInitializer(g, init);
	LLVMSetGlobalConstant(g, 1);
	LLVMSetLinkage(g, LLVMPrivateLinkage);
	LLVMSetAlignment(g, 64);
	return g;
}

/* x86_slice_bound (x86.h) in IR: slice s of t starts at column
 * s == t ? N : min(N, round(N s / t) to a multiple of X86_SLICE_ALIGN). */
static LLVMValueRef slice_bound(LLVMBuilderRef b, LLVMTypeRef i64, LLVMValueRef N, LLVMValueRef s,
                                LLVMValueRef t)
{
	LLVMValueRef raw = LLVMBuildSDiv(b, LLVMBuildMul(b, N, s, ""), t, "");
	LLVMValueRef al = LLVMBuildAnd(b, LLVMBuildAdd(b, raw, LLVMConstInt(i64, X86_SLICE_ALIGN / 2, 0), ""),
	                               LLVMConstInt(i64, (unsigned long long)-(int64_t)X86_SLICE_ALIGN, 1), "");
	al = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, al, N, ""), N, al, "");
	return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGE, s, t, ""), N, al, "bound");
}

/* Multiply-adds a thread of the emitted _run should get at least: it
 * starts its threads per call (about 40 us each on the development VM),
 * so a kernel smaller than this per thread runs on fewer threads. */
enum { EMIT_MIN_FMA_PER_THREAD = 8 << 20 };

/* The bytes fn keeps on its stack: its entry block's fixed allocas (the
 * condensed X of lower_entry_alloca). */
static unsigned long long stack_bytes(LLVMValueRef fn, LLVMTargetDataRef td)
{
	unsigned long long bytes = 0;
	for (LLVMValueRef in = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(fn)); in; in = LLVMGetNextInstruction(in))
		if (LLVMGetInstructionOpcode(in) == LLVMAlloca)
			bytes += LLVMABISizeOfType(td, LLVMGetAllocatedType(in));
	return bytes;
}

/* The stack of each thread _run starts: the kernel's buffers
 * (stack_bytes) and EMIT_STACK_SLACK for its frames and the C library's
 * (glibc takes static TLS out of it), whatever the C library's default
 * (musl's is 128 KiB) or `ulimit -s` would give. */
enum { EMIT_STACK_SLACK = 1 << 20, EMIT_ATTR_BYTES = 64 /* >= sizeof(pthread_attr_t): 56 in glibc and musl */ };

/* int P_run(const float *X, float *C, int64_t N, const weights *w, int threads):
 * 0, or -1 without touching C where N is negative or (fixed_n > 0) not
 * fixed_n, the one N the kernel is specialised on.  `stored` weights (the
 * packed tensor's length).  Each slice of columns runs in chunks of `chunk`
 * columns, the last taking a remainder under half a chunk, as x86_run does;
 * its threads get `stack` bytes for the kernel's buffers and
 * EMIT_STACK_SLACK more. */
static void build_run(LLVMContextRef ctx, LLVMModuleRef mod, LLVMValueRef kernel, const char *name,
                      int64_t fixed_n, int64_t chunk, double stored, unsigned long long stack)
{
	LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx),
	            i32 = LLVMInt32TypeInContext(ctx);
	LLVMTypeRef kty = LLVMGlobalGetValueType(kernel);
	LLVMTypeRef args_ty = LLVMStructTypeInContext(ctx, (LLVMTypeRef[]){ptr, ptr, ptr, ptr, i64, i64, i64, ptr}, 8, 0);
	/* the thread trampoline, ptr tramp(ptr args): the slice's columns
	 * [n0, n1) in chunks, for (c = n0; c < n1; c += chunk) */
	char tname[256];
	snprintf(tname, sizeof tname, "%.200s.slice", name);
	LLVMTypeRef tty = LLVMFunctionType(ptr, &ptr, 1, 0);
	LLVMValueRef tramp = LLVMAddFunction(mod, tname, tty);
	LLVMSetLinkage(tramp, LLVMInternalLinkage);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMBasicBlockRef tentry = LLVMAppendBasicBlockInContext(ctx, tramp, "entry"),
	                  tbody = LLVMAppendBasicBlockInContext(ctx, tramp, "chunk"),
	                  tdone = LLVMAppendBasicBlockInContext(ctx, tramp, "done");
	LLVMPositionBuilderAtEnd(b, tentry);
	LLVMValueRef a = LLVMGetParam(tramp, 0), f[8];
	LLVMTypeRef ft[8] = {ptr, ptr, ptr, ptr, i64, i64, i64, ptr};
	for (unsigned i = 0; i < 8; i++)
		f[i] = LLVMBuildLoad2(b, ft[i], LLVMBuildStructGEP2(b, args_ty, a, i, ""), "");
	LLVMValueRef start = f[4], end = f[5];
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, start, end, ""), tbody, tdone);
	LLVMPositionBuilderAtEnd(b, tbody);
	LLVMValueRef c0 = LLVMBuildPhi(b, i64, "c0");
	LLVMValueRef c1 = LLVMBuildAdd(b, c0, LLVMConstInt(i64, (unsigned long long)chunk, 0), "");
	/* x86_chunk_end: the slice's end where under half a chunk would be left */
	LLVMValueRef left = LLVMBuildSub(b, end, c1, "");
	LLVMValueRef half = LLVMConstInt(i64, (unsigned long long)(chunk / 2), 0);
	c1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, left, half, ""), end, c1, "c1");
	f[4] = c0, f[5] = c1;
	LLVMBuildCall2(b, kty, kernel, f, 8, "");
	LLVMAddIncoming(c0, (LLVMValueRef[]){start, c1}, (LLVMBasicBlockRef[]){tentry, tbody}, 2);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, c1, end, ""), tbody, tdone);
	LLVMPositionBuilderAtEnd(b, tdone);
	LLVMBuildRet(b, LLVMConstNull(ptr));

	LLVMTypeRef rty = LLVMFunctionType(i32, (LLVMTypeRef[]){ptr, ptr, i64, ptr, i32}, 5, 0);
	LLVMValueRef run = LLVMAddFunction(mod, name, rty);
	LLVMValueRef X = LLVMGetParam(run, 0), C = LLVMGetParam(run, 1), Nc = LLVMGetParam(run, 2),
	             w = LLVMGetParam(run, 3), th = LLVMGetParam(run, 4);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, run, "entry"));
	{ /* an N it cannot run: -1; none: 0 */
		LLVMValueRef bad = LLVMBuildICmp(b, LLVMIntSLT, Nc, LLVMConstInt(i64, 0, 0), "");
		if (fixed_n > 0)
			bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntNE, Nc, LLVMConstInt(i64, (unsigned long long)fixed_n, 0), ""), "");
		LLVMBasicBlockRef refuse = LLVMAppendBasicBlockInContext(ctx, run, "refuse"),
		                  none = LLVMAppendBasicBlockInContext(ctx, run, "none"),
		                  go = LLVMAppendBasicBlockInContext(ctx, run, "go"),
		                  some = LLVMAppendBasicBlockInContext(ctx, run, "some");
		LLVMBuildCondBr(b, bad, refuse, some);
		LLVMPositionBuilderAtEnd(b, refuse);
		LLVMBuildRet(b, LLVMConstInt(i32, (unsigned long long)-1, 1));
		LLVMPositionBuilderAtEnd(b, some);
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, Nc, LLVMConstInt(i64, 0, 0), ""), none, go);
		LLVMPositionBuilderAtEnd(b, none);
		LLVMBuildRet(b, LLVMConstInt(i32, 0, 0));
		LLVMPositionBuilderAtEnd(b, go);
	}
	LLVMTypeRef wty = LLVMStructTypeInContext(ctx, (LLVMTypeRef[]){ptr, ptr, ptr}, 3, 0);
	LLVMValueRef values = LLVMBuildLoad2(b, ptr, LLVMBuildStructGEP2(b, wty, w, 0, ""), "values");
	LLVMValueRef bias = LLVMBuildLoad2(b, ptr, LLVMBuildStructGEP2(b, wty, w, 1, ""), "bias");
	LLVMValueRef index = LLVMBuildStructGEP2(b, wty, w, 2, "index");
	/* t = clamp(threads, 1, min(N, 256, work / EMIT_MIN_FMA_PER_THREAD)),
	 * work = stored N */
	LLVMValueRef t = LLVMBuildSExt(b, th, i64, "");
	LLVMValueRef one = LLVMConstInt(i64, 1, 0);
	LLVMValueRef cap = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, Nc, LLVMConstInt(i64, 256, 0), ""), Nc,
	                                   LLVMConstInt(i64, 256, 0), "");
	LLVMTypeRef f64 = LLVMDoubleTypeInContext(ctx);
	LLVMValueRef work = LLVMBuildFMul(b, LLVMBuildSIToFP(b, Nc, f64, ""),
	                                  LLVMConstReal(f64, stored / EMIT_MIN_FMA_PER_THREAD), "");
	work = LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealOLT, work, LLVMConstReal(f64, 256.0), ""), work,
	                       LLVMConstReal(f64, 256.0), "");
	LLVMValueRef by_work = LLVMBuildFPToSI(b, work, i64, "");
	by_work = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, by_work, one, ""), one, by_work, "");
	cap = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, by_work, cap, ""), by_work, cap, "cap");
	t = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, t, one, ""), one, t, "");
	t = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSGT, t, cap, ""), cap, t, "t");

	/* fill one args record per slice, start slices 1..t-1 on threads (a
	 * slice whose thread cannot start runs here), run slice 0, join */
	LLVMValueRef recs = LLVMBuildArrayAlloca(b, args_ty, t, "recs");
	LLVMValueRef tids = LLVMBuildArrayAlloca(b, i64, t, "tids");
	LLVMValueRef ok = LLVMBuildArrayAlloca(b, i32, t, "started");
	LLVMTypeRef pc_ty = LLVMFunctionType(i32, (LLVMTypeRef[]){ptr, ptr, ptr, ptr}, 4, 0);
	LLVMValueRef pcreate = ll_function(mod, "pthread_create", pc_ty);
	/* the threads' attributes: their stack (an attribute that cannot be
	 * made leaves the C library's default) */
	LLVMTypeRef a1_ty = LLVMFunctionType(i32, &ptr, 1, 0);
	LLVMTypeRef a2_ty = LLVMFunctionType(i32, (LLVMTypeRef[]){ptr, i64}, 2, 0);
	LLVMValueRef attr = LLVMBuildAlloca(b, LLVMArrayType2(LLVMInt8TypeInContext(ctx), EMIT_ATTR_BYTES), "attr");
	LLVMSetAlignment(attr, 16);
	LLVMValueRef made = LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildCall2(b, a1_ty, ll_function(mod, "pthread_attr_init", a1_ty),
	                                                               &attr, 1, ""),
	                                  LLVMConstInt(i32, 0, 0), "attr_made");
	const unsigned long long stack_size = (stack + EMIT_STACK_SLACK + 0xffff) & ~0xffffULL;
	LLVMBasicBlockRef sized = LLVMAppendBasicBlockInContext(ctx, run, "attr_size"),
	                  unsized = LLVMAppendBasicBlockInContext(ctx, run, "attr_done");
	LLVMBuildCondBr(b, made, sized, unsized);
	LLVMPositionBuilderAtEnd(b, sized);
	LLVMBuildCall2(b, a2_ty, ll_function(mod, "pthread_attr_setstacksize", a2_ty),
	               (LLVMValueRef[]){attr, LLVMConstInt(i64, stack_size, 0)}, 2, "");
	LLVMBuildBr(b, unsized);
	LLVMPositionBuilderAtEnd(b, unsized);
	LLVMValueRef attrp = LLVMBuildSelect(b, made, attr, LLVMConstNull(ptr), "attrp");
	LLVMTypeRef pj_ty = LLVMFunctionType(i32, (LLVMTypeRef[]){i64, ptr}, 2, 0);
	LLVMValueRef pjoin = ll_function(mod, "pthread_join", pj_ty);
	LowerCtx lc = {.ctx = ctx, .mod = mod, .b = b, .fn = run, .i64 = i64};
	LowerLoop l1, l2;
	LLVMValueRef s = lower_loop_begin(&lc, &l1, LLVMConstInt(i64, 0, 0), t, "fill");
	LLVMValueRef rec = LLVMBuildGEP2(b, args_ty, recs, &s, 1, "");
	LLVMValueRef n0 = slice_bound(b, i64, Nc, s, t);
	LLVMValueRef n1 = slice_bound(b, i64, Nc, LLVMBuildAdd(b, s, LLVMConstInt(i64, 1, 0), ""), t);
	LLVMValueRef vals[8] = {X, C, values, index, n0, n1, Nc, bias};
	for (unsigned i = 0; i < 8; i++)
		LLVMBuildStore(b, vals[i], LLVMBuildStructGEP2(b, args_ty, rec, i, ""));
	LLVMBasicBlockRef spawn = LLVMAppendBasicBlockInContext(ctx, run, "spawn"),
	                  next = LLVMAppendBasicBlockInContext(ctx, run, "spawned");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, s, LLVMConstInt(i64, 0, 0), ""), spawn, next);
	LLVMPositionBuilderAtEnd(b, spawn);
	LLVMValueRef tidp = LLVMBuildGEP2(b, i64, tids, &s, 1, "");
	LLVMValueRef rc = LLVMBuildCall2(b, pc_ty, pcreate, (LLVMValueRef[]){tidp, attrp, tramp, rec}, 4, "");
	LLVMBuildStore(b, LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntEQ, rc, LLVMConstInt(i32, 0, 0), ""), i32, ""),
	               LLVMBuildGEP2(b, i32, ok, &s, 1, ""));
	LLVMBuildBr(b, next);
	LLVMPositionBuilderAtEnd(b, next);
	lower_loop_end(&lc, &l1);
	LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
	LLVMBuildCall2(b, tty, tramp, (LLVMValueRef[]){LLVMBuildGEP2(b, args_ty, recs, &zero, 1, "")}, 1, "");
	s = lower_loop_begin(&lc, &l2, LLVMConstInt(i64, 1, 0), t, "join");
	LLVMBasicBlockRef joinb = LLVMAppendBasicBlockInContext(ctx, run, "join"),
	                  inl = LLVMAppendBasicBlockInContext(ctx, run, "inline"),
	                  done = LLVMAppendBasicBlockInContext(ctx, run, "joined");
	LLVMValueRef started = LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i32, ok, &s, 1, ""), "");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, started, LLVMConstInt(i32, 0, 0), ""), joinb, inl);
	LLVMPositionBuilderAtEnd(b, joinb);
	LLVMValueRef tid = LLVMBuildLoad2(b, i64, LLVMBuildGEP2(b, i64, tids, &s, 1, ""), "");
	LLVMBuildCall2(b, pj_ty, pjoin, (LLVMValueRef[]){tid, LLVMConstNull(ptr)}, 2, "");
	LLVMBuildBr(b, done);
	LLVMPositionBuilderAtEnd(b, inl);
	LLVMBuildCall2(b, tty, tramp, (LLVMValueRef[]){LLVMBuildGEP2(b, args_ty, recs, &s, 1, "")}, 1, "");
	LLVMBuildBr(b, done);
	LLVMPositionBuilderAtEnd(b, done);
	lower_loop_end(&lc, &l2);
	LLVMBasicBlockRef destroy = LLVMAppendBasicBlockInContext(ctx, run, "attr_destroy"),
	                  ret = LLVMAppendBasicBlockInContext(ctx, run, "ret");
	LLVMBuildCondBr(b, made, destroy, ret);
	LLVMPositionBuilderAtEnd(b, destroy);
	LLVMBuildCall2(b, a1_ty, ll_function(mod, "pthread_attr_destroy", a1_ty), &attr, 1, "");
	LLVMBuildBr(b, ret);
	LLVMPositionBuilderAtEnd(b, ret);
	LLVMBuildRet(b, LLVMConstInt(i32, 0, 0));
	LLVMDisposeBuilder(b);
}

/* void P_unpack(const weights *w, float *W) */
static void build_unpack(LLVMContextRef ctx, LLVMModuleRef mod, LLVMValueRef kernel, const char *name)
{
	LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0), i64 = LLVMInt64TypeInContext(ctx);
	LLVMValueRef fn = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx),
	                                                              (LLVMTypeRef[]){ptr, ptr}, 2, 0));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
	LLVMTypeRef wty = LLVMStructTypeInContext(ctx, (LLVMTypeRef[]){ptr, ptr, ptr}, 3, 0);
	LLVMValueRef w = LLVMGetParam(fn, 0);
	LLVMValueRef values = LLVMBuildLoad2(b, ptr, LLVMBuildStructGEP2(b, wty, w, 0, ""), "");
	LLVMValueRef index = LLVMBuildStructGEP2(b, wty, w, 2, "");
	LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
	LLVMBuildCall2(b, LLVMGlobalGetValueType(kernel), kernel,
	               (LLVMValueRef[]){LLVMConstNull(ptr), LLVMGetParam(fn, 1), values, index, zero, zero, zero,
	                                LLVMConstNull(ptr)},
	               8, "");
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
}

static const char *const layout_doc[PAT_NLAYOUTS] = {
	"X is K x N, C is M x N (row-major)",
	"X is N x K, C is N x M (row-major; PyTorch's layout)",
};

/* Op i of e into mod (its packed weights, kernels and C entry points)
 * and its declarations into the header h. */
static void emit_op(const X86Emit *e, int i, LLVMContextRef ctx, LLVMModuleRef mod, LLVMTargetMachineRef tm,
                    StrBuf *h)
{
	LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
	const OpResult *op = &e->ops[i];
	const PruneOp *p = &e->pruned[i];
	const Pir *ir = op->ir;
	char pre[300], name[400];
	snprintf(pre, sizeof pre, "%.128s_%.32s", e->base, op->name);
	PirMetrics pm;
	pir_metrics(ir, &pm);
	/* the packed weights, embedded */
	const float *values = p->values;
	float *rounded = NULL;
	if (op->shape.dtype != PAT_F32) { /* the weights the dtype holds */
		rounded = malloc((size_t)(pm.values > 0 ? pm.values : 1) * sizeof *rounded);
		if (!rounded)
			util_oom();
		for (int64_t j = 0; j < pm.values; j++)
			rounded[j] = op->shape.dtype == PAT_F16 ? fp16_to_f32(f32_to_fp16(values[j]))
			                                  : bf16_to_f32(f32_to_bf16(values[j]));
		values = rounded;
	}
	snprintf(name, sizeof name, "%.200s.values", pre);
	LLVMValueRef gv = blob(ctx, mod, name, values, (size_t)pm.values * sizeof *values);
	free(rounded);
	LLVMValueRef idx[PIR_MAX_LOOPS];
	for (int l = 0; l < ir->nloops; l++) {
		idx[l] = LLVMConstNull(ptr);
		if (!p->mask.index[l])
			continue;
		snprintf(name, sizeof name, "%.200s.index.%.32s", pre, ir->loops[l].name);
		idx[l] = blob(ctx, mod, name, p->mask.index[l],
		              (size_t)(p->mask.rows[l] * ir->loops[l].nnz) * sizeof(int32_t));
	}
	LLVMValueRef gb = LLVMConstNull(ptr);
	if (p->bias) {
		snprintf(name, sizeof name, "%.200s.bias", pre);
		gb = blob(ctx, mod, name, p->bias, (size_t)op->shape.M * sizeof *p->bias);
	}
	LLVMValueRef fields[3] = {gv, gb, LLVMConstArray2(ptr, idx, (uint64_t)ir->nloops)};
	LLVMValueRef init = LLVMConstStructInContext(ctx, fields, 3, 0);
	snprintf(name, sizeof name, "%.200s_packed", pre);
	LLVMValueRef packed = LLVMAddGlobal(mod, LLVMTypeOf(init), name);
	LLVMSetInitializer(packed, init);
	LLVMSetGlobalConstant(packed, 1);
	/* the kernels and their C entry points */
	snprintf(name, sizeof name, "%.200s.kernel", pre);
	LowerKernel lk = {.ir = ir, .shape = op->shape, .name = name, .n_runtime = !e->fixed_n};
	lk.shape.dtype = PAT_F32;
	if (e->schedules)
		lk.sched = e->schedules[i];
	lk.vector_width = x86_schedule_width(&lk.sched, tm);
	LLVMValueRef inner;
	LLVMValueRef kernel = x86_lower(ctx, mod, &lk, &x86_update_hooks, &inner);
	LLVMSetLinkage(kernel, LLVMInternalLinkage);
	snprintf(name, sizeof name, "%.200s.unpack_kernel", pre);
	LowerKernel uk = {.ir = ir, .shape = {.M = op->shape.M, .K = op->shape.K, .N = 1}, .name = name, .vector_width = 1};
	LLVMValueRef ukernel = lower_kernel(ctx, mod, &uk, &unpack_hooks);
	LLVMSetLinkage(ukernel, LLVMInternalLinkage);
	snprintf(name, sizeof name, "%.200s_run", pre);
	double stored = 1;
	for (int j = 0; j < ir->nloops; j++)
		stored *= (double)ir->loops[j].nnz;
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	const unsigned long long stack = stack_bytes(kernel, td) + (inner ? stack_bytes(inner, td) : 0);
	LLVMDisposeTargetData(td);
	build_run(ctx, mod, kernel, name, e->fixed_n ? op->shape.N : 0, x86_chunk_columns(&lk), stored, stack);
	snprintf(name, sizeof name, "%.200s_unpack", pre);
	build_unpack(ctx, mod, ukernel, name);
	char paper[PIR_PAPER_MAX];
	pir_print_paper(ir, paper, sizeof paper);
	sb_printf(h, "/* op %s: %s, M = %lld, K = %lld, N = %lld; %s;\n * C = %s%sW X + bias%s%s */\n", op->name, paper,
	          (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N, layout_doc[op->shape.layout],
	          op->shape.act ? pat_act_names[op->shape.act] : "", op->shape.act ? "(" : "",
	          op->shape.accumulate ? " + C" : "", op->shape.act ? ")" : "");
	sb_shape_enum(h, pre, (long long)op->shape.M, (long long)op->shape.K, (long long)op->shape.N);
	sb_printf(h, "typedef struct %s_weights {\n\tconst float *values; /* %lld packed values */\n"
	              "\tconst float *bias; /* %lld floats, one per output feature, or NULL: none */\n"
	              "\tconst int32_t *index[%d]; /* per loop, NULL when dense */\n} %s_weights;\n",
	          pre, (long long)pm.values, (long long)op->shape.M, ir->nloops, pre);
	sb_printf(h, "extern const %s_weights %s_packed;\n", pre, pre);
	sb_printf(h, "enum { %s_STACK_BYTES = %llu }; /* its buffers on the stack of each thread that runs it */\n",
	          pre, stack);
	if (e->schedules && e->schedules[i].threads > 0)
		sb_printf(h, "enum { %s_THREADS = %d }; /* the threads the search found fastest */\n", pre,
		          e->schedules[i].threads);
	if (e->fixed_n)
		sb_printf(h, "/* N must be %s_N (--fixed-n): another N returns -1 */\n", pre);
	sb_printf(h, "int %s_run(const float *X, float *C, int64_t N, const %s_weights *w, int threads);\n", pre, pre);
	sb_printf(h, "void %s_unpack(const %s_weights *w, float *W);\n\n", pre, pre);
}

/* The module's files (BASE.ll with e->llvm, BASE.s with e->asm_, BASE.o)
 * and the header h as BASE.h, each written atomically. */
static bool write_files(const X86Emit *e, LLVMModuleRef mod, LLVMTargetMachineRef tm, const StrBuf *h,
                        char err[X86_ERR_MAX])
{
	bool ok = true;
	char path[4096];
	if (e->llvm) {
		char *ll = LLVMPrintModuleToString(mod);
		snprintf(path, sizeof path, "%s/%s.ll", e->dir, e->base);
		if (!outfile_write(path, ll, strlen(ll))) {
			snprintf(err, X86_ERR_MAX, "cannot write '%.300s': %s", path, strerror(errno));
			ok = false;
		}
		LLVMDisposeMessage(ll);
	}
	for (int kind = 0; kind < 2 && ok; kind++) {
		if (kind == 0 && !e->asm_)
			continue;
		LLVMMemoryBufferRef buf;
		if (!ll_emit(tm, mod, kind == 0 ? LLVMAssemblyFile : LLVMObjectFile, &buf, err, X86_ERR_MAX,
		             "emitting code")) {
			ok = false;
			break;
		}
		snprintf(path, sizeof path, "%s/%s.%s", e->dir, e->base, kind == 0 ? "s" : "o");
		if (!outfile_write(path, LLVMGetBufferStart(buf), LLVMGetBufferSize(buf))) {
			snprintf(err, X86_ERR_MAX, "cannot write '%.300s': %s", path, strerror(errno));
			ok = false;
		}
		LLVMDisposeMemoryBuffer(buf);
	}
	if (ok) {
		snprintf(path, sizeof path, "%s/%s.h", e->dir, e->base);
		if (!outfile_write(path, h->data, h->len)) {
			snprintf(err, X86_ERR_MAX, "cannot write '%.300s': %s", path, strerror(errno));
			ok = false;
		}
	}
	return ok;
}

/* The header comment's paragraph on the target (the rest of its comment,
 * to its end). */
static void header_target(const X86Emit *e, StrBuf *h)
{
	const X86Level *lv = x86_target_level(e->target);
	const char *cpu = x86_target_cpu(e->target);
	const char *lname = lv ? lv->name : "x86-64";
	if (cpu && lv && !strcmp(cpu, lv->name))
		sb_printf(h, " * Compiled for %s (%s).  It runs on every CPU of that\n"
		             " * x86-64 psABI level: %s.\n",
		          lv->name, lv->isa, lv->cpus);
	else if (cpu)
		sb_printf(h, " * Compiled for %s, the CPU %s (%s).  It needs\n"
		             " * %s at least: %s.\n",
		          e->target, cpu, lv->isa, lname, lv->cpus);
	else {
		char *host = LLVMGetHostCPUName();
		sb_printf(h, " * Compiled for %s, the compiling machine's CPU: %s (%s).\n"
		             " * It may use any instruction of that CPU, and needs %s at least.\n",
		          e->target, host, lv ? lv->isa : "SSE2", lname);
		LLVMDisposeMessage(host);
	}
	sb_printf(h, " * (-o without --target compiles for x86-64-v3, which x86 servers have\n"
	             " * had since Intel Haswell, 2013, and AMD Zen, 2017; --target=x86-64-v2,\n"
	             " * x86-64-v4 or native picks another.)  %s_TARGET names the target,\n"
	             " * %s_TARGET_LEVEL the level the CPU needs (GCC 12 and later take it in\n"
	             " * __builtin_cpu_supports).  %s.so checks the CPU when it is loaded:\n"
	             " * where the CPU lacks a feature of %s, it names the features\n"
	             " * missing on stderr and ends the process (exit status 127) rather than\n"
	             " * die of an illegal instruction later.  %s.o checks nothing: a\n"
	             " * program that links it checks %s_TARGET_LEVEL itself where it needs to.\n"
	             " */\n",
	          e->base, e->base, e->base, lname, e->base, e->base);
}

bool x86_emit(const X86Emit *e, char err[X86_ERR_MAX])
{
	x86_init_llvm();
	LLVMTargetMachineRef tm = x86_target_machine(e->cpu, e->features, true, err);
	if (!tm)
		return false;
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = ll_module(ctx, e->base, tm);
	const X86Level *level = x86_target_level(e->target);
	StrBuf h;
	sb_init(&h);
	char source[1024];
	sb_printf(&h, "/* %s.h - generated by patc %s from %s; do not edit.\n *\n"
	              " * Link with %s.o (and pthreads, in glibc's libc), or with the shared\n"
	              " * library -o DIR --emit=so links from it.  For each op OP:\n"
	              " *   %s_OP_packed   the op's pruned weights, packed (Fractal-ELL)\n"
	              " *   %s_OP_run      C = act(W_s X + bias (+ C)) for N tokens: the op's\n"
	              " *                  epilogue, its activation and accumulate compiled in\n"
	              " *                  and named at the op below, its bias w->bias (M\n"
	              " *                  floats, the packed struct's from the .pat or a\n"
	              " *                  caller's own; NULL: none); any N >= 0, the op's N being\n"
	              " *                  what the kernel is tuned for; -o --fixed-n: that\n"
	              " *                  N only) with `threads` threads (split over tokens;\n"
	              " *                  started per call, so each gets at least 8M\n"
	              " *                  multiply-adds: small ops use fewer); returns 0,\n"
	              " *                  or -1 for an N it does not take (C untouched)\n"
	              " *   %s_OP_unpack   the dense masked weight W_s (M x K), for checking\n"
	              " *   %s_OP_STACK_BYTES  the stack its kernel takes in each thread that\n"
	              " *                  runs it: up to 1 MiB, beyond what a small thread\n"
	              " *                  stack holds.  The threads _run starts get it (and\n"
	              " *                  1 MiB more); the caller's, which runs the first\n"
	              " *                  slice (all of it on one thread), must have it\n"
	              " * The same packed tensors are in %s.safetensors, in the op's dtype (an\n"
	              " * op of dtype f16 or bf16 computes here in f32 on its weights rounded to\n"
	              " * it).  X and C aligned to 64 bytes run fastest (where N is a multiple\n"
	              " * of 16, every row of X then starts on a cache line).\n *\n",
	          e->base, e->version, util_comment_text(e->source, source, sizeof source), e->base, e->base, e->base,
	          e->base, e->base, e->base);
	header_target(e, &h);
	sb_printf(&h, "#ifndef PATC_%s_H\n#define PATC_%s_H\n\n#include <stdint.h>\n\n"
	              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
	              "#define %s_TARGET \"%s\" /* the --target it was compiled for */\n"
	              "#define %s_TARGET_LEVEL \"%s\" /* the x86-64 psABI level the CPU needs */\n\n",
	          e->base, e->base, e->base, e->target, e->base, level ? level->name : "x86-64");
	for (int i = 0; i < e->nops; i++)
		emit_op(e, i, ctx, mod, tm, &h);
	sb_printf(&h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
	const bool ok = ll_verify(mod, err, X86_ERR_MAX, "internal: invalid module") && x86_optimize(mod, tm, err) &&
	                write_files(e, mod, tm, &h, err);
	sb_free(&h);
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ok;
}
