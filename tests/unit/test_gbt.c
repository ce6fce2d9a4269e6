/* SPDX-License-Identifier: MIT */
/* test_gbt.c - the gradient-boosted trees of the learned cost model: fit
 * quality, determinism, the text form's exact round trip and its rejection
 * of malformed files. */
#include "testutil.h"
#include "search/gbt.h"

#include <math.h>
#include <stdlib.h>

enum { NFEAT = 4, NTRAIN = 600, NTEST = 300 };

static double uniform(uint64_t *st) { return test_rnd(st, 1u << 30) / (double)(1u << 30); }

/* y = x0^2 + 3 [x1 > 0.5] + 0.5 x2 + noise in [-0.05, 0.05]; x3 is noise. */
static void make_rows(uint64_t *st, int n, double *X, double *y)
{
	for (int i = 0; i < n; i++) {
		double *x = X + (size_t)i * NFEAT;
		for (int f = 0; f < NFEAT; f++)
			x[f] = uniform(st);
		y[i] = x[0] * x[0] + 3 * (x[1] > 0.5) + 0.5 * x[2] + 0.1 * (uniform(st) - 0.5);
	}
}

/* A model trained on the standard rows with seed; small when `small`. */
static Gbt *train_std(uint64_t seed, bool small)
{
	static double X[NTRAIN * NFEAT], y[NTRAIN];
	uint64_t st = 42;
	make_rows(&st, NTRAIN, X, y);
	GbtParams p = gbt_defaults;
	p.seed = seed;
	if (small) {
		p.trees = 3;
		p.max_depth = 2;
	}
	char err[GBT_ERR_MAX] = "";
	Gbt *g = gbt_train(X, y, NTRAIN, NFEAT, &p, err);
	ck_assert_msg(g, "train: %s", err);
	return g;
}

