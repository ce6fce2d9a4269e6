/* SPDX-License-Identifier: MIT */
/* tc_impl.h - what the tensor-core mapping's files share inside it (their
 * device operations are ptx_ops.c's, ptx_impl.h).  Calls go one way:
 * tc.c (ptx_tc_body, the kernel body) calls tc_stage.c (the staged walk)
 * and tc_mma.c (the warp instructions); tc_stage.c calls tc_mma.c and
 * tc_plan.c (the plan); tc_mma.c calls tc_plan.c; none of them the
 * CUDA-core mapping's files. */
#ifndef PATC_TC_IMPL_H
#define PATC_TC_IMPL_H

#include "ptx_impl.h"

/* ---- the stage's sizes (tc_plan.c) ---- */

/* The k of one step of a staged walk: 16 tc_ku (mma), 32 (mma.sp), 16
 * tc_wgu (wgmma). */
int64_t tc_step_k(const PtxPlan *plan);
/* Halves per row of a stage's weights under mma, and of X in layout nk
 * (a row's k of the step, padded); of X in layout kn (the block's
 * columns, padded). */
int64_t tc_row(const PtxPlan *plan);
int64_t tc_nk_row(const PtxPlan *plan);
int64_t tc_kn_row(const PtxPlan *plan);
/* Halves of one stage: the weights' part (tc_stage_a), then X's. */
int64_t tc_stage_a(const PtxPlan *plan);
int64_t tc_stage_halves(const LowerKernel *k, const PtxPlan *plan);

/* ---- the kernel body's state ---- */

/* The warp's part of the kernel (tc.c's ptx_tc_body builds it): its
 * lanes, accumulators and the instructions it issues. */
typedef struct TcArg {
	const PtxPlan *plan;
	LLVMTypeRef i16;
	LLVMValueRef g, t;   /* the lane's group and thread in it (i64) */
	LLVMValueRef nb;     /* the warp's first column */
	LLVMValueRef acc[PTX_TC_WM * PTX_TC_TILES][4]; /* chunk i of the warp's, tile j: i PTX_TC_TILES + j */
	LLVMValueRef mrow;   /* alloca: the m of the warp's first row */
	LLVMValueRef mma;    /* the inline asm, or (emulation) the global patc_emu_mma */
	LLVMTypeRef mma_ty;
	LLVMValueRef ea, eb, ec; /* emulation: the fragments passed to the host */
	LLVMValueRef sp;         /* sparse: mma.sp's inline asm, or (emulation) the global patc_emu_mmasp */
	LLVMTypeRef sp_ty;
	/* sparse, staged: allocas, the A fragments and metadata of the warp's
	 * chunks for the step about to be computed (loaded a step ahead) */
	LLVMValueRef spa[PTX_TC_WM][4], spm[PTX_TC_WM];
	LLVMValueRef wg;         /* tc_wg: the wgmma step's inline asm, or (emulation) the global patc_emu_wgmma */
	LLVMTypeRef wg_ty;
	LLVMValueRef wgw[2];     /* tc_wga: wgmma.wait_group 0 and 1, inline asm (tc_wg_wait) */
	LLVMTypeRef wgw_ty;
	LLVMValueRef ewacc;      /* emulation, tc_wg: the accumulators, which the host updates */
} TcArg;

/* The staged walk's buffers and the block's steps (tc_stage.c). */
typedef struct TcStage {
	LLVMValueRef xs;                 /* the buffers: tc_stages x tc_stage_halves (i16) */
	LLVMValueRef tid;                /* the thread among those copying */
	int64_t nthreads;                /* threads copying: the block's */
	LLVMValueRef ncol;               /* the block's first column */
	LLVMValueRef digit[PIR_MAX_LOOPS];
	LLVMValueRef begin, end;         /* the steps of the block's walk (its part of a split walk) */
	LLVMValueRef ldm;                /* emulation: the global patc_emu_ldm */
	LLVMTypeRef ldm_ty;
	LLVMValueRef eo;                 /* emulation: ldmatrix's result */
} TcStage;

/* One wgmma of a step (tc_wg): its accumulators (first, count), its A and
 * B (halves from the stage's start) and whether each is transposed (MN-
 * major). */
typedef struct TcWgOp {
	int acc, nacc;
	int64_t a, b;
	int trans_a, trans_b;
} TcWgOp;

/* The most wgmma a step issues (tc_wg_ops). */
enum { TC_WG_MAXOPS = 2 * 4 };

/* ---- the warp instructions (tc_mma.c) ---- */

/* acc[j] = A B + acc[j]: mma.m16n8k16 (meta NULL, B 2 words) or, sparse,
 * mma.sp.m16n8k32 with its metadata (B 4 words). */
void tc_mma(LowerCtx *c, TcArg *a, LLVMValueRef *aw, LLVMValueRef *bw, LLVMValueRef meta, int j);
/* The plain (unstaged) walks' points, lower_nest callbacks: a kept tile
 * at p, 16 k at a time (mma); the warp's 16 rows at p, 32 k a step
 * (mma.sp). */
void tc_point(LowerCtx *c, const LowerPoint *p, void *arg);
void tc_sp_point(LowerCtx *c, const LowerPoint *p, void *arg);
/* ll_urem, ll_udiv of a v known to be below 2^32, in 32 bits. */
LLVMValueRef tc_urem32(LowerCtx *c, LLVMValueRef v, int64_t d);
LLVMValueRef tc_udiv32(LowerCtx *c, LLVMValueRef v, int64_t d);
/* The sparse tensor cores' A fragment and metadata of the warp's 16 rows
 * (row: the first row's place in storage) for step kstep. */
void tc_sp_fragments(LowerCtx *c, TcArg *a, LLVMValueRef row, LLVMValueRef kstep, LLVMValueRef aw[4],
                     LLVMValueRef *meta_out);
/* A thread's accumulators under wgmma. */
int tc_wg_nacc(const PtxPlan *plan);
/* The wgmma of a step, in order (at most TC_WG_MAXOPS); returns how many. */
int tc_wg_ops(const LowerKernel *k, const PtxPlan *plan, TcWgOp *ops);
/* wgmma.wait_group n (tc_wg), the accumulators passed through. */
void tc_wg_wait(LowerCtx *c, TcArg *a, int n);
/* The wgmma step's inline asm and waits (emulated: the host's hooks). */
void tc_wg_init(LowerCtx *c, TcArg *a);

/* ---- the staged walk (tc_stage.c) ---- */

/* Where step `step` of the block's walk is: *row (the step's weights of
 * the block's first row), *m (that row's m), *k (the step's first k),
 * *kstep_out (the step within its kept tile; NULL: not wanted). */
void tc_locate(LowerCtx *c, LLVMValueRef const *digit, LLVMValueRef step, LLVMValueRef *row, LLVMValueRef *m,
               LLVMValueRef *k, LLVMValueRef *kstep_out);
/* The staged walk of steps st->begin .. st->end - 1 through tc_stages
 * buffers: the warp's lane, warp row wr and column slice wc. */
void tc_staged_walk(LowerCtx *c, TcArg *a, TcStage *st, LLVMValueRef lane, LLVMValueRef wr, LLVMValueRef wc);
/* The stage's buffers and, in emulation, ldmatrix's host function. */
void tc_stage_init(LowerCtx *c, const PtxPlan *plan, TcStage *st);

#endif
