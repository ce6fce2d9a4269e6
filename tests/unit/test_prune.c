/* SPDX-License-Identifier: MIT */
/* test_prune.c - masks, packing and metrics.
 *
 * The greedy mask is checked against an independent brute force that
 * follows the definition literally (enumerate every assignment of loop
 * values, rank candidates by summing over every inner assignment) on
 * hundreds of random small patterns, with both rankings; hand-checked masks
 * cover 2:4, block, tile-wise, channel-wise and the hybrid; packing must
 * round-trip exactly; the float64 check of a kernel's result
 * (prune_check_error) passes exact products and fails wrong, NaN or
 * unrounded ones.
 */
#include "testutil.h"
#include "prune/prune.h"
#include "frontend/frontend.h"

#include <math.h>

#define COMMA ,

/* ---- brute force, straight from the definition ---- */

typedef struct Brute {
	const Pir *ir;
	const float *imp;
	int64_t M, K;
	PatRank rank;
} Brute;

static double imp_at(const Brute *b, const int64_t *v)
{
	int64_t c[2] = {0, 0};
	for (int i = 0; i < b->ir->nloops; i++) {
		const PirLoop *l = &b->ir->loops[i];
		int64_t rest = v[i];
		for (int j = l->ncomp - 1; j >= 0; j--) {
			c[l->comp[j].axis] += (rest % l->comp[j].extent) * l->comp[j].stride;
			rest /= l->comp[j].extent;
		}
	}
	return c[0] < b->M && c[1] < b->K ? b->imp[c[0] * b->K + c[1]] : 0.0;
}

static double surviving(const Brute *b, int64_t *v, int j);

/* Score of candidate c of loop p under prefix v[0..p-1]. */
static double score(const Brute *b, int64_t *v, int p, int64_t c)
{
	v[p] = c;
	if (b->rank == PAT_RANK_LOOKAHEAD)
		return surviving(b, v, p + 1);
	/* total: every inner assignment */
	if (p + 1 == b->ir->nloops)
		return imp_at(b, v);
	double s = 0;
	for (int64_t x = 0; x < b->ir->loops[p + 1].len; x++) {
		v[p + 1] = x;
		Brute dense = *b;
		dense.rank = PAT_RANK_TOTAL;
		s += score(&dense, v, p + 1, x);
	}
	return s;
}

/* The chosen set of loop p under prefix v[0..p-1], as flags. */
static void chosen(const Brute *b, int64_t *v, int p, bool *keep)
{
	const PirLoop *l = &b->ir->loops[p];
	double sc[64];
	int64_t save[PIR_MAX_LOOPS];
	memcpy(save, v, sizeof save);
	for (int64_t c = 0; c < l->len; c++) {
		sc[c] = score(b, v, p, c);
		memcpy(v, save, sizeof save);
	}
	for (int64_t c = 0; c < l->len; c++) {
		int64_t better = 0;
		for (int64_t d = 0; d < l->len; d++)
			better += sc[d] > sc[c] || (sc[d] == sc[c] && d < c);
		keep[c] = better < l->nnz;
	}
}

static double surviving(const Brute *b, int64_t *v, int j)
{
	if (j == b->ir->nloops)
		return imp_at(b, v);
	const PirLoop *l = &b->ir->loops[j];
	bool keep[64];
	if (pir_loop_is_perforated(l))
		chosen(b, v, j, keep);
	double s = 0;
	for (int64_t x = 0; x < l->len; x++) {
		if (pir_loop_is_perforated(l) && !keep[x])
			continue;
		v[j] = x;
		s += surviving(b, v, j + 1);
	}
	return s;
}

/* Dense mask by the definition: an element is kept when at every
 * perforated loop its value is chosen under its own prefix. */
