/* SPDX-License-Identifier: MIT */
/* gpu_bench.c - the GPU benchmark (make bench-gpu, tests/gpu/run.sh).
 *
 *   gpu_bench STDLIB CSV [quick] [--sm=sm_90] [--schedule=BX,BY,V,R,KSPLIT,STAGE | --no-stage] [--narrow]
 *             [--shapes=I,J,..] [--no-tc | --tc-only] [--wgmma] [--split-workspace] [--tc-stages=N]
 *             [--tc-warps=N] [--seconds=S]
 *   gpu_bench --l2-ptx      (prints the PTX of the L2 ceiling's kernel)
 *
 * The paper's 12 SpMM shapes at 50%, 75% and 93.75% sparsity; for each,
 * patc's fp32 CUDA-core kernels for block 8x8 and 32x32, vector-wise N:M,
 * tile-wise, the hybrid and row-balanced element-wise, beside cuBLAS
 * sgemm (fp32, no TF32) on the same device in the same run; then (unless
 * --no-tc) the tensor-core kernels of 32x32 and 64x64 blocks and of 2:4
 * along k (the sparse tensor cores; inside 32x32 blocks past 50%) in bf16 beside
 * cuBLAS GemmEx in bf16 (f32 accumulation); --tc-only runs only those.
 * --no-stage turns off staging X in shared memory on both paths; --narrow
 * keeps patc's schedules but at most 4 rows a thread (no wide register
 * tiles on CUDA cores), to compare them with the wide tiles; --wgmma runs
 * the staged tensor-core kernels of the blocks on Hopper's
 * warpgroup mma (sm_90 only; the CSV's method then says patc-wgmma for
 * them); --split-workspace sums the parts of the CUDA-core kernels whose
 * walk along k is split through a workspace instead of atomics into a
 * zeroed C (PtxPlan.wsum; the CSV's method then says patc-wsum for them),
 * to compare the two; --tc-stages=N walks the staged tensor-core kernels
 * through N shared-memory buffers instead of 3 (PtxSchedule's tcs: the
 * copies run N - 1 steps ahead, N - 2 on wgmma, where a step's wgmma stay
 * in flight through the next), to compare the depths; --tc-warps=N
 * gives the staged tensor-core kernels on mma.sync and mma.sp blocks of
 * up to N warps instead of 4 (PtxSchedule's tcw: 8 takes 128 rows of 2:4,
 * which share each row of X the block stages).  Every
 * kernel is checked first (C poisoned, float64 reference on a sample of
 * columns); one that fails (a wrong result, or a driver error, after which
 * the device is opened again) costs its own entry: stderr names it, the
 * means leave it out, the table says how many failed, and the exit status
 * is 4.  Where the device stays unusable after a failure (a kernel's fault
 * is sticky for the process), nothing more is measured: the table covers
 * the shapes measured whole before it.  First it measures the
 * device's ceilings (gpu_ceilings).  Writes CSV rows
 * shape,M,K,N,sparsity,pattern,method,dtype,median_us,speedup_vs_dense,
 * tflops,flop_frac,bw_frac,l2_gb,l2_frac (the kernel's rate, its FLOP over
 * cuBLAS's rate on 8192^3 and its fewest bytes over the copy bandwidth,
 * each over its time; the GB its blocks move from L2, ptx_traffic, where
 * X is staged, and their rate over the L2 read ceiling) and prints a
 * Markdown summary.  `quick` leaves out the three shapes of
 * 2^36 multiply-adds and more.  --seconds=S starts no kernel after S
 * seconds: the table then covers the shapes measured whole (the CSV has
 * every kernel measured), and stderr names the shapes left out. */
#define _POSIX_C_SOURCE 200809L
#include "patterns.h"
#include "shapes.h"
#include "backend_ptx/gpu.h"
#include "prune/prune.h"
#include "support/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The tensor-core patterns, in bf16: blocks whose tiles are dense 16 x 16
 * tiles (mma.sync), then 2:4 along k (mma.sp: nm(2, 4) at 50%, within 32 x
 * 32 blocks beyond). */
