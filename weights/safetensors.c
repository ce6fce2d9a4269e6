/* SPDX-License-Identifier: MIT */
/* safetensors.c - reading and writing .safetensors files.
 *
 * Format: an 8-byte little-endian header length N, N bytes of JSON (an object
 * mapping tensor names to {dtype, shape, data_offsets} plus an optional
 * "__metadata__" object of strings), then the data section; offsets are
 * relative to its start.  The reader trusts nothing: every entry of the
 * header is checked (not only the tensor asked for) before any data is read.
 * A file is read by ranges: the length, the header, then the tensor asked
 * for, in chunks converted as they come (a 16 KiB tensor of a 3 GiB
 * checkpoint costs its 16 KiB).  JSON parsing is cJSON's.
 */
#define _POSIX_C_SOURCE 200809L
#include "tensor.h"
#include "../support/outfile.h"
#include "../support/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const tensor_dtype_names[DT_COUNT] = {
#define X(e, name, bytes) name,
	TENSOR_DTYPES(X)
#undef X
};

const int tensor_dtype_bytes[DT_COUNT] = {
#define X(e, name, bytes) bytes,
	TENSOR_DTYPES(X)
#undef X
};

enum { ST_MAX_HEADER = 100 << 20, ST_MAX_TENSORS = 1 << 16, ST_CHUNK = 1 << 20 };

void tensor_free(Tensor *t)
{
	free(t->data);
	t->data = NULL;
}

bool tensor_fail(char err[TENSOR_ERR_MAX], const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, TENSOR_ERR_MAX, fmt, ap);
	va_end(ap);
	tensor_sanitize(err);
	return false;
}

bool tensor_src_open(TensorSrc *s, const char *path, char err[TENSOR_ERR_MAX])
{
	*s = (TensorSrc){.file = path, .fd = -1};
	/* (O_NONBLOCK: opening a FIFO does not wait for a writer; fstat refuses it) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return tensor_fail(err, "%s: cannot read: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return tensor_fail(err, "%s: cannot read: %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return tensor_fail(err, "%s: cannot read: %s", path,
		                   S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
	}
	s->fd = fd;
	s->len = (uint64_t)st.st_size;
	return true;
}

TensorSrc tensor_src_mem(const uint8_t *buf, size_t len, const char *file)
{
	return (TensorSrc){.file = file, .mem = buf, .fd = -1, .len = len};
}

void tensor_src_close(TensorSrc *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

bool tensor_src_read(const TensorSrc *s, uint64_t off, void *buf, size_t n, char err[TENSOR_ERR_MAX])
{
	if (off > s->len || n > s->len - off) /* (the readers check first: a caller's slip) */
		return tensor_fail(err, "%s: %zu bytes at offset %llu are past the end of the file (%llu bytes)",
		                   s->file, n, (unsigned long long)off, (unsigned long long)s->len);
	if (s->mem) {
		memcpy(buf, s->mem + off, n);
		return true;
	}
	ssize_t got = util_read_range(s->fd, off, buf, n);
	if (got < 0)
		return tensor_fail(err, "%s: cannot read: %s", s->file, strerror(errno));
	if ((size_t)got < n)
		return tensor_fail(err, "%s: the file ended at byte %llu, but it had %llu bytes when opened "
		                   "(did it change while read?)",
		                   s->file, (unsigned long long)(off + (uint64_t)got), (unsigned long long)s->len);
	return true;
}

