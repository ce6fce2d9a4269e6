/* SPDX-License-Identifier: MIT */
/* ptx_body.c - the CUDA-core kernel body: the thread's rows and columns,
 * the FMAs of a point, the staged walk (its copies are ptx_stage.c's) and
 * the tile written to C, or summed through the workspace (wsum); and
 * ptx_hooks, which picks this body or the tensor cores' (tc.c). */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include <stdio.h>
#include <string.h>

/* ---- the kernel body ----
 *
 * Loads are the bottleneck of a CUDA-core SpMM (one FMA per load when
 * nothing is shared), so the body loads in 16-byte vectors where the
 * layout allows:
 *   - X (layout kn, N a multiple of 4, v a multiple of 4): a thread's
 *     columns come in groups of 4 adjacent ones, a warp's groups adjacent
 *     (512 coalesced bytes per load);
 *   - the weights, along k: when the innermost loop runs along k, is walked
 *     by the thread and keeps a multiple of 4, it is walked 4 storage
 *     digits at a time, and the 4 weights of each row are one load;
 *   - the weights, along the rows: when the row group is the innermost
 *     loop, the r weights of one k are adjacent in storage. */

static LLVMValueRef load_f32(LowerCtx *c, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
	ptx_align(c, l, 4);
	return l;
}

/* Four adjacent floats at base[at] (at a multiple of 4). */
static LLVMValueRef load_v4(LowerCtx *c, const GpuArg *a, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	LLVMValueRef l = LLVMBuildLoad2(c->b, a->v4, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
	ptx_align(c, l, 16);
	return l;
}

static LLVMValueRef lane(LowerCtx *c, LLVMValueRef v, int i)
{
	return LLVMBuildExtractElement(c->b, v, LLVMConstInt(c->i32, (unsigned)i, 0), "");
}

/* The innermost point: the X elements of the thread's columns, r
 * weights, r v FMAs. */
static void gpu_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const LowerKernel *k = c->k;
	LLVMBuildStore(c->b, p->m, a->mrow);
	const PtxPlan *plan = a->plan;
	/* staged: the point's row jrow of the stage, row `rows` of the buffers */
	LLVMValueRef jrow = plan->stage ? LLVMBuildLoad2(c->b, c->i64, a->j, "j") : NULL, rows = NULL;
	if (plan->stage)
		rows = ll_add(c, ll_mul(c, a->buf, plan->stage_u * plan->stage_p), jrow);
	LLVMValueRef w[PTX_MAX_R];
	for (int r = 0; r < a->r; r++) { /* weights: in bounds (padding holds zeros) */
		if (a->wk)
			w[r] = lane(c, a->wv[r], a->u);
		else if (a->wr && r % 4 == 0) {
			const int64_t br = (int64_t)plan->s.by * a->r;
			LLVMValueRef v =
				plan->wstage
					? load_v4(c, a, a->ws,
				                  LLVMBuildNSWAdd(c->b, ll_mul(c, rows, br),
				                                  ll_add(c, ll_mul(c, a->ty, a->r), ll_i64(c, r)),
				                                  ""),
				                  "ws4")
					: load_v4(c, a, c->values, ll_add(c, p->row, ll_i64(c, r)), "w4");
			for (int e = 0; e < 4; e++)
				w[r + e] = lane(c, v, e);
		} else if (!a->wr)
			w[r] = load_f32(c, c->values, ll_add(c, p->row, ll_i64(c, r * a->row_step)), "w");
	}
	/* a padding column of W (only where k is padded): no X row */
	bool kpad = k->ir->ext[PIR_AXIS_K] > k->shape.K && !plan->stage; /* staged: the loader clamps */
	LLVMBasicBlockRef body = NULL, skip = NULL;
	if (kpad) {
		body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "point");
		skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pad");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->k, ll_i64(c, k->shape.K), ""), body, skip);
		LLVMPositionBuilderAtEnd(c->b, body);
	}
	LLVMValueRef x[PTX_MAX_V];
	if (plan->stage) { /* X from the stage: row j of the buffer */
		LLVMBuildStore(c->b, ll_add(c, jrow, ll_i64(c, 1)), a->j);
		LLVMValueRef rowat = LLVMBuildNSWMul(c->b, rows, ll_i64(c, ptx_stage_width(k, plan)), "");
		for (int g = 0; g < a->v; g += 4) {
			LLVMValueRef at = ll_add(c, rowat, a->scol[g]);
			LLVMValueRef v = load_v4(c, a, a->xs, at, "xs4");
			for (int e = 0; e < 4; e++)
				x[g + e] = lane(c, v, e);
		}
	}
	for (int j = 0; j < a->v && !plan->stage; j++) {
		if (a->xvec) {
			if (j % 4 == 0) {
				LLVMValueRef at = ll_add(c, ll_mulv(c, p->k, c->N), a->col[j]);
				LLVMValueRef v = load_v4(c, a, c->X, at, "x4");
				for (int e = 0; e < 4; e++)
					x[j + e] = lane(c, v, e);
			}
			continue;
		}
		LLVMValueRef at = k->shape.layout == PAT_LAYOUT_KN
		                      ? ll_add(c, ll_mulv(c, p->k, c->N), a->col[j])
		                      : ll_add(c, ll_mul(c, a->col[j], k->shape.K), p->k);
		x[j] = load_f32(c, c->X, at, "x");
	}
	for (int r = 0; r < a->r; r++)
		for (int j = 0; j < a->v; j++) {
			LLVMValueRef acc = LLVMBuildLoad2(c->b, c->f32, a->acc[r][j], "");
			LLVMValueRef args[3] = {w[r], x[j], acc};
			LLVMBuildStore(c->b, LLVMBuildCall2(c->b, a->fma_ty, a->fma, args, 3, ""), a->acc[r][j]);
		}
	if (kpad) {
		LLVMBuildBr(c->b, skip);
		LLVMPositionBuilderAtEnd(c->b, skip);
	}
}

