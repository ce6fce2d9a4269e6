/* SPDX-License-Identifier: MIT */
/* emulate_warp.c - a warp's collectives on the GPU emulator (see
 * emulate.c): mma.m16n8k16, mma.sp.m16n8k32, ldmatrix.x4 and
 * wgmma.mma_async with its commit and wait_group, carried out by the last
 * of the warp's 32 lanes to arrive, fragments laid out as the PTX ISA
 * documents (see tc.c); a wgmma's descriptors decoded and what it reads
 * checked against shared memory's shadow.  The others park until then,
 * as a thread at a barrier does. */
#define _POSIX_C_SOURCE 200809L
#include "emulate_impl.h"
#include "../weights/tensor.h"

#include <stdlib.h>
#include <string.h>

static float half_to_f32(uint16_t h, int32_t f16) { return f16 ? fp16_to_f32(h) : bf16_to_f32(h); }

/* The 16-bit element `hi` of word w as a float. */
static float elem(int32_t w, int hi, int32_t f16) { return half_to_f32((uint16_t)((uint32_t)w >> (hi ? 16 : 0)), f16); }

/* D = A B + C for the warp, A 16 x kdim and B kdim x 8 (row-major), C
 * and D in the lanes' accumulators (rows g and g + 8, columns 2t, 2t + 1). */
static void warp_product(Warp *w, const float *A, const float *B, int kdim)
{
	float D[LANES][4];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++) {
			const int i = g + (e & 2 ? 8 : 0), j = 2 * t + (e & 1);
			float d = w->c[l][e];
			for (int kk = 0; kk < kdim; kk++)
				d += A[i * kdim + kk] * B[kk * 8 + j];
			D[l][e] = d;
		}
	}
	memcpy(w->c, D, sizeof D);
}

/* B's kdim x 8 from the lanes' words (word r: k 8r + 2t, + 1 of column g). */
static void warp_b(const Warp *w, int words, float *B, int32_t f16)
{
	for (int l = 0; l < LANES; l++)
		for (int e = 0; e < words; e++)
			for (int h = 0; h < 2; h++)
				B[(8 * e + 2 * (l % 4) + h) * 8 + l / 4] = elem(w->b[l][e], h, f16);
}

/* mma.m16n8k16: D = A B + C for the warp, from every lane's fragments. */
static void warp_mma(Warp *w, int32_t f16)
{
	float A[16][16], B[16][8];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++)
			for (int h = 0; h < 2; h++)
				A[g + (e & 1 ? 8 : 0)][2 * t + h + (e & 2 ? 8 : 0)] = elem(w->a[l][e], h, f16);
	}
	warp_b(w, 2, &B[0][0], f16);
	warp_product(w, &A[0][0], &B[0][0], 16);
}

/* mma.sp.m16n8k32: the same, A 2:4 sparse (see tc_mma.c). */
static void warp_mma_sp(Warp *w, int32_t f16)
{
	float A[16][32] = {{0}}, B[32][8];
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < 4; e++)
			for (int h = 0; h < 2; h++) {
				const int row = g + (e & 1 ? 8 : 0), chunk = t + (e & 2 ? 4 : 0);
				/* the metadata of the row's chunk: lane 4g + chunk / 4, its half
				 * for the row, the chunk's nibble, the kept k's 2 bits */
				const uint32_t meta = (uint32_t)w->e[4 * (row % 8) + chunk / 4];
				const unsigned nib = (meta >> (16 * (row / 8) + 4 * (chunk % 4))) & 15;
				/* the PTX ISA's valid pairs for 16-bit types: two distinct
				 * k, the first in the low bits (0b0100, 0b1000, ... 0b1110) */
				w->badmeta |= (nib & 3) >= nib >> 2;
				A[row][4 * chunk + (int)(nib >> (2 * h) & 3)] = elem(w->a[l][e], h, f16);
			}
	}
	warp_b(w, 4, &B[0][0], f16);
	warp_product(w, &A[0][0], &B[0][0], 32);
}

/* ldmatrix.x4 for the warp: matrix q is the rows lanes 8q .. 8q + 7
 * address; lane (g, t) gets of each its row g, columns 2t and 2t + 1, or
 * transposed its column g, rows 2t and 2t + 1. */
