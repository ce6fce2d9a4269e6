/* SPDX-License-Identifier: MIT */
/* test_frontend.c - the front end: parsing, includes, patterns and
 * arguments, diagnostics with recovery, and parse(print(ir)) == ir for every
 * PatternIR golden. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "frontend/frontend.h"
#include "support/util.h"

#include <dirent.h>
#include <unistd.h>

typedef struct Run {
	Arena arena;
	Diag diag;
	Program prog;
	char *out;
	size_t outlen;
	FILE *f;
	int errors;
} Run;

static void compile(Run *r, const char *text, bool gpu)
{
	memset(r, 0, sizeof *r);
	arena_init(&r->arena);
	r->f = open_memstream(&r->out, &r->outlen);
	diag_init(&r->diag, &r->arena, r->f);
	const char *stdlib = getenv("PATC_STDLIB");
	FrontendOptions fo = {.stdlib_dir = stdlib, .gpu = gpu, .target = gpu ? "sm_80" : "x86-64",
	                      .trace = true};
	r->errors = frontend_compile(&fo, &r->diag, &r->arena, "t.pat", text, &r->prog);
	fflush(r->f);
}

static void done(Run *r)
{
	fclose(r->f);
	free(r->out);
	arena_free(&r->arena);
}

static const OpResult *op(Run *r, const char *name)
{
	for (int i = 0; i < r->prog.nops; i++)
		if (!strcmp(r->prog.ops[i].name, name))
			return &r->prog.ops[i];
	ck_abort_msg("no op %s", name);
	return NULL;
}

START_TEST(op_and_pattern)
{
	Run r;
	compile(&r,
	        "pattern nm(n = 2, group = n * 2) { split k -> k0, k1 : _, group pad; perforate k1 keep n; }\n"
	        "op a: spmm(M = 8, K = 10, N = 3, dtype = f16, layout = nk) {\n"
	        "  weights = random(seed = 9);\n  apply nm(group = 4);\n}\n"
	        "op b: spmm(8, 10, 3) { apply nm(1); }\n",
	        false);
	ck_assert_msg(r.errors == 0, "%s", r.out);
	const OpResult *a = op(&r, "a");
	ck_assert(a->ok);
	ck_assert_int_eq(a->shape.dtype, PAT_F16);
	ck_assert_int_eq(a->shape.layout, PAT_LAYOUT_NK);
	ck_assert_int_eq(a->weights.kind, WEIGHTS_RANDOM);
	ck_assert_int_eq(a->weights.seed, 9);
	ck_assert_str_eq(paper(a->ir), "M_8 K0_3 K1_4^2");
	ck_assert_int_eq(a->ir->ext[PIR_AXIS_K], 12);
	ck_assert_int_eq(a->ntrace, 2);
	ck_assert_str_eq(paper(op(&r, "b")->ir), "M_8 K0_5 K1_2^1"); /* group = 1 * 2 */
	done(&r);
}
END_TEST

START_TEST(stdlib_include)
{
	Run r;
	compile(&r, "include \"all.pat\";\nop q: spmm(M = 768, K = 768, N = 512) { apply block(32, 32, 25%); }\n",
	        false);
	ck_assert_msg(r.errors == 0, "%s", r.out);
	ck_assert_str_eq(paper(op(&r, "q")->ir), "M0_24 K0_24^6 M1_32 K1_32");
	done(&r);
}
END_TEST

START_TEST(many_errors_one_run)
{
	Run r;
	compile(&r,
	        "op a: spmm(M = 1000, K = 64, N = 1) { split m -> m0, m1, m2 : 4, 8, 32; }\n"
	        "op b: spmm(M = 64, K = 64, N = 1) { perforate k keep 0; }\n"
	        "op c: spmm(M = 64, K = 64, N = 1) { apply nope(); }\n"
	        "op c: spmm(M = 64, K = 64, N = 1);\n",
	        false);
	ck_assert_int_eq(r.errors, 4);
	ck_assert_ptr_nonnull(strstr(r.out, "t.pat:1:39: error: in op 'a': split factors 4*8*32 = 1024 do not match"));
	ck_assert_ptr_nonnull(strstr(r.out, "note: add 'pad 24' to pad 'm' from 1000 to 1024"));
	ck_assert_ptr_nonnull(strstr(r.out, "cannot keep 0 iterations of loop 'k'"));
	ck_assert_ptr_nonnull(strstr(r.out, "unknown pattern 'nope'"));
	ck_assert_ptr_nonnull(strstr(r.out, "op 'c' is defined twice"));
	ck_assert(!op(&r, "a")->ok);
	done(&r);
}
END_TEST

