/* SPDX-License-Identifier: MIT */
/* fuzz_weights.c - libFuzzer target over the weight-file readers.
 *
 * The first byte picks the reader (bit 0 clear: safetensors, set: npy);
 * the rest is the file image.  Whatever a reader accepts must be a finite
 * tensor of the shape it claims; whatever it refuses must come with a
 * message.  With bit 1 set the image is also read as a file, by ranges
 * from a memfd (pread, as patc reads a checkpoint), and must give the same
 * answer as from memory.
 */
#define _GNU_SOURCE /* memfd_create */
#include "weights/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const Tensor *t, const char *err)
{
	if (!ok) {
		if (!err[0])
			abort();
		return;
	}
	int64_t count = 1;
	for (int d = 0; d < t->rank; d++)
		count *= t->shape[d];
	if (count != t->count || count <= 0)
		abort();
	for (int64_t i = 0; i < t->count; i++)
		if (!isfinite(t->data[i]))
			abort();
}

static bool read_src(const TensorSrc *src, bool npy, Tensor *t, char err[TENSOR_ERR_MAX])
{
	return npy ? npy_read_src(src, t, err) : st_read_src(src, "w", t, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const bool npy = data[0] & 1;
	char err[TENSOR_ERR_MAX] = "";
	Tensor t;
	TensorSrc mem = tensor_src_mem(data + 1, size - 1, npy ? "fuzz.npy" : "fuzz.safetensors");
	bool ok = read_src(&mem, npy, &t, err);
	check(ok, &t, err);
	int fd = data[0] & 2 ? memfd_create("fuzz", 0) : -1;
	if (fd >= 0) {
		if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
			char ferr[TENSOR_ERR_MAX] = "";
			Tensor ft;
			TensorSrc file = {.file = mem.file, .fd = fd, .len = size - 1};
			bool fok = read_src(&file, npy, &ft, ferr);
			if (fok != ok || strcmp(ferr, err) != 0 ||
			    (ok && (ft.count != t.count || memcmp(ft.data, t.data, (size_t)t.count * sizeof(float)))))
				abort();
			if (fok)
				tensor_free(&ft);
		}
		close(fd);
	}
	if (ok)
		tensor_free(&t);
	return 0;
}
