/* SPDX-License-Identifier: MIT */
/* run.c - `--run`: each op's kernel, checked and timed beside the dense
 * baseline of the same dtype.
 *
 * The kernel runs on the op's pruned, packed weights and a fresh random X
 * of the op's shape and layout (a kernel must be right on any input); C is
 * poisoned with NaN before the checked run, so an element no thread
 * writes shows, and 64 columns of C are checked against the float64
 * product of the masked weight (prune_check: relative error below 1e-4,
 * or the op fails; where that product is past float32's range, the input
 * is at fault, exit 1, as no float32 kernel can be right).  On x86 both
 * the kernel and OpenBLAS sgemm are timed with the same threads: the
 * median of repeated runs after a warm-up, OpenBLAS first, then the kernel
 * after util_settle(), each in its own block, as a user would run either.
 * The report names OpenBLAS's kernel set; where it is weaker than the
 * strongest this CPU runs (support/blas_core.h), the sgemm is timed with
 * that one too, in a fresh patc process (before this one's OpenBLAS runs:
 * nothing of it spins beside that process), and the speedup is over the
 * faster of the two.
 */
#define _POSIX_C_SOURCE 200809L
#include "run.h"
#include "emit_kernels.h"
#include "emit_cuda.h"
#include "../backend_x86/x86.h"
#include "../backend_ptx/gpu.h"
#include "../support/blas_core.h"
#include "../support/util.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPS = 7, CHECK_COLS = 64 };

/* The longest the dense sgemm with the stronger kernel set may take in its
 * fresh process, start and operands included (then said, and left out). */
#define FRESH_TIMEOUT_S 300.0

/* For the tests: $PATC_RUN_INJECT = wrong:OP or unwritten:OP spoils op
 * OP's checked result (every element off by one, or the last one left
 * NaN), so that the report of a wrong kernel is tested on x86 too. */
static void inject(const char *op, float *c, int64_t n)
{
	const char *e = getenv("PATC_RUN_INJECT"), *colon = e ? strchr(e, ':') : NULL;
	if (!colon || strcmp(colon + 1, op) || n < 1)
		return;
	if (!strncmp(e, "wrong:", 6))
		for (int64_t i = 0; i < n; i++)
			c[i] += 1;
	else if (!strncmp(e, "unwritten:", 10))
		c[n - 1] = NAN;
}

/* The input's fault, not the kernel's: finite weights whose product with
 * --run's activations float32 cannot hold (prune_check), said as the
 * loaders say importance past float32's range.  C's element in the op's
 * layout: [m, n] for kn, [n, m] for nk. */
static void overflow_error(const OpResult *op, const PruneCheck *chk, char err[512])
{
	const bool kn = op->shape.layout == PAT_LAYOUT_KN;
	const long long i = kn ? chk->m : chk->n, j = kn ? chk->n : chk->m;
	if (chk->ref_past)
		snprintf(err, 512, "op '%s': the product of its weights and --run's activations overflows float32: "
		         "C[%lld, %lld] is %g in float64, past float32's range (%g), so no float32 kernel can compute it",
		         op->name, i, j, chk->ref, (double)FLT_MAX);
	else
		snprintf(err, 512, "op '%s': the product of its weights and --run's activations overflows float32: the "
		         "terms of C[%lld, %lld] add up to %g in magnitude, past float32's range (%g), and the kernel's "
		         "float32 sum overflowed there (%g in float64)",
		         op->name, i, j, chk->mag, (double)FLT_MAX, chk->ref);
}

