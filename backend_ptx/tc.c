/* tc.c - the tensor-core mapping of the NVPTX backend; see ptx.h.
 *
 * One warp computes a 16 x PTX_TC_COLS tile of C with mma.sync.m16n8k16
 * (f16 or bf16 inputs, f32 accumulators).  Lane l holds, per the PTX ISA's
 * fragment layouts, with g = l / 4 and t = l % 4:
 *   A (16 x 16 weights): rows g and g + 8, k pairs 2t, 2t + 1 and 2t + 8,
 *     2t + 9, four 32-bit words of two 16-bit values each;
 *   B (16 x 8 of X): k pairs 2t, 2t + 1 and 2t + 8, 2t + 9 of column g;
 *   C (16 x 8): rows g and g + 8, columns 2t and 2t + 1.
 * The weights of a kept tile are stored row by row, k innermost, so each
 * A word is one aligned 32-bit load; each B value is a 16-bit load of X
 * (K x N in layout kn, N x K in layout nk; columns past N and padded k read
 * 0), and C is M x N or N x M likewise. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include <stdio.h>
#include <string.h>

static LLVMValueRef i64c(LowerCtx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

static bool dense_on(const PirLoop *l, PirAxis axis)
{
	return l->ncomp == 1 && l->comp[0].axis == axis && !pir_loop_is_perforated(l) && l->len % 16 == 0;
}

bool ptx_tc_plan(const LowerKernel *k, PtxPlan *plan)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	plan->tc = false;
	if (k->dtype == PAT_F32) {
		plan->tc_why = "CUDA cores in f32 (dtype f16 or bf16 takes the tensor cores where the pattern keeps "
		               "dense 16 x 16 tiles)";
		return false;
	}
	bool ok = n >= 2 && dense_on(&ir->loops[n - 2], PIR_AXIS_M) && dense_on(&ir->loops[n - 1], PIR_AXIS_K);
	for (int i = 0; ok && i < n - 2; i++)
		ok = ir->loops[i].ncomp == 1;
	if (!ok) {
		plan->tc_why = "CUDA cores in f32: the tensor cores need kept tiles that are dense 16 x 16 tiles of W "
		               "(the nest ending in a dense m loop and a dense k loop, each a multiple of 16 long, "
		               "and no loop along both axes)";
		return false;
	}
	plan->tc = true;
	plan->tc_why = "tensor cores: every kept tile of W is dense 16 x 16 tiles, one mma.sync.m16n8k16 per 16 k "
	               "and 8 columns, f32 accumulators";
	plan->why = plan->tc_why;
	plan->s = (PtxSchedule){32, PTX_TC_WARPS, PTX_TC_COLS, 16, 1, 0};
	plan->group = -1;
	plan->split = -1;
	plan->nsplit = 1;
	plan->nspread = n - 1;
	plan->outer = -1;
	plan->nsets = ir->loops[n - 2].len / 16;
	for (int i = 0; i < n - 2; i++) {
		const PirLoop *l = &ir->loops[i];
		if (pir_loop_has_axis(l, PIR_AXIS_M)) {
			plan->nsets *= l->nnz;
			plan->zero |= pir_loop_is_perforated(l); /* rows no warp writes */
		}
	}
	return true;
}

typedef struct TcArg {
	const PtxPlan *plan;
	LLVMTypeRef i16;
	LLVMValueRef g, t;   /* the lane's group and thread in it (i64) */
	LLVMValueRef nb;     /* the warp's first column */
	LLVMValueRef acc[PTX_TC_TILES][4];
	LLVMValueRef mrow;   /* alloca: the m of the warp's first row */
	LLVMValueRef mma;    /* the inline asm, or (emulation) the global patc_emu_mma */
	LLVMTypeRef mma_ty;
	LLVMValueRef ea, eb, ec; /* emulation: the fragments passed to the host */
} TcArg;

