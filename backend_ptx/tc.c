/* SPDX-License-Identifier: MIT */
/* tc.c - the tensor-core mapping of the NVPTX backend; see ptx.h.
 *
 * One warp computes a 16 x PTX_TC_COLS tile of C with mma.sync.m16n8k16
 * (f16 or bf16 inputs, f32 accumulators).  Lane l holds, per the PTX ISA's
 * fragment layouts, with g = l / 4 and t = l % 4:
 *   A (16 x 16 weights): rows g and g + 8, k pairs 2t, 2t + 1 and 2t + 8,
 *     2t + 9, four 32-bit words of two 16-bit values each;
 *   B (16 x 8 of X): k pairs 2t, 2t + 1 and 2t + 8, 2t + 9 of column g;
 *   C (16 x 8): rows g and g + 8, columns 2t and 2t + 1.
 * The weights of a kept tile are stored row by row, k innermost.  In the
 * plain form each A word is one aligned 32-bit load and each B value a
 * 16-bit load of X (K x N in layout kn, N x K in layout nk; columns past N
 * and padded k read 0).  Staged, both come from shared memory through
 * ldmatrix.x4, whose four 8 x 8 matrices land in exactly these layouts:
 * for A, rows 0-7 and 8-15 of k 0-7, then of k 8-15; for B, k 0-7 and
 * 8-15 of two column tiles, transposed where X's rows run along the
 * columns (layout kn).  C is M x N or N x M likewise.
 *
 * This file holds the kernel body (ptx_tc_body: the warp's place, its
 * accumulators, the walk, C) and the weights on the device (ptx_weights);
 * tc_plan.c the plan, tc_mma.c the warp instructions and the plain walks,
 * tc_stage.c the staged walk; tc_impl.h what they share. */
#define _POSIX_C_SOURCE 200809L
#include "tc_impl.h"

#include "../weights/tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C[m, col] (in layout nk, C[col, m]) = the accumulator acc, or += with
 * atomics into the zeroed C (a part of a split walk), where ok and col is
 * one of the kernel's columns; with acc1 (not NULL), also C[m, col + 1] =
 * acc1 in the same 8-byte store, or the same vector red (layout kn, N
 * even, no atomics or vred: col is even, and with n1 = N, as the kernel
 * is launched, col + 1 is one of the columns where col is). */
static void tc_store2(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef acc, LLVMValueRef acc1,
                      LLVMValueRef ok)
{
	LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
	LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
	LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, ok, LLVMBuildICmp(c->b, LLVMIntSLT, col, c->n1, ""), ""), st, next);
	LLVMPositionBuilderAtEnd(c->b, st);
	const bool atomic = ((const PtxPlan *)c->backend)->atomic;
	if (acc1 && !atomic) { /* (C's final values: the epilogue, ptx_c_final) */
		LLVMTypeRef v2 = LLVMVectorType(c->f32, 2);
		LLVMValueRef v = LLVMGetUndef(v2);
		LLVMValueRef col1 = ll_add(c, col, ll_i64(c, 1));
		v = LLVMBuildInsertElement(c->b, v, ptx_c_final(c, m, col, LLVMBuildLoad2(c->b, c->f32, acc, "")),
		                           LLVMConstInt(c->i32, 0, 0), "");
		v = LLVMBuildInsertElement(c->b, v, ptx_c_final(c, m, col1, LLVMBuildLoad2(c->b, c->f32, acc1, "")),
		                           LLVMConstInt(c->i32, 1, 0), "");
		ptx_align(c, LLVMBuildStore(c->b, v, ptx_c_ptr(c, m, col)), 8);
	} else if (acc1) {
		LLVMValueRef v[2] = {LLVMBuildLoad2(c->b, c->f32, acc, ""), LLVMBuildLoad2(c->b, c->f32, acc1, "")};
		ptx_c_add(c, ptx_c_ptr(c, m, col), v, 2);
	} else {
		LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, acc, "");
		ptx_c_put(c, ptx_c_ptr(c, m, col), atomic ? v : ptx_c_final(c, m, col, v));
	}
	LLVMBuildBr(c->b, next);
	LLVMPositionBuilderAtEnd(c->b, next);
}

