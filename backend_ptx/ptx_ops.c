/* SPDX-License-Identifier: MIT */
/* ptx_ops.c - the device operations both GPU mappings build their kernels
 * from (the CUDA cores' in ptx_body.c and ptx_stage.c, the tensor cores'
 * in tc*.c): intrinsics and special registers, C's address and stores,
 * cp.async and barriers, each in its emulated form too (PtxPlan.emulate:
 * calls of the host's emulator, ptx_emulate), and the checks the emulator
 * makes of a kernel's accesses.  Declared in ptx_impl.h.
 *
 * Both mappings call these; nothing here calls either mapping, so the
 * CUDA-core files call the tensor-core ones and not the other way round. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- intrinsics and special registers ---- */

LLVMValueRef ptx_call_typed(LowerCtx *c, const char *name, LLVMTypeRef *types, unsigned ntypes, LLVMValueRef *args,
                            unsigned nargs)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->mod, id, types, ntypes);
	return LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, types, ntypes), f, args, nargs, "");
}

LLVMValueRef ptx_call(LowerCtx *c, const char *name, LLVMValueRef *args, unsigned nargs)
{
	return ptx_call_typed(c, name, NULL, 0, args, nargs);
}

LLVMValueRef ptx_sreg(LowerCtx *c, const char *name)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate) { /* a global the host's emulator sets per thread */
		char gname[64];
		snprintf(gname, sizeof gname, "patc_emu_%s", name);
		for (char *q = gname; *q; q++)
			if (*q == '.')
				*q = '_';
		LLVMValueRef g = LLVMGetNamedGlobal(c->mod, gname);
		if (!g) {
			g = LLVMAddGlobal(c->mod, c->i32, gname);
			LLVMSetInitializer(g, LLVMConstInt(c->i32, 0, 0));
		}
		return LLVMBuildZExt(c->b, LLVMBuildLoad2(c->b, c->i32, g, name), c->i64, "");
	}
	char full[64];
	snprintf(full, sizeof full, "llvm.nvvm.read.ptx.sreg.%s", name);
	unsigned id = LLVMLookupIntrinsicID(full, strlen(full));
	LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->mod, id, NULL, 0);
	LLVMTypeRef t = LLVMIntrinsicGetType(c->ctx, id, NULL, 0);
	LLVMValueRef v = LLVMBuildCall2(c->b, t, f, NULL, 0, name);
	return LLVMBuildZExt(c->b, v, c->i64, "");
}

LLVMValueRef ptx_min(LowerCtx *c, LLVMValueRef x, LLVMValueRef y)
{
	return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, x, y, ""), x, y, "");
}

/* ---- emulation: the host's stand-ins and the access checks ---- */

/* &name[i] of an emulator's global of n i64 (zeroed), made where missing. */
static LLVMValueRef emu_word(LowerCtx *c, const char *name, int n, LLVMValueRef i)
{
	LLVMTypeRef aty = LLVMArrayType2(c->i64, (uint64_t)n);
	LLVMValueRef g = LLVMGetNamedGlobal(c->mod, name);
	if (!g) {
		g = LLVMAddGlobal(c->mod, aty, name);
		LLVMSetInitializer(g, LLVMConstNull(aty));
	}
	LLVMValueRef at[2] = {ll_i64(c, 0), i};
	return LLVMBuildInBoundsGEP2(c->b, aty, g, at, 2, "");
}

void ptx_emu_count(LowerCtx *c, int what, LLVMValueRef bytes)
{
	LLVMValueRef p = emu_word(c, "patc_emu_copied", 2, ll_i64(c, what));
	LLVMBuildStore(c->b, LLVMBuildAdd(c->b, LLVMBuildLoad2(c->b, c->i64, p, ""), bytes, ""), p);
}

/* The buffer a GEP (instructions or constants, nested) indexes; any other
 * value is its own (a select or a cast of a buffer is not seen through:
 * its accesses go unchecked for bounds). */
static LLVMValueRef gep_base(LLVMValueRef p)
{
	while (LLVMIsAGetElementPtrInst(p) ||
	       (LLVMIsAConstantExpr(p) && LLVMGetConstOpcode(p) == LLVMGetElementPtr))
		p = LLVMGetOperand(p, 0);
	return p;
}

/* Stores v into patc_emu_bad[i] where bad. */
static void emu_flag(LowerCtx *c, int i, LLVMValueRef bad, int64_t v)
{
	LLVMValueRef q = emu_word(c, "patc_emu_bad", 2, ll_i64(c, i));
	LLVMBuildStore(c->b, LLVMBuildSelect(c->b, bad, ll_i64(c, v), LLVMBuildLoad2(c->b, c->i64, q, ""), ""), q);
}

