/* SPDX-License-Identifier: MIT */
/* npy.c - reading NumPy .npy files.
 *
 * Format: the magic "\x93NUMPY", a major and minor version byte, a header
 * length (2 bytes in version 1, 4 in versions 2 and 3), and a header that is
 * a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape':
 * (M, K), } padded with spaces and a newline; then the data.  Only the
 * restricted literal NumPy writes is accepted.  Little-endian f4 and f2 are
 * read; Fortran order is converted to C order.  A file is read by ranges:
 * the header, then the data (its size is known from the file's, by fstat).
 */
#include "tensor.h"
#include "../support/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NPY_MAX_HEADER = 1 << 20, NPY_CHUNK = 1 << 20 };

typedef struct Lit {
	const char *p, *end;
} Lit;

static void skip_ws(Lit *l)
{
	while (l->p < l->end && (*l->p == ' ' || *l->p == '\t' || *l->p == '\n' || *l->p == '\r'))
		l->p++;
}

static bool eat(Lit *l, char c)
{
	skip_ws(l);
	if (l->p < l->end && *l->p == c) {
		l->p++;
		return true;
	}
	return false;
}

/* A quoted Python string ('...' or "..."), without escapes. */
static bool lit_string(Lit *l, char *out, size_t n)
{
	skip_ws(l);
	if (l->p >= l->end || (*l->p != '\'' && *l->p != '"'))
		return false;
	char q = *l->p++;
	size_t o = 0;
	while (l->p < l->end && *l->p != q) {
		if (*l->p == '\\' || o + 1 >= n)
			return false;
		out[o++] = *l->p++;
	}
	if (l->p >= l->end)
		return false;
	l->p++;
	out[o] = 0;
	return true;
}

static bool lit_word(Lit *l, const char *w)
{
	skip_ws(l);
	size_t n = strlen(w);
	if ((size_t)(l->end - l->p) >= n && memcmp(l->p, w, n) == 0) {
		l->p += n;
		return true;
	}
	return false;
}

/* Reads the header (at start, hl bytes), then the data. */
static bool npy_parse(const TensorSrc *src, const char *hdr, size_t start, size_t hl, Tensor *out,
                      char err[TENSOR_ERR_MAX]);

bool npy_read_src(const TensorSrc *src, Tensor *out, char err[TENSOR_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	const char *file = src->file;
	const uint64_t len = src->len;
	uint8_t buf[12];
	if (len >= 6 && !tensor_src_read(src, 0, buf, 6, err))
		return false;
	if (len < 6 || memcmp(buf, "\x93NUMPY", 6) != 0)
		return tensor_fail(err, "%s: not a .npy file (no \\x93NUMPY magic)", file);
	if (len < 10)
		return tensor_fail(err, "%s: truncated in the header", file);
	if (!tensor_src_read(src, 6, buf + 6, len < 12 ? 4 : 6, err))
		return false;
	int major = buf[6];
	size_t hl, start;
	if (major == 1) {
		hl = (size_t)buf[8] | (size_t)buf[9] << 8;
		start = 10;
	} else if (major == 2 || major == 3) {
		if (len < 12)
			return tensor_fail(err, "%s: truncated in the header length", file);
		hl = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
		start = 12;
	} else {
		return tensor_fail(err, "%s: .npy version %d.%d (patc reads 1.0 to 3.0)", file, major, buf[7]);
	}
	if (hl > len - start)
		return tensor_fail(err, "%s: header length %zu runs past the end of the file (%llu bytes)", file,
		            hl, (unsigned long long)len);
	if (hl > NPY_MAX_HEADER) /* (NumPy writes a few hundred bytes; a sparse file could claim 4 GiB) */
		return tensor_fail(err, "%s: header of %zu bytes is larger than the %d allowed", file, hl,
		                   NPY_MAX_HEADER);
	char *hdr = malloc(hl + 1);
	if (!hdr)
		util_oom();
	bool ok = tensor_src_read(src, start, hdr, hl, err) && npy_parse(src, hdr, start, hl, out, err);
	free(hdr);
	return ok;
}

/* The header's 'shape' tuple into out->rank and out->shape. */
static bool lit_shape(Lit *l, Tensor *out, const char *file, char err[TENSOR_ERR_MAX])
{
	if (!eat(l, '('))
		return tensor_fail(err, "%s: 'shape' is not a tuple", file);
	out->rank = 0;
	while (!eat(l, ')')) {
		skip_ws(l);
		int64_t v = 0;
		int digits = 0;
		while (l->p < l->end && *l->p >= '0' && *l->p <= '9') {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *l->p - '0', &v))
				return tensor_fail(err, "%s: a dimension of 'shape' is too large", file);
			l->p++, digits++;
		}
		if (!digits)
			return tensor_fail(err, "%s: malformed 'shape' tuple", file);
		if (out->rank == TENSOR_READ_RANK)
			return tensor_fail(err, "%s: rank above %d", file, TENSOR_READ_RANK);
		out->shape[out->rank++] = v;
		if (!eat(l, ',') && !(skip_ws(l), l->p < l->end && *l->p == ')'))
			return tensor_fail(err, "%s: malformed 'shape' tuple", file);
	}
	return true;
}

