/* SPDX-License-Identifier: MIT */
/* test_passes.c - the five primitive passes and the GPU legality check.
 *
 * Every refusal is checked to leave the IR byte-for-byte untouched, and a
 * seeded property test runs thousands of random primitives: each accepted
 * one must give a verified IR that survives a text round trip, each refused
 * one must leave the IR as it was.
 */
#include "testutil.h"

#include <math.h>

#define COMMA ,

static Pir base(int64_t m, int64_t k)
{
	Pir ir;
	pir_init(&ir, "t", m, k);
	return ir;
}

START_TEST(split_with_padding)
{
	Pir ir = base(1000, 1024);
	APPLY_OK(&ir, SPLIT("m", {"i0" COMMA "i1" COMMA "i2"}, {4 COMMA 8 COMMA 32}, true, 24));
	ck_assert_str_eq(paper(&ir), "I0_4 I1_8 I2_32 K_1024");
	ck_assert_int_eq(ir.ext[PIR_AXIS_M], 1024);
	ck_assert_int_eq(ir.len[PIR_AXIS_M], 1000);
	ck_assert_int_eq(ir.loops[0].comp[0].stride, 256);
	ck_assert_int_eq(ir.loops[1].comp[0].stride, 32);
	ck_assert_int_eq(ir.loops[2].comp[0].stride, 1);
	ck_assert_int_eq(ir.nrels, 1);
	ck_assert_int_eq(ir.rels[0].pad, 24);
}
END_TEST

START_TEST(split_infers_wildcard)
{
	Pir ir = base(768, 1000);
	APPLY_OK(&ir, SPLIT("m", {"m0" COMMA "m1"}, {0 COMMA 32}, false, -1));
	ck_assert_int_eq(ir.loops[0].len, 24);
	/* `_` with `pad` rounds up: 1000 -> 32 * 32 = 1024 */
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {0 COMMA 32}, true, -1));
	ck_assert_str_eq(paper(&ir), "M0_24 M1_32 K0_32 K1_32");
	ck_assert_int_eq(ir.ext[PIR_AXIS_K], 1024);
	/* the outermost loop of an axis may be padded again after a split */
	APPLY_OK(&ir, SPLIT("k0", {"ka" COMMA "kb"}, {5 COMMA 7}, true, 3));
	ck_assert_int_eq(ir.ext[PIR_AXIS_K], 35 * 32);
}
END_TEST

START_TEST(reorder_partial_takes_listed_positions)
{
	Pir ir = base(64, 64);
	APPLY_OK(&ir, SPLIT("m", {"a" COMMA "c"}, {8 COMMA 8}, false, -1));
	APPLY_OK(&ir, SPLIT("k", {"b" COMMA "d"}, {8 COMMA 8}, false, -1));
	ck_assert_str_eq(paper(&ir), "A_8 C_8 B_8 D_8");
	APPLY_OK(&ir, REORDER({"d" COMMA "c"}));
	ck_assert_str_eq(paper(&ir), "A_8 D_8 B_8 C_8");
	APPLY_OK(&ir, REORDER({"c" COMMA "b" COMMA "d" COMMA "a"}));
	ck_assert_str_eq(paper(&ir), "C_8 B_8 D_8 A_8");
}
END_TEST

START_TEST(join_merges_contiguous_components)
{
	Pir ir = base(16, 96), orig = base(16, 96);
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1" COMMA "k2"}, {4 COMMA 6 COMMA 4}, false, -1));
	APPLY_OK(&ir, JOIN({"k0" COMMA "k1" COMMA "k2"}, "kk"));
	ck_assert_int_eq(ir.loops[1].ncomp, 1);
	ck_assert_int_eq(ir.loops[1].comp[0].extent, 96);
	ck_assert_int_eq(ir.loops[1].comp[0].stride, 1);
	ck_assert_int_eq(ir.nrels, 2);
	/* same nest as the original but for the name and the provenance */
	pir_name_copy(ir.loops[1].name, "k");
	ir.nrels = 0;
	memset(ir.rels, 0, sizeof ir.rels);
	ck_assert(pir_equal(&ir, &orig));
}
END_TEST

