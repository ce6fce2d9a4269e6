/* SPDX-License-Identifier: MIT */
/* tc_mma.c - the tensor-core mapping's warp instructions: mma.sync and
 * mma.sp on fragments (their layouts: tc.c), the plain (unstaged) walks
 * that read them from global memory (tc_point, tc_sp_point), and wgmma's
 * inline asm and waits (tc_wg_init, tc_wg_wait). */
#define _POSIX_C_SOURCE 200809L
#include "tc_impl.h"

#include <stdio.h>
#include <string.h>

/* A load of `ty` at element `at` of base (elements of `ety`), or 0 where
 * !ok (nothing read): X, the weights and the index, none of which a kernel
 * writes (an invariant load). */
static LLVMValueRef load_or_zero(LowerCtx *c, LLVMTypeRef ety, LLVMTypeRef ty, LLVMValueRef base, LLVMValueRef at,
                                 LLVMValueRef ok, unsigned align)
{
	at = LLVMBuildSelect(c->b, ok, at, ll_i64(c, 0), "");
	LLVMValueRef v = lower_invariant(c, LLVMBuildLoad2(c->b, ty, LLVMBuildGEP2(c->b, ety, base, &at, 1, ""), ""));
	ptx_align(c, v, align);
	return LLVMBuildSelect(c->b, ok, v, LLVMConstNull(ty), "");
}

/* X[kk, n] as the low 16 bits of an i32; 0 past K or past the columns. */
static LLVMValueRef x_half(LowerCtx *c, const TcArg *a, LLVMValueRef kk, LLVMValueRef n)
{
	const LowerKernel *k = c->k;
	LLVMValueRef ok = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, ll_i64(c, k->shape.K), ""),
	                               LLVMBuildICmp(c->b, LLVMIntSLT, n, c->n1, ""), "");
	LLVMValueRef at = k->shape.layout == PAT_LAYOUT_KN
	                          ? ll_add(c, ll_mulv(c, kk, c->N), n)
	                          : ll_add(c, ll_mul(c, n, k->shape.K), kk);
	return LLVMBuildZExt(c->b, load_or_zero(c, a->i16, a->i16, c->X, at, ok, 2), c->i32, "");
}

/* Two 16-bit values in one word: lo in the low half. */
static LLVMValueRef pack(LowerCtx *c, LLVMValueRef lo, LLVMValueRef hi)
{
	return LLVMBuildOr(c->b, lo, LLVMBuildShl(c->b, hi, LLVMConstInt(c->i32, 16, 0), ""), "pair");
}

/* acc[j] = A B + acc[j]: mma.m16n8k16 (meta NULL, B 2 words) or, sparse,
 * mma.sp.m16n8k32 with its metadata (B 4 words). */
void tc_mma(LowerCtx *c, TcArg *a, LLVMValueRef *aw, LLVMValueRef *bw, LLVMValueRef meta, int j)
{
	const int nb = meta ? 4 : 2;
	LLVMValueRef cv[4];
	for (int e = 0; e < 4; e++)
		cv[e] = LLVMBuildLoad2(c->b, c->f32, a->acc[j][e], "");
	if (a->plan->emulate) {
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, aw[e], LLVMBuildGEP2(c->b, c->i32, a->ea, &ie, 1, ""));
			LLVMBuildStore(c->b, cv[e], LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""));
			if (e < nb)
				LLVMBuildStore(c->b, bw[e], LLVMBuildGEP2(c->b, c->i32, a->eb, &ie, 1, ""));
		}
		LLVMValueRef f16 = LLVMConstInt(c->i32, c->k->shape.dtype == PAT_F16, 0);
		LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, meta ? a->sp : a->mma, "mma");
		LLVMValueRef args[5] = {a->ea, a->eb, a->ec, meta ? meta : f16, f16};
		LLVMBuildCall2(c->b, meta ? a->sp_ty : a->mma_ty, fn, args, meta ? 5 : 4, "");
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""), ""),
			               a->acc[j][e]);
		}
		return;
	}
	LLVMValueRef args[13];
	unsigned na = 0;
	for (int e = 0; e < 4; e++)
		args[na++] = aw[e];
	for (int e = 0; e < nb; e++)
		args[na++] = bw[e];
	for (int e = 0; e < 4; e++)
		args[na++] = cv[e];
	if (meta)
		args[na++] = meta;
	LLVMValueRef d = LLVMBuildCall2(c->b, meta ? a->sp_ty : a->mma_ty, meta ? a->sp : a->mma, args, na, "d");
	/* warp-synchronous: not to be moved across control flow */
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int e = 0; e < 4; e++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)e, ""), a->acc[j][e]);
}

