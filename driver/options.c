/* SPDX-License-Identifier: MIT */
/* options.c - patc's command line, read by getopt_long from options.def;
 * see options.h. */
#define _GNU_SOURCE /* (getopt_long) */
#include "options.h"
#include "../support/util.h"
#include "../ir/pir.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The x86 targets follow the compilers' names: the x86-64 psABI levels
 * (-march=x86-64-v3) and native (-march=native).  x86-64 stays what it was
 * before the levels, this machine's CPU: there it is not GCC's x86-64 (the
 * baseline, SSE2). */
static const Target targets[] = {
	{"x86-64-v2", false, NULL, "x86-64 psABI level 2: SSE4.2, POPCNT (4 floats a vector)"},
	{"x86-64-v3", false, NULL, "level 3: AVX2, FMA, BMI2 (8 floats a vector); -o's default"},
	{"x86-64-v4", false, NULL, "level 4: AVX-512 F, BW, CD, DQ, VL (16 floats a vector)"},
	{"native", false, NULL, "this machine's CPU, all its instructions; --run's and --search's default"},
	{"x86-64", false, "native", "native's older name"},
	{"x86-64-avx2", false, NULL, "the CPU haswell (AVX2, FMA): an older name, x86-64-v3 and more"},
	{"x86-64-avx512", false, NULL, "the CPU skylake-avx512: an older name, x86-64-v4 and more"},
	{"sm_80", true, NULL, "NVIDIA A100 (Ampere): PTX"},
	{"sm_86", true, NULL, "NVIDIA Ampere (GA10x): PTX"},
	{"sm_89", true, NULL, "NVIDIA Ada: PTX"},
	{"sm_90", true, NULL, "NVIDIA H100/H200 (Hopper): PTX"},
};

const Target *options_find_target(const char *name)
{
	for (size_t j = 0; j < sizeof targets / sizeof *targets; j++)
		if (!strcmp(targets[j].name, name))
			return targets[j].alias ? options_find_target(targets[j].alias) : &targets[j];
	return NULL;
}

bool options_objects(const Options *o)
{
	return o->output && !o->emit_pir && !o->emit_weights && !o->explain && !o->run && !o->search;
}

/* ---- the table ---- */

enum { ARG_NONE = no_argument, ARG_REQ = required_argument };
enum { FLAG_SEARCH = 1, FLAG_MEASURE = 2 };

/* The options' ids: getopt_long's values past any character. */
typedef enum OptId {
	OPT_FIRST_ = 256,
#define OPT(id, lng, sh, arg, flags, left, help) OPT_##id,
#define HELP(left, help)
#include "options.def"
#undef OPT
#undef HELP
	OPT_END_
} OptId;

typedef struct OptRow {
	OptId id; /* 0: a HELP row */
	const char *lng;
	char sh;
	int arg;
	unsigned flags;
	const char *left, *help;
} OptRow;

static const OptRow rows[] = {
#define OPT(id, lng, sh, arg, flags, left, help) {OPT_##id, lng, sh, arg, flags, left, help},
#define HELP(left, help) {0, NULL, 0, 0, 0, left, help},
#include "options.def"
#undef OPT
#undef HELP
};
enum { NROWS = sizeof rows / sizeof rows[0] };

/* The row of an option getopt_long returned (its id, or its short letter). */
static const OptRow *row_of(int c)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].id && ((int)rows[i].id == c || (rows[i].sh && rows[i].sh == c)))
			return &rows[i];
	return NULL;
}

/* The option's name as a user writes it: --LONG, or -S. */
static const char *opt_name(const OptRow *r, char buf[64])
{
	if (r->lng)
		snprintf(buf, 64, "--%s", r->lng);
	else
		snprintf(buf, 64, "-%c", r->sh);
	return buf;
}