START_TEST(join_mixed_axes_and_split_again)
{
	Pir ir = base(8, 4);
	APPLY_OK(&ir, JOIN({"m" COMMA "k"}, "mk"));
	ck_assert_int_eq(ir.nloops, 1);
	ck_assert_int_eq(ir.loops[0].ncomp, 2);
	ck_assert_int_eq(ir.loops[0].len, 32);
	/* 2 * 16: the first factor divides m, the second straddles m and k */
	APPLY_OK(&ir, SPLIT("mk", {"a" COMMA "b"}, {2 COMMA 16}, false, -1));
	ck_assert_int_eq(ir.loops[0].ncomp, 1);
	ck_assert_int_eq(ir.loops[0].comp[0].stride, 4);
	ck_assert_int_eq(ir.loops[1].ncomp, 2);
	ck_assert_int_eq(ir.loops[1].comp[0].extent, 4);
	ck_assert_int_eq(ir.loops[1].comp[1].axis, PIR_AXIS_K);
	Pir j = base(8, 4);
	APPLY_OK(&j, JOIN({"m" COMMA "k"}, "mk"));
	PirReason why;
	PirPrim bad = SPLIT("mk", {"a" COMMA "b"}, {16 COMMA 2}, false, -1);
	ck_assert(pir_apply(&j, &bad, &why) == true); /* 16 = 8*2: divides k */
	Pir j2 = base(6, 4);
	APPLY_OK(&j2, JOIN({"m" COMMA "k"}, "mk"));
	Pir before = j2;
	bad = SPLIT("mk", {"a" COMMA "b"}, {4 COMMA 6}, false, -1); /* 4 straddles m = 6 */
	ck_assert(!pir_apply(&j2, &bad, &why));
	ck_assert_ptr_nonnull(strstr(why.error, "straddles"));
	ck_assert(memcmp(&j2, &before, sizeof before) == 0);
}
END_TEST

START_TEST(perforate_percent_rounds_and_warns)
{
	Pir ir = base(30, 30);
	PirReason why;
	PirPrim p = prim_perforate_pct("k", 25, 0);
	ck_assert(pir_apply(&ir, &p, &why));
	ck_assert_int_eq(ir.loops[1].nnz, 8); /* 7.5 rounds half up */
	ck_assert_ptr_nonnull(strstr(why.warning, "rounds to 8"));
	p = prim_perforate_pct("m", 50, 0);
	ck_assert(pir_apply(&ir, &p, &why));
	ck_assert_int_eq(ir.loops[0].nnz, 15);
	ck_assert_str_eq(why.warning, "");
	/* exact decimal rounding: 9.2% of 375 is 34.5, rounded up to 35 */
	Pir r = base(8, 375);
	p = prim_perforate_pct("k", 92, 1);
	ck_assert(pir_apply(&r, &p, &why));
	ck_assert_int_eq(r.loops[1].nnz, 35);
	r = base(8, 1000); /* 64.35% of 1000 = 643.5 -> 644 */
	p = prim_perforate_pct("k", 6435, 2);
	ck_assert(pir_apply(&r, &p, &why));
	ck_assert_int_eq(r.loops[1].nnz, 644);
}
END_TEST

START_TEST(condense_marks_perforated_k_loop)
{
	Pir ir = base(32, 32);
	APPLY_OK(&ir, prim_perforate("k", 8));
	APPLY_OK(&ir, prim_condense("k"));
	ck_assert(ir.loops[1].condensed);
}
END_TEST

/* ---- refusals: each leaves the IR untouched and says why ---- */

typedef struct Refusal {
	const char *what;
	void (*setup)(Pir *ir);
	PirPrim (*prim)(void);
	const char *expect; /* substring of the reason */
} Refusal;

static void setup_plain(Pir *ir) { *ir = base(1000, 768); }
static void setup_split(Pir *ir)
{
	*ir = base(1024, 768);
	PirReason why;
	PirPrim p = SPLIT("m", {"m0" COMMA "m1"}, {32 COMMA 32}, false, -1);
	ck_assert(pir_apply(ir, &p, &why));
	p = SPLIT("k", {"k0" COMMA "k1"}, {24 COMMA 32}, false, -1);
	ck_assert(pir_apply(ir, &p, &why));
	p = prim_perforate("k0", 6);
	ck_assert(pir_apply(ir, &p, &why));
}