static void brute_mask(const Brute *b, uint8_t *mask)
{
	const Pir *ir = b->ir;
	int64_t v[PIR_MAX_LOOPS] = {0}, total = 1;
	for (int i = 0; i < ir->nloops; i++)
		total *= ir->loops[i].len;
	memset(mask, 0, (size_t)(b->M * b->K));
	for (int64_t t = 0; t < total; t++) {
		int64_t rest = t;
		for (int i = ir->nloops - 1; i >= 0; i--) {
			v[i] = rest % ir->loops[i].len;
			rest /= ir->loops[i].len;
		}
		int64_t c[2] = {0, 0};
		for (int i = 0; i < ir->nloops; i++) {
			const PirLoop *l = &ir->loops[i];
			int64_t r = v[i];
			for (int j = l->ncomp - 1; j >= 0; j--) {
				c[l->comp[j].axis] += (r % l->comp[j].extent) * l->comp[j].stride;
				r /= l->comp[j].extent;
			}
		}
		if (c[0] >= b->M || c[1] >= b->K)
			continue;
		bool kept = true;
		for (int p = 0; p < ir->nloops && kept; p++) {
			if (!pir_loop_is_perforated(&ir->loops[p]))
				continue;
			int64_t w[PIR_MAX_LOOPS];
			memcpy(w, v, sizeof w);
			bool keep[64];
			chosen(b, w, p, keep);
			kept = keep[v[p]];
		}
		mask[c[0] * b->K + c[1]] = kept;
	}
}

/* ---- random patterns ---- */

static uint64_t rs; /* the seed of the random cases */
static uint32_t rnd(uint32_t n) { return test_rnd(&rs, n); }
static void random_pattern(Pir *ir) { test_random_pattern(ir, &rs, 12); }

static void random_importance(float *imp, int64_t n, bool ties)
{
	for (int64_t i = 0; i < n; i++)
		imp[i] = ties ? (float)rnd(4) : (float)(rnd(1000000) + 1) / 1000.0f;
}

START_TEST(greedy_matches_brute_force)
{
	rs = 7 + (uint64_t)_i;
	int checked = 0;
	for (int round = 0; round < 200; round++) {
		Pir ir;
		random_pattern(&ir);
		int64_t M = ir.len[0], K = ir.len[1];
		float imp[144];
		random_importance(imp, M * K, round % 3 == 0); /* a third with many ties */
		PatRank rank = _i ? PAT_RANK_LOOKAHEAD : PAT_RANK_TOTAL;
		PruneMask pm;
		prune_mask_build(&ir, imp, M, K, rank, &pm);
		uint8_t got[144], want[144];
		prune_dense_mask(&ir, &pm, M, K, got);
		Brute b = {&ir, imp, M, K, rank};
		brute_mask(&b, want);
		char *text = pir_print_text(&ir);
		ck_assert_msg(memcmp(got, want, (size_t)(M * K)) == 0,
		              "mask differs from the brute force (%s):\n%s", pat_rank_names[rank], text);
		/* packing round-trips exactly, and packs zeros for padding */
		PirMetrics m;
		pir_metrics(&ir, &m);
		float w[144], back[144];
		for (int64_t i = 0; i < M * K; i++)
			w[i] = (float)(i + 1) * 0.5f - 7.25f;
		float *values = malloc((size_t)m.values * sizeof *values);
		prune_pack(&ir, &pm, w, M, K, values);
		prune_unpack(&ir, &pm, values, M, K, back);
		int64_t nonzero = 0;
		for (int64_t i = 0; i < m.values; i++)
			nonzero += values[i] != 0;
		for (int64_t i = 0; i < M * K; i++) {
			float expect = got[i] ? w[i] : 0.0f;
			ck_assert_msg(memcmp(&back[i], &expect, sizeof expect) == 0, "unpack differs:\n%s",
			              text);
			nonzero -= got[i] && w[i] != 0;
		}
		ck_assert_msg(nonzero == 0, "packed values hold weights outside the mask:\n%s", text);
		free(values);
		free(text);
		prune_mask_free(&pm);
		checked++;
	}
	ck_assert_int_eq(checked, 200);
}
END_TEST

/* ---- hand-checked masks ---- */

static void mask_of(Pir *ir, const float *imp, PatRank rank, uint8_t *mask)
{
	PruneMask pm;
	prune_mask_build(ir, imp, ir->len[0], ir->len[1], rank, &pm);
	prune_dense_mask(ir, &pm, ir->len[0], ir->len[1], mask);
	prune_mask_free(&pm);
}

static void expect_mask(const uint8_t *got, const char *want, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == (want[i] == '1'), "position %lld: want %s", (long long)i, want);
}

