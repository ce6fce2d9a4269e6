/* test_pir.c - PatternIR core: construction, the verifier, the paper
 * notation, the text form and its reader. */
#include "testutil.h"

#define COMMA ,

static Pir sample(void)
{
	Pir ir;
	pir_init(&ir, "s", 1000, 96);
	PirReason why;
	PirPrim ps[] = {
		SPLIT("m", {"m0" COMMA "m1"}, {0 COMMA 32}, true, -1),
		SPLIT("k", {"k0" COMMA "k1" COMMA "k2"}, {4 COMMA 6 COMMA 4}, false, -1),
		REORDER({"m0" COMMA "k0" COMMA "m1"}),
		JOIN({"k1" COMMA "k2"}, "kk"),
		prim_perforate("k0", 3),
		prim_perforate("kk", 12),
		prim_condense("kk"),
	};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
		ck_assert_msg(pir_apply(&ir, &ps[i], &why), "%s", why.error);
	return ir;
}

START_TEST(init_and_find)
{
	Pir ir;
	pir_init(&ir, "op", 7, 9);
	ck_assert_str_eq(paper(&ir), "M_7 K_9");
	ck_assert_int_eq(pir_find(&ir, "k"), 1);
	ck_assert_int_eq(pir_find(&ir, "x"), -1);
	char why[128];
	ck_assert(pir_verify(&ir, why, sizeof why));
}
END_TEST

START_TEST(paper_notation)
{
	Pir ir = sample();
	ck_assert_str_eq(paper(&ir), "M0_32 K0_4^3 M1_32 KK_24^12");
}
END_TEST

/* Each mutation breaks one invariant; the verifier must say so. */
typedef struct Mutation {
	const char *what;
	void (*apply)(Pir *ir);
	const char *expect;
} Mutation;

static void mut_stride(Pir *ir) { ir->loops[2].comp[0].stride = 2; }
static void mut_len(Pir *ir) { ir->loops[0].len = 31; }
static void mut_nnz0(Pir *ir) { ir->loops[1].nnz = 0; }
static void mut_nnz_big(Pir *ir) { ir->loops[1].nnz = 5; }
static void mut_dup(Pir *ir) { pir_name_copy(ir->loops[2].name, "m0"); }
static void mut_badname(Pir *ir) { pir_name_copy(ir->loops[2].name, "9x"); }
static void mut_ext(Pir *ir) { ir->ext[0] = 2048; }
static void mut_len_over_ext(Pir *ir) { ir->len[1] = 97; }
static void mut_condense_dense(Pir *ir) { ir->loops[0].condensed = true; }
static void mut_axis_gap(Pir *ir) { ir->loops[2].comp[0].extent = ir->loops[2].len = ir->loops[2].nnz = 16; }
static void mut_nloops(Pir *ir) { ir->nloops = 0; }

static const Mutation mutations[] = {
	{"wrong stride", mut_stride, "stride 2 where 1 is needed"},
	{"length disagrees", mut_len, "components multiply to 32"},
	{"keep 0", mut_nnz0, "keeps 0 of 4"},
	{"keep above length", mut_nnz_big, "keeps 5 of 4"},
	{"duplicate name", mut_dup, "used twice"},
	{"bad name", mut_badname, "bad name"},
	{"padded extent disagrees", mut_ext, "padded extent is 2048"},
	{"length above extent", mut_len_over_ext, "length 97"},
	{"condensed dense loop", mut_condense_dense, "condensed but"},
	{"axis not tiled", mut_axis_gap, "stride 32 where 16 is needed"},
	{"no loops", mut_nloops, "0 loops"},
};

START_TEST(verifier_catches)
{
	const Mutation *m = &mutations[_i];
	Pir ir = sample();
	char why[256];
	ck_assert(pir_verify(&ir, why, sizeof why));
	m->apply(&ir);
	ck_assert_msg(!pir_verify(&ir, why, sizeof why), "%s: accepted", m->what);
	ck_assert_msg(strstr(why, m->expect), "%s: '%s' lacks '%s'", m->what, why, m->expect);
}
END_TEST

