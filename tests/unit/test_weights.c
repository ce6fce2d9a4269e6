/* SPDX-License-Identifier: MIT */
/* test_weights.c - tensor files and synthetic weights: the safetensors
 * writer read back, npy orders and versions, half-precision conversions,
 * seeded synthetic weights and the pattern preferences their structure
 * gives (so tests can show preferences without real files). */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "frontend/frontend.h"
#include "prune/prune.h"
#include "support/util.h"
#include "weights/tensor.h"

#include <float.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

START_TEST(half_conversions)
{
	const float exact[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 0.00006103515625f, 5.960464477539063e-08f};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
		ck_assert(fp16_to_f32(f32_to_fp16(exact[i])) == exact[i]);
		ck_assert(signbit(fp16_to_f32(f32_to_fp16(exact[i]))) == signbit(exact[i]));
	}
	ck_assert(isinf(fp16_to_f32(f32_to_fp16(70000.0f))));
	ck_assert(isnan(fp16_to_f32(f32_to_fp16(NAN))));
	ck_assert(fp16_to_f32(f32_to_fp16(1.0f + 1.0f / 4096)) == 1.0f); /* ties to even */
	ck_assert(bf16_to_f32(f32_to_bf16(3.0f)) == 3.0f);
	ck_assert(bf16_to_f32(f32_to_bf16(1.00390625f)) == 1.0f); /* 1 + 2^-8: tie to even */
	ck_assert(isnan(bf16_to_f32(f32_to_bf16(NAN))));
}
END_TEST

START_TEST(safetensors_write_read)
{
	char path[] = "/tmp/patc-st-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	float a[6] = {1, -2, 3.5f, 0, 1e-3f, -7};
	uint16_t h[6], b[6];
	for (int i = 0; i < 6; i++)
		h[i] = f32_to_fp16(a[i]), b[i] = f32_to_bf16(a[i]);
	int32_t idx[3] = {0, 5, 2};
	StWrite t[] = {
		{"w.f32", DT_F32, 2, {2, 3}, a},
		{"w.f16", DT_F16, 2, {3, 2}, h},
		{"w.bf16", DT_BF16, 1, {6}, b},
		{"w.index", DT_I32, 2, {1, 3}, idx},
	};
	const char *keys[] = {"pir", "patc.version"}, *vals[] = {"pir w m=2 k=3 {\n}\n", "0.1.0"};
	char err[TENSOR_ERR_MAX];
	ck_assert_msg(st_write_file(path, t, 4, keys, vals, 2, err), "%s", err);
	Tensor r;
	ck_assert_msg(st_read_file(path, "w.f32", &r, err), "%s", err);
	ck_assert_int_eq(r.rank, 2);
	ck_assert_int_eq(r.shape[1], 3);
	ck_assert(memcmp(r.data, a, sizeof a) == 0);
	tensor_free(&r);
	ck_assert(st_read_file(path, "w.f16", &r, err));
	ck_assert_int_eq(r.stored, DT_F16);
	for (int i = 0; i < 6; i++)
		ck_assert(r.data[i] == fp16_to_f32(h[i]));
	tensor_free(&r);
	ck_assert(st_read_file(path, "w.bf16", &r, err));
	ck_assert(r.data[3] == 0 && r.data[5] == -7);
	tensor_free(&r);
	/* an integer tensor is listed but not read as weights */
	ck_assert(!st_read_file(path, "w.index", &r, err));
	ck_assert_ptr_nonnull(strstr(err, "has dtype I32"));
	StInfo *info;
	int n;
	ck_assert(st_list_file(path, &info, &n, err));
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(info[3].name, "w.index");
	free(info);
	unlink(path);
}
END_TEST

/* An npy image by hand: version, descr, order, shape, data. */
static size_t npy_image(uint8_t *buf, int version, const char *descr, bool fortran, int rows,
                        int cols, const void *data, size_t bytes)
{
	char hdr[128];
	int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': %s, 'shape': (%d, %d), }",
	                 descr, fortran ? "True" : "False", rows, cols);
	size_t pre = version == 1 ? 10 : 12, total = pre + (size_t)n + 1;
	size_t pad = (64 - total % 64) % 64;
	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)version, buf[7] = 0;
	size_t hl = (size_t)n + pad + 1;
	buf[8] = (uint8_t)hl, buf[9] = (uint8_t)(hl >> 8);
	if (version > 1)
		buf[10] = buf[11] = 0;
	memcpy(buf + pre, hdr, (size_t)n);
	memset(buf + pre + n, ' ', pad);
	buf[pre + n + pad] = '\n';
	memcpy(buf + pre + hl, data, bytes);
	return pre + hl + bytes;
}