START_TEST(syntax_errors_recover)
{
	Run r;
	compile(&r, "op a: spmm(M = 4, K = 4, N = 1) {\n  split k -> k0 k1 : 2, 2;\n  perforate k keep;\n}\n"
	            "op b: spmm(M = 4 K = 4);\n", false);
	ck_assert_int_eq(r.errors, 3);
	ck_assert_ptr_nonnull(strstr(r.out, "t.pat:2:17: error: syntax error: expected ':' or ','"));
	ck_assert_ptr_nonnull(strstr(r.out, "t.pat:3:19: error: syntax error: expected an expression before ';'"));
	done(&r);
}
END_TEST

START_TEST(gpu_rule_reported_at_perforate)
{
	Run r;
	compile(&r, "op a: spmm(M = 64, K = 64, N = 1) {\n  reorder k, m;\n  perforate m keep 8;\n}\n", true);
	ck_assert_int_eq(r.errors, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "t.pat:3:3: error: op 'a' cannot run on sm_80: perforated "
	                                    "spatial loop 'm' is nested inside reduction loop 'k'"));
	ck_assert(!op(&r, "a")->ok);
	done(&r);
	compile(&r, "op a: spmm(M = 64, K = 64, N = 1) {\n  reorder k, m;\n  perforate m keep 8;\n}\n", false);
	ck_assert_int_eq(r.errors, 0);
	done(&r);
}
END_TEST

START_TEST(sandbox_refuses_files)
{
	Arena arena;
	arena_init(&arena);
	char *out;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	Diag d;
	diag_init(&d, &arena, f);
	FrontendOptions fo = {.sandbox = true, .target = "x86-64"};
	Program p;
	int e = frontend_compile(&fo, &d, &arena, "s.pat",
	                         "include \"all.pat\";\nop a: spmm(M=1,K=1,N=1) { weights = npy(\"w.npy\"); }\n", &p);
	fclose(f);
	ck_assert_int_ge(e, 1);
	ck_assert_ptr_nonnull(strstr(out, "includes are disabled"));
	free(out);
	arena_free(&arena);
}
END_TEST

/* Resource limits: a 60000-term sum and a pattern doubling its work at
 * each of 20 levels are refused with a message, not a crash or a hang. */
START_TEST(limits)
{
	StrBuf sb;
	sb_init(&sb);
	sb_puts(&sb, "op q: spmm(M = 1");
	for (int i = 0; i < 60000; i++)
		sb_puts(&sb, " + 1");
	sb_puts(&sb, ", K = 4, N = 4);\n");
	Run r;
	compile(&r, sb.data, false);
	ck_assert_int_eq(r.errors, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "nested more than 256 operators deep"));
	done(&r);
	sb_free(&sb);

	sb_init(&sb);
	sb_puts(&sb, "pattern p0() { reorder m, k; }\n");
	for (int i = 1; i <= 20; i++)
		sb_printf(&sb, "pattern p%d() { apply p%d(); apply p%d(); }\n", i, i - 1, i - 1);
	sb_puts(&sb, "op q: spmm(M = 64, K = 64, N = 4) { apply p20(); }\n");
	compile(&r, sb.data, false);
	ck_assert_int_eq(r.errors, 1);
	ck_assert_ptr_nonnull(strstr(r.out, "op 'q' applies more than 1024 primitives"));
	done(&r);
	sb_free(&sb);
}
END_TEST

/* A pattern that applies itself is an error also where no op applies it:
 * a 50000-pattern cycle is reported once (with a bounded list of notes and
 * no recursion deep enough to overflow a stack), a shared sub-pattern
 * (a diamond, not a cycle) is not reported. */