/* The bytes of a block's shared-memory buffer (a global array of floats or
 * integers), or 0 for any other global. */
static int64_t shared_bytes(LLVMValueRef g)
{
	if (!LLVMIsAGlobalVariable(g) || LLVMGetTypeKind(LLVMGlobalGetValueType(g)) != LLVMArrayTypeKind)
		return 0;
	LLVMTypeRef aty = LLVMGlobalGetValueType(g), ety = LLVMGetElementType(aty);
	const LLVMTypeKind kind = LLVMGetTypeKind(ety);
	const int64_t esize = kind == LLVMFloatTypeKind     ? 4
	                      : kind == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(ety) / 8
	                                                    : 0;
	return (int64_t)LLVMGetArrayLength2(aty) * esize;
}

/* PATC_EMU_INJECT (tests only): "misaligned" or "outside" moves every
 * checked access 4 bytes, or a buffer's length, further on; "barrier"
 * meets one more barrier each time in the block's second warp or row of
 * threads; "nobarrier" drops every barrier, "nocopy" every cp.async,
 * "nofence" every fence.proxy.async (tc_stage.c); "wait" waits for one group of
 * copies fewer each time; "nopad" drops the padding of the stages' rows
 * (right results, bank conflicts: PtxEmuStats).  So the checks are seen to
 * catch what they are for. */
bool ptx_emu_inject(const char *what)
{
	const char *v = getenv("PATC_EMU_INJECT");
	return v && !strcmp(v, what);
}

LLVMValueRef ptx_emu_hook(LowerCtx *c, const char *name)
{
	LLVMValueRef g = LLVMGetNamedGlobal(c->mod, name);
	if (!g) {
		g = LLVMAddGlobal(c->mod, c->ptr, name);
		LLVMSetInitializer(g, LLVMConstNull(c->ptr));
	}
	return g;
}

void ptx_emu_call(LowerCtx *c, const char *name, LLVMTypeRef *params, LLVMValueRef *args, unsigned n)
{
	LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, n, 0);
	LLVMValueRef fn = LLVMBuildLoad2(c->b, c->ptr, ptx_emu_hook(c, name), name);
	LLVMValueRef call = LLVMBuildCall2(c->b, ty, fn, args, n, "");
	/* never a jump: the emulator tells the instructions apart by the
	 * address each call returns to */
	LLVMSetTailCallKind(call, LLVMTailCallKindNoTail);
}

/* Where counted (plan->emu_count), an access of `bytes` at p (write: a
 * store) to the operand `from` (X, the values, C), through
 * patc_emu_global. */
static void emu_global(LowerCtx *c, LLVMValueRef p, unsigned bytes, bool write, LLVMValueRef from)
{
	const PtxPlan *plan = c->backend;
	if (!plan->emu_count || !(from == c->X || from == c->values || from == c->C))
		return;
	LLVMTypeRef params[4] = {c->ptr, c->i64, c->i32, c->ptr};
	LLVMValueRef args[4] = {p, ll_i64(c, bytes), LLVMConstInt(c->i32, write, 0), from};
	ptx_emu_call(c, "patc_emu_global", params, args, 4);
}

/* ptx_emu_check; *base and *size: the buffer p lies in where it is the
 * block's shared memory (else NULL and 0); *from: the operand it lies in
 * where that is a parameter (else NULL). */