START_TEST(hand_two_four)
{
	/* 2:4 on one row of 10 (padded to 12): ties go to the lower index */
	Pir ir;
	pir_init(&ir, "nm", 1, 10);
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {0 COMMA 4}, true, -1));
	APPLY_OK(&ir, prim_perforate("k1", 2));
	const float imp[10] = {1, 5, 3, 4, 9, 2, 2, 8, 1, 1};
	uint8_t mask[10];
	mask_of(&ir, imp, PAT_RANK_TOTAL, mask);
	expect_mask(mask, "0101100111", 10); /* last group: 1, 1, pad, pad */
	/* without padding the streaming pass sums the level above itself:
	 * the same masks as the definition, both rankings, ties included */
	for (int rank = 0; rank < 2; rank++)
		for (int up = 0; up < 2; up++) {
			Pir p2;
			pir_init(&p2, "nm", 6, 16);
			APPLY_OK(&p2, SPLIT("k", {"k0" COMMA "k1" COMMA "k2"}, {2 COMMA 2 COMMA 4}, false, -1));
			if (up) /* the level above along m instead */
				APPLY_OK(&p2, REORDER({"k1" COMMA "m"}));
			APPLY_OK(&p2, prim_perforate("k0", 1));
			APPLY_OK(&p2, prim_perforate("k2", 2));
			float w[96];
			rs = 5 + (uint64_t)rank;
			random_importance(w, 96, rank == 1);
			uint8_t got[96], want[96];
			mask_of(&p2, w, (PatRank)rank, got);
			Brute b = {&p2, w, 6, 16, (PatRank)rank};
			brute_mask(&b, want);
			ck_assert_msg(memcmp(got, want, 96) == 0, "rank %d, up %d", rank, up);
		}
}
END_TEST

START_TEST(hand_block)
{
	/* 2x2 blocks of a 4x4, one block kept per block row */
	Pir ir;
	pir_init(&ir, "b", 4, 4);
	APPLY_OK(&ir, SPLIT("m", {"m0" COMMA "m1"}, {2 COMMA 2}, false, -1));
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {2 COMMA 2}, false, -1));
	APPLY_OK(&ir, REORDER({"m0" COMMA "k0" COMMA "m1" COMMA "k1"}));
	APPLY_OK(&ir, prim_perforate("k0", 1));
	const float imp[16] = {1, 1, 5, 0,  1, 1, 0, 0,  /* rows 0-1: blocks 4 | 5 */
	                       9, 0, 1, 1,  0, 0, 1, 1}; /* rows 2-3: 9 | 4 */
	uint8_t mask[16];
	mask_of(&ir, imp, PAT_RANK_TOTAL, mask);
	expect_mask(mask, "0011" "0011" "1100" "1100", 16);
}
END_TEST

START_TEST(hand_tile_and_channel)
{
	/* tile-wise vertical: tiles of 2 rows keep 1 column each */
	Pir ir;
	pir_init(&ir, "tv", 4, 3);
	APPLY_OK(&ir, SPLIT("m", {"m0" COMMA "m1"}, {2 COMMA 2}, false, -1));
	APPLY_OK(&ir, REORDER({"m0" COMMA "k" COMMA "m1"}));
	APPLY_OK(&ir, prim_perforate("k", 1));
	const float imp[12] = {1, 9, 1,  1, 0, 1,   /* tile 0 columns: 2, 9, 2 */
	                       3, 1, 1,  0, 1, 4};  /* tile 1 columns: 3, 2, 5 */
	uint8_t mask[12];
	mask_of(&ir, imp, PAT_RANK_TOTAL, mask);
	expect_mask(mask, "010" "010" "001" "001", 12);
	/* channel-wise: keep the 2 strongest of 4 output rows */
	pir_init(&ir, "ch", 4, 3);
	APPLY_OK(&ir, prim_perforate("m", 2));
	mask_of(&ir, imp, PAT_RANK_TOTAL, mask); /* row sums 11, 2, 5, 5: tie -> row 2 */
	expect_mask(mask, "111" "000" "111" "000", 12);
}
END_TEST