/* The count values of item bytes (dtype dt) at data into out, read a chunk
 * at a time and converted as they come, reordered from Fortran order
 * where fortran. */
static bool npy_values(const TensorSrc *src, uint64_t data, TensorDtype dt, int item, int64_t count, bool fortran,
                       Tensor *out, char err[TENSOR_ERR_MAX])
{
	const char *file = src->file;
	out->stored = dt;
	out->count = count;
	float *raw = malloc((size_t)count * sizeof(float));
	if (!raw)
		util_oom_for("%s: %lld values", file, (long long)count);
	/* the data a chunk at a time, converted as it comes */
	const int64_t per_chunk = NPY_CHUNK / item;
	uint8_t *chunk = malloc((size_t)(count < per_chunk ? count : per_chunk) * (size_t)item);
	if (!chunk)
		util_oom();
	for (int64_t at = 0; at < count; at += per_chunk) {
		const int64_t k = count - at < per_chunk ? count - at : per_chunk;
		if (!tensor_src_read(src, data + (uint64_t)(at * item), chunk, (size_t)(k * item), err)) {
			free(chunk);
			free(raw);
			out->count = 0;
			return false;
		}
		const uint8_t *p = chunk;
		for (int64_t i = at; i < at + k; i++, p += item) {
			if (item == 4) {
				uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				             (uint32_t)p[3] << 24;
				memcpy(&raw[i], &u, 4);
			} else {
				raw[i] = fp16_to_f32((uint16_t)(p[0] | p[1] << 8));
			}
		}
	}
	free(chunk);
	if (fortran && out->rank > 1) {
		/* element (i0, ..., in-1) is at sum i_d * prod_{e<d} shape_e */
		float *c = malloc((size_t)count * sizeof(float));
		if (!c)
			util_oom_for("%s: %lld values", file, (long long)count);
		int64_t idx[TENSOR_MAX_RANK] = {0};
		for (int64_t i = 0; i < count; i++) {
			int64_t f = 0, s = 1;
			for (int d = 0; d < out->rank; d++) {
				f += idx[d] * s;
				s *= out->shape[d];
			}
			c[i] = raw[f];
			for (int d = out->rank - 1; d >= 0 && ++idx[d] == out->shape[d]; d--)
				idx[d] = 0;
		}
		free(raw);
		raw = c;
	}
	out->data = raw;
	if (!tensor_check_finite(out, file, err)) {
		tensor_free(out);
		return false;
	}
	return true;
}

