/* SPDX-License-Identifier: MIT */
/* test_metrics.c - storage shape, strides, W, Q, density and diversity, on
 * the paper's two worked examples and on hand-computed cases. */
#include "testutil.h"

#include <math.h>

#define COMMA ,

/* Fig. 6: I0_4 J0_4^2 I1_4^2 J1_4.  Values [4,2,2,4]; J0 indices [4,2];
 * I1 indices 4*2*2 = 16. */
START_TEST(fig6)
{
	Pir ir = fig6_ir();
	ck_assert_str_eq(paper(&ir), "I0_4 J0_4^2 I1_4^2 J1_4");
	PirMetrics m;
	pir_metrics(&ir, &m);
	const int64_t shape[] = {4, 2, 2, 4};
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(m.loop[i].extent, shape[i]);
	ck_assert_int_eq(m.loop[1].regions, 4); /* J0 index [4, 2] */
	ck_assert_int_eq(m.loop[1].index_len, 8);
	ck_assert_int_eq(m.loop[2].index_len, 16); /* I1 index length 16 */
	ck_assert_int_eq(m.values, 64);
	ck_assert_int_eq(m.index_entries, 24);
	ck_assert(fabs(m.density - 0.25) < 1e-12);
	/* W and Q of J0: one j0 iteration addresses a 4x4 tile; it selects
	 * among 4 of them. */
	ck_assert_int_eq(m.loop[1].W, 16);
	ck_assert_int_eq(m.loop[1].Q, 64);
	ck_assert_int_eq(m.loop[2].W, 4);
	ck_assert_int_eq(m.loop[2].Q, 16);
	/* ln C(4,2) = ln 6; 4 regions for J0 and 8 for I1 */
	ck_assert(fabs(m.log_diversity - 12 * log(6.0)) < 1e-9);
}
END_TEST

/* Fig. 8: 1024x1024, i split 4*8*32, k split 32*8*4, order i0 i1 k0 k1 k2
 * i2, perforate i1 keep 3, k0 keep 28, k1 keep 5: flattened value strides
 * 53760, 17920, 640, 128, 32. */
START_TEST(fig8)
{
	Pir ir;
	pir_init(&ir, "fig8", 1024, 1024);
	APPLY_OK(&ir, SPLIT("m", {"i0" COMMA "i1" COMMA "i2"}, {4 COMMA 8 COMMA 32}, false, -1));
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1" COMMA "k2"}, {32 COMMA 8 COMMA 4}, false, -1));
	APPLY_OK(&ir, REORDER({"i0" COMMA "i1" COMMA "k0" COMMA "k1" COMMA "k2" COMMA "i2"}));
	APPLY_OK(&ir, prim_perforate("i1", 3));
	APPLY_OK(&ir, prim_perforate("k0", 28));
	APPLY_OK(&ir, prim_perforate("k1", 5));
	PirMetrics m;
	pir_metrics(&ir, &m);
	const int64_t strides[] = {53760, 17920, 640, 128, 32, 1};
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(m.loop[i].value_stride, strides[i]);
	/* axis strides of the loops */
	const int64_t axis_strides[] = {256, 32, 32, 4, 1, 1};
	for (int i = 0; i < 6; i++)
		ck_assert_int_eq(ir.loops[i].comp[0].stride, axis_strides[i]);
	ck_assert_int_eq(m.values, 4 * 3 * 28 * 5 * 4 * 32);
	ck_assert_int_eq(m.loop[1].index_len, 4 * 3);
	ck_assert_int_eq(m.loop[2].index_len, 4 * 3 * 28);
	ck_assert_int_eq(m.loop[3].index_len, 4 * 3 * 28 * 5);
	ck_assert(fabs(m.density - 3.0 / 8 * 28.0 / 32 * 5.0 / 8) < 1e-12);
}
END_TEST

/* 2:4 on a 64x64 weight: M K0_16 K1_4^2; 64*16 regions of C(4,2) = 6. */
START_TEST(two_four)
{
	Pir ir;
	pir_init(&ir, "nm", 64, 64);
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {0 COMMA 4}, false, -1));
	APPLY_OK(&ir, prim_perforate("k1", 2));
	PirMetrics m;
	pir_metrics(&ir, &m);
	ck_assert(fabs(m.density - 0.5) < 1e-12);
	ck_assert_int_eq(m.loop[2].regions, 64 * 16);
	ck_assert_int_eq(m.loop[2].W, 1);
	ck_assert_int_eq(m.loop[2].Q, 4);
	ck_assert(fabs(m.log_diversity - 64 * 16 * log(6.0)) < 1e-6);
	ck_assert_int_eq(m.nperforated, 1);
}
END_TEST

/* Padding is reported per axis and counted in the dense extent. */
START_TEST(padding)
{
	Pir ir;
	pir_init(&ir, "pad", 1000, 576);
	APPLY_OK(&ir, SPLIT("m", {"m0" COMMA "m1"}, {0 COMMA 32}, true, -1));
	APPLY_OK(&ir, SPLIT("k", {"k0" COMMA "k1"}, {0 COMMA 64}, false, -1));
	PirMetrics m;
	pir_metrics(&ir, &m);
	ck_assert_int_eq(m.pad[PIR_AXIS_M], 24);
	ck_assert_int_eq(m.pad[PIR_AXIS_K], 0);
	ck_assert_int_eq(m.dense_padded, 1024 * 576);
	ck_assert_int_eq(m.values, 1024 * 576);
	ck_assert(fabs(m.density - 1.0) < 1e-12);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");
	tcase_add_test(tc, fig6);
	tcase_add_test(tc, fig8);
	tcase_add_test(tc, two_four);
	tcase_add_test(tc, padding);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(metrics_suite()); }