/* wk: the point before the innermost loop; walks it 4 digits at a time,
 * the 4 weights of each of the thread's rows one 16-byte load: where the
 * weights are staged, from the stage in shared memory (copied a stage
 * ahead with X, so that no load from global memory waits in the loop),
 * else from global memory. */
static void gpu_chunk(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const PtxPlan *plan = a->plan;
	const PirLoop *l = &c->k->ir->loops[a->inner];
	LowerLoop loop;
	bool split = plan->split == a->inner;
	LLVMValueRef from = split ? ll_udiv(c, a->zlo, 4) : ll_i64(c, 0);
	LLVMValueRef to = split ? ll_udiv(c, a->zhi, 4) : ll_i64(c, l->nnz / 4);
	LLVMValueRef d4 = lower_loop_begin(c, &loop, from, to, "d4");
	LLVMValueRef d = ll_mul(c, d4, 4);
	if (plan->wstage) { /* row r of the thread: row r by + ty of the buffer, its points from j on */
		LLVMValueRef j = LLVMBuildLoad2(c->b, c->i64, a->j, "j");
		LLVMValueRef rows = LLVMBuildNSWMul(c->b, a->buf, ll_i64(c, (int64_t)plan->s.by * a->r), "");
		for (int r = 0; r < a->r; r++) {
			LLVMValueRef slot =
			        ll_add(c, rows, ll_add(c, a->ty, ll_i64(c, r * plan->s.by)));
			LLVMValueRef at = ll_add(c, ll_mul(c, slot, a->wrow), j);
			a->wv[r] = load_v4(c, a, a->ws, at, "ws4");
		}
	} else {
		LLVMValueRef row = ll_add(c, ll_mul(c, p->row, l->nnz), d);
		for (int r = 0; r < a->r; r++)
			a->wv[r] = load_v4(c, a, c->values, ll_add(c, row, ll_i64(c, r * a->row_step)), "w4");
	}
	for (a->u = 0; a->u < 4; a->u++) {
		c->lo[a->inner] = ll_add(c, d, ll_i64(c, a->u));
		c->hi[a->inner] = ll_add(c, c->lo[a->inner], ll_i64(c, 1));
		lower_nest(c, a->inner, a->inner + 1, p, gpu_point, a);
	}
	c->lo[a->inner] = c->hi[a->inner] = NULL;
	lower_loop_end(c, &loop);
}

