/* SPDX-License-Identifier: MIT */
/* testutil.h - helpers shared by the unit suites: building primitives from
 * short strings and running a Check suite. */
#ifndef PATC_TESTUTIL_H
#define PATC_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "ir/pir.h"
#include "support/arena.h"
#include "passes/passes.h"

static inline PirPrim prim_split(const char *loop, int n, const char *const *names,
                                 const int64_t *factors, bool pad, int64_t amount)
{
	PirPrim p;
	memset(&p, 0, sizeof p);
	p.kind = PIR_PRIM_SPLIT;
	pir_name_copy(p.u.split.loop, loop);
	p.u.split.n = n;
	for (int i = 0; i < n; i++) {
		pir_name_copy(p.u.split.names[i], names[i]);
		p.u.split.factor[i] = factors[i];
	}
	p.u.split.pad = pad;
	p.u.split.pad_amount = amount;
	return p;
}

#define SPLIT(loop, NAMES, FACTORS, pad, amount)                                                  \
	prim_split(loop, (int)(sizeof((const char *[])NAMES) / sizeof(char *)), (const char *[])NAMES, \
	           (const int64_t[])FACTORS, pad, amount)

static inline PirPrim prim_list(PirPrimKind kind, int n, const char *const *names, const char *to)
{
	PirPrim p;
	memset(&p, 0, sizeof p);
	p.kind = kind;
	if (kind == PIR_PRIM_REORDER) {
		p.u.reorder.n = n;
		for (int i = 0; i < n; i++)
			pir_name_copy(p.u.reorder.loops[i], names[i]);
	} else {
		p.u.join.n = n;
		for (int i = 0; i < n; i++)
			pir_name_copy(p.u.join.loops[i], names[i]);
		pir_name_copy(p.u.join.name, to);
	}
	return p;
}

#define REORDER(NAMES)                                                                          \
	prim_list(PIR_PRIM_REORDER, (int)(sizeof((const char *[])NAMES) / sizeof(char *)),        \
	          (const char *[])NAMES, NULL)
#define JOIN(NAMES, to)                                                                         \
	prim_list(PIR_PRIM_JOIN, (int)(sizeof((const char *[])NAMES) / sizeof(char *)),           \
	          (const char *[])NAMES, to)

static inline PirPrim prim_perforate(const char *loop, int64_t keep)
{
	PirPrim p;
	memset(&p, 0, sizeof p);
	p.kind = PIR_PRIM_PERFORATE;
	pir_name_copy(p.u.perforate.loop, loop);
	p.u.perforate.keep = keep;
	return p;
}

/* keep num / 10^decimals percent */
static inline PirPrim prim_perforate_pct(const char *loop, int64_t num, int decimals)
{
	PirPrim p = prim_perforate(loop, 0);
	p.u.perforate.is_percent = true;
	p.u.perforate.percent = (PirPercent){num, decimals};
	return p;
}

static inline PirPrim prim_condense(const char *loop)
{
	PirPrim p;
	memset(&p, 0, sizeof p);
	p.kind = PIR_PRIM_CONDENSE;
	pir_name_copy(p.u.condense.loop, loop);
	return p;
}

/* Applies p, failing the test with the pass's reason when it refuses. */
#define APPLY_OK(ir, p)                                                                         \
	do {                                                                                    \
		PirReason why_;                                                                 \
		PirPrim p_ = (p);                                                               \
		ck_assert_msg(pir_apply((ir), &p_, &why_), "refused: %s", why_.error);          \
	} while (0)

/* The paper's Fig. 6 on a 16 x 16 weight: I0_4 J0_4^2 I1_4^2 J1_4. */
static inline Pir fig6_ir(void)
{
	Pir ir;
	pir_init(&ir, "fig6", 16, 16);
	PirPrim ps[] = {
		prim_split("m", 2, (const char *[]){"i0", "i1"}, (const int64_t[]){4, 4}, false, -1),
		prim_split("k", 2, (const char *[]){"j0", "j1"}, (const int64_t[]){4, 4}, false, -1),
		prim_list(PIR_PRIM_REORDER, 4, (const char *[]){"i0", "j0", "i1", "j1"}, NULL),
		prim_perforate("j0", 2),
		prim_perforate("i1", 2),
	};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		APPLY_OK(&ir, ps[i]);
	return ir;
}

