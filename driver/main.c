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
#include "../support/outfile.h"
#include "../support/pool.h"
#include "../support/util.h"
#include "../backend_x86/x86.h"
#include "emit_weights.h"
#include "emit_cuda.h"
#include "link.h"
#include "run.h"
#include "../backend_ptx/ptx.h"
#include "explain.h"
#include "search_cli.h"

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

typedef struct Target {
	const char *name;
	bool gpu;
	const char *what;
} Target;

static const Target targets[] = {
	{"x86-64", false, "x86-64, this machine's CPU (its widest vectors)"},
	{"x86-64-avx2", false, "x86-64 with AVX2 and FMA"},
	{"x86-64-avx512", false, "x86-64 with AVX-512"},
	{"sm_80", true, "NVIDIA A100 (Ampere): PTX"},
	{"sm_86", true, "NVIDIA Ampere (GA10x): PTX"},
	{"sm_89", true, "NVIDIA Ada: PTX"},
	{"sm_90", true, "NVIDIA H100/H200 (Hopper): PTX"},
};

static const Target *find_target(const char *name)
{
	for (size_t j = 0; j < sizeof targets / sizeof *targets; j++)
		if (!strcmp(targets[j].name, name))
			return &targets[j];
	return NULL;
}

typedef struct Options {
	const char *input;
	const char *output;
	const char *target;
	bool gpu;
	bool explain;
	bool emit_pir;
	bool emit_weights;
	bool emit_llvm, emit_asm; /* beside the object: DIR/BASE.ll, DIR/BASE.s */
	bool emit_so;             /* and DIR/BASE.so, linked by $CC (link.h) */
	bool mask;     /* --mask: add the dense mask to --emit=weights */
	bool run;      /* --run: time each op's kernel beside OpenBLAS */
	bool wgmma;    /* --wgmma: sm_90 tensor-core kernels on wgmma where they qualify */
	bool wsum;     /* --split-workspace: split walks' parts summed through a workspace */
	int threads;   /* --threads, 0: all cores */
	PatRank rank;  /* --rank: default ranking of perforations */
	const char *dump_after; /* a primitive name or "all" */
	const char *includes[PAT_MAX_INCLUDE_DIRS];
	int ninclude;
	int color; /* -1 auto, 0 never, 1 always */
	bool search;  /* --search */
	const char *search_opt; /* the last option given that only --search takes */
	const char *measure_opt; /* the last of them that only a search that measures takes */
	bool tune_set;           /* --tune= given, above 0 */
	const char *search_op; /* --op */
	bool resume;           /* --resume */
	SearchSettings s;      /* its settings, defaults overridden by the options */
	const char *cost_model; /* --cost-model */
	bool importance_set;    /* --importance */
	bool rank_set;          /* --rank */
	PatImportance importance;
	unsigned s_given;      /* which of them the options set (SET_* bits) */
} Options;

/* The most shards a search splits into (--shard, a Slurm array). */
enum { SHARDS_MAX = 100000 };

/* The search settings an option can set; the op's `search = search(...)`
 * sets those the command line leaves. */
enum {
	SET_SPARSITY = 1, SET_TOLERANCE = 2, SET_BUDGET = 4, SET_DEPTH = 8, SET_TOPK = 16, SET_MINLEN = 32, SET_MAXPAT = 64
};