void options_usage(FILE *f)
{
	fputs("usage: patc FILE.pat [options]\n"
	      "       patc FILE.pir [options]     (read PatternIR text form)\n"
	      "       patc merge LOG... -o OUT    (join --search tuning logs)\n"
	      "       patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K] [--seed=N]\n"
	      "                                   (learn the search's cost model from tuning logs)\n"
	      "\n"
	      "Compiles sparse weight patterns written as loop schedules (.pat) to PatternIR.\n"
	      "\n"
	      "options:\n",
	      f);
	enum { COL = 21 }; /* where the help's text starts */
	for (size_t i = 0; i < NROWS; i++) {
		const OptRow *r = &rows[i];
		const int w = fprintf(f, "  %s", r->left);
		if (w >= COL)
			fprintf(f, "\n%*s", COL, "");
		else
			fprintf(f, "%*s", COL - w, "");
		for (const char *p = r->help; *p;) {
			const size_t n = strcspn(p, "\n");
			fprintf(f, "%.*s\n", (int)n, p);
			p += n;
			if (*p == '\n' && *++p)
				fprintf(f, "%*s", COL, "");
		}
	}
	fputs("\n"
	      "exit codes: 0 ok, 1 errors in the input, 2 bad usage, 3 environment\n"
	      "(unwritable output, missing tools), 4 internal compiler error\n"
	      "\n"
	      "The standard pattern library is $PATC_STDLIB when it is set; else\n"
	      PATC_STDLIB_REL " from the directory of the patc binary, where\n"
	      "'make install' puts it; else, for a patc run in its build tree, the\n"
	      "source tree's stdlib/.\n",
	      f);
}

/* The command whose options are read: "" for patc itself, else " merge"
 * and the like (for "run 'patc merge --help'"). */
static const char *usage_cmd = "";

int options_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "patc: error: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(run 'patc%s --help' for usage)\n", usage_cmd);
	return PATC_EXIT_USAGE;
}

int options_unknown_target(const char *name)
{
	char q[UTIL_QUOTE_BUF];
	fprintf(stderr, "patc: error: unknown target '%s' (", util_quote(name, q));
	for (size_t j = 0; j < sizeof targets / sizeof *targets; j++)
		fprintf(stderr, "%s%s", j ? ", " : "", targets[j].name);
	fprintf(stderr, ")\n(run 'patc%s --help' for usage)\n", usage_cmd);
	return PATC_EXIT_USAGE;
}

/* ---- values ---- */

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

bool options_parse_count(const char *s, long lo, long hi, long *out)
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

static int parse_emit(Options *o, const char *v)
{
	char kinds[256];
	const size_t len = strlen(v);
	if (!len || len >= sizeof kinds || v[0] == ',' || v[len - 1] == ',' || strstr(v, ",,"))
		return options_usage_error("--emit takes kinds separated by commas (this build emits: pir, weights, llvm, "
		                           "asm, so), not '%.80s'", v);
	memcpy(kinds, v, len + 1);
	for (char *save = NULL, *kind = strtok_r(kinds, ",", &save); kind; kind = strtok_r(NULL, ",", &save)) {
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
			return options_usage_error("unknown --emit kind '%s' (this build emits: pir, weights, "
			                           "llvm, asm, so)", kind);
	}
	return PATC_EXIT_OK;
}

static int parse_shard(Options *o, const char *v)
{
	const char *slash = strchr(v, '/');
	char first[32];
	long si = -1, sn = 0;
	if (slash && slash - v < (ptrdiff_t)sizeof first)
		snprintf(first, sizeof first, "%.*s", (int)(slash - v), v);
	if (!slash || slash - v >= (ptrdiff_t)sizeof first || !options_parse_count(first, 0, SHARDS_MAX - 1, &si) ||
	    !options_parse_count(slash + 1, 1, SHARDS_MAX, &sn) || si >= sn)
		return options_usage_error("--shard takes I/N with 0 <= I < N <= 100000, not '%s'", v);
	o->s.shard = (int)si, o->s.shards = (int)sn;
	return PATC_EXIT_OK;
}