/* A kept tile at p (its first row, its first k): 16 k at a time, the
 * weights' A fragment once for all the warp's column tiles. */
void tc_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	TcArg *a = arg;
	const Pir *ir = c->k->ir;
	const PirLoop *lk = &ir->loops[ir->nloops - 1];
	const int64_t len = lk->len, ks = lk->comp[0].stride;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LowerLoop ll;
	LLVMValueRef step = lower_loop_begin(c, &ll, ll_i64(c, 0), ll_i64(c, len / 16), "kstep");
	LLVMValueRef d0 = LLVMBuildNSWAdd(c->b, ll_mul(c, step, 16),
	                                  ll_mul(c, a->t, 2), "d0");
	/* A: rows g, g + 8; digits d0, d0 + 8 (pairs d, d + 1) */
	LLVMValueRef rowg = ll_mul(c, ll_add(c, p->row, a->g), len);
	LLVMValueRef aw[4];
	for (int e = 0; e < 4; e++) {
		LLVMValueRef at = ll_add(c, rowg, d0);
		at = ll_add(c, at, ll_i64(c, (e & 1 ? 8 * len : 0) + (e & 2 ? 8 : 0)));
		LLVMValueRef l = LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, a->i16, c->values, &at, 1, ""), "a");
		ptx_align(c, l, 4);
		aw[e] = l;
	}
	/* B: k of digits d0, d0 + 1 and d0 + 8, d0 + 9; column g of each tile */
	LLVMValueRef kk[4];
	for (int e = 0; e < 4; e++)
		kk[e] = LLVMBuildNSWAdd(
			c->b, p->k, ll_mul(c, ll_add(c, d0, ll_i64(c, (e & 1) + (e & 2 ? 8 : 0))), ks),
			"k");
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef col = LLVMBuildNSWAdd(c->b, a->nb, ll_add(c, a->g, ll_i64(c, 8 * j)), "n");
		LLVMValueRef bw[2] = {pack(c, x_half(c, a, kk[0], col), x_half(c, a, kk[1], col)),
		                      pack(c, x_half(c, a, kk[2], col), x_half(c, a, kk[3], col))};
		tc_mma(c, a, aw, bw, NULL, j);
	}
	lower_loop_end(c, &ll);
}

/* ll_urem or ll_udiv of a v known to be below 2^32 (a step of the walk, a
 * digit of it): in 32 bits, where a division by a constant that is not a
 * power of two is a multiply-high rather than a 64-bit sequence. */
static LLVMValueRef narrow_op(LowerCtx *c, LLVMValueRef v, int64_t d, bool rem)
{
	if ((d & (d - 1)) == 0)
		return rem ? ll_urem(c, v, d) : ll_udiv(c, v, d);
	LLVMValueRef n = LLVMBuildTrunc(c->b, v, c->i32, ""), dd = LLVMConstInt(c->i32, (unsigned long long)d, 0);
	return LLVMBuildZExt(c->b, rem ? LLVMBuildURem(c->b, n, dd, "") : LLVMBuildUDiv(c->b, n, dd, ""), c->i64, "");
}
LLVMValueRef tc_urem32(LowerCtx *c, LLVMValueRef v, int64_t d) { return narrow_op(c, v, d, true); }
LLVMValueRef tc_udiv32(LowerCtx *c, LLVMValueRef v, int64_t d) { return narrow_op(c, v, d, false); }