static void usage(FILE *f)
{
	fputs("usage: patc FILE.pat [options]\n"
	      "       patc FILE.pir [options]     (read PatternIR text form)\n"
	      "       patc merge LOG... -o OUT    (join --search tuning logs)\n"
	      "       patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K] [--seed=N]\n"
	      "                                   (learn the search's cost model from tuning logs)\n"
	      "\n"
	      "Compiles sparse weight patterns written as loop schedules (.pat) to PatternIR.\n"
	      "\n"
	      "options:\n"
	      "  --emit=pir         print each op's PatternIR in the full text form\n"
	      "                     (default: one line per op in the paper's notation, with\n"
	      "                     the pruning metrics of ops that have weights)\n"
	      "  --emit=weights     prune every op's weights and write the packed Fractal-ELL\n"
	      "                     tensors and metrics to the .safetensors file given by -o\n"
	      "  --mask             with --emit=weights: also write each op's dense mask\n"
	      "  --run              compile each op's kernel (every op needs weights), check\n"
	      "                     it and time it: x86-64 targets JIT-compile it and compare\n"
	      "                     with a dense OpenBLAS sgemm with the same threads; GPU\n"
	      "                     targets run it through the CUDA driver (exit 3 without\n"
	      "                     one) beside cuBLAS (sgemm; on tensor cores GemmEx in the\n"
	      "                     op's 16-bit dtype); a wrong result is named and the next\n"
	      "                     op runs (exit 4)\n"
	      "  --threads=N        threads for --run and --search (default: all cores)\n"
	      "  --search           search the op's pattern and kernel schedule jointly: tile\n"
	      "                     and perforate W's loops, drop candidates whose magnitude\n"
	      "                     loss exceeds the unstructured bound's by more than the\n"
	      "                     budget, rank the rest by a cost model, then compile, check\n"
	      "                     and time the best ranked (each in a child process with a\n"
	      "                     timeout; on a GPU target, on the GPU) beside dense\n"
	      "                     OpenBLAS (cuBLAS) and the standard library's patterns,\n"
	      "                     then tune the fastest's kernel schedules; writes\n"
	      "                     report.json, report.csv, pareto.svg, the best kernel and\n"
	      "                     (where it measures) tune.jsonl to -o DIR (default\n"
	      "                     BASE.search); exit 1 where no pattern is within the budget\n"
	      "                     or every measured candidate failed\n"
	      "  --sparsity=P       --search: the target sparsity (default 75%), or a range\n"
	      "                     P..Q (70%..80%): the fastest within the budget at any\n"
	      "                     sparsity in it; here and below P is a percentage (75%)\n"
	      "                     or a fraction (0.75)\n"
	      "  --tolerance=P      --search: how far the density may be from it (default 2%)\n"
	      "  --budget=P         --search: magnitude loss allowed over the unstructured\n"
	      "                     bound, in points (default 5%)\n"
	      "  --topk=N           --search: candidates measured (default 8)\n"
	      "  --tune=N           --search: tune the kernel schedules (vector width,\n"
	      "                     accumulators, column chunks, X panels, threads; on GPUs\n"
	      "                     threads, columns and rows a thread, split-K, staging) of\n"
	      "                     the best and the fastest, N in all (default 3)\n"
	      "  --tie=P            --search: kernels within P of the fastest count as equally\n"
	      "                     fast, and the best is the most accurate of them (never\n"
	      "                     slower than a standard-library pattern within the\n"
	      "                     budget; default 2%; 0: the fastest)\n"
	      "  --explore=P        --search: the share of them drawn at random from the\n"
	      "                     ranked rest instead of taken from the top (default 0%;\n"
	      "                     varied logs train a better cost model)\n"
	      "  --max-depth=N      --search: levels per axis, 1 to 3 (default 3)\n"
	      "  --min-length=N     --search: the shortest loop a split makes (default 4)\n"
	      "  --max-pattern=N    --search: the longest inner level of a split (default 64)\n"
	      "  --seed=N           --search: the order of equally ranked candidates\n"
	      "  --timeout=S        --search: seconds one measurement may take (default 60)\n"
	      "  --no-measure       --search: rank by the cost model alone\n"
	      "  --cost-model=FILE  --search: rank with this learned model, or 'analytic'\n"
	      "                     (default: the standard library's for the target,\n"
	      "                     cost-x86-64.model, else the analytic model)\n"
	      "  --op=NAME          --search: the op to search (default: the one with weights)\n"
	      "  --resume           --search: take over the measurements DIR/tune.jsonl holds\n"
	      "                     (a search killed half-way goes on where it was)\n"
	      "  --shard=I/N        --search: measure only the I-th of every N ranked\n"
	      "                     candidates (0 <= I < N; SLURM_ARRAY_TASK_ID and\n"
	      "                     SLURM_ARRAY_TASK_COUNT give them in a Slurm job array);\n"
	      "                     `patc merge LOG... -o OUT` joins the shards' logs\n"
	      "  --importance=magnitude|l2|wanda\n"
	      "                     how weights are scored, over the ops' own 'importance'\n"
	      "                     (wanda needs the op's calibration activations)\n"
	      "  --rank=total|lookahead\n"
	      "                     how a perforation ranks its candidates, for ops that do\n"
	      "                     not set 'rank': their sub-block's total importance, or\n"
	      "                     what survives the perforations inside it (default: "
	      PAT_RANK_DEFAULT_NAME ")\n"
	      "  --explain          show the loop nest after every primitive: strides,\n"
	      "                     padding, pattern size W, selection region Q, density,\n"
	      "                     mask diversity and the packed storage; on a GPU target\n"
	      "                     also the kernel's path, mapping, staging and traffic\n"
	      "                     from L2\n"
	      "  --dump-after=PASS  print the nest after every PASS (split, reorder, join,\n"
	      "                     perforate, condense, or all) to stderr\n"
	      "  --target=NAME      x86-64 (default: this machine's CPU, as -march=native),\n"
	      "                     x86-64-avx2, x86-64-avx512 (those ISAs, for other\n"
	      "                     machines), sm_80, sm_86, sm_89, sm_90; GPU targets check\n"
	      "                     the GPU legality rules and compile to PTX (fp32 on CUDA\n"
	      "                     cores; ops of dtype f16 or bf16 whose kept tiles are\n"
	      "                     dense 16 x 16 on tensor cores)\n"
	      "  --wgmma            sm_90: the staged tensor-core kernels of dense kept tiles\n"
	      "                     run on Hopper's warpgroup mma (wgmma, PTX for sm_90a)\n"
	      "                     instead of mma.sync; checked on the host emulator and by\n"
	      "                     ptxas, not yet measured on a GPU\n"
	      "  --split-workspace  GPU targets: where a kernel on CUDA cores splits its walk\n"
	      "                     along k over blocks, the parts store their sums to a\n"
	      "                     workspace in the module and the last to finish adds\n"
	      "                     them up, in part order, instead of adding to a zeroed C\n"
	      "                     with atomics: no atomics on C, no zeroing launch (where\n"
	      "                     every row has an owner), the same bits every run\n"
	      "                     (launches of one loaded module must then not overlap);\n"
	      "                     checked on the host emulator, not yet measured on a GPU\n"
	      "  -o PATH            write the output to PATH (atomically) instead of stdout;\n"
	      "                     without --emit/--explain/--run, PATH is a directory that\n"
	      "                     gets BASE.o (the kernels), BASE.h (their C ABI) and\n"
	      "                     BASE.safetensors (the packed weights; every op needs\n"
	      "                     weights), BASE from FILE.pat; for a GPU target BASE.ptx,\n"
	      "                     BASE.h and BASE_launch.c (a C launcher over the dlopen'd\n"
	      "                     CUDA driver), BASE.bin (raw packed weights) and\n"
	      "                     BASE.safetensors\n"
	      "  --emit=llvm,asm,so with -o DIR: also BASE.ll, (x86-64) BASE.s, and BASE.so:\n"
	      "                     a shared library the C compiler $CC (default cc)\n"
	      "                     links from BASE.o, or on a GPU target compiles from\n"
	      "                     BASE_launch.c (exit 3 without one)\n"
	      "  -I DIR             search DIR for included files (after the file's own\n"
	      "                     directory, before the standard library)\n"
	      "  --color=WHEN       colour diagnostics: auto (default), always, never\n"
	      "  -h, --help         show this help\n"
	      "  -V, --version      show the versions of patc and LLVM\n"
	      "\n"
	      "exit codes: 0 ok, 1 errors in the input, 2 bad usage, 3 environment\n"
	      "(unwritable output, missing tools), 4 internal compiler error\n"
	      "\n"
	      "The standard pattern library is searched in $PATC_STDLIB, else in\n" PATC_STDLIB_DIR "\n"
	      "or, for an installed patc, in ../share/patc/stdlib beside the binary.\n",
	      f);
}

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

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "patc: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run 'patc --help' for usage)\n");
	return PATC_EXIT_USAGE;
}