void tensor_sanitize(char *msg)
{
	for (unsigned char *p = (unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?'; /* names from files may hold control characters */
}

/* A JSON value as text, for messages. */
static const char *json_text(const cJSON *j, char buf[UTIL_QUOTE_BUF])
{
	char *s = cJSON_PrintUnformatted(j);
	util_quote(s ? s : "?", buf);
	free(s);
	return buf;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static bool json_uint(const cJSON *j, int64_t *out)
{
	if (!cJSON_IsNumber(j))
		return false;
	double d = j->valuedouble;
	if (!(d >= 0 && d < 9007199254740992.0) || d != floor(d)) /* (2^53 + 1 reads as 2^53) */
		return false;
	*out = (int64_t)d;
	return true;
}

typedef struct Entry {
	const char *name;
	TensorDtype dtype;
	int rank;
	int64_t shape[TENSOR_MAX_RANK];
	int64_t begin, end;
} Entry;

/* By data_offsets, begin then end (an empty tensor before one it starts). */
static int cmp_begin(const void *a, const void *b)
{
	const Entry *x = *(const Entry *const *)a, *y = *(const Entry *const *)b;
	if (x->begin != y->begin)
		return (x->begin > y->begin) - (x->begin < y->begin);
	return (x->end > y->end) - (x->end < y->end);
}

static int cmp_name(const void *a, const void *b)
{
	const Entry *x = *(const Entry *const *)a, *y = *(const Entry *const *)b;
	return strcmp(x->name, y->name);
}

typedef struct Key {
	const char *s;
	size_t at; /* position in the object */
} Key;

static int cmp_key(const void *a, const void *b)
{
	const Key *x = a, *y = b;
	int c = strcmp(x->s, y->s);
	return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The first key of obj that appears again later in it, or NULL.  Sorted
 * rather than compared pairwise: a header may hold millions of keys.  Of
 * several repeated keys it names the one whose first use comes first, as
 * a scan from the front would. */
static const char *json_dup_key(const cJSON *obj)
{
	size_t n = 0;
	for (const cJSON *j = obj->child; j; j = j->next)
		n += j->string != NULL;
	if (n < 2)
		return NULL;
	Key *keys = malloc(n * sizeof *keys);
	if (!keys)
		util_oom();
	size_t k = 0;
	for (const cJSON *j = obj->child; j; j = j->next)
		if (j->string) {
			keys[k] = (Key){j->string, k};
			k++;
		}
	qsort(keys, n, sizeof *keys, cmp_key);
	const Key *first = NULL; /* equal keys sort by position, so each run starts at its first use */
	for (size_t i = 1; i < n; i++)
		if (strcmp(keys[i - 1].s, keys[i].s) == 0 && (!first || keys[i - 1].at < first->at))
			first = &keys[i - 1];
	const char *dup = first ? first->s : NULL;
	free(keys);
	return dup;
}

bool tensor_check_finite(const Tensor *t, const char *file, char err[TENSOR_ERR_MAX])
{
	for (int64_t i = 0; i < t->count; i++) {
		if (isfinite(t->data[i]))
			continue;
		char at[128] = "";
		size_t o = 0;
		int64_t rest = i;
		int64_t idx[TENSOR_MAX_RANK];
		for (int d = t->rank - 1; d >= 0; d--) {
			idx[d] = rest % t->shape[d];
			rest /= t->shape[d];
		}
		for (int d = 0; d < t->rank && o < sizeof at; d++)
			o += (size_t)snprintf(at + o, sizeof at - o, "%s%lld", d ? ", " : "", (long long)idx[d]);
		if (!t->name[0]) /* an npy file holds one unnamed array */
			return tensor_fail(err, "%s: the array holds %s at [%s]", file,
			            isnan(t->data[i]) ? "NaN" : "Inf", at);
		char q[UTIL_QUOTE_BUF];
		return tensor_fail(err, "%s: tensor '%s' holds %s at [%s]", file, util_quote(t->name, q),
		            isnan(t->data[i]) ? "NaN" : "Inf", at);
	}
	return true;
}

/* Converts count little-endian values of dtype at src to f32. */
static bool convert(const uint8_t *src, TensorDtype dt, int64_t count, float *dst, int64_t *bad)
{
	for (int64_t i = 0; i < count; i++) {
		const uint8_t *p = src + i * tensor_dtype_bytes[dt];
		switch (dt) {
		case DT_F32: {
			uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			             (uint32_t)p[3] << 24;
			memcpy(&dst[i], &u, 4);
			break;
		}
		case DT_F64: {
			uint64_t u = le64(p);
			double d;
			memcpy(&d, &u, 8);
			/* out of range: from half an ulp past FLT_MAX on (what rounds to it is in) */
			if (isfinite(d) && fabs(d) >= (double)FLT_MAX + 0x1p103) {
				*bad = i;
				return false;
			}
			dst[i] = (float)d;
			break;
		}
		case DT_F16: dst[i] = fp16_to_f32((uint16_t)(p[0] | p[1] << 8)); break;
		case DT_BF16: dst[i] = bf16_to_f32((uint16_t)(p[0] | p[1] << 8)); break;
		default: return false;
		}
	}
	return true;
}

/* The header's JSON object, checked as text: its length, no NUL (nor an
 * escaped one), nothing after the object.  NULL with err on failure;
 * *data_at: where the data section begins. */
static cJSON *st_header(const TensorSrc *src, uint64_t *data_at, char err[TENSOR_ERR_MAX])
{
	const char *file = src->file;
	const uint64_t len = src->len;
	if (len < 8) {
		tensor_fail(err, "%s: %llu bytes is too short for a safetensors file (8-byte header length missing)", file,
		            (unsigned long long)len);
		return NULL;
	}
	uint8_t lenbuf[8];
	if (!tensor_src_read(src, 0, lenbuf, 8, err))
		return NULL;
	const uint64_t n = le64(lenbuf);
	if (n > len - 8) {
		tensor_fail(err, "%s: header length %llu runs past the end of the file (%llu bytes)", file,
		            (unsigned long long)n, (unsigned long long)len);
		return NULL;
	}
	if (n > ST_MAX_HEADER) {
		tensor_fail(err, "%s: header of %llu bytes is larger than the %d allowed", file, (unsigned long long)n,
		            ST_MAX_HEADER);
		return NULL;
	}
	if (n < 2) {
		tensor_fail(err, "%s: header of %llu bytes cannot hold a JSON object", file, (unsigned long long)n);
		return NULL;
	}
	char *hdr = malloc((size_t)n);
	if (!hdr)
		util_oom_for("%s: a header of %llu bytes", file, (unsigned long long)n);
	cJSON *root = NULL;
	if (!tensor_src_read(src, 8, hdr, (size_t)n, err))
		goto done;
	if (hdr[0] != '{') { /* (as the reference implementation: no byte-order mark, no space before it) */
		tensor_fail(err, "%s: header does not begin with '{'", file);
		goto done;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (hdr[i] == 0) {
			tensor_fail(err, "%s: header holds a NUL byte at offset %llu", file, (unsigned long long)(8 + i));
			goto done;
		}
		/* nor one escaped: a name would end at it (and match a shorter one) */
		if (hdr[i] == '\\' && i + 1 < n && hdr[i + 1] == '\\') {
			i++;
		} else if (hdr[i] == '\\' && i + 5 < n && !memcmp(hdr + i + 1, "u0000", 5)) {
			tensor_fail(err, "%s: header holds an escaped NUL (\\u0000) at offset %llu", file,
			            (unsigned long long)(8 + i));
			goto done;
		}
	}
	const char *end = NULL;
	root = cJSON_ParseWithLengthOpts(hdr, (size_t)n, &end, false);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		long off = at && at >= hdr && at <= hdr + n ? (long)(at - hdr) + 8 : -1;
		tensor_fail(err, "%s: header is not valid JSON (error near byte %ld)", file, off);
		goto done;
	}
	for (const char *p = end; p < hdr + n; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
			tensor_fail(err, "%s: header has data after its JSON object (byte %ld)", file, (long)(p - hdr) + 8);
			cJSON_Delete(root);
			root = NULL;
			goto done;
		}
	PATC_ASSERT(cJSON_IsObject(root)); /* (it begins with '{') */
	*data_at = 8 + n;
done:
	free(hdr); /* (cJSON holds copies) */
	return root;
}

/* __metadata__: an object of strings. */
static bool st_metadata(const cJSON *j, const char *file, char err[TENSOR_ERR_MAX])
{
	char q[UTIL_QUOTE_BUF];
	if (!cJSON_IsObject(j))
		return tensor_fail(err, "%s: __metadata__ is not an object", file);
	for (const cJSON *m = j->child; m; m = m->next)
		if (!cJSON_IsString(m))
			return tensor_fail(err, "%s: __metadata__ value '%s' is not a string", file,
			                   util_quote(m->string ? m->string : "", q));
	return true;
}

/* One tensor's header entry j into e, checked against itself and the data
 * section's length. */
static bool st_entry(const cJSON *j, const char *file, uint64_t data_len, Entry *e, char err[TENSOR_ERR_MAX])
{
	char q1[UTIL_QUOTE_BUF], q2[UTIL_QUOTE_BUF];
	e->name = j->string ? j->string : "";
	const char *qn = util_quote(e->name, q1);
	if (!cJSON_IsObject(j))
		return tensor_fail(err, "%s: tensor '%s': header entry is not an object", file, qn);
	const char *twice = json_dup_key(j); /* readers would differ on which one counts */
	if (twice)
		return tensor_fail(err, "%s: tensor '%s': header entry has '%s' twice", file, qn, util_quote(twice, q2));
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
	const cJSON *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
	if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of))
		return tensor_fail(err, "%s: tensor '%s': header entry needs a string 'dtype', an array 'shape' and an "
		                   "array 'data_offsets'", file, qn);
	int d;
	for (d = 0; d < DT_COUNT; d++)
		if (strcmp(dt->valuestring, tensor_dtype_names[d]) == 0)
			break;
	if (d == DT_COUNT)
		return tensor_fail(err, "%s: tensor '%s': unknown dtype '%s'", file, qn, util_quote(dt->valuestring, q2));
	e->dtype = (TensorDtype)d;
	e->rank = cJSON_GetArraySize(sh);
	if (e->rank > TENSOR_READ_RANK)
		return tensor_fail(err, "%s: tensor '%s': rank %d (at most %d)", file, qn, e->rank, TENSOR_READ_RANK);
	int64_t bytes = tensor_dtype_bytes[d];
	int r = 0;
	for (const cJSON *s = sh->child; s; s = s->next, r++) {
		if (!json_uint(s, &e->shape[r]))
			return tensor_fail(err, "%s: tensor '%s': shape holds %s, not a non-negative integer below 2^53", file,
			                   qn, json_text(s, q2));
		if (__builtin_mul_overflow(bytes, e->shape[r], &bytes))
			return tensor_fail(err, "%s: tensor '%s': shape is too large", file, qn);
	}
	if (cJSON_GetArraySize(of) != 2 || !json_uint(of->child, &e->begin) || !json_uint(of->child->next, &e->end))
		return tensor_fail(err, "%s: tensor '%s': data_offsets must be two non-negative integers below 2^53", file,
		                   qn);
	if (e->end < e->begin)
		return tensor_fail(err, "%s: tensor '%s': data_offsets [%lld, %lld] end before they begin", file, qn,
		                   (long long)e->begin, (long long)e->end);
	if ((uint64_t)e->end > data_len)
		return tensor_fail(err, "%s: tensor '%s': data_offsets [%lld, %lld] run past the data section (%llu bytes)",
		                   file, qn, (long long)e->begin, (long long)e->end, (unsigned long long)data_len);
	if (e->end - e->begin != bytes)
		return tensor_fail(err, "%s: tensor '%s': %s shape needs %lld bytes but data_offsets hold %lld", file, qn,
		                   tensor_dtype_names[d], (long long)bytes, (long long)(e->end - e->begin));
	return true;
}

/* The entries' names distinct, and their bytes covering the data section
 * exactly, one after another, as the reference implementation requires: a
 * gap or a tail is a sign of a bad file, and so is a tensor (an empty one
 * too) inside another.  Sorts order. */
static bool st_layout(Entry **order, int ne, const char *file, uint64_t data_len, char err[TENSOR_ERR_MAX])
{
	char q1[UTIL_QUOTE_BUF], q2[UTIL_QUOTE_BUF];
	qsort(order, (size_t)ne, sizeof *order, cmp_name);
	for (int i = 1; i < ne; i++)
		if (strcmp(order[i - 1]->name, order[i]->name) == 0)
			return tensor_fail(err, "%s: tensor '%s' appears twice in the header", file,
			                   util_quote(order[i]->name, q1));
	qsort(order, (size_t)ne, sizeof *order, cmp_begin);
	int64_t covered = 0;
	for (int i = 0; i < ne; i++) {
		const Entry *e = order[i];
		if (e->begin > covered)
			return tensor_fail(err, "%s: %lld bytes of the data section before tensor '%s' belong to no tensor",
			                   file, (long long)(e->begin - covered), util_quote(e->name, q1));
		if (e->begin < covered) { /* (so i > 0, and the one before ends at covered) */
			const Entry *o = order[i - 1];
			return tensor_fail(err, "%s: tensors '%s' [%lld, %lld] and '%s' [%lld, %lld] overlap", file,
			                   util_quote(o->name, q1), (long long)o->begin, (long long)o->end,
			                   util_quote(e->name, q2), (long long)e->begin, (long long)e->end);
		}
		covered = e->end;
	}
	if ((uint64_t)covered != data_len)
		return tensor_fail(err, "%s: the last %llu bytes of the data section belong to no tensor", file,
		                   (unsigned long long)(data_len - (uint64_t)covered));
	return true;
}

/* "no tensor NAME", with the first few names the file holds, as many as
 * fit. */
static bool st_not_found(const Entry *entries, int ne, const char *file, const char *name, char err[TENSOR_ERR_MAX])
{
	char q1[UTIL_QUOTE_BUF], q2[UTIL_QUOTE_BUF], names[200] = "";
	size_t o = 0;
	int shown = 0;
	for (int i = 0; i < ne; i++) {
		int w = snprintf(names + o, sizeof names - o, "%s'%s'", i ? ", " : "", util_quote(entries[i].name, q2));
		if (w < 0 || (size_t)w >= sizeof names - o - 8) {
			names[o] = 0;
			break;
		}
		o += (size_t)w;
		shown++;
	}
	if (shown < ne)
		snprintf(names + o, sizeof names - o, "%s...", shown ? ", " : "");
	return tensor_fail(err, "%s: no tensor '%s' in the file (it holds %d: %s)", file, util_quote(name, q1), ne,
	                   ne ? names : "none");
}

/* The tensor of entry want into out (as f32), reading only its bytes, a
 * chunk at a time, from the data section at data_at. */
static bool st_values(const TensorSrc *src, const Entry *want, uint64_t data_at, const char *name, Tensor *out,
                      char err[TENSOR_ERR_MAX])
{
	const char *file = src->file;
	char q[UTIL_QUOTE_BUF];
	const char *qname = util_quote(name, q);
	if (want->dtype != DT_F32 && want->dtype != DT_F16 && want->dtype != DT_BF16 && want->dtype != DT_F64)
		return tensor_fail(err, "%s: tensor '%s' has dtype %s; patc reads F32, F16, BF16 or F64", file, qname,
		                   tensor_dtype_names[want->dtype]);
	int64_t count = 1;
	for (int d = 0; d < want->rank; d++)
		count *= want->shape[d];
	if (count == 0)
		return tensor_fail(err, "%s: tensor '%s' is empty", file, qname);
	snprintf(out->name, sizeof out->name, "%s", name);
	out->stored = want->dtype;
	out->rank = want->rank;
	memcpy(out->shape, want->shape, sizeof out->shape);
	out->count = count;
	out->data = malloc((size_t)count * sizeof(float));
	if (!out->data)
		util_oom_for("%s: tensor '%s': %lld values", file, qname, (long long)count);
	const int item = tensor_dtype_bytes[want->dtype];
	const int64_t per_chunk = ST_CHUNK / item;
	uint8_t *chunk = malloc((size_t)(count < per_chunk ? count : per_chunk) * (size_t)item);
	if (!chunk)
		util_oom();
	bool ok = true;
	for (int64_t at = 0; ok && at < count; at += per_chunk) {
		const int64_t k = count - at < per_chunk ? count - at : per_chunk;
		int64_t bad = -1;
		ok = tensor_src_read(src, data_at + (uint64_t)want->begin + (uint64_t)(at * item), chunk, (size_t)(k * item),
		                     err);
		if (ok && !convert(chunk, want->dtype, k, out->data + at, &bad))
			ok = tensor_fail(err, "%s: tensor '%s': F64 value at flat index %lld is out of float32 range", file,
			                 qname, (long long)(at + bad));
	}
	free(chunk);
	ok = ok && tensor_check_finite(out, file, err);
	if (!ok)
		tensor_free(out);
	return ok;
}

/* Validates the header; when list is not NULL, hands over the entries
 * instead of reading a tensor. */
static bool st_parse(const TensorSrc *src, const char *name, Tensor *out, StInfo **list, int *nlist,
                     char err[TENSOR_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	const char *file = src->file;
	uint64_t data_at = 0;
	cJSON *root = st_header(src, &data_at, err);
	if (!root)
		return false;
	const uint64_t data_len = src->len - data_at;
	bool ok = false, meta = false;
	Entry *entries = NULL, **order = NULL;
	int ne = 0;
	const int members = cJSON_GetArraySize(root);
	if (members > ST_MAX_TENSORS) {
		tensor_fail(err, "%s: header lists %d tensors (at most %d)", file, members, ST_MAX_TENSORS);
		goto done;
	}
	entries = calloc((size_t)members + 1, sizeof *entries);
	order = calloc((size_t)members + 1, sizeof *order);
	if (!entries || !order)
		util_oom();
	for (const cJSON *j = root->child; j; j = j->next) {
		if (j->string && strcmp(j->string, "__metadata__") == 0) {
			if (meta) { /* (which one a reader takes is its own choice) */
				tensor_fail(err, "%s: __metadata__ appears twice in the header", file);
				goto done;
			}
			meta = true;
			if (!st_metadata(j, file, err))
				goto done;
			continue;
		}
		if (!st_entry(j, file, data_len, &entries[ne], err))
			goto done;
		order[ne] = &entries[ne];
		ne++;
	}
	if (!st_layout(order, ne, file, data_len, err))
		goto done;
	if (list) {
		*list = calloc((size_t)ne + 1, sizeof **list);
		if (!*list)
			util_oom();
		for (int i = 0; i < ne; i++) {
			StInfo *si = &(*list)[i];
			snprintf(si->name, sizeof si->name, "%s", entries[i].name);
			si->dtype = entries[i].dtype;
			si->rank = entries[i].rank;
			memcpy(si->shape, entries[i].shape, sizeof si->shape);
		}
		*nlist = ne;
		ok = true;
		goto done;
	}
	const Entry *want = NULL;
	for (int i = 0; i < ne; i++)
		if (strcmp(entries[i].name, name) == 0)
			want = &entries[i];
	ok = want ? st_values(src, want, data_at, name, out, err) : st_not_found(entries, ne, file, name, err);
done:
	free(entries);
	free(order);
	cJSON_Delete(root);
	return ok;
}

bool st_read_src(const TensorSrc *src, const char *name, Tensor *out, char err[TENSOR_ERR_MAX])
{
	return st_parse(src, name, out, NULL, NULL, err);
}

bool st_list_src(const TensorSrc *src, StInfo **out, int *n, char err[TENSOR_ERR_MAX])
{
	Tensor unused;
	return st_parse(src, "", &unused, out, n, err);
}

bool st_read_mem(const uint8_t *buf, size_t len, const char *file, const char *name, Tensor *out,
                 char err[TENSOR_ERR_MAX])
{
	TensorSrc src = tensor_src_mem(buf, len, file);
	return st_read_src(&src, name, out, err);
}

bool st_list_file(const char *path, StInfo **out, int *n, char err[TENSOR_ERR_MAX])
{
	TensorSrc src;
	if (!tensor_src_open(&src, path, err))
		return false;
	bool ok = st_list_src(&src, out, n, err);
	tensor_src_close(&src);
	return ok;
}

bool st_read_file(const char *path, const char *name, Tensor *out, char err[TENSOR_ERR_MAX])
{
	memset(out, 0, sizeof *out);
	TensorSrc src;
	if (!tensor_src_open(&src, path, err))
		return false;
	bool ok = st_read_src(&src, name, out, err);
	tensor_src_close(&src);
	return ok;
}

bool st_write_file(const char *path, const StWrite *t, int n, const char *const *meta_keys,
                   const char *const *meta_values, int nmeta, char err[TENSOR_ERR_MAX])
{
	cJSON *root = cJSON_CreateObject();
	if (nmeta > 0) {
		cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
		for (int i = 0; i < nmeta; i++)
			cJSON_AddStringToObject(meta, meta_keys[i], meta_values[i]);
	}
	int64_t offset = 0;
	for (int i = 0; i < n; i++) {
		int64_t bytes = tensor_dtype_bytes[t[i].dtype];
		for (int d = 0; d < t[i].rank; d++)
			bytes *= t[i].shape[d];
		cJSON *e = cJSON_AddObjectToObject(root, t[i].name);
		cJSON_AddStringToObject(e, "dtype", tensor_dtype_names[t[i].dtype]);
		cJSON *sh = cJSON_AddArrayToObject(e, "shape");
		for (int d = 0; d < t[i].rank; d++)
			cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[d]));
		cJSON *of = cJSON_AddArrayToObject(e, "data_offsets");
		cJSON_AddItemToArray(of, cJSON_CreateNumber((double)offset));
		cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(offset + bytes)));
		offset += bytes;
	}
	char *json = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!json)
		util_oom();
	size_t hl = strlen(json), padded = (hl + 7) & ~(size_t)7;
	size_t total = 8 + padded + (size_t)offset;
	uint8_t *buf = malloc(total);
	if (!buf)
		util_oom();
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)((uint64_t)padded >> (8 * i));
	memcpy(buf + 8, json, hl);
	memset(buf + 8 + hl, ' ', padded - hl);
	free(json);
	size_t at = 8 + padded;
	for (int i = 0; i < n; i++) {
		int64_t bytes = tensor_dtype_bytes[t[i].dtype];
		for (int d = 0; d < t[i].rank; d++)
			bytes *= t[i].shape[d];
		memcpy(buf + at, t[i].data, (size_t)bytes); /* little-endian host */
		at += (size_t)bytes;
	}
	bool ok = outfile_write(path, (const char *)buf, total);
	if (!ok)
		tensor_fail(err, "cannot write '%s': %s", path, strerror(errno));
	free(buf);
	return ok;
}
