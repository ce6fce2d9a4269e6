/* SPDX-License-Identifier: MIT */
/* llvm_util.h - the LLVM helpers the lowering and both backends share:
 * constants and index arithmetic at a LowerCtx's builder, declarations,
 * a module for a target machine, and the capture of LLVM's errors.
 *
 * Index arithmetic is on i64 and unnamed.  Sums and products are nsw: the
 * kernel's offsets are products of extents and strides that fit in an
 * int64_t (lower.h); quotients and remainders are unsigned, for digits and
 * other values known not to be negative.
 *
 * The error helpers write "WHAT: LLVM's message" (its first 400 bytes) to
 * err, a buffer of errmax bytes, dispose of LLVM's message and return
 * false on failure, so that a caller can return their result. */
#ifndef PATC_LLVM_UTIL_H
#define PATC_LLVM_UTIL_H

#include "lower.h"

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The i64 constant v. */
static inline LLVMValueRef ll_i64(LowerCtx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

/* x + y and x * d, nsw. */
static inline LLVMValueRef ll_add(LowerCtx *c, LLVMValueRef x, LLVMValueRef y) { return LLVMBuildNSWAdd(c->b, x, y, ""); }
static inline LLVMValueRef ll_mul(LowerCtx *c, LLVMValueRef x, int64_t d)
{
	return LLVMBuildNSWMul(c->b, x, ll_i64(c, d), "");
}

/* x * y for two values (no signed overflow). */
static inline LLVMValueRef ll_mulv(LowerCtx *c, LLVMValueRef x, LLVMValueRef y)
{
	return LLVMBuildNSWMul(c->b, x, y, "");
}

/* v / d and v % d, unsigned. */
static inline LLVMValueRef ll_udiv(LowerCtx *c, LLVMValueRef v, int64_t d)
{
	return LLVMBuildUDiv(c->b, v, ll_i64(c, d), "");
}
static inline LLVMValueRef ll_urem(LowerCtx *c, LLVMValueRef v, int64_t d)
{
	return LLVMBuildURem(c->b, v, ll_i64(c, d), "");
}

/* mod's function `name` of type ty, declared where mod has none. */
LLVMValueRef ll_function(LLVMModuleRef mod, const char *name, LLVMTypeRef ty);

/* An empty module named `name` in ctx, with tm's triple and data layout. */
LLVMModuleRef ll_module(LLVMContextRef ctx, const char *name, LLVMTargetMachineRef tm);

/* The target of `triple`; NULL with "what: message" in err where this LLVM
 * has none. */
LLVMTargetRef ll_target(const char *triple, char *err, size_t errmax, const char *what);

/* Whether e is no error; else "what: message" in err.  Consumes e. */
bool ll_ok(LLVMErrorRef e, char *err, size_t errmax, const char *what);

/* Whether mod is valid IR; else "what: the verifier's message" in err. */
bool ll_verify(LLVMModuleRef mod, char *err, size_t errmax, const char *what);

/* Emits mod through tm as assembly or an object file into *buf (the
 * caller's to dispose); false, with "what: message" in err, where LLVM
 * cannot. */
bool ll_emit(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMCodeGenFileType type, LLVMMemoryBufferRef *buf,
             char *err, size_t errmax, const char *what);

#endif
