/* SPDX-License-Identifier: MIT */
/* test_blas_core.c - the OpenBLAS kernel sets (support/blas_core.h): their
 * ranking, the strongest for a CPU's features, when the one in use is
 * weaker, the fresh process's answer, the line that names them, and the
 * dense sgemm of either layout. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "support/blas_core.h"

#include <math.h>

START_TEST(core_ranks)
{
	ck_assert_int_eq(blas_core_rank("SkylakeX"), 3);
	ck_assert_int_eq(blas_core_rank("skylakex"), 3); /* (as OPENBLAS_CORETYPE is read: case ignored) */
	ck_assert_int_eq(blas_core_rank("Cooperlake"), 3);
	ck_assert_int_eq(blas_core_rank("SapphireRapids"), 3);
	ck_assert_int_eq(blas_core_rank("Haswell"), 2);
	ck_assert_int_eq(blas_core_rank("Zen"), 2);
	ck_assert_int_eq(blas_core_rank("Sandybridge"), 1);
	ck_assert_int_eq(blas_core_rank("Excavator"), 1);
	ck_assert_int_eq(blas_core_rank("Prescott"), 0);
	ck_assert_int_eq(blas_core_rank("Unknown"), 0);
	ck_assert_int_eq(blas_core_rank("Bogus"), -1);
	ck_assert_int_eq(blas_core_rank("Haswell2"), -1);
	ck_assert_int_eq(blas_core_rank(""), -1);
	ck_assert_int_eq(blas_core_rank(NULL), -1);
}
END_TEST

START_TEST(strongest_of_features)
{
	const BlasCpu all = {true, true, true, true, true, true};
	ck_assert_str_eq(blas_core_strongest(&all), "SkylakeX");
	/* each of AVX-512's four missing: AVX2's set */
	for (int i = 0; i < 4; i++) {
		BlasCpu f = all;
		bool *bits[] = {&f.avx512f, &f.avx512bw, &f.avx512dq, &f.avx512vl};
		*bits[i] = false;
		ck_assert_str_eq(blas_core_strongest(&f), "Haswell");
	}
	const BlasCpu avx2 = {.avx2 = true, .fma = true};
	ck_assert_str_eq(blas_core_strongest(&avx2), "Haswell");
	const BlasCpu nofma = {.avx2 = true};
	ck_assert_ptr_null(blas_core_strongest(&nofma));
	const BlasCpu none = {0};
	ck_assert_ptr_null(blas_core_strongest(&none));
}
END_TEST

START_TEST(stronger_only_where_weaker)
{
	ck_assert_str_eq(blas_core_stronger("Haswell", "SkylakeX"), "SkylakeX");
	ck_assert_str_eq(blas_core_stronger("haswell", "SkylakeX"), "SkylakeX");
	ck_assert_str_eq(blas_core_stronger("Zen", "SkylakeX"), "SkylakeX");
	ck_assert_str_eq(blas_core_stronger("Sandybridge", "Haswell"), "Haswell");
	ck_assert_str_eq(blas_core_stronger("Unknown", "Haswell"), "Haswell");
	ck_assert_ptr_null(blas_core_stronger("SkylakeX", "SkylakeX"));
	ck_assert_ptr_null(blas_core_stronger("Cooperlake", "SkylakeX")); /* (AVX-512 too: as strong) */
	ck_assert_ptr_null(blas_core_stronger("Zen", "Haswell"));
	ck_assert_ptr_null(blas_core_stronger("SkylakeX", "Haswell")); /* (stronger than the CPU's: never weaker) */
	ck_assert_ptr_null(blas_core_stronger("Bogus", "SkylakeX"));   /* (unknown: never called weaker) */
	ck_assert_ptr_null(blas_core_stronger("Haswell", NULL));
}
END_TEST