static PirPrim r_split_mismatch(void) { return SPLIT("m", {"a" COMMA "b" COMMA "c"}, {4 COMMA 8 COMMA 32}, false, -1); }
static PirPrim r_split_short(void) { return SPLIT("m", {"a" COMMA "b"}, {4 COMMA 8}, false, -1); }
static PirPrim r_split_unknown(void) { return SPLIT("q", {"a" COMMA "b"}, {4 COMMA 8}, false, -1); }
static PirPrim r_split_wild_nodiv(void) { return SPLIT("m", {"a" COMMA "b"}, {0 COMMA 64}, false, -1); }
static PirPrim r_split_two_wild(void) { return SPLIT("m", {"a" COMMA "b"}, {0 COMMA 0}, false, -1); }
static PirPrim r_split_pad_wrong(void) { return SPLIT("m", {"a" COMMA "b"}, {32 COMMA 32}, true, 10); }
static PirPrim r_split_dup_name(void) { return SPLIT("m", {"a" COMMA "a"}, {8 COMMA 125}, false, -1); }
static PirPrim r_split_existing(void) { return SPLIT("m", {"k" COMMA "a"}, {8 COMMA 125}, false, -1); }
static PirPrim r_split_one(void) { return SPLIT("m", {"a"}, {1000}, false, -1); }
static PirPrim r_split_inner_pad(void) { return SPLIT("m1", {"a" COMMA "b"}, {5 COMMA 7}, true, -1); }
static PirPrim r_split_perforated(void) { return SPLIT("k0", {"a" COMMA "b"}, {4 COMMA 6}, false, -1); }
static PirPrim r_reorder_one(void) { return REORDER({"m"}); }
static PirPrim r_reorder_repeat(void) { return REORDER({"m" COMMA "k" COMMA "m"}); }
static PirPrim r_reorder_unknown(void) { return REORDER({"m" COMMA "z"}); }
static PirPrim r_join_far(void) { return JOIN({"m0" COMMA "k0"}, "mm"); }
static PirPrim r_join_order(void) { return JOIN({"m1" COMMA "m0"}, "mm"); }
static PirPrim r_join_perf(void) { return JOIN({"k0" COMMA "m1"}, "x"); }
static PirPrim r_join_name(void) { return JOIN({"m" COMMA "k"}, "k"); }
static PirPrim r_perf_zero(void) { return prim_perforate("m", 0); }
static PirPrim r_perf_over(void) { return prim_perforate("m", 1001); }
static PirPrim r_perf_pct_zero(void) { return prim_perforate_pct("m", 1, 2); }
static PirPrim r_perf_pct_over(void) { return prim_perforate_pct("m", 150, 0); }
static PirPrim r_perf_twice(void) { return prim_perforate("k0", 3); }
static PirPrim r_cond_dense(void) { return prim_condense("k"); }
static PirPrim r_cond_m(void) { return prim_condense("m"); }

static const Refusal refusals[] = {
	{"split product too big", setup_plain, r_split_mismatch, "4*8*32 = 1024 do not match the length 1000"},
	{"split product too small", setup_plain, r_split_short, "do not cover the length 1000"},
	{"split of unknown loop", setup_plain, r_split_unknown, "no loop named 'q'"},
	{"wildcard does not divide", setup_plain, r_split_wild_nodiv, "64 does not divide 1000"},
	{"two wildcards", setup_plain, r_split_two_wild, "more than one '_'"},
	{"pad amount wrong", setup_plain, r_split_pad_wrong, "plus pad 10"},
	{"duplicate child", setup_plain, r_split_dup_name, "names loop 'a' twice"},
	{"child name exists", setup_plain, r_split_existing, "'k' already exists"},
	{"split into one", setup_plain, r_split_one, "into 1 loops"},
	{"pad an inner loop", setup_split, r_split_inner_pad, "only the outermost loop of axis m"},
	{"split a perforated loop", setup_split, r_split_perforated, "it is perforated"},
	{"reorder one loop", setup_plain, r_reorder_one, "at least two"},
	{"reorder repeats", setup_plain, r_reorder_repeat, "lists loop 'm' twice"},
	{"reorder unknown", setup_plain, r_reorder_unknown, "no loop named 'z'"},
	{"join non-adjacent", setup_split, r_join_far, "not adjacent"},
	{"join wrong order", setup_split, r_join_order, "nest order"},
	{"join perforated", setup_split, r_join_perf, "perforated"},
	{"join to existing name", setup_plain, r_join_name, "already exists"},
	{"keep 0", setup_plain, r_perf_zero, "keep at least 1"},
	{"keep over length", setup_plain, r_perf_over, "it has only 1000"},
	{"keep 0.01% rounds to 0", setup_plain, r_perf_pct_zero, "keeps none"},
	{"keep 150%", setup_plain, r_perf_pct_over, "at most 100"},
	{"perforate twice", setup_split, r_perf_twice, "already perforated"},
	{"condense dense loop", setup_plain, r_cond_dense, "it is dense"},
	{"condense m loop", setup_plain, r_cond_m, "iterates over m"},
};