static LLVMValueRef emu_check(LowerCtx *c, LLVMValueRef p, unsigned bytes, LLVMValueRef ok, LLVMValueRef *shared,
                              int64_t *shared_size, LLVMValueRef *from)
{
	*shared = NULL, *shared_size = 0, *from = NULL;
	const bool ptr = LLVMGetTypeKind(LLVMTypeOf(p)) == LLVMPointerTypeKind;
	LLVMValueRef at = ptr ? LLVMBuildPtrToInt(c->b, p, c->i64, "") : p;
	if (ptx_emu_inject("misaligned"))
		at = LLVMBuildAdd(c->b, at, ll_i64(c, 4), "");
	emu_flag(c, 0, LLVMBuildICmp(c->b, LLVMIntNE, LLVMBuildAnd(c->b, at, ll_i64(c, bytes - 1), ""), ll_i64(c, 0), ""),
	         bytes);
	if (!ptr)
		return p;
	LLVMValueRef base = gep_base(p);
	*from = base;
	int64_t size = shared_bytes(base);
	int what = 1;
	LLVMValueRef limit = NULL; /* X's bytes (an i64: the run's N) */
	if (!size && base == c->X) {
		const PtxPlan *plan = c->backend;
		limit = ll_mulv(c, c->N, ll_i64(c, c->k->shape.K * (plan->tc ? 2 : 4))), what = 2;
	}
	if (!size && !limit)
		return p;
	if (what == 1)
		*shared = base, *shared_size = size, limit = ll_i64(c, size);
	LLVMValueRef off = LLVMBuildSub(c->b, at, LLVMBuildPtrToInt(c->b, base, c->i64, ""), "");
	if (ptx_emu_inject("outside"))
		off = LLVMBuildAdd(c->b, off, limit, "");
	/* off + bytes > limit, unsigned (off past the start is huge) */
	LLVMValueRef bad = LLVMBuildOr(
		c->b, LLVMBuildICmp(c->b, LLVMIntULT, limit, ll_i64(c, bytes), ""),
		LLVMBuildICmp(c->b, LLVMIntUGT, off, LLVMBuildSub(c->b, limit, ll_i64(c, bytes), ""), ""), "outside");
	emu_flag(c, 1, ok ? LLVMBuildAnd(c->b, bad, ok, "") : bad, what);
	/* the host's access goes to the buffer's start instead (flagged above) */
	return LLVMBuildSelect(c->b, bad, base, p, "");
}

LLVMValueRef ptx_emu_check(LowerCtx *c, LLVMValueRef p, unsigned bytes, LLVMValueRef ok)
{
	LLVMValueRef shared, from;
	int64_t size;
	return emu_check(c, p, bytes, ok, &shared, &size, &from);
}

LLVMValueRef ptx_emu_access(LowerCtx *c, LLVMValueRef p, unsigned bytes, bool write)
{
	LLVMValueRef shared, from;
	int64_t size;
	p = emu_check(c, p, bytes, NULL, &shared, &size, &from);
	emu_global(c, p, bytes, write, from);
	if (shared) {
		LLVMTypeRef params[5] = {c->ptr, c->i64, c->i32, c->ptr, c->i64};
		LLVMValueRef args[5] = {p, ll_i64(c, bytes), LLVMConstInt(c->i32, write, 0), shared, ll_i64(c, size)};
		ptx_emu_call(c, "patc_emu_touch", params, args, 5);
	}
	return p;
}

void ptx_align(LowerCtx *c, LLVMValueRef inst, unsigned bytes)
{
	const PtxPlan *plan = c->backend;
	if (!plan->emulate) {
		LLVMSetAlignment(inst, bytes);
		return;
	}
	/* the check before the access, which then takes its safe address */
	LLVMSetAlignment(inst, 1);
	const unsigned op = LLVMIsAStoreInst(inst) ? 1 : 0;
	LLVMPositionBuilderBefore(c->b, inst);
	LLVMSetOperand(inst, op, ptx_emu_access(c, LLVMGetOperand(inst, op), bytes, op == 1));
	LLVMPositionBuilderAtEnd(c->b, LLVMGetInstructionParent(inst));
}

bool ptx_n_multiple(const LowerKernel *k, int64_t q)
{
	return q == 1 || (k->n_runtime ? k->n_align > 0 && k->n_align % q == 0 : k->shape.N % q == 0);
}

/* ---- C: where an element lies, how it is written, what that moves ---- */

LLVMValueRef ptx_c_ptr(LowerCtx *c, LLVMValueRef m, LLVMValueRef col)
{
	const LowerKernel *k = c->k;
	LLVMValueRef at = k->shape.layout == PAT_LAYOUT_KN
	                          ? ll_add(c, ll_mulv(c, m, c->N), col)
	                          : ll_add(c, ll_mul(c, col, k->shape.M), m);
	return LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, "");
}

void ptx_c_put(LowerCtx *c, LLVMValueRef p, LLVMValueRef v)
{
	const PtxPlan *plan = c->backend;
	emu_global(c, p, 4, true, c->C);
	if (plan->atomic)
		LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpFAdd, p, v, LLVMAtomicOrderingMonotonic, 0);
	else
		LLVMBuildStore(c->b, v, p);
}