static int unknown_target(const char *name)
{
	fprintf(stderr, "patc: error: unknown target '%s' (", name);
	for (size_t j = 0; j < sizeof targets / sizeof *targets; j++)
		fprintf(stderr, "%s%s", j ? ", " : "", targets[j].name);
	fprintf(stderr, ")\n(run 'patc --help' for usage)\n");
	return PATC_EXIT_USAGE;
}

/* -o without another kind of output: compile the kernels to DIR. */
static bool objects(const Options *o)
{
	return o->output && !o->emit_pir && !o->emit_weights && !o->explain && !o->run && !o->search;
}

/* "75%" or "0.75" into [0, 1]: digits with at most one '.', no sign,
 * space, exponent or hex (which strtod would take). */
static bool parse_fraction(const char *s, double *out)
{
	size_t digits = strspn(s, "0123456789"), n = digits;
	if (s[n] == '.') {
		const size_t more = strspn(s + n + 1, "0123456789");
		digits += more;
		n += 1 + more;
	}
	if (!digits || (s[n] && strcmp(s + n, "%")))
		return false;
	char *end;
	double v = strtod(s, &end);
	if (end != s + n)
		return false;
	if (*end == '%') {
		v /= 100;
		end++;
	}
	if (*end || !(v >= 0 && v <= 1))
		return false;
	*out = v;
	return true;
}

static bool parse_count(const char *s, long lo, long hi, long *out)
{
	char *end;
	if (!(isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]))))
		return false; /* (strtol would take spaces and a plus) */
	errno = 0;
	long v = strtol(s, &end, 10);
	if (*end || errno == ERANGE || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* a is one of the options names (a trailing '=': a prefix of a). */
static bool is_option(const char *a, const char *const *names, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		const size_t len = strlen(names[j]);
		if (names[j][len - 1] == '=' ? !strncmp(a, names[j], len) : !strcmp(a, names[j]))
			return true;
	}
	return false;
}

