/* lower.c - PatternIR to an LLVM kernel; see lower.h. */
#include "lower.h"
#include "../support/util.h"

#include <stdio.h>
#include <string.h>

static LLVMValueRef i64c(LowerCtx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

LLVMValueRef lower_loop_begin(LowerCtx *c, LowerLoop *l, LLVMValueRef from, LLVMValueRef to,
                              const char *name)
{
	LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
	char buf[64];
	snprintf(buf, sizeof buf, "%s.head", name);
	l->head = LLVMAppendBasicBlockInContext(c->ctx, c->fn, buf);
	snprintf(buf, sizeof buf, "%s.body", name);
	l->body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, buf);
	snprintf(buf, sizeof buf, "%s.exit", name);
	l->exit = LLVMAppendBasicBlockInContext(c->ctx, c->fn, buf);
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->head);
	l->iv = LLVMBuildPhi(c->b, c->i64, name);
	LLVMAddIncoming(l->iv, &from, &pre, 1);
	LLVMValueRef more = LLVMBuildICmp(c->b, LLVMIntSLT, l->iv, to, "more");
	LLVMBuildCondBr(c->b, more, l->body, l->exit);
	LLVMPositionBuilderAtEnd(c->b, l->body);
	return l->iv;
}

void lower_loop_end(LowerCtx *c, LowerLoop *l)
{
	LLVMValueRef next = LLVMBuildNSWAdd(c->b, l->iv, i64c(c, 1), "next");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
	LLVMAddIncoming(l->iv, &next, &latch, 1);
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->exit);
}

/* The (m, k) offset iteration v of loop l contributes: its digits over the
 * loop's components times their strides (constants folded by LLVM). */
static void offsets(LowerCtx *c, const PirLoop *l, LLVMValueRef v, LLVMValueRef *dm, LLVMValueRef *dk)
{
	*dm = i64c(c, 0), *dk = i64c(c, 0);
	int64_t place = 1;
	for (int i = l->ncomp - 1; i >= 0; i--) {
		const PirComp *pc = &l->comp[i];
		LLVMValueRef digit = v;
		if (place > 1)
			digit = LLVMBuildUDiv(c->b, digit, i64c(c, place), "");
		if (i > 0)
			digit = LLVMBuildURem(c->b, digit, i64c(c, pc->extent), "");
		LLVMValueRef off = LLVMBuildNSWMul(c->b, digit, i64c(c, pc->stride), "");
		if (pc->axis == PIR_AXIS_M)
			*dm = LLVMBuildNSWAdd(c->b, *dm, off, "");
		else
			*dk = LLVMBuildNSWAdd(c->b, *dk, off, "");
		place *= pc->extent;
	}
}

/* Zeroes C's columns n0..n1. */
static void zero_c(LowerCtx *c)
{
	const LowerKernel *k = c->k;
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	LowerLoop lm, ln;
	if (k->layout == PAT_LAYOUT_KN) {
		LLVMValueRef m = lower_loop_begin(c, &lm, i64c(c, 0), i64c(c, k->M), "zm");
		LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "zn");
		LLVMValueRef at = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, m, i64c(c, k->N), ""), n, "");
		LLVMBuildStore(c->b, zero, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
		lower_loop_end(c, &ln);
		lower_loop_end(c, &lm);
	} else {
		LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "zn");
		LLVMValueRef m = lower_loop_begin(c, &lm, i64c(c, 0), i64c(c, k->M), "zm");
		LLVMValueRef at = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, n, i64c(c, k->M), ""), m, "");
		LLVMBuildStore(c->b, zero, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
		lower_loop_end(c, &lm);
		lower_loop_end(c, &ln);
	}
}

