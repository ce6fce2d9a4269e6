/* SPDX-License-Identifier: MIT */
/* llvm_util.c - the LLVM helpers the backends share; see llvm_util.h. */
#include "llvm_util.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Target.h>

#include <stdio.h>

/* "what: msg" into err; disposes of msg (LLVMDisposeMessage's). */
static void put_message(char *err, size_t errmax, const char *what, char *msg)
{
	snprintf(err, errmax, "%s: %.400s", what, msg ? msg : "");
	LLVMDisposeMessage(msg);
}

LLVMValueRef ll_function(LLVMModuleRef mod, const char *name, LLVMTypeRef ty)
{
	LLVMValueRef f = LLVMGetNamedFunction(mod, name);
	return f ? f : LLVMAddFunction(mod, name, ty);
}

LLVMModuleRef ll_module(LLVMContextRef ctx, const char *name, LLVMTargetMachineRef tm)
{
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext(name, ctx);
	char *triple = LLVMGetTargetMachineTriple(tm);
	LLVMSetTarget(mod, triple);
	LLVMDisposeMessage(triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	return mod;
}

LLVMTargetRef ll_target(const char *triple, char *err, size_t errmax, const char *what)
{
	LLVMTargetRef target = NULL;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		put_message(err, errmax, what, msg);
		return NULL;
	}
	LLVMDisposeMessage(msg);
	return target;
}

bool ll_ok(LLVMErrorRef e, char *err, size_t errmax, const char *what)
{
	if (!e)
		return true;
	char *msg = LLVMGetErrorMessage(e);
	snprintf(err, errmax, "%s: %.400s", what, msg);
	LLVMDisposeErrorMessage(msg);
	return false;
}

bool ll_verify(LLVMModuleRef mod, char *err, size_t errmax, const char *what)
{
	char *msg = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		put_message(err, errmax, what, msg);
		return false;
	}
	LLVMDisposeMessage(msg);
	return true;
}

bool ll_emit(LLVMTargetMachineRef tm, LLVMModuleRef mod, LLVMCodeGenFileType type, LLVMMemoryBufferRef *buf,
             char *err, size_t errmax, const char *what)
{
	char *msg = NULL;
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, type, &msg, buf)) {
		put_message(err, errmax, what, msg);
		return false;
	}
	return true;
}
