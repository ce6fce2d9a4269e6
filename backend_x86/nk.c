/* SPDX-License-Identifier: MIT */
/* nk.c - layout nk (torch.nn.Linear's: X is N x K, C is N x M, C = X W^T)
 * on the fast paths of layout kn.
 *
 * The kn kernels vectorise along the tokens, which nk lays K (or M) floats
 * apart, so the nk kernel walks its columns in panels of P tokens: it
 * transposes the panel's X into a K x P buffer, runs the kn kernel of the
 * same pattern, specialised on N = P, into an M x P buffer, and transposes
 * that into C.  The transposes go 8 x 8 floats at a time through vector
 * shuffles (two-source: vpermt2ps on AVX-512, vperm2f128/vshufps on AVX2),
 * so each costs a few instructions per 8 floats beside the kernel's FMAs.
 * Where the buffers cannot be had (malloc fails) the kernel falls back to
 * the nest walked point by point in nk, which is slow but right.  Tiles,
 * channel_in and blocks of a vector of rows or more take nkdot.c's kernel
 * instead, which reads X and C in place (x86_lower below).  What the
 * transposes cost, and what the kernel without them gains: see
 * docs/design/x86-nk.md. */
#include "x86_impl.h"

#include <stdio.h>

/* The tokens of one panel: X's panel (K x P floats) about 512 KiB, so
 * that it and C's stay in L2, in multiples of 64 from 64 to 256. */
enum { X86_NK_PANEL_BYTES = 512 << 10, X86_NK_PANEL_MIN = 64, X86_NK_PANEL_MAX = 256 };

int64_t x86_nk_panel(const LowerKernel *k)
{
	int64_t p = (int64_t)(X86_NK_PANEL_BYTES / (4.0 * (double)k->shape.K)) / 64 * 64;
	return p < X86_NK_PANEL_MIN ? X86_NK_PANEL_MIN : p > X86_NK_PANEL_MAX ? X86_NK_PANEL_MAX : p;
}

LowerKernel x86_nk_panel_kernel(const LowerKernel *k, const char *name)
{
	LowerKernel kv = *k;
	kv.shape.layout = PAT_LAYOUT_KN;
	kv.shape.N = x86_nk_panel(k);
	kv.n_runtime = false;
	kv.shape.act = PAT_ACT_NONE; /* the epilogue is the transpose's into C */
	kv.shape.accumulate = false;
	kv.name = name;
	return kv;
}

bool x86_nk_panels(const LowerKernel *k, const LowerHooks *hooks)
{
	if (k->shape.layout != PAT_LAYOUT_NK || hooks != &x86_update_hooks)
		return false;
	const LowerKernel kv = x86_nk_panel_kernel(k, k->name);
	return lower_path(&kv, hooks) != LOWER_POINT;
}

bool x86_fast_path(const LowerKernel *k)
{
	return lower_path(k, &x86_update_hooks) != LOWER_POINT || x86_nk_panels(k, &x86_update_hooks);
}

/* ---- the transpose: dst[j ldd + i] = src[i lds + j], i < rows, j < cols ---- */

/* Swaps the off-diagonal b x b blocks of each 2b x 2b block of the 8 x 8
 * tile in r (rows i and i + b, i's bit b clear). */
static void butterfly(LLVMBuilderRef b, LLVMTypeRef i32, LLVMValueRef r[8], int bs)
{
	LLVMValueRef lo[8], hi[8];
	for (int p = 0; p < 8; p++) {
		lo[p] = LLVMConstInt(i32, (unsigned long long)((p & bs) == 0 ? p : 8 + p - bs), 0);
		hi[p] = LLVMConstInt(i32, (unsigned long long)((p & bs) == 0 ? p + bs : 8 + p), 0);
	}
	LLVMValueRef mlo = LLVMConstVector(lo, 8), mhi = LLVMConstVector(hi, 8);
	for (int i = 0; i < 8; i++)
		if (!(i & bs)) {
			LLVMValueRef a = r[i], c = r[i + bs];
			r[i] = LLVMBuildShuffleVector(b, a, c, mlo, "");
			r[i + bs] = LLVMBuildShuffleVector(b, a, c, mhi, "");
		}
}

static LLVMValueRef elem(LowerCtx *c, LLVMValueRef base, LLVMValueRef i, LLVMValueRef ld, LLVMValueRef j)
{
	LLVMValueRef at = ll_add(c, ll_mulv(c, i, ld), j);
	return LLVMBuildGEP2(c->b, c->f32, base, &at, 1, "");
}

/* The value stored at dst for v, the element of src's row i: v itself, or
 * (out) the op's epilogue of it, bias[i] (bias: NULL for none) and with
 * accumulate the old *dst (v a float or a vector along i). */