static int parse_args(int argc, char **argv, Options *o)
{
	memset(o, 0, sizeof *o);
	o->target = "x86-64";
	o->color = -1;
	o->rank = PAT_RANK_DEFAULT;
	o->s = search_defaults;
	/* the options only --search takes (a trailing '=': a prefix) */
	static const char *const search_only[] = {
		"--no-measure", "--resume",  "--shard=",   "--op=",        "--sparsity=",  "--tolerance=",
		"--cost-model=", "--tune=",  "--tie=",     "--explore=",   "--timeout=",   "--budget=",
		"--topk=",     "--max-depth=", "--seed=", "--min-length=", "--max-pattern=",
	};
	/* of them, those that shape measurements (--no-measure makes none) */
	static const char *const measure_only[] = {
		"--resume", "--shard=", "--tune=", "--tie=", "--explore=", "--timeout=",
	};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (is_option(a, search_only, sizeof search_only / sizeof *search_only))
			o->search_opt = a;
		if (is_option(a, measure_only, sizeof measure_only / sizeof *measure_only))
			o->measure_opt = a;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit_printed();
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			version();
			exit_printed();
		} else if (!strcmp(a, "--explain")) {
			o->explain = true;
		} else if (!strncmp(a, "--emit=", 7)) {
			char kinds[256];
			const size_t len = strlen(a + 7);
			if (!len || len >= sizeof kinds || a[7] == ',' || a[6 + len] == ',' || strstr(a + 7, ",,"))
				return usage_error("--emit takes kinds separated by commas (this build emits: pir, weights, llvm, "
				                   "asm, so), not '%.80s'", a + 7);
			memcpy(kinds, a + 7, len + 1);
			for (char *save = NULL, *kind = strtok_r(kinds, ",", &save); kind;
			     kind = strtok_r(NULL, ",", &save)) {
				if (!strcmp(kind, "pir"))
					o->emit_pir = true;
				else if (!strcmp(kind, "weights"))
					o->emit_weights = true;
				else if (!strcmp(kind, "llvm"))
					o->emit_llvm = true;
				else if (!strcmp(kind, "asm"))
					o->emit_asm = true;
				else if (!strcmp(kind, "so"))
					o->emit_so = true;
				else
					return usage_error("unknown --emit kind '%s' (this build emits: pir, weights, "
					                   "llvm, asm, so)", kind);
			}
		} else if (!strcmp(a, "--mask")) {
			o->mask = true;
		} else if (!strcmp(a, "--run")) {
			o->run = true;
		} else if (!strcmp(a, "--wgmma")) {
			o->wgmma = true;
		} else if (!strcmp(a, "--split-workspace")) {
			o->wsum = true;
		} else if (!strncmp(a, "--threads=", 10)) {
			long t;
			if (!parse_count(a + 10, 1, 256, &t))
				return usage_error("--threads takes a count from 1 to 256, not '%s'", a + 10);
			o->threads = (int)t;
		} else if (!strcmp(a, "--search")) {
			o->search = true;
		} else if (!strcmp(a, "--no-measure")) {
			o->s.measure = false;
		} else if (!strcmp(a, "--resume")) {
			o->resume = true;
		} else if (!strncmp(a, "--shard=", 8)) {
			const char *slash = strchr(a + 8, '/');
			char first[32];
			long si = -1, sn = 0;
			if (slash && slash - (a + 8) < (ptrdiff_t)sizeof first)
				snprintf(first, sizeof first, "%.*s", (int)(slash - (a + 8)), a + 8);
			if (!slash || slash - (a + 8) >= (ptrdiff_t)sizeof first || !parse_count(first, 0, SHARDS_MAX - 1, &si) ||
			    !parse_count(slash + 1, 1, SHARDS_MAX, &sn) || si >= sn)
				return usage_error("--shard takes I/N with 0 <= I < N <= 100000, not '%s'", a + 8);
			o->s.shard = (int)si, o->s.shards = (int)sn;
		} else if (!strncmp(a, "--op=", 5)) {
			o->search_op = a + 5;
		} else if (!strncmp(a, "--sparsity=", 11)) {
			/* P, or a range P..Q */
			const char *v = a + 11, *dots = strstr(v, "..");
			char lo[64];
			const size_t nlo = dots ? (size_t)(dots - v) : strlen(v);
			snprintf(lo, sizeof lo, "%.*s", (int)(nlo < sizeof lo ? nlo : 0), v);
			o->s.max_sparsity = 0;
			if (nlo >= sizeof lo || !parse_fraction(lo, &o->s.sparsity) || o->s.sparsity <= 0 || o->s.sparsity >= 1 ||
			    (dots && (!parse_fraction(dots + 2, &o->s.max_sparsity) || !(o->s.max_sparsity > o->s.sparsity) ||
			              o->s.max_sparsity >= 1)))
				return usage_error("--sparsity takes a percentage over 0 and under 100, such as 75%%, or a range "
				                   "such as 70%%..80%%, not '%s'",
				                   v);
			o->s_given |= SET_SPARSITY;
		} else if (!strncmp(a, "--tolerance=", 12)) {
			if (!parse_fraction(a + 12, &o->s.tolerance))
				return usage_error("--tolerance takes a percentage, such as 2%%, not '%s'", a + 12);
			o->s_given |= SET_TOLERANCE;
		} else if (!strncmp(a, "--cost-model=", 13)) {
			if (!a[13])
				return usage_error("%s", "--cost-model takes a model file or 'analytic'");
			o->cost_model = a + 13;
		} else if (!strncmp(a, "--tune=", 7)) {
			long n;
			if (!parse_count(a + 7, 0, 100, &n))
				return usage_error("--tune takes a count from 0 to 100, not '%s'", a + 7);
			o->s.tune = (int)n;
			o->tune_set = n > 0;
		} else if (!strncmp(a, "--tie=", 6)) {
			if (!parse_fraction(a + 6, &o->s.tie) || o->s.tie > 1)
				return usage_error("--tie takes a percentage from 0 to 100, not '%s'", a + 6);
		} else if (!strncmp(a, "--explore=", 10)) {
			if (!parse_fraction(a + 10, &o->s.explore) || o->s.explore > 1)
				return usage_error("--explore takes a percentage from 0 to 100, not '%s'", a + 10);
		} else if (!strncmp(a, "--timeout=", 10)) {
			char *end;
			double t = strtod(a + 10, &end);
			/* decimal seconds (strtod would take hex, spaces and signs), a millisecond at least */
			if (end == a + 10 || *end || strspn(a + 10, "0123456789.") != strlen(a + 10) ||
			    !(t >= 0.001 && t <= 86400))
				return usage_error("--timeout takes seconds, from 0.001 to 86400, not '%s'", a + 10);
			o->s.timeout_s = t;
		} else if (!strncmp(a, "--budget=", 9)) {
			if (!parse_fraction(a + 9, &o->s.budget))
				return usage_error("--budget takes a percentage of loss, such as 5%%, not '%s'", a + 9);
			o->s_given |= SET_BUDGET;
		} else if (!strncmp(a, "--topk=", 7) || !strncmp(a, "--max-depth=", 12) || !strncmp(a, "--seed=", 7)) {
			const char *v = strchr(a, '=') + 1;
			long n;
			if (a[2] == 't') {
				if (!parse_count(v, 1, 10000, &n))
					return usage_error("--topk takes a count from 1 to 10000, not '%s'", v);
				o->s.topk = (int)n;
				o->s_given |= SET_TOPK;
			} else if (a[2] == 'm') {
				if (!parse_count(v, 1, 3, &n))
					return usage_error("--max-depth takes 1, 2 or 3, not '%s'", v);
				o->s.max_depth = (int)n;
				o->s_given |= SET_DEPTH;
			} else {
				if (!parse_count(v, 0, 2147483647L, &n))
					return usage_error("--seed takes an integer from 0 to 2^31 - 1, not '%s'", v);
				o->s.seed = (uint64_t)n;
			}
		} else if (!strncmp(a, "--min-length=", 13) || !strncmp(a, "--max-pattern=", 14)) {
			const bool minlen = a[3] == 'i';
			const char *v = strchr(a, '=') + 1;
			long n;
			if (!parse_count(v, 1, 1 << 20, &n))
				return usage_error(minlen ? "--min-length takes a length from 1 to 1048576, not '%s'"
				                          : "--max-pattern takes a length from 1 to 1048576, not '%s'",
				                   v);
			*(minlen ? &o->s.min_length : &o->s.max_pattern) = (int)n;
			o->s_given |= minlen ? SET_MINLEN : SET_MAXPAT;
		} else if (!strncmp(a, "--importance=", 13)) {
			int k = -1;
			for (int j = 0; j < PAT_IMP_TENSOR; j++) /* a score tensor is the .pat file's */
				if (!strcmp(a + 13, pat_importance_names[j]))
					k = j;
			if (k < 0)
				return usage_error("--importance takes magnitude, l2 or wanda, not '%s'", a + 13);
			o->importance_set = true;
			o->importance = (PatImportance)k;
		} else if (!strncmp(a, "--rank=", 7)) {
			o->rank_set = true;
			if (!strcmp(a + 7, "total"))
				o->rank = PAT_RANK_TOTAL;
			else if (!strcmp(a + 7, "lookahead"))
				o->rank = PAT_RANK_LOOKAHEAD;
			else
				return usage_error("--rank takes total or lookahead, not '%s'", a + 7);
		} else if (!strncmp(a, "--target=", 9)) {
			const Target *t = find_target(a + 9);
			if (!t)
				return unknown_target(a + 9);
			o->target = t->name;
			o->gpu = t->gpu;
		} else if (!strncmp(a, "--dump-after=", 13)) {
			const char *p = a + 13;
			bool ok = !strcmp(p, "all");
			for (int k = 0; k < PIR_NPRIMS; k++)
				ok |= !strcmp(p, pir_prim_names[k]);
			if (!ok)
				return usage_error("unknown pass '%s' for --dump-after", p);
			o->dump_after = p;
		} else if (!strncmp(a, "--color=", 8)) {
			const char *w = a + 8;
			if (!strcmp(w, "auto"))
				o->color = -1;
			else if (!strcmp(w, "always"))
				o->color = 1;
			else if (!strcmp(w, "never"))
				o->color = 0;
			else
				return usage_error("--color takes auto, always or never, not '%s'", w);
		} else if (!strcmp(a, "-o") || !strcmp(a, "-I")) {
			if (i + 1 == argc)
				return usage_error("%s needs an argument", a);
			if (a[1] == 'o') {
				if (o->output)
					return usage_error("%s", "-o given twice");
				o->output = argv[++i];
			} else {
				if (o->ninclude == PAT_MAX_INCLUDE_DIRS)
					return usage_error("%s", "too many -I options");
				o->includes[o->ninclude++] = argv[++i];
			}
		} else if (!strncmp(a, "-I", 2)) {
			if (o->ninclude == PAT_MAX_INCLUDE_DIRS)
				return usage_error("%s", "too many -I options");
			o->includes[o->ninclude++] = a + 2;
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else {
			if (o->input)
				return usage_error("more than one input file ('%s')", a);
			o->input = a;
		}
	}
	if (!o->input)
		return usage_error("%s", "no input file");
	if (o->explain + o->emit_pir + o->emit_weights > 1)
		return usage_error("%s", "--explain, --emit=pir and --emit=weights each write the output; "
		                         "choose one");
	if (o->emit_weights && !o->output)
		return usage_error("%s", "--emit=weights writes a .safetensors file: give it with -o");
	if (o->mask && !o->emit_weights)
		return usage_error("%s", "--mask adds the mask to --emit=weights");
	if ((o->emit_llvm || o->emit_asm || o->emit_so) &&
	    (o->emit_pir || o->emit_weights || o->explain || o->run || !o->output))
		return usage_error("%s", "--emit=llvm, --emit=asm and --emit=so come with the object: give -o DIR "
		                         "and no other output");
	if (o->run && (o->explain || o->emit_pir || o->emit_weights))
		return usage_error("%s", "--run prints its own report; leave out --explain and --emit");
	if (o->emit_asm && o->gpu)
		return usage_error("%s", "-o DIR writes the PTX on GPU targets; --emit=asm is for x86-64");
	if (o->search_opt && !o->search) {
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(o->search_opt, "="), o->search_opt);
		return usage_error("%s is an option of --search", name);
	}
	if (o->search && !o->s.measure && o->measure_opt) {
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(o->measure_opt, "="), o->measure_opt);
		return usage_error("%s shapes the search's measurements, and --no-measure makes none", name);
	}
	if (o->search && (o->explain || o->emit_pir || o->emit_weights || o->emit_llvm || o->emit_asm || o->emit_so ||
	                  o->run || o->dump_after))
		return usage_error("%s", "--search writes its reports and the best kernel to -o DIR; leave out "
		                         "--explain, --emit, --run and --dump-after");
	if (o->threads && !o->run && !o->search)
		return usage_error("%s", "--threads is for --run and --search (a compiled kernel takes its threads "
		                         "when it is called)");
	if (o->wgmma && strcmp(o->target, "sm_90"))
		return usage_error("%s", "--wgmma is for --target=sm_90 (wgmma is Hopper's)");
	if (o->wgmma && o->search)
		return usage_error("%s", "--search chooses the kernels' schedules itself; leave out --wgmma");
	if (o->wsum && !o->gpu)
		return usage_error("%s", "--split-workspace is for GPU targets (--target=sm_80 and up)");
	if (o->wsum && o->search)
		return usage_error("%s", "--search chooses the kernels' schedules itself; leave out --split-workspace");
	return PATC_EXIT_OK;
}