void ptx_c_add(LowerCtx *c, LLVMValueRef p, LLVMValueRef *v, int n)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate) { /* checked and counted as the one access it is on the GPU */
		p = ptx_emu_access(c, p, 4 * (unsigned)n, true);
		for (int e = 0; e < n; e++) {
			LLVMValueRef at = ll_i64(c, e);
			LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpFAdd, LLVMBuildGEP2(c->b, c->f32, p, &at, 1, ""), v[e],
			                   LLVMAtomicOrderingMonotonic, 0);
		}
		return;
	}
	LLVMTypeRef params[5] = {LLVMPointerTypeInContext(c->ctx, 1), c->f32, c->f32, c->f32, c->f32};
	LLVMValueRef args[5] = {LLVMBuildAddrSpaceCast(c->b, p, params[0], "cg"), v[0], v[1], n > 2 ? v[2] : NULL,
	                        n > 2 ? v[3] : NULL};
	const char *text = n > 2 ? "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};"
	                         : "red.global.add.v2.f32 [$0], {$1, $2};";
	const char *cons = n > 2 ? "l,f,f,f,f,~{memory}" : "l,f,f,~{memory}";
	LLVMTypeRef ty = LLVMFunctionType(LLVMVoidTypeInContext(c->ctx), params, (unsigned)n + 1, 0);
	LLVMValueRef red = LLVMGetInlineAsm(ty, text, strlen(text), cons, strlen(cons), 1, 0, LLVMInlineAsmDialectATT, 0);
	LLVMBuildCall2(c->b, ty, red, args, (unsigned)n + 1, "");
}

/* C's traffic: zeroed first where the plan needs it, then stored once, or
 * read and written by the atomics of each of the adders to an element. */
double ptx_c_traffic(const LowerKernel *k, const PtxPlan *plan, int64_t adders)
{
	const double c = (double)k->shape.M * (double)k->shape.N * 4;
	if (plan->wsum) /* each part's slice stored, the slices read by the last, C stored */
		return (plan->zero ? c : 0) + (2 * (double)plan->nsplit + 1) * c;
	return (plan->zero ? c : 0) + (plan->atomic ? 2 * c * (double)adders : c);
}

/* ---- cp.async and barriers ---- */

void ptx_emu_cp(LowerCtx *c, LLVMValueRef dst, LLVMValueRef src, unsigned bytes, LLVMValueRef ok)
{
	LLVMValueRef shared, from = gep_base(src), unused;
	int64_t size;
	src = ptx_emu_check(c, src, bytes, ok);
	dst = emu_check(c, dst, bytes, NULL, &shared, &size, &unused);
	if (ptx_emu_inject("nocopy"))
		return;
	LLVMTypeRef params[7] = {c->ptr, c->ptr, c->i32, c->i32, c->ptr, c->i64, c->ptr};
	LLVMValueRef args[7] = {dst,
	                        src,
	                        LLVMConstInt(c->i32, bytes, 0),
	                        ok ? LLVMBuildZExt(c->b, ok, c->i32, "") : LLVMConstInt(c->i32, 1, 0),
	                        shared ? shared : LLVMConstNull(c->ptr),
	                        ll_i64(c, size),
	                        from == c->X || from == c->values ? from : LLVMConstNull(c->ptr)};
	ptx_emu_call(c, "patc_emu_cp", params, args, 7);
}

void ptx_cp_commit(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	if (plan->emulate)
		ptx_emu_call(c, "patc_emu_commit", NULL, NULL, 0);
	else
		ptx_call(c, "llvm.nvvm.cp.async.commit.group", NULL, 0);
}

void ptx_cp_wait(LowerCtx *c, int pending)
{
	const PtxPlan *plan = c->backend;
	LLVMValueRef n = LLVMConstInt(c->i32, (unsigned)pending, 0);
	if (!plan->emulate) {
		ptx_call(c, "llvm.nvvm.cp.async.wait.group", &n, 1);
		return;
	}
	if (ptx_emu_inject("wait")) /* one group fewer than asked */
		n = LLVMConstInt(c->i32, (unsigned)pending + 1, 0);
	ptx_emu_call(c, "patc_emu_wait", &c->i32, &n, 1);
}

void ptx_barrier(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	if (!plan->emulate) {
		ptx_call(c, "llvm.nvvm.barrier0", NULL, 0);
		return;
	}
	if (ptx_emu_inject("nobarrier"))
		return;
	ptx_emu_call(c, "patc_emu_sync", NULL, NULL, 0);
	if (ptx_emu_inject("barrier")) { /* the block's second row of threads, once more */
		LLVMBasicBlockRef more = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "injbar");
		LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "injbarn");
		LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntEQ, ptx_sreg(c, "tid.y"), ll_i64(c, 1), ""), more, next);
		LLVMPositionBuilderAtEnd(c->b, more);
		ptx_emu_call(c, "patc_emu_sync", NULL, NULL, 0);
		LLVMBuildBr(c->b, next);
		LLVMPositionBuilderAtEnd(c->b, next);
	}

}
