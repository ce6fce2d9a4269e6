/* SPDX-License-Identifier: MIT */
/* pir.h - PatternIR: a sparse weight pattern as a perforated loop nest.
 *
 * A Pir covers the index space of one weight W[m, k] (m = output rows, the
 * spatial axis; k = the reduction axis).  It is an ordered list of loops,
 * outermost first.  Each loop is a mixed-radix digit made of one or more
 * components (axis, extent, stride): a plain loop has one component, a loop
 * made by `join` has the components of the loops it joined, most significant
 * first.  A loop index v decomposes over its component extents, and the
 * weight coordinate on axis a is the sum of digit * stride over every
 * component of axis a in the whole nest.
 *
 * Invariants (checked by pir_verify):
 *  - for each axis, all components of that axis, sorted by stride, form an
 *    exact mixed-radix tiling: the smallest stride is 1 and every next stride
 *    is the previous stride times the previous extent; the top one ends at the
 *    padded extent ext[a] >= len[a].  Coordinates >= len[a] are padding (zero
 *    weights of zero importance);
 *  - loop length = product of its component extents; 1 <= nnz <= length;
 *  - loop names are unique, non-empty identifiers;
 *  - only a perforated loop that iterates over k may be condensed.
 *
 * A Pir is a plain value: fixed-size arrays, no pointers, so a search copies a
 * candidate with one assignment and compares with pir_equal.  Provenance (how
 * each loop was made by split and join) is kept as data in `rels` so printers
 * and lowering can replay it (Halide's Split/Dim, TACO's provenance graph).
 */
#ifndef PATC_PIR_H
#define PATC_PIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	PIR_NAME_MAX = 32,  /* loop and op names, including the NUL */
	PIR_MAX_LOOPS = 24, /* loops in one nest */
	PIR_MAX_COMPS = 8,  /* components of one (joined) loop */
	PIR_MAX_SPLIT = 8,  /* children of one split */
	PIR_MAX_RELS = 48,  /* recorded split/join relations */
	PIR_PERCENT_DECIMALS = 6,
	PIR_PRIM_TEXT_MAX = 1024, /* pir_prim_format of any primitive fits */
	PIR_PAPER_MAX = 2048,     /* pir_print_paper of any nest fits */
};

/* Axis lengths and padded extents are at most 2^31, so products of extents
 * (values, Q, regions) fit in int64_t. */
#define PIR_MAX_EXTENT ((int64_t)1 << 31)

typedef enum PirAxis { PIR_AXIS_M, PIR_AXIS_K, PIR_NAXES } PirAxis;

typedef enum PirPrimKind {
#define X(e, name, fn) PIR_PRIM_##e,
#include "primitives.def"
#undef X
	PIR_NPRIMS
} PirPrimKind;

/* An exact decimal percentage: num / 10^decimals percent (`6.25%` is
 * {625, 2}).  Kept exact so rounding a keep count is exact too. */
typedef struct PirPercent {
	int64_t num;
	int decimals; /* 0..PIR_PERCENT_DECIMALS */
} PirPercent;

/* A source position carried through the IR for diagnostics only; the IR
 * never interprets it.  file = 0 means unknown. */
typedef struct PirLoc {
	uint32_t file, line, col, len;
} PirLoc;

typedef struct PirComp {
	PirAxis axis;
	int64_t extent, stride;
} PirComp;

typedef struct PirLoop {
	char name[PIR_NAME_MAX];
	int ncomp;
	PirComp comp[PIR_MAX_COMPS]; /* most significant first */
	int64_t len;                 /* product of comp extents */
	int64_t nnz;                 /* kept iterations; == len when dense */
	bool condensed;              /* condense L on x */
	PirLoc made;                 /* the split/join that created it */
	PirLoc perforated;           /* the perforate that set nnz */
} PirLoop;

typedef enum PirRelKind { PIR_REL_SPLIT, PIR_REL_JOIN } PirRelKind;

/* One provenance record.
 *   SPLIT: from[0] -> to[0..nto-1] with factors; pad = zeros added.
 *   JOIN:  from[0..nfrom-1] -> to[0]. */
typedef struct PirRel {
	PirRelKind kind;
	int nfrom, nto;
	char from[PIR_MAX_SPLIT][PIR_NAME_MAX];
	char to[PIR_MAX_SPLIT][PIR_NAME_MAX];
	int64_t factor[PIR_MAX_SPLIT];
	int64_t pad;
} PirRel;

typedef struct Pir {
	char op[PIR_NAME_MAX];
	int64_t len[PIR_NAXES]; /* real axis lengths: M, K */
	int64_t ext[PIR_NAXES]; /* padded extents (>= len) */
	int nloops;
	PirLoop loops[PIR_MAX_LOOPS]; /* nest order, outermost first */
	int nrels;
	PirRel rels[PIR_MAX_RELS];
} Pir;

/* A primitive application with every argument resolved to a number.  This is
 * what the front end, the PatternIR reader and the search hand to passes. */
