/* SPDX-License-Identifier: MIT */
/* lower.c - PatternIR to an LLVM kernel; see lower.h. */
#include "lower.h"
#include "llvm_util.h"
#include "nest.h"
#include "../support/util.h"

#include <stdio.h>
#include <string.h>

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
	LLVMValueRef next = LLVMBuildNSWAdd(c->b, l->iv, ll_i64(c, 1), "next");
	LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
	LLVMAddIncoming(l->iv, &next, &latch, 1);
	LLVMBuildBr(c->b, l->head);
	LLVMPositionBuilderAtEnd(c->b, l->exit);
}

/* The (m, k) offset iteration v of loop l contributes: its digits over the
 * loop's components times their strides (constants folded by LLVM). */
void lower_offsets(LowerCtx *c, const PirLoop *l, LLVMValueRef v, LLVMValueRef *dm, LLVMValueRef *dk)
{
	*dm = ll_i64(c, 0), *dk = ll_i64(c, 0);
	int64_t place = 1;
	for (int i = l->ncomp - 1; i >= 0; i--) {
		const PirComp *pc = &l->comp[i];
		LLVMValueRef digit = v;
		if (place > 1)
			digit = ll_udiv(c, digit, place);
		if (i > 0)
			digit = ll_urem(c, digit, pc->extent);
		LLVMValueRef off = ll_mul(c, digit, pc->stride);
		if (pc->axis == PIR_AXIS_M)
			*dm = ll_add(c, *dm, off);
		else
			*dk = ll_add(c, *dk, off);
		place *= pc->extent;
	}
}

/* Zeroes C's columns n0..n1. */
static void zero_c(LowerCtx *c)
{
	const LowerKernel *k = c->k;
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	LowerLoop lm, ln;
	if (k->shape.layout == PAT_LAYOUT_KN) {
		LLVMValueRef m = lower_loop_begin(c, &lm, ll_i64(c, 0), ll_i64(c, k->shape.M), "zm");
		LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "zn");
		LLVMValueRef at = ll_add(c, ll_mulv(c, m, c->N), n);
		LLVMBuildStore(c->b, zero, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
		lower_loop_end(c, &ln);
		lower_loop_end(c, &lm);
	} else {
		LLVMValueRef n = lower_loop_begin(c, &ln, c->n0, c->n1, "zn");
		LLVMValueRef m = lower_loop_begin(c, &lm, ll_i64(c, 0), ll_i64(c, k->shape.M), "zm");
		LLVMValueRef at = ll_add(c, ll_mul(c, n, k->shape.M), m);
		LLVMBuildStore(c->b, zero, LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
		lower_loop_end(c, &lm);
		lower_loop_end(c, &ln);
	}
}

void lower_nest_rows(LowerCtx *c, int first, int last, const LowerPoint *ps, int rows, LowerAtRows at, void *arg)
{
	const Pir *ir = c->k->ir;
	LowerLoop loops[PIR_MAX_LOOPS];
	LowerPoint q[LOWER_MAX_ROWS];
	memcpy(q, ps, (size_t)rows * sizeof *q);
	for (int i = first; i < last; i++) {
		const PirLoop *l = &ir->loops[i];
		LLVMValueRef d = lower_loop_begin(c, &loops[i], c->lo[i] ? c->lo[i] : ll_i64(c, 0),
		                                  c->hi[i] ? c->hi[i] : ll_i64(c, l->nnz), l->name);
		for (int r = 0; r < rows; r++) {
			LLVMValueRef v = d;
			if (c->idx[i]) {
				LLVMValueRef at_ = ll_add(c, ll_mul(c, q[r].row, l->nnz), d);
				v = lower_index(c, i, at_);
			}
			q[r].row = ll_add(c, ll_mul(c, q[r].row, l->nnz), d);
			LLVMValueRef dm, dk;
			lower_offsets(c, l, v, &dm, &dk);
			q[r].m = LLVMBuildNSWAdd(c->b, q[r].m, dm, "m");
			q[r].k = LLVMBuildNSWAdd(c->b, q[r].k, dk, "k");
		}
	}
	at(c, q, rows, arg);
	for (int i = last - 1; i >= first; i--)
		lower_loop_end(c, &loops[i]);
}

typedef struct AtOne {
	LowerAt at;
	void *arg;
} AtOne;

static void at_one(LowerCtx *c, const LowerPoint *ps, int rows, void *arg)
{
	(void)rows;
	const AtOne *a = arg;
	a->at(c, ps, a->arg);
}

void lower_nest(LowerCtx *c, int first, int last, const LowerPoint *p, LowerAt at, void *arg)
{
	AtOne a = {at, arg};
	lower_nest_rows(c, first, last, p, 1, at_one, &a);
}

LLVMValueRef lower_invariant(LowerCtx *c, LLVMValueRef load)
{
	static const char kind[] = "invariant.load";
	const unsigned id = LLVMGetMDKindIDInContext(c->ctx, kind, sizeof kind - 1);
	LLVMSetMetadata(load, id, LLVMMDNodeInContext(c->ctx, NULL, 0));
	return load;
}

LLVMValueRef lower_index(LowerCtx *c, int loop, LLVMValueRef at)
{
	LLVMValueRef e = LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, c->i32, c->idx[loop], &at, 1, ""), "");
	return LLVMBuildSExt(c->b, lower_invariant(c, e), c->i64, "");
}