static bool is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The standard library: $PATC_STDLIB, else the source tree's stdlib/ (a
 * build run in place), else ../share/patc/stdlib beside the installed
 * binary.  The result lives in buf or is static. */
static const char *find_stdlib(char *buf, size_t len)
{
	const char *env = getenv("PATC_STDLIB");
	if (env && *env)
		return env;
	if (is_dir(PATC_STDLIB_DIR))
		return PATC_STDLIB_DIR;
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n > 0) {
		buf[n] = 0;
		char *slash = strrchr(buf, '/');
		if (slash && (size_t)(slash - buf) + 24 < len) {
			strcpy(slash, "/../share/patc/stdlib");
			if (is_dir(buf))
				return buf;
		}
	}
	return PATC_STDLIB_DIR;
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
	const int ahead = plan->tc_stages - (plan->tc_wga ? 2 : 1); /* (as tc.c's walk) */
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
	LowerKernel lk = {op->ir, op->M, op->K, op->N, op->layout, op->name, 1, op->dtype, {0}};
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
			          pat_dtype_names[op->dtype], plan.zero ? "; C is zeroed before the launch" : "");
		else
			sb_printf(out, "    mapping: a block is a warpgroup of 4 warps per 64 rows of a kept tile's m loop and %d "
			               "columns (wgmma.m64n%dk16), a warp's accumulators 16 of the rows; %lld row sets; X and "
			               "W in %s, C in f32%s\n",
			          plan.tc_wgn, plan.tc_wgn, (long long)plan.nsets, pat_dtype_names[op->dtype],
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
		          pat_dtype_names[op->dtype],
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
	const int rc = link_shared(o->output, base, o->gpu, err);
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
	const bool dir = objects(o) || o->search;
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

static int compile_gpu(const Options *o, const Program *prog, const PruneOp *pruned, const char *base)
{
	char cerr[512];
	PtxSchedule *scheds = calloc((size_t)prog->nops + 1, sizeof *scheds); /* patc's, but the flags */
	if (!scheds)
		util_oom();
	for (int i = 0; i < prog->nops; i++)
		scheds[i] = gpu_given(o);
	int rc = emit_cuda_program(o->output, base, PATC_VERSION, o->input, o->target, prog, pruned, scheds,
	                           o->emit_llvm, cerr);
	free(scheds);
	if (rc != PATC_EXIT_OK)
		fprintf(stderr, "patc: error: %s\n", cerr);
	return rc;
}

static int compile_x86(const Options *o, const Program *prog, const PruneOp *pruned, const char *base)
{
	const char *cpu = x86_target_cpu(o->target);
	X86Emit e = {o->output, base, cpu, cpu ? "" : NULL, PATC_VERSION, o->input, prog->nops,
	             prog->ops, pruned, NULL, o->emit_llvm, o->emit_asm};
	char err[X86_ERR_MAX];
	if (!x86_emit(&e, err)) {
		fprintf(stderr, "patc: error: %s\n", err);
		return PATC_EXIT_ENV;
	}
	char path[4096], terr[TENSOR_ERR_MAX];
	snprintf(path, sizeof path, "%s/%s.safetensors", o->output, base);
	if (!emit_weights(path, prog, pruned, false, PATC_VERSION, terr)) {
		fprintf(stderr, "patc: error: %s\n", terr);
		return PATC_EXIT_ENV;
	}
	return PATC_EXIT_OK;
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
	int rc = o->gpu ? compile_gpu(o, prog, pruned, base) : compile_x86(o, prog, pruned, base);
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
	if (!util_write_file_atomic(o->output, data, out->len)) {
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

/* `patc merge LOG... -o OUT`. */
static int merge_main(int argc, char **argv)
{
	const char *output = NULL;
	char *logs[256];
	int n = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs("usage: patc merge LOG... -o OUT\n"
			      "\n"
			      "Joins --search tuning logs (tune.jsonl: the shards' of one search, or searches run apart) into\n"
			      "OUT, each measurement once; a search resumed from OUT (--resume, OUT as its DIR/tune.jsonl)\n"
			      "takes them over.  At most 256 logs.\n",
			      stdout);
			exit_printed();
		} else if (!strcmp(argv[i], "-o")) {
			if (i + 1 == argc)
				return usage_error("%s", "-o needs an argument");
			if (output)
				return usage_error("%s", "-o given twice");
			output = argv[++i];
		} else if (argv[i][0] == '-')
			return usage_error("unknown option '%s' of patc merge (patc merge LOG... -o OUT)", argv[i]);
		else if (n == 256)
			return usage_error("%s", "patc merge takes at most 256 logs");
		else
			logs[n++] = argv[i];
	}
	if (!n || !output)
		return usage_error("%s", "patc merge LOG... -o OUT: give the logs and the output");
	return search_merge(n, logs, output);
}

/* `patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K] [--seed=N]`. */
static int train_main(int argc, char **argv)
{
	CostTrainOptions t = {.target = "x86-64", .folds = 5};
	const char *logs[256];
	int n = 0;
	for (int i = 2; i < argc; i++) {
		long v;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs("usage: patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K] [--seed=N]\n"
			      "\n"
			      "Learns the search's cost model (gradient-boosted trees) from --search tuning logs: the\n"
			      "measurements of target T (default x86-64; an x86 model ranks for every x86 target, a GPU's\n"
			      "for that GPU), one sample per kernel of a search, the fastest where it was measured more\n"
			      "than once.  Prints its quality by K-fold cross-validation over whole searches (K from 2 to\n"
			      "20, default 5; Spearman and top-10 recall per search, beside the analytic model and the\n"
			      "logs' repeated measurements), then writes MODEL trained on all (--cost-model=MODEL uses\n"
			      "it).  --seed (default 0) seeds the folds and the trees' row samples.  At most 256 logs.\n",
			      stdout);
			exit_printed();
		} else if (!strcmp(argv[i], "-o")) {
			if (i + 1 == argc)
				return usage_error("%s", "-o needs an argument");
			if (t.out)
				return usage_error("%s", "-o given twice");
			t.out = argv[++i];
		} else if (!strncmp(argv[i], "--target=", 9)) {
			if (!find_target(argv[i] + 9))
				return unknown_target(argv[i] + 9);
			t.target = argv[i] + 9;
		} else if (!strncmp(argv[i], "--folds=", 8)) {
			if (!parse_count(argv[i] + 8, 2, 20, &v))
				return usage_error("--folds takes a count from 2 to 20, not '%s'", argv[i] + 8);
			t.folds = (int)v;
		} else if (!strncmp(argv[i], "--seed=", 7)) {
			if (!parse_count(argv[i] + 7, 0, 2147483647L, &v))
				return usage_error("--seed takes an integer from 0 to 2^31 - 1, not '%s'", argv[i] + 7);
			t.seed = (uint64_t)v;
		} else if (argv[i][0] == '-')
			return usage_error("unknown option '%s' of patc train-cost-model (patc train-cost-model LOG... -o "
			                   "MODEL)",
			                   argv[i]);
		else if (n == 256)
			return usage_error("%s", "patc train-cost-model takes at most 256 logs");
		else
			logs[n++] = argv[i];
	}
	if (!n || !t.out)
		return usage_error("%s", "patc train-cost-model LOG... -o MODEL: give the logs and the output");
	t.logs = logs, t.nlogs = n;
	return search_train(&t);
}