bool run_op(const OpResult *op, const PruneOp *p, const char *cpu, int threads, StrBuf *out, char err[512],
            int *code)
{
	const int64_t M = op->shape.M, K = op->shape.K, N = op->shape.N;
	*code = PATC_EXIT_ENV;
	/* aligned as a framework's tensors are (util_alloc_timed) */
	float *dense = util_alloc_timed((size_t)(M * K) * sizeof *dense);
	const float *values = p->values; /* (prune_op's) */
	if (dense)
		prune_unpack(op->ir, &p->mask, values, M, K, dense);
	float *x = util_alloc_timed((size_t)(K * N) * sizeof *x), *c = util_alloc_timed((size_t)(M * N) * sizeof *c);
	float *cd = util_alloc_timed((size_t)(M * N) * sizeof *cd);
	if (!dense || !x || !c || !cd) {
		snprintf(err, 512, "not enough memory to run op '%s'", op->name);
		free(dense), free(x), free(c), free(cd);
		return false;
	}
	const bool kn = op->shape.layout == PAT_LAYOUT_KN;
	synth_weights(x, kn ? K : N, kn ? N : K, (uint64_t)(1e6 * util_now()), SYNTH_PLAIN, 1);
	char name[PIR_NAME_MAX + 8];
	snprintf(name, sizeof name, "patc_%s", op->name);
	LowerKernel lk = {op->ir, {M, K, N, PAT_F32, op->shape.layout, PAT_ACT_NONE, false}, name, 0, {0}, false, 0};
	kernel_warn_slow(op, op->ir);
	X86Kernel kern;
	char xerr[X86_ERR_MAX];
	double t0 = util_now();
	if (!x86_jit(&lk, cpu, cpu ? "" : NULL, &kern, xerr)) {
		snprintf(err, 512, "op '%s': %.400s", op->name, xerr);
		free(dense), free(x), free(c), free(cd);
		*code = PATC_EXIT_INTERNAL;
		return false;
	}
	double t_compile = util_now() - t0;
	BlasCoreInfo bc;
	blas_core_info(&bc);
	double fresh_us = -1;
	char fresh_why[160] = "";
	if (bc.stronger && !blas_core_time_fresh("/proc/self/exe", bc.stronger, BLAS_TIMING_RUN, kn, M, K, N, threads,
	                                         FRESH_TIMEOUT_S, &fresh_us, fresh_why))
		fresh_us = -1;
	const int32_t *const *index = (const int32_t *const *)p->mask.index;
	double tk[REPS];
	const double d_s = 1e-6 * blas_time_sgemm_us(BLAS_TIMING_RUN, kn, M, K, N, dense, x, cd, threads);
	util_settle(); /* OpenBLAS's idle workers must not share the CPU with the kernel */
	for (int64_t i = 0; i < M * N; i++) /* the checked run: C poisoned first */
		c[i] = NAN;
	x86_run(&kern, x, c, values, index, NULL, N, threads);
	inject(op->name, c, M * N);
	int64_t unwritten = 0;
	for (int64_t i = 0; i < M * N; i++)
		unwritten += isnan(c[i]);
	PruneCheck chk;
	prune_check(dense, x, c, M, K, N, kn, PAT_F32, CHECK_COLS, &chk);
	const double rel = chk.rel;
	for (int r = 0; r < REPS; r++) {
		t0 = util_now();
		x86_run(&kern, x, c, values, index, NULL, N, threads);
		tk[r] = util_now() - t0;
	}
	const double k_s = util_median(tk, REPS), f_s = 1e-6 * fresh_us;
	const bool fresh_faster = fresh_us > 0 && f_s < d_s;
	const double base_s = fresh_faster ? f_s : d_s; /* the faster sgemm: the speedup's */
	double flops = 2.0 * (double)M * (double)K * (double)N;
	double eff = 2.0 * (double)p->metrics.nkept * (double)N;
	sb_printf(out, "%s: %lldx%lldx%lld, %d thread%s, compiled in %.0f ms\n", op->name, (long long)M,
	          (long long)K, (long long)N, threads, threads == 1 ? "" : "s", 1e3 * t_compile);
	sb_printf(out, "  patc kernel   %10.3f ms  %8.2f GFLOP/s dense-equivalent, %8.2f effective\n",
	          1e3 * k_s, flops / k_s * 1e-9, eff / k_s * 1e-9);
	sb_printf(out, "  OpenBLAS sgemm %9.3f ms  %8.2f GFLOP/s (dense, same threads; %s kernels)\n", 1e3 * d_s,
	          flops / d_s * 1e-9, bc.in_use);
	if (fresh_us > 0)
		sb_printf(out, "  OpenBLAS sgemm %9.3f ms  %8.2f GFLOP/s (dense, same threads; %s kernels, in a fresh "
		               "process)\n",
		          1e3 * f_s, flops / f_s * 1e-9, bc.stronger);
	else if (bc.stronger)
		sb_printf(out, "  OpenBLAS sgemm with %s kernels not timed: %s\n", bc.stronger, fresh_why);
	char over[96] = "";
	if (fresh_us > 0)
		snprintf(over, sizeof over, " (over the faster sgemm, %s's)", fresh_faster ? bc.stronger : bc.in_use);
	if (chk.overflow)
		sb_printf(out, "  speedup over dense %.2fx%s; not checked: the product overflows float32\n", base_s / k_s,
		          over);
	else if (rel != -1)
		sb_printf(out, "  speedup over dense %.2fx%s; relative error vs float64 on the masked weight %.2e\n",
		          base_s / k_s, over, rel);
	if (op_epilogue_fixed(&op->shape) || op->bias.kind != WEIGHTS_NONE)
		sb_printf(out, "  timed without the op's epilogue (its bias and activation), as dense is; make bench's "
		               "epilogue_bench measures what it costs\n");
	sb_printf(out, "  (OpenBLAS: %s)\n", openblas_get_config());
	char core[256];
	blas_core_text(&bc, core, sizeof core);
	sb_printf(out, "  OpenBLAS kernel set: %s\n", core);
	x86_kernel_free(&kern);
	free(dense), free(x), free(c), free(cd);
	if (rel == -1) {
		snprintf(err, 512, "op '%s': out of memory for the float64 reference", op->name);
		return false;
	}
	if (chk.overflow) {
		overflow_error(op, &chk, err);
		*code = PATC_EXIT_INPUT;
		return false;
	}
	if (unwritten || !(rel < 1e-4)) {
		snprintf(err, 512, "op '%s': the kernel's result is wrong (relative error %g, %lld elements not written)",
		         op->name, rel, (long long)unwritten);
		*code = PATC_EXIT_INTERNAL;
		return false;
	}
	return true;
}