static LLVMValueRef out_value(LowerCtx *c, bool out, LLVMValueRef v, LLVMValueRef bias, LLVMValueRef dst)
{
	if (!out)
		return v;
	LLVMValueRef old = NULL;
	if (c->k->shape.accumulate) {
		old = LLVMBuildLoad2(c->b, LLVMTypeOf(v), dst, "");
		LLVMSetAlignment(old, 4);
	}
	return lower_epilogue(c, v, bias, old);
}

/* dst[j ldd + i] = src[i lds + j] (out: its epilogue) for rows i0 <= i < i1,
 * columns j0 <= j < j1, one float at a time. */
static void transpose_scalar(LowerCtx *c, bool out, LLVMValueRef src, LLVMValueRef lds, LLVMValueRef dst,
                             LLVMValueRef ldd, LLVMValueRef i0, LLVMValueRef i1, LLVMValueRef j0, LLVMValueRef j1)
{
	LowerLoop li, lj;
	LLVMValueRef i = lower_loop_begin(c, &li, i0, i1, "ti");
	LLVMValueRef bias = out && c->bias ? LLVMBuildLoad2(c->b, c->f32, elem(c, c->bias, ll_i64(c, 0), ll_i64(c, 0), i), "") : NULL;
	LLVMValueRef j = lower_loop_begin(c, &lj, j0, j1, "tj");
	LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, elem(c, src, i, lds, j), "");
	LLVMValueRef d = elem(c, dst, j, ldd, i);
	LLVMBuildStore(c->b, out_value(c, out, v, bias, d), d);
	lower_loop_end(c, &lj);
	lower_loop_end(c, &li);
}

/* The transpose's blocks of 8 x 8, then its edges; out: with the epilogue
 * (c->bias: the bias, or NULL for none). */
static void transpose_body(LowerCtx *c, bool out, LLVMValueRef src, LLVMValueRef lds, LLVMValueRef dst, LLVMValueRef ldd,
                           LLVMValueRef rows, LLVMValueRef cols)
{
	LLVMValueRef r8 = LLVMBuildAnd(c->b, rows, ll_i64(c, -8), "r8"), c8 = LLVMBuildAnd(c->b, cols, ll_i64(c, -8), "c8");
	LLVMTypeRef v8 = LLVMVectorType(c->f32, 8);
	LowerLoop lbi, lbj;
	LLVMValueRef bi = lower_loop_begin(c, &lbi, ll_i64(c, 0), ll_udiv(c, r8, 8), "tbi");
	LLVMValueRef i0 = ll_mul(c, bi, 8);
	LLVMValueRef bias = NULL;
	if (out && c->bias) {
		bias = LLVMBuildLoad2(c->b, v8, elem(c, c->bias, ll_i64(c, 0), ll_i64(c, 0), i0), "");
		LLVMSetAlignment(bias, 4);
	}
	LLVMValueRef bj = lower_loop_begin(c, &lbj, ll_i64(c, 0), ll_udiv(c, c8, 8), "tbj");
	LLVMValueRef j0 = ll_mul(c, bj, 8);
	LLVMValueRef r[8];
	for (int t = 0; t < 8; t++) {
		r[t] = LLVMBuildLoad2(c->b, v8, elem(c, src, ll_add(c, i0, ll_i64(c, t)), lds, j0), "");
		LLVMSetAlignment(r[t], 4);
	}
	for (int bs = 4; bs >= 1; bs /= 2)
		butterfly(c->b, c->i32, r, bs);
	for (int t = 0; t < 8; t++) {
		LLVMValueRef d = elem(c, dst, ll_add(c, j0, ll_i64(c, t)), ldd, i0);
		LLVMSetAlignment(LLVMBuildStore(c->b, out_value(c, out, r[t], bias, d), d), 4);
	}
	lower_loop_end(c, &lbj);
	/* the columns after the last 8 of these 8 rows */
	transpose_scalar(c, out, src, lds, dst, ldd, i0, ll_add(c, i0, ll_i64(c, 8)), c8, cols);
	lower_loop_end(c, &lbi);
	/* the rows after the last 8 */
	transpose_scalar(c, out, src, lds, dst, ldd, r8, rows, ll_i64(c, 0), cols);
}

/* void patc.transpose(ptr src, i64 lds, ptr dst, i64 ldd, i64 rows, i64 cols),
 * internal to the module, made once; with shape (the epilogue of C's
 * panel), patc.transpose.ACT[.acc](..., ptr bias) applying it. */