LLVMValueRef lower_entry_alloca(LowerCtx *c, LLVMTypeRef type, const char *name)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c->ctx);
	LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(c->fn);
	LLVMValueRef firsti = LLVMGetFirstInstruction(entry);
	if (firsti)
		LLVMPositionBuilderBefore(b, firsti);
	else
		LLVMPositionBuilderAtEnd(b, entry);
	LLVMValueRef a = LLVMBuildAlloca(b, type, name);
	LLVMDisposeBuilder(b);
	return a;
}

/* The innermost point: padding (outside the real M x K) holds zeros and
 * is skipped. */
static void at_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	const LowerHooks *hooks = arg;
	LLVMValueRef row = p->row;
	LLVMValueRef w = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, c->values, &row, 1, ""), "w");
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "update");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "skip");
	LLVMValueRef real = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->shape.M), ""),
	                                 LLVMBuildICmp(c->b, LLVMIntSLT, p->k, ll_i64(c, c->k->shape.K), ""), "real");
	LLVMBuildCondBr(c->b, real, body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	hooks->update(c, p->m, p->k, w);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

/* The point before a k run: padding rows are skipped, the hook does the rest. */
static void at_krun(LowerCtx *c, const LowerPoint *p, void *arg)
{
	const LowerHooks *hooks = arg;
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "krun");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "kskip");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->m, ll_i64(c, c->k->shape.M), "real"), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	hooks->krun(c, p, c->split);
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

static void at_mrun(LowerCtx *c, const LowerPoint *p, void *arg)
{
	const LowerHooks *hooks = arg;
	hooks->mrun(c, p, c->split - 1);
}

static void at_minner(LowerCtx *c, const LowerPoint *p, void *arg)
{
	const LowerHooks *hooks = arg;
	hooks->minner(c, p, c->k->ir->nloops - 2);
}

/* The nest's facts (nest.h) decide which of the paths the hooks allow. */
LowerPath lower_path(const LowerKernel *k, const LowerHooks *hooks)
{
	Nest nest;
	nest_of(k->ir, &nest);
	const bool kn = k->shape.layout == PAT_LAYOUT_KN;
	if (hooks->body)
		return LOWER_BODY;
	if (hooks->mrun && kn && nest.run_shared && nest.mloop >= 0)
		return LOWER_MRUN;
	if (hooks->krun && kn && nest.split < nest.nloops)
		return LOWER_KRUN;
	if (hooks->minner && kn && nest.minner)
		return LOWER_MINNER;
	return LOWER_POINT;
}

