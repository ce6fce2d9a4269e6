/* SPDX-License-Identifier: MIT */
/* ptx_impl.h - what the NVPTX backend's files share inside it: the device
 * operations of ptx_ops.c, which both mappings use, and the tensor-core
 * mapping's entry points (tc.c), which ptx.c calls.  tc.c uses ptx_ops.c
 * only, never ptx.c. */
#ifndef PATC_PTX_IMPL_H
#define PATC_PTX_IMPL_H

#include "ptx.h"
#include "../lower/llvm_util.h"

/* The special register `name` (tid.x, ctaid.y, ...) as an i64; under
 * emulation, the global patc_emu_NAME (dots as underscores). */
LLVMValueRef ptx_sreg(LowerCtx *c, const char *name);

/* A call of the LLVM intrinsic `name` (not overloaded). */
LLVMValueRef ptx_call(LowerCtx *c, const char *name, LLVMValueRef *args, unsigned nargs);
/* The same for an overloaded intrinsic, with its overload types. */
LLVMValueRef ptx_call_typed(LowerCtx *c, const char *name, LLVMTypeRef *types, unsigned ntypes, LLVMValueRef *args,
                            unsigned nargs);

/* &C[m, col] (C[col, m] in layout nk). */
LLVMValueRef ptx_c_ptr(LowerCtx *c, LLVMValueRef m, LLVMValueRef col);
/* *p = v, or *p += v with an atomic where the plan adds into a zeroed C. */
void ptx_c_put(LowerCtx *c, LLVMValueRef p, LLVMValueRef v);
/* p[0..n-1] += v[0..n-1] (n: 2 or 4, p aligned to 4 n bytes) with one vector
 * red (PtxPlan's vred); emulated, n atomics, checked and counted as one
 * access. */
void ptx_c_add(LowerCtx *c, LLVMValueRef p, LLVMValueRef *v, int n);

/* The smaller of two signed i64 values. */
LLVMValueRef ptx_min(LowerCtx *c, LLVMValueRef x, LLVMValueRef y);

/* Emulated: adds bytes (an i64) to the global patc_emu_copied[what], the
 * bytes the stage copies read from global memory (0: X, 1: the weights). */
void ptx_emu_count(LowerCtx *c, int what, LLVMValueRef bytes);

/* Emulated: checks an access of `bytes` (a power of two) at p, a pointer
 * or an i64 address, for what a GPU would fault on and the host would not:
 * where p is not aligned to bytes, the global patc_emu_bad[0] becomes
 * bytes; where p points into a block's shared memory (a GEP of one of its
 * buffers) or into X and the access does not lie inside it,
 * patc_emu_bad[1] becomes 1 (shared memory) or 2 (X), where ok (an i1;
 * NULL: always).  ptx_emulate reports either.  Returns the address the
 * host should access: p, or where it lies outside, the buffer's start (so
 * that the host reads and writes nothing it must not). */
LLVMValueRef ptx_emu_check(LowerCtx *c, LLVMValueRef p, unsigned bytes, LLVMValueRef ok);
/* Emulated: ptx_emu_check of an access of p (a pointer), and where it is
 * the block's shared memory, the access passed to the host's race check
 * (PtxEmuTouch).  Returns the address to access. */
LLVMValueRef ptx_emu_access(LowerCtx *c, LLVMValueRef p, unsigned bytes, bool write);
/* inst, a load or store of global or shared memory, aligned to `bytes`:
 * its alignment, and emulated, ptx_emu_access of its address (the host's
 * access left unaligned, so that it cannot fault before the check). */
void ptx_align(LowerCtx *c, LLVMValueRef inst, unsigned bytes);

/* The emulator's global `name` (made where missing, null), which the host
 * points to the function that stands in for a GPU instruction; a call of
 * that function, void(params). */
LLVMValueRef ptx_emu_hook(LowerCtx *c, const char *name);
void ptx_emu_call(LowerCtx *c, const char *name, LLVMTypeRef *params, LLVMValueRef *args, unsigned n);
/* Whether PATC_EMU_INJECT (tests only) plants `what` (ptx.c lists them). */
bool ptx_emu_inject(const char *what);
/* Emulated cp.async of `bytes` from global src to the block's shared dst,
 * zeros where !ok (an i1; NULL: always copies): both checked
 * (ptx_emu_check; src where ok), then passed to the host (PtxEmuCp),
 * which lands it at the thread's cp.async.wait_group. */
void ptx_emu_cp(LowerCtx *c, LLVMValueRef dst, LLVMValueRef src, unsigned bytes, LLVMValueRef ok);
/* cp.async.commit_group, cp.async.wait_group pending (emulated, the
 * host's). */
void ptx_cp_commit(LowerCtx *c);
void ptx_cp_wait(LowerCtx *c, int pending);
/* bar.sync 0: the block's threads meet (emulated, at the host's, which
 * fails a block whose threads reach different numbers: a GPU would hang). */
void ptx_barrier(LowerCtx *c);

/* C's part of ptx_traffic: the bytes of C zeroed first where the plan needs
 * it, then stored once, or read and written by the atomics of each of the
 * adders to an element. */
double ptx_c_traffic(const LowerKernel *k, const PtxPlan *plan, int64_t adders);

/* ---- the tensor-core mapping (tc.c), called by ptx.c ---- */

/* ptx_traffic of a staged tensor-core plan. */
bool ptx_tc_traffic(const LowerKernel *k, const PtxPlan *plan, PtxTraffic *t);

/* The tensor-core kernel body. */
void ptx_tc_body(LowerCtx *c);

#endif