START_TEST(npy_orders_and_versions)
{
	uint8_t buf[512];
	/* [[1, 2, 3], [4, 5, 6]] stored column-major */
	const float fortran[6] = {1, 4, 2, 5, 3, 6};
	char err[TENSOR_ERR_MAX];
	Tensor t;
	for (int version = 1; version <= 3; version++) {
		size_t len = npy_image(buf, version, "<f4", true, 2, 3, fortran, sizeof fortran);
		ck_assert_msg(npy_read_mem(buf, len, "f.npy", &t, err), "v%d: %s", version, err);
		for (int i = 0; i < 6; i++)
			ck_assert(t.data[i] == (float)(i + 1));
		tensor_free(&t);
	}
	uint16_t h[6];
	for (int i = 0; i < 6; i++)
		h[i] = f32_to_fp16((float)i / 2);
	size_t len = npy_image(buf, 1, "<f2", false, 2, 3, h, sizeof h);
	ck_assert(npy_read_mem(buf, len, "h.npy", &t, err));
	ck_assert(t.data[5] == 2.5f && t.stored == DT_F16);
	tensor_free(&t);
}
END_TEST

/* A safetensors image of one header and 8 bytes of data. */
static size_t st_image(uint8_t *buf, const char *header, const void *data, size_t bytes)
{
	const size_t n = strlen(header);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, header, n);
	memcpy(buf + 8 + n, data, bytes);
	return 8 + n + bytes;
}

/* What the readers refuse though a lenient parser would take it: text
 * after npy's dict, an escaped NUL in a tensor name (it would answer for
 * the name up to it), a field given twice (readers differ on which one
 * counts); and an F64 that rounds to FLT_MAX is in range. */
START_TEST(readers_refuse_ambiguity)
{
	uint8_t buf[512];
	char err[TENSOR_ERR_MAX];
	Tensor t;
	const float one[2] = {1, 2};
	size_t len = npy_image(buf, 1, "<f4", false, 1, 2, one, sizeof one);
	ck_assert(npy_read_mem(buf, len, "ok.npy", &t, err));
	tensor_free(&t);
	char *close = memchr(buf, '}', len);
	ck_assert_ptr_nonnull(close);
	memcpy(close + 1, " x", 2); /* within the padding */
	ck_assert(!npy_read_mem(buf, len, "trail.npy", &t, err));
	ck_assert_ptr_nonnull(strstr(err, "text after the closing '}'"));

	len = st_image(buf, "{\"w\\u0000x\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", one, sizeof one);
	ck_assert(!st_read_mem(buf, len, "nul.st", "w", &t, err));
	ck_assert_ptr_nonnull(strstr(err, "escaped NUL"));
	len = st_image(buf, "{\"w\\\\u0000\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", one, sizeof one);
	ck_assert_msg(st_read_mem(buf, len, "bs.st", "w\\u0000", &t, err), "%s", err); /* a backslash, then u0000 */
	tensor_free(&t);
	len = st_image(buf, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"dtype\":\"F16\",\"data_offsets\":[0,8]}}", one,
	               sizeof one);
	ck_assert(!st_read_mem(buf, len, "dup.st", "w", &t, err));
	ck_assert_ptr_nonnull(strstr(err, "has 'dtype' twice"));

	const double big[1] = {(double)FLT_MAX + 0x1p102}, past[1] = {(double)FLT_MAX + 0x1p103};
	len = st_image(buf, "{\"w\":{\"dtype\":\"F64\",\"shape\":[1,1],\"data_offsets\":[0,8]}}", big, sizeof big);
	ck_assert_msg(st_read_mem(buf, len, "max.st", "w", &t, err), "%s", err);
	ck_assert(t.data[0] == FLT_MAX);
	tensor_free(&t);
	len = st_image(buf, "{\"w\":{\"dtype\":\"F64\",\"shape\":[1,1],\"data_offsets\":[0,8]}}", past, sizeof past);
	ck_assert(!st_read_mem(buf, len, "past.st", "w", &t, err));

	/* as the reference implementation: the header begins with '{', and an
	 * empty tensor lies between others, not inside one */
	len = st_image(buf, "\xef\xbb\xbf{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", one,
	               sizeof one);
	ck_assert(!st_read_mem(buf, len, "bom.st", "w", &t, err));
	ck_assert_ptr_nonnull(strstr(err, "does not begin with '{'"));
	len = st_image(buf, " {\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", one, sizeof one);
	ck_assert(!st_read_mem(buf, len, "space.st", "w", &t, err));
	static const char *const empty[] = {",\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
	                                    ",\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}",
	                                    ",\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]}}"};
	for (int i = 0; i < 3; i++) {
		char hdr[160];
		snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}%s", empty[i]);
		len = st_image(buf, hdr, one, sizeof one);
		const bool read = st_read_mem(buf, len, "empty.st", "w", &t, err);
		ck_assert_msg(read == (i > 0), "empty tensor %d: %s", i, read ? "read" : err);
		if (read)
			tensor_free(&t);
		else
			ck_assert_ptr_nonnull(strstr(err, "[0, 8] and 'e' [4, 4] overlap"));
	}
}
END_TEST