/* Waits for all but the last `wait` groups of the thread's copies (none:
 * wait < 0), then for the block. */
static void stage_sync(LowerCtx *c, int wait)
{
	if (wait >= 0)
		ptx_cp_wait(c, wait);
	ptx_barrier(c);
}

/* The point before the first walked loop: its iterations in stages of
 * stage_u, the next stage copied while the current one is computed. */
static void gpu_stages(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const PtxPlan *plan = a->plan;
	const Pir *ir = c->k->ir;
	const int outer = plan->outer, n = ir->nloops;
	const int64_t U = plan->stage_u, P = plan->stage_p;
	LLVMValueRef olo = c->lo[outer] ? c->lo[outer] : ll_i64(c, 0);
	LLVMValueRef ohi = c->hi[outer] ? c->hi[outer] : ll_i64(c, ir->loops[outer].nnz);
	/* whether the last stage can run past the loop's end (a split loop's
	 * part, or stages that do not divide it) */
	a->ragged = c->lo[outer] || ir->loops[outer].nnz % U;
	LLVMValueRef nst = LLVMBuildUDiv(
		c->b, ll_add(c, LLVMBuildNSWSub(c->b, ohi, olo, ""), ll_i64(c, U - 1)), ll_i64(c, U), "nst");
	ptx_stage_issue(c, a, p, ll_i64(c, 0), ll_i64(c, 0), olo, ohi);
	ptx_cp_commit(c);
	LowerLoop sl;
	LLVMValueRef s = lower_loop_begin(c, &sl, ll_i64(c, 0), nst, "stage");
	a->buf = LLVMBuildAnd(c->b, s, ll_i64(c, 1), "buf");
	LLVMValueRef s1 = ll_add(c, s, ll_i64(c, 1));
	LLVMBasicBlockRef pre = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "prefetch");
	LLVMBasicBlockRef go = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "compute");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, s1, nst, ""), pre, go);
	LLVMPositionBuilderAtEnd(c->b, pre);
	ptx_stage_issue(c, a, p, s1, LLVMBuildXor(c->b, a->buf, ll_i64(c, 1), ""), olo, ohi);
	LLVMBuildBr(c->b, go);
	LLVMPositionBuilderAtEnd(c->b, go);
	ptx_cp_commit(c);
	stage_sync(c, 1); /* stage s has landed, for every thread */
	for (int64_t u = 0; u < U; u++) {
		LLVMValueRef d = LLVMBuildNSWAdd(
			c->b, olo, ll_add(c, ll_mul(c, s, U), ll_i64(c, u)), "");
		LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "iter");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "itern");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, d, ohi, ""), body, next);
		LLVMPositionBuilderAtEnd(c->b, body);
		LLVMBuildStore(c->b, ll_i64(c, u * P), a->j);
		c->lo[outer] = d;
		c->hi[outer] = ll_add(c, d, ll_i64(c, 1));
		if (a->wk)
			lower_nest(c, outer, n - 1, p, gpu_chunk, a);
		else
			lower_nest(c, outer, n, p, gpu_point, a);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, next);
	}
	c->lo[outer] = c->hi[outer] = NULL;
	stage_sync(c, -1); /* everyone is done with this buffer */
	lower_loop_end(c, &sl);
}

/* How write_tile writes the thread's tile: to C (stored, or added with
 * atomics where the plan adds), to its part's slice of the workspace
 * (wsum), or to C as the sum of every part's slice, in part order. */
enum { TILE_C, TILE_PART, TILE_SUM };

