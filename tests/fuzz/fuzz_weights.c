/* fuzz_weights.c - libFuzzer target over the weight-file readers.
 *
 * The first byte picks the reader (even: safetensors, odd: npy); the rest
 * is the file image.  Whatever a reader accepts must be a finite tensor of
 * the shape it claims; whatever it refuses must come with a message.
 */
#include "weights/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char err[TENSOR_ERR_MAX] = "";
	Tensor t;
	bool ok;
	if (data[0] & 1) {
		ok = npy_read_mem(data + 1, size - 1, "fuzz.npy", &t, err);
	} else {
		ok = st_read_mem(data + 1, size - 1, "fuzz.safetensors", "w", &t, err);
	}
	check(ok, &t, err);
	if (ok)
		tensor_free(&t);
	return 0;
}
