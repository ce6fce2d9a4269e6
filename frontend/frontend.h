/* SPDX-License-Identifier: MIT */
/* frontend.h - from .pat source to checked operators with their PatternIR.
 *
 * The front end loads a file and its includes (source.c), parses each with
 * the generated parser (grammar/), and runs the semantic pass (sema.c):
 * names, arity and types are checked, pattern applications are expanded,
 * and every primitive is handed to pir_apply (passes/).  Refusals become
 * diagnostics at the statement that asked for the primitive.
 */
#ifndef PATC_FRONTEND_H
#define PATC_FRONTEND_H

#include "ast.h"
#include "diag.h"
#include "../ir/op.h"
#include "../ir/pir.h"
#include "../weights/tensor.h"


typedef enum WeightKind {
	WEIGHTS_NONE,        /* not bound: the op is compiled without values */
	WEIGHTS_SAFETENSORS, /* path + tensor */
	WEIGHTS_NPY,         /* path */
	WEIGHTS_RANDOM,      /* seed */
} WeightKind;

/* Where a tensor comes from: the op's weights, its calibration activations,
 * or a user-supplied importance score tensor. */
typedef struct WeightBinding {
	WeightKind kind;
	const char *path;     /* as written */
	const char *resolved; /* relative to the .pat file */
	const char *tensor;
	int64_t seed;     /* random */
	SynthKind synth;  /* random */
	int64_t group;    /* random: block size of SYNTH_HEADS */
	SrcLoc loc;       /* the setting statement */
} WeightBinding;

/* Importance scores (docs/language.md §13), defined once: X(enum, name). */
#define PAT_IMPORTANCES(X)                                                 \
	X(MAGNITUDE, "magnitude") /* |w| (default) */                      \
	X(L2, "l2")               /* w^2 */                                \
	X(WANDA, "wanda")         /* |w| * ||X_k||_2, needs calibration */ \
	X(TENSOR, "tensor")       /* a user-supplied score tensor */

typedef enum PatImportance {
#define X(e, name) PAT_IMP_##e,
	PAT_IMPORTANCES(X)
#undef X
	PAT_NIMPORTANCES
} PatImportance;
extern const char *const pat_importance_names[PAT_NIMPORTANCES];

/* How a perforation ranks its candidate iterations: by the total importance
 * of the sub-block each addresses (the paper), or by the importance that
 * survives the perforations inside it (lookahead). */
typedef enum PatRank { PAT_RANK_TOTAL, PAT_RANK_LOOKAHEAD, PAT_NRANKS } PatRank;
/* The default, chosen by measurement (docs/accuracy.md). */
#define PAT_RANK_DEFAULT PAT_RANK_LOOKAHEAD
#define PAT_RANK_DEFAULT_NAME "lookahead"
extern const char *const pat_rank_names[PAT_NRANKS];

/* One applied primitive, recorded for --explain and --dump-after.  The IR
 * after it is kept in its text form (a few hundred bytes, where a Pir is
 * tens of KB): trace_step_ir reads it back. */
typedef struct TraceStep {
	PirPrim prim;
	const char *pattern; /* enclosing pattern, NULL directly in the op */
	SrcLoc loc;
	const char *ir_text; /* pir_print_text of the IR after the primitive */
	char warning[256];
} TraceStep;

/* The IR after step t, into *ir. */
void trace_step_ir(const TraceStep *t, Pir *ir);

/* An op's `search = search(...)` setting (patc --search): each value, or
 * a negative one where it is not given (the command line's or the default
 * then).  Fractions (0.75 for 75%). */
typedef struct OpSearch {
	bool given;
	double sparsity, tolerance, budget;
	int max_depth, min_length, max_pattern, topk;
	double max_sparsity; /* the top of a range of sparsities from `sparsity` (< 0: none) */
} OpSearch;

typedef struct OpResult {
	const char *name;
	SrcLoc loc;
	OpShape shape;
	WeightBinding weights;
	WeightBinding calibration; /* activations X: [N', K] for layout nk, [K, N'] for kn */
	WeightBinding bias;        /* the epilogue's bias: M floats (any shape of M elements) */
	PatImportance importance;
	WeightBinding scores;      /* when importance == PAT_IMP_TENSOR */
	PatRank rank;
	bool rank_set;             /* given in the op (else the command line's) */
	OpSearch search;           /* settings for --search */
	bool ok; /* every primitive applied and the target's rules hold */
	Pir *ir;
	int ntrace;
	TraceStep *trace; /* when FrontendOptions.trace */
} OpResult;

/* The most -I directories a program is compiled with. */
enum { PAT_MAX_INCLUDE_DIRS = 64 };

typedef struct FrontendOptions {
	const char *const *include_dirs; /* -I, searched after the file's dir (at most PAT_MAX_INCLUDE_DIRS) */
	int ninclude;
	const char *stdlib_dir; /* searched last */
	bool gpu;               /* apply the GPU legality rules */
	const char *target;     /* its name, for messages */
	bool trace;             /* record TraceSteps */
	bool sandbox;           /* no file access: includes and weight files refused */
	PatRank rank;           /* default ranking of perforations */
	bool importance_set;    /* importance scores every op's weights (--importance) */
	PatImportance importance;
} FrontendOptions;

typedef struct Program {
	int nops;
	OpResult *ops;
} Program;

/* The longest source file (.pat or .pir) read, in bytes: positions are
 * ints, and a longer one is not a program (/dev/zero). */
#define PAT_SOURCE_MAX ((size_t)64 << 20)

/* A source file's text (malloc'd, NUL-terminated, *len bytes), or NULL with
 * why it cannot be read in why ("longer than 64 MiB, ...", or errno's). */
char *frontend_read_source(const char *path, size_t *len, char why[128]);

/* Compiles the file at path (or, when text is not NULL, that text under the
 * name path).  Every diagnostic goes to diag.  Returns the number of errors;
 * prog holds every op that parsed, ok or not.  All memory is in arena. */
int frontend_compile(const FrontendOptions *opt, Diag *diag, Arena *arena, const char *path,
                     const char *text, Program *prog);

/* ---- internal: frontend.c's stages (source.c, then sema.c) ---- */
int frontend_load(const FrontendOptions *opt, Diag *diag, Arena *arena, const char *path,
                  const char *text, Item **items);
int sema_run(const FrontendOptions *opt, Diag *diag, Arena *arena, Item *items, Program *prog);

#endif