static const int tc_blocks[] = {32, 64, 0};
static const char *const tc_names[] = {"block32", "block64", "sparse24"};
enum { NTC = sizeof tc_blocks / sizeof *tc_blocks };

static void tc_body(int p, double sparsity, char *body, size_t len)
{
	if (tc_blocks[p])
		snprintf(body, len, "apply block(%d, %d, %g%%);", tc_blocks[p], tc_blocks[p], 100 - sparsity);
	else if (sparsity <= 50)
		snprintf(body, len, "apply nm(2, 4);");
	else /* the blocks keep twice the density: 2:4 halves it */
		snprintf(body, len, "apply hybrid(32, 32, %g%%, 2, 4);", 2 * (100 - sparsity));
}

/* A kernel's rate and its fractions of the two floors (FLOP over the
 * dtype's measured rate, bytes over the copy bandwidth) at us
 * microseconds, then what its blocks move from L2 (l2_bytes, 0: not
 * counted) in GB and over the L2 read ceiling, as CSV fields (empty
 * fractions without ceilings); frac: the larger of the first two, the
 * fraction of the floor reached (0 without ceilings). */
typedef struct Floor {
	char csv[96];
	double frac;
} Floor;

static Floor floor_of(const GpuCeilings *c, double rate, double flops, double bytes, double l2_bytes, double us)
{
	Floor f = {"", 0};
	const double tflops = flops / us * 1e-6;
	char l2[40] = ",";
	if (l2_bytes > 0)
		snprintf(l2, sizeof l2, "%.3f,", l2_bytes * 1e-9);
	if (l2_bytes > 0 && c && c->l2_gbs > 0)
		snprintf(l2 + strlen(l2), sizeof l2 - strlen(l2), "%.3f", l2_bytes / us * 1e-3 / c->l2_gbs);
	if (!c) {
		snprintf(f.csv, sizeof f.csv, "%.2f,,,%s", tflops, l2);
		return f;
	}
	const double ff = tflops / rate, bf = bytes / us * 1e-3 / c->copy_gbs;
	f.frac = ff > bf ? ff : bf;
	snprintf(f.csv, sizeof f.csv, "%.2f,%.3f,%.3f,%s", tflops, ff, bf, l2);
	return f;
}

/* Whether --seconds (0: no limit) has run out since t0. */
static bool out_of(double seconds, double t0) { return seconds > 0 && util_now() - t0 > seconds; }

/* A Markdown table of speedups over cuBLAS, geometric means over the
 * shapes that ran: patterns first .. first + n - 1 of sp[sparsity][shape][],
 * "best" the best of the first nbest of them per shape; with fl, a second
 * table beside it: the fraction of its floor each reached (geometric
 * means likewise, "best" the fastest pattern's). */
static void print_table(double (*sp)[NSHAPES][NPAT + NTC], double (*fl)[NSHAPES][NPAT + NTC], const bool *ran,
                        int nran, int first, int n, int nbest, const char *best_name, const char *const *names,
                        const char *caption)
{
	for (int t = 0; t < (fl ? 2 : 1); t++) {
		double (*v)[NSHAPES][NPAT + NTC] = t ? fl : sp;
		if (t)
			printf("\n");
		printf("| sparsity | %s |", best_name);
		for (int p = 0; p < n; p++)
			printf(" %s |", names[p]);
		printf("\n|---:|---:|");
		for (int p = 0; p < n; p++)
			printf("---:|");
		printf("\n");
		int missing = 0; /* entries of failed kernels (NaN), left out of the means */
		for (int s = 0; s < 3; s++) {
			double best = 0, g[NPAT + NTC] = {0};
			int nbest_ran = 0, ng[NPAT + NTC] = {0};
			for (int si = 0; si < NSHAPES; si++) {
				if (!ran[si])
					continue;
				int b = -1;
				for (int p = first; p < first + nbest; p++)
					if (!isnan(sp[s][si][p]) && (b < 0 || sp[s][si][p] > sp[s][si][b]))
						b = p;
				if (b >= 0)
					best += log(v[s][si][b]), nbest_ran++;
				for (int p = 0; p < n; p++)
					if (!isnan(v[s][si][first + p]))
						g[p] += log(v[s][si][first + p]), ng[p]++;
					else
						missing++;
			}
			const double scale = t ? 100 : 1;
			const char *fmt = t ? " %.0f%% |" : " %.2fx |";
			printf("| %g%% |", sparsities[s]);
			if (nbest_ran)
				printf(fmt, scale * exp(best / nbest_ran));
			else
				printf(" failed |");
			for (int p = 0; p < n; p++)
				if (ng[p])
					printf(fmt, scale * exp(g[p] / ng[p]));
				else
					printf(" failed |");
			printf("\n");
		}
		if (missing && !t)
			printf("\n%d kernels failed (gpu_bench's log names them): each mean is over the shapes where its "
			       "kernels ran\n",
			       missing);
		if (t)
			printf("\nthe fraction of its floor each kernel reached (the larger of its FLOP over cuBLAS's rate "
			       "on 8192^3 in its dtype and its bytes over the copy bandwidth, both measured in this run), "
			       "geometric mean over %d shapes (the first column: the fastest pattern's; 2:4 on the sparse tensor "
			       "cores is held to the dense rate, so it may pass 100%%)\n",
			       nran);
		else
			printf("\n%s, geometric mean over %d shapes\n", caption, nran);
	}
}