START_TEST(hand_hybrid_total_vs_lookahead)
{
	/* one row, two blocks of 4, one block kept, 2:4 inside.  Block A =
	 * [10 0 0 0] (total 10, 10 survives 2:4), block B = [4 4 4 0] (total
	 * 12, 8 survives): the paper's rule keeps B, lookahead keeps A. */
	Pir ir;
	pir_init(&ir, "h", 1, 8);
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {2 COMMA 4}, false, -1));
	APPLY_OK(&ir, prim_perforate("k0", 1));
	APPLY_OK(&ir, prim_perforate("k1", 2));
	const float imp[8] = {10, 0, 0, 0, 4, 4, 4, 0};
	uint8_t mask[8];
	mask_of(&ir, imp, PAT_RANK_TOTAL, mask);
	expect_mask(mask, "00001100", 8);
	mask_of(&ir, imp, PAT_RANK_LOOKAHEAD, mask);
	expect_mask(mask, "11000000", 8);
}
END_TEST

/* Fig. 6 storage: I0_4 J0_4^2 I1_4^2 J1_4 on a 16x16 weight whose
 * importance is w = 16 m + k + 1: the right halves win everywhere. */
START_TEST(fig6_layout)
{
	Pir ir = fig6_ir();
	float w[256];
	for (int i = 0; i < 256; i++)
		w[i] = (float)(i + 1);
	PruneMask pm;
	prune_mask_build(&ir, w, 16, 16, PAT_RANK_TOTAL, &pm);
	ck_assert_int_eq(pm.rows[1], 4);  /* J0 index [4, 2] */
	ck_assert_int_eq(pm.rows[2], 8);  /* I1 index [8, 2]: 16 entries */
	for (int r = 0; r < 4; r++) {     /* every row tile keeps column tiles 2 and 3 */
		ck_assert_int_eq(pm.index[1][r * 2], 2);
		ck_assert_int_eq(pm.index[1][r * 2 + 1], 3);
	}
	for (int r = 0; r < 8; r++) {     /* and rows 2, 3 of each tile */
		ck_assert_int_eq(pm.index[2][r * 2], 2);
		ck_assert_int_eq(pm.index[2][r * 2 + 1], 3);
	}
	float values[64];
	prune_pack(&ir, &pm, w, 16, 16, values);
	/* values [4, 2, 2, 4]: first = i0 0, j0 -> 2, i1 -> 2, j1 0: m 2, k 8 */
	ck_assert(values[0] == 16 * 2 + 8 + 1);
	ck_assert(values[63] == 16 * 15 + 15 + 1);
	prune_mask_free(&pm);
}
END_TEST

START_TEST(top_sum_and_metrics)
{
	float v[1000];
	for (int i = 0; i < 1000; i++)
		v[i] = (float)((i * 7919) % 1000);
	/* the 10 largest are 990..999 */
	ck_assert(fabs(prune_top_sum(v, 1000, 10) - 9945.0) < 1e-9);
	ck_assert(prune_top_sum(v, 1000, 0) == 0);
	ck_assert(fabs(prune_top_sum(v, 1000, 1000) - 499500.0) < 1e-9);
	float same[8] = {2, 2, 2, 2, 1, 1, 0, 0};
	ck_assert(fabs(prune_top_sum(same, 8, 3) - 6.0) < 1e-12);
	ck_assert(fabs(prune_top_sum(same, 8, 5) - 9.0) < 1e-12);
	/* the shared bound structure agrees with the one-off selection and
	 * with a sort, on values spread over many buckets */
	static float big[20000];
	rs = 99;
	for (int i = 0; i < 20000; i++)
		big[i] = (float)rnd(1000000) * 1e-3f * (float)(1 + rnd(3) * 1000);
	PruneBound b;
	prune_bound_init(&b, big, 20000);
	for (int64_t c = 0; c <= 20000; c += 997) {
		double want = prune_top_sum(big, 20000, c);
		ck_assert_msg(fabs(prune_bound_top(&b, c) - want) <= 1e-9 * (want + 1), "count %lld",
		              (long long)c);
	}
	prune_bound_free(&b);

	Pir ir;
	pir_init(&ir, "u", 1, 8);
	APPLY_OK(&ir, prim_perforate("k", 2));
	const float w[8] = {-1, 2, -3, 4, 0, 0, 1, 0};
	float imp[8];
	prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, 1, 8, imp);
	PruneMask pm;
	prune_mask_build(&ir, imp, 1, 8, PAT_RANK_TOTAL, &pm);
	PruneMetrics m;
	prune_metrics(&ir, &pm, imp, NULL, w, NULL, 0, 1, 8, &m);
	ck_assert_int_eq(m.nkept, 2);
	ck_assert(fabs(m.retained - 7.0 / 11.0) < 1e-12);
	ck_assert(fabs(m.bound_retained - 7.0 / 11.0) < 1e-12); /* row-balanced on one row */
	ck_assert(fabs(m.loss_over_bound) < 1e-12);
	ck_assert(!m.has_output_error);
	/* output error against a hand computation: X = I (8 tokens), so
	 * ||X D^T|| / ||X W^T|| = ||pruned weights|| / ||w|| */
	float x[64] = {0};
	for (int i = 0; i < 8; i++)
		x[i * 8 + i] = 1;
	prune_metrics(&ir, &pm, imp, NULL, w, x, 8, 1, 8, &m);
	ck_assert(m.has_output_error);
	ck_assert(fabs(m.output_error - sqrt(1.0 + 4.0 + 1.0) / sqrt(31.0)) < 1e-6);
	prune_mask_free(&pm);
}
END_TEST