/* ---- the sparse tensor cores (plan->tc_sp) ----
 *
 * mma.sp.m16n8k32: A is 16 x 32 with 2 of every 4 k kept, passed
 * compressed (16 x 16, the dense A fragment's layout: lane (g, t) holds
 * rows g and g + 8, compressed columns 2t, 2t + 1 and 2t + 8, 2t + 9,
 * that is chunks t and t + 4 of 4 k) with metadata: the lanes t = 0 and 1
 * (sparsity selector 0) pass the 2-bit positions of the kept k, chunk c
 * in bits 4c .. 4c + 3 (first kept k in the low two), lane t of chunks 4t
 * .. 4t + 3, row g in the low 16 bits and row g + 8 in the high 16.  B is
 * 32 x 8: word r holds k 8r + 2t, 8r + 2t + 1 of column g.  In storage a
 * row's chunk c holds its 2 kept values at (row K0 + c) 2 and their
 * positions in the last loop's index at the same place; the device gets
 * both laid out for the warps (sp_layout, ptx_weights). */

/* The A fragment and the metadata of the warp's 16 rows for step kstep
 * (chunks 8 kstep .. 8 kstep + 7): row is the first row's place in
 * storage, through the m loop (a multiple of 16 there).  Both come in the
 * order the warp reads them (ptx_weights): the 16-row chunk R of the m
 * loop's instances (row / len 16-row chunks a full instance, row % len / 16
 * within it), step kstep, lane l's four words at ((R S + kstep) 32 + l) 4
 * of the values, S the steps of a row, and its metadata word at
 * (R S + kstep) 16 + 2 g + t % 2 of the last loop's index; padded past the
 * m loop's end and K0, so nothing is checked here. */
void tc_sp_fragments(LowerCtx *c, TcArg *a, LLVMValueRef row, LLVMValueRef kstep, LLVMValueRef aw[4],
                     LLVMValueRef *meta_out)
{
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const int64_t len = ir->loops[n - 3].len, steps = (ir->loops[n - 2].len + 7) / 8;
	LLVMValueRef chunk = len % 16 ? ll_add(c, ll_mul(c, ll_udiv(c, row, len), (len + 15) / 16), ll_udiv(c, ll_urem(c, row, len), 16))
	                              : ll_udiv(c, row, 16);
	LLVMValueRef at = ll_add(c, ll_mul(c, chunk, steps), kstep);
	LLVMValueRef lane = ll_add(c, ll_mul(c, a->g, 4), a->t);
	LLVMValueRef word = ll_mul(c, ll_add(c, ll_mul(c, at, 32), lane), 4);
	LLVMValueRef words = LLVMBuildGEP2(c->b, c->i32, c->values, &word, 1, "");
	LLVMValueRef v = lower_invariant(c, LLVMBuildLoad2(c->b, LLVMVectorType(c->i32, 4), words, "a"));
	ptx_align(c, v, 16);
	for (int e = 0; e < 4; e++)
		aw[e] = LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->i32, (unsigned)e, 0), "");
	LLVMValueRef mi = ll_add(c, ll_mul(c, at, 16), ll_add(c, ll_mul(c, a->g, 2), LLVMBuildAnd(c->b, a->t, ll_i64(c, 1), "")));
	*meta_out = lower_invariant(
		c, LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, c->i32, c->idx[n - 1], &mi, 1, ""), "meta"));
}

/* The warp's 16 rows at p (the first of them): 32 k (8 chunks) a step. */
void tc_sp_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	TcArg *a = arg;
	const Pir *ir = c->k->ir;
	const int n = ir->nloops;
	const int64_t K0 = ir->loops[n - 2].len;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LowerLoop ll;
	LLVMValueRef step = lower_loop_begin(c, &ll, ll_i64(c, 0), ll_i64(c, (K0 + 7) / 8), "kstep");
	LLVMValueRef aw[4], meta;
	tc_sp_fragments(c, a, p->row, step, aw, &meta);
	/* B: k 8r + 2t, + 1 of the step's 32, for each column tile */
	LLVMValueRef k0 = ll_add(c, p->k, ll_mul(c, step, 32));
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef col = ll_add(c, a->nb, ll_add(c, a->g, ll_i64(c, 8 * j)));
		LLVMValueRef bw[4];
		for (int r = 0; r < 4; r++) {
			LLVMValueRef kk = ll_add(c, k0, ll_add(c, ll_mul(c, a->t, 2), ll_i64(c, 8 * r)));
			bw[r] = pack(c, x_half(c, a, kk, col), x_half(c, a, ll_add(c, kk, ll_i64(c, 1)), col));
		}
		tc_mma(c, a, aw, bw, meta, j);
	}
	lower_loop_end(c, &ll);
}