LLVMValueRef lower_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k,
                          const LowerHooks *hooks)
{
	LowerCtx c = {.ctx = ctx, .mod = mod, .k = k};
	c.i32 = LLVMInt32TypeInContext(ctx);
	c.i64 = LLVMInt64TypeInContext(ctx);
	c.f32 = LLVMFloatTypeInContext(ctx);
	c.ptr = LLVMPointerTypeInContext(ctx, 0);
	LLVMTypeRef params[] = {c.ptr, c.ptr, c.ptr, c.ptr, c.i64, c.i64};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 6, 0);
	c.fn = LLVMAddFunction(mod, k->name, fty);
	/* X, C, values and index never alias: the vectoriser may trust it */
	unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
	for (unsigned i = 1; i <= 4; i++)
		LLVMAddAttributeAtIndex(c.fn, i, LLVMCreateEnumAttribute(ctx, noalias, 0));
	c.X = LLVMGetParam(c.fn, 0), c.C = LLVMGetParam(c.fn, 1), c.values = LLVMGetParam(c.fn, 2);
	c.index = LLVMGetParam(c.fn, 3), c.n0 = LLVMGetParam(c.fn, 4), c.n1 = LLVMGetParam(c.fn, 5);
	c.b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(c.b, LLVMAppendBasicBlockInContext(ctx, c.fn, "entry"));
	if (hooks->prologue)
		hooks->prologue(&c);
	else
		zero_c(&c);

	const Pir *ir = k->ir;
	const int n = ir->nloops;
	LowerLoop loops[PIR_MAX_LOOPS];
	LLVMValueRef row = i64c(&c, 0), m = i64c(&c, 0), kk = i64c(&c, 0);
	LLVMValueRef idxp[PIR_MAX_LOOPS] = {NULL};
	for (int i = 0; i < n; i++) /* the index arrays, loaded once */
		if (pir_loop_is_perforated(&ir->loops[i])) {
			LLVMValueRef at = i64c(&c, i);
			LLVMValueRef slot = LLVMBuildGEP2(c.b, c.ptr, c.index, &at, 1, "");
			idxp[i] = LLVMBuildLoad2(c.b, c.ptr, slot, ir->loops[i].name);
		}
	for (int i = 0; i < n; i++) {
		const PirLoop *l = &ir->loops[i];
		LLVMValueRef d = lower_loop_begin(&c, &loops[i], i64c(&c, 0), i64c(&c, l->nnz), l->name);
		LLVMValueRef v = d;
		if (idxp[i]) {
			LLVMValueRef at = LLVMBuildNSWAdd(c.b, LLVMBuildNSWMul(c.b, row, i64c(&c, l->nnz), ""), d, "");
			LLVMValueRef e = LLVMBuildLoad2(c.b, c.i32, LLVMBuildGEP2(c.b, c.i32, idxp[i], &at, 1, ""), "");
			v = LLVMBuildSExt(c.b, e, c.i64, "");
		}
		row = LLVMBuildNSWAdd(c.b, LLVMBuildNSWMul(c.b, row, i64c(&c, l->nnz), ""), d, "");
		LLVMValueRef dm, dk;
		offsets(&c, l, v, &dm, &dk);
		m = LLVMBuildNSWAdd(c.b, m, dm, "m");
		kk = LLVMBuildNSWAdd(c.b, kk, dk, "k");
	}
	/* the innermost point: padding (outside the real M x K) holds zeros */
	LLVMValueRef w = LLVMBuildLoad2(c.b, c.f32, LLVMBuildGEP2(c.b, c.f32, c.values, &row, 1, ""), "w");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, c.fn, "update");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(ctx, c.fn, "skip");
	LLVMValueRef real = LLVMBuildAnd(c.b, LLVMBuildICmp(c.b, LLVMIntSLT, m, i64c(&c, k->M), ""),
	                                 LLVMBuildICmp(c.b, LLVMIntSLT, kk, i64c(&c, k->K), ""), "real");
	LLVMBuildCondBr(c.b, real, body, skip);
	LLVMPositionBuilderAtEnd(c.b, body);
	hooks->update(&c, m, kk, w);
	LLVMBuildBr(c.b, skip);
	LLVMPositionBuilderAtEnd(c.b, skip);
	for (int i = n - 1; i >= 0; i--)
		lower_loop_end(&c, &loops[i]);
	LLVMBuildRetVoid(c.b);
	LLVMDisposeBuilder(c.b);
	return c.fn;
}