static void warp_ldm(Warp *w, int32_t trans)
{
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int q = 0; q < 4; q++) {
			const uint16_t *const *r = &w->row[8 * q];
			uint16_t lo = trans ? r[2 * t][g] : r[g][2 * t], hi = trans ? r[2 * t + 1][g] : r[g][2 * t + 1];
			w->got[l][q] = (int32_t)((uint32_t)lo | (uint32_t)hi << 16);
		}
	}
}

/* The byte offset in shared memory of element (row or column i, k j) of
 * a wgmma operand through its descriptor's start address, leading and
 * stride byte offsets, M- or N-major (mn) or K-major: see wg_offsets. */
static int64_t wg_at(const int64_t d[3], int mn, int i, int j)
{
	return d[0] + (mn ? 2 * (i % 8) + (i / 8) * d[2] + 16 * (j % 8) + (j / 8) * d[1]
	                  : 16 * (i % 8) + (i / 8) * d[2] + 2 * (j % 8) + (j / 8) * d[1]);
}

enum { WG_READS = 16 * 16 + 16 * 128 };

/* The offsets in shared memory of what wgmma.mma_async.m64nNk16 p reads
 * for warp v of its warpgroup (rows 16 v .. 16 v + 15 of D = A B + C): A's
 * 16 x 16, row by row, then B's 16 x N, k by k, into at; how many, or -1
 * where p asks what the hardware refuses or reads past shared memory.
 * The descriptors hold the start address, the leading and the stride byte
 * offsets, each in 16-byte units, in bits 0-13, 16-29 and 32-45
 * (swizzling, bits 62-63, and the base offset, bits 49-51, must be 0); the
 * PTX ISA's canonical layouts without swizzling, for 16-bit elements (8
 * to 16 bytes): K-major ((8,m),(8,2)):((8,SBO),(1,LBO)), element (row i,
 * k j) at 2 (i % 8) 8 + (i / 8) SBO + 2 (j % 8) + (j / 8) LBO bytes, for A
 * without imm-trans-a and B without imm-trans-b; M- or N-major
 * ((8,1,m),(8,k)):((1,8,SBO),(8,LBO)), (row or column i, k j) at 2 (i % 8)
 * + (i / 8) SBO + 2 (j % 8) 8 + (j / 8) LBO.  info as PtxEmuWgmma's:
 * N in bits 0-8, imm-trans-b bit 9, v bits 10-11, f16 bit 12, imm-trans-a
 * bit 13. */
static int wg_offsets(const WgPend *p, int64_t at[WG_READS])
{
	const int32_t info = p->info;
	const int n = info & 511, trans = info >> 9 & 1, v = info >> 10 & 3, trans_a = info >> 13 & 1;
	if (n < 8 || n > 128 || n % 8)
		return -1;
	int64_t d[2][3];
	for (int o = 0; o < 2; o++) {
		const uint64_t desc = (uint64_t)p->desc[o];
		if ((desc >> 62) != 0 || (desc >> 49 & 7) != 0)
			return -1;
		d[o][0] = (int64_t)(desc & 0x3FFF) << 4;
		d[o][1] = (int64_t)(desc >> 16 & 0x3FFF) << 4;
		d[o][2] = (int64_t)(desc >> 32 & 0x3FFF) << 4;
	}
	int k = 0;
	for (int i = 0; i < 16; i++)
		for (int j = 0; j < 16; j++)
			at[k++] = wg_at(d[0], trans_a, 16 * v + i, j);
	for (int j = 0; j < 16; j++)
		for (int col = 0; col < n; col++)
			at[k++] = wg_at(d[1], trans, col, j);
	for (int i = 0; i < k; i++)
		if (at[i] < 0 || at[i] + 2 > p->bytes)
			return -1;
	return k;
}

/* The warp's wgmma.mma_async, from what its lanes passed: queued until
 * a wgmma.wait_group completes it (emu_wg_complete), what it reads checked now
 * (a copy in flight to it, a write not fenced for the tensor cores: the
 * warp's first thread, reader, reads it) and marked as read by a wgmma in
 * flight, so that a write to it before then is a race. */