/* Op op's measurement r on the GPU into out: its time beside cuBLAS's and
 * its error; whether its result is right (said where not). */
static bool report_gpu_op(const OpResult *op, const PruneOp *p, const GpuResult *r, StrBuf *out)
{
	const int64_t M = op->shape.M, K = op->shape.K, N = op->shape.N;
	double flops = 2.0 * (double)M * (double)K * (double)N;
	double eff = 2.0 * (double)p->metrics.nkept * (double)N;
	double ks = r->kernel_us * 1e-6;
	sb_printf(out, "%s: %lldx%lldx%lld, compiled in %.0f ms; %s\n", op->name, (long long)M,
	          (long long)K, (long long)N, r->compile_ms, r->plan.why);
	sb_printf(out, "  patc kernel   %10.1f us  %7.2f TFLOP/s dense-equivalent, %7.2f effective\n",
	          r->kernel_us, flops / ks * 1e-12, eff / ks * 1e-12);
	const char *dt = pat_dtype_names[op->shape.dtype];
	if (r->cublas_us > 0 && r->plan.tc)
		sb_printf(out, "  cuBLAS GemmEx %10.1f us  %7.2f TFLOP/s (dense %s, f32 accumulation)\n"
		               "  speedup over dense %.2fx; ",
		          r->cublas_us, flops / (r->cublas_us * 1e-6) * 1e-12, dt, r->cublas_us / r->kernel_us);
	else if (r->cublas_us > 0)
		sb_printf(out, "  cuBLAS sgemm  %10.1f us  %7.2f TFLOP/s (dense fp32, no TF32)\n"
		               "  speedup over dense %.2fx; ",
		          r->cublas_us, flops / (r->cublas_us * 1e-6) * 1e-12, r->cublas_us / r->kernel_us);
	else
		sb_printf(out, "  cuBLAS not measured: %s\n  ", r->note);
	sb_printf(out, "relative error vs float64 on the masked weight%s %.2e\n",
	          !r->plan.tc             ? ""
	          : op->shape.dtype == PAT_F16 ? " (inputs rounded to f16)"
	                                 : " (inputs rounded to bf16)",
	          r->rel_err);
	if (r->unwritten || !(r->rel_err < 1e-4)) { /* named, and the next op runs */
		fprintf(stderr, "patc: error: op '%s': the GPU kernel's result is wrong (relative error %g, %lld "
		        "elements not written)\n", op->name, r->rel_err, (long long)r->unwritten);
		return false;
	}
	return true;
}

