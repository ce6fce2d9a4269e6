/* ptx.c - the NVPTX backend; see ptx.h. */
#define _POSIX_C_SOURCE 200809L
#include "ptx.h"

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

const PtxSchedule ptx_default_schedule = {32, 4, 4, 8};

enum { PTX_MAX_R = 16, PTX_MAX_V = 8 };

static const char *const known_targets[] = {"sm_80", "sm_86", "sm_89", "sm_90"};

bool ptx_target_known(const char *sm)
{
	for (size_t i = 0; i < sizeof known_targets / sizeof *known_targets; i++)
		if (!strcmp(sm, known_targets[i]))
			return true;
	return false;
}

static bool m_only(const PirLoop *l) { return !pir_loop_has_axis(l, PIR_AXIS_K); }

void ptx_plan(const Pir *ir, const PtxSchedule *s, PtxPlan *plan)
{
	memset(plan, 0, sizeof *plan);
	plan->s = s ? *s : ptx_default_schedule;
	PtxSchedule *ps = &plan->s;
	if (ps->bx < 32 || ps->bx % 32)
		ps->bx = 32;
	if (ps->by < 1 || ps->bx * ps->by > 1024)
		ps->by = 1;
	ps->v = ps->v < 1 ? 1 : ps->v > PTX_MAX_V ? PTX_MAX_V : ps->v;
	ps->r = ps->r < 1 ? 1 : ps->r > PTX_MAX_R ? PTX_MAX_R : ps->r;
	const int n = ir->nloops;
	int last = -1;
	for (int i = 0; i < n; i++)
		if (pir_loop_has_axis(&ir->loops[i], PIR_AXIS_M))
			last = i;
	const PirLoop *g = last >= 0 ? &ir->loops[last] : NULL;
	plan->group = -1;
	plan->nspread = last + 1;
	if (g && !pir_loop_is_perforated(g) && g->ncomp == 1 && g->comp[0].axis == PIR_AXIS_M) {
		plan->group = last;
		int prev = last - 1;
		while (prev >= 0 && !pir_loop_has_axis(&ir->loops[prev], PIR_AXIS_M))
			prev--;
		plan->nspread = prev + 1;
	}
	bool shared = plan->group >= 0;
	for (int i = plan->group + 1; shared && i < n; i++)
		shared = !pir_loop_is_perforated(&ir->loops[i]);
	int r = 1;
	if (shared)
		for (int d = ps->r; d >= 1; d--)
			if (g->nnz % d == 0) {
				r = d;
				break;
			}
	ps->r = r;
	plan->nsets = 1;
	bool dense_m = true;
	for (int i = 0; i < n; i++) {
		const PirLoop *l = &ir->loops[i];
		if (i < plan->nspread && i != plan->group) {
			plan->nsets *= l->nnz;
			plan->atomic |= !m_only(l);
		}
		if (pir_loop_has_axis(l, PIR_AXIS_M) && pir_loop_is_perforated(l))
			dense_m = false;
	}
	if (plan->group >= 0)
		plan->nsets *= g->nnz / r;
	plan->zero = plan->atomic || !dense_m;
	if (plan->atomic)
		plan->why = "a loop spread over thread blocks runs along k: threads add to C with atomics";
	else if (r > 1)
		plan->why = "every row of C has one thread; each takes several rows that keep the same k";
	else
		plan->why = "every row of C has one thread, which accumulates it in registers";
}

void ptx_grid(const PtxPlan *plan, int64_t n, unsigned grid[3], unsigned block[3])
{
	const PtxSchedule *s = &plan->s;
	int64_t cols = (int64_t)s->bx * s->v;
	grid[0] = (unsigned)((plan->nsets + s->by - 1) / s->by);
	grid[1] = (unsigned)((n + cols - 1) / cols);
	grid[2] = 1;
	block[0] = (unsigned)s->bx, block[1] = (unsigned)s->by, block[2] = 1;
}

/* ---- the kernel body ---- */

typedef struct GpuArg {
	const PtxPlan *plan;
	int r, v;
	LLVMValueRef acc[PTX_MAX_R][PTX_MAX_V]; /* allocas */
	LLVMValueRef col[PTX_MAX_V];            /* clamped columns, i64 */
	LLVMValueRef mrow;                      /* alloca: the thread's first row */
	int64_t row_step, m_step;               /* the next row of the group */
	LLVMValueRef fma;
	LLVMTypeRef fma_ty;
} GpuArg;

static LLVMValueRef i64c(LowerCtx *c, int64_t v) { return LLVMConstInt(c->i64, (unsigned long long)v, 1); }

static LLVMValueRef sreg(LowerCtx *c, const char *name)
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

static LLVMValueRef load_f32(LowerCtx *c, LLVMValueRef base, LLVMValueRef at, const char *name)
{
	return LLVMBuildLoad2(c->b, c->f32, LLVMBuildGEP2(c->b, c->f32, base, &at, 1, ""), name);
}

