/* SPDX-License-Identifier: MIT */
/* gpu.c - one SpMM on the GPU; see gpu.h.
 *
 * C is poisoned with NaN before the checked run, so an element that no
 * thread writes shows.  The reference is computed in float64 on the host
 * for a sample of columns (64 unless the caller says) (all rows), so that large shapes check
 * quickly.  Timing: CUDA events around the kernel (and the zeroing of C
 * when the kernel needs it), L2 flushed before each run by writing a
 * buffer larger than it, the median of the runs after a warm-up. */
#define _POSIX_C_SOURCE 200809L
#include "gpu.h"
#include "../support/util.h"
#include "../weights/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SAMPLE_COLS = 64, FLUSH_BYTES = 256 << 20 };
static const uint32_t NAN_BITS = 0x7fc00000u;

typedef struct Dev {
	CuPtr x, c, values, index_ptrs, index[PIR_MAX_LOOPS], flush, w;
} Dev;

static void dev_free(Cuda *cu, Dev *d)
{
	cuda_free(cu, d->x), cuda_free(cu, d->c), cuda_free(cu, d->values);
	cuda_free(cu, d->index_ptrs), cuda_free(cu, d->flush), cuda_free(cu, d->w);
	for (int i = 0; i < PIR_MAX_LOOPS; i++)
		cuda_free(cu, d->index[i]);
}

/* n floats as 16-bit dt values (malloc'd; NULL when out of memory). */
static uint16_t *to16(const float *v, size_t n, PatDtype dt)
{
	uint16_t *h = malloc((n ? n : 1) * sizeof *h);
	for (size_t i = 0; h && i < n; i++)
		h[i] = dt == PAT_F16 ? f32_to_fp16(v[i]) : f32_to_bf16(v[i]);
	return h;
}

/* ||C - ref|| / ||ref|| on a sample of columns, the reference in float64
 * on the masked weight (prune_check_error); +inf (note says why) when out
 * of memory. */