static inline char *paper(const Pir *ir)
{
	static char buf[1024];
	pir_print_paper(ir, buf, sizeof buf);
	return buf;
}

/* Compiles a .pat file (or `text` under that name) with diagnostics
 * discarded and the stdlib from $PATC_STDLIB; the program lives in arena.
 * Returns the number of errors. */
static inline int compile_quiet(const char *path, const char *text, Arena *arena, Program *prog)
{
	Diag diag;
	FILE *sink = fopen("/dev/null", "w");
	ck_assert_ptr_nonnull(sink);
	diag_init(&diag, arena, sink);
	FrontendOptions fo = {.stdlib_dir = getenv("PATC_STDLIB"), .target = "x86-64"};
	int errors = frontend_compile(&fo, &diag, arena, path, text, prog);
	fclose(sink);
	return errors;
}

/* A small LCG, so random cases repeat for a fixed seed. */
static inline uint32_t test_rnd(uint64_t *state, uint32_t n)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*state >> 33) % n;
}

/* A random legal pattern on an M x K weight with M, K <= maxdim (random
 * splits with padding, reorders, joins, perforations; at least one
 * perforation; every loop shorter than 64). */
static inline void test_random_pattern(Pir *ir, uint64_t *st, uint32_t maxdim)
{
	for (;;) {
		int64_t M = 1 + test_rnd(st, maxdim), K = 1 + test_rnd(st, maxdim);
		pir_init(ir, "r", M, K);
		int fresh = 0;
		for (int step = 0; step < 8; step++) {
			PirPrim p;
			memset(&p, 0, sizeof p);
			const PirLoop *l = &ir->loops[test_rnd(st, (uint32_t)ir->nloops)];
			switch (test_rnd(st, 4)) {
			case 0:
				p.kind = PIR_PRIM_SPLIT;
				pir_name_copy(p.u.split.loop, l->name);
				p.u.split.n = 2;
				snprintf(p.u.split.names[0], PIR_NAME_MAX, "s%d", fresh++);
				snprintf(p.u.split.names[1], PIR_NAME_MAX, "s%d", fresh++);
				p.u.split.factor[0] = 0;
				p.u.split.factor[1] = 2 + test_rnd(st, 3);
				p.u.split.pad = true;
				p.u.split.pad_amount = -1;
				break;
			case 1:
				p.kind = PIR_PRIM_REORDER;
				p.u.reorder.n = 2;
				pir_name_copy(p.u.reorder.loops[0], l->name);
				pir_name_copy(p.u.reorder.loops[1],
				              ir->loops[test_rnd(st, (uint32_t)ir->nloops)].name);
				break;
			case 2: {
				int at = (int)test_rnd(st, (uint32_t)ir->nloops);
				if (at + 1 >= ir->nloops)
					continue;
				p.kind = PIR_PRIM_JOIN;
				p.u.join.n = 2;
				pir_name_copy(p.u.join.loops[0], ir->loops[at].name);
				pir_name_copy(p.u.join.loops[1], ir->loops[at + 1].name);
				snprintf(p.u.join.name, PIR_NAME_MAX, "j%d", fresh++);
				break;
			}
			default:
				if (l->len < 2)
					continue;
				p.kind = PIR_PRIM_PERFORATE;
				pir_name_copy(p.u.perforate.loop, l->name);
				p.u.perforate.keep = 1 + test_rnd(st, (uint32_t)l->len - 1);
				break;
			}
			PirReason why;
			pir_apply(ir, &p, &why);
		}
		bool perf = false, small = true;
		for (int i = 0; i < ir->nloops; i++) {
			perf |= pir_loop_is_perforated(&ir->loops[i]);
			small &= ir->loops[i].len < 64;
		}
		if (perf && small)
			return;
	}
}

static inline int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
