/* SPDX-License-Identifier: MIT */
/* test_nest.c - unit tests for lower/nest.c: the facts of a kernel's nest
 * (the k run, the m loop above it, the perforations, the storage digits)
 * checked against brute force written here, on every stdlib pattern
 * applied to a few op shapes and on seeded random patterns.  The storage
 * digits are checked against the packer itself: walking every storage
 * index, decoding it, mapping the digits through the mask's index arrays
 * and adding the loops' offsets must reach every kept weight of the mask
 * exactly once (and only padding besides). */
#include "testutil.h"
#include "lower/nest.h"
#include "prune/prune.h"

#include <dirent.h>

#define COMMA ,
/* An assertion for the hot loops: Check records every passing ck_assert
 * (a write each), which over every storage index costs minutes. */
#define EXPECT(cond, ...)                                                                       \
	do {                                                                                    \
		if (!(cond))                                                                    \
			ck_abort_msg(__VA_ARGS__);                                              \
	} while (0)

/* ---- brute force ---- */

static bool has_m(const PirLoop *l)
{
	for (int j = 0; j < l->ncomp; j++)
		if (l->comp[j].axis == PIR_AXIS_M)
			return true;
	return false;
}

static bool perforated(const PirLoop *l) { return l->nnz != l->len; }

static bool plain(const PirLoop *l, PirAxis a) { return l->ncomp == 1 && l->comp[0].axis == a && !perforated(l); }

/* The facts nest_of gives, each from its definition. */
static void check_facts(const Pir *ir, const Nest *nest, const char *what)
{
	const int n = ir->nloops;
	ck_assert_int_eq(nest->nloops, n);
	ck_assert_ptr_eq(nest->ir, ir);
	/* split: the smallest s with no m in loops s..n-1 */
	int split = 0;
	for (int s = n; s >= 0; s--) {
		bool none = true;
		for (int i = s; i < n; i++)
			none &= !has_m(&ir->loops[i]);
		if (none)
			split = s;
	}
	ck_assert_msg(nest->split == split, "%s: split %d, not %d", what, nest->split, split);
	int64_t kept = 1, len = 1;
	bool dense = split < n;
	for (int i = split; i < n; i++)
		kept *= ir->loops[i].nnz, len *= ir->loops[i].len, dense &= !perforated(&ir->loops[i]);
	ck_assert_int_eq(nest->run_kept, kept);
	ck_assert_int_eq(nest->run_len, len);
	ck_assert_msg(nest->run_dense == dense, "%s: run_dense", what);
	const bool shared = dense || (split < n && !perforated(&ir->loops[split]) && kept * 2 >= len);
	ck_assert_msg(nest->run_shared == shared, "%s: run_shared", what);
	/* the m loop above the run and the loops above it */
	const int mloop = split > 0 && plain(&ir->loops[split - 1], PIR_AXIS_M) ? split - 1 : -1;
	ck_assert_msg(nest->mloop == mloop, "%s: mloop %d, not %d", what, nest->mloop, mloop);
	bool after = mloop >= 0;
	for (int i = mloop + 1; after && i < n; i++)
		after = !perforated(&ir->loops[i]);
	ck_assert_msg(nest->mloop_shares_k == after, "%s: mloop_shares_k", what);
	int m_above = -1, k_above = -1;
	for (int i = 0; mloop >= 0 && i < mloop; i++)
		if (has_m(&ir->loops[i]))
			m_above = i;
	for (int i = 0; i < split - 1; i++)
		if (!has_m(&ir->loops[i]))
			k_above = i;
	ck_assert_int_eq(nest->m_above, m_above);
	ck_assert_int_eq(nest->k_above, k_above);
	const bool minner = n >= 2 && plain(&ir->loops[n - 1], PIR_AXIS_M) && !has_m(&ir->loops[n - 2]);
	ck_assert_msg(nest->minner == minner, "%s: minner", what);
	/* perforations */
	int nperf = 0, last = -1;
	bool m_dense = true;
	for (int i = 0; i < n; i++)
		if (perforated(&ir->loops[i]))
			nperf++, last = i, m_dense &= !has_m(&ir->loops[i]);
	ck_assert_int_eq(nest->nperf, nperf);
	ck_assert_int_eq(nest->last_perf, last);
	ck_assert(nest->m_dense == m_dense);
	for (int i = 0; i <= n; i++) {
		int j = i;
		while (j < n && !perforated(&ir->loops[j]))
			j++;
		EXPECT(nest->next_perf[i] == j, "%s: next_perf[%d]", what, i);
	}
	/* the tail: from the innermost loop outwards while the loops have no
	 * m, through the first perforated one */
	int tail = n;
	while (tail > 0 && !has_m(&ir->loops[tail - 1])) {
		tail--;
		if (perforated(&ir->loops[tail]))
			break;
	}
	ck_assert_msg(nest->tail == tail, "%s: tail %d, not %d", what, nest->tail, tail);
	/* products */
	for (int a = 0; a <= n; a++)
		for (int b = a; b <= n; b++) {
			int64_t pk = 1, pl = 1;
			for (int i = a; i < b; i++)
				pk *= ir->loops[i].nnz, pl *= ir->loops[i].len;
			EXPECT(nest_kept(nest, a, b) == pk && nest_len(nest, a, b) == pl, "%s: products over %d..%d", what,
			       a, b);
		}
	ck_assert_int_eq(nest_kept(nest, 3, 1), 1);
	PirMetrics pm;
	pir_metrics(ir, &pm);
	ck_assert_int_eq(nest->nstored, pm.values);
}