START_TEST(fresh_answer)
{
	double us = 0;
	char core[32];
	ck_assert(blas_core_parse_answer("285.829999 SkylakeX\n", &us, core));
	ck_assert(fabs(us - 285.829999) < 1e-9);
	ck_assert_str_eq(core, "SkylakeX");
	ck_assert(blas_core_parse_answer("1.5 Haswell", &us, core));
	ck_assert_str_eq(core, "Haswell");
	ck_assert(!blas_core_parse_answer("OpenBLAS ran its Haswell kernels, not SkylakeX's\n", &us, core));
	ck_assert(!blas_core_parse_answer("0 SkylakeX\n", &us, core));
	ck_assert(!blas_core_parse_answer("-3 SkylakeX\n", &us, core));
	ck_assert(!blas_core_parse_answer("12\n", &us, core));
	ck_assert(!blas_core_parse_answer("12 SkylakeX\nmore\n", &us, core));
	ck_assert(!blas_core_parse_answer("", &us, core));
}
END_TEST

START_TEST(core_line)
{
	char t[256];
	BlasCoreInfo b = {"Haswell", "SkylakeX", "SkylakeX", "Haswell"};
	blas_core_text(&b, t, sizeof t);
	ck_assert_str_eq(t, "Haswell, weaker than SkylakeX, the strongest this CPU runs (OPENBLAS_CORETYPE=Haswell)");
	b = (BlasCoreInfo){"Zen", "SkylakeX", "SkylakeX", ""};
	blas_core_text(&b, t, sizeof t);
	ck_assert_str_eq(t, "Zen, weaker than SkylakeX, the strongest this CPU runs (OpenBLAS's own choice)");
	b = (BlasCoreInfo){"Cooperlake", "SkylakeX", NULL, ""};
	blas_core_text(&b, t, sizeof t);
	ck_assert_str_eq(t, "Cooperlake, as strong as any this CPU runs");
	b = (BlasCoreInfo){"Haswell", NULL, NULL, "Haswell"};
	blas_core_text(&b, t, sizeof t);
	ck_assert_str_eq(t, "Haswell (OPENBLAS_CORETYPE=Haswell)");
	/* this process's: a name, and the stronger set only where the one in use ranks below it */
	blas_core_info(&b);
	ck_assert(b.in_use[0]);
	if (b.stronger)
		ck_assert_int_lt(blas_core_rank(b.in_use), blas_core_rank(b.stronger));
}
END_TEST

/* C = W X (kn) and C = X W^T (nk) on a 3 x 4 weight and 2 tokens. */
START_TEST(sgemm_layouts)
{
	enum { M = 3, K = 4, N = 2 };
	float w[M * K], xkn[K * N], xnk[N * K], c[M * N];
	for (int i = 0; i < M * K; i++)
		w[i] = (float)(i % 5) - 2;
	for (int k = 0; k < K; k++)
		for (int n = 0; n < N; n++)
			xkn[k * N + n] = xnk[n * K + k] = (float)(k + 3 * n) / 4;
	blas_sgemm(true, M, K, N, w, xkn, c);
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)w[m * K + k] * xkn[k * N + n];
			ck_assert(fabs(c[m * N + n] - ref) < 1e-5);
		}
	blas_sgemm(false, M, K, N, w, xnk, c);
	for (int n = 0; n < N; n++)
		for (int m = 0; m < M; m++) {
			double ref = 0;
			for (int k = 0; k < K; k++)
				ref += (double)xnk[n * K + k] * w[m * K + k];
			ck_assert(fabs(c[n * M + m] - ref) < 1e-5);
		}
	const double us = blas_time_sgemm_us(BLAS_TIMING_RUN, true, M, K, N, w, xkn, c, 1);
	ck_assert(us > 0 && isfinite(us));
}
END_TEST

static Suite *blas_core_suite(void)
{
	Suite *s = suite_create("blas_core");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, core_ranks);
	tcase_add_test(tc, strongest_of_features);
	tcase_add_test(tc, stronger_only_where_weaker);
	tcase_add_test(tc, fresh_answer);
	tcase_add_test(tc, core_line);
	tcase_add_test(tc, sgemm_layouts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(blas_core_suite()); }