/* The workspace's slice of part z (i64), which ptx_c_ptr addresses as it does C. */
static LLVMValueRef wsum_part(LowerCtx *c, LLVMValueRef ws, LLVMValueRef z)
{
	LLVMValueRef at = ll_mul(c, z, c->k->shape.M * c->k->shape.N);
	return LLVMBuildGEP2(c->b, c->f32, ws, &at, 1, "part");
}

/* A load or store of the workspace: aligned as C's on the GPU (the slices
 * are whole multiples of the vector), byte-aligned on the host, where the
 * emulator's checks of shared memory must not take it for a buffer of
 * the block. */
static LLVMValueRef wsum_access(LowerCtx *c, LLVMValueRef inst, unsigned bytes)
{
	const PtxPlan *plan = c->backend;
	LLVMSetAlignment(inst, plan->emulate ? 1 : bytes);
	return inst;
}

/* v[0..n) as one value: the float itself, or a vector of n floats. */
static LLVMValueRef pack(LowerCtx *c, const LLVMValueRef *v, int n)
{
	if (n == 1)
		return v[0];
	LLVMValueRef vv = LLVMGetUndef(LLVMVectorType(c->f32, (unsigned)n));
	for (int e = 0; e < n; e++)
		vv = LLVMBuildInsertElement(c->b, vv, v[e], LLVMConstInt(c->i32, (unsigned)e, 0), "");
	return vv;
}

/* Writes the thread's r x v tile (TILE_*): one owner stores, shared rows
 * add atomically; 4 adjacent columns (xvec) or mvec rows of C as one
 * vector where stored or added by vector red.  ws: the workspace (not
 * TILE_C). */
static void write_tile(LowerCtx *c, GpuArg *a, LLVMValueRef m0, LLVMValueRef *valid, LLVMValueRef *ncol, int how,
                       LLVMValueRef ws)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	const bool vec = (plan->xvec || plan->mvec) && (!plan->atomic || plan->vred);
	const int rstep = vec && plan->mvec ? plan->mvec : 1, jstep = vec && plan->xvec ? 4 : 1, nvec = rstep * jstep;
	LLVMTypeRef vty = nvec > 1 ? LLVMVectorType(c->f32, (unsigned)nvec) : c->f32;
	LLVMValueRef C = c->C, part = how == TILE_PART ? wsum_part(c, ws, ptx_sreg(c, "ctaid.z")) : NULL;
	for (int r = 0; r < a->r; r += rstep) {
		LLVMValueRef m = LLVMBuildNSWAdd(c->b, m0, ll_i64(c, r * a->m_step), "m");
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, ll_i64(c, k->shape.M), "");
		for (int j = 0; j < a->v; j += jstep) {
			LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
			LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
			LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, mok, valid[j], ""), st, next);
			LLVMPositionBuilderAtEnd(c->b, st);
			LLVMValueRef v[4] = {NULL};
			if (how == TILE_SUM) { /* part 0's slice, then each next one added */
				LLVMValueRef sum = NULL;
				for (int64_t z = 0; z < plan->nsplit; z++) {
					c->C = wsum_part(c, ws, ll_i64(c, z));
					LLVMValueRef l = wsum_access(c, LLVMBuildLoad2(c->b, vty, ptx_c_ptr(c, m, ncol[j]), "part"),
					                             4 * (unsigned)nvec);
					LLVMSetVolatile(l, 1); /* (from L2: other blocks wrote it) */
					sum = sum ? LLVMBuildFAdd(c->b, sum, l, "") : l;
				}
				c->C = C;
				for (int e = 0; e < nvec; e++)
					v[e] = nvec > 1 ? lane(c, sum, e) : sum;
			} else {
				for (int e = 0; e < nvec; e++)
					v[e] = LLVMBuildLoad2(c->b, c->f32, a->acc[r + e / jstep][j + e / rstep], "");
			}
			/* C's final values: the element's one store (the epilogue; not a
			 * part's slice, nor an atomic's addend) */
			for (int e = 0; e < nvec && how != TILE_PART && !plan->atomic; e++)
				v[e] = ptx_c_final(c, LLVMBuildNSWAdd(c->b, m, ll_i64(c, (e / jstep) * a->m_step), ""), ncol[j + e / rstep],
				                   v[e]);
			if (how == TILE_PART) {
				c->C = part;
				wsum_access(c, LLVMBuildStore(c->b, pack(c, v, nvec), ptx_c_ptr(c, m, ncol[j])), 4 * (unsigned)nvec);
				c->C = C;
			} else if (!vec) {
				ptx_c_put(c, ptx_c_ptr(c, m, ncol[j]), v[0]);
			} else if (plan->atomic) {
				ptx_c_add(c, ptx_c_ptr(c, m, ncol[j]), v, nvec);
			} else {
				ptx_align(c, LLVMBuildStore(c->b, pack(c, v, nvec), ptx_c_ptr(c, m, ncol[j])), 4 * (unsigned)nvec);
			}
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
}