static void warp_wgmma(Block *b, Warp *w, int reader)
{
	const int32_t info = w->winfo[0];
	for (int l = 0; l < LANES; l++)
		w->mixed |= w->winfo[l] != info || w->wd[l][0] != w->wd[0][0] || w->wd[l][1] != w->wd[0][1];
	WgPend p = {.group = w->wgroups + 1,
	            .smem = w->wsmem,
	            .bytes = w->wbytes,
	            .desc = {w->wd[0][0], w->wd[0][1]},
	            .info = info};
	memcpy(p.c, w->wc, sizeof p.c);
	int64_t at[WG_READS];
	const int n = wg_offsets(&p, at);
	if (n < 0) {
		w->baddesc = true;
		return;
	}
	WgPend *q = emu_room(b, w->wq, w->nwq, &w->wqcap, sizeof *q);
	if (!q)
		return;
	w->wq = q; /* (emu_room may have moved it) */
	const int ri = emu_region_of(b, p.smem, p.bytes);
	if (ri < 0)
		return;
	w->wq[w->nwq++] = p;
	Region *r = &b->region[ri];
	for (int i = 0; i < n; i++) {
		emu_sh_read(b, r, at[i], 2, reader, true);
		r->wgrd[at[i]]++, r->wgrd[at[i] + 1]++;
	}
}

/* Completes the warp's wgmma p (D = A B + C into its lanes'
 * accumulators: lane (g, t) holds for each 8-column tile i, in 4i .. 4i +
 * 3, rows g and g + 8 of the warp's, columns 8i + 2t, + 1), reading
 * shared memory now (warp_wgmma made sure no one wrote it since), or,
 * with !run, drops it. */
void emu_wg_complete(Block *b, const WgPend *p, bool run)
{
	int64_t at[WG_READS];
	const int n = wg_offsets(p, at), cols = p->info & 511, f16 = p->info >> 12 & 1;
	Region *r = &b->region[emu_region_of(b, p->smem, p->bytes)]; /* (found when it was queued) */
	for (int i = 0; i < n; i++)
		r->wgrd[at[i]]--, r->wgrd[at[i] + 1]--;
	if (!run)
		return;
	float v[WG_READS];
	for (int i = 0; i < n; i++) {
		uint16_t h;
		memcpy(&h, p->smem + at[i], 2);
		v[i] = half_to_f32(h, f16);
	}
	const float *A = v, *B = v + 16 * 16;
	for (int l = 0; l < LANES; l++) {
		const int g = l / 4, t = l % 4;
		for (int e = 0; e < cols / 2; e++) {
			const int i = g + (e & 2 ? 8 : 0), col = 8 * (e / 4) + 2 * t + (e & 1);
			float d = p->c[l][e];
			for (int j = 0; j < 16; j++)
				d += A[i * 16 + j] * B[j * cols + col];
			p->c[l][e] = d;
		}
	}
}

/* wgmma.wait_group pending for the warp: its wgmma of the groups but the
 * last `pending` it committed complete, in order. */
static void warp_wgwait(Block *b, Warp *w, int32_t pending)
{
	int64_t keep = 0;
	for (int64_t i = 0; i < w->nwq; i++) {
		if (w->wq[i].group <= w->wgroups - pending)
			emu_wg_complete(b, &w->wq[i], true);
		else
			w->wq[keep++] = w->wq[i];
	}
	w->nwq = keep;
}

/* Thread t waits (kind PARK_WARP or PARK_BAR, at gen) until the
 * scheduler runs it again. */
void emu_park(Block *b, int t, int kind, unsigned gen)
{
	Lane *ln = &b->lane[t];
	ln->parked = kind, ln->parked_gen = gen;
	sem_post(&b->back);
	while (sem_wait(&ln->go))
		;
	ln->parked = 0;
	if (b->abort) /* the block waits forever: out of the kernel (its frames need no unwinding) */
		longjmp(ln->out, 1);
}

/* The running thread t has reached collective op (its operands recorded):
 * the last of its warp's 32 to arrive carries it out for the warp, the
 * others park until then. */
void emu_arrive(Block *b, int t, int op, int32_t flag)
{
	Warp *w = &b->warp[t / LANES];
	w->op[t % LANES] = op;
	if (++w->arrived == LANES) {
		for (int i = 0; i < LANES; i++)
			w->mixed |= w->op[i] != op;
		if (op == OP_MMA)
			warp_mma(w, flag);
		else if (op == OP_MMASP)
			warp_mma_sp(w, flag);
		else if (op == OP_WGMMA)
			warp_wgmma(b, w, t / LANES * LANES);
		else if (op == OP_WGCOMMIT)
			w->wgroups++;
		else if (op == OP_WGWAIT)
			warp_wgwait(b, w, flag);
		else
			warp_ldm(w, flag);
		w->arrived = 0;
		w->gen++;
	} else {
		emu_park(b, t, PARK_WARP, w->gen);
	}
}