LLVMValueRef x86_transpose_fn(LLVMContextRef ctx, LLVMModuleRef mod, const OpShape *shape)
{
	char name[64];
	snprintf(name, sizeof name, "patc.transpose%s%s%s", shape ? "." : "", shape ? pat_act_names[shape->act] : "",
	         shape && shape->accumulate ? ".acc" : "");
	LLVMValueRef fn = LLVMGetNamedFunction(mod, name);
	if (fn)
		return fn;
	LowerKernel ek = {.shape = shape ? *shape : (OpShape){0}};
	LowerCtx c = {.mod = mod, .k = &ek};
	lower_types(&c, ctx);
	LLVMTypeRef params[] = {c.ptr, c.i64, c.ptr, c.i64, c.i64, c.i64, c.ptr};
	const unsigned np = shape ? 7 : 6;
	fn = LLVMAddFunction(mod, name, LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, np, 0));
	LLVMSetLinkage(fn, LLVMInternalLinkage);
	unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
	LLVMAddAttributeAtIndex(fn, 1, LLVMCreateEnumAttribute(ctx, noalias, 0));
	LLVMAddAttributeAtIndex(fn, 3, LLVMCreateEnumAttribute(ctx, noalias, 0));
	c.fn = fn;
	c.b = LLVMCreateBuilderInContext(ctx);
	LLVMPositionBuilderAtEnd(c.b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
	LLVMValueRef src = LLVMGetParam(fn, 0), lds = LLVMGetParam(fn, 1), dst = LLVMGetParam(fn, 2),
	             ldd = LLVMGetParam(fn, 3), rows = LLVMGetParam(fn, 4), cols = LLVMGetParam(fn, 5);
	if (!shape) {
		transpose_body(&c, false, src, lds, dst, ldd, rows, cols);
	} else { /* with the bias and without: the loops for each */
		LLVMValueRef bias = LLVMGetParam(fn, 6);
		LLVMBasicBlockRef wb = LLVMAppendBasicBlockInContext(ctx, fn, "bias"),
		                  nb = LLVMAppendBasicBlockInContext(ctx, fn, "nobias"),
		                  done = LLVMAppendBasicBlockInContext(ctx, fn, "done");
		LLVMBuildCondBr(c.b, LLVMBuildIsNotNull(c.b, bias, ""), wb, nb);
		LLVMPositionBuilderAtEnd(c.b, wb);
		c.bias = bias;
		transpose_body(&c, true, src, lds, dst, ldd, rows, cols);
		LLVMBuildBr(c.b, done);
		LLVMPositionBuilderAtEnd(c.b, nb);
		c.bias = NULL;
		transpose_body(&c, true, src, lds, dst, ldd, rows, cols);
		LLVMBuildBr(c.b, done);
		LLVMPositionBuilderAtEnd(c.b, done);
	}
	LLVMBuildRetVoid(c.b);
	LLVMDisposeBuilder(c.b);
	return fn;
}

/* ---- the nk kernel ---- */

/* The panels' kernel of k (x86_nk_panels), named k->name; *inner: the kn
 * kernel of a panel. */
