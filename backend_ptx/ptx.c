/* SPDX-License-Identifier: MIT */
/* ptx.c - the NVPTX backend's module (ptx_compile): its kernels planned
 * for the target (ptx_plan.c) and lowered with ptx_hooks' body
 * (ptx_body.c, or the tensor cores' in tc.c), optimised and printed as
 * PTX; see ptx.h. */
#define _POSIX_C_SOURCE 200809L
#include "ptx_impl.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

bool ptx_compile(PtxKernelSpec *ks, int nk, const char *sm, char **ptx, char **llvm,
                 char err[PTX_ERR_MAX])
{
	*ptx = NULL;
	if (llvm)
		*llvm = NULL;
	if (!ptx_target_known(sm)) {
		snprintf(err, PTX_ERR_MAX, "unknown GPU target '%s'", sm);
		return false;
	}
	/* wgmma exists on sm_90a only: a module with a wgmma kernel is for it */
	bool wg = false, vred = false;
	for (int i = 0; i < nk; i++) {
		if (strcmp(sm, "sm_90"))
			ks[i].s.wg = 0;
		ptx_plan_target(&ks[i].k, &ks[i].s, sm, &ks[i].plan);
		ptx_plan_epilogue(&ks[i].k, ks[i].bias, &ks[i].plan);
		wg |= ks[i].plan.tc_wg;
		vred |= ks[i].plan.vred;
	}
	pthread_once(&init_once, init_nvptx);
	const char *triple = "nvptx64-nvidia-cuda";
	LLVMTargetRef target = ll_target(triple, err, PTX_ERR_MAX, "no NVPTX target in this LLVM");
	if (!target)
		return false;
	const char *isa = vred ? "+ptx81" : "+ptx80"; /* PTX_ISA_VERSION_VRED, PTX_ISA_VERSION */
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, wg ? "sm_90a" : sm, isa,
	                                                  LLVMCodeGenLevelAggressive, LLVMRelocDefault,
	                                                  LLVMCodeModelDefault);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = ll_module(ctx, "patc", tm);
	unsigned readonly = LLVMGetEnumAttributeKindForName("readonly", 8);
	for (int i = 0; i < nk; i++)
		for (int epi = 0; epi < 1 + ks[i].plan.epi_after; epi++) { /* the kernel, its epilogue kernel */
			LowerHooks hooks = epi ? ptx_epi_hooks(&ks[i].plan) : ptx_hooks(&ks[i].plan);
			LowerKernel k = ks[i].k;
			char name[PIR_NAME_MAX + 200];
			snprintf(name, sizeof name, "%s_epi", k.name);
			if (epi)
				k.name = name;
			LLVMValueRef fn = lower_kernel(ctx, mod, &k, &hooks);
			LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
			const unsigned ro[] = {1, 3, 4, 8}; /* X, values, index, bias */
			for (size_t j = 0; j < sizeof ro / sizeof *ro; j++)
				LLVMAddAttributeAtIndex(fn, ro[j], LLVMCreateEnumAttribute(ctx, readonly, 0));
		}
	bool ok = ll_verify(mod, err, PTX_ERR_MAX, "internal error: invalid kernel module");
	if (ok) {
		LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
		ok = ll_ok(LLVMRunPasses(mod, "default<O3>", tm, po), err, PTX_ERR_MAX, "optimising the kernels");
		LLVMDisposePassBuilderOptions(po);
	}
	if (ok && llvm) {
		char *text = LLVMPrintModuleToString(mod);
		*llvm = strdup(text);
		LLVMDisposeMessage(text);
		if (!*llvm) {
			snprintf(err, PTX_ERR_MAX, "out of memory");
			ok = false;
		}
	}
	LLVMMemoryBufferRef buf = NULL;
	if (ok)
		ok = ll_emit(tm, mod, LLVMAssemblyFile, &buf, err, PTX_ERR_MAX, "emitting PTX");
	if (ok) {
		size_t len = LLVMGetBufferSize(buf);
		*ptx = malloc(len + 1);
		if (!*ptx) {
			snprintf(err, PTX_ERR_MAX, "out of memory");
			ok = false;
		} else {
			memcpy(*ptx, LLVMGetBufferStart(buf), len);
			(*ptx)[len] = 0;
		}
		LLVMDisposeMemoryBuffer(buf);
	}
	if (!ok && llvm) {
		free(*llvm);
		*llvm = NULL;
	}
	LLVMDisposeModule(mod);
	LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	return ok;
}