/* fence.acq_rel.gpu: this thread's writes before it are seen by a thread
 * that reads its later atomic and then fences (release, acquire); on the
 * host, where threads run one at a time, nothing. */
static void gpu_fence(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate)
		return;
	static const char text[] = "fence.acq_rel.gpu;", cons[] = "~{memory}";
	LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), NULL, 0, 0);
	LLVMValueRef f = LLVMGetInlineAsm(ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(c->b, ty, f, NULL, 0, "");
}

/* A module-level array of the kernel (global memory, zero at load): n
 * elements of ty. */
static LLVMValueRef module_array(LowerCtx *c, LLVMTypeRef ty, int64_t n, const char *suffix)
{
	const PtxPlan *plan = c->backend;
	LLVMTypeRef aty = LLVMArrayType2(ty, (uint64_t)n);
	char gname[PIR_NAME_MAX + 64];
	snprintf(gname, sizeof gname, "%s.%s", LLVMGetValueName(c->fn), suffix);
	LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 1);
	LLVMSetInitializer(g, LLVMConstNull(aty));
	LLVMSetLinkage(g, LLVMInternalLinkage);
	LLVMSetAlignment(g, 16);
	return plan->emulate ? g : LLVMBuildAddrSpaceCast(c->b, g, c->ptr, "");
}

/* plan->wsum: the thread's tile to its part's slice of the workspace;
 * then, each thread of each part adding one to its own counter (its
 * place in the grid but for blockIdx.z: the same elements in every
 * part), the part that finds the others done (after a fence each side,
 * so that their slices are seen) adds the slices in part order, stores C
 * and resets the counter for the next launch. */
static void wsum_tile(LowerCtx *c, GpuArg *a, LLVMValueRef m0, LLVMValueRef *valid, LLVMValueRef *ncol)
{
	const PtxPlan *plan = a->plan;
	const LowerKernel *k = c->k;
	unsigned grid[3], block[3];
	ptx_grid(plan, k->shape.N, grid, block);
	LLVMValueRef ws = module_array(c, c->f32, plan->nsplit * k->shape.M * k->shape.N, "wsum");
	LLVMValueRef cnt = module_array(c, c->i32, (int64_t)grid[0] * grid[1] * block[0] * block[1], "wcount");
	write_tile(c, a, m0, valid, ncol, TILE_PART, ws);
	gpu_fence(c);
	LLVMValueRef blk = LLVMBuildNSWAdd(c->b, ll_mul(c, ptx_sreg(c, "ctaid.y"), grid[0]),
	                                   ptx_sreg(c, "ctaid.x"), "");
	LLVMValueRef thr = LLVMBuildNSWAdd(c->b, ll_mul(c, ptx_sreg(c, "tid.y"), block[0]),
	                                   ptx_sreg(c, "tid.x"), "");
	LLVMValueRef slot = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, blk, ll_i64(c, (int64_t)block[0] * block[1]), ""),
	                                    thr, "slot");
	LLVMValueRef at = LLVMBuildGEP2(c->b, c->i32, cnt, &slot, 1, "");
	LLVMValueRef before = LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpAdd, at, LLVMConstInt(c->i32, 1, 0),
	                                         LLVMAtomicOrderingMonotonic, 0);
	LLVMBasicBlockRef last = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "last");
	LLVMBasicBlockRef out = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "summed");
	LLVMValueRef others = LLVMConstInt(c->i32, (unsigned long long)(plan->nsplit - 1), 0);
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, before, others, "last"), last, out);
	LLVMPositionBuilderAtEnd(c->b, last);
	gpu_fence(c);
	LLVMSetAlignment(LLVMBuildStore(c->b, LLVMConstInt(c->i32, 0, 0), at), 4);
	write_tile(c, a, m0, valid, ncol, TILE_SUM, ws);
	LLVMBuildBr(c->b, out);
	LLVMPositionBuilderAtEnd(c->b, out);
}