/* ---- Hopper's warpgroup mma (plan->tc_wg) ---- */

/* A thread's accumulators under wgmma: tc_wgn / 2 of each wgmma's D, one D
 * (or transposed, one a 64 columns of the block). */
int tc_wg_nacc(const PtxPlan *plan) { return plan->tc_wgn / 2 * (plan->tc_wgt ? plan->tc_cols : 1); }

/* The wgmma of a step, in order: for each 16 k of it (tc_wgu), the block's
 * 64 rows x tc_wgn columns (A the weights, K-major; B X, N-major in layout
 * kn), or, transposed (tc_wgt), for each 64 columns p of the block's
 * tc_cols, those columns x the tc_wgn rows (A X's columns, M-major in
 * layout kn; B the weights, K-major), accumulators p tc_wgn / 2 on. */
int tc_wg_ops(const LowerKernel *k, const PtxPlan *plan, TcWgOp *ops)
{
	const int u = plan->tc_wgu, q = plan->tc_wgt ? plan->tc_cols : 1, kn = k->shape.layout == PAT_LAYOUT_KN;
	const int64_t wsub = tc_stage_a(plan) / u, xsub = 16 * (int64_t)plan->tc_cols * PTX_TC_COLS;
	int n = 0;
	for (int i = 0; i < u; i++)
		for (int p = 0; p < q; p++) {
			const int64_t w = wsub * i, x = tc_stage_a(plan) + xsub * i + 16 * PTX_TC_COLS * p;
			ops[n++] = plan->tc_wgt ? (TcWgOp){p * plan->tc_wgn / 2, plan->tc_wgn / 2, x, w, kn, 0}
			                        : (TcWgOp){0, plan->tc_wgn / 2, w, x, 0, kn};
		}
	return n;
}

/* wgmma.wait_group n (tc_wg): the warp waits until at most n of its
 * committed groups of wgmma are in flight.  The accumulators pass through
 * it (tc_wga), so that nothing reads or moves them before.  Emulated, the
 * host's patc_emu_wgwait, which carries out the wgmma that complete
 * (PATC_EMU_INJECT=wgwait: one group more left in flight than asked). */
void tc_wg_wait(LowerCtx *c, TcArg *a, int n)
{
	const PtxPlan *plan = a->plan;
	if (plan->emulate) {
		LLVMValueRef arg = LLVMConstInt(c->i32, (unsigned)(n + ptx_emu_inject("wgwait")), 0);
		ptx_emu_call(c, "patc_emu_wgwait", &c->i32, &arg, 1);
		return;
	}
	const int nacc = tc_wg_nacc(plan);
	LLVMValueRef args[64];
	for (int i = 0; i < nacc; i++)
		args[i] = LLVMBuildLoad2(c->b, c->f32, a->acc[i / 4][i % 4], "");
	LLVMValueRef d = LLVMBuildCall2(c->b, a->wgw_ty, a->wgw[n], args, (unsigned)nacc, "d");
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int i = 0; i < nacc; i++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)i, ""), a->acc[i / 4][i % 4]);
}