/* A Slurm job array's task as the shard, where --shard is not given and
 * the search measures (the shards split the measurements: --no-measure
 * ranks all the candidates in every task). */
static bool slurm_shard(Options *o)
{
	const char *id = getenv("SLURM_ARRAY_TASK_ID"), *count = getenv("SLURM_ARRAY_TASK_COUNT");
	const char *min = getenv("SLURM_ARRAY_TASK_MIN"), *step = getenv("SLURM_ARRAY_TASK_STEP");
	if (o->s.shards || !id || !count || !o->s.measure)
		return true;
	/* task IDs MIN, MIN + STEP, ... (an array such as 0-15:4) */
	long i, n, lo = 0, by = 1;
	if (!parse_count(id, 0, LONG_MAX, &i) || !parse_count(count, 1, SHARDS_MAX, &n) ||
	    (min && !parse_count(min, 0, LONG_MAX, &lo)) || (step && !parse_count(step, 1, LONG_MAX, &by)) || i < lo ||
	    (i - lo) % by || (i - lo) / by >= n) {
		fprintf(stderr, "patc: error: SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s%s%s%s%s: not a task of the "
		                "array (--shard=I/N overrides them)\n",
		        id, count, min ? ", SLURM_ARRAY_TASK_MIN=" : "", min ? min : "", step ? ", SLURM_ARRAY_TASK_STEP=" : "",
		        step ? step : "");
		return false;
	}
	o->s.shard = (int)((i - lo) / by), o->s.shards = (int)n;
	return true;
}