/* X[kk, n] as the low 16 bits of an i32; 0 past K or past the columns. */
static LLVMValueRef x_half(LowerCtx *c, const TcArg *a, LLVMValueRef kk, LLVMValueRef n)
{
	const LowerKernel *k = c->k;
	LLVMValueRef ok = LLVMBuildAnd(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, kk, i64c(c, k->K), ""),
	                               LLVMBuildICmp(c->b, LLVMIntSLT, n, c->n1, ""), "");
	LLVMValueRef at = k->layout == PAT_LAYOUT_KN
	                          ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, kk, i64c(c, k->N), ""), n, "")
	                          : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, n, i64c(c, k->K), ""), kk, "");
	at = LLVMBuildSelect(c->b, ok, at, i64c(c, 0), "");
	LLVMValueRef v = LLVMBuildLoad2(c->b, a->i16, LLVMBuildGEP2(c->b, a->i16, c->X, &at, 1, ""), "x");
	v = LLVMBuildSelect(c->b, ok, v, LLVMConstInt(a->i16, 0, 0), "");
	return LLVMBuildZExt(c->b, v, c->i32, "");
}

/* Two 16-bit values in one word: lo in the low half. */
static LLVMValueRef pack(LowerCtx *c, LLVMValueRef lo, LLVMValueRef hi)
{
	return LLVMBuildOr(c->b, lo, LLVMBuildShl(c->b, hi, LLVMConstInt(c->i32, 16, 0), ""), "pair");
}

/* acc[j] = A B + acc[j]. */
static void tc_mma(LowerCtx *c, TcArg *a, LLVMValueRef *aw, LLVMValueRef *bw, int j)
{
	LLVMValueRef cv[4];
	for (int e = 0; e < 4; e++)
		cv[e] = LLVMBuildLoad2(c->b, c->f32, a->acc[j][e], "");
	if (a->plan->emulate) {
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, aw[e], LLVMBuildGEP2(c->b, c->i32, a->ea, &ie, 1, ""));
			LLVMBuildStore(c->b, cv[e], LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""));
			if (e < 2)
				LLVMBuildStore(c->b, bw[e], LLVMBuildGEP2(c->b, c->i32, a->eb, &ie, 1, ""));
		}
		LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, a->mma, "mma");
		LLVMValueRef args[4] = {a->ea, a->eb, a->ec,
		                        LLVMConstInt(c->i32, c->k->dtype == PAT_F16, 0)};
		LLVMBuildCall2(c->b, a->mma_ty, fn, args, 4, "");
		for (int e = 0; e < 4; e++) {
			LLVMValueRef ie = LLVMConstInt(c->i32, (unsigned)e, 0);
			LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, a->ec, &ie, 1, ""), ""),
			               a->acc[j][e]);
		}
		return;
	}
	LLVMValueRef args[10] = {aw[0], aw[1], aw[2], aw[3], bw[0], bw[1], cv[0], cv[1], cv[2], cv[3]};
	LLVMValueRef d = LLVMBuildCall2(c->b, a->mma_ty, a->mma, args, 10, "d");
	/* warp-synchronous: not to be moved across control flow */
	unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
	LLVMAddCallSiteAttribute(d, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->ctx, conv, 0));
	for (int e = 0; e < 4; e++)
		LLVMBuildStore(c->b, LLVMBuildExtractValue(c->b, d, (unsigned)e, ""), a->acc[j][e]);
}

/* A kept tile at p (its first row, its first k): 16 k at a time, the
 * weights' A fragment once for all the warp's column tiles. */