/* The wgmma step (tc_wg): one inline asm that orders the accumulators'
 * registers before it (wgmma.fence), issues the step's wgmma (tc_wg_ops;
 * D += A B, scale-d 1) as one group and, but under tc_wga, waits for them,
 * so that no other instruction touches the registers while they run; its
 * operands the accumulators, then the descriptors of A and B of each
 * wgmma, then scale-d.  Under tc_wga the waits are their own inline asm
 * (tc_wg_wait), the accumulators passing through each asm in the same
 * registers, so that ptxas can keep the groups in flight between them.
 * Emulated, the globals patc_emu_wgmma (PtxEmuWgmma), once per wgmma, and
 * patc_emu_wgcommit, the accumulators in ewacc from the first step to
 * the last wait. */
void tc_wg_init(LowerCtx *c, TcArg *a)
{
	const PtxPlan *plan = a->plan;
	const int nacc = tc_wg_nacc(plan);
	if (plan->emulate) {
		a->wg = ptx_emu_hook(c, "patc_emu_wgmma");
		LLVMTypeRef params[6] = {c->ptr, c->i64, c->i64, c->i64, c->ptr, c->i32};
		a->wg_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 6, 0);
		a->ewacc = lower_entry_alloca(c, LLVMArrayType2(c->f32, (uint64_t)nacc), "ewacc");
		for (int i = 0; i < nacc; i++) {
			LLVMValueRef ii = LLVMConstInt(c->i32, (unsigned)i, 0);
			LLVMBuildStore(c->b, LLVMConstReal(c->f32, 0.0), LLVMBuildGEP2(c->b, c->f32, a->ewacc, &ii, 1, ""));
		}
		return;
	}
	TcWgOp ops[TC_WG_MAXOPS];
	const int nops = tc_wg_ops(c->k, plan, ops);
	LLVMTypeRef f[64], params[64 + 2 * TC_WG_MAXOPS + 1];
	for (int i = 0; i < nacc; i++)
		f[i] = params[i] = c->f32;
	for (int i = 0; i < 2 * nops; i++)
		params[nacc + i] = c->i64;
	params[nacc + 2 * nops] = c->i32;
	a->wg_ty = LLVMFunctionType(LLVMStructTypeInContext(c->ctx, f, (unsigned)nacc, 0), params,
	                            (unsigned)(nacc + 2 * nops + 1), 0);
	const char *ty = c->k->shape.dtype == PAT_F16 ? "f16" : "bf16";
	char text[4096], cons[1024];
	int at = snprintf(text, sizeof text, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\nwgmma.fence.sync.aligned;\n",
	                  2 * nacc + 2 * nops);
	for (int i = 0; i < nops; i++) {
		const TcWgOp *o = &ops[i];
		at += snprintf(text + at, sizeof text - (size_t)at, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
		               2 * o->nacc, ty, ty);
		for (int j = 0; j < o->nacc; j++)
			at += snprintf(text + at, sizeof text - (size_t)at, "%s$%d", j ? "," : "", o->acc + j);
		at += snprintf(text + at, sizeof text - (size_t)at, "}, $%d, $%d, p, 1, 1, %d, %d;\n", 2 * nacc + 2 * i,
		               2 * nacc + 2 * i + 1, o->trans_a, o->trans_b);
	}
	snprintf(text + at, sizeof text - (size_t)at, "wgmma.commit_group.sync.aligned;\n%s}",
	         plan->tc_wga ? "" : "wgmma.wait_group.sync.aligned 0;\n");
	int cat = 0;
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "=f,");
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "%d,", i);
	for (int i = 0; i < 2 * nops; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "l,");
	snprintf(cons + cat, sizeof cons - (size_t)cat, "r");
	a->wg = LLVMGetInlineAsm(a->wg_ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	if (!plan->tc_wga)
		return;
	/* the waits: the accumulators in and out, each tied to its register */
	a->wgw_ty = LLVMFunctionType(LLVMStructTypeInContext(c->ctx, f, (unsigned)nacc, 0), f, (unsigned)nacc, 0);
	cat = 0;
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "=f,");
	for (int i = 0; i < nacc; i++)
		cat += snprintf(cons + cat, sizeof cons - (size_t)cat, "%s%d", i ? "," : "", i);
	for (int n = 0; n < 2; n++) {
		snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", n);
		a->wgw[n] = LLVMGetInlineAsm(a->wgw_ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT,
		                             0);
	}
}