void lower_types(LowerCtx *c, LLVMContextRef ctx)
{
	c->ctx = ctx;
	c->i32 = LLVMInt32TypeInContext(ctx);
	c->i64 = LLVMInt64TypeInContext(ctx);
	c->f32 = LLVMFloatTypeInContext(ctx);
	c->ptr = LLVMPointerTypeInContext(ctx, 0);
}

void lower_function(LowerCtx *c, LLVMModuleRef mod, const LowerKernel *k)
{
	c->mod = mod, c->k = k;
	lower_types(c, c->ctx);
	LLVMTypeRef params[] = {c->ptr, c->ptr, c->ptr, c->ptr, c->i64, c->i64, c->i64, c->ptr};
	LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 8, 0);
	c->fn = LLVMAddFunction(mod, k->name, fty);
	/* X, C, values and index never alias: the vectoriser may trust it */
	unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
	for (unsigned i = 1; i <= 8; i += i == 4 ? 4 : 1) /* X, C, values, index, bias */
		LLVMAddAttributeAtIndex(c->fn, i, LLVMCreateEnumAttribute(c->ctx, noalias, 0));
	c->X = LLVMGetParam(c->fn, 0), c->C = LLVMGetParam(c->fn, 1), c->values = LLVMGetParam(c->fn, 2);
	c->index = LLVMGetParam(c->fn, 3), c->n0 = LLVMGetParam(c->fn, 4), c->n1 = LLVMGetParam(c->fn, 5);
	c->N = k->n_runtime ? LLVMGetParam(c->fn, 6) : ll_i64(c, k->shape.N);
	c->bias = LLVMGetParam(c->fn, 7);
	c->b = LLVMCreateBuilderInContext(c->ctx);
	LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, c->fn, "entry"));
}

LLVMValueRef lower_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k,
                          const LowerHooks *hooks)
{
	Nest nest;
	nest_of(k->ir, &nest);
	LowerCtx c = {.ctx = ctx, .nest = &nest, .backend = hooks->backend};
	lower_function(&c, mod, k);
	if (hooks->prologue)
		hooks->prologue(&c);
	else if (!k->shape.accumulate && (!hooks->stores_c || !hooks->stores_c(k)))
		zero_c(&c);

	const Pir *ir = k->ir;
	const int n = ir->nloops;
	for (int i = 0; i < n; i++) /* the index arrays, loaded once */
		if (pir_loop_is_perforated(&ir->loops[i])) {
			LLVMValueRef at = ll_i64(&c, i);
			LLVMValueRef slot = LLVMBuildGEP2(c.b, c.ptr, c.index, &at, 1, "");
			c.idx[i] = lower_invariant(&c, LLVMBuildLoad2(c.b, c.ptr, slot, ir->loops[i].name));
			if (hooks->index_space)
				c.idx[i] = LLVMBuildAddrSpaceCast(c.b, c.idx[i], LLVMPointerTypeInContext(ctx, hooks->index_space),
				                                  ir->loops[i].name);
		}
	LowerPoint start = {ll_i64(&c, 0), ll_i64(&c, 0), ll_i64(&c, 0)};
	c.split = nest.split;
	switch (lower_path(k, hooks)) {
	case LOWER_BODY: hooks->body(&c); break;
	case LOWER_MRUN:
		if (hooks->mrun_all)
			hooks->mrun_all(&c, c.split - 1);
		else
			lower_nest(&c, 0, c.split - 1, &start, at_mrun, (void *)hooks);
		break;
	case LOWER_KRUN:
		if (hooks->krun_all)
			hooks->krun_all(&c, c.split);
		else
			lower_nest(&c, 0, c.split, &start, at_krun, (void *)hooks);
		break;
	case LOWER_MINNER: lower_nest(&c, 0, n - 2, &start, at_minner, (void *)hooks); break;
	case LOWER_POINT: lower_nest(&c, 0, n, &start, at_point, (void *)hooks); break;
	}
	if (!hooks->body && !(hooks->fuses_epilogue && hooks->fuses_epilogue(k)))
		lower_epilogue_pass(&c, k->vector_width);
	LLVMBuildRetVoid(c.b);
	LLVMDisposeBuilder(c.b);
	return c.fn;
}