/* A header entry with 100k keys besides its three is read, and a repeated
 * one refused, well within the test's timeout: a crafted header may hold
 * millions, so the check for repeats must not compare them pairwise.  Of
 * two repeated keys, the one used first is named. */
START_TEST(safetensors_many_keys)
{
	enum { KEYS = 100000 };
	const size_t cap = 64 + (size_t)KEYS * 16;
	char *hdr = malloc(cap);
	uint8_t *buf = malloc(cap + 16);
	ck_assert(hdr && buf);
	size_t o = (size_t)snprintf(hdr, cap, "{\"w\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]");
	for (int i = 0; i < KEYS; i++)
		o += (size_t)snprintf(hdr + o, cap - o, ",\"k%d\":0", i);
	snprintf(hdr + o, cap - o, "}}");
	const float one[2] = {1, 2};
	char err[TENSOR_ERR_MAX];
	Tensor t;
	size_t len = st_image(buf, hdr, one, sizeof one);
	ck_assert_msg(st_read_mem(buf, len, "many.st", "w", &t, err), "%s", err);
	ck_assert(t.count == 2 && t.data[1] == 2.0f);
	tensor_free(&t);

	snprintf(hdr + o, cap - o, ",\"k%d\":1,\"k3\":1}}", KEYS - 1);
	len = st_image(buf, hdr, one, sizeof one);
	ck_assert(!st_read_mem(buf, len, "manydup.st", "w", &t, err));
	ck_assert_msg(strstr(err, "tensor 'w': header entry has 'k3' twice"), "%s", err);
	free(hdr);
	free(buf);
}
END_TEST

/* A file is read by ranges: a tensor in the middle of a file (over a
 * chunk of 1 MiB, F16) is read whole; a file that shrinks after it was
 * opened (the header claims more than is left) is an error naming where it
 * ended, while what lies before the cut still reads. */