START_TEST(refusal_leaves_ir_untouched)
{
	const Refusal *r = &refusals[_i];
	Pir ir, before;
	r->setup(&ir);
	before = ir;
	PirPrim p = r->prim();
	PirReason why;
	ck_assert_msg(!pir_apply(&ir, &p, &why), "%s: accepted", r->what);
	ck_assert_msg(strstr(why.error, r->expect), "%s: reason '%s' lacks '%s'", r->what, why.error,
	              r->expect);
	ck_assert_msg(memcmp(&ir, &before, sizeof ir) == 0, "%s: IR changed", r->what);
}
END_TEST

/* ---- GPU legality ---- */

START_TEST(gpu_rules)
{
	PirViolation v[8];
	Pir ir = base(64, 64);
	APPLY_OK(&ir, prim_perforate("k", 16));
	ck_assert_int_eq(pir_check_gpu(&ir, v, 8), 0); /* row-balanced: M K^c */
	ir = base(64, 64);
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {4 COMMA 16}, false, -1));
	APPLY_OK(&ir, REORDER({"k0" COMMA "m"}));
	APPLY_OK(&ir, prim_perforate("m", 16)); /* K0 M^c K1: tile-wise horizontal */
	ck_assert_int_eq(pir_check_gpu(&ir, v, 8), 1);
	ck_assert_int_eq(v[0].kind, PIR_VIOL_SPATIAL_IN_REDUCTION);
	ck_assert_str_eq(ir.loops[v[0].outer].name, "k0");
	ir = base(64, 64);
	APPLY_OK(&ir, prim_perforate("m", 16)); /* channel: M^c K, m outermost */
	ck_assert_int_eq(pir_check_gpu(&ir, v, 8), 0);
	ir = base(64, 64);
	APPLY_OK(&ir, JOIN({"m" COMMA "k"}, "mk"));
	ck_assert_int_eq(pir_check_gpu(&ir, v, 8), 1);
	ck_assert_int_eq(v[0].kind, PIR_VIOL_JOIN_MK);
	/* a dense m loop inside a k loop is fine */
	ir = base(64, 64);
	APPLY_OK(&ir, REORDER({"k" COMMA "m"}));
	APPLY_OK(&ir, prim_perforate("k", 3));
	ck_assert_int_eq(pir_check_gpu(&ir, v, 8), 0);
}
END_TEST

/* ---- property test ---- */

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

static PirPrim random_prim(const Pir *ir, int *fresh)
{
	PirPrim p;
	memset(&p, 0, sizeof p);
	const char *loop = ir->loops[rnd((uint32_t)ir->nloops)].name;
	switch (rnd(5)) {
	case 0: {
		p.kind = PIR_PRIM_SPLIT;
		pir_name_copy(p.u.split.loop, rnd(8) ? loop : "nope");
		p.u.split.n = 2 + (int)rnd(2);
		for (int i = 0; i < p.u.split.n; i++) {
			snprintf(p.u.split.names[i], PIR_NAME_MAX, "l%d", (*fresh)++);
			static const int64_t f[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, 32};
			p.u.split.factor[i] = f[rnd(10)];
		}
		p.u.split.pad = rnd(2);
		p.u.split.pad_amount = rnd(3) ? -1 : (int64_t)rnd(40);
		break;
	}
	case 1:
		p.kind = PIR_PRIM_REORDER;
		p.u.reorder.n = 2 + (int)rnd((uint32_t)ir->nloops);
		for (int i = 0; i < p.u.reorder.n; i++)
			pir_name_copy(p.u.reorder.loops[i], ir->loops[rnd((uint32_t)ir->nloops)].name);
		break;
	case 2: {
		p.kind = PIR_PRIM_JOIN;
		int at = (int)rnd((uint32_t)ir->nloops);
		p.u.join.n = 2;
		pir_name_copy(p.u.join.loops[0], ir->loops[at].name);
		pir_name_copy(p.u.join.loops[1], ir->loops[rnd(4) ? (at + 1) % ir->nloops : (int)rnd((uint32_t)ir->nloops)].name);
		snprintf(p.u.join.name, PIR_NAME_MAX, "j%d", (*fresh)++);
		break;
	}
	case 3:
		p.kind = PIR_PRIM_PERFORATE;
		pir_name_copy(p.u.perforate.loop, loop);
		if (rnd(2)) {
			p.u.perforate.is_percent = true;
			p.u.perforate.percent = rnd(2) ? (PirPercent){1 + (int64_t)rnd(110), 0}
			                              : (PirPercent){1 + (int64_t)rnd(11000), 2};
		} else {
			p.u.perforate.keep = (int64_t)rnd(40);
		}
		break;
	default:
		p.kind = PIR_PRIM_CONDENSE;
		pir_name_copy(p.u.condense.loop, loop);
		break;
	}
	return p;
}