static void tc_store(LowerCtx *c, LLVMValueRef m, LLVMValueRef col, LLVMValueRef acc, LLVMValueRef ok)
{
	tc_store2(c, m, col, acc, NULL, ok);
}

/* C under transposed wgmma (tc_wgt): the block's rows from m0 (m stride
 * sm), warp wr's columns of each 64 p of the block's, in the accumulators
 * of D^T = X^T W^T: lane (g, t) has, from p tc_wgn / 2 on, for each 8 rows
 * i, columns 16 wr + g and + 8, rows 8i + 2t and + 1. */
static void tc_wgt_store(LowerCtx *c, const TcArg *a, LLVMValueRef m0, LLVMValueRef wr, int64_t sm)
{
	const PtxPlan *plan = a->plan;
	const int half = plan->tc_wgn / 2;
	for (int p = 0; p < plan->tc_cols; p++)
		for (int e = 0; e < half; e++) {
			const int r = 8 * (e / 4) + (e & 1);
			LLVMValueRef col = ll_add(c, a->nb, ll_add(c, ll_mul(c, wr, 16), ll_add(c, a->g, ll_i64(c, 64 * p + (e & 2 ? 8 : 0)))));
			LLVMValueRef m = ll_add(c, m0, ll_mul(c, ll_add(c, ll_mul(c, a->t, 2), ll_i64(c, r)), sm));
			const int i = p * half + e;
			tc_store(c, m, col, a->acc[i / 4][i % 4], LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, c->k->shape.M), ""));
		}
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
	a.g = LLVMBuildUDiv(c->b, lane, ll_i64(c, 4), "g");
	a.t = LLVMBuildURem(c->b, lane, ll_i64(c, 4), "t");
	/* the block's warps: tc_rows / tc_wm of tc_wm chunks of rows each x tc_cols
	 * column slices; a warpgroup (tc_wg): a chunk each, all the columns */
	LLVMValueRef wr = plan->tc_wg ? warp : ll_udiv(c, warp, plan->tc_cols);
	LLVMValueRef wc = plan->tc_wg ? ll_i64(c, 0) : ll_urem(c, warp, plan->tc_cols);
	/* 8-column tiles a chunk of the warp's (transposed: the accumulators in 4s) */
	const int tiles = plan->tc_wgt ? tc_wg_nacc(plan) / 4 : plan->tc_wg ? plan->tc_wgn / 8 : PTX_TC_TILES;
	LLVMValueRef ncol = ll_add(c, c->n0, ll_mul(c, cy, (int64_t)plan->tc_cols * PTX_TC_COLS));
	a.nb = LLVMBuildNSWAdd(c->b, ncol, ll_mul(c, wc, PTX_TC_COLS), "nb");
	LLVMBasicBlockRef done = NULL;
	if (!plan->stage) {
		/* a warp past the columns has nothing to do (uniform in the warp);
		 * staged, it still copies its share for the others */
		LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
		done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, a.nb, c->n1, ""), work, done);
		LLVMPositionBuilderAtEnd(c->b, work);
	}

	/* the set's digits, innermost first: the block's chunks of the dense m
	 * loop (the last two loops follow it when sparse, the last one else),
	 * then the loops along m before it */
	const int lmi = n - (plan->tc_sp ? 3 : 2);
	const PirLoop *lm = &ir->loops[lmi];
	const int64_t groups = (lm->len + 15) / 16 / plan->tc_rows;
	LLVMValueRef rest = set;
	LLVMValueRef chunk = ll_mul(c, ll_urem(c, rest, groups), plan->tc_rows);
	rest = ll_udiv(c, rest, groups);
	c->lo[lmi] = LLVMBuildNSWMul(c->b, chunk, ll_i64(c, 16), "mlo");
	c->hi[lmi] = LLVMBuildNSWAdd(c->b, c->lo[lmi], ll_i64(c, 1), "mhi");
	for (int i = lmi - 1; i >= 0; i--) {
		const PirLoop *l = &ir->loops[i];
		if (!pir_loop_has_axis(l, PIR_AXIS_M))
			continue;
		c->lo[i] = ll_urem(c, rest, l->nnz);
		c->hi[i] = ll_add(c, c->lo[i], ll_i64(c, 1));
		rest = ll_udiv(c, rest, l->nnz);
	}

	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int j = 0; j < plan->tc_wm * tiles; j++)
		for (int e = 0; e < 4; e++) {
			a.acc[j][e] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[j][e]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, ll_i64(c, k->shape.M), a.mrow);
	for (int ci = 0; ci < plan->tc_wm && plan->tc_sp && plan->stage; ci++) {
		for (int e = 0; e < 4; e++)
			a.spa[ci][e] = lower_entry_alloca(c, c->i32, "spa");
		a.spm[ci] = lower_entry_alloca(c, c->i32, "spm");
	}
	if (plan->tc_wg) {
		tc_wg_init(c, &a);
	} else if (plan->emulate) {
		a.mma = ptx_emu_hook(c, "patc_emu_mma");
		LLVMTypeRef params[4] = {c->ptr, c->ptr, c->ptr, c->i32};
		a.mma_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, 4, 0);
		a.ea = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "ea");
		a.eb = lower_entry_alloca(c, LLVMArrayType2(c->i32, 4), "eb");
		a.ec = lower_entry_alloca(c, LLVMArrayType2(c->f32, 4), "ec");
		if (plan->tc_sp) {
			a.sp = ptx_emu_hook(c, "patc_emu_mmasp");
			LLVMTypeRef sparams[5] = {c->ptr, c->ptr, c->ptr, c->i32, c->i32};
			a.sp_ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), sparams, 5, 0);
		}
	} else {
		LLVMTypeRef f4[4] = {c->f32, c->f32, c->f32, c->f32};
		LLVMTypeRef ret = LLVMStructTypeInContext(c->ctx, f4, 4, 0);
		LLVMTypeRef params[10] = {c->i32, c->i32, c->i32, c->i32, c->i32, c->i32, c->f32, c->f32, c->f32, c->f32};
		a.mma_ty = LLVMFunctionType(ret, params, 10, 0);
		char text[160];
		const char *ty = k->shape.dtype == PAT_F16 ? "f16" : "bf16";
		snprintf(text, sizeof text,
		         "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
		         "{$10,$11,$12,$13};",
		         ty, ty);
		static const char cons[] = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f";
		a.mma = LLVMGetInlineAsm(a.mma_ty, text, strlen(text), cons, sizeof cons - 1, 0, 0, LLVMInlineAsmDialectATT,
		                         0);
		if (plan->tc_sp) { /* sparsity selector 0: lanes t = 0, 1 pass the metadata */
			LLVMTypeRef sparams[13] = {c->i32, c->i32, c->i32, c->i32, c->i32, c->i32, c->i32,
			                           c->i32, c->f32, c->f32, c->f32, c->f32, c->i32};
			a.sp_ty = LLVMFunctionType(ret, sparams, 13, 0);
			snprintf(text, sizeof text,
			         "mma.sp.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, "
			         "{$8,$9,$10,$11}, {$12,$13,$14,$15}, $16, 0x0;",
			         ty, ty);
			static const char scons[] = "=f,=f,=f,=f,r,r,r,r,r,r,r,r,f,f,f,f,r";
			a.sp = LLVMGetInlineAsm(a.sp_ty, text, strlen(text), scons, sizeof scons - 1, 0, 0,
			                        LLVMInlineAsmDialectATT, 0);
		}
	}

	if (plan->stage) {
		TcStage st = {.ncol = ncol};
		tc_stage_init(c, plan, &st);
		st.tid = ll_add(c, ll_mul(c, warp, 32), lane);
		st.nthreads = 32 * (int64_t)plan->s.by;
		for (int i = 0; i < n - 1; i++)
			st.digit[i] = c->lo[i];
		st.begin = ll_i64(c, 0), st.end = ll_i64(c, plan->tc_steps);
		if (plan->nsplit > 1) { /* the block's part of the walk (tc_plan_split) */
			LLVMValueRef z = ptx_sreg(c, "ctaid.z");
			st.begin = ll_udiv(c, ll_mul(c, z, plan->tc_steps), plan->nsplit);
			st.end = ll_udiv(c, ll_mul(c, ll_add(c, z, ll_i64(c, 1)), plan->tc_steps), plan->nsplit);
		}
		LLVMValueRef row, m, kk;
		tc_locate(c, st.digit, ll_i64(c, 0), &row, &m, &kk, NULL);
		/* the warp's first row: chunk wr tc_wm of the block's */
		LLVMBuildStore(c->b, plan->tc_wgt ? m : ll_add(c, m, ll_mul(c, wr, 16 * plan->tc_wm * lm->comp[0].stride)), a.mrow);
		tc_staged_walk(c, &a, &st, lane, wr, wc);
	} else if (plan->tc_sp) {
		LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
		lower_nest(c, 0, n - 2, &start, tc_sp_point, &a);
	} else {
		LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
		lower_nest(c, 0, n - 1, &start, tc_point, &a);
	}

	/* C: rows g and g + 8 of each of the warp's chunks, columns 2t and
	 * 2t + 1 of each tile */
	const int64_t sm = lm->comp[0].stride;
	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	if (plan->tc_wgt)
		tc_wgt_store(c, &a, m0, wr, sm);
	/* rows 8 half + g: chunk half / 2, h = half % 2 */
	for (int half = 0; half < 2 * plan->tc_wm && !plan->tc_wgt; half++) {
		const int ci = half / 2, h = half % 2;
		const int64_t r = 8 * half;
		LLVMValueRef m = ll_add(c, m0, ll_mul(c, ll_add(c, a.g, ll_i64(c, r)), sm));
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->shape.M), "");
		if (lm->len % 16) /* the last chunk's rows past the m loop's end: not the warp's */
			mok = LLVMBuildAnd(c->b, mok,
			                   LLVMBuildICmp(c->b, LLVMIntSLT,
			                                 ll_add(c, ll_add(c, c->lo[lmi], ll_mul(c, wr, 16 * plan->tc_wm)),
			                                     ll_add(c, a.g, ll_i64(c, r))),
			                                 ll_i64(c, lm->len), ""),
			                   "");
		/* a lane's two adjacent columns in one store where C's rows allow */
		const bool pair = k->shape.layout == PAT_LAYOUT_KN && ptx_n_multiple(k, 2) && (!plan->atomic || plan->vred);
		for (int j = 0; j < tiles; j++)
			for (int e = 0; e < 2; e += pair ? 2 : 1) {
				LLVMValueRef col = LLVMBuildNSWAdd(
					c->b, a.nb,
					ll_add(c, ll_mul(c, a.t, 2), ll_i64(c, 8 * j + e)),
					"n");
				LLVMValueRef *acc = a.acc[ci * tiles + j];
				tc_store2(c, m, col, acc[2 * h + e], pair ? acc[2 * h + 1] : NULL, mok);
			}
	}
	if (done) {
		LLVMBuildBr(c->b, done);
		LLVMPositionBuilderAtEnd(c->b, done);
	}
}