START_TEST(range_reader)
{
	char path[] = "/tmp/patc-range-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	enum { BN = 600 * 1000 };
	uint16_t *b = malloc(BN * sizeof *b);
	ck_assert_ptr_nonnull(b);
	for (int i = 0; i < BN; i++)
		b[i] = f32_to_fp16((float)(i % 1000) * 0.5f - 100);
	const float a[4] = {1, 2, 3, 4}, c[2] = {5, 6};
	StWrite t[] = {{"a", DT_F32, 1, {4}, a}, {"b", DT_F16, 2, {600, 1000}, b}, {"c", DT_F32, 1, {2}, c}};
	char err[TENSOR_ERR_MAX];
	ck_assert_msg(st_write_file(path, t, 3, NULL, NULL, 0, err), "%s", err);
	Tensor r;
	ck_assert_msg(st_read_file(path, "b", &r, err), "%s", err);
	ck_assert_int_eq(r.count, BN);
	for (int i = 0; i < BN; i++)
		if (r.data[i] != (float)(i % 1000) * 0.5f - 100)
			ck_abort_msg("b[%d] = %g", i, (double)r.data[i]);
	tensor_free(&r);
	ck_assert_msg(st_read_file(path, "c", &r, err), "%s", err);
	ck_assert(r.data[0] == 5 && r.data[1] == 6);
	tensor_free(&r);

	/* opened, then cut in the middle of b */
	TensorSrc src;
	ck_assert_msg(tensor_src_open(&src, path, err), "%s", err);
	const uint64_t full = src.len;
	ck_assert_int_eq(truncate(path, (off_t)(full - 8 - BN)), 0);
	err[0] = 0;
	ck_assert(!st_read_src(&src, "b", &r, err));
	ck_assert_msg(strstr(err, "the file ended at byte") && strstr(err, "when opened"), "%s", err);
	ck_assert_msg(st_read_src(&src, "a", &r, err), "%s", err); /* (before the cut) */
	ck_assert(r.data[3] == 4);
	tensor_free(&r);
	ck_assert(!st_read_src(&src, "c", &r, err));
	StInfo *info;
	int n;
	ck_assert_msg(st_list_src(&src, &info, &n, err), "%s", err); /* the header alone */
	ck_assert_int_eq(n, 3);
	free(info);
	uint8_t tail[64];
	ck_assert_int_eq(util_read_range(src.fd, full - 8 - BN - 10, tail, sizeof tail), 10);
	tensor_src_close(&src);
	/* reopened, the file's own size is checked first */
	ck_assert(!st_read_file(path, "a", &r, err));
	ck_assert_msg(strstr(err, "run past the data section"), "%s", err);

	/* npy: cut in its data after opening */
	uint8_t img[256];
	const float one[2] = {1, 2};
	size_t len = npy_image(img, 1, "<f4", false, 1, 2, one, sizeof one);
	FILE *f = fopen(path, "wb");
	ck_assert(f && fwrite(img, 1, len, f) == len && fclose(f) == 0);
	ck_assert_msg(npy_read_file(path, &r, err), "%s", err);
	ck_assert(r.data[1] == 2);
	tensor_free(&r);
	ck_assert(tensor_src_open(&src, path, err));
	ck_assert_int_eq(truncate(path, (off_t)(len - 2)), 0);
	ck_assert(!npy_read_src(&src, &r, err));
	ck_assert_msg(strstr(err, "the file ended at byte"), "%s", err);
	tensor_src_close(&src);
	/* not a regular file */
	ck_assert(!st_read_file("/tmp", "w", &r, err));
	ck_assert_msg(strstr(err, "cannot read: Is a directory"), "%s", err);
	free(b);
	unlink(path);
}
END_TEST

/* Names and dtype strings from a file are quoted by util_quote (its own
 * cases are in test_pir.c): their first 64 characters, control bytes and
 * invalid UTF-8 as \xNN. */
