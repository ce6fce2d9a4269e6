/* SPDX-License-Identifier: MIT */
#define _POSIX_C_SOURCE 200809L
/* main.c - the patc command line.
 *
 * Reads a .pat program (or a PatternIR text file, .pir), builds each op's
 * PatternIR through the front end and the passes, applies the target's
 * legality rules, and prints what was asked: a summary line per op, the
 * full PatternIR text form (--emit=pir), or the --explain report.  Outputs
 * go to stdout or, with -o, to a file written atomically.
 */
#include "../frontend/frontend.h"
#include "../support/blas_core.h"
#include "../support/outfile.h"
#include "../support/pool.h"
#include "../support/util.h"
#include "../backend_x86/x86.h"
#include "emit_kernels.h"
#include "emit_weights.h"
#include "emit_cuda.h"
#include "link.h"
#include "run.h"
#include "../backend_ptx/ptx.h"
#include "explain.h"
#include "search_cli.h"
#include "options.h"
#include "stdlib_path.h"

#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool stdout_reported;

/* Standard output could not be written (why: errno, or 0 where a write
 * before failed unseen): said once; PATC_EXIT_ENV. */
static int stdout_failed(int why)
{
	if (!stdout_reported)
		fprintf(stderr, "patc: error: cannot write to standard output%s%s\n", why ? ": " : "",
		        why ? strerror(why) : "");
	stdout_reported = true;
	return PATC_EXIT_ENV;
}

/* After --help or --version: exit 0, or 3 with the reason where their
 * text could not be written (the failed write's errno, kept before exit's
 * check_stdout could only say that one failed). */
static _Noreturn void exit_printed(void)
{
	if (ferror(stdout) || fflush(stdout) != 0)
		exit(stdout_failed(errno));
	exit(PATC_EXIT_OK);
}

static void version(void)
{
	unsigned maj, min, patch;
	LLVMGetVersion(&maj, &min, &patch);
	LLVMInitializeX86TargetInfo();
	LLVMInitializeNVPTXTargetInfo();
	bool x86 = LLVMGetTargetFromName("x86-64") != NULL;
	bool nvptx = LLVMGetTargetFromName("nvptx64") != NULL;
	printf("patc %s\n", PATC_VERSION);
	printf("LLVM %u.%u.%u (targets:%s%s)\n", maj, min, patch, x86 ? " x86-64" : "",
	       nvptx ? " nvptx64" : "");
	/* what patc asks of LLVM's NVPTX backend (ptx.h; LLVM 19's goes up to 8.5) */
	if (nvptx)
		printf("PTX ISA %s (%s where sm_90 adds vectors with red) for sm_80, sm_86, sm_89, sm_90 (sm_90a with "
		       "--wgmma)\n",
		       PTX_ISA_VERSION, PTX_ISA_VERSION_VRED);
}

/* The C identifier for a program: its file name without directory and
 * extension, other characters as '_', a run of '_' as one; one that would
 * start with '_' (reserved in C: 2layer.pat, _x.pat) starts "patc_". */