static LLVMValueRef panels_kernel(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k, const LowerHooks *hooks,
                                  LLVMValueRef *inner)
{
	char name[256];
	snprintf(name, sizeof name, "%.200s.panel", k->name);
	const LowerKernel pk = x86_nk_panel_kernel(k, name);
	const int64_t P = pk.shape.N, M = k->shape.M, K = k->shape.K;
	LLVMValueRef panel = lower_kernel(ctx, mod, &pk, hooks);
	LLVMSetLinkage(panel, LLVMInternalLinkage);
	snprintf(name, sizeof name, "%.200s.points", k->name);
	LowerKernel sk = *k;
	sk.name = name;
	LLVMValueRef slow = lower_kernel(ctx, mod, &sk, &x86_point_hooks);
	LLVMSetLinkage(slow, LLVMInternalLinkage);
	LLVMValueRef tr = x86_transpose_fn(ctx, mod, NULL), tro = x86_transpose_fn(ctx, mod, &k->shape);
	*inner = panel;

	LowerCtx c = {.ctx = ctx};
	lower_function(&c, mod, k);
	LLVMTypeRef kty = LLVMGlobalGetValueType(c.fn);
	LLVMValueRef xraw, craw;
	LLVMValueRef xt = x86_malloc64(&c, ll_i64(&c, K * P * 4), &xraw, "xpanel");
	LLVMValueRef ct = x86_malloc64(&c, ll_i64(&c, M * P * 4), &craw, "cpanel");
	LLVMValueRef have = LLVMBuildAnd(c.b, LLVMBuildIsNotNull(c.b, xraw, ""), LLVMBuildIsNotNull(c.b, craw, ""), "");
	LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(ctx, c.fn, "panels"),
	                  points = LLVMAppendBasicBlockInContext(ctx, c.fn, "points"),
	                  done = LLVMAppendBasicBlockInContext(ctx, c.fn, "done");
	LLVMBuildCondBr(c.b, have, fast, points);

	LLVMPositionBuilderAtEnd(c.b, points);
	LLVMValueRef sargs[8] = {c.X, c.C, c.values, c.index, c.n0, c.n1, LLVMGetParam(c.fn, 6), c.bias};
	LLVMBuildCall2(c.b, kty, slow, sargs, 8, "");
	LLVMBuildBr(c.b, done);

	LLVMPositionBuilderAtEnd(c.b, fast);
	LLVMTypeRef tty = LLVMGlobalGetValueType(tr);
	LowerLoop lp;
	LLVMValueRef span = LLVMBuildNSWSub(c.b, c.n1, c.n0, "");
	LLVMValueRef npanels = LLVMBuildSDiv(c.b, ll_add(&c, span, ll_i64(&c, P - 1)), ll_i64(&c, P), "npanels");
	LLVMValueRef pi = lower_loop_begin(&c, &lp, ll_i64(&c, 0), npanels, "panel");
	LLVMValueRef a = ll_add(&c, c.n0, ll_mul(&c, pi, P));
	LLVMValueRef left = LLVMBuildNSWSub(c.b, c.n1, a, "");
	LLVMValueRef cw = LLVMBuildSelect(c.b, LLVMBuildICmp(c.b, LLVMIntSLT, left, ll_i64(&c, P), ""), left,
	                                  ll_i64(&c, P), "cw");
	/* X's rows a..a+cw (K floats each) into the K x P panel */
	LLVMValueRef xa = LLVMBuildGEP2(c.b, c.f32, c.X, (LLVMValueRef[]){ll_mul(&c, a, K)}, 1, "");
	LLVMBuildCall2(c.b, tty, tr, (LLVMValueRef[]){xa, ll_i64(&c, K), xt, ll_i64(&c, P), cw, ll_i64(&c, K)}, 6, "");
	LLVMValueRef pargs[8] = {xt, ct, c.values, c.index, ll_i64(&c, 0), cw, ll_i64(&c, P), LLVMConstNull(c.ptr)};
	LLVMBuildCall2(c.b, kty, panel, pargs, 8, "");
	/* the M x P panel of C into C's rows a..a+cw (M floats each), with the
	 * epilogue */
	LLVMValueRef ca = LLVMBuildGEP2(c.b, c.f32, c.C, (LLVMValueRef[]){ll_mul(&c, a, M)}, 1, "");
	LLVMBuildCall2(c.b, LLVMGlobalGetValueType(tro), tro,
	               (LLVMValueRef[]){ct, ll_i64(&c, P), ca, ll_i64(&c, M), ll_i64(&c, M), cw, c.bias}, 7, "");
	lower_loop_end(&c, &lp);
	LLVMBuildBr(c.b, done);

	LLVMPositionBuilderAtEnd(c.b, done);
	x86_free(&c, xraw);
	x86_free(&c, craw);
	LLVMBuildRetVoid(c.b);
	LLVMDisposeBuilder(c.b);
	return c.fn;
}

bool x86_nk_dot(const LowerKernel *k, const LowerHooks *hooks)
{
	NkPlan pl;
	return x86_nk_panels(k, hooks) && x86_nkdot_plan(k, &pl);
}

LLVMValueRef x86_lower(LLVMContextRef ctx, LLVMModuleRef mod, const LowerKernel *k, const LowerHooks *hooks,
                       LLVMValueRef *inner)
{
	LLVMValueRef in = NULL;
	if (inner)
		*inner = NULL;
	if (!x86_nk_panels(k, hooks))
		return lower_kernel(ctx, mod, k, hooks);
	NkPlan pl;
	if (!x86_nkdot_plan(k, &pl)) {
		LLVMValueRef fn = panels_kernel(ctx, mod, k, hooks, &in);
		if (inner)
			*inner = in;
		return fn;
	}
	if (pl.form == NK_COLUMNS)
		return x86_nkdot(ctx, mod, k, &pl, NULL);
	/* blocks: the panels where the transposed block row cannot be allocated */
	char name[256];
	snprintf(name, sizeof name, "%.200s.panels", k->name);
	LowerKernel pk = *k;
	pk.name = name;
	LLVMValueRef panels = panels_kernel(ctx, mod, &pk, hooks, &in);
	LLVMSetLinkage(panels, LLVMInternalLinkage);
	if (inner)
		*inner = in;
	return x86_nkdot(ctx, mod, k, &pl, panels);
}