static void tc_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	TcArg *a = arg;
	const Pir *ir = c->k->ir;
	const PirLoop *lk = &ir->loops[ir->nloops - 1];
	const int64_t len = lk->len, ks = lk->comp[0].stride;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LowerLoop ll;
	LLVMValueRef step = lower_loop_begin(c, &ll, i64c(c, 0), i64c(c, len / 16), "kstep");
	LLVMValueRef d0 = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, step, i64c(c, 16), ""),
	                                  LLVMBuildNSWMul(c->b, a->t, i64c(c, 2), ""), "d0");
	/* A: rows g, g + 8; digits d0, d0 + 8 (pairs d, d + 1) */
	LLVMValueRef rowg = LLVMBuildNSWMul(c->b, LLVMBuildNSWAdd(c->b, p->row, a->g, ""), i64c(c, len), "");
	LLVMValueRef aw[4];
	for (int e = 0; e < 4; e++) {
		LLVMValueRef at = LLVMBuildNSWAdd(c->b, rowg, d0, "");
		at = LLVMBuildNSWAdd(c->b, at, i64c(c, (e & 1 ? 8 * len : 0) + (e & 2 ? 8 : 0)), "");
		LLVMValueRef l = LLVMBuildLoad2(c->b, c->i32, LLVMBuildGEP2(c->b, a->i16, c->values, &at, 1, ""), "a");
		LLVMSetAlignment(l, 4);
		aw[e] = l;
	}
	/* B: k of digits d0, d0 + 1 and d0 + 8, d0 + 9; column g of each tile */
	LLVMValueRef kk[4];
	for (int e = 0; e < 4; e++)
		kk[e] = LLVMBuildNSWAdd(
			c->b, p->k, LLVMBuildNSWMul(c->b, LLVMBuildNSWAdd(c->b, d0, i64c(c, (e & 1) + (e & 2 ? 8 : 0)), ""),
			                            i64c(c, ks), ""),
			"k");
	for (int j = 0; j < PTX_TC_TILES; j++) {
		LLVMValueRef col = LLVMBuildNSWAdd(c->b, a->nb, LLVMBuildNSWAdd(c->b, a->g, i64c(c, 8 * j), ""), "n");
		LLVMValueRef bw[2] = {pack(c, x_half(c, a, kk[0], col), x_half(c, a, kk[1], col)),
		                      pack(c, x_half(c, a, kk[2], col), x_half(c, a, kk[3], col))};
		tc_mma(c, a, aw, bw, j);
	}
	lower_loop_end(c, &ll);
}

