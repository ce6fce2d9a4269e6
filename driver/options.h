/* SPDX-License-Identifier: MIT */
/* options.h - patc's command line: the options of `patc FILE [options]`,
 * read by getopt_long from one table (options.def) that also prints
 * --help, and the rules between them (which options go together).
 *
 * `--opt=value` and `--opt value` both work, as do `-o PATH` and `-oPATH`;
 * an unambiguous prefix of a long option stands for it (getopt_long's
 * rule); `--` ends the options (a file named `-x.pat` after it); an unknown
 * option is refused with the nearest known one as a suggestion.
 */
#ifndef PATC_OPTIONS_H
#define PATC_OPTIONS_H

#include "../frontend/frontend.h"
#include "../search/costmodel.h"
#include "../search/search.h"

#include <stdbool.h>
#include <stdio.h>

/* A --target. */
typedef struct Target {
	const char *name;
	bool gpu;
	const char *alias; /* the target this name stands for, or NULL */
	const char *what;
} Target;

/* The target named name (the one it stands for, where it is an alias:
 * x86-64 is native), or NULL. */
const Target *options_find_target(const char *name);

/* The default target: of an object (-o DIR), which other machines run,
 * x86-64-v3 (AVX2 and FMA: x86 servers since Intel Haswell, 2013, and AMD
 * Zen, 2017; x86-64-v4 is missing on many client CPUs, v2 has no FMA and
 * half the vector width); of what runs here (--run, --search), this
 * machine's CPU. */
#define OPTIONS_OBJECT_TARGET "x86-64-v3"
#define OPTIONS_HOST_TARGET "native"

typedef struct Options {
	const char *input;
	const char *output;
	const char *target; /* the --target, else the default (OPTIONS_OBJECT_TARGET, OPTIONS_HOST_TARGET) */
	bool target_given;
	bool gpu;
	bool explain;
	bool emit_pir;
	bool emit_weights;
	bool emit_llvm, emit_asm; /* beside the object: DIR/BASE.ll, DIR/BASE.s */
	bool emit_so;             /* and DIR/BASE.so, linked by $CC (link.h) */
	bool mask;     /* --mask: add the dense mask to --emit=weights */
	bool run;      /* --run: time each op's kernel beside OpenBLAS */
	bool wgmma;    /* --wgmma: sm_90 tensor-core kernels on wgmma where they qualify */
	bool fixed_n;  /* --fixed-n: x86-64 kernels for their op's N only */
	bool wsum;     /* --split-workspace: split walks' parts summed through a workspace */
	bool help, version; /* -h, -V: print that, nothing else */
	int threads;   /* --threads, 0: all cores */
	PatRank rank;  /* --rank: default ranking of perforations */
	const char *dump_after; /* a primitive name or "all" */
	const char *includes[PAT_MAX_INCLUDE_DIRS];
	int ninclude;
	int color; /* -1 auto, 0 never, 1 always */
	bool search;  /* --search */
	const char *search_op; /* --op */
	bool resume;           /* --resume */
	bool tune_set;         /* --tune= given, above 0 */
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

/* Reads argv into o and checks the options against each other:
 * PATC_EXIT_OK, or PATC_EXIT_USAGE with the error said.  With -h or -V
 * (o->help, o->version) the rest is not read. */
int options_parse(int argc, char **argv, Options *o);

/* Whether o compiles the kernels to -o DIR (-o without another kind of
 * output). */
bool options_objects(const Options *o);

/* --help's text. */
void options_usage(FILE *f);

/* "patc: error: " and fmt with arg, then where to find usage;
 * PATC_EXIT_USAGE. */
int options_usage_error(const char *fmt, const char *arg);

/* An unknown target name refused, the targets listed: PATC_EXIT_USAGE. */
int options_unknown_target(const char *name);

/* The most logs `patc merge` and `patc train-cost-model` take. */
enum { LOGS_MAX = 256 };

/* What the subcommands' parsers return for -h, --help once their text is
 * printed (to stdout): the caller exits 0 where stdout took it. */
enum { OPTIONS_PRINTED = -1 };

/* `patc merge LOG... -o OUT` (argv[1] "merge"): the logs into
 * logs[0..*nlogs) (room for LOGS_MAX), OUT into *output.  PATC_EXIT_OK,
 * OPTIONS_PRINTED, or PATC_EXIT_USAGE with the error said. */
int options_parse_merge(int argc, char **argv, const char **logs, int *nlogs, const char **output);

/* `patc train-cost-model LOG... -o MODEL [--target=T] [--folds=K]
 * [--seed=N]` into t, its logs held in logs (room for LOGS_MAX); returns
 * as options_parse_merge. */
int options_parse_train(int argc, char **argv, CostTrainOptions *t, const char **logs);

/* A count in [lo, hi] in decimal (no sign but '-', no space). */
bool options_parse_count(const char *s, long lo, long hi, long *out);

#endif