START_TEST(importance_kinds)
{
	const float w[4] = {-2, 1, 3, -1};     /* 2 x 2 */
	const float x[6] = {1, 0, 1, 2, 1, 2}; /* 3 tokens x 2: column norms sqrt 3, sqrt 8 */
	float imp[4];
	/* l2 and wanda are scaled by one power of two (importance.c): ratios */
	prune_importance(PAT_IMP_L2, w, NULL, NULL, 0, 2, 2, imp);
	ck_assert(imp[0] == 4 * imp[3] && imp[1] == imp[3] && imp[2] == 9 * imp[3]);
	ck_assert(imp[2] >= 0x1p62f && imp[2] < 0x1p64f);
	prune_importance(PAT_IMP_WANDA, w, NULL, x, 3, 2, 2, imp);
	ck_assert(fabs(imp[0] / imp[1] - 2 * sqrt(3.0) / sqrt(8.0)) < 1e-6);
	ck_assert(fabs(imp[2] / imp[1] - 3 * sqrt(3.0) / sqrt(8.0)) < 1e-6);
	const float s[4] = {0.5f, -0.0f, 2, 1};
	prune_importance(PAT_IMP_TENSOR, w, s, NULL, 0, 2, 2, imp);
	ck_assert(imp[0] == 0.5f && imp[2] == 2 && !signbit(imp[1]));
}
END_TEST

/* Scores of tiny and huge weights (issue 42): w*w of 1e-30 underflowed
 * float32 to 0, so l2 tied weights that differ and kept the lower index;
 * wanda's |w| ||X_k|| sank or overflowed the same way.  Now l2 keeps what
 * magnitude keeps on element-wise patterns (w*w ranks as |w|), and the
 * retained importance and its bound match float64 sums: exactly (1e-12)
 * where the squares are exact in float32 (12-bit weights), to float32's
 * rounding of each score (2^-24) otherwise. */
static void tiny_weights(float *w, int64_t n, int bits)
{
	for (int64_t i = 0; i < n; i++) {
		/* 1e-30..1e-25: 2^-99.7..2^-83 */
		const int e = -99 + (int)rnd(16);
		const uint32_t mant = (1u << (bits - 1)) | rnd(1u << (bits - 1));
		w[i] = ldexpf((float)mant, e - bits);
		if (rnd(2))
			w[i] = -w[i];
	}
}

static int cmp_double_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x < y) - (x > y);
}

static void float64_metrics(const float *w, const uint8_t *mask, int64_t n, double *r, double *ru)
{
	double total = 0, kept = 0;
	int64_t nkept = 0;
	double *sq = malloc((size_t)n * sizeof *sq);
	for (int64_t i = 0; i < n; i++) {
		sq[i] = (double)w[i] * w[i];
		total += sq[i];
		if (mask[i])
			kept += sq[i], nkept++;
	}
	qsort(sq, (size_t)n, sizeof *sq, cmp_double_desc);
	double top = 0;
	for (int64_t i = 0; i < nkept; i++)
		top += sq[i];
	free(sq);
	*r = kept / total;
	*ru = top / total;
}