/* ---- the weights on the device (ptx_weights) ---- */

/* The sparse tensor cores' operands in the order tc_sp_fragments reads them,
 * from the packed 16-bit values v and the last loop's index pos (rows of
 * K0 chunks, 2 kept values or positions a chunk): nchunks 16-row chunks
 * (those of each instance of the m loop, the last padded) x steps of 8
 * chunks; for each, 32 lanes' 4 words of A (a, 16-bit halves) and the 16
 * metadata words of lanes (g, t = 0, 1) (meta).  Rows past the m loop's end
 * and chunks past K0 read zero values at positions 0 and 1. */
static void sp_layout(const Pir *ir, const uint16_t *v, const int32_t *pos, int64_t nchunks, uint16_t *a,
                      uint32_t *meta)
{
	const int n = ir->nloops;
	const int64_t len = ir->loops[n - 3].len, K0 = ir->loops[n - 2].len, per = (len + 15) / 16, steps = (K0 + 7) / 8;
	for (int64_t r = 0; r < nchunks; r++)
		for (int64_t s = 0; s < steps; s++) {
			const int64_t at = r * steps + s, m0 = r % per * 16, row0 = r / per * len;
			for (int l = 0; l < 32; l++)
				for (int e = 0; e < 4; e++) {
					const int64_t m = m0 + l / 4 + (e & 1 ? 8 : 0), ch = 8 * s + l % 4 + (e & 2 ? 4 : 0);
					const int64_t src = ((row0 + m) * K0 + ch) * 2;
					for (int h = 0; h < 2; h++)
						a[((at * 32 + l) * 4 + e) * 2 + h] = m < len && ch < K0 ? v[src + h] : 0;
				}
			for (int g = 0; g < 8; g++)
				for (int t = 0; t < 2; t++) {
					uint32_t word = 0;
					for (int h = 0; h < 2; h++)
						for (int q = 0; q < 4; q++) {
							const int64_t m = m0 + g + 8 * h, ch = 8 * s + 4 * t + q;
							const int64_t src = ((row0 + m) * K0 + ch) * 2;
							const uint32_t nib = m < len && ch < K0
							                             ? (uint32_t)(pos[src] & 3) | (uint32_t)(pos[src + 1] & 3) << 2
							                             : 4u;
							word |= nib << (4 * q + 16 * h);
						}
					meta[at * 16 + 2 * g + t] = word;
				}
		}
}