START_TEST(text_round_trip)
{
	Pir ir = sample();
	char *t = pir_print_text(&ir);
	ck_assert_str_eq(t, "pir s m=1000 k=96 {\n"
	                    "  split m -> m0, m1 : 32, 32 pad 24\n"
	                    "  split k -> k0, k1, k2 : 4, 6, 4\n"
	                    "  join k1, k2 -> kk\n"
	                    "  loop m0 32 = m[32]*32\n"
	                    "  loop k0 4 keep 3 = k[4]*24\n"
	                    "  loop m1 32 = m[32]*1\n"
	                    "  loop kk 24 keep 12 = k[24]*1 condense on x\n"
	                    "}\n");
	Pir back[2];
	char err[256];
	ck_assert_int_eq(pir_read_text(t, back, 2, err, sizeof err), 1);
	ck_assert(pir_equal(&ir, &back[0]));
	char *t2 = pir_print_text(&back[0]);
	ck_assert_str_eq(t, t2);
	free(t);
	free(t2);
}
END_TEST

START_TEST(text_joined_components_and_comments)
{
	const char *text = "# two blocks\n"
	                   "pir a m=8 k=4 {\n  join m, k -> mk\n  loop mk 32 keep 5 = m[8]*1 . k[4]*1\n}\n"
	                   "pir b m=3 k=5 { loop k 5 = k[5]*1 loop m 3 = m[3]*1 }\n";
	Pir out[4];
	char err[256];
	ck_assert_int_eq(pir_read_text(text, out, 4, err, sizeof err), 2);
	ck_assert_int_eq(out[0].loops[0].ncomp, 2);
	ck_assert_int_eq(out[0].loops[0].nnz, 5);
	ck_assert_str_eq(paper(&out[1]), "K_5 M_3");
}
END_TEST

typedef struct BadText {
	const char *text;
	const char *expect;
} BadText;

static const BadText bad_texts[] = {
	{"", "1:1: no pir block"},
	{"pir", "expected a name"},
	{"pir a m=4 {", "expected 'k=LENGTH'"},
	{"pir a m=4 k=4 {", "unterminated pir block"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 }", "no loop covers axis k"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*2 }", "stride 2 where 1 is needed"},
	{"pir a m=4 k=4 { loop m 4 keep 0 = m[4]*1 loop k 4 = k[4]*1 }", "keeps 0 of 4"},
	{"pir a m=4 k=4 { loop m 4 = q[4]*1 }", "expected an axis"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 condense on y }", "expected 'x'"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 condense on x }", "condensed but"},
	{"pir a m=99999999999999999999 k=4 {}", "number out of range"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 } @", "unexpected character '@'"},
	{"pir a m=4 k=4 { frob }", "expected 'split', 'join', 'loop' or '}'"},
	{"pir a m=4 k=4 { loop m 4 = m[4]*1 loop m 4 = k[4]*1 }", "used twice"},
	{"pir a m=4 k=4 {\n  loop m 4 = m[4]*1\n  loop k 4 = k[4]*1 }\npir", "4:4: expected a name"},
};

START_TEST(reader_rejects)
{
	const BadText *b = &bad_texts[_i];
	Pir out[2];
	char err[256];
	ck_assert_int_eq(pir_read_text(b->text, out, 2, err, sizeof err), -1);
	ck_assert_msg(strstr(err, b->expect), "'%s': '%s' lacks '%s'", b->text, err, b->expect);
}
END_TEST

START_TEST(equal_ignores_locations_only)
{
	Pir a = sample(), b = sample();
	b.loops[0].made.line = 99;
	ck_assert(pir_equal(&a, &b));
	b.loops[1].nnz = 2;
	ck_assert(!pir_equal(&a, &b));
	b = sample();
	b.rels[0].pad = 0;
	ck_assert(!pir_equal(&a, &b));
}
END_TEST

static Suite *pir_suite(void)
{
	Suite *s = suite_create("pir");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, init_and_find);
	tcase_add_test(tc, paper_notation);
	tcase_add_loop_test(tc, verifier_catches, 0, (int)(sizeof mutations / sizeof mutations[0]));
	tcase_add_test(tc, text_round_trip);
	tcase_add_test(tc, text_joined_components_and_comments);
	tcase_add_loop_test(tc, reader_rejects, 0, (int)(sizeof bad_texts / sizeof bad_texts[0]));
	tcase_add_test(tc, equal_ignores_locations_only);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(pir_suite()); }