/* The innermost point: one X element per column, r weights, r v FMAs. */
static void gpu_point(LowerCtx *c, const LowerPoint *p, void *arg)
{
	GpuArg *a = arg;
	const LowerKernel *k = c->k;
	LLVMBuildStore(c->b, p->m, a->mrow);
	LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "point");
	LLVMBasicBlockRef skip = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "pad");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, p->k, i64c(c, k->K), ""), body, skip);
	LLVMPositionBuilderAtEnd(c->b, body);
	LLVMValueRef x[PTX_MAX_V];
	for (int j = 0; j < a->v; j++) {
		LLVMValueRef at = k->layout == PAT_LAYOUT_KN
		                      ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, p->k, i64c(c, k->N), ""), a->col[j], "")
		                      : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, a->col[j], i64c(c, k->K), ""), p->k, "");
		x[j] = load_f32(c, c->X, at, "x");
	}
	for (int r = 0; r < a->r; r++) {
		LLVMValueRef row = LLVMBuildNSWAdd(c->b, p->row, i64c(c, r * a->row_step), "");
		LLVMValueRef w = load_f32(c, c->values, row, "w");
		for (int j = 0; j < a->v; j++) {
			LLVMValueRef acc = LLVMBuildLoad2(c->b, c->f32, a->acc[r][j], "");
			LLVMValueRef args[3] = {w, x[j], acc};
			LLVMBuildStore(c->b, LLVMBuildCall2(c->b, a->fma_ty, a->fma, args, 3, ""), a->acc[r][j]);
		}
	}
	LLVMBuildBr(c->b, skip);
	LLVMPositionBuilderAtEnd(c->b, skip);
}

static void gpu_body(LowerCtx *c)
{
	const PtxPlan *plan = c->backend;
	const LowerKernel *k = c->k;
	const Pir *ir = k->ir;
	GpuArg a = {.plan = plan, .r = plan->s.r, .v = plan->s.v};
	unsigned id = LLVMLookupIntrinsicID("llvm.fmuladd", 12);
	a.fma = LLVMGetIntrinsicDeclaration(c->mod, id, &c->f32, 1);
	a.fma_ty = LLVMIntrinsicGetType(c->ctx, id, &c->f32, 1);

	LLVMValueRef tx = sreg(c, "tid.x"), ty = sreg(c, "tid.y");
	LLVMValueRef cx = sreg(c, "ctaid.x"), cy = sreg(c, "ctaid.y");
	LLVMValueRef set = LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, cx, i64c(c, plan->s.by), ""), ty, "set");
	LLVMBasicBlockRef work = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "work");
	LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "done");
	LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, set, i64c(c, plan->nsets), ""), work, done);
	LLVMPositionBuilderAtEnd(c->b, work);

	/* the set's digits, innermost first: the group's chunk, then the
	 * spread loops from the last */
	LLVMValueRef rest = set;
	if (plan->group >= 0) {
		const PirLoop *g = &ir->loops[plan->group];
		int64_t chunks = g->nnz / a.r;
		LLVMValueRef chunk = LLVMBuildURem(c->b, rest, i64c(c, chunks), "");
		rest = LLVMBuildUDiv(c->b, rest, i64c(c, chunks), "");
		c->lo[plan->group] = LLVMBuildNSWMul(c->b, chunk, i64c(c, a.r), "glo");
		c->hi[plan->group] = LLVMBuildNSWAdd(c->b, c->lo[plan->group], i64c(c, 1), "ghi");
		int64_t step = 1;
		for (int i = plan->group + 1; i < ir->nloops; i++)
			step *= ir->loops[i].nnz;
		a.row_step = step;
		a.m_step = g->comp[0].stride;
	}
	for (int i = plan->nspread - 1; i >= 0; i--) {
		if (i == plan->group)
			continue;
		int64_t nnz = ir->loops[i].nnz;
		c->lo[i] = i ? LLVMBuildURem(c->b, rest, i64c(c, nnz), "") : rest;
		c->hi[i] = LLVMBuildNSWAdd(c->b, c->lo[i], i64c(c, 1), "");
		if (i)
			rest = LLVMBuildUDiv(c->b, rest, i64c(c, nnz), "");
	}

	/* the thread's columns, clamped into range for the loads */
	LLVMValueRef first = LLVMBuildNSWAdd(
		c->b, c->n0,
		LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, cy, i64c(c, (int64_t)plan->s.bx * a.v), ""), tx, ""), "");
	LLVMValueRef last = LLVMBuildNSWSub(c->b, c->n1, i64c(c, 1), "");
	LLVMValueRef valid[PTX_MAX_V], ncol[PTX_MAX_V];
	for (int j = 0; j < a.v; j++) {
		ncol[j] = LLVMBuildNSWAdd(c->b, first, i64c(c, (int64_t)j * plan->s.bx), "n");
		valid[j] = LLVMBuildICmp(c->b, LLVMIntSLT, ncol[j], c->n1, "");
		a.col[j] = LLVMBuildSelect(c->b, valid[j], ncol[j], last, "");
	}
	LLVMValueRef zero = LLVMConstReal(c->f32, 0.0);
	for (int r = 0; r < a.r; r++)
		for (int j = 0; j < a.v; j++) {
			a.acc[r][j] = lower_entry_alloca(c, c->f32, "acc");
			LLVMBuildStore(c->b, zero, a.acc[r][j]);
		}
	a.mrow = lower_entry_alloca(c, c->i64, "mrow");
	LLVMBuildStore(c->b, i64c(c, k->M), a.mrow);

	LowerPoint start = {i64c(c, 0), i64c(c, 0), i64c(c, 0)};
	lower_nest(c, 0, ir->nloops, &start, gpu_point, &a);

	/* write the tile: one owner stores, shared rows add atomically */
	LLVMValueRef m0 = LLVMBuildLoad2(c->b, c->i64, a.mrow, "m0");
	for (int r = 0; r < a.r; r++) {
		LLVMValueRef m = LLVMBuildNSWAdd(c->b, m0, i64c(c, r * a.m_step), "m");
		LLVMValueRef mok = LLVMBuildICmp(c->b, LLVMIntSLT, m, i64c(c, k->M), "");
		for (int j = 0; j < a.v; j++) {
			LLVMBasicBlockRef st = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "store");
			LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(c->ctx, c->fn, "stored");
			LLVMBuildCondBr(c->b, LLVMBuildAnd(c->b, mok, valid[j], ""), st, next);
			LLVMPositionBuilderAtEnd(c->b, st);
			LLVMValueRef at = k->layout == PAT_LAYOUT_KN
			                      ? LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, m, i64c(c, k->N), ""), ncol[j], "")
			                      : LLVMBuildNSWAdd(c->b, LLVMBuildNSWMul(c->b, ncol[j], i64c(c, k->M), ""), m, "");
			LLVMValueRef cp = LLVMBuildGEP2(c->b, c->f32, c->C, &at, 1, "");
			LLVMValueRef v = LLVMBuildLoad2(c->b, c->f32, a.acc[r][j], "");
			if (plan->atomic)
				LLVMBuildAtomicRMW(c->b, LLVMAtomicRMWBinOpFAdd, cp, v, LLVMAtomicOrderingMonotonic, 0);
			else
				LLVMBuildStore(c->b, v, cp);
			LLVMBuildBr(c->b, next);
			LLVMPositionBuilderAtEnd(c->b, next);
		}
	}
	LLVMBuildBr(c->b, done);
	LLVMPositionBuilderAtEnd(c->b, done);
}