static void program_base(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path, *dot = strrchr(name, '.');
	size_t n = dot && dot > name ? (size_t)(dot - name) : strlen(name); /* bert.layer0.pat: bert_layer0 */
	size_t o = 0;
	for (size_t i = 0; i < n && o + 6 < len; i++) {
		char ch = name[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
		ch = ok ? ch : '_';
		if (o == 0 && (ch == '_' || (ch >= '0' && ch <= '9'))) {
			memcpy(out, "patc_", 5);
			o = 5;
		}
		if (ch != '_' || out[o - 1] != '_')
			out[o++] = ch;
	}
	out[o] = 0;
	if (o == 0)
		snprintf(out, len, "patc");
}

/* The tensor-core kernel's staging and split-K, for --explain. */
static void explain_tc_staging(StrBuf *out, const PtxPlan *plan)
{
	const int ahead = plan->tc_stages - (plan->tc_wga ? 2 : 1); /* (as tc_stage.c's walk) */
	if (plan->stage)
		sb_printf(out, "    %s; %d buffers of %d k (the copies run %d step%s ahead%s)%s\n", plan->stage_why,
		          plan->tc_stages, ptx_tc_step_k(plan), ahead, ahead == 1 ? "" : "s",
		          plan->tc_wga ? ", a step's wgmma in flight through the next step's barrier" : "",
		          plan->smem_dyn ? ", in dynamic shared memory" : "");
	else
		sb_printf(out, "    %s\n", plan->stage_why);
	if (plan->nsplit > 1)
		sb_printf(out, "    split-K: the walk along k in %lld parts (blockIdx.z), adding into C with atomics%s\n",
		          (long long)plan->nsplit,
		          plan->vred ? ", a lane's 2 adjacent columns at a time (vector red, sm_90)" : "");
}

/* --explain: what the kernel's blocks move from L2 per multiply-add
 * (ptx_traffic), the bound that no schedule of the mapping moves. */
static void explain_traffic(StrBuf *out, const LowerKernel *k, const PtxPlan *plan)
{
	PtxTraffic t;
	if (!ptx_traffic(k, plan, &t)) {
		sb_printf(out, "    traffic from L2: not counted (X read from global memory by each thread, through L1)\n");
		return;
	}
	const double w = t.w_staged + t.w_direct;
	sb_printf(out, "    traffic from L2: %.3g bytes a multiply-add: X %.3g (a block's %lld rows share each X row it "
	               "stages), weights %.3g (%lld columns share each), C %.3g; %.3g GB in all\n",
	          (t.x + w + t.c) / t.macs, t.x / t.macs, (long long)t.rows, w / t.macs, (long long)t.cols, t.c / t.macs,
	          (t.x + w + t.c) * 1e-9);
}

/* The GPU schedule the flags give (patc's choice otherwise). */
static PtxSchedule gpu_given(const Options *o) { return (PtxSchedule){.wg = o->wgmma, .wsum = o->wsum}; }

/* --explain on a GPU target: the kernel's path and mapping. */
static void explain_gpu(StrBuf *out, const OpResult *op, const char *sm, PtxSchedule given)
{
	LowerKernel lk = {op->ir, op->shape, op->name, 1, {0}, false, 0};
	PtxPlan plan;
	ptx_plan_target(&lk, &given, sm, &plan);
	const PtxSchedule *s = &plan.s;
	if (plan.tc_wg) {
		sb_printf(out, "  GPU kernel for %s (PTX for sm_90a): %s\n", sm, plan.tc_why);
		if (plan.tc_wgt)
			sb_printf(out, "    mapping: a block is a warpgroup of 4 warps per %d rows of a kept tile's m loop and %d "
			               "columns, a wgmma.m64n%dk16 per 64 of them, a warp's accumulators 16 of each 64; %lld "
			               "row sets; X and W in %s, C in f32%s\n",
			          plan.tc_wgn, plan.tc_cols * PTX_TC_COLS, plan.tc_wgn, (long long)plan.nsets,
			          pat_dtype_names[op->shape.dtype], plan.zero ? "; C is zeroed before the launch" : "");
		else
			sb_printf(out, "    mapping: a block is a warpgroup of 4 warps per 64 rows of a kept tile's m loop and %d "
			               "columns (wgmma.m64n%dk16), a warp's accumulators 16 of the rows; %lld row sets; X and "
			               "W in %s, C in f32%s\n",
			          plan.tc_wgn, plan.tc_wgn, (long long)plan.nsets, pat_dtype_names[op->shape.dtype],
			          plan.zero ? "; C is zeroed before the launch" : "");
		explain_tc_staging(out, &plan);
		explain_traffic(out, &lk, &plan);
		return;
	}
	if (plan.tc) {
		sb_printf(out, "  GPU kernel for %s: %s\n", sm, plan.tc_why);
		sb_printf(out, "    mapping: a warp per %d rows of a kept tile's m loop and %d columns; blocks of %d x %d "
		               "warps (rows x columns); %lld row sets; X and W in %s, C in f32%s\n",
		          16 * plan.tc_wm, PTX_TC_COLS, plan.tc_rows / plan.tc_wm, plan.tc_cols, (long long)plan.nsets,
		          pat_dtype_names[op->shape.dtype],
		          plan.zero ? "; C is zeroed before the launch" : "");
		explain_tc_staging(out, &plan);
		explain_traffic(out, &lk, &plan);
		return;
	}
	sb_printf(out, "  GPU kernel for %s: %s\n", sm, plan.tc_why);
	sb_printf(out, "    mapping: %s\n", plan.why);
	sb_printf(out, "    schedule: blocks of %d x %d threads, %d column%s and %d row%s per thread, k walk in %d "
	               "part%s; %lld row sets\n",
	          s->bx, s->by, s->v, s->v == 1 ? "" : "s", s->r, s->r == 1 ? "" : "s", s->ksplit,
	          s->ksplit == 1 ? "" : "s", (long long)plan.nsets);
	if (plan.tile_why)
		sb_printf(out, "    register tile: %s\n", plan.tile_why);
	sb_printf(out, "    16-byte loads: X %s, weights %s; %s%s\n", plan.xvec ? "yes" : "no",
	          plan.wk ? "along k" : plan.wr ? "along the rows" : "no",
	          plan.wstage  ? "X and the weights staged in shared memory (cp.async, 2 buffers)"
	          : plan.stage ? "X staged in shared memory (cp.async, 2 buffers)"
	                       : "X read from global memory",
	          plan.zero ? "; C is zeroed before the launch" : "");
	/* (vred on CUDA cores needs xvec or mvec) */
	const char *run = plan.xvec ? "4 adjacent columns" : plan.mvec == 4 ? "4 adjacent rows" : "2 adjacent rows";
	if (plan.wsum)
		sb_printf(out, "    C: each of the %lld parts stores its sums to a workspace, %s a store; the last to finish "
		               "adds them in part order and stores C\n",
		          (long long)plan.nsplit, plan.xvec || plan.mvec ? run : "a float");
	else if (plan.atomic)
		sb_printf(out, "    C: added with atomics, %s%s\n", plan.vred ? run : "a float at a time",
		          plan.vred ? " at a time (vector red, sm_90)" : "");
	else
		sb_printf(out, "    C: stored %s%s\n", plan.xvec || plan.mvec ? run : "a float at a time",
		          plan.xvec || plan.mvec ? " a store" : "");
	explain_traffic(out, &lk, &plan);
}

/* --emit=so: DIR/BASE.so from what compile_objects wrote. */
static int emit_shared(const Options *o, const char *base)
{
	char err[LINK_ERR_MAX];
	StrBuf check; /* x86: the library checks the CPU when it is loaded */
	sb_init(&check);
	if (!o->gpu)
		x86_cpu_check_c(&check, base, o->target);
	const int rc = link_shared(o->output, base, o->gpu, check.len ? check.data : NULL, err);
	sb_free(&check);
	if (rc != PATC_EXIT_OK)
		fprintf(stderr, "patc: error: %s\n", err);
	return rc;
}

/* The file path is one of those the program reads (the .pat file, the
 * files it includes, an op's weights, calibration or scores), by device and
 * inode, with what it is in *what; NULL where none. */
static const char *read_file_at(const Options *o, const Program *prog, const Diag *diag, const char *path,
                                const char **what)
{
	struct stat out, in;
	if (stat(path, &out) != 0 || !S_ISREG(out.st_mode))
		return NULL;
	*what = "the file being compiled";
	if (stat(o->input, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
		return o->input;
	*what = "a file the program includes";
	for (int i = 1; i < diag->nfiles; i++) /* (files[0] is none) */
		if (stat(diag->files[i].path, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return diag->files[i].path;
	*what = "a tensor file the program reads";
	for (int i = 0; i < prog->nops; i++) {
		const WeightBinding *b[3] = {&prog->ops[i].weights, &prog->ops[i].calibration, &prog->ops[i].scores};
		for (int j = 0; j < 3; j++)
			if ((b[j]->kind == WEIGHTS_SAFETENSORS || b[j]->kind == WEIGHTS_NPY) && b[j]->resolved &&
			    stat(b[j]->resolved, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
				return b[j]->resolved;
	}
	return NULL;
}

/* Whether -o would write over a file the program reads (said): -o FILE
 * itself, or one of the files -o DIR and --search write into DIR. */
static bool overwrites_input(const Options *o, const Program *prog, const Diag *diag)
{
	char base[128];
	program_base(o->input, base, sizeof base);
	const bool dir = options_objects(o) || o->search;
	if (!o->output) /* (stdout; a search's BASE.search/) */
		return false;
	static const char *const in_dir[] = {".o", ".h", ".safetensors", ".ptx", "_launch.c", ".bin", ".ll", ".s", ".so",
	                                     "/report.json", "/report.csv", "/pareto.svg", "/tune.jsonl"};
	const int n = dir ? (int)(sizeof in_dir / sizeof *in_dir) : 1;
	for (int i = 0; i < n; i++) {
		char path[4096];
		if (!dir)
			snprintf(path, sizeof path, "%s", o->output);
		else if (in_dir[i][0] == '/')
			snprintf(path, sizeof path, "%s%s", o->output, in_dir[i]);
		else
			snprintf(path, sizeof path, "%s/%s%s", o->output, base, in_dir[i]);
		const char *what, *read = read_file_at(o, prog, diag, path, &what);
		if (read) {
			fprintf(stderr, "patc: error: -o %s would write over '%s', %s: write the output elsewhere\n", o->output,
			        path, what);
			return true;
		}
	}
	return false;
}

static int compile_objects(const Options *o, const Program *prog, const PruneOp *pruned)
{
	PATC_ASSERT(prog->nops > 0);
	bool created;
	if (!util_make_dir(o->output, &created)) {
		fprintf(stderr, "patc: error: cannot create '%s': %s\n", o->output, strerror(errno));
		return PATC_EXIT_ENV;
	}
	char base[128];
	program_base(o->input, base, sizeof base);
	/* the files replace those of an earlier run together (outfile.h); an
	 * earlier run's files that this one does not write again go with them
	 * (its library would load that run's kernels and weights, its BASE.o
	 * or BASE.ptx would sit beside a header it does not match); the
	 * directory locked meanwhile against another run into it */
	if (!outfile_group_begin(o->output, OUTFILE_WAIT_S)) {
		if (errno == EWOULDBLOCK)
			fprintf(stderr, "patc: error: another patc run is writing into '%s': waited %d s for it to finish\n",
			        o->output, OUTFILE_WAIT_S);
		else
			fprintf(stderr, "patc: error: cannot write into '%s': %s\n", o->output, strerror(errno));
		if (created)
			rmdir(o->output);
		return PATC_EXIT_ENV;
	}
	const struct {
		const char *suffix;
		bool written;
	} files[] = {
		{".o", !o->gpu},         {".s", !o->gpu && o->emit_asm}, {".ptx", o->gpu}, {"_launch.c", o->gpu},
		{".bin", o->gpu},        {".ll", o->emit_llvm},          {".so", o->emit_so},
	};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof path, "%s/%s%s", o->output, base, files[i].suffix);
		if (!files[i].written && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			outfile_group_remove(path);
	}
	KernelSchedule *given = NULL; /* patc's, but the GPU flags */
	if (o->gpu) {
		given = calloc((size_t)prog->nops + 1, sizeof *given);
		if (!given)
			util_oom();
		for (int i = 0; i < prog->nops; i++)
			given[i] = (KernelSchedule){.wg = o->wgmma, .wsum = o->wsum};
	}
	const KernelFiles kf = {o->output, base, o->input, o->target, o->gpu, prog, pruned, given, o->emit_llvm, o->emit_asm,
	                        o->fixed_n};
	int rc = emit_kernels(&kf);
	free(given);
	if (rc == PATC_EXIT_OK && o->emit_so) /* (linked from the files before they are in place: one of them) */
		rc = emit_shared(o, base);
	if (!outfile_group_end(rc == PATC_EXIT_OK)) {
		fprintf(stderr, "patc: error: cannot write the files of '%s' into '%s': %s\n", o->input, o->output,
		        strerror(errno));
		rc = PATC_EXIT_ENV;
	}
	if (rc != PATC_EXIT_OK && created)
		rmdir(o->output); /* (where the failure left nothing in it) */
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* At exit: what is still buffered for stdout written, and any failure to
 * write it (--help > /dev/full, merge's summary) the environment's, exit 3. */
static void check_stdout(void)
{
	const bool failed_before = ferror(stdout);
	if (fflush(stdout) != 0)
		_exit(stdout_failed(errno));
	if (failed_before)
		_exit(stdout_failed(0));
}

static int emit_stdout(const StrBuf *out)
{
	if (fputs(out->data ? out->data : "", stdout) < 0 || fflush(stdout) != 0)
		return stdout_failed(errno);
	return PATC_EXIT_OK;
}

/* --run's report where an op failed: -o's file is not written, so the
 * report goes beside the errors on stderr, else to stdout; a failure to
 * write stdout is said but leaves the run's exit code (a wrong kernel
 * outranks the environment), not check_stdout's at exit. */
static void emit_failed_run(const Options *o, const StrBuf *out)
{
	FILE *to = o->output ? stderr : stdout;
	if ((fputs(out->data ? out->data : "", to) < 0 || fflush(to) != 0) && to == stdout) {
		stdout_failed(errno);
		clearerr(stdout);
	}
}

/* Writes out to -o's file or stdout; 0 or PATC_EXIT_ENV. */
static int emit(const Options *o, const StrBuf *out)
{
	const char *data = out->data ? out->data : "";
	if (!o->output)
		return emit_stdout(out);
	if (!outfile_write(o->output, data, out->len)) {
		fprintf(stderr, "patc: error: cannot write '%s': %s\n", o->output, strerror(errno));
		return PATC_EXIT_ENV;
	}
	return PATC_EXIT_OK;
}

static void dump_after(const Options *o, const OpResult *op, StrBuf *out)
{
	for (int i = 0; i < op->ntrace; i++) {
		const TraceStep *t = &op->trace[i];
		const char *name = pir_prim_names[t->prim.kind];
		if (strcmp(o->dump_after, "all") != 0 && strcmp(o->dump_after, name) != 0)
			continue;
		char text[PIR_PRIM_TEXT_MAX], paper[PIR_PAPER_MAX];
		pir_prim_format(&t->prim, text, sizeof text);
		Pir ir;
		trace_step_ir(t, &ir);
		pir_print_paper(&ir, paper, sizeof paper);
		sb_printf(out, "# %s: after %s\n%s\n", op->name, text, paper);
	}
}

/* Whether diagnostics are coloured (--color, else a terminal that is not dumb). */
static bool want_color(const Options *o)
{
	return o->color == 1 ||
	       (o->color == -1 && isatty(STDERR_FILENO) && getenv("TERM") && strcmp(getenv("TERM"), "dumb") != 0);
}

static int run_pir_file(const Options *o)
{
	size_t len;
	char why[128];
	char *text = frontend_read_source(o->input, &len, why);
	if (!text) {
		fprintf(stderr, "patc: error: cannot read '%s': %s\n", o->input, why);
		return PATC_EXIT_INPUT;
	}
	if (strlen(text) != len) {
		fprintf(stderr, "%s: error: the file contains a NUL byte\n", o->input);
		free(text);
		return PATC_EXIT_INPUT;
	}
	enum { MAX_BLOCKS = 256 };
	Pir *irs = malloc(MAX_BLOCKS * sizeof *irs);
	if (!irs)
		util_oom();
	char err[512];
	int n = pir_read_text(text, irs, MAX_BLOCKS, err, sizeof err);
	int rc = PATC_EXIT_OK;
	if (n < 0) {
		/* err is "LINE:COL: message": show it with the line and a caret. */
		Arena arena;
		arena_init(&arena);
		Diag diag;
		diag_init(&diag, &arena, stderr);
		diag.color = want_color(o);
		int file = diag_add_file(&diag, o->input, text, len);
		int line = 0, col = 0, skip = 0;
		if (sscanf(err, "%d:%d: %n", &line, &col, &skip) == 2 && skip > 0)
			diag_error(&diag, ((SrcLoc){file, line, col, line, col}), "%s", err + skip);
		else
			diag_error(&diag, ((SrcLoc){file, 0, 0, 0, 0}), "%s", err);
		arena_free(&arena);
		free(text);
		free(irs);
		return PATC_EXIT_INPUT;
	}
	free(text);
	StrBuf out;
	sb_init(&out);
	for (int i = 0; i < n; i++) {
		if (o->gpu) {
			PirViolation v[PIR_MAX_LOOPS];
			int nv = pir_check_gpu(&irs[i], v, PIR_MAX_LOOPS);
			for (int j = 0; j < nv && j < PIR_MAX_LOOPS; j++)
				fprintf(stderr, "%s: error: pir '%s' cannot run on %s: %s\n", o->input, irs[i].op,
				        o->target, v[j].text);
			if (nv)
				rc = PATC_EXIT_INPUT;
		}
		if (o->emit_pir) {
			char *t = pir_print_text(&irs[i]);
			sb_printf(&out, "%s%s", i ? "\n" : "", t);
			free(t);
		} else if (o->explain) {
			sb_printf(&out, "%spir %s: m=%lld k=%lld\n", i ? "\n" : "", irs[i].op,
			          (long long)irs[i].len[PIR_AXIS_M], (long long)irs[i].len[PIR_AXIS_K]);
			explain_nest(&out, &irs[i], "  ");
		} else {
			explain_summary(&out, &irs[i], NULL);
		}
	}
	if (rc == PATC_EXIT_OK)
		rc = emit(o, &out);
	sb_free(&out);
	free(irs);
	return rc;
}

/* `patc merge` and `patc train-cost-model` (options.h). */
static int merge_main(int argc, char **argv)
{
	const char *logs[LOGS_MAX], *output;
	int n;
	const int rc = options_parse_merge(argc, argv, logs, &n, &output);
	if (rc == OPTIONS_PRINTED)
		exit_printed();
	return rc != PATC_EXIT_OK ? rc : search_merge(n, logs, output);
}

static int train_main(int argc, char **argv)
{
	CostTrainOptions t;
	const char *logs[LOGS_MAX];
	const int rc = options_parse_train(argc, argv, &t, logs);
	if (rc == OPTIONS_PRINTED)
		exit_printed();
	return rc != PATC_EXIT_OK ? rc : search_train(&t);
}

/* What a compilation of a .pat program holds, stage by stage. */
typedef struct Run {
	Arena arena;
	Diag diag;
	char stdlib_buf[4096];
	const char *stdlib;
	Program prog;
	PruneOp *pruned; /* per op; have[i]: pruned[i] is (the op has weights) */
	bool *have;
	StrBuf out; /* what goes to -o's file or stdout */
} Run;

static int errors_generated(int errors)
{
	fprintf(stderr, "%d error%s generated.\n", errors, errors == 1 ? "" : "s");
	return PATC_EXIT_INPUT;
}

/* The front end and the passes: r->prog from the .pat file. */
static int load(const Options *o, Run *r)
{
	diag_init(&r->diag, &r->arena, stderr);
	r->diag.color = want_color(o);
	r->stdlib = find_stdlib(r->stdlib_buf, sizeof r->stdlib_buf);
	FrontendOptions fo = {
		.include_dirs = o->includes,
		.ninclude = o->ninclude,
		.stdlib_dir = r->stdlib,
		.gpu = o->gpu,
		.target = o->target,
		.trace = o->explain || o->dump_after,
		.rank = o->rank,
		.importance_set = o->importance_set,
		.importance = o->importance,
	};
	const int errors = frontend_compile(&fo, &r->diag, &r->arena, o->input, NULL, &r->prog);
	return errors ? errors_generated(errors) : PATC_EXIT_OK;
}

/* Prunes every op that has weights (all of them for --emit=weights, --run
 * and -o DIR, where an op without them is an error). */
static int prune(const Options *o, Run *r)
{
	r->pruned = calloc((size_t)r->prog.nops + 1, sizeof *r->pruned);
	r->have = calloc((size_t)r->prog.nops + 1, sizeof *r->have);
	if (!r->pruned || !r->have)
		util_oom();
	int errors = 0;
	for (int i = 0; i < r->prog.nops; i++) {
		const OpResult *op = &r->prog.ops[i];
		if (op->weights.kind == WEIGHTS_NONE && (o->search || (!o->emit_weights && !o->run && !options_objects(o))))
			continue;
		char err[PRUNE_ERR_MAX];
		SrcLoc where;
		if (!prune_op(op, &r->pruned[i], err, &where)) {
			diag_error(&r->diag, where, "%s", err);
			errors++;
			continue;
		}
		r->have[i] = true;
	}
	return errors ? errors_generated(errors) : PATC_EXIT_OK;
}

/* What is said of each op: --dump-after's steps (on stderr), the
 * --explain report, the PatternIR (--emit=pir) or the summary line; then
 * whether what was asked for has ops to be made of, and whether -o would
 * write over an input. */
static int describe(const Options *o, Run *r)
{
	for (int i = 0; i < r->prog.nops; i++) {
		const OpResult *op = &r->prog.ops[i];
		const PruneOp *p = r->have[i] ? &r->pruned[i] : NULL;
		if (o->dump_after) { /* to stderr, so it never mixes with the output */
			StrBuf dump;
			sb_init(&dump);
			dump_after(o, op, &dump);
			fputs(dump.data ? dump.data : "", stderr);
			sb_free(&dump);
		}
		if (o->explain) {
			sb_puts(&r->out, i ? "\n" : "");
			explain_op(&r->out, op, &r->diag, p);
			if (o->gpu)
				explain_gpu(&r->out, op, o->target, gpu_given(o));
		} else if (o->emit_pir) {
			char *t = pir_print_text(op->ir);
			sb_printf(&r->out, "%s%s", i ? "\n" : "", t);
			free(t);
		} else if (!o->emit_weights && !o->run && !options_objects(o) && !o->search) {
			explain_summary(&r->out, op->ir, p ? &p->metrics : NULL);
		}
	}
	if (r->prog.nops == 0) { /* an error only where what was asked for is made of ops */
		const char *asked = o->search ? "--search has nothing to search"
		                    : o->run ? "--run has nothing to run"
		                    : options_objects(o) ? "-o has no kernel to write"
		                    : o->emit_weights ? "--emit=weights has no weights to write" : NULL;
		if (asked) {
			fprintf(stderr, "patc: error: '%s' defines no op: %s\n", o->input, asked);
			return PATC_EXIT_INPUT;
		}
		fprintf(stderr, "patc: note: '%s' defines no op; nothing to compile\n", o->input);
	}
	return overwrites_input(o, &r->prog, &r->diag) ? PATC_EXIT_USAGE : PATC_EXIT_OK;
}

/* --search: its settings from the options, else from the op's own
 * `search = search(...)`, else the defaults. */
static int search(const Options *o, Run *r)
{
	char base[128], dir[4096];
	program_base(o->input, base, sizeof base);
	snprintf(dir, sizeof dir, "%s.search", base);
	SearchCli sc = {o->input, o->output ? o->output : dir, base, o->search_op, o->target, o->gpu, o->resume,
	                r->stdlib, o->s, o->cost_model};
	sc.s.gpu = o->gpu;
	for (int i = 0; i < r->prog.nops; i++) {
		const OpSearch *os = &r->prog.ops[i].search;
		if (!os->given || (o->search_op && strcmp(o->search_op, r->prog.ops[i].name)) ||
		    r->prog.ops[i].weights.kind == WEIGHTS_NONE)
			continue;
		if (os->sparsity >= 0 && !(o->s_given & SET_SPARSITY))
			sc.s.sparsity = os->sparsity;
		if (os->max_sparsity >= 0 && !(o->s_given & SET_SPARSITY))
			sc.s.max_sparsity = os->max_sparsity;
		if (os->tolerance >= 0 && !(o->s_given & SET_TOLERANCE))
			sc.s.tolerance = os->tolerance;
		if (os->budget >= 0 && !(o->s_given & SET_BUDGET))
			sc.s.budget = os->budget;
		if (os->max_depth >= 0 && !(o->s_given & SET_DEPTH))
			sc.s.max_depth = os->max_depth;
		if (os->topk >= 0 && !(o->s_given & SET_TOPK))
			sc.s.topk = os->topk;
		if (os->min_length >= 0 && !(o->s_given & SET_MINLEN))
			sc.s.min_length = os->min_length;
		if (os->max_pattern >= 0 && !(o->s_given & SET_MAXPAT))
			sc.s.max_pattern = os->max_pattern;
	}
	sc.s.threads = o->threads ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	int rc = search_cli(&sc, &r->prog, r->pruned, &r->out);
	const int erc = emit_stdout(&r->out);
	return rc == PATC_EXIT_OK ? erc : rc;
}

/* --run: each op's kernel timed beside the baselines, its report written. */
static int run(const Options *o, Run *r)
{
	char err[512];
	int code, rc = PATC_EXIT_OK;
	if (o->gpu) {
		if (!run_ops_gpu(&r->prog, r->pruned, o->target, gpu_given(o), &r->out, err, &code)) {
			emit_failed_run(o, &r->out);
			fprintf(stderr, "patc: error: %s\n", err);
			return code;
		}
		return emit(o, &r->out);
	}
	const char *lacks = x86_host_lacks(x86_target_cpu(o->target));
	if (lacks) {
		fprintf(stderr, "patc: error: --run: this machine cannot run %s code: its CPU lacks %s (run it where it "
		                "can, or use --target=native, the host's)\n",
		        o->target, lacks);
		return PATC_EXIT_ENV;
	}
	const int threads = o->threads ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 0; i < r->prog.nops; i++) { /* each op, whether one before it failed or not */
		if (!run_op(&r->prog.ops[i], &r->pruned[i], x86_target_cpu(o->target), threads, &r->out, err, &code)) {
			fprintf(stderr, "patc: error: %s\n", err);
			if (rc != PATC_EXIT_INTERNAL) /* a wrong kernel outranks the environment */
				rc = code;
		}
	}
	if (rc != PATC_EXIT_OK) {
		emit_failed_run(o, &r->out);
		return rc;
	}
	return emit(o, &r->out);
}

/* --emit=weights: the packed weights (and with --mask the masks) to -o. */
static int write_weights(const Options *o, Run *r)
{
	char err[TENSOR_ERR_MAX];
	if (!emit_weights(o->output, &r->prog, r->pruned, o->mask, PATC_VERSION, err)) {
		fprintf(stderr, "patc: error: %s\n", err);
		return PATC_EXIT_ENV;
	}
	return PATC_EXIT_OK;
}

/* Does what was asked, with what describe() wrote in r->out. */
static int act(const Options *o, Run *r)
{
	if (o->search)
		return search(o, r);
	if (options_objects(o))
		return compile_objects(o, &r->prog, r->pruned);
	if (o->run)
		return run(o, r);
	if (o->emit_weights)
		return write_weights(o, r);
	return emit(o, &r->out);
}

int main(int argc, char **argv)
{
	atexit(check_stdout); /* (first, so it runs last: after the temporary files' removal) */
	util_stack_room(POOL_STACK_BYTES); /* (--run and --search run kernels on this thread too) */
	if (argc > 1 && !strcmp(argv[1], "merge"))
		return merge_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "train-cost-model"))
		return train_main(argc, argv);
	/* (patc's own, not in --help: --run and --search time the dense
	 * baseline with another OpenBLAS kernel set through it) */
	if (argc > 1 && !strcmp(argv[1], BLAS_CORE_SUBCOMMAND))
		return blas_core_subcommand(argc, argv);
	Options o;
	int rc = options_parse(argc, argv, &o);
	if (rc != PATC_EXIT_OK)
		return rc;
	if (o.help || o.version) {
		o.help ? options_usage(stdout) : version();
		exit_printed();
	}
	if (ends_with(o.input, ".pir"))
		return run_pir_file(&o);

	Run r = {0};
	arena_init(&r.arena);
	sb_init(&r.out);
	rc = load(&o, &r);
	if (rc == PATC_EXIT_OK)
		rc = prune(&o, &r);
	if (rc == PATC_EXIT_OK)
		rc = describe(&o, &r);
	if (rc == PATC_EXIT_OK)
		rc = act(&o, &r);
	for (int i = 0; r.pruned && i < r.prog.nops; i++)
		prune_op_free(&r.pruned[i]);
	free(r.pruned);
	free(r.have);
	sb_free(&r.out);
	arena_free(&r.arena);
	return rc;
}