/* P, or a range P..Q */
static int parse_sparsity(Options *o, const char *v)
{
	const char *dots = strstr(v, "..");
	char lo[64];
	const size_t nlo = dots ? (size_t)(dots - v) : strlen(v);
	snprintf(lo, sizeof lo, "%.*s", (int)(nlo < sizeof lo ? nlo : 0), v);
	o->s.max_sparsity = 0;
	if (nlo >= sizeof lo || !parse_fraction(lo, &o->s.sparsity) || o->s.sparsity <= 0 || o->s.sparsity >= 1 ||
	    (dots && (!parse_fraction(dots + 2, &o->s.max_sparsity) || !(o->s.max_sparsity > o->s.sparsity) ||
	              o->s.max_sparsity >= 1)))
		return options_usage_error("--sparsity takes a percentage over 0 and under 100, such as 75%%, or a range "
		                           "such as 70%%..80%%, not '%s'",
		                           v);
	o->s_given |= SET_SPARSITY;
	return PATC_EXIT_OK;
}

/* A count option's value into *out (an int), its SET_* bit set. */
static int parse_int(Options *o, const char *v, long lo, long hi, const char *what, int *out, unsigned bit)
{
	long n;
	if (!options_parse_count(v, lo, hi, &n))
		return options_usage_error(what, v);
	*out = (int)n;
	o->s_given |= bit;
	return PATC_EXIT_OK;
}

/* Decimal seconds (strtod would take hex, spaces and signs), a
 * millisecond at least. */
static int parse_timeout(Options *o, const char *v)
{
	char *end;
	double t = strtod(v, &end);
	if (end == v || *end || strspn(v, "0123456789.") != strlen(v) || !(t >= 0.001 && t <= 86400))
		return options_usage_error("--timeout takes seconds, from 0.001 to 86400, not '%s'", v);
	o->s.timeout_s = t;
	return PATC_EXIT_OK;
}

static int parse_importance(Options *o, const char *v)
{
	int k = -1;
	for (int j = 0; j < PAT_IMP_TENSOR; j++) /* a score tensor is the .pat file's */
		if (!strcmp(v, pat_importance_names[j]))
			k = j;
	if (k < 0)
		return options_usage_error("--importance takes magnitude, l2 or wanda, not '%s'", v);
	o->importance_set = true;
	o->importance = (PatImportance)k;
	return PATC_EXIT_OK;
}

static int parse_target(Options *o, const char *v)
{
	const Target *t = options_find_target(v);
	if (!t)
		return options_unknown_target(v);
	o->target = t->name;
	o->gpu = t->gpu;
	o->target_given = true;
	return PATC_EXIT_OK;
}

static int parse_dump_after(Options *o, const char *v)
{
	bool ok = !strcmp(v, "all");
	for (int k = 0; k < PIR_NPRIMS; k++)
		ok |= !strcmp(v, pir_prim_names[k]);
	if (!ok)
		return options_usage_error("unknown pass '%s' for --dump-after", v);
	o->dump_after = v;
	return PATC_EXIT_OK;
}

static int parse_color(Options *o, const char *v)
{
	if (!strcmp(v, "auto"))
		o->color = -1;
	else if (!strcmp(v, "always"))
		o->color = 1;
	else if (!strcmp(v, "never"))
		o->color = 0;
	else
		return options_usage_error("--color takes auto, always or never, not '%s'", v);
	return PATC_EXIT_OK;
}