START_TEST(scores_tiny_and_huge)
{
	rs = 42;
	enum { M = 16, K = 64, N = M * K };
	Pir nm, rows;
	pir_init(&nm, "nm", M, K);
	APPLY_OK(&nm, SPLIT("k", {"k0" COMMA "k1"}, {0 COMMA 4}, false, -1));
	APPLY_OK(&nm, prim_perforate("k1", 2));
	pir_init(&rows, "rows", M, K);
	APPLY_OK(&rows, prim_perforate("k", 7));
	Pir *pats[] = {&nm, &rows};
	float *w = malloc(N * sizeof *w), *imp = malloc(N * sizeof *imp), *mag = malloc(N * sizeof *mag);
	uint8_t *ml2 = malloc(N), *mmag = malloc(N);
	for (int bits = 12; bits <= 24; bits += 12)
		for (int p = 0; p < 2; p++) {
			tiny_weights(w, N, bits);
			prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, mag);
			prune_importance(PAT_IMP_L2, w, NULL, NULL, 0, M, K, imp);
			for (int64_t i = 0; i < N; i++)
				ck_assert(imp[i] > 0);
			mask_of(pats[p], mag, PAT_RANK_LOOKAHEAD, mmag);
			mask_of(pats[p], imp, PAT_RANK_LOOKAHEAD, ml2);
			ck_assert_msg(memcmp(ml2, mmag, N) == 0, "l2 and magnitude differ (%d bits)", bits);
			PruneMask pm;
			prune_mask_build(pats[p], imp, M, K, PAT_RANK_LOOKAHEAD, &pm);
			PruneMetrics m;
			prune_metrics(pats[p], &pm, imp, NULL, w, NULL, 0, M, K, &m);
			prune_mask_free(&pm);
			double r, ru;
			float64_metrics(w, ml2, N, &r, &ru);
			const double tol = bits == 12 ? 1e-12 : 1.2e-7; /* squares exact, or each rounded */
			ck_assert_msg(fabs(m.retained - r) <= tol * r, "R %.17g, float64 %.17g", m.retained, r);
			ck_assert_msg(fabs(m.bound_retained - ru) <= tol * ru, "R_u %.17g, float64 %.17g",
			              m.bound_retained, ru);
			ck_assert(m.loss_over_bound >= -1e-15);
		}
	/* wanda: equal column norms rank as magnitude; weights of 1e-30 with
	 * activations of 1e-20 (product 1e-50) and 1e30 with 1e20 (1e50) */
	float x[2 * K];
	for (int scale = 0; scale < 2; scale++) {
		tiny_weights(w, N, 24);
		for (int64_t i = 0; i < N && scale; i++)
			w[i] = ldexpf(w[i], 200);
		for (int64_t i = 0; i < 2 * K; i++)
			x[i] = scale ? 1e20f : 1e-20f;
		prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, mag);
		prune_importance(PAT_IMP_WANDA, w, NULL, x, 2, M, K, imp);
		for (int64_t i = 0; i < N; i++)
			ck_assert(imp[i] > 0 && isfinite(imp[i]));
		mask_of(&nm, mag, PAT_RANK_LOOKAHEAD, mmag);
		mask_of(&nm, imp, PAT_RANK_LOOKAHEAD, ml2);
		ck_assert_msg(memcmp(ml2, mmag, N) == 0, "wanda and magnitude differ");
	}
	/* l2 of 1e18..1e23 (once past float32's range) is finite, and ranks as |w| */
	tiny_weights(w, N, 24);
	for (int64_t i = 0; i < N; i++)
		w[i] = ldexpf(w[i], 160);
	prune_importance(PAT_IMP_L2, w, NULL, NULL, 0, M, K, imp);
	prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, mag);
	for (int64_t i = 0; i < N; i++)
		ck_assert(isfinite(imp[i]));
	mask_of(&rows, mag, PAT_RANK_LOOKAHEAD, mmag);
	mask_of(&rows, imp, PAT_RANK_LOOKAHEAD, ml2);
	ck_assert(memcmp(ml2, mmag, N) == 0);
	free(w), free(imp), free(mag), free(ml2), free(mmag);
}
END_TEST