typedef struct PirPrim {
	PirPrimKind kind;
	PirLoc loc;
	union {
		struct { /* split loop -> names : factors [pad] */
			char loop[PIR_NAME_MAX];
			int n;
			char names[PIR_MAX_SPLIT][PIR_NAME_MAX];
			int64_t factor[PIR_MAX_SPLIT]; /* 0 = `_`, inferred */
			bool pad;                      /* `pad` given */
			int64_t pad_amount;            /* -1: `pad` alone, as needed */
		} split;
		struct { /* reorder loops (partial: takes the listed positions) */
			int n;
			char loops[PIR_MAX_LOOPS][PIR_NAME_MAX];
		} reorder;
		struct { /* join loops -> name */
			int n;
			char loops[PIR_MAX_COMPS][PIR_NAME_MAX];
			char name[PIR_NAME_MAX];
		} join;
		struct { /* perforate loop keep count | keep percent% */
			char loop[PIR_NAME_MAX];
			bool is_percent;
			int64_t keep;
			PirPercent percent;
		} perforate;
		struct { /* condense loop on x */
			char loop[PIR_NAME_MAX];
		} condense;
	} u;
} PirPrim;

/* What a pass says back.  On refusal `error` holds the reason (naming the
 * loop) and `hint` may suggest a fix; a pass may also warn on success. */
typedef struct PirReason {
	char subject[PIR_NAME_MAX]; /* the loop the reason is about, if one */
	char error[512];
	char hint[256];
	char warning[256];
} PirReason;

/* ---- core (pir.c) ---- */
/* Copies a name, truncating to PIR_NAME_MAX - 1 characters. */
void pir_name_copy(char dst[PIR_NAME_MAX], const char *src);
extern const char *const pir_axis_names[PIR_NAXES]; /* "m", "k" */
extern const char *const pir_prim_names[PIR_NPRIMS];

/* The dense nest `m_M k_K`: loops "m" and "k".  M, K >= 1. */
void pir_init(Pir *ir, const char *op, int64_t m, int64_t k);
int pir_find(const Pir *ir, const char *name); /* index or -1 */
bool pir_equal(const Pir *a, const Pir *b);    /* structural */
bool pir_loop_has_axis(const PirLoop *l, PirAxis a);
/* Has a component of axis a longer than 1 (a length-1 digit iterates once). */
bool pir_loop_spans_axis(const PirLoop *l, PirAxis a);
bool pir_loop_is_perforated(const PirLoop *l);
bool pir_name_valid(const char *name);

/* ---- verifier (pir_verify.c) ---- */
/* True when every invariant above holds; else writes the first failure. */
bool pir_verify(const Pir *ir, char *why, size_t whylen);

/* ---- passes (passes/) ---- */
/* Applies one primitive.  On refusal returns false, fills why->error and
 * leaves *ir exactly as it was. */
bool pir_apply(Pir *ir, const PirPrim *p, PirReason *why);

/* ---- target legality (passes/legality.c) ---- */
typedef enum PirViolationKind {
	PIR_VIOL_SPATIAL_IN_REDUCTION, /* perforated m loop inside a k loop */
	PIR_VIOL_JOIN_MK,              /* a loop joins m and k */
} PirViolationKind;

typedef struct PirViolation {
	PirViolationKind kind;
	int loop;  /* offending loop */
	int outer; /* for SPATIAL_IN_REDUCTION: the enclosing k loop */
	char text[256];
} PirViolation;

/* GPU rules (paper §4): no perforated spatial loop nested in a reduction
 * loop, no loop joining m and k.  Returns the number of violations, writing
 * at most max of them. */
int pir_check_gpu(const Pir *ir, PirViolation *out, int max);

/* ---- analysis (pir_metrics.c) ---- */
typedef struct PirLoopMetrics {
	int64_t extent;      /* nnz if perforated else len: extent in storage */
	int64_t value_stride; /* stride in the packed value array */
	int64_t W;           /* pattern size: weights one iteration addresses */
	int64_t Q;           /* selection region size: len * W */
	int64_t regions;     /* selection regions (product of outer extents) */
	int64_t index_len;   /* regions * nnz for perforated loops, else 0 */
	double log_diversity; /* regions * ln C(len, nnz) */
} PirLoopMetrics;

typedef struct PirMetrics {
	PirLoopMetrics loop[PIR_MAX_LOOPS];
	double density;       /* product of nnz/len */
	double log_diversity; /* sum over perforated loops, natural log */
	int64_t values;       /* entries in the packed value array */
	int64_t index_entries;
	int64_t dense_padded; /* ext[m] * ext[k] */
	int64_t pad[PIR_NAXES];
	int nperforated;
} PirMetrics;

void pir_metrics(const Pir *ir, PirMetrics *out);

/* ---- printers (pir_print.c) ---- */
/* Paper notation: `M0_96 K0_24^12 K1_8 M1_32 K2_4^2`. */
void pir_print_paper(const Pir *ir, char *buf, size_t len);
/* "6.25" for {625, 2}. */
void pir_percent_format(PirPercent p, char *buf, size_t len);
/* A primitive in .pat syntax, e.g. "split m -> m0, m1 : _, 32 pad". */
void pir_prim_format(const PirPrim *p, char *buf, size_t len);
/* The full text form (docs/pir.md), one `pir` block, newline-terminated.
 * Returns a malloc'd string. */
char *pir_print_text(const Pir *ir);

/* ---- reader (pir_read.c) ---- */
/* Parses every `pir` block of a text form.  On error returns -1 and writes
 * "LINE:COL: message" into err.  Returns the number of blocks read (at most
 * max).  Each result is verified. */
int pir_read_text(const char *text, Pir *out, int max, char *err, size_t errlen);

#endif