bool ptx_weights(const LowerKernel *k, const PtxPlan *plan, const float *values, int64_t nvalues,
                 const PruneMask *mask, PtxWeights *w)
{
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	memset(w, 0, sizeof *w);
	for (int l = 0; l < n; l++)
		if (mask->index[l])
			w->index[l] = mask->index[l],
			w->index_bytes[l] = (size_t)(mask->rows[l] * ir->loops[l].nnz) * sizeof(int32_t);
	if (!plan->tc) {
		w->values = values, w->values_bytes = (size_t)nvalues * sizeof(float);
		return true;
	}
	uint16_t *v16 = malloc((size_t)(nvalues ? nvalues : 1) * sizeof *v16);
	if (!v16)
		return false;
	for (int64_t i = 0; i < nvalues; i++)
		v16[i] = k->shape.dtype == PAT_F16 ? f32_to_fp16(values[i]) : f32_to_bf16(values[i]);
	if (!plan->tc_sp) {
		w->values = w->own[0] = v16, w->values_bytes = (size_t)nvalues * sizeof *v16;
		return true;
	}
	const int64_t len = ir->loops[n - 3].len, K0 = ir->loops[n - 2].len;
	const int64_t nchunks = nvalues / (2 * K0) / len * ((len + 15) / 16), at = nchunks * ((K0 + 7) / 8);
	uint16_t *a = malloc((size_t)(at ? at : 1) * 256 * sizeof *a);
	uint32_t *meta = malloc((size_t)(at ? at : 1) * 16 * sizeof *meta);
	if (!a || !meta) {
		free(v16), free(a), free(meta);
		return false;
	}
	sp_layout(ir, v16, mask->index[n - 1], nchunks, a, meta);
	free(v16);
	w->values = w->own[0] = a, w->values_bytes = (size_t)at * 256 * sizeof *a;
	w->index[n - 1] = (const int32_t *)(w->own[1] = meta), w->index_bytes[n - 1] = (size_t)at * 16 * sizeof *meta;
	return true;
}

void ptx_weights_free(PtxWeights *w)
{
	free(w->own[0]), free(w->own[1]);
	memset(w, 0, sizeof *w);
}
