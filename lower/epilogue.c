/* SPDX-License-Identifier: MIT */
/* epilogue.c - an op's epilogue in IR: C = act(W X + bias (+ C)), see
 * ir/op.h.
 *
 * The activations are built from adds, multiplies, a division and bit
 * operations on floats or vectors of them, with no call into libm: an
 * exp through 2^n times a degree-5 polynomial on [-ln2/2, ln2/2] (relative
 * error under 2e-7), tanh from it, and erf by Abramowitz and Stegun 7.1.26
 * (absolute error under 1.5e-7).  So the same IR vectorises on x86-64 and
 * runs on NVPTX.  The kernels check them against float64's tanh and erf
 * (tests/unit/test_x86.c). */
#include "llvm_util.h"

#include <string.h>

/* The scalar constant s, as a vector of ty's width where ty is one. */
static LLVMValueRef splat_const(LLVMTypeRef ty, LLVMValueRef s)
{
	if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind)
		return s;
	unsigned n = LLVMGetVectorSize(ty);
	LLVMValueRef e[64];
	for (unsigned i = 0; i < n && i < 64; i++)
		e[i] = s;
	return LLVMConstVector(e, n);
}

/* The float constant v, as a vector of ty's width where ty is one. */
static LLVMValueRef cst(LLVMTypeRef ty, LLVMTypeRef f32, double v) { return splat_const(ty, LLVMConstReal(f32, v)); }

/* The overloaded intrinsic `base` on ty (llvm.floor.v16f32), with nargs
 * arguments of that type. */
static LLVMValueRef intrin(LowerCtx *c, const char *base, LLVMTypeRef ty, const LLVMValueRef *args, unsigned nargs)
{
	unsigned id = LLVMLookupIntrinsicID(base, strlen(base));
	LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, &ty, 1);
	return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, &ty, 1), fn, (LLVMValueRef *)args, nargs, "");
}

static LLVMValueRef fma3(LowerCtx *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
	LLVMValueRef args[3] = {a, b, d};
	return intrin(c, "llvm.fmuladd", LLVMTypeOf(a), args, 3);
}

static LLVMValueRef fmul(LowerCtx *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(c->b, a, b, ""); }
static LLVMValueRef fadd(LowerCtx *c, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(c->b, a, b, ""); }

/* min(max(x, lo), hi), NaN staying NaN */
static LLVMValueRef clamp(LowerCtx *c, LLVMValueRef x, double lo, double hi)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	x = LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, cst(ty, c->f32, lo), ""), cst(ty, c->f32, lo), x, "");
	return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOGT, x, cst(ty, c->f32, hi), ""), cst(ty, c->f32, hi), x, "");
}

/* e^x for x a float or a vector of floats, x clamped to [-87, 88] where
 * 2^n stays a normal float (e^x underflows to about 1.6e-38 below).
 * n = round(x log2 e) by adding 1.5 * 2^23 + 127: the sum's low mantissa
 * bits are then n + 127, the biased exponent of 2^n, which a shift puts in
 * place (no float-to-int conversion); r = x - n ln 2 in one multiply-add
 * (ln 2's float is 1.9e-9 off, so r is off by at most 2.4e-7 at |n| = 127,
 * where e^x is either lost beside the 1 it is added to or below 1e-37,
 * and by 2e-8 at |n| <= 10); e^r by a degree-5 polynomial fitted on
 * [-ln2/2, ln2/2] for relative error (1.4e-7 with its float coefficients,
 * as good as the Taylor polynomial to r^6 and one multiply-add shorter). */
static LLVMValueRef exp_f(LowerCtx *c, LLVMValueRef x)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	x = clamp(c, x, -87.0, 88.0);
	const double magic = 12582912.0 + 127.0;
	LLVMValueRef t = fma3(c, x, cst(ty, c->f32, 1.44269504088896341), cst(ty, c->f32, magic));
	LLVMValueRef n = LLVMBuildFSub(c->b, t, cst(ty, c->f32, magic), "");
	LLVMValueRef r = fma3(c, n, cst(ty, c->f32, -0.69314718055994530942), x);
	static const double coef[] = {0.00829765201, 0.0419153832, 0.166675746, 0.499988943, 0.999999702, 1.00000012};
	LLVMValueRef p = cst(ty, c->f32, coef[0]);
	for (int i = 1; i < 6; i++)
		p = fma3(c, p, r, cst(ty, c->f32, coef[i]));
	const bool vec = LLVMGetTypeKind(ty) == LLVMVectorTypeKind;
	LLVMTypeRef ity = vec ? LLVMVectorType(c->i32, LLVMGetVectorSize(ty)) : c->i32;
	LLVMValueRef e = LLVMBuildShl(c->b, LLVMBuildBitCast(c->b, t, ity, ""), splat_const(ity, LLVMConstInt(c->i32, 23, 0)), "");
	return fmul(c, p, LLVMBuildBitCast(c->b, e, ty, ""));
}