static double sampled_error(const GpuProblem *p, PatDtype dt, const float *c, char note[CUDA_ERR_MAX])
{
	double e = prune_check_error(p->dense, p->x, c, p->shape.M, p->shape.K, p->shape.N, p->shape.layout == PAT_LAYOUT_KN, dt,
	                             p->check_cols > 0 ? p->check_cols : SAMPLE_COLS);
	if (e >= 0)
		return e;
	snprintf(note, CUDA_ERR_MAX, "out of memory for the float64 reference");
	return INFINITY;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The median of reps runs of what `run` launches, L2 flushed before each. */
typedef bool (*Launch)(Cuda *cu, void *arg, char err[CUDA_ERR_MAX]);
static bool time_us(Cuda *cu, const Dev *d, int reps, Launch run, void *arg, double *us, char err[CUDA_ERR_MAX])
{
	double t[64];
	if (reps > 64)
		reps = 64;
	if (!run(cu, arg, err) || !cuda_sync(cu, err)) /* warm-up */
		return false;
	for (int i = 0; i < reps; i++) {
		float ms = 0;
		if (!cuda_fill32(cu, d->flush, (uint32_t)i, FLUSH_BYTES / 4, err) || !cuda_record(cu, 0, err) ||
		    !run(cu, arg, err) || !cuda_record(cu, 1, err) || !cuda_elapsed_ms(cu, &ms, err))
			return false;
		t[i] = 1e3 * ms;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	*us = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
	return true;
}

typedef struct KernelLaunch {
	void *fn;
	unsigned grid[3], block[3];
	void *args[7];
	bool zero;
	unsigned smem; /* dynamic shared memory */
	CuPtr c;
	size_t nc;
} KernelLaunch;

static bool launch_kernel(Cuda *cu, void *arg, char err[CUDA_ERR_MAX])
{
	KernelLaunch *l = arg;
	return (!l->zero || cuda_fill32(cu, l->c, 0, l->nc, err)) &&
	       cuda_launch(cu, l->fn, l->grid, l->block, l->smem, l->args, err);
}

typedef struct BlasLaunch {
	const GpuProblem *p;
	const Dev *d;
} BlasLaunch;

static bool launch_blas(Cuda *cu, void *arg, char err[CUDA_ERR_MAX])
{
	BlasLaunch *l = arg;
	return cuda_sgemm(cu, l->p->shape.layout == PAT_LAYOUT_KN, l->p->shape.M, l->p->shape.K, l->p->shape.N, l->d->w, l->d->x, l->d->c, err);
}

static bool launch_blas16(Cuda *cu, void *arg, char err[CUDA_ERR_MAX])
{
	BlasLaunch *l = arg;
	return cuda_gemm16(cu, l->p->shape.dtype == PAT_F16, l->p->shape.layout == PAT_LAYOUT_KN, l->p->shape.M, l->p->shape.K, l->p->shape.N,
	                   l->d->w, l->d->x, l->d->c, err);
}

/* The first steps of gpu_measure and gpu_emulate: r cleared, p's kernel
 * (named name) compiled to PTX into *ptx and spec, timed in r. */
static bool compile_kernel(const GpuProblem *p, const char *name, PtxKernelSpec *spec, char **ptx, GpuResult *r,
                           char err[CUDA_ERR_MAX])
{
	memset(r, 0, sizeof *r);
	r->cublas_us = -1;
	*spec = (PtxKernelSpec){.k = {p->ir, p->shape, name, 1, {0}, false, 0}, .s = p->s};
	*ptx = NULL;
	double t0 = util_now();
	if (!ptx_compile(spec, 1, p->sm, ptx, NULL, err))
		return false;
	if (!ptx_grid_fits(&spec->plan, p->shape.N, err)) {
		free(*ptx);
		*ptx = NULL;
		return false;
	}
	r->compile_ms = 1e3 * (util_now() - t0);
	r->plan = spec->plan;
	PtxTraffic t;
	if (ptx_traffic(&spec->k, &spec->plan, &t))
		r->l2_bytes = t.x + t.w_staged + t.w_direct + t.c;
	return true;
}

bool gpu_measure(Cuda *cu, const GpuProblem *p, GpuResult *r, char err[CUDA_ERR_MAX])
{
	const Pir *ir = p->ir;
	const int64_t M = p->shape.M, K = p->shape.K, N = p->shape.N;
	const char *name = "patc_spmm";
	PtxKernelSpec spec;
	char *ptx;
	if (!compile_kernel(p, name, &spec, &ptx, r, err))
		return false;
	void *module = NULL, *fn = NULL;
	Dev d = {0};
	float *c = malloc((size_t)(M * N) * sizeof *c);
	PirMetrics pm;
	pir_metrics(ir, &pm);
	size_t nc = (size_t)(M * N);
	/* on tensor cores X and the weights go up as 16-bit values */
	const bool tc = spec.plan.tc;
	const PatDtype dt = tc ? p->shape.dtype : PAT_F32;
	const size_t es = tc ? 2 : 4;
	uint16_t *x16 = tc ? to16(p->x, (size_t)(K * N), dt) : NULL;
	const void *xs = tc ? (const void *)x16 : p->x;
	PtxWeights w;
	const bool wok = ptx_weights(&spec.k, &spec.plan, p->values, pm.values, p->mask, &w);
	bool ok = c && (!tc || x16) && wok && cuda_load_ptx(cu, ptx, &module, err) &&
	          cuda_kernel(cu, module, name, &fn, err) &&
	          (!spec.plan.smem_dyn || cuda_kernel_smem(cu, fn, spec.plan.smem_dyn, err)) &&
	          cuda_alloc(cu, &d.x, (size_t)(K * N) * es, err) &&
	          cuda_alloc(cu, &d.c, nc * 4, err) && cuda_alloc(cu, &d.values, w.values_bytes, err) &&
	          cuda_alloc(cu, &d.index_ptrs, PIR_MAX_LOOPS * sizeof(CuPtr), err) &&
	          cuda_alloc(cu, &d.flush, FLUSH_BYTES, err) && cuda_upload(cu, d.x, xs, (size_t)(K * N) * es, err) &&
	          cuda_upload(cu, d.values, w.values, w.values_bytes, err);
	if (!c || (tc && !x16) || !wok)
		snprintf(err, CUDA_ERR_MAX, "out of memory for C and the kernel's inputs on the host");
	free(x16);
	free(ptx);
	CuPtr ptrs[PIR_MAX_LOOPS] = {0};
	for (int i = 0; ok && i < ir->nloops; i++)
		if (w.index[i]) {
			ok = cuda_alloc(cu, &d.index[i], w.index_bytes[i], err) &&
			     cuda_upload(cu, d.index[i], w.index[i], w.index_bytes[i], err);
			ptrs[i] = d.index[i];
		}
	r->flops = 2.0 * (double)pm.values * (double)N;
	r->bytes = (double)(K * N) * (double)es + (double)nc * 4 + (double)w.values_bytes;
	for (int i = 0; i < PIR_MAX_LOOPS; i++)
		r->bytes += (double)w.index_bytes[i];
	if (wok)
		ptx_weights_free(&w);
	ok = ok && cuda_upload(cu, d.index_ptrs, ptrs, sizeof ptrs, err);
	KernelLaunch kl = {.fn = fn, .zero = spec.plan.zero, .smem = (unsigned)spec.plan.smem_dyn, .c = d.c, .nc = nc};
	int64_t n0 = 0, n1 = N;
	kl.args[0] = &d.x, kl.args[1] = &d.c, kl.args[2] = &d.values, kl.args[3] = &d.index_ptrs;
	kl.args[4] = &n0, kl.args[5] = &n1, kl.args[6] = &n1; /* N */
	ptx_grid(&spec.plan, N, kl.grid, kl.block);
	/* the checked run: C poisoned first */
	ok = ok && cuda_fill32(cu, d.c, NAN_BITS, nc, err) && launch_kernel(cu, &kl, err) && cuda_sync(cu, err) &&
	     cuda_download(cu, c, d.c, nc * 4, err);
	if (ok) {
		for (size_t i = 0; i < nc; i++)
			r->unwritten += isnan(c[i]);
		r->rel_err = sampled_error(p, dt, c, r->note);
		if (p->stop_us > 0) { /* hopeless already? */
			ok = time_us(cu, &d, 3, launch_kernel, &kl, &r->kernel_us, err);
			r->early = ok && r->kernel_us > p->stop_us;
		}
		if (ok && !r->early)
			ok = time_us(cu, &d, p->reps, launch_kernel, &kl, &r->kernel_us, err);
	}
	if (ok && p->cublas) {
		BlasLaunch bl = {p, &d};
		char berr[CUDA_ERR_MAX];
		uint16_t *w16 = tc ? to16(p->dense, (size_t)(M * K), dt) : NULL;
		const void *ws = tc ? (const void *)w16 : p->dense;
		if (tc && !w16)
			snprintf(err, CUDA_ERR_MAX, "out of memory for the 16-bit dense weight on the host");
		ok = (!tc || w16) && cuda_alloc(cu, &d.w, (size_t)(M * K) * es, err) &&
		     cuda_upload(cu, d.w, ws, (size_t)(M * K) * es, err);
		free(w16);
		if (ok) {
			if (!time_us(cu, &d, p->reps, tc ? launch_blas16 : launch_blas, &bl, &r->cublas_us, berr)) {
				r->cublas_us = -1;
				snprintf(r->note, sizeof r->note, "%s", berr);
			}
		}
	}
	dev_free(cu, &d);
	cuda_unload(cu, module);
	free(c);
	return ok;
}

bool gpu_emulate(const GpuProblem *p, GpuResult *r, char err[CUDA_ERR_MAX])
{
	const int64_t M = p->shape.M, K = p->shape.K, N = p->shape.N;
	PtxKernelSpec spec;
	char *ptx;
	if (!compile_kernel(p, "patc_spmm", &spec, &ptx, r, err)) /* the PTX a GPU would get, then the host's kernel */
		return false;
	free(ptx);
	snprintf(r->note, sizeof r->note, "no cuBLAS on the host emulator");
	PirMetrics pm;
	pir_metrics(p->ir, &pm);
	const bool tc = spec.plan.tc;
	const PatDtype dt = tc ? p->shape.dtype : PAT_F32;
	uint16_t *x16 = tc ? to16(p->x, (size_t)(K * N), dt) : NULL;
	float *c = malloc((size_t)(M * N) * sizeof *c);
	PtxWeights w;
	const bool wok = ptx_weights(&spec.k, &spec.plan, p->values, pm.values, p->mask, &w);
	bool ok = c && (!tc || x16) && wok;
	if (!ok)
		snprintf(err, CUDA_ERR_MAX, "out of memory for the emulated kernel's operands");
	const double t0 = util_now();
	/* (the schedule as compiled: wg dropped off sm_90) */
	const void *xe = tc ? (const void *)x16 : p->x;
	ok = ok && ptx_emulate(&spec.k, &spec.s, p->sm, xe, w.values, w.index, c, NULL, NULL, err);
	r->kernel_us = 1e6 * (util_now() - t0);
	r->early = ok && p->stop_us > 0 && r->kernel_us > p->stop_us; /* one run, the emulator's */
	if (ok) {
		for (int64_t i = 0; i < M * N; i++)
			r->unwritten += isnan(c[i]);
		r->rel_err = sampled_error(p, dt, c, r->note);
	}
	free(x16), free(c);
	if (wok)
		ptx_weights_free(&w);
	return ok;
}

/* ---- the ceilings ---- */

const char gpu_l2_ptx[] = ".version 8.0\n"
                          ".target sm_80\n"
                          ".address_size 64\n"
                          "\n"
                          ".visible .entry patc_l2_read(.param .u64 src, .param .u64 dst, .param .u32 passes)\n"
                          "{\n"
                          "\t.reg .pred %p;\n"
                          "\t.reg .b32 %r<32>;\n"
                          "\t.reg .b64 %a<8>;\n"
                          "\tld.param.u64 %a0, [src];\n"
                          "\tld.param.u64 %a1, [dst];\n"
                          "\tld.param.u32 %r0, [passes];\n"
                          "\tcvta.to.global.u64 %a0, %a0;\n"
                          "\tcvta.to.global.u64 %a1, %a1;\n"
                          "\tmov.u32 %r1, %ctaid.x;\n"
                          "\tmov.u32 %r2, %ntid.x;\n"
                          "\tmov.u32 %r3, %tid.x;\n"
                          "\tmad.lo.u32 %r1, %r1, %r2, %r3;\n"
                          "\tmov.u32 %r4, %nctaid.x;\n"
                          "\tmul.lo.u32 %r4, %r4, %r2;\n"
                          "\tshl.b32 %r7, %r4, 2;\n"
                          "\tsub.u32 %r7, %r7, 1;\n"
                          "\tmov.u32 %r5, 0;\n"
                          "\tmov.u32 %r6, 0;\n"
                          "LOOP:\n"
                          "\tmad.lo.u32 %r24, %r6, 4096, %r1;\n"
                          "\tadd.u32 %r25, %r24, %r4;\n"
                          "\tadd.u32 %r26, %r25, %r4;\n"
                          "\tadd.u32 %r27, %r26, %r4;\n"
                          "\tand.b32 %r24, %r24, %r7;\n"
                          "\tand.b32 %r25, %r25, %r7;\n"
                          "\tand.b32 %r26, %r26, %r7;\n"
                          "\tand.b32 %r27, %r27, %r7;\n"
                          "\tmul.wide.u32 %a2, %r24, 16;\n"
                          "\tmul.wide.u32 %a3, %r25, 16;\n"
                          "\tmul.wide.u32 %a4, %r26, 16;\n"
                          "\tmul.wide.u32 %a5, %r27, 16;\n"
                          "\tadd.u64 %a2, %a0, %a2;\n"
                          "\tadd.u64 %a3, %a0, %a3;\n"
                          "\tadd.u64 %a4, %a0, %a4;\n"
                          "\tadd.u64 %a5, %a0, %a5;\n"
                          "\tld.global.cg.v4.u32 {%r8, %r9, %r10, %r11}, [%a2];\n"
                          "\tld.global.cg.v4.u32 {%r12, %r13, %r14, %r15}, [%a3];\n"
                          "\tld.global.cg.v4.u32 {%r16, %r17, %r18, %r19}, [%a4];\n"
                          "\tld.global.cg.v4.u32 {%r20, %r21, %r22, %r23}, [%a5];\n"
                          "\txor.b32 %r8, %r8, %r9;\n"
                          "\txor.b32 %r10, %r10, %r11;\n"
                          "\txor.b32 %r12, %r12, %r13;\n"
                          "\txor.b32 %r14, %r14, %r15;\n"
                          "\txor.b32 %r16, %r16, %r17;\n"
                          "\txor.b32 %r18, %r18, %r19;\n"
                          "\txor.b32 %r20, %r20, %r21;\n"
                          "\txor.b32 %r22, %r22, %r23;\n"
                          "\txor.b32 %r8, %r8, %r10;\n"
                          "\txor.b32 %r12, %r12, %r14;\n"
                          "\txor.b32 %r16, %r16, %r18;\n"
                          "\txor.b32 %r20, %r20, %r22;\n"
                          "\txor.b32 %r8, %r8, %r12;\n"
                          "\txor.b32 %r16, %r16, %r20;\n"
                          "\txor.b32 %r8, %r8, %r16;\n"
                          "\txor.b32 %r5, %r5, %r8;\n"
                          "\tadd.u32 %r6, %r6, 1;\n"
                          "\tsetp.lt.u32 %p, %r6, %r0;\n"
                          "\t@%p bra LOOP;\n"
                          "\tmul.wide.u32 %a7, %r1, 4;\n"
                          "\tadd.u64 %a7, %a1, %a7;\n"
                          "\tst.global.u32 [%a7], %r5;\n"
                          "\tret;\n"
                          "}\n";

typedef struct L2Launch {
	void *fn;
	void *args[3];
} L2Launch;

static bool launch_l2(Cuda *cu, void *arg, char err[CUDA_ERR_MAX])
{
	L2Launch *l = arg;
	const unsigned grid[3] = {GPU_L2_BLOCKS, 1, 1}, block[3] = {256, 1, 1};
	return cuda_launch(cu, l->fn, grid, block, 0, l->args, err);
}

enum { CEIL_N = 8192 };

typedef struct CopyLaunch {
	CuPtr dst, src;
	size_t bytes;
} CopyLaunch;

static bool launch_copy(Cuda *cu, void *arg, char err[CUDA_ERR_MAX])
{
	CopyLaunch *l = arg;
	return cuda_copy(cu, l->dst, l->src, l->bytes, err);
}

bool gpu_ceilings(Cuda *cu, GpuCeilings *out, char err[CUDA_ERR_MAX])
{
	const int64_t n = CEIL_N;
	const size_t nn = (size_t)(n * n);
	*out = (GpuCeilings){0};
	/* random inputs in [-1, 1) (never zeros: device/METHOD.md) */
	float *h = malloc(nn * sizeof *h);
	uint16_t *h16 = malloc(nn * sizeof *h16);
	if (!h || !h16) {
		free(h), free(h16);
		snprintf(err, CUDA_ERR_MAX, "out of memory for the ceilings' inputs on the host");
		return false;
	}
	uint32_t state = 2463534242u;
	for (size_t i = 0; i < nn; i++) {
		state ^= state << 13, state ^= state >> 17, state ^= state << 5;
		h[i] = (float)(state >> 8) / 8388608.0f - 1.0f;
		h16[i] = f32_to_bf16(h[i]);
	}
	Dev d = {0};
	bool ok = cuda_alloc(cu, &d.w, nn * 4, err) && cuda_alloc(cu, &d.x, nn * 4, err) &&
	          cuda_alloc(cu, &d.c, nn * 4, err) && cuda_alloc(cu, &d.flush, FLUSH_BYTES, err) &&
	          cuda_upload(cu, d.w, h, nn * 4, err) && cuda_upload(cu, d.x, h, nn * 4, err);
	double us = 0;
	CopyLaunch cl = {d.c, d.w, nn * 4};
	if (ok && (ok = time_us(cu, &d, 7, launch_copy, &cl, &us, err)))
		out->copy_gbs = 2.0 * (double)cl.bytes / us * 1e-3;
	GpuProblem gp = {.shape = {n, n, n, PAT_BF16, PAT_LAYOUT_KN, PAT_ACT_NONE, false}};
	BlasLaunch bl = {&gp, &d};
	const double flops = 2.0 * (double)n * (double)n * (double)n;
	if (ok && (ok = time_us(cu, &d, 7, launch_blas, &bl, &us, err)))
		out->f32_tflops = flops / us * 1e-6;
	ok = ok && cuda_upload(cu, d.w, h16, nn * 2, err) && cuda_upload(cu, d.x, h16, nn * 2, err);
	if (ok && (ok = time_us(cu, &d, 7, launch_blas16, &bl, &us, err)))
		out->bf16_tflops = flops / us * 1e-6;
	/* L2: GPU_L2_BYTES of d.x (random) read by patc_l2_read into d.c */
	void *module = NULL;
	L2Launch ll = {0};
	uint32_t passes = GPU_L2_PASSES;
	ll.args[0] = &d.x, ll.args[1] = &d.c, ll.args[2] = &passes;
	_Static_assert(GPU_L2_BYTES == GPU_L2_BLOCKS * 256 * 4 * 16, "patc_l2_read's threads read 4 x 16 bytes each");
	ok = ok && cuda_load_ptx(cu, gpu_l2_ptx, &module, err) && cuda_kernel(cu, module, "patc_l2_read", &ll.fn, err);
	if (ok && (ok = time_us(cu, &d, 7, launch_l2, &ll, &us, err)))
		out->l2_gbs = (double)GPU_L2_PASSES * GPU_L2_BYTES / us * 1e-3;
	if (module)
		cuda_unload(cu, module);
	dev_free(cu, &d);
	free(h), free(h16);
	return ok;
}