/* One option, with its value v (NULL where it takes none). */
static int apply(Options *o, OptId id, const char *v)
{
	long n;
	switch (id) {
	case OPT_HELP: o->help = true; break;
	case OPT_VERSION: o->version = true; break;
	case OPT_EXPLAIN: o->explain = true; break;
	case OPT_EMIT: return parse_emit(o, v);
	case OPT_MASK: o->mask = true; break;
	case OPT_RUN: o->run = true; break;
	case OPT_WGMMA: o->wgmma = true; break;
	case OPT_FIXED_N: o->fixed_n = true; break;
	case OPT_SPLIT_WORKSPACE: o->wsum = true; break;
	case OPT_THREADS: return parse_int(o, v, 1, 256, "--threads takes a count from 1 to 256, not '%s'", &o->threads, 0);
	case OPT_SEARCH: o->search = true; break;
	case OPT_NO_MEASURE: o->s.measure = false; break;
	case OPT_RESUME: o->resume = true; break;
	case OPT_SHARD: return parse_shard(o, v);
	case OPT_OP: o->search_op = v; break;
	case OPT_SPARSITY: return parse_sparsity(o, v);
	case OPT_TOLERANCE:
		if (!parse_fraction(v, &o->s.tolerance))
			return options_usage_error("--tolerance takes a percentage, such as 2%%, not '%s'", v);
		o->s_given |= SET_TOLERANCE;
		break;
	case OPT_COST_MODEL:
		if (!v[0])
			return options_usage_error("%s", "--cost-model takes a model file or 'analytic'");
		o->cost_model = v;
		break;
	case OPT_TUNE:
		if (!options_parse_count(v, 0, 100, &n))
			return options_usage_error("--tune takes a count from 0 to 100, not '%s'", v);
		o->s.tune = (int)n;
		o->tune_set = n > 0;
		break;
	case OPT_TIE:
		if (!parse_fraction(v, &o->s.tie) || o->s.tie > 1)
			return options_usage_error("--tie takes a percentage from 0 to 100, not '%s'", v);
		break;
	case OPT_EXPLORE:
		if (!parse_fraction(v, &o->s.explore) || o->s.explore > 1)
			return options_usage_error("--explore takes a percentage from 0 to 100, not '%s'", v);
		break;
	case OPT_TIMEOUT: return parse_timeout(o, v);
	case OPT_BUDGET:
		if (!parse_fraction(v, &o->s.budget))
			return options_usage_error("--budget takes a percentage of loss, such as 5%%, not '%s'", v);
		o->s_given |= SET_BUDGET;
		break;
	case OPT_TOPK: return parse_int(o, v, 1, 10000, "--topk takes a count from 1 to 10000, not '%s'", &o->s.topk, SET_TOPK);
	case OPT_MAX_DEPTH: return parse_int(o, v, 1, 3, "--max-depth takes 1, 2 or 3, not '%s'", &o->s.max_depth, SET_DEPTH);
	case OPT_SEED:
		if (!options_parse_count(v, 0, 2147483647L, &n))
			return options_usage_error("--seed takes an integer from 0 to 2^31 - 1, not '%s'", v);
		o->s.seed = (uint64_t)n;
		break;
	case OPT_MIN_LENGTH:
		return parse_int(o, v, 1, 1 << 20, "--min-length takes a length from 1 to 1048576, not '%s'", &o->s.min_length,
		                 SET_MINLEN);
	case OPT_MAX_PATTERN:
		return parse_int(o, v, 1, 1 << 20, "--max-pattern takes a length from 1 to 1048576, not '%s'",
		                 &o->s.max_pattern, SET_MAXPAT);
	case OPT_IMPORTANCE: return parse_importance(o, v);
	case OPT_RANK:
		o->rank_set = true;
		if (!strcmp(v, "total"))
			o->rank = PAT_RANK_TOTAL;
		else if (!strcmp(v, "lookahead"))
			o->rank = PAT_RANK_LOOKAHEAD;
		else
			return options_usage_error("--rank takes total or lookahead, not '%s'", v);
		break;
	case OPT_TARGET: return parse_target(o, v);
	case OPT_DUMP_AFTER: return parse_dump_after(o, v);
	case OPT_COLOR: return parse_color(o, v);
	case OPT_OUTPUT:
		if (o->output)
			return options_usage_error("%s", "-o given twice");
		o->output = v;
		break;
	case OPT_INCLUDE:
		if (o->ninclude == PAT_MAX_INCLUDE_DIRS)
			return options_usage_error("%s", "too many -I options");
		o->includes[o->ninclude++] = v;
		break;
	case OPT_FIRST_:
	case OPT_END_:
		PATC_ASSERT(!"an option without a row");
	}
	return PATC_EXIT_OK;
}

/* ---- errors ---- */

/* The long option of longs nearest to name (its length, up to any '='),
 * within an edit or two, or NULL. */