/* ---- GPU ---- */

bool run_ops_gpu(const Program *prog, const PruneOp *pruned, const char *sm, PtxSchedule given, StrBuf *out,
                 char err[512], int *code)
{
	char cerr[CUDA_ERR_MAX];
	/* An op whose launch CUDA cannot take is the input's fault, as -o has it:
	 * said before the driver is looked for. */
	for (int i = 0; i < prog->nops; i++)
		if (!emit_cuda_grid_fits(&prog->ops[i], &given, sm, err)) {
			*code = PATC_EXIT_INPUT;
			return false;
		}
	*code = PATC_EXIT_ENV;
	Cuda *cu = cuda_open(cerr);
	if (!cu) {
		snprintf(err, 512, "--run on %s needs an NVIDIA GPU: %.440s", sm, cerr);
		return false;
	}
	int want = atoi(sm + 3), have = cuda_compute_capability(cu);
	if (want > have) {
		snprintf(err, 512, "--target=%s needs compute capability %d.%d, but the GPU (%s) has %d.%d", sm,
		         want / 10, want % 10, cuda_device_name(cu), have / 10, have % 10);
		cuda_close(cu);
		return false;
	}
	sb_printf(out, "GPU: %s (sm_%d, %d multiprocessors); kernels for %s\n", cuda_device_name(cu), have,
	          cuda_multiprocessors(cu), sm);
	bool ok = true;
	int wrong = 0, overflowed = 0;
	for (int i = 0; ok && i < prog->nops; i++) {
		const OpResult *op = &prog->ops[i];
		const PruneOp *p = &pruned[i];
		const int64_t M = op->shape.M, K = op->shape.K, N = op->shape.N;
		float *dense = malloc((size_t)(M * K) * sizeof *dense);
		const float *values = p->values; /* (prune_op's) */
		if (dense)
			prune_unpack(op->ir, &p->mask, values, M, K, dense);
		float *x = malloc((size_t)(K * N) * sizeof *x);
		if (!dense || !x) {
			snprintf(err, 512, "not enough memory to run op '%s'", op->name);
			free(dense), free(x);
			*code = PATC_EXIT_ENV;
			ok = false;
			break;
		}
		bool kn = op->shape.layout == PAT_LAYOUT_KN;
		/* a fresh X each run: the kernel must be right on any input */
		synth_weights(x, kn ? K : N, kn ? N : K, (uint64_t)(1e6 * util_now()), SYNTH_PLAIN, 1);
		GpuProblem gp = {op->ir, {M, K, N, op->shape.dtype, op->shape.layout, PAT_ACT_NONE, false}, values, &p->mask, dense, x, sm,
		                 given, 20, true, 64, 0};
		GpuResult r;
		/* gpu_measure's check (prune_check_error) would call the kernel wrong
		 * where no float32 sum can be right: the reference on the same
		 * columns looked at first */
		PruneCheck chk;
		prune_check(dense, x, NULL, M, K, N, kn, op->shape.dtype, gp.check_cols, &chk);
		if (chk.overflow) { /* named, and the next op runs */
			char oerr[512];
			overflow_error(op, &chk, oerr);
			fprintf(stderr, "patc: error: %s\n", oerr);
			overflowed++;
		} else if (!gpu_measure(cu, &gp, &r, cerr)) {
			if (i + 1 < prog->nops)
				snprintf(err, 512, "op '%s': %.400s (the %d ops after it not run)", op->name, cerr, prog->nops - i - 1);
			else
				snprintf(err, 512, "op '%s': %.480s", op->name, cerr);
			*code = PATC_EXIT_ENV;
			ok = false;
		} else {
			wrong += !report_gpu_op(op, p, &r, out);
		}
		free(dense), free(x);
	}
	cuda_close(cu);
	if (ok && wrong) {
		snprintf(err, 512, "%d of %d ops gave a wrong result on the GPU", wrong, prog->nops);
		*code = PATC_EXIT_INTERNAL;
		ok = false;
	} else if (ok && overflowed) {
		snprintf(err, 512, "%d of %d ops have a product that overflows float32", overflowed, prog->nops);
		*code = PATC_EXIT_INPUT;
		ok = false;
	}
	return ok;
}
