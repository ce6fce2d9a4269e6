/* SPDX-License-Identifier: MIT */
/* fp16.c - IEEE half and bfloat16 conversions (exact, round to nearest
 * even, NaN and Inf preserved). */
#include "tensor.h"

#include <string.h>

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float float_of(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float fp16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
	if (exp == 0x1f) /* Inf or NaN */
		return float_of(sign | 0x7f800000u | (man << 13));
	if (exp == 0) {
		if (man == 0)
			return float_of(sign);
		/* subnormal: value = man * 2^-24 */
		float v = (float)man * (1.0f / 16777216.0f);
		return sign ? -v : v;
	}
	return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

float bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t f32_to_bf16(float f)
{
	uint32_t u = bits_of(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

uint16_t f32_to_fp16(float f)
{
	uint32_t u = bits_of(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return sign | 0x7e00; /* NaN */
	if (a >= 0x477ff000u)     /* rounds to >= 65520: Inf */
		return sign | 0x7c00;
	if (a < 0x38800000u) { /* below the smallest normal half: subnormal or 0 */
		/* value in units of 2^-24, rounded to nearest even */
		float v = float_of(a) * 16777216.0f;
		uint32_t q = (uint32_t)v;
		float rest = v - (float)q;
		if (rest > 0.5f || (rest == 0.5f && (q & 1)))
			q++;
		return sign | (uint16_t)q;
	}
	uint32_t exp = (a >> 23) - 112, man = a & 0x7fffff;
	uint32_t h = (exp << 10) | (man >> 13), rest = man & 0x1fff;
	if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
		h++; /* may carry into the exponent, which is right */
	return sign | (uint16_t)h;
}