static const char *nearest(const char *name, const struct option *longs)
{
	char want[32];
	const size_t n = strcspn(name, "=");
	if (n >= sizeof want)
		return NULL;
	memcpy(want, name, n);
	want[n] = 0;
	const char *best = NULL;
	int bestd = n > 6 ? 3 : 2;
	for (const struct option *l = longs; l->name; l++) {
		const int d = util_edit_distance(want, l->name);
		if (d < bestd)
			bestd = d, best = l->name;
	}
	return best;
}

/* The long options of longs that name (up to any '=') is a prefix of,
 * listed into buf; how many. */
static int prefixed(const char *name, const struct option *longs, char *buf, size_t len)
{
	const size_t n = strcspn(name, "=");
	int count = 0;
	size_t o = 0;
	buf[0] = 0;
	for (const struct option *l = longs; l->name; l++)
		if (!strncmp(l->name, name, n) && o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s--%s", count++ ? ", " : "", l->name);
	return count;
}

/* getopt_long refused arg ('?': unknown, ambiguous, or a value given to
 * an option of none; ':': a value missing), for the command cmd ("" for
 * patc itself, else " merge" and the like) of options longs. */
static int bad_option(int c, const char *arg, const struct option *longs, const char *cmd)
{
	char q[UTIL_QUOTE_BUF], name[64] = "";
	const struct option *l = longs;
	while (l->name && l->val != optopt)
		l++;
	if (optopt && l->name)
		snprintf(name, sizeof name, "--%s", l->name);
	else if (optopt > 0 && optopt < 128 && isprint(optopt))
		snprintf(name, sizeof name, "-%c", optopt);
	if (c == ':' && name[0])
		return options_usage_error("%s needs an argument", name);
	if (l->name && !strncmp(arg, "--", 2)) /* (--search=yes) */
		return options_usage_error("%s takes no value", name);
	util_quote(arg, q);
	const char *dashes = arg[0] == '-' && arg[1] == '-' ? arg + 2 : arg[0] == '-' ? arg + 1 : arg;
	char list[512];
	if (!strncmp(arg, "--", 2) && prefixed(dashes, longs, list, sizeof list) > 1) {
		fprintf(stderr, "patc: error: ambiguous option '%s'%s%s: %s\n(run 'patc%s --help' for usage)\n", q,
		        *cmd ? " of patc" : "", cmd, list, cmd);
		return PATC_EXIT_USAGE;
	}
	const char *near = nearest(dashes, longs);
	fprintf(stderr, "patc: error: unknown option '%s'%s%s", q, *cmd ? " of patc" : "", cmd);
	if (near)
		fprintf(stderr, "; did you mean '--%s'?", near);
	fprintf(stderr, "\n(run 'patc%s --help' for usage)\n", cmd);
	return PATC_EXIT_USAGE;
}

/* ---- the rules between options ---- */

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
	if (!options_parse_count(id, 0, LONG_MAX, &i) || !options_parse_count(count, 1, SHARDS_MAX, &n) ||
	    (min && !options_parse_count(min, 0, LONG_MAX, &lo)) || (step && !options_parse_count(step, 1, LONG_MAX, &by)) ||
	    i < lo || (i - lo) % by || (i - lo) / by >= n) {
		fprintf(stderr, "patc: error: SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s%s%s%s%s: not a task of the "
		                "array (--shard=I/N overrides them)\n",
		        id, count, min ? ", SLURM_ARRAY_TASK_MIN=" : "", min ? min : "", step ? ", SLURM_ARRAY_TASK_STEP=" : "",
		        step ? step : "");
		return false;
	}
	o->s.shard = (int)((i - lo) / by), o->s.shards = (int)n;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	const size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* Which options go together; search_opt and measure_opt: the last option
 * given of --search alone, and of those that shape its measurements.  Then
 * the default target where none was given. */
static int check(Options *o, const OptRow *search_opt, const OptRow *measure_opt)
{
	char name[64];
	if (!o->input)
		return options_usage_error("%s", "no input file");
	/* an object goes elsewhere: it gets a level every x86 server since
	 * 2015 runs; what runs here (--run, --search) gets this CPU's all */
	if (!o->target_given)
		o->target = options_objects(o) && !ends_with(o->input, ".pir") ? OPTIONS_OBJECT_TARGET : OPTIONS_HOST_TARGET;
	if (o->explain + o->emit_pir + o->emit_weights > 1)
		return options_usage_error("%s", "--explain, --emit=pir and --emit=weights each write the output; "
		                                 "choose one");
	if (o->emit_weights && !o->output)
		return options_usage_error("%s", "--emit=weights writes a .safetensors file: give it with -o");
	if (o->mask && !o->emit_weights)
		return options_usage_error("%s", "--mask adds the mask to --emit=weights");
	if ((o->emit_llvm || o->emit_asm || o->emit_so) &&
	    (o->emit_pir || o->emit_weights || o->explain || o->run || !o->output))
		return options_usage_error("%s", "--emit=llvm, --emit=asm and --emit=so come with the object: give -o DIR "
		                                 "and no other output");
	if (o->run && (o->explain || o->emit_pir || o->emit_weights))
		return options_usage_error("%s", "--run prints its own report; leave out --explain and --emit");
	if (o->emit_asm && o->gpu)
		return options_usage_error("%s", "-o DIR writes the PTX on GPU targets; --emit=asm is for x86-64");
	if (search_opt && !o->search)
		return options_usage_error("%s is an option of --search", opt_name(search_opt, name));
	if (o->search && !o->s.measure && measure_opt)
		return options_usage_error("%s shapes the search's measurements, and --no-measure makes none",
		                           opt_name(measure_opt, name));
	if (o->search && (o->explain || o->emit_pir || o->emit_weights || o->emit_llvm || o->emit_asm || o->emit_so ||
	                  o->run || o->dump_after))
		return options_usage_error("%s", "--search writes its reports and the best kernel to -o DIR; leave out "
		                                 "--explain, --emit, --run and --dump-after");
	if (o->threads && !o->run && !o->search)
		return options_usage_error("%s", "--threads is for --run and --search (a compiled kernel takes its threads "
		                                 "when it is called)");
	if (o->wgmma && strcmp(o->target, "sm_90"))
		return options_usage_error("%s", "--wgmma is for --target=sm_90 (wgmma is Hopper's)");
	if (o->wgmma && o->search)
		return options_usage_error("%s", "--search chooses the kernels' schedules itself; leave out --wgmma");
	if (o->fixed_n && (!o->output || o->run || o->search || o->explain || o->emit_pir || o->emit_weights))
		return options_usage_error("%s", "--fixed-n is for kernels written with -o DIR");
	/* (-o's kernels take N at the launch, and a workspace is sized for one N) */
	if (o->wsum && o->output && !o->fixed_n && !o->run && !o->search && !o->explain && !o->emit_pir && !o->emit_weights)
		return options_usage_error("%s", "--split-workspace sums split parts through a workspace sized for the op's "
		                                 "N: with -o DIR it needs --fixed-n");
	if (o->wsum && !o->gpu)
		return options_usage_error("%s", "--split-workspace is for GPU targets (--target=sm_80 and up)");
	if (o->wsum && o->search)
		return options_usage_error("%s", "--search chooses the kernels' schedules itself; leave out --split-workspace");
	if (o->search && !slurm_shard(o))
		return PATC_EXIT_USAGE;
	if (o->search && o->s.shards > 1 && o->tune_set)
		return options_usage_error("%s", "a shard does not tune, not knowing the fastest: leave out --tune, and tune "
		                                 "with --resume over the merged log");
	if (ends_with(o->input, ".pir")) {
		if (o->emit_weights)
			return options_usage_error("%s", "--emit=weights needs a .pat program (weights are bound to its ops)");
		if (o->run || o->search || o->emit_llvm || o->emit_asm || o->emit_so || o->dump_after || o->importance_set ||
		    o->rank_set || o->ninclude || o->wgmma || o->wsum)
			return options_usage_error("%s", "a .pir file has no weights, primitives or includes: it takes "
			                                 "--emit=pir, --explain, --target and -o (its output file); --run, "
			                                 "--search, --emit=llvm/asm/so, --dump-after, --importance, --rank, -I, "
			                                 "--wgmma and --split-workspace need a .pat program");
	}
	return PATC_EXIT_OK;
}

int options_parse(int argc, char **argv, Options *o)
{
	memset(o, 0, sizeof *o);
	o->target = OPTIONS_HOST_TARGET; /* (until check: the default depends on the output) */
	o->color = -1;
	o->rank = PAT_RANK_DEFAULT;
	o->s = search_defaults;
	struct option longs[NROWS + 1];
	char shorts[2 * NROWS + 2] = ":"; /* (':' first: a missing value is ':', and getopt says nothing) */
	size_t nl = 0, ns = 1;
	for (size_t i = 0; i < NROWS; i++) {
		const OptRow *r = &rows[i];
		if (!r->id)
			continue;
		if (r->lng)
			longs[nl++] = (struct option){r->lng, r->arg, NULL, (int)r->id};
		if (r->sh) {
			shorts[ns++] = r->sh;
			if (r->arg == ARG_REQ)
				shorts[ns++] = ':';
		}
	}
	longs[nl] = (struct option){0};
	shorts[ns] = 0;
	const OptRow *search_opt = NULL, *measure_opt = NULL;
	opterr = 0;
	optind = 0; /* (getopt's state from the start) */
	for (int c, at = 1; (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1; at = optind) {
		const OptRow *r = c == '?' || c == ':' ? NULL : row_of(c);
		if (!r) { /* the argument that held it: the one getopt went past, or the one it is in */
			const char *arg = optind > at && optind <= argc ? argv[optind - 1] : argv[at < argc ? at : argc - 1];
			return bad_option(c, arg, longs, "");
		}
		if (r->flags & FLAG_SEARCH)
			search_opt = r;
		if (r->flags & FLAG_MEASURE)
			measure_opt = r;
		const int rc = apply(o, r->id, optarg);
		if (rc != PATC_EXIT_OK || o->help || o->version)
			return rc;
	}
	for (int i = optind; i < argc; i++) {
		if (o->input)
			return options_usage_error("more than one input file ('%s')", argv[i]);
		o->input = argv[i];
	}
	return check(o, search_opt, measure_opt);
}

/* ---- patc merge, patc train-cost-model ---- */

static void usage_merge(void)
{
	fputs("usage: patc merge LOG... -o OUT\n"
	      "\n"
	      "Joins --search tuning logs (tune.jsonl: the shards' of one search, or searches run apart) into\n"
	      "OUT, each measurement once; a search resumed from OUT (--resume, OUT as its DIR/tune.jsonl)\n"
	      "takes them over.  At most 256 logs.\n",
	      stdout);
}

static void usage_train(void)
{
	fputs("usage: patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K] [--seed=N]\n"
	      "\n"
	      "Learns the search's cost model (gradient-boosted trees) from --search tuning logs: the\n"
	      "measurements of target T (default native, what --search measures by default; older logs\n"
	      "name it x86-64; an x86 model ranks for every x86 target, a GPU's for that GPU), one sample\n"
	      "per kernel of a search, the fastest where it was measured more than once.  Prints its\n"
	      "quality by K-fold cross-validation over whole searches (K from 2 to 20, default 5;\n"
	      "Spearman and top-10 recall per search, beside the analytic model and the logs' repeated\n"
	      "measurements), then writes MODEL trained on all (--cost-model=MODEL uses it).  --seed\n"
	      "(default 0) seeds the folds and the trees' row samples.  At most 256 logs.\n",
	      stdout);
}

enum { SUB_TARGET = 256, SUB_FOLDS, SUB_SEED };

/* A subcommand's options (argv[1] is its name): each that getopt_long
 * returns, with its value, to take(ctx, c, v); its operands, the logs,
 * into logs[0..*n).  PATC_EXIT_OK, or PATC_EXIT_USAGE with the error said;
 * with -h, *help set and the rest not read. */
static int parse_sub(int argc, char **argv, const struct option *longs, const char *shorts, const char *cmd,
                     int (*take)(void *ctx, int c, const char *v), void *ctx, const char **logs, int *n, bool *help)
{
	usage_cmd = cmd;
	opterr = 0;
	optind = 2; /* (past "patc" and the subcommand's name; optind 0 would reset at argv[0]) */
	for (int c, at = optind; (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1; at = optind) {
		if (c == '?' || c == ':') {
			const char *arg = optind > at && optind <= argc ? argv[optind - 1] : argv[at < argc ? at : argc - 1];
			return bad_option(c, arg, longs, cmd);
		}
		if (c == 'h') {
			*help = true;
			return PATC_EXIT_OK;
		}
		const int rc = take(ctx, c, optarg);
		if (rc != PATC_EXIT_OK)
			return rc;
	}
	*n = 0;
	for (int i = optind; i < argc; i++) {
		if (*n == LOGS_MAX) {
			fprintf(stderr, "patc: error: patc%s takes at most %d logs\n(run 'patc%s --help' for usage)\n", cmd,
			        LOGS_MAX, cmd);
			return PATC_EXIT_USAGE;
		}
		logs[(*n)++] = argv[i];
	}
	return PATC_EXIT_OK;
}

static int take_merge(void *ctx, int c, const char *v)
{
	const char **output = ctx;
	PATC_ASSERT(c == 'o');
	if (*output)
		return options_usage_error("%s", "-o given twice");
	*output = v;
	return PATC_EXIT_OK;
}

int options_parse_merge(int argc, char **argv, const char **logs, int *nlogs, const char **output)
{
	static const struct option longs[] = {{"help", no_argument, NULL, 'h'}, {0}};
	bool help = false;
	*output = NULL;
	const int rc = parse_sub(argc, argv, longs, ":ho:", " merge", take_merge, output, logs, nlogs, &help);
	if (rc != PATC_EXIT_OK)
		return rc;
	if (help) {
		usage_merge();
		return OPTIONS_PRINTED;
	}
	if (!*nlogs || !*output)
		return options_usage_error("%s", "patc merge LOG... -o OUT: give the logs and the output");
	return PATC_EXIT_OK;
}

static int take_train(void *ctx, int c, const char *v)
{
	CostTrainOptions *t = ctx;
	long n;
	switch (c) {
	case 'o':
		if (t->out)
			return options_usage_error("%s", "-o given twice");
		t->out = v;
		break;
	case SUB_TARGET:
		if (!options_find_target(v))
			return options_unknown_target(v);
		t->target = v;
		break;
	case SUB_FOLDS:
		if (!options_parse_count(v, 2, 20, &n))
			return options_usage_error("--folds takes a count from 2 to 20, not '%s'", v);
		t->folds = (int)n;
		break;
	case SUB_SEED:
		if (!options_parse_count(v, 0, 2147483647L, &n))
			return options_usage_error("--seed takes an integer from 0 to 2^31 - 1, not '%s'", v);
		t->seed = (uint64_t)n;
		break;
	default: PATC_ASSERT(!"an option without a case");
	}
	return PATC_EXIT_OK;
}

int options_parse_train(int argc, char **argv, CostTrainOptions *t, const char **logs)
{
	static const struct option longs[] = {{"help", no_argument, NULL, 'h'},
	                                       {"target", required_argument, NULL, SUB_TARGET},
	                                       {"folds", required_argument, NULL, SUB_FOLDS},
	                                       {"seed", required_argument, NULL, SUB_SEED},
	                                       {0}};
	bool help = false;
	*t = (CostTrainOptions){.target = OPTIONS_HOST_TARGET, .folds = 5};
	const int rc = parse_sub(argc, argv, longs, ":ho:", " train-cost-model", take_train, t, logs, &t->nlogs, &help);
	if (rc != PATC_EXIT_OK)
		return rc;
	if (help) {
		usage_train();
		return OPTIONS_PRINTED;
	}
	if (!t->nlogs || !t->out)
		return options_usage_error("%s", "patc train-cost-model LOG... -o MODEL: give the logs and the output");
	t->logs = logs;
	return PATC_EXIT_OK;
}