static void no_prologue(LowerCtx *c) { (void)c; }

LowerHooks ptx_hooks(PtxPlan *plan)
{
	return (LowerHooks){.prologue = no_prologue, .body = gpu_body, .backend = plan};
}

/* ---- the module ---- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_nvptx(void)
{
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
}

static bool take_error(LLVMErrorRef e, char err[PTX_ERR_MAX], const char *what)
{
	if (!e)
		return false;
	char *msg = LLVMGetErrorMessage(e);
	snprintf(err, PTX_ERR_MAX, "%s: %s", what, msg);
	LLVMDisposeErrorMessage(msg);
	return true;
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
	pthread_once(&init_once, init_nvptx);
	const char *triple = "nvptx64-nvidia-cuda";
	LLVMTargetRef target;
	char *msg = NULL;
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		snprintf(err, PTX_ERR_MAX, "no NVPTX target in this LLVM: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		return false;
	}
	LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, sm, "+ptx80", LLVMCodeGenLevelAggressive,
	                                                  LLVMRelocDefault, LLVMCodeModelDefault);
	LLVMContextRef ctx = LLVMContextCreate();
	LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("patc", ctx);
	LLVMSetTarget(mod, triple);
	LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
	char *dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);
	unsigned readonly = LLVMGetEnumAttributeKindForName("readonly", 8);
	for (int i = 0; i < nk; i++) {
		ptx_plan(ks[i].k.ir, &ks[i].s, &ks[i].plan);
		LowerHooks hooks = ptx_hooks(&ks[i].plan);
		LLVMValueRef fn = lower_kernel(ctx, mod, &ks[i].k, &hooks);
		LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
		const unsigned ro[] = {1, 3, 4}; /* X, values, index */
		for (size_t j = 0; j < sizeof ro / sizeof *ro; j++)
			LLVMAddAttributeAtIndex(fn, ro[j], LLVMCreateEnumAttribute(ctx, readonly, 0));
	}
	bool ok = true;
	char *verr = NULL;
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &verr)) {
		snprintf(err, PTX_ERR_MAX, "internal error: invalid kernel module: %.400s", verr);
		ok = false;
	}
	LLVMDisposeMessage(verr);
	if (ok) {
		LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
		ok = !take_error(LLVMRunPasses(mod, "default<O3>", tm, po), err, "optimising the kernels");
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
	if (ok && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf)) {
		snprintf(err, PTX_ERR_MAX, "emitting PTX: %s", msg ? msg : "");
		LLVMDisposeMessage(msg);
		ok = false;
	}
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