void ptx_tc_body(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	TcArg a = {.plan = plan, .i16 = LLVMInt16TypeInContext(c->ctx)};
	LLVMValueRef lane = ptx_sreg(c, "tid.x"), warp = ptx_sreg(c, "tid.y");
	LLVMValueRef set = ptx_sreg(c, "ctaid.x"), cy = ptx_sreg(c, "ctaid.y");
	a.g = LLVMBuildUDiv(c->b, lane, i64c(c, 4), "g");
	a.t = LLVMBuildURem(c->b, lane, i64c(c, 4), "t");
	a.nb = LLVMBuildNSWAdd(
		c->b, c->n0,
		LLVMBuildNSWMul(c->b, LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, cy, i64c(c, PTX_TC_WARPS), ""), warp, ""),
		                i64c(c, PTX_TC_COLS), ""),
		"nb");
	/* a warp past the columns has nothing to do (uniform in the warp) */
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a.nb, c->n1, ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);

	/* the set's digits, innermost first: the 16-row chunk of the last m
	 * loop, then the loops along m before it */
	const PirLoop *lm = &ir->loops[n - 2];
	LLVMValueRef rest = set;
	LLVMValueRef chunk = LLVMBuildURem(c->b, rest, i64c(c, lm->len / 16), "chunk");
	rest = LLVMBuildUDiv(c->b, rest, i64c(c, lm->len / 16), "");
	c->lo[n - 2] = LLVMBuildNSWMul(c->b, chunk, i64c(c, 16), "mlo");
	c->hi[n - 2] = LLVMBuildNSWAdd(c->b, c->lo[n - 2], i64c(c, 1), "mhi");
	for (int i = n - 3; i >= 0; i--) {
		const PirLoop *l = &ir->loops[i];
		if (!pir_loop_has_axis(l, PIR_AXIS_M))
			continue;
		c->lo[i] = LLVMBuildURem(c->b, rest, i64c(c, l->nnz), "");
		c->hi[i] = LLVMBuildNSWAdd(c->b, c->lo[i], i64c(c, 1), "");
		rest = LLVMBuildUDiv(c->b, rest, i64c(c, l->nnz), "");
	}

	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int j = 0; j < PTX_TC_TILES; j++)
		for (int e = 0; e < 4; e++) {
			a.acc[j][e] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[j][e]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, i64c(c, k->M), a.mrow);
	if (plan->emulate) {
		a.mma = LLVMGetNamedGlobal(c->mod, "patc_emu_mma");
		if (!a.mma) {
			a.mma = LLVMAddGlobal(c->mod, c->ptr, "patc_emu_mma");
			LLVMSetInitializer(a.mma, LLVMConstNull(c->ptr));
		}
		LLVMTypeRef params[4] = {c->ptr, c->ptr, c->ptr, c->i32};
		a.mma_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 4, 0);
		a.ea = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "ea");
		a.eb = lower_entry_alloca(c, LLVMArrayType2(c->i32, 2), "eb");
		a.ec = lower_entry_alloca(c, LLVMArrayType2(c->f32, 4), "ec");
	} else {
		LLVMTypeRef f4[4] = {c->f32, c->f32, c->f32, c->f32};
		LLVMTypeRef ret = LLVMStructTypeInContext(c->ctx, f4, 4, 0);
		LLVMTypeRef params[10] = {c->i32, c->i32, c->i32, c->i32, c->i32, c->i32, c->f32, c->f32, c->f32, c->f32};
		a.mma_ty = LLVMFunctionType(ret, params, 10, 0);
		char text[160];
		const char *ty = k->dtype == PAT_F16 ? "f16" : "bf16";
		snprintf(text, sizeof text,
		         "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
		         "{$10,$11,$12,$13};",
		         ty, ty);
		static const char cons[] = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
		a.mma = LLVMGetInlineAsm(a.mma_ty, text, strlen(text), cons, sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT,
		                         0);
	}

	LowerPoint start = {i64c(c, 0), i64c(c, 0), i64c(c, 0)};
	lower_nest(c, 0, n - 1, &start, tc_point, &a);

	/* C: rows g and g + 8, columns 2t and 2t + 1 of each tile */
	const int64_t sm = lm->comp[0].stride;
	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	for (int h = 0; h < 2; h++) {
		LLVMValueRef m = LLVMBuildNSWAdd(
			c->b, m0, LLVMBuildNSWMul(c->b, LLVMBuildNSWAdd(c->b, a.g, i64c(c, 8 * h), ""), i64c(c, sm), ""), "m");
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, i64c(c, k->M), "");
		for (int j = 0; j < PTX_TC_TILES; j++)
			for (int e = 0; e < 2; e++) {
				LLVMValueRef col = LLVMBuildNSWAdd(
					c->b, a.nb,
					LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, a.t, i64c(c, 2), ""), i64c(c, 8 * j + e), ""),
					"n");
				LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
				LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
				LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, mok, LLVMBuildICmp(c->b, LLVMIntSLT, col, c->n1, ""), ""),
				                st, next);
				LLVMPositionBuilderAtEnd(c->b, st);
				LLVMValueRef at = k->layout == PAT_LAYOUT_KN
				                          ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, m, i64c(c, k->N), ""), col, "")
				                          : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, col, i64c(c, k->M), ""), m, "");
				LLVMBuildStore(c->b, LLVMBuildLoad2(c->b, c->f32, a.acc[j][2 * h + e], ""),
				               LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, ""));
				LLVMBuildBr(c->b, next);
				LLVMPositionBuilderAtEnd(c->b, next);
			}
	}
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}