START_TEST(random_primitives_property)
{
	rng_state = 20261130;
	int accepted = 0, refused = 0;
	for (int round = 0; round < 400; round++) {
		static const int64_t dims[] = {1, 3, 7, 16, 30, 64, 100, 128, 576, 1000};
		Pir ir = base(dims[rnd(10)], dims[rnd(10)]);
		int fresh = 0;
		for (int step = 0; step < 12; step++) {
			PirPrim p = random_prim(&ir, &fresh);
			Pir before = ir;
			PirReason why;
			char text[512];
			pir_prim_format(&p, text, sizeof text);
			if (!pir_apply(&ir, &p, &why)) {
				refused++;
				ck_assert_msg(why.error[0], "refusal without reason: %s", text);
				ck_assert_msg(memcmp(&ir, &before, sizeof ir) == 0, "refused %s changed the IR",
				              text);
				continue;
			}
			accepted++;
			char bad[256];
			ck_assert_msg(pir_verify(&ir, bad, sizeof bad), "%s: %s", text, bad);
			char *t = pir_print_text(&ir);
			Pir back;
			char err[256];
			ck_assert_msg(pir_read_text(t, &back, 1, err, sizeof err) == 1, "%s\n%s", err, t);
			ck_assert_msg(pir_equal(&ir, &back), "round trip differs after %s:\n%s", text, t);
			char *t2 = pir_print_text(&back);
			ck_assert_str_eq(t, t2);
			free(t);
			free(t2);
		}
	}
	ck_assert_int_gt(accepted, 1000);
	ck_assert_int_gt(refused, 1000);
}
END_TEST

/* keep = round(len * P / 100), halves up, the other way round from
 * perforate.c (no 128 bits): with len = a * hundred + b,
 * len * num / hundred = a * num + b * num / hundred, and b * num < 10^16. */
static int64_t keep_reference(int64_t len, int64_t num, int64_t hundred, bool *exact)
{
	int64_t a = len / hundred, b = len % hundred, bn = b * num;
	*exact = bn % hundred == 0;
	int64_t whole = bn / hundred, rest = bn % hundred;
	return a * num + whole + (2 * rest >= hundred);
}

/* A length-biased random 1..2^31: the bit length first, then the bits. */
static int64_t random_extent(void)
{
	int bits = 1 + (int)rnd(31);
	uint64_t v = ((uint64_t)rnd(1u << 16) << 16 | rnd(1u << 16)) & ((1ull << bits) - 1);
	return rnd(8) == 0 ? PIR_MAX_EXTENT - (int64_t)rnd(3) : 1 + (int64_t)v;
}

/* Percentages of joined loops up to 2^62 iterations: every keep count (and
 * the warning's "rounds to N", and the "keeps none" refusal) agrees with
 * exact arithmetic, halves rounding up; a 64-bit product overflowed here. */