/* Whether the device still works: a small allocation filled and waited
 * for (after a kernel's fault every call returns its error). */
static bool device_usable(Cuda *cu, char err[CUDA_ERR_MAX])
{
	CuPtr p;
	if (!cuda_alloc(cu, &p, 4, err))
		return false;
	const bool ok = cuda_fill32(cu, p, 0, 1, err) && cuda_sync(cu, err);
	cuda_free(cu, p);
	return ok;
}

/* The count after the option's `at` characters (--NAME=N): lo to hi into
 * *out, else a usage message and false. */
static bool count_arg(const char *arg, int at, long lo, long hi, const char *what, int *out)
{
	char *end;
	const long n = strtol(arg + at, &end, 10);
	if (end == arg + at || *end || n < lo || n > hi) {
		fprintf(stderr, "gpu_bench: %.*sN takes %ld to %ld %s\n", at, arg, lo, hi, what);
		return false;
	}
	*out = (int)n;
	return true;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "--l2-ptx")) {
		if (argc > 2) {
			fprintf(stderr, "gpu_bench: --l2-ptx takes no other argument\n");
			return 2;
		}
		fputs(gpu_l2_ptx, stdout);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: gpu_bench STDLIB CSV [quick] [--sm=sm_90] [--schedule=BX,BY,V,R,KSPLIT,STAGE | --no-stage] "
		                "[--narrow] [--shapes=I,J,..] [--no-tc | --tc-only] [--wgmma] [--split-workspace] "
		                "[--tc-stages=N] [--tc-warps=N] [--seconds=S]\n"
		                "       gpu_bench --l2-ptx\n");
		return 2;
	}
	const char *stdlib = argv[1], *sm = "sm_90";
	bool quick = false, only[NSHAPES] = {false}, some = false, with_tc = true, with_fp32 = true, narrow = false;
	double seconds = 0; /* 0: no limit */
	PtxSchedule sched = {0}; /* patc's choice */
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "quick"))
			quick = true;
		else if (!strncmp(argv[i], "--sm=", 5))
			sm = argv[i] + 5;
		else if (!strncmp(argv[i], "--schedule=", 11)) {
			if (sscanf(argv[i] + 11, "%d,%d,%d,%d,%d,%d", &sched.bx, &sched.by, &sched.v, &sched.r, &sched.ksplit,
			           &sched.stage) != 6) {
				fprintf(stderr, "gpu_bench: --schedule=BX,BY,V,R,KSPLIT,STAGE\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--no-stage")) {
			sched.stage = -1;
		} else if (!strcmp(argv[i], "--wgmma")) {
			sched.wg = 1;
		} else if (!strcmp(argv[i], "--split-workspace")) {
			sched.wsum = 1;
		} else if (!strncmp(argv[i], "--tc-stages=", 12)) {
			if (!count_arg(argv[i], 12, 2, PTX_TC_MAX_STAGES, "buffers", &sched.tcs))
				return 2;
		} else if (!strncmp(argv[i], "--tc-warps=", 11)) {
			if (!count_arg(argv[i], 11, 1, PTX_TC_MAX_WARPS, "warps a block", &sched.tcw))
				return 2;
		} else if (!strncmp(argv[i], "--seconds=", 10)) {
			char *end;
			seconds = strtod(argv[i] + 10, &end);
			if (*end || !(seconds > 0)) {
				fprintf(stderr, "gpu_bench: --seconds=S takes a positive number of seconds\n");
				return 2;
			}
		} else if (!strcmp(argv[i], "--narrow")) {
			narrow = true;
		} else if (!strcmp(argv[i], "--no-tc")) {
			with_tc = false;
		} else if (!strcmp(argv[i], "--tc-only")) {
			with_fp32 = false;
		} else if (!strncmp(argv[i], "--shapes=", 9)) {
			for (char *q = argv[i] + 9; *q;) {
				long v = strtol(q, &q, 10);
				if (v >= 0 && v < NSHAPES)
					only[v] = some = true;
				if (*q == ',')
					q++;
				else if (*q) {
					fprintf(stderr, "gpu_bench: --shapes=I,J,.. (0..%d)\n", NSHAPES - 1);
					return 2;
				}
			}
		} else {
			fprintf(stderr, "gpu_bench: unknown argument '%s'\n", argv[i]);
			return 2;
		}
	}
	if (!with_tc && !with_fp32) {
		fprintf(stderr, "gpu_bench: --no-tc and --tc-only leave nothing to measure\n");
		return 2;
	}
	if (sched.wg && strcmp(sm, "sm_90")) {
		fprintf(stderr, "gpu_bench: --wgmma is for --sm=sm_90\n");
		return 2;
	}
	if (narrow && sched.bx) {
		fprintf(stderr, "gpu_bench: --narrow applies to patc's schedules, not to --schedule\n");
		return 2;
	}
	if (narrow)
		sched.r = 4; /* patc's choice, at most 4 rows a thread: no wide register tiles */
	char err[CUDA_ERR_MAX];
	Cuda *cu = cuda_open(err);
	if (!cu) {
		fprintf(stderr, "gpu_bench: %s\n", err);
		return 3;
	}
	FILE *csv = fopen(argv[2], "w");
	if (!csv) {
		perror(argv[2]);
		return 3;
	}
	if (sched.bx)
		fprintf(stderr, "gpu_bench: %s, kernels for %s, schedule %d,%d,%d,%d,%d,%d\n", cuda_device_name(cu), sm,
		        sched.bx, sched.by, sched.v, sched.r, sched.ksplit, sched.stage);
	else
		fprintf(stderr, "gpu_bench: %s, kernels for %s, patc's schedules%s%s\n", cuda_device_name(cu), sm,
		        sched.stage < 0 ? " without staging" : "", sched.r ? ", at most 4 rows a thread" : "");
	/* the ceilings, for each kernel's fraction of its floor (device/METHOD.md) */
	GpuCeilings ceilings;
	const bool have_ceil = gpu_ceilings(cu, &ceilings, err);
	if (have_ceil)
		fprintf(stderr,
		        "gpu_bench: ceilings: copy %.0f GB/s, cuBLAS 8192^3 f32 %.1f TFLOP/s, bf16 %.1f TFLOP/s; "
		        "L2 reads %.0f GB/s\n",
		        ceilings.copy_gbs, ceilings.f32_tflops, ceilings.bf16_tflops, ceilings.l2_gbs);
	else
		fprintf(stderr, "gpu_bench: ceilings not measured (%s): no floor fractions\n", err);
	fprintf(csv, "shape,M,K,N,sparsity,pattern,method,dtype,median_us,speedup_vs_dense,tflops,flop_frac,bw_frac,"
	             "l2_gb,l2_frac\n");
	static double sp[3][NSHAPES][NPAT + NTC], fl[3][NSHAPES][NPAT + NTC];
	bool ran[NSHAPES] = {false}, out_of_time = false;
	int rc = 0, nfailed = 0;
	bool stuck = false; /* the device unusable after a failure */
	const double t0 = util_now();
	for (int si = 0; si < NSHAPES && !rc && !stuck; si++) {
		const Shape *sh = &shapes[si];
		const int64_t M = sh->M, K = sh->K, N = sh->N;
		if ((some && !only[si]) || (!some && quick && (double)M * (double)K * (double)N >= 68719476736.0))
			continue;
		if (out_of(seconds, t0)) {
			fprintf(stderr, "gpu_bench: --seconds=%g: %s not measured\n", seconds, sh->name);
			out_of_time = true;
			continue;
		}
		ran[si] = true;
		float *w = malloc((size_t)(M * K) * sizeof *w), *imp = malloc((size_t)(M * K) * sizeof *imp);
		float *masked = malloc((size_t)(M * K) * sizeof *masked);
		float *x = malloc((size_t)(K * N) * sizeof *x);
		if (!w || !imp || !masked || !x) {
			fprintf(stderr, "gpu_bench: out of memory at %s\n", sh->name);
			return 3;
		}
		synth_weights(w, M, K, 1, SYNTH_PLAIN, 1);
		synth_weights(x, K, N, (uint64_t)(2 + si), SYNTH_PLAIN, 1);
		prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, imp);
		double dense_us = -1, dense16_us = -1;
		for (int s = 0; s < 3 && !rc && ran[si]; s++)
			for (int p = 0; p < NPAT + NTC && !rc && ran[si]; p++) {
				/* after the fp32 patterns, the tensor-core ones in bf16 */
				const bool tc = p >= NPAT;
				if (tc ? !with_tc : !with_fp32)
					continue;
				if (out_of(seconds, t0)) { /* the shape is not whole: not in the table */
					fprintf(stderr, "gpu_bench: --seconds=%g: %s measured in part (in the CSV, not the table)\n",
					        seconds, sh->name);
					ran[si] = false;
					out_of_time = true;
					continue;
				}
				char body[128];
				if (tc)
					tc_body(p - NPAT, sparsities[s], body, sizeof body);
				else
					pattern_body(p, sparsities[s], body, sizeof body);
				Pir ir;
				PruneMask pm;
				float *values = bench_prune("gpu_bench", stdlib, sh->name, M, K, body, w, imp, &ir, &pm, masked);
				if (!values)
					continue;
				double *base = tc ? &dense16_us : &dense_us;
				GpuProblem gp = {&ir, {M, K, N, tc ? PAT_BF16 : PAT_F32, PAT_LAYOUT_KN, PAT_ACT_NONE, false}, values, &pm, masked, x,
				                 sm, sched, 15, *base < 0, 16, 0};
				GpuResult r;
				/* a kernel that fails costs its own entry (NaN: left out of
				 * the means, counted under the table), not the run */
				bool failed = true;
				if (!gpu_measure(cu, &gp, &r, err)) {
					fprintf(stderr, "gpu_bench: %s %s: FAILED: %s\n", sh->name, body, err);
					/* the device opened again; but a kernel's fault (a
					 * sticky error) can leave it unusable for the rest of
					 * the process: then nothing more is measured, and this
					 * shape is left out of the table as measured in part */
					cuda_close(cu);
					if (!(cu = cuda_open(err)) || !device_usable(cu, err)) {
						fprintf(stderr, "gpu_bench: after that failure the device is unusable in this process (%s): "
						        "nothing after it was measured\n", err);
						stuck = true;
						ran[si] = false;
					}
				} else if (r.unwritten || !(r.rel_err < 1e-4)) {
					fprintf(stderr, "gpu_bench: %s %s: FAILED: wrong (relative error %g, %lld unwritten)\n",
					        sh->name, body, r.rel_err, (long long)r.unwritten);
				} else if (tc && !r.plan.tc) {
					fprintf(stderr, "gpu_bench: %s %s: FAILED: not on tensor cores (%s)\n", sh->name, body,
					        r.plan.tc_why);
				} else {
					failed = false;
					const char *dt = tc ? "bf16" : "f32";
					const char *name = tc ? tc_names[p - NPAT] : pattern_names[p];
					const double rate = tc ? ceilings.bf16_tflops : ceilings.f32_tflops;
					if (*base < 0) {
						if (r.cublas_us < 0) {
							fprintf(stderr, "gpu_bench: %s\n", r.note);
							rc = 3;
						}
						*base = r.cublas_us;
						const double es = tc ? 2 : 4;
						Floor f = floor_of(have_ceil ? &ceilings : NULL, rate, 2.0 * (double)M * (double)K * (double)N,
						                   (double)(M * K + K * N) * es + (double)(M * N) * 4, 0, *base);
						fprintf(csv, "%s,%lld,%lld,%lld,0,dense,cublas,%s,%.2f,1,%s\n", sh->name, (long long)M,
						        (long long)K, (long long)N, dt, *base, f.csv);
					}
					sp[s][si][p] = *base / r.kernel_us;
					Floor f = floor_of(have_ceil ? &ceilings : NULL, rate, r.flops, r.bytes, r.l2_bytes, r.kernel_us);
					fl[s][si][p] = f.frac;
					fprintf(csv, "%s,%lld,%lld,%lld,%g,%s,%s,%s,%.2f,%.3f,%s\n", sh->name, (long long)M,
					        (long long)K, (long long)N, sparsities[s], name,
					        r.plan.tc_wg ? "patc-wgmma" : r.plan.wsum ? "patc-wsum" : "patc", dt, r.kernel_us,
					        sp[s][si][p], f.csv);
					fflush(csv);
					char bufs[48] = "";
					if (r.plan.tc && r.plan.stage)
						snprintf(bufs, sizeof bufs, " (%d buffers of %d k)", r.plan.tc_stages, ptx_tc_step_k(&r.plan));
					fprintf(stderr,
					        "  %-16s %5g%% %-8s %9.1f us  %5.2fx cuBLAS %s (%.1f us)  err %.1e  "
					        "%d,%d,%d,%d,%d%s%s%s%s%s%s%s%s\n",
					        sh->name, sparsities[s], name, r.kernel_us, sp[s][si][p], dt, *base,
					        r.rel_err, r.plan.s.bx, r.plan.s.by, r.plan.s.v, r.plan.s.r, r.plan.s.ksplit,
					        r.plan.atomic ? " atomic" : "", r.plan.wsum ? " wsum" : "", r.plan.xvec ? " xvec" : "",
					        r.plan.wk ? " wk" : "", r.plan.wr ? " wr" : "", r.plan.stage ? " staged" : "",
					        r.plan.tc_wg ? " wgmma" : "", bufs);
				}
				if (failed) {
					sp[s][si][p] = fl[s][si][p] = NAN;
					nfailed++;
				}
				free(values);
				prune_mask_free(&pm);
			}
		free(w), free(imp), free(masked), free(x);
	}
	fclose(csv);
	cuda_close(cu);
	if (rc)
		return rc;
	int nran = 0;
	for (int si = 0; si < NSHAPES; si++)
		nran += ran[si];
	if (!nran) {
		fprintf(stderr, "gpu_bench: no shape measured whole%s\n",
		        stuck ? " before the device became unusable" : out_of_time ? " within --seconds" : "");
		return stuck ? 4 : 3;
	}
	static const char *const tc_cols[NTC] = {"block32", "block64", "2:4 (mma.sp)"};
	if (with_fp32) /* the best structured: all but row-balanced (element-wise) */
		print_table(sp, have_ceil ? fl : NULL, ran, nran, 0, NPAT, NPAT - 1, "best structured", pattern_names,
		            "fp32 speedup over cuBLAS sgemm (no TF32)");
	if (with_fp32 && with_tc)
		printf("\n");
	if (with_tc)
		print_table(sp, have_ceil ? fl : NULL, ran, nran, NPAT, NTC, NTC, "best, bf16 tensor cores", tc_cols,
		            "bf16 tensor cores (f32 accumulation): speedup over cuBLAS GemmEx in bf16");
	if (nfailed)
		fprintf(stderr, "gpu_bench: %d kernels FAILED (above); the means leave them out\n", nfailed);
	return nfailed || stuck ? 4 : 0;
}