START_TEST(readers_quote_names)
{
	char long_name[300];
	memset(long_name, '\x01', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = 0;
	uint8_t buf[4096];
	char err[TENSOR_ERR_MAX], hdr[2048];
	Tensor t;
	const float one[2] = {1, 2};
	/* a name with a control escape and a raw invalid byte, an unknown dtype of 200 characters */
	snprintf(hdr, sizeof hdr, "{\"w\\u0007\xff\":{\"dtype\":\"%0200d\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", 7);
	size_t len = st_image(buf, hdr, one, sizeof one);
	ck_assert(!st_read_mem(buf, len, "q.st", "w", &t, err));
	ck_assert_msg(strstr(err, "tensor 'w\\x07\\xff': unknown dtype '0000"), "%s", err);
	ck_assert_msg(strstr(err, "0007") == NULL && strstr(err, "...'"), "%s", err);
	/* a missing tensor: the list of names and the name asked for, each cut */
	snprintf(hdr, sizeof hdr, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}", long_name);
	for (char *p = hdr; *p; p++)
		if (*p == '\x01')
			*p = 'x';
	len = st_image(buf, hdr, one, sizeof one);
	ck_assert(!st_read_mem(buf, len, "q.st", long_name, &t, err));
	ck_assert_msg(strstr(err, "no tensor '\\x01\\x01") && strstr(err, "...' in the file (it holds 1: 'xxxx") &&
	              strlen(err) < 500, "%s", err);
}
END_TEST

START_TEST(synthetic_is_seeded)
{
	float a[64 * 48], b[64 * 48], c[64 * 48];
	synth_weights(a, 64, 48, 11, SYNTH_HEADS, 16);
	synth_weights(b, 64, 48, 11, SYNTH_HEADS, 16);
	synth_weights(c, 64, 48, 12, SYNTH_HEADS, 16);
	ck_assert(memcmp(a, b, sizeof a) == 0);
	ck_assert(memcmp(a, c, sizeof a) != 0);
	/* plain weights have standard deviation 1/sqrt(K) */
	float p[256 * 256];
	synth_weights(p, 256, 256, 1, SYNTH_PLAIN, 1);
	double s = 0;
	for (int i = 0; i < 256 * 256; i++)
		s += (double)p[i] * p[i];
	ck_assert(fabs(sqrt(s / (256 * 256)) - 1.0 / 16) < 0.002);
}
END_TEST

/* Retained importance of a pattern on synthetic weights of a kind. */
static double retained(SynthKind kind, const char *body)
{
	enum { N = 256 };
	Arena arena;
	arena_init(&arena);
	char *text = arena_printf(&arena, "include \"all.pat\";\nop w: spmm(M = %d, K = %d, N = 1) { %s }\n",
	                          N, N, body);
	Program prog;
	ck_assert_int_eq(compile_quiet("t.pat", text, &arena, &prog), 0);
	static float w[N * N], imp[N * N];
	synth_weights(w, N, N, 3, kind, 32);
	prune_importance(PAT_IMP_MAGNITUDE, w, NULL, NULL, 0, N, N, imp);
	PruneMask pm;
	prune_mask_build(prog.ops[0].ir, imp, N, N, PAT_RANK_LOOKAHEAD, &pm);
	PruneMetrics m;
	prune_metrics(prog.ops[0].ir, &pm, imp, NULL, w, NULL, 0, N, N, &m);
	prune_mask_free(&pm);
	arena_free(&arena);
	return m.retained;
}

/* The structured kinds make patterns prefer what their structure fits. */
START_TEST(synthetic_preferences)
{
	const char *tv = "apply tile_v(32, 25%);", *th = "apply tile_h(32, 25%);";
	const char *blk = "apply block(32, 32, 25%);", *rb = "apply row_balanced(25%);";
	/* a scale per row: keeping whole rows (tile_h) beats keeping columns */
	ck_assert(retained(SYNTH_ROWS, th) > retained(SYNTH_ROWS, tv) + 0.1);
	/* a scale per column: the other way round */
	ck_assert(retained(SYNTH_COLS, tv) > retained(SYNTH_COLS, th) + 0.1);
	/* scaled blocks: blocks beat a fine pattern that spreads evenly */
	ck_assert(retained(SYNTH_HEADS, blk) > retained(SYNTH_HEADS, "apply nm(1, 4);") + 0.05);
	/* plain weights: nothing structured beats row-balanced */
	ck_assert(retained(SYNTH_PLAIN, rb) > retained(SYNTH_PLAIN, blk) + 0.1);
}
END_TEST

static Suite *weights_suite(void)
{
	Suite *s = suite_create("weights");
	TCase *tc = tcase_create("weights");
	tcase_add_test(tc, half_conversions);
	tcase_add_test(tc, safetensors_write_read);
	tcase_add_test(tc, npy_orders_and_versions);
	tcase_add_test(tc, readers_refuse_ambiguity);
	tcase_add_test(tc, safetensors_many_keys);
	tcase_add_test(tc, range_reader);
	tcase_add_test(tc, readers_quote_names);
	tcase_add_test(tc, synthetic_is_seeded);
	tcase_add_test(tc, synthetic_preferences);
	suite_add_tcase(s, tc);
	return s;
}

int main(void) { return run_suite(weights_suite()); }