/* x / (1 + e^-x): SiLU */
static LLVMValueRef silu(LowerCtx *c, LLVMValueRef x)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef e = exp_f(c, LLVMBuildFNeg(c->b, x, ""));
	return LLVMBuildFDiv(c->b, x, fadd(c, e, cst(ty, c->f32, 1.0)), "");
}

/* 0.5 x (1 + tanh(y)) = x / (1 + e^-2y), y = sqrt(2/pi) (x + 0.044715 x^3):
 * -2y = x (a + b x^2) with the constants folded.  17 vector operations, a
 * division among them (24 as x (1 - 1 / (e^2y + 1)) before, which also
 * lost digits near 0): 2.5 ns against 4.0 ns per 16 floats on the Zen 5
 * development VM. */
static LLVMValueRef gelu_tanh(LowerCtx *c, LLVMValueRef x)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	const double a = -2.0 * 0.79788456080286535588, b = a * 0.044715;
	LLVMValueRef x2 = fmul(c, x, x);
	LLVMValueRef e = exp_f(c, fmul(c, x, fma3(c, x2, cst(ty, c->f32, b), cst(ty, c->f32, a))));
	return LLVMBuildFDiv(c->b, x, fadd(c, e, cst(ty, c->f32, 1.0)), "");
}

/* 0.5 x (1 + erf(x / sqrt 2)); erf(z) for z >= 0 is 1 - t P(t) e^-z^2,
 * t = 1 / (1 + p z) (Abramowitz and Stegun 7.1.26), and odd. */
static LLVMValueRef gelu_erf(LowerCtx *c, LLVMValueRef x)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	LLVMValueRef z = fmul(c, x, cst(ty, c->f32, 0.70710678118654752440));
	LLVMValueRef az = intrin(c, "llvm.fabs", ty, &z, 1);
	LLVMValueRef t = LLVMBuildFDiv(c->b, cst(ty, c->f32, 1.0), fma3(c, az, cst(ty, c->f32, 0.3275911), cst(ty, c->f32, 1.0)), "");
	static const double a[] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
	LLVMValueRef p = cst(ty, c->f32, a[0]);
	for (int i = 1; i < 5; i++)
		p = fma3(c, p, t, cst(ty, c->f32, a[i]));
	p = fmul(c, p, t);
	LLVMValueRef e = exp_f(c, LLVMBuildFNeg(c->b, fmul(c, az, az), ""));
	LLVMValueRef erf_abs = LLVMBuildFSub(c->b, cst(ty, c->f32, 1.0), fmul(c, p, e), "");
	/* 1 + erf(z): 1 + erf|z| for z >= 0, 1 - erf|z| below */
	LLVMValueRef neg = LLVMBuildFCmp(c->b, LLVMRealOLT, z, cst(ty, c->f32, 0.0), "");
	LLVMValueRef one_plus = LLVMBuildSelect(c->b, neg, fmul(c, p, e), fadd(c, erf_abs, cst(ty, c->f32, 1.0)), "");
	return fmul(c, fmul(c, x, cst(ty, c->f32, 0.5)), one_plus);
}

LLVMValueRef lower_act(LowerCtx *c, PatAct act, LLVMValueRef x)
{
	LLVMTypeRef ty = LLVMTypeOf(x);
	switch (act) {
	case PAT_ACT_NONE: return x;
	case PAT_ACT_RELU: /* x < 0 ? 0 : x, so that NaN stays NaN as in PyTorch */
		return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, cst(ty, c->f32, 0.0), ""),
		                       cst(ty, c->f32, 0.0), x, "");
	case PAT_ACT_GELU_TANH: return gelu_tanh(c, x);
	case PAT_ACT_GELU_ERF: return gelu_erf(c, x);
	case PAT_ACT_SILU: return silu(c, x);
	case PAT_NACTS: break;
	}
	return x;
}

LLVMValueRef lower_epilogue(LowerCtx *c, LLVMValueRef sum, LLVMValueRef bias, LLVMValueRef old)
{
	if (old)
		sum = fadd(c, sum, old);
	if (bias)
		sum = fadd(c, sum, bias);
	return lower_act(c, c->k->shape.act, sum);
}

/* ---- the pass over C ---- */

/* A vector of w floats at p (4-byte aligned), or the float for w = 1. */
static LLVMValueRef load_w(LowerCtx *c, LLVMValueRef p, int w)
{
	LLVMValueRef v = LLVMBuildLoad2(c->b, w > 1 ? LLVMVectorType(c->f32, (unsigned)w) : c->f32, p, "");
	LLVMSetAlignment(v, 4);
	return v;
}

static LLVMValueRef elem(LowerCtx *c, LLVMValueRef base, LLVMValueRef at)
{
	return LLVMBuildGEP2(c->b, c->f32, base, &at, 1, "");
}