/* The storage digits: every storage index decodes to the next digits of an
 * odometer over the loops' nnz (innermost fastest) and encodes back; the
 * digits, through the index arrays of a mask of ir, reach each kept weight
 * once and nothing else but padding. */
static void check_storage(const Pir *ir, const Nest *nest, int64_t M, int64_t K, uint64_t *st, const char *what)
{
	const int n = ir->nloops;
	float *imp = calloc((size_t)(M * K), sizeof *imp);
	uint8_t *mask = malloc((size_t)(M * K)), *seen = calloc((size_t)(M * K), 1);
	for (int64_t i = 0; i < M * K; i++)
		imp[i] = (float)test_rnd(st, 1000);
	PruneMask pm;
	prune_mask_build(ir, imp, M, K, PAT_RANK_LOOKAHEAD, &pm);
	prune_dense_mask(ir, &pm, M, K, mask);
	int64_t odo[PIR_MAX_LOOPS] = {0}, d[PIR_MAX_LOOPS], real = 0;
	for (int64_t row = 0; row < nest->nstored; row++) {
		nest_decode(nest, row, d);
		for (int i = 0; i < n; i++)
			EXPECT(d[i] == odo[i], "%s: row %lld, loop %d", what, (long long)row, i);
		EXPECT(nest_encode(nest, d) == row, "%s: row %lld encodes back", what, (long long)row);
		int64_t m = 0, k = 0;
		for (int i = 0; i < n; i++) {
			const PirLoop *l = &ir->loops[i];
			/* the index array of loop i is indexed by the prefix over 0..i */
			int64_t prefix = 0;
			for (int j = 0; j <= i; j++)
				prefix = prefix * ir->loops[j].nnz + d[j];
			EXPECT(prefix == row / nest->stride[i], "%s: prefix of loop %d", what, i);
			int64_t v = pm.index[i] ? pm.index[i][prefix] : d[i];
			EXPECT(v >= 0 && v < l->len, "%s: index of loop %d", what, i);
			for (int j = l->ncomp - 1; j >= 0; j--) {
				const int64_t digit = v % l->comp[j].extent;
				v /= l->comp[j].extent;
				*(l->comp[j].axis == PIR_AXIS_M ? &m : &k) += digit * l->comp[j].stride;
			}
		}
		EXPECT(m < ir->ext[PIR_AXIS_M] && k < ir->ext[PIR_AXIS_K], "%s: row %lld out of the extents", what,
		       (long long)row);
		if (m < M && k < K) {
			EXPECT(mask[m * K + k] && !seen[m * K + k], "%s: (%lld, %lld)", what, (long long)m, (long long)k);
			seen[m * K + k] = 1;
			real++;
		}
		for (int i = n - 1; i >= 0 && ++odo[i] == ir->loops[i].nnz; i--)
			odo[i] = 0;
	}
	int64_t kept = 0;
	for (int64_t i = 0; i < M * K; i++)
		kept += mask[i];
	ck_assert_int_eq(real, kept);
	prune_mask_free(&pm);
	free(imp), free(mask), free(seen);
}

static void check_pir(const Pir *ir, int64_t M, int64_t K, uint64_t *st, const char *what)
{
	Nest nest;
	nest_of(ir, &nest);
	check_facts(ir, &nest, what);
	check_storage(ir, &nest, M, K, st, what);
}

/* ---- every stdlib pattern ---- */

/* Each pattern of the standard library at least once (pattern_names
 * checks), with what lower_path's and the GPU's rules see in it. */
static const struct {
	const char *apply;
	bool run_dense, run_shared, mloop, minner;
} applied[] = {
	{"block(8, 8, 25%)", true, true, true, false},
	{"block(32, 32, 25%)", true, true, true, false},
	{"block(4, 4, 50%)", true, true, true, false},
	{"nm(2, 4)", false, true, true, false},
	{"nm(1, 4)", false, false, true, false},
	{"nm(1, 8)", false, false, true, false},
	{"nm(2, 8)", false, false, true, false},
	{"tile_v(32, 25%)", false, false, true, true},
	{"tile_v(8, 50%)", false, false, true, true},
	{"tile_h(16, 25%)", true, true, false, false},
	{"channel(50%)", true, true, false, false},
	{"channel_in(25%)", false, false, true, true},
	{"row_balanced(25%)", false, false, true, false},
	{"unstructured(25%)", false, false, false, false},
	{"hybrid(32, 32, 50%, 2, 4)", false, true, true, false},
};
enum { NAPPLIED = sizeof applied / sizeof *applied };