START_TEST(recursion_without_op)
{
	enum { N = 50000 };
	StrBuf sb;
	sb_init(&sb);
	for (int i = 0; i < N; i++)
		sb_printf(&sb, "pattern p%d() { apply p%d(); }\n", i, (i + 1) % N);
	sb_puts(&sb, "pattern d0() { reorder m, k; }\n");
	for (int i = 1; i <= 30; i++)
		sb_printf(&sb, "pattern d%d() { apply d%d(); apply d%d(); }\n", i, i - 1, i - 1);
	sb_puts(&sb, "pattern self() { apply self(); apply self(); }\n");
	Run r;
	compile(&r, sb.data, false);
	ck_assert_int_eq(r.errors, 2);
	ck_assert_ptr_nonnull(strstr(r.out, "error: pattern 'p0' applies itself recursively"));
	ck_assert_ptr_nonnull(strstr(r.out, "note: in pattern 'p49999' applied here"));
	ck_assert_ptr_nonnull(strstr(r.out, "note: and 49991 more applications on the way"));
	ck_assert_ptr_null(strstr(r.out, "'p49991' applied here"));
	ck_assert_ptr_nonnull(strstr(r.out, "error: pattern 'self' applies itself recursively"));
	ck_assert_ptr_null(strstr(r.out, "'d"));
	done(&r);
	sb_free(&sb);
}
END_TEST

/* A tensor file that cannot be read says why; "not found" is for a file
 * that is not there (every access() failure was "not found"). */
START_TEST(unreadable_file_says_why)
{
	char file[] = "/tmp/patc_semahard_XXXXXX";
	int fd = mkstemp(file);
	ck_assert_int_ge(fd, 0);
	close(fd);
	StrBuf sb;
	sb_init(&sb);
	sb_printf(&sb, "op a: spmm(M = 4, K = 4, N = 1) {\n  weights = npy(\"%s/w.npy\");\n"
	               "  calibration = npy(\"%s/x.npy\");\n"
	               "  importance = safetensors(\"%s/s.safetensors\", \"s\");\n}\n",
	          file, file, file);
	sb_puts(&sb, "op b: spmm(M = 4, K = 4, N = 1) { weights = npy(\"/");
	for (int i = 0; i < 5000; i++)
		sb_putc(&sb, 'a');
	sb_puts(&sb, ".npy\"); }\n");
	sb_puts(&sb, "op c: spmm(M = 4, K = 4, N = 1) { weights = npy(\"/nonexistent-patc/w.npy\"); }\n");
	Run r;
	compile(&r, sb.data, false);
	unlink(file);
	ck_assert_int_eq(r.errors, 5);
	ck_assert_ptr_nonnull(strstr(r.out, "t.pat:2:17: error: cannot read file"));
	ck_assert_ptr_nonnull(strstr(r.out, "/w.npy': Not a directory"));
	ck_assert_ptr_nonnull(strstr(r.out, "/x.npy': Not a directory"));
	ck_assert_ptr_nonnull(strstr(r.out, "/s.safetensors': Not a directory"));
	ck_assert_ptr_nonnull(strstr(r.out, ": File name too long"));
	ck_assert_ptr_nonnull(strstr(r.out, "error: file '/nonexistent-patc/w.npy' not found"));
	done(&r);
	sb_free(&sb);
}
END_TEST

/* parse(print(ir)) is structurally equal to ir, for every op of every
 * PatternIR golden. */
START_TEST(goldens_parse_print_equal)
{
	const char *data = getenv("PATC_TEST_DATA");
	ck_assert_ptr_nonnull(data);
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/golden/pir", data);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int checked = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 4, ".pat"))
			continue;
		char path[2048];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		Arena arena;
		arena_init(&arena);
		Program p;
		ck_assert_int_eq(compile_quiet(path, NULL, &arena, &p), 0);
		for (int i = 0; i < p.nops; i++) {
			char *t = pir_print_text(p.ops[i].ir);
			Pir back;
			char err[256];
			ck_assert_msg(pir_read_text(t, &back, 1, err, sizeof err) == 1, "%s: %s", path, err);
			ck_assert_msg(pir_equal(p.ops[i].ir, &back), "%s: op %s differs", path, p.ops[i].name);
			free(t);
			checked++;
		}
		arena_free(&arena);
	}
	closedir(d);
	ck_assert_int_ge(checked, 15);
}
END_TEST

static Suite *frontend_suite(void)
{
	Suite *s = suite_create("frontend");
	TCase *tc = tcase_create("frontend");
	tcase_add_test(tc, op_and_pattern);
	tcase_add_test(tc, stdlib_include);
	tcase_add_test(tc, many_errors_one_run);
	tcase_add_test(tc, syntax_errors_recover);
	tcase_add_test(tc, gpu_rule_reported_at_perforate);
	tcase_add_test(tc, sandbox_refuses_files);
	tcase_add_test(tc, limits);
	tcase_add_test(tc, recursion_without_op);
	tcase_add_test(tc, unreadable_file_says_why);
	tcase_add_test(tc, goldens_parse_print_equal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(frontend_suite()); }