START_TEST(perforate_percent_exact_up_to_2_62)
{
	rng_state = 20261206;
	for (int round = 0; round < 3000; round++) {
		int64_t M = random_extent(), K = random_extent();
		Pir ir = base(M, K);
		APPLY_OK(&ir, JOIN({"m" COMMA "k"}, "mk"));
		int64_t len = ir.loops[0].len;
		ck_assert_int_eq(len, M * K);
		int dec = (int)rnd(7);
		int64_t hundred = 100;
		for (int i = 0; i < dec; i++)
			hundred *= 10;
		int64_t num;
		switch (rnd(4)) {
		case 0: num = hundred / 2; break;                      /* 50% */
		case 1: num = 1 + (int64_t)rnd(hundred < 1000 ? (uint32_t)hundred : 1000); break; /* small */
		case 2: num = hundred - (int64_t)rnd(3); break;        /* near 100% */
		default: num = 1 + (int64_t)rnd((uint32_t)hundred); break;
		}
		bool exact;
		int64_t want = keep_reference(len, num, hundred, &exact);
		PirPrim p = prim_perforate_pct("mk", num, dec);
		PirReason why;
		char text[128];
		pir_prim_format(&p, text, sizeof text);
		if (want < 1) {
			ck_assert_msg(!pir_apply(&ir, &p, &why), "%s of %lld accepted", text, (long long)len);
			ck_assert_ptr_nonnull(strstr(why.error, "keeps none"));
			continue;
		}
		ck_assert_msg(pir_apply(&ir, &p, &why), "%s of %lld: %s", text, (long long)len, why.error);
		ck_assert_msg(ir.loops[0].nnz == want, "%s of %lld keeps %lld, not %lld", text,
		              (long long)len, (long long)ir.loops[0].nnz, (long long)want);
		if (want == len) {
			ck_assert_ptr_nonnull(strstr(why.warning, "stays dense"));
		} else if (!exact) {
			char says[64];
			snprintf(says, sizeof says, "rounds to %lld (", (long long)want);
			const char *at = strstr(why.warning, says);
			ck_assert_msg(at, "%s of %lld: %s", text, (long long)len, why.warning);
			double shown = strtod(at + strlen(says), NULL);
			double real = 100.0 * (double)want / (double)len;
			const char *dot = strchr(at + strlen(says), '.'), *dots = strstr(at, "...");
			if (dots && dot) { /* exact digits, cut: below by less than their last one */
				double ulp = pow(10, -(double)(dots - dot - 1));
				ck_assert_msg(shown <= real * (1 + 1e-15) && real - shown < ulp + 1e-15 * real,
				              "%s", why.warning);
			} else {
				ck_assert_msg(fabs(shown - real) <= 1e-5 * real, "%s", why.warning);
			}
			/* it shows the change: not the request again, as %g would */
			char asked[64], g[64], *end = strstr(at, "%)");
			ck_assert_ptr_nonnull(end);
			pir_percent_format(p.u.perforate.percent, asked, sizeof asked);
			snprintf(g, sizeof g, "%.6g", strtod(asked, NULL));
			*end = 0;
			ck_assert_msg(strcmp(at + strlen(says), asked) != 0 && strcmp(at + strlen(says), g) != 0,
			              "%s%%)", why.warning);
		} else {
			ck_assert_str_eq(why.warning, "");
		}
	}
	/* halves round up at the largest odd length: (2^31 - 1)^2 * 50% */
	Pir ir = base(PIR_MAX_EXTENT - 1, PIR_MAX_EXTENT - 1);
	APPLY_OK(&ir, JOIN({"m" COMMA "k"}, "mk"));
	PirPrim p = prim_perforate_pct("mk", 50, 0);
	PirReason why;
	ck_assert(pir_apply(&ir, &p, &why));
	ck_assert_int_eq(ir.loops[0].nnz, (ir.loops[0].len + 1) / 2);
	/* a share %g would print as the request itself is written out exactly */
	ck_assert_str_eq(why.warning, "keep 50% of 4611686014132420609 iterations of 'mk' rounds to "
	                              "2305843007066210305 (50.0000000000000000108...%)");
}
END_TEST

static Suite *passes_suite(void)
{
	Suite *s = suite_create("passes");
	TCase *tc = tcase_create("primitives");
	tcase_add_test(tc, split_with_padding);
	tcase_add_test(tc, split_infers_wildcard);
	tcase_add_test(tc, reorder_partial_takes_listed_positions);
	tcase_add_test(tc, join_merges_contiguous_components);
	tcase_add_test(tc, join_mixed_axes_and_split_again);
	tcase_add_test(tc, perforate_percent_rounds_and_warns);
	tcase_add_test(tc, condense_marks_perforated_k_loop);
	tcase_add_loop_test(tc, refusal_leaves_ir_untouched, 0,
	                    (int)(sizeof refusals / sizeof refusals[0]));
	tcase_add_test(tc, gpu_rules);
	suite_add_tcase(s, tc);
	TCase *prop = tcase_create("property");
	tcase_set_timeout(prop, 60);
	tcase_add_test(prop, random_primitives_property);
	tcase_add_test(prop, perforate_percent_exact_up_to_2_62);
	suite_add_tcase(s, prop);
	return s;
}

int main(void) { return run_suite(passes_suite()); }