/* Every stdlib pattern (the PatternIR goldens, with padding) on seeded
 * weights: unpack(pack(W)) is exactly W on the mask and 0 elsewhere, and the
 * mask keeps what the packed shape says. */
START_TEST(stdlib_round_trip)
{
	const char *data = getenv("PATC_TEST_DATA");
	ck_assert_ptr_nonnull(data);
	static const char *const files[] = {"stdlib_block.pat", "stdlib_nm.pat", "stdlib_tile.pat",
	                                    "stdlib_channel.pat", "stdlib_elementwise.pat",
	                                    "stdlib_hybrid.pat", "fig6.pat", "fig8.pat", "language.pat"};
	int checked = 0;
	for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/golden/pir/%s", data, files[f]);
		Arena arena;
		arena_init(&arena);
		Program prog;
		ck_assert_int_eq(compile_quiet(path, NULL, &arena, &prog), 0);
		for (int i = 0; i < prog.nops; i++) {
			const OpResult *op = &prog.ops[i];
			int64_t M = op->shape.M, K = op->shape.K, n = M * K;
			float *w = malloc((size_t)n * sizeof *w), *imp = malloc((size_t)n * sizeof *imp);
			float *back = malloc((size_t)n * sizeof *back);
			uint8_t *mask = malloc((size_t)n);
			synth_weights(w, M, K, (uint64_t)i + 1, SYNTH_HEADS, 16);
			prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, M, K, imp);
			PruneMask pm;
			prune_mask_build(op->ir, imp, M, K, PAT_RANK_LOOKAHEAD, &pm);
			PirMetrics m;
			pir_metrics(op->ir, &m);
			float *values = malloc((size_t)m.values * sizeof *values);
			prune_pack(op->ir, &pm, w, M, K, values);
			prune_unpack(op->ir, &pm, values, M, K, back);
			prune_dense_mask(op->ir, &pm, M, K, mask);
			int64_t kept = 0;
			for (int64_t j = 0; j < n; j++) {
				float expect = mask[j] ? w[j] : 0.0f;
				ck_assert_msg(memcmp(&back[j], &expect, 4) == 0, "%s: op %s", files[f], op->name);
				kept += mask[j];
			}
			/* every packed slot is a kept weight or padding */
			ck_assert_int_le(kept, m.values);
			/* the kept importance the lookahead pass sums on the way agrees
			 * with a walk over the kept weights */
			double walked;
			int64_t nwalked;
			prune_kept_sum(op->ir, &pm, imp, M, K, &walked, &nwalked);
			ck_assert(pm.has_kept);
			ck_assert_msg(fabs(pm.kept - walked) <= 1e-9 * (walked + 1), "%s: op %s", files[f],
			              op->name);
			ck_assert_int_eq(nwalked, kept);
			PruneMetrics met;
			prune_metrics(op->ir, &pm, imp, NULL, w, NULL, 0, M, K, &met);
			ck_assert_int_eq(met.nkept, kept);
			ck_assert(fabs(met.kept - walked) <= 1e-9 * (walked + 1));
			/* and so does the total ranking's own running sum */
			PruneMask pt;
			prune_mask_build(op->ir, imp, M, K, PAT_RANK_TOTAL, &pt);
			prune_kept_sum(op->ir, &pt, imp, M, K, &walked, &nwalked);
			ck_assert(pt.has_kept);
			ck_assert_msg(fabs(pt.kept - walked) <= 1e-9 * (walked + 1), "%s: op %s (total)",
			              files[f], op->name);
			prune_mask_free(&pt);
			if (m.pad[0] == 0 && m.pad[1] == 0)
				ck_assert_int_eq(kept, m.values);
			free(values);
			prune_mask_free(&pm);
			free(w), free(imp), free(back), free(mask);
			checked++;
		}
		arena_free(&arena);
	}
	ck_assert_int_ge(checked, 15);
}
END_TEST

/* prune_check_error: exact products pass in both layouts, all columns or
 * a sample; a wrong or NaN element in a sampled column fails; 16-bit
 * inputs are compared with the product of their rounded values. */