static LLVMValueRef splat(LowerCtx *c, LLVMValueRef s, int w)
{
	if (w == 1)
		return s;
	LLVMTypeRef vty = LLVMVectorType(c->f32, (unsigned)w);
	LLVMValueRef v = LLVMBuildInsertElement(c->b, LLVMGetUndef(vty), s, LLVMConstInt(c->i32, 0, 0), "");
	return LLVMBuildShuffleVector(c->b, v, LLVMGetUndef(vty), LLVMConstNull(LLVMVectorType(c->i32, (unsigned)w)), "");
}

/* C[i] = epilogue(C[i] + b(i)) for lo <= i < hi along one row of C at
 * row (a pointer), w floats at a time then one; bias: the bias row
 * (contiguous along i, nk) or NULL with bs (kn: one bias for the row, or
 * NULL). */
static void pass_row(LowerCtx *c, LLVMValueRef row, LLVMValueRef lo, LLVMValueRef hi, LLVMValueRef bias, LLVMValueRef bs,
                     int w)
{
	LowerLoop l;
	for (int width = w; width >= 1; width = width > 1 ? 1 : 0) {
		LLVMValueRef span = LLVMBuildNSWSub(c->b, hi, lo, "");
		LLVMValueRef nv = width > 1 ? LLVMBuildSDiv(c->b, span, ll_i64(c, width), "") : span;
		LLVMValueRef from = lo;
		LLVMValueRef v = lower_loop_begin(c, &l, ll_i64(c, 0), nv, "ep");
		LLVMValueRef i = ll_add(c, from, ll_mul(c, v, width));
		LLVMValueRef cp = elem(c, row, i);
		LLVMValueRef b = bias ? load_w(c, elem(c, bias, i), width) : bs ? splat(c, bs, width) : NULL;
		LLVMValueRef out = lower_epilogue(c, load_w(c, cp, width), b, NULL);
		LLVMSetAlignment(LLVMBuildStore(c->b, out, cp), 4);
		lower_loop_end(c, &l);
		lo = ll_add(c, from, ll_mul(c, nv, width));
		if (width == 1)
			break;
	}
}

void lower_epilogue_pass(LowerCtx *c, int w)
{
	const LowerKernel *k = c->k;
	if (w < 1)
		w = 1;
	LLVMValueRef have = LLVMBuildIsNotNull(c->b, c->bias, "have_bias");
	/* a bias of NULL and no activation: nothing to do (accumulate was the
	 * nest's adding to C) */
	LLVMBasicBlockRef pass = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "epilogue"),
	                  done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "epilogue_done");
	if (k->shape.act == PAT_ACT_NONE)
		LLVMBuildCondBr(c->b, have, pass, done);
	else
		LLVMBuildBr(c->b, pass);
	LLVMPositionBuilderAtEnd(c->b, pass);
	LowerLoop lo;
	if (k->shape.layout == PAT_LAYOUT_KN) {
		LLVMValueRef m = lower_loop_begin(c, &lo, ll_i64(c, 0), ll_i64(c, k->shape.M), "epm");
		LLVMBasicBlockRef from = LLVMGetInsertBlock(c->b),
		                  ld = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "ep_bias"),
		                  join = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "ep_row");
		LLVMBuildCondBr(c->b, have, ld, join);
		LLVMPositionBuilderAtEnd(c->b, ld);
		LLVMValueRef b = LLVMBuildLoad2(c->b, c->f32, elem(c, c->bias, m), "bias");
		LLVMBuildBr(c->b, join);
		LLVMPositionBuilderAtEnd(c->b, join);
		LLVMValueRef bm = LLVMBuildPhi(c->b, c->f32, "bias");
		LLVMAddIncoming(bm, (LLVMValueRef[]){LLVMConstReal(c->f32, 0.0), b}, (LLVMBasicBlockRef[]){from, ld}, 2);
		pass_row(c, elem(c, c->C, ll_mulv(c, m, c->N)), c->n0, c->n1, NULL, bm, w);
	} else {
		LLVMValueRef n = lower_loop_begin(c, &lo, c->n0, c->n1, "epn");
		LLVMValueRef row = elem(c, c->C, ll_mul(c, n, k->shape.M));
		/* with a bias: the bias row; without, no bias at all */
		LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "ep_bias"),
		                  nb = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "ep_nobias"),
		                  next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "ep_row");
		LLVMBuildCondBr(c->b, have, wb, nb);
		LLVMPositionBuilderAtEnd(c->b, wb);
		pass_row(c, row, ll_i64(c, 0), ll_i64(c, k->shape.M), c->bias, NULL, w);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, nb);
		pass_row(c, row, ll_i64(c, 0), ll_i64(c, k->shape.M), NULL, NULL, w);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, next);
	}
	lower_loop_end(c, &lo);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}