static void gpu_body(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	const int n = ir->nloops;
	GpuArg a = {.plan = plan, .r = plan->s.r, .v = plan->s.v};
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	a.fma = LLVMGetIntrinsicDeclaration(c->mod, id, &c->f32, 1);
	a.fma_ty = LLVMIntrinsicGetType(c->ctx, id, &c->f32, 1);
	a.v4 = LLVMVectorType(c->f32, 4);
	a.xvec = plan->xvec;
	a.cols4 = plan->xvec || plan->stage;
	a.wk = plan->wk;
	a.wr = plan->wr;
	a.inner = n - 1;

	LLVMValueRef tx = ptx_sreg(c, "tid.x"), ty = ptx_sreg(c, "tid.y");
	LLVMValueRef cx = ptx_sreg(c, "ctaid.x"), cy = ptx_sreg(c, "ctaid.y");
	LLVMValueRef set = LLVMBuildNSWAdd(c->b, ll_mul(c, cx, plan->s.by), ty, "set");
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, set, ll_i64(c, plan->nsets), ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);

	/* the set's digits, innermost first: the group's chunk, then the
	 * spread loops from the last */
	LLVMValueRef rest = set;
	if (plan->group >= 0) {
		const PirLoop *g = &ir->loops[plan->group];
		int64_t chunks = g->nnz / a.r;
		LLVMValueRef chunk = ll_urem(c, rest, chunks);
		rest = ll_udiv(c, rest, chunks);
		c->lo[plan->group] = LLVMBuildNSWMul(c->b, chunk, ll_i64(c, a.r), "glo");
		c->hi[plan->group] = LLVMBuildNSWAdd(c->b, c->lo[plan->group], ll_i64(c, 1), "ghi");
		a.row_step = c->nest->stride[plan->group];
		a.m_step = g->comp[0].stride;
	}
	for (int i = plan->nspread - 1; i >= 0; i--) {
		if (i == plan->group)
			continue;
		int64_t nnz = ir->loops[i].nnz;
		c->lo[i] = i ? ll_urem(c, rest, nnz) : rest;
		c->hi[i] = ll_add(c, c->lo[i], ll_i64(c, 1));
		if (i)
			rest = ll_udiv(c, rest, nnz);
	}

	if (plan->split >= 0) { /* this block's part of the split loop */
		LLVMValueRef lo = LLVMBuildNSWMul(c->b, ptx_sreg(c, "ctaid.z"), ll_i64(c, plan->split_chunk), "zlo");
		LLVMValueRef hi = ll_add(c, lo, ll_i64(c, plan->split_chunk));
		LLVMValueRef nnz = ll_i64(c, ir->loops[plan->split].nnz);
		hi = LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, hi, nnz, ""), hi, nnz, "zhi");
		a.zlo = lo, a.zhi = hi;
		if (plan->split != a.inner || !a.wk)
			c->lo[plan->split] = lo, c->hi[plan->split] = hi;
	}

	/* the thread's columns (clamped into range for the loads): v apart
	 * by bx, or groups of 4 adjacent ones, 4 bx apart */
	LLVMValueRef base =
	        ll_add(c, c->n0, LLVMBuildNSWMul(c->b, cy, ll_i64(c, (int64_t)plan->s.bx * a.v), ""));
	LLVMValueRef first = ll_add(c, base, a.cols4 ? ll_mul(c, tx, 4) : tx);
	LLVMValueRef valid[PTX_MAX_V], ncol[PTX_MAX_V];
	for (int j = 0; j < a.v; j++) {
		int64_t off = a.cols4 ? (int64_t)(j / 4) * 4 * plan->s.bx + j % 4 : (int64_t)j * plan->s.bx;
		ncol[j] = LLVMBuildNSWAdd(c->b, first, ll_i64(c, off), "n");
		valid[j] = LLVMBuildICmp(c->b, LLVMIntSLT, ncol[j], c->n1, "");
		/* xvec: a group is whole or out (N and n0 multiples of 4); an
		 * out group reads the last 4 columns */
		LLVMValueRef last = LLVMBuildNSWSub(c->b, c->n1, ll_i64(c, a.xvec ? 4 - j % 4 : 1), "");
		a.col[j] = LLVMBuildSelect(c->b, valid[j], ncol[j], last, "");
	}
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int r = 0; r < a.r; r++)
		for (int j = 0; j < a.v; j++) {
			a.acc[r][j] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[r][j]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, ll_i64(c, k->shape.M), a.mrow);

	LowerPoint start = {ll_i64(c, 0), ll_i64(c, 0), ll_i64(c, 0)};
	if (plan->stage) {
		int64_t words = 2 * plan->stage_u * plan->stage_p * ptx_stage_width(k, plan);
		LLVMTypeRef aty = LLVMArrayType2(c->f32, (uint64_t)words);
		char gname[PIR_NAME_MAX + 64];
		snprintf(gname, sizeof gname, "%s.xs", LLVMGetValueName(c->fn));
		a.xs = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 3);
		LLVMSetInitializer(a.xs, plan->emulate ? LLVMConstNull(aty) : LLVMGetUndef(aty));
		LLVMSetLinkage(a.xs, LLVMInternalLinkage);
		LLVMSetAlignment(a.xs, 16);
		a.j = lower_entry_alloca(c, c->i64, "j");
		a.tid = LLVMBuildNSWAdd(c->b, ll_mul(c, ty, plan->s.bx), tx, "tid");
		a.base = base;
		if (plan->wstage) {
			a.wrow = plan->stage_u * plan->stage_p + PTX_WSTAGE_PAD;
			aty = LLVMArrayType2(c->f32, (uint64_t)(2 * plan->s.by * a.r * a.wrow));
			snprintf(gname, sizeof gname, "%s.ws", LLVMGetValueName(c->fn));
			a.ws = LLVMAddGlobalInAddressSpace(c->mod, aty, gname, plan->emulate ? 0 : 3);
			LLVMSetInitializer(a.ws, plan->emulate ? LLVMConstNull(aty) : LLVMGetUndef(aty));
			LLVMSetLinkage(a.ws, LLVMInternalLinkage);
			LLVMSetAlignment(a.ws, 16);
			a.ty = ty;
			a.glo = c->lo[plan->group];
		}
		for (int g = 0; g < a.v; g += 4)
			a.scol[g] = LLVMBuildNSWAdd(c->b, ll_i64(c, (int64_t)(g / 4) * 4 * plan->s.bx),
			                            ll_mul(c, tx, 4), "");
		lower_nest(c, 0, plan->outer, &start, gpu_stages, &a);
	} else if (a.wk)
		lower_nest(c, 0, n - 1, &start, gpu_chunk, &a);
	else
		lower_nest(c, 0, n, &start, gpu_point, &a);

	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	if (plan->wsum)
		wsum_tile(c, &a, m0, valid, ncol);
	else
		write_tile(c, &a, m0, valid, ncol, TILE_C, NULL);
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}

static void no_prologue(LowerCtx *c) { (void)c; }

LowerHooks ptx_hooks(PtxPlan *plan)
{
	return (LowerHooks){.prologue = no_prologue,
	                    .body = plan->tc ? ptx_tc_body : gpu_body,
	                    .index_space = plan->emulate ? 0 : 1,
	                    .backend = plan};
}