START_TEST(check_error)
{
	enum { M = 13, K = 37, N = 70 };
	float w[M * K], x[K * N], c[M * N], cn[N * M];
	uint64_t st = 12345;
	for (int i = 0; i < M * K; i++)
		st = st * 6364136223846793005ULL + 1442695040888963407ULL, w[i] = (float)((int)(st >> 40) % 2001 - 1000) / 997;
	for (int i = 0; i < K * N; i++)
		st = st * 6364136223846793005ULL + 1442695040888963407ULL, x[i] = (float)((int)(st >> 40) % 2001 - 1000) / 991;
	for (int i = 0; i < M * K; i += 3)
		w[i] = 0; /* the masked weight */
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double a = 0;
			for (int k = 0; k < K; k++)
				a += (double)w[m * K + k] * x[k * N + n];
			c[m * N + n] = (float)a, cn[n * M + m] = (float)a;
		}
	float xt[N * K]; /* X in layout nk: N x K */
	for (int k = 0; k < K; k++)
		for (int n = 0; n < N; n++)
			xt[n * K + k] = x[k * N + n];
	ck_assert_double_lt(prune_check_error(w, x, c, M, K, N, true, PAT_F32, 0), 1e-7);
	ck_assert_double_lt(prune_check_error(w, x, c, M, K, N, true, PAT_F32, 8), 1e-7);
	ck_assert_double_lt(prune_check_error(w, xt, cn, M, K, N, false, PAT_F32, 8), 1e-7);
	/* column 69 is the last of any sample, column 1 of none of 8 */
	c[5 * N + 69] += 0.05f;
	ck_assert_double_gt(prune_check_error(w, x, c, M, K, N, true, PAT_F32, 8), 1e-4);
	c[5 * N + 69] -= 0.05f, c[5 * N + 1] += 0.05f;
	ck_assert_double_lt(prune_check_error(w, x, c, M, K, N, true, PAT_F32, 8), 1e-6);
	ck_assert_double_gt(prune_check_error(w, x, c, M, K, N, true, PAT_F32, 0), 1e-4);
	cn[0] = NAN;
	ck_assert(isnan(prune_check_error(w, xt, cn, M, K, N, false, PAT_F32, 8)));
	/* bf16: C is the product of the rounded inputs; each input is rounded
	 * by the check (the other given rounded already), and unrounded it
	 * does not pass */
	float wr[M * K], xr[K * N];
	for (int i = 0; i < M * K; i++)
		wr[i] = bf16_to_f32(f32_to_bf16(w[i]));
	for (int i = 0; i < K * N; i++)
		xr[i] = bf16_to_f32(f32_to_bf16(x[i]));
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double a = 0;
			for (int k = 0; k < K; k++)
				a += (double)wr[m * K + k] * xr[k * N + n];
			c[m * N + n] = (float)a;
		}
	ck_assert_double_lt(prune_check_error(w, xr, c, M, K, N, true, PAT_BF16, 0), 1e-7);
	ck_assert_double_gt(prune_check_error(w, xr, c, M, K, N, true, PAT_F32, 0), 1e-4);
	ck_assert_double_lt(prune_check_error(wr, x, c, M, K, N, true, PAT_BF16, 0), 1e-7);
	ck_assert_double_gt(prune_check_error(wr, x, c, M, K, N, true, PAT_F32, 0), 1e-4);
}
END_TEST

static Suite *prune_suite(void)
{
	Suite *s = suite_create("prune");
	TCase *tc = tcase_create("masks");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, greedy_matches_brute_force, 0, 2); /* total, lookahead */
	tcase_add_test(tc, hand_two_four);
	tcase_add_test(tc, hand_block);
	tcase_add_test(tc, hand_tile_and_channel);
	tcase_add_test(tc, hand_hybrid_total_vs_lookahead);
	tcase_add_test(tc, fig6_layout);
	tcase_add_test(tc, top_sum_and_metrics);
	tcase_add_test(tc, importance_kinds);
	tcase_add_test(tc, scores_tiny_and_huge);
	tcase_add_test(tc, stdlib_round_trip);
	tcase_add_test(tc, check_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(prune_suite()); }
