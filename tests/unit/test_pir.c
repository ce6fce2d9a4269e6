/* SPDX-License-Identifier: MIT */
/* test_pir.c - PatternIR core: construction, the verifier, the paper
 * notation, the text form and its reader. */
#include "testutil.h"
#include "support/util.h"

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

/* (declared by pir_read.c until pir.h declares it) */
int pir_read_text_len(const char *text, size_t len, Pir *out, int max, char *err, size_t errlen);

/* Texts with NUL bytes (their length given), a byte-order mark, stray
 * bytes: a NUL is an error at its line and column, but in a comment. */
typedef struct LenText {
	const char *text;
	size_t len;
	int blocks; /* -1: refused */
	const char *expect;
} LenText;
#define LT(s, n, e) {s, sizeof s - 1, n, e}
static const LenText len_texts[] = {
	LT("pir a m=4 k=4 {\n  loop m 4 = m[4]*1\0 loop k 4 = k[4]*1 }", -1, "2:20: NUL byte (\\x00)"),
	LT("pir a\0b m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 }", -1, "1:6: NUL byte"),
	LT("\0", -1, "1:1: NUL byte"),
	LT("# a comment \0 with NULs \0\npir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 }", 1, ""),
	LT("pir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 } # \0", 1, ""),
	LT("\xef\xbb\xbfpir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 }", 1, ""),
	LT("\xef\xbb\xbfpir a m=4 k=4 { loop m 4 = m[4]*1 loop k 4 = k[4]*1 } \x01", -1, "1:55: unexpected byte \\x01"),
	LT("pir a m=4 k=4 { \xef\xbb\xbf }", -1, "1:17: unexpected byte \\xef"),
	LT("pir a m=4 k=4 { \xff }", -1, "unexpected byte \\xff"),
};

START_TEST(reader_nul_bom_bytes)
{
	const LenText *t = &len_texts[_i];
	Pir out[2];
	char err[256];
	ck_assert_int_eq(pir_read_text_len(t->text, t->len, out, 2, err, sizeof err), t->blocks);
	ck_assert_msg(strstr(err, t->expect), "'%s': '%s' lacks '%s'", t->text, err, t->expect);
}
END_TEST

/* A 1 MiB text of each byte value is refused or read, never hangs (the
 * reader is linear: the test case's timeout is the guard, where a
 * quadratic reader would take hours). */
START_TEST(reader_big_single_byte)
{
	enum { N = 1 << 20 };
	char *text = malloc(N + 1);
	ck_assert_ptr_nonnull(text);
	Pir out[1];
	char err[256];
	for (int b = 0; b < 256; b += 1) {
		memset(text, b, N);
		text[N] = 0;
		pir_read_text_len(text, N, out, 1, err, sizeof err);
	}
	free(text);
}
END_TEST

/* util_quote: at most 64 characters, control bytes and invalid UTF-8 as
 * \xNN (the one quoting of names in diagnostics; support/util.c). */
static const struct {
	const char *in;
	size_t len;
	const char *out;
} quotes[] = {
	{"plain", 5, "plain"},
	{"a\0b", 3, "a\\x00b"},
	{"tab\there\n", 9, "tab\\x09here\\x0a"},
	{"\xc3\xa9\xe9\x87\x8d\xf0\x9f\x98\x80", 9, "\xc3\xa9\xe9\x87\x8d\xf0\x9f\x98\x80"}, /* é 重 😀 */
	{"\xc0\xaf", 2, "\\xc0\\xaf"},             /* overlong '/' */
	{"\xe0\x80\xaf", 3, "\\xe0\\x80\\xaf"},    /* overlong, 3 bytes */
	{"\xed\xa0\x80", 3, "\\xed\\xa0\\x80"},    /* a surrogate */
	{"\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80"}, /* past U+10FFFF */
	{"\xe2\x82", 2, "\\xe2\\x82"},             /* truncated */
	{"\xef\xbb\xbf", 3, "\xef\xbb\xbf"},       /* U+FEFF itself is valid */
	{"\x7f\xff", 2, "\\x7f\\xff"},
	{"0123456789012345678901234567890123456789012345678901234567890123", 64,
	 "0123456789012345678901234567890123456789012345678901234567890123"},
	{"01234567890123456789012345678901234567890123456789012345678901234", 65,
	 "0123456789012345678901234567890123456789012345678901234567890123..."},
};

START_TEST(quote_cuts_and_escapes)
{
	char buf[UTIL_QUOTE_BUF];
	ck_assert_str_eq(util_quote_n(quotes[_i].in, quotes[_i].len, buf), quotes[_i].out);
	if (!memchr(quotes[_i].in, 0, quotes[_i].len))
		ck_assert_str_eq(util_quote(quotes[_i].in, buf), quotes[_i].out);
}
END_TEST

START_TEST(quote_long_inputs)
{
	/* 64 4-byte characters fill the buffer; escaped bytes take 4 each */
	static char in[1 << 20];
	char buf[UTIL_QUOTE_BUF];
	for (size_t i = 0; i < sizeof in; i += 4)
		memcpy(in + i, "\xf0\x9f\x98\x80", 4);
	ck_assert_uint_eq(strlen(util_quote_n(in, sizeof in, buf)), 64 * 4 + 3);
	memset(in, 0xff, sizeof in);
	ck_assert_uint_eq(strlen(util_quote_n(in, sizeof in, buf)), 64 * 4 + 3);
	memset(in, 0, sizeof in);
	ck_assert_uint_eq(strlen(util_quote_n(in, sizeof in, buf)), 64 * 4 + 3);
	ck_assert_str_eq(util_quote(in, buf), "");
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
	tcase_add_loop_test(tc, reader_nul_bom_bytes, 0, (int)(sizeof len_texts / sizeof len_texts[0]));
	TCase *big = tcase_create("big");
	tcase_set_timeout(big, 60); /* (a sanitizer build on a loaded machine) */
	tcase_add_test(big, reader_big_single_byte);
	suite_add_tcase(s, big);
	tcase_add_loop_test(tc, quote_cuts_and_escapes, 0, (int)(sizeof quotes / sizeof quotes[0]));
	tcase_add_test(tc, quote_long_inputs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(pir_suite()); }