/* The model's text, as gbt_write writes it (caller frees). */
static char *model_text(const Gbt *g)
{
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert(gbt_write(g, f));
	long len = ftell(f);
	ck_assert_int_gt(len, 0);
	char *s = calloc((size_t)len + 1, 1);
	rewind(f);
	ck_assert_uint_eq(fread(s, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return s;
}

/* gbt_read of the first len bytes of text; err is set either way. */
static Gbt *read_text(const char *text, size_t len, char err[GBT_ERR_MAX])
{
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	rewind(f);
	err[0] = '\0';
	Gbt *g = gbt_read(f, 1, err);
	fclose(f);
	return g;
}

START_TEST(fits_held_out)
{
	static double X[NTRAIN * NFEAT], y[NTRAIN], Xt[NTEST * NFEAT], yt[NTEST];
	uint64_t st = 42;
	make_rows(&st, NTRAIN, X, y);
	make_rows(&st, NTEST, Xt, yt);
	char err[GBT_ERR_MAX] = "";
	Gbt *g = gbt_train(X, y, NTRAIN, NFEAT, &gbt_defaults, err);
	ck_assert_msg(g, "train: %s", err);
	ck_assert_int_eq(gbt_nfeat(g), NFEAT);
	double mean = 0, ss_res = 0, ss_tot = 0;
	for (int i = 0; i < NTEST; i++)
		mean += yt[i] / NTEST;
	for (int i = 0; i < NTEST; i++) {
		double e = gbt_predict(g, Xt + i * NFEAT) - yt[i];
		ss_res += e * e;
		ss_tot += (yt[i] - mean) * (yt[i] - mean);
	}
	double r2 = 1 - ss_res / ss_tot;
	ck_assert_msg(r2 > 0.9, "held-out R^2 %.4f", r2);
	gbt_free(g);
}
END_TEST

START_TEST(round_trip_exact)
{
	Gbt *g = train_std(7, false);
	char *text = model_text(g);
	char err[GBT_ERR_MAX];
	Gbt *h = read_text(text, strlen(text), err);
	ck_assert_msg(h, "read: %s", err);
	ck_assert_int_eq(gbt_nfeat(h), NFEAT);
	uint64_t st = 3;
	for (int i = 0; i < 500; i++) {
		double x[NFEAT];
		for (int f = 0; f < NFEAT; f++) /* beyond the training range too */
			x[f] = 1.4 * uniform(&st) - 0.2;
		double a = gbt_predict(g, x), b = gbt_predict(h, x);
		ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "row %d: %.17g != %.17g", i, a, b);
	}
	char *again = model_text(h); /* and the text itself is a fixed point */
	ck_assert_msg(strcmp(again, text) == 0, "the text changed on a round trip");
	free(again);
	free(text);
	gbt_free(h);
	gbt_free(g);
}
END_TEST

START_TEST(same_seed_same_model)
{
	Gbt *a = train_std(11, false), *b = train_std(11, false), *c = train_std(12, false);
	char *ta = model_text(a), *tb = model_text(b), *tc = model_text(c);
	ck_assert_msg(strcmp(ta, tb) == 0, "one seed, two models");
	/* the seed matters at all (subsampling), so the check above means something */
	ck_assert_msg(strcmp(ta, tc) != 0, "two seeds, one model");
	free(ta);
	free(tb);
	free(tc);
	gbt_free(a);
	gbt_free(b);
	gbt_free(c);
}
END_TEST

/* Each file must be refused with an err containing `why`. */
static const struct {
	const char *text, *why;
} bad_files[] = {
	{"", "line 1: the file ends"},
	{"gbx 2 1 0\n1 -1 0\nend\n", "not a gbt model"},
	{"gbt 2 1\n1 -1 0\nend\n", "base"},
	{"gbt 2 1 0\n", "line 2"},                                /* no trees */
	{"gbt 2 1 0\n3 0 0.5 1 2 -1 1\nend\n", "line 2"},         /* a node short */
	{"gbt 2 1 0\n3 0 0.5 1 3 -1 1 -1 2\nend\n", "right child"}, /* past the tree */
	{"gbt 2 1 0\n3 0 0.5 0 2 -1 1 -1 2\nend\n", "left child"},  /* a cycle */
	{"gbt 2 1 0\n3 2 0.5 1 2 -1 1 -1 2\nend\n", "feature"},
	{"gbt 2 1 0\n3 -2 0.5 1 2 -1 1 -1 2\nend\n", "feature"},
	{"gbt 2 1 0\n3 0 nan 1 2 -1 1 -1 2\nend\n", "threshold 'nan'"},
	{"gbt 2 1 0\n1 -1 inf\nend\n", "leaf value"},
	{"gbt 2 1 1e300\n1 -1 0\nend\n", "base"},
	{"gbt 2 99999999999 0\n1 -1 0\nend\n", "tree count"},
	{"gbt 2 1000000 0\n1 -1 0\nend\n", "tree count"},
	{"gbt 2 2 0\n1 -1 0\nend\n", "line 3"},                   /* a tree short */
	{"gbt 2 1 0\n1 -1 0\n1 -1 0\nend\n", "expected 'end'"},   /* a tree too many */
	{"gbt 2 1 0\n1 -1 0 7\nend\n", "unexpected '7'"},
	{"gbt 2 1 0\n1 -1 0\nend\nmore\n", "after 'end'"},
	{"gbt 2 1 0\n2000000000 -1 0\nend\n", "node count"},
	{"gbt 0 1 0\n1 -1 0\nend\n", "feature count"},
	{"gbt 2 1 0\n1 -1 0x\nend\n", "leaf value"},
	{"gbt 2 1 0\n1 -1 00000000000000000000000000000000000000000000000000000000000000001\n",
	 "too long"},
	{"gbt 2 1 0\n1 -1 \0010\nend\n", "byte"},
};

/* Lines count from where the trees begin in their file (a cost model's
 * header before them). */
START_TEST(read_counts_from_first_line)
{
	static const char text[] = "gbt 2 1 0\n1 -1 0 7\nend\n";
	FILE *f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
	rewind(f);
	char err[GBT_ERR_MAX];
	Gbt *g = gbt_read(f, 12, err);
	fclose(f);
	ck_assert_ptr_null(g);
	ck_assert_msg(strstr(err, "line 13: unexpected '7'"), "err '%s'", err);
}
END_TEST

START_TEST(read_rejects)
{
	const char *text = bad_files[_i].text;
	char err[GBT_ERR_MAX];
	Gbt *g = read_text(text, strlen(text), err);
	ck_assert_msg(!g, "case %d accepted", _i);
	ck_assert_msg(strstr(err, bad_files[_i].why), "case %d: err '%s' lacks '%s'", _i, err,
	              bad_files[_i].why);
}
END_TEST

START_TEST(read_accepts_valid)
{
	/* the same shapes as the bad files, well formed: the rejections above
	 * are for what is wrong, not for the format */
	const char *text = "gbt 2 2 0.5\n3 1 0.25 1 2 -1 -1 -1 1e-3\n1 -1 2\nend\n";
	char err[GBT_ERR_MAX];
	Gbt *g = read_text(text, strlen(text), err);
	ck_assert_msg(g, "read: %s", err);
	ck_assert(gbt_predict(g, (double[]){0, 0}) == 0.5 - 1 + 2);
	ck_assert(gbt_predict(g, (double[]){0, 0.25}) == 0.5 + 1e-3 + 2);
	ck_assert(gbt_predict(g, (double[]){0, NAN}) == 0.5 + 1e-3 + 2);
	gbt_free(g);
}
END_TEST

/* Issue 42: NUL bytes and 10 MB of one byte value are refused at once
 * with a short message (the cost model's header around the trees:
 * tests/search.sh, whose patc links the backends that costmodel.h needs). */
START_TEST(read_hostile)
{
	char err[GBT_ERR_MAX];
	static const char nul[] = "gbt 2 1 0\n1 -1 0\0 7\nend\n";
	ck_assert_ptr_null(read_text(nul, sizeof nul - 1, err));
	ck_assert_msg(strstr(err, "line 2: unexpected byte 0x00"), "err '%s'", err);
	enum { BIG = 10 << 20 };
	char *big = malloc(BIG + 16);
	ck_assert_ptr_nonnull(big);
	static const char bytes[] = {0, (char)0xff, '9', ' ', '\n', 'x'};
	for (size_t b = 0; b < sizeof bytes; b++) {
		memset(big, bytes[b], BIG);
		ck_assert_ptr_null(read_text(big, BIG, err));
		ck_assert_msg(err[0] && strlen(err) < 120, "byte 0x%02x: err '%s'", (unsigned char)bytes[b], err);
		/* after a valid start: a tree of 10 MB */
		memcpy(big, "gbt 2 1 0\n1 -1 ", 15);
		ck_assert_ptr_null(read_text(big, BIG, err));
		ck_assert_msg(err[0] && strlen(err) < 120, "byte 0x%02x: err '%s'", (unsigned char)bytes[b], err);
	}
	free(big);
}
END_TEST

START_TEST(read_rejects_truncated)
{
	Gbt *g = train_std(5, true);
	char *text = model_text(g);
	size_t len = strlen(text);
	char err[GBT_ERR_MAX];
	/* every cut but the final newline's loses something */
	for (size_t cut = 0; cut + 1 < len; cut++) {
		Gbt *h = read_text(text, cut, err);
		ck_assert_msg(!h, "accepted the first %zu of %zu bytes", cut, len);
		ck_assert_msg(err[0], "no err at %zu bytes", cut);
	}
	Gbt *h = read_text(text, len - 1, err);
	ck_assert_msg(h, "read: %s", err);
	gbt_free(h);
	free(text);
	gbt_free(g);
}
END_TEST

START_TEST(train_rejects_bad_input)
{
	static double X[NTRAIN * NFEAT], y[NTRAIN];
	uint64_t st = 1;
	make_rows(&st, NTRAIN, X, y);
	GbtParams p = gbt_defaults;
	p.trees = 5;
	char err[GBT_ERR_MAX] = "";
	Gbt *g = gbt_train(X, y, NTRAIN, NFEAT, &p, err);
	ck_assert_msg(g, "clean data refused: %s", err);
	gbt_free(g);

	X[123 * NFEAT + 2] = NAN;
	err[0] = '\0';
	ck_assert_ptr_null(gbt_train(X, y, NTRAIN, NFEAT, &p, err));
	ck_assert_msg(strstr(err, "row 123, feature 2"), "err '%s'", err);
	X[123 * NFEAT + 2] = 0.5;

	y[7] = INFINITY;
	err[0] = '\0';
	ck_assert_ptr_null(gbt_train(X, y, NTRAIN, NFEAT, &p, err));
	ck_assert_msg(strstr(err, "y row 7"), "err '%s'", err);
	y[7] = 1;

	err[0] = '\0';
	ck_assert_ptr_null(gbt_train(X, y, 1, NFEAT, &p, err));
	ck_assert_str_ne(err, "");
	p.subsample = 0;
	err[0] = '\0';
	ck_assert_ptr_null(gbt_train(X, y, NTRAIN, NFEAT, &p, err));
	ck_assert_str_ne(err, "");
}
END_TEST

START_TEST(stump_exact_split)
{
	/* One stump fitted exactly: of the split points of 0 0 0 1 3 the best
	 * by squared error is before the 3 (the left side alone would choose
	 * before the 1), halfway between the distinct values 3 and 4. */
	double X[5] = {0, 1, 2, 3, 4}, y[5] = {0, 0, 0, 1, 3};
	GbtParams p = {.trees = 1, .max_depth = 1, .learning_rate = 1, .min_leaf = 1,
	               .subsample = 1, .seed = 1};
	char err[GBT_ERR_MAX] = "";
	Gbt *g = gbt_train(X, y, 5, 1, &p, err);
	ck_assert_msg(g, "train: %s", err);
	double below = nextafter(3.5, 0), at = 3.5;
	ck_assert_double_eq_tol(gbt_predict(g, &below), 0.25, 1e-12);
	ck_assert_double_eq_tol(gbt_predict(g, &at), 3, 1e-12);
	gbt_free(g);
}
END_TEST

START_TEST(constant_and_tied_data)
{
	/* every row the same: one leaf each tree, predicting the mean exactly */
	double X[8 * 2] = {0}, y[8];
	for (int i = 0; i < 8; i++)
		y[i] = 2.5;
	char err[GBT_ERR_MAX] = "";
	GbtParams p = gbt_defaults;
	p.min_leaf = 1;
	Gbt *g = gbt_train(X, y, 8, 2, &p, err);
	ck_assert_msg(g, "train: %s", err);
	ck_assert(gbt_predict(g, X) == 2.5);
	gbt_free(g);
	/* two adjacent doubles: the split must still separate them */
	double a = 1.0, b = nextafter(1.0, 2.0);
	double X2[4] = {a, a, b, b}, y2[4] = {0, 0, 1, 1};
	p.learning_rate = 1;
	p.subsample = 1;
	g = gbt_train(X2, y2, 4, 1, &p, err);
	ck_assert_msg(g, "train: %s", err);
	ck_assert(gbt_predict(g, &a) == 0);
	ck_assert(gbt_predict(g, &b) == 1);
	gbt_free(g);
}
END_TEST

static Suite *gbt_suite(void)
{
	Suite *s = suite_create("gbt");
	TCase *tc = tcase_create("gbt");
	tcase_set_timeout(tc, 60); /* sanitizer builds train slowly */
	tcase_add_test(tc, fits_held_out);
	tcase_add_test(tc, round_trip_exact);
	tcase_add_test(tc, same_seed_same_model);
	tcase_add_loop_test(tc, read_rejects, 0, (int)(sizeof bad_files / sizeof bad_files[0]));
	tcase_add_test(tc, read_counts_from_first_line);
	tcase_add_test(tc, read_accepts_valid);
	tcase_add_test(tc, read_rejects_truncated);
	tcase_add_test(tc, read_hostile);
	tcase_add_test(tc, train_rejects_bad_input);
	tcase_add_test(tc, stump_exact_split);
	tcase_add_test(tc, constant_and_tied_data);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(gbt_suite()); }