static const int64_t shapes[][2] = {{128, 256}, {100, 70}, {768, 768}, {64, 48}};

START_TEST(stdlib_patterns)
{
	const int64_t M = shapes[_i][0], K = shapes[_i][1];
	static char text[16384];
	int at = snprintf(text, sizeof text, "include \"all.pat\";\n");
	for (int p = 0; p < NAPPLIED; p++)
		at += snprintf(text + at, sizeof text - (size_t)at,
		               "op p%d: spmm(M = %lld, K = %lld, N = 64, layout = %s) { weights = random(seed = %d); "
		               "apply %s; }\n",
		               p, (long long)M, (long long)K, p % 2 ? "nk" : "kn", p, applied[p].apply);
	Arena arena;
	arena_init(&arena);
	Program prog;
	ck_assert_int_eq(compile_quiet("nest.pat", text, &arena, &prog), 0);
	ck_assert_int_eq(prog.nops, NAPPLIED);
	uint64_t st = 43 + (uint64_t)_i;
	for (int p = 0; p < NAPPLIED; p++) {
		char what[128];
		snprintf(what, sizeof what, "%s on %lld x %lld", applied[p].apply, (long long)M, (long long)K);
		const Pir *ir = prog.ops[p].ir;
		check_pir(ir, M, K, &st, what);
		Nest nest;
		nest_of(ir, &nest);
		ck_assert_msg(nest.run_dense == applied[p].run_dense, "%s: run_dense", what);
		ck_assert_msg(nest.run_shared == applied[p].run_shared, "%s: run_shared", what);
		ck_assert_msg((nest.mloop >= 0) == applied[p].mloop, "%s: mloop", what);
		ck_assert_msg(nest.minner == applied[p].minner, "%s: minner", what);
	}
	arena_free(&arena);
}
END_TEST

/* Every `pattern NAME(` of the stdlib's files is in `applied`. */
START_TEST(pattern_names)
{
	const char *dir = getenv("PATC_STDLIB");
	ck_assert_ptr_nonnull(dir);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int found = 0;
	for (struct dirent *e; (e = readdir(d));) {
		const size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 4, ".pat"))
			continue;
		char path[1024], line[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof line, f)) {
			char name[64];
			if (sscanf(line, " pattern %63[A-Za-z0-9_]", name) != 1)
				continue;
			bool have = false;
			for (int p = 0; p < NAPPLIED && !have; p++)
				have = !strncmp(applied[p].apply, name, strlen(name)) && applied[p].apply[strlen(name)] == '(';
			ck_assert_msg(have, "stdlib pattern %s (%s) is not tested", name, e->d_name);
			found++;
		}
		fclose(f);
	}
	closedir(d);
	ck_assert_int_ge(found, 9);
}
END_TEST

/* ---- random patterns ---- */

START_TEST(random_patterns)
{
	uint64_t st = 4300 + (uint64_t)_i;
	for (int round = 0; round < 200; round++) {
		Pir ir;
		test_random_pattern(&ir, &st, 12);
		char what[64];
		snprintf(what, sizeof what, "random %d/%d", _i, round);
		check_pir(&ir, ir.len[PIR_AXIS_M], ir.len[PIR_AXIS_K], &st, what);
	}
}
END_TEST

/* A nest with no k run (the m loop innermost) and one that is all k run
 * (no loop with m: not from the front end, but nest_of answers). */
START_TEST(edges)
{
	Pir ir;
	pir_init(&ir, "e", 8, 8);
	APPLY_OK(&ir, REORDER({"k" COMMA "m"}));
	Nest nest;
	nest_of(&ir, &nest);
	ck_assert_int_eq(nest.split, 2);
	ck_assert_int_eq(nest.mloop, 1);
	ck_assert(nest.minner && nest.mloop_shares_k && !nest.run_dense && !nest.run_shared);
	ck_assert_int_eq(nest.run_kept, 1);
	ck_assert_int_eq(nest.k_above, 0);
	uint64_t st = 1;
	check_pir(&ir, 8, 8, &st, "k m");
	Pir fig6 = fig6_ir();
	check_pir(&fig6, 16, 16, &st, "fig6");
	nest_of(&fig6, &nest);
	ck_assert_int_eq(nest.split, 3);
	ck_assert_int_eq(nest.mloop, -1);
	ck_assert_int_eq(nest.last_perf, 2);
	ck_assert_int_eq(nest.tail, 3);
	ck_assert_int_eq(nest.stride[0], 2 * 2 * 4);
}
END_TEST

static Suite *nest_suite(void)
{
	Suite *s = suite_create("nest");
	TCase *tc = tcase_create("nest");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, stdlib_patterns, 0, (int)(sizeof shapes / sizeof *shapes));
	tcase_add_test(tc, pattern_names);
	tcase_add_test(tc, edges);
	suite_add_tcase(s, tc);
	TCase *rnd = tcase_create("random");
	tcase_set_timeout(rnd, 120);
	tcase_add_loop_test(rnd, random_patterns, 0, 10);
	suite_add_tcase(s, rnd);
	return s;
}

int main(void) { return run_suite(nest_suite()); }
