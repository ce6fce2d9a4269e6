/* SPDX-License-Identifier: MIT */
/* fuzz_pat.c - libFuzzer target over the parser, the semantic pass, the
 * primitives and the PatternIR text form.
 *
 * Three modes, chosen by the input's first bytes:
 *   "pir ..."   the PatternIR reader; what it accepts must print and read
 *               back to an equal IR;
 *   0xFF ...    a byte-coded sequence of primitives on a small IR: accepted
 *               ones must verify and round-trip, refused ones must leave the
 *               IR untouched;
 *   otherwise   .pat source through the whole front end (sandboxed: no file
 *               access), then every op's IR through print/read and metrics;
 *               an input with NUL bytes is also lexed and parsed whole (the
 *               front end's entry takes a C string).
 * Any violated property aborts, which libFuzzer reports as a crash.
 */
#define _POSIX_C_SOURCE 200809L
#include "frontend/frontend.h"
#include "frontend/parse.h"
#include "ir/pir.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* (declared by ir/pir_read.c until ir/pir.h declares it) */
int pir_read_text_len(const char *text, size_t len, Pir *out, int max, char *err, size_t errlen);

static void check_round_trip(const Pir *ir)
{
	char *t = pir_print_text(ir);
	Pir back;
	char err[256];
	if (pir_read_text(t, &back, 1, err, sizeof err) != 1 || !pir_equal(ir, &back)) {
		fprintf(stderr, "round trip failed (%s):\n%s", err, t);
		abort();
	}
	char *t2 = pir_print_text(&back);
	if (strcmp(t, t2) != 0)
		abort();
	free(t);
	free(t2);
	PirMetrics m;
	pir_metrics(ir, &m);
	PirViolation v[PIR_MAX_LOOPS];
	pir_check_gpu(ir, v, PIR_MAX_LOOPS);
}

static void fuzz_pir(const char *text, size_t len)
{
	Pir *out = malloc(4 * sizeof *out);
	char err[256];
	int n = pir_read_text_len(text, len, out, 4, err, sizeof err);
	/* a NUL is an error with its place, never the end of the text */
	if (memchr(text, 0, len) && n >= 0 && !memchr(text, '#', len))
		abort();
	for (int i = 0; i < n; i++)
		check_round_trip(&out[i]);
	free(out);
}

static void fuzz_prims(const uint8_t *d, size_t n)
{
	static const int64_t dims[] = {1, 2, 3, 7, 16, 30, 64, 100, 576, 1000};
	if (n < 3)
		return;
	Pir ir;
	pir_init(&ir, "f", dims[d[1] % 10], dims[d[2] % 10]);
	int fresh = 0;
	for (size_t i = 3; i + 4 <= n; i += 4) {
		const uint8_t *b = d + i;
		PirPrim p;
		memset(&p, 0, sizeof p);
		p.kind = (PirPrimKind)(b[0] % PIR_NPRIMS);
		const char *loop = ir.loops[b[1] % ir.nloops].name;
		switch (p.kind) {
		case PIR_PRIM_SPLIT:
			pir_name_copy(p.u.split.loop, loop);
			p.u.split.n = 2 + b[2] % 3;
			for (int k = 0; k < p.u.split.n; k++) {
				snprintf(p.u.split.names[k], PIR_NAME_MAX, "s%d", fresh++);
				p.u.split.factor[k] = (b[3] >> (2 * k)) & 3 ? ((b[3] >> k) % 9) : 0;
			}
			p.u.split.pad = b[2] & 8;
			p.u.split.pad_amount = b[2] & 16 ? (b[2] >> 5) : -1;
			break;
		case PIR_PRIM_REORDER:
			p.u.reorder.n = 2 + b[2] % 3;
			for (int k = 0; k < p.u.reorder.n; k++)
				pir_name_copy(p.u.reorder.loops[k], ir.loops[(b[3] + k * b[2]) % ir.nloops].name);
			break;
		case PIR_PRIM_JOIN:
			p.u.join.n = 2;
			pir_name_copy(p.u.join.loops[0], loop);
			pir_name_copy(p.u.join.loops[1], ir.loops[b[2] % ir.nloops].name);
			snprintf(p.u.join.name, PIR_NAME_MAX, "j%d", fresh++);
			break;
		case PIR_PRIM_PERFORATE:
			pir_name_copy(p.u.perforate.loop, loop);
			p.u.perforate.is_percent = b[2] & 1;
			p.u.perforate.percent = (PirPercent){b[3] * 5, b[2] >> 6};
			p.u.perforate.keep = b[3] % 40;
			break;
		default:
			pir_name_copy(p.u.condense.loop, loop);
			break;
		}
		Pir before = ir;
		PirReason why;
		if (!pir_apply(&ir, &p, &why)) {
			if (memcmp(&ir, &before, sizeof ir) != 0 || !why.error[0])
				abort();
			continue;
		}
		check_round_trip(&ir);
	}
}

static void fuzz_pat(const char *text, size_t len)
{
	static FILE *sink;
	if (!sink)
		sink = fopen("/dev/null", "w");
	Arena arena;
	arena_init(&arena);
	Diag diag;
	diag_init(&diag, &arena, sink);
	FrontendOptions fo = {.sandbox = true, .target = "sm_80", .gpu = true, .trace = true};
	Program prog;
	frontend_compile(&fo, &diag, &arena, "fuzz.pat", text, &prog);
	if (memchr(text, 0, len)) { /* the bytes past the first NUL too */
		Diag whole;
		diag_init(&whole, &arena, sink);
		int file = diag_add_file(&whole, "fuzz-bytes.pat", text, len);
		Item *items = NULL;
		if (pat_parse_file(&whole, &arena, file, &items) == 0 && !memchr(text, '/', len))
			abort(); /* (a NUL outside a comment must be an error) */
	}
	for (int i = 0; i < prog.nops; i++) {
		if (prog.ops[i].ir)
			check_round_trip(prog.ops[i].ir);
		/* each step's text reads back, and the last one is the op's PatternIR */
		static Pir step;
		for (int t = 0; t < prog.ops[i].ntrace; t++)
			trace_step_ir(&prog.ops[i].trace[t], &step);
		if (prog.ops[i].ntrace && prog.ops[i].ok && !pir_equal(&step, prog.ops[i].ir))
			abort();
	}
	arena_free(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	if (size && data[0] == 0xFF) {
		fuzz_prims(data, size);
		return 0;
	}
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	if (size >= 4 && memcmp(text, "pir ", 4) == 0)
		fuzz_pir(text, size);
	else
		fuzz_pat(text, size);
	free(text);
	return 0;
}