int main(int argc, char **argv)
{
	atexit(check_stdout); /* (first, so it runs last: after the temporary files' removal) */
	util_stack_room(POOL_STACK_BYTES); /* (--run and --search run kernels on this thread too) */
	if (argc > 1 && !strcmp(argv[1], "merge"))
		return merge_main(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "train-cost-model"))
		return train_main(argc, argv);
	Options o;
	int rc = parse_args(argc, argv, &o);
	if (rc == PATC_EXIT_OK && o.search && !slurm_shard(&o))
		rc = PATC_EXIT_USAGE;
	if (rc == PATC_EXIT_OK && o.search && o.s.shards > 1 && o.tune_set)
		rc = usage_error("%s", "a shard does not tune, not knowing the fastest: leave out --tune, and tune with "
		                       "--resume over the merged log");
	if (rc != PATC_EXIT_OK)
		return rc;
	if (ends_with(o.input, ".pir")) {
		if (o.emit_weights)
			return usage_error("%s", "--emit=weights needs a .pat program (weights are bound to "
			                         "its ops)");
		if (o.run || o.search || o.emit_llvm || o.emit_asm || o.emit_so || o.dump_after || o.importance_set ||
		    o.rank_set || o.ninclude || o.wgmma || o.wsum)
			return usage_error("%s", "a .pir file has no weights, primitives or includes: it takes --emit=pir, "
			                         "--explain, --target and -o (its output file); --run, --search, "
			                         "--emit=llvm/asm/so, --dump-after, --importance, --rank, -I, --wgmma and "
			                         "--split-workspace need a .pat program");
		return run_pir_file(&o);
	}

	Arena arena;
	arena_init(&arena);
	Diag diag;
	diag_init(&diag, &arena, stderr);
	diag.color = want_color(&o);
	char stdlib_buf[4096];
	const char *stdlib = find_stdlib(stdlib_buf, sizeof stdlib_buf);
	FrontendOptions fo = {
		.include_dirs = o.includes,
		.ninclude = o.ninclude,
		.stdlib_dir = stdlib,
		.gpu = o.gpu,
		.target = o.target,
		.trace = o.explain || o.dump_after,
		.rank = o.rank,
		.importance_set = o.importance_set,
		.importance = o.importance,
	};
	Program prog;
	rc = PATC_EXIT_OK;
	int errors = frontend_compile(&fo, &diag, &arena, o.input, NULL, &prog);
	if (errors) {
		fprintf(stderr, "%d error%s generated.\n", errors, errors == 1 ? "" : "s");
		arena_free(&arena);
		return PATC_EXIT_INPUT;
	}
	/* Prune every op that has weights (all of them for --emit=weights). */
	PruneOp *pruned = calloc((size_t)prog.nops + 1, sizeof *pruned);
	bool *have = calloc((size_t)prog.nops + 1, sizeof *have);
	if (!pruned || !have)
		util_oom();
	for (int i = 0; i < prog.nops; i++) {
		const OpResult *op = &prog.ops[i];
		if (op->weights.kind == WEIGHTS_NONE && !o.emit_weights && !o.run && !objects(&o))
			continue;
		if (o.search && op->weights.kind == WEIGHTS_NONE)
			continue;
		char err[PRUNE_ERR_MAX];
		SrcLoc where;
		if (!prune_op(op, &pruned[i], err, &where)) {
			diag_error(&diag, where, "%s", err);
			errors++;
			continue;
		}
		have[i] = true;
	}
	rc = PATC_EXIT_OK;
	StrBuf out;
	sb_init(&out);
	if (errors) {
		fprintf(stderr, "%d error%s generated.\n", errors, errors == 1 ? "" : "s");
		rc = PATC_EXIT_INPUT;
		goto finish;
	}
	for (int i = 0; i < prog.nops; i++) {
		const OpResult *op = &prog.ops[i];
		const PruneOp *p = have[i] ? &pruned[i] : NULL;
		if (o.dump_after) { /* to stderr, so it never mixes with the output */
			StrBuf dump;
			sb_init(&dump);
			dump_after(&o, op, &dump);
			fputs(dump.data ? dump.data : "", stderr);
			sb_free(&dump);
		}
		if (o.explain) {
			sb_puts(&out, i ? "\n" : "");
			explain_op(&out, op, &diag, p);
			if (o.gpu)
				explain_gpu(&out, op, o.target, gpu_given(&o));
		} else if (o.emit_pir) {
			char *t = pir_print_text(op->ir);
			sb_printf(&out, "%s%s", i ? "\n" : "", t);
			free(t);
		} else if (!o.emit_weights && !o.run && !objects(&o) && !o.search) {
			explain_summary(&out, op->ir, p ? &p->metrics : NULL);
		}
	}
	if (prog.nops == 0) { /* an error only where what was asked for is made of ops */
		const char *asked = o.search ? "--search has nothing to search"
		                    : o.run ? "--run has nothing to run"
		                    : objects(&o) ? "-o has no kernel to write"
		                    : o.emit_weights ? "--emit=weights has no weights to write" : NULL;
		if (asked) {
			fprintf(stderr, "patc: error: '%s' defines no op: %s\n", o.input, asked);
			rc = PATC_EXIT_INPUT;
			goto finish;
		}
		fprintf(stderr, "patc: note: '%s' defines no op; nothing to compile\n", o.input);
	}
	if (overwrites_input(&o, &prog, &diag)) {
		rc = PATC_EXIT_USAGE;
		goto finish;
	}
	if (o.search) {
		char base[128], dir[4096];
		program_base(o.input, base, sizeof base);
		snprintf(dir, sizeof dir, "%s.search", base);
		SearchCli sc = {o.input, o.output ? o.output : dir, base, o.search_op, o.target, o.gpu, o.resume, stdlib, o.s,
		                o.cost_model};
		sc.s.gpu = o.gpu;
		/* the op's own settings where the command line gives none */
		for (int i = 0; i < prog.nops; i++) {
			const OpSearch *os = &prog.ops[i].search;
			if (!os->given || (o.search_op && strcmp(o.search_op, prog.ops[i].name)) ||
			    prog.ops[i].weights.kind == WEIGHTS_NONE)
				continue;
			if (os->sparsity >= 0 && !(o.s_given & SET_SPARSITY))
				sc.s.sparsity = os->sparsity;
			if (os->max_sparsity >= 0 && !(o.s_given & SET_SPARSITY))
				sc.s.max_sparsity = os->max_sparsity;
			if (os->tolerance >= 0 && !(o.s_given & SET_TOLERANCE))
				sc.s.tolerance = os->tolerance;
			if (os->budget >= 0 && !(o.s_given & SET_BUDGET))
				sc.s.budget = os->budget;
			if (os->max_depth >= 0 && !(o.s_given & SET_DEPTH))
				sc.s.max_depth = os->max_depth;
			if (os->topk >= 0 && !(o.s_given & SET_TOPK))
				sc.s.topk = os->topk;
			if (os->min_length >= 0 && !(o.s_given & SET_MINLEN))
				sc.s.min_length = os->min_length;
			if (os->max_pattern >= 0 && !(o.s_given & SET_MAXPAT))
				sc.s.max_pattern = os->max_pattern;
		}
		sc.s.threads = o.threads ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
		rc = search_cli(&sc, &prog, pruned, &out);
		int erc = emit_stdout(&out);
		if (rc == PATC_EXIT_OK)
			rc = erc;
	} else if (objects(&o)) {
		rc = compile_objects(&o, &prog, pruned);
	} else if (o.run && o.gpu) {
		char err[512];
		int code;
		if (!run_ops_gpu(&prog, pruned, o.target, gpu_given(&o), &out, err, &code)) {
			emit_failed_run(&o, &out);
			fprintf(stderr, "patc: error: %s\n", err);
			rc = code;
		} else
			rc = emit(&o, &out);
	} else if (o.run && !x86_host_runs(x86_target_cpu(o.target))) {
		fprintf(stderr, "patc: error: --run: this machine cannot run %s code (run it where it can, or use "
		                "--target=x86-64, the host's)\n",
		        o.target);
		rc = PATC_EXIT_ENV;
	} else if (o.run) {
		int threads = o.threads ? o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
		for (int i = 0; i < prog.nops; i++) { /* each op, whether one before it failed or not */
			char err[512];
			int code;
			if (!run_op(&prog.ops[i], &pruned[i], x86_target_cpu(o.target), threads, &out, err, &code)) {
				fprintf(stderr, "patc: error: %s\n", err);
				if (rc != PATC_EXIT_INTERNAL) /* a wrong kernel outranks the environment */
					rc = code;
			}
		}
		if (rc == PATC_EXIT_OK)
			rc = emit(&o, &out);
		else
			emit_failed_run(&o, &out);
	} else if (o.emit_weights) {
		char err[TENSOR_ERR_MAX];
		if (!emit_weights(o.output, &prog, pruned, o.mask, PATC_VERSION, err)) {
			fprintf(stderr, "patc: error: %s\n", err);
			rc = PATC_EXIT_ENV;
		}
	} else {
		rc = emit(&o, &out);
	}
finish:
	for (int i = 0; i < prog.nops; i++)
		prune_op_free(&pruned[i]);
	free(pruned);
	free(have);
	sb_free(&out);
	arena_free(&arena);
	return rc;
}