static bool npy_parse(const TensorSrc *src, const char *hdr, size_t start, size_t hl, Tensor *out,
                      char err[TENSOR_ERR_MAX])
{
	const char *file = src->file;
	const uint64_t len = src->len;
	char q[UTIL_QUOTE_BUF];
	Lit l = {hdr, hdr + hl};
	char descr[32] = "";
	bool have_descr = false, have_order = false, have_shape = false, fortran = false;
	if (!eat(&l, '{'))
		return tensor_fail(err, "%s: header is not a dict literal", file);
	while (!eat(&l, '}')) {
		char key[32];
		if (!lit_string(&l, key, sizeof key) || !eat(&l, ':'))
			return tensor_fail(err, "%s: malformed header (expected 'key': value)", file);
		if ((!strcmp(key, "descr") && have_descr) || (!strcmp(key, "shape") && have_shape) ||
		    (!strcmp(key, "fortran_order") && have_order))
			return tensor_fail(err, "%s: header key '%s' appears twice", file, util_quote(key, q));
		if (strcmp(key, "descr") == 0) {
			if (!lit_string(&l, descr, sizeof descr))
				return tensor_fail(err, "%s: malformed 'descr' in the header", file);
			have_descr = true;
		} else if (strcmp(key, "fortran_order") == 0) {
			if (lit_word(&l, "True"))
				fortran = true;
			else if (!lit_word(&l, "False"))
				return tensor_fail(err, "%s: 'fortran_order' is neither True nor False", file);
			have_order = true;
		} else if (strcmp(key, "shape") == 0) {
			if (!lit_shape(&l, out, file, err))
				return false;
			have_shape = true;
		} else {
			return tensor_fail(err, "%s: unknown header key '%s'", file, util_quote(key, q));
		}
		if (!eat(&l, ',')) {
			if (!eat(&l, '}'))
				return tensor_fail(err, "%s: malformed header (expected ',' or '}')", file);
			break;
		}
	}
	skip_ws(&l); /* (numpy pads the header with spaces and a newline) */
	if (l.p < l.end)
		return tensor_fail(err, "%s: malformed header (text after the closing '}')", file);
	if (!have_descr || !have_order || !have_shape)
		return tensor_fail(err, "%s: header lacks %s", file,
		            !have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'");
	int item;
	TensorDtype dt;
	if (strcmp(descr, "<f4") == 0)
		item = 4, dt = DT_F32;
	else if (strcmp(descr, "<f2") == 0)
		item = 2, dt = DT_F16;
	else if (strcmp(descr, ">f4") == 0 || strcmp(descr, ">f2") == 0)
		return tensor_fail(err, "%s: big-endian data ('%s'); save it little-endian", file,
		                   util_quote(descr, q));
	else
		return tensor_fail(err, "%s: dtype '%s' (patc reads little-endian float32 '<f4' and float16 "
		                 "'<f2')", file, util_quote(descr, q));
	int64_t count = 1;
	for (int d = 0; d < out->rank; d++)
		if (__builtin_mul_overflow(count, out->shape[d], &count))
			return tensor_fail(err, "%s: shape is too large", file);
	if (count == 0)
		return tensor_fail(err, "%s: the array is empty", file);
	const uint64_t data = start + hl;
	if ((uint64_t)count > (len - data) / (uint64_t)item)
		return tensor_fail(err, "%s: truncated: the shape needs %lld values of %d bytes, the file has %llu "
		                 "bytes of data", file, (long long)count, item, (unsigned long long)(len - data));
	if ((uint64_t)count * (uint64_t)item != len - data)
		return tensor_fail(err, "%s: %llu bytes after the data the shape describes", file,
		            (unsigned long long)(len - data - (uint64_t)count * (uint64_t)item));
	return npy_values(src, data, dt, item, count, fortran, out, err);
}

bool npy_read_mem(const uint8_t *buf, size_t len, const char *file, Tensor *out,
                  char err[TENSOR_ERR_MAX])
{
	TensorSrc src = tensor_src_mem(buf, len, file);
	return npy_read_src(&src, out, err);
}

bool npy_read_file(const char *path, Tensor *out, char err[TENSOR_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	TensorSrc src;
	if (!tensor_src_open(&src, path, err))
		return false;
	bool ok = npy_read_src(&src, out, err);
	tensor_src_close(&src);
	return ok;
}
