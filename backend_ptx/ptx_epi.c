/* SPDX-License-Identifier: MIT */
/* ptx_epi.c - the op's epilogue on the GPU, C = act(W X + bias (+ C))
 * (ir/op.h): fused into the store of each element of C where one thread
 * stores it once, its final value (ptx_c_final); else, where threads add
 * to C with atomics or rows have no owner, a second kernel run after the
 * first (ptx_epi_hooks), since an element is final only when every adder
 * is done, and a GPU orders two launches on one stream but not the blocks
 * of one.  The activations are lower_act's (no libm). */
#include "ptx_impl.h"

void ptx_plan_epilogue(const LowerKernel *k, bool bias, PtxPlan *plan)
{
	plan->bias = bias;
	/* (accumulate alone needs no second kernel: the atomics add onto the
	 * old C, rows without an owner keep it, and the stores add it) */
	plan->epi_after = (plan->atomic || plan->zero) && (bias || k->shape.act != PAT_ACT_NONE);
}

/* bias[m] (m an i64), 0 where bias is NULL (read through the global space
 * with an invariant load, as the index arrays, on the GPU); NULL where the
 * op has no bias. */
static LLVMValueRef bias_at(LowerCtx *c, LLVMValueRef m)
{
	const PtxPlan *plan = c->backend;
	if (!plan->bias)
		return NULL;
	LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b);
	LLVMBasicBlockRef load = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "bias");
	LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "biased");
	LLVMBuildCondBr(c->b, LLVMBuildIsNull(c->b, c->bias, ""), join, load);
	LLVMPositionBuilderAtEnd(c->b, load);
	LLVMValueRef base = plan->emulate ? c->bias
	                                  : LLVMBuildAddrSpaceCast(c->b, c->bias, LLVMPointerTypeInContext(c->ctx, 1), "");
	LLVMValueRef l = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, base, &m, 1, ""), "b");
	LLVMSetAlignment(l, 4);
	lower_invariant(c, l);
	LLVMBuildBr(c->b, join);
	LLVMPositionBuilderAtEnd(c->b, join);
	LLVMValueRef phi = LLVMBuildPhi(c->b, c->f32, "bias");
	LLVMValueRef vals[2] = {LLVMConstReal(c->f32, 0.0), l};
	LLVMBasicBlockRef bbs[2] = {from, load};
	LLVMAddIncoming(phi, vals, bbs, 2);
	return phi;
}

LLVMValueRef ptx_c_final(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef v)
{
	const PtxPlan *plan = c->backend;
	const OpShape *s = &c->k->shape;
	LLVMValueRef old = NULL;
	if (s->accumulate) {
		old = LLVMBuildLoad2(c->b, c->f32, ptx_c_ptr(c, m, col), "old");
		LLVMSetAlignment(old, 4);
	}
	if (plan->epi_after)
		return old ? LLVMBuildFAdd(c->b, v, old, "") : v;
	LLVMValueRef b = bias_at(c, m);
	if (!b && !old && s->act == PAT_ACT_NONE)
		return v;
	return lower_epilogue(c, v, b, old);
}

unsigned ptx_epi_blocks(const LowerKernel *k, int64_t n)
{
	return (unsigned)((k->shape.M * n + PTX_EPI_THREADS - 1) / PTX_EPI_THREADS);
}

/* Element e = blockIdx.x PTX_EPI_THREADS + threadIdx.x of C's storage,
 * row e / N (layout kn) or e % M (nk): C[e] = act(C[e] + bias[row]).
 * Where the op accumulates, the main kernel has added onto the old C. */
static void epi_body(LowerCtx *c)
{
	const LowerKernel *k = c->k;
	LLVMValueRef e = LLVMBuildNSWAdd(c->b, ll_mul(c, ptx_sreg(c, "ctaid.x"), PTX_EPI_THREADS), ptx_sreg(c, "tid.x"), "e");
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMValueRef total = ll_mulv(c, c->N, ll_i64(c, k->shape.M));
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, e, total, ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);
	LLVMValueRef m = k->shape.layout == PAT_LAYOUT_KN ? LLVMBuildUDiv(c->b, e, c->N, "m") : ll_urem(c, e, k->shape.M);
	LLVMValueRef p = LLVMBuildGEP2(c->b, c->f32, c->C, &e, 1, "");
	LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, p, "c");
	LLVMSetAlignment(v, 4);
	v = lower_epilogue(c, v, bias_at(c, m), NULL);
	LLVMSetAlignment(LLVMBuildStore(c->b, v, p), 4);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}

static void no_prologue(LowerCtx *c) { (void)c; }

LowerHooks ptx_epi_hooks(PtxPlan *plan)
{
	return (LowerHooks){.prologue = no_prologue, .body = epi_body, .index_space = plan->emulate ? 0 : 1, .backend = plan};
}
