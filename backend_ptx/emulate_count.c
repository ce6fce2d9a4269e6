/* SPDX-License-Identifier: MIT */
/* emulate_count.c - the memory accesses the GPU emulator counts
 * (PtxEmuStats; see emulate.c): each thread's accesses noted between
 * barriers, a warp's lanes matched by instruction into warp-wide requests,
 * and for each the wavefronts (shared memory: 32 banks of 4 bytes) or the
 * 32-byte sectors (global memory) it takes against the fewest that would
 * do. */
#define _POSIX_C_SOURCE 200809L
#include "emulate_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the accesses counted, per warp-wide request ---- */

const char *const ptx_acc_names[PTX_ACC_KINDS] = {"shared loads",
                                                  "shared stores",
                                                  "copies into shared memory",
                                                  "copies' reads of global memory",
                                                  "loads of global memory",
                                                  "stores to global memory"};

/* arr (n of *cap elements of `size` bytes), moved where needed to have
 * room for one more; NULL and b->oom where memory runs out (arr kept). */
void *emu_room(Block *b, void *arr, int64_t n, int64_t *cap, size_t size)
{
	if (n < *cap)
		return arr;
	const int64_t more = *cap ? 2 * *cap : 64;
	void *p = realloc(arr, (size_t)more * size);
	if (!p) {
		b->oom = true;
		return NULL;
	}
	*cap = more;
	return p;
}

/* Notes thread t's access (kind PTX_ACC_*) at `at` at the instruction
 * returning to site. */
void emu_note_access(Block *b, int t, uintptr_t site, int kind, int64_t at, int bytes)
{
	Lane *ln = &b->lane[t];
	Acc *acc = emu_room(b, ln->acc, ln->nacc, &ln->acccap, sizeof *acc);
	if (!acc)
		return;
	ln->acc = acc;
	ln->acc[ln->nacc] = (Acc){site, ln->nacc, at, 0, t % LANES, bytes, kind};
	ln->nacc++;
}

static int cmp_i64(const void *a, const void *b)
{
	const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* By instruction, then thread, then order. */
static int by_lane(const void *a, const void *b)
{
	const Acc *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->lane != y->lane)
		return x->lane - y->lane;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* By instruction, then the how-manyth time, then thread. */
static int by_request(const void *a, const void *b)
{
	const Acc *x = a, *y = b;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->occ != y->occ)
		return (x->occ > y->occ) - (x->occ < y->occ);
	return x->lane - y->lane;
}

/* The distinct values of v[0 .. n-1], sorted into its front. */
static int uniq(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_i64);
	int u = 0;
	for (int i = 0; i < n; i++)
		if (!u || v[i] != v[u - 1])
			v[u++] = v[i];
	return u;
}

/* One warp-wide request, the n (<= 32) accesses of a, into b->stats. */
static void count_request(Block *b, const Acc *a, int n)
{
	const int kind = a[0].kind, bytes = a[0].bytes;
	int64_t cost = 0, ideal = 0, v[4 * LANES];
	if (kind >= PTX_ACC_SRC) { /* global memory: sectors touched; the fewest that hold the bytes */
		int nv = 0;
		for (int i = 0; i < n; i++)
			for (int64_t s = a[i].at / 32; s <= (a[i].at + a[i].bytes - 1) / 32 && nv < 4 * LANES; s++)
				v[nv++] = s;
		cost = uniq(v, nv);
		int64_t lo[LANES], len = 0, end = INT64_MIN;
		for (int i = 0; i < n; i++)
			lo[i] = a[i].at;
		qsort(lo, (size_t)n, sizeof *lo, cmp_i64); /* (one size a request: the union's length) */
		for (int i = 0; i < n; i++) {
			const int64_t s = lo[i] > end ? lo[i] : end, e = lo[i] + bytes;
			len += e > s ? e - s : 0;
			end = e > end ? e : end;
		}
		ideal = (len + 31) / 32;
	} else { /* wavefronts: per group of lanes served together, the most distinct words of a bank */
		const int per = bytes > 8 ? 8 : bytes > 4 ? 16 : 32;
		for (int g = 0; g < LANES / per; g++) {
			int nv = 0;
			for (int i = 0; i < n; i++)
				if (a[i].lane / per == g)
					for (int64_t w = a[i].at / 4; w <= (a[i].at + a[i].bytes - 1) / 4 && nv < 4 * LANES; w++)
						v[nv++] = w;
			if (!nv)
				continue;
			const int u = uniq(v, nv);
			int bank[32] = {0}, most = 0;
			for (int i = 0; i < u; i++) {
				const int k = (int)(v[i] % 32);
				most = ++bank[k] > most ? bank[k] : most;
			}
			cost += most;
			ideal += (u + 31) / 32;
		}
	}
	PtxAccCount *cnt = &b->stats->acc[kind];
	cnt->requests++, cnt->cost += cost, cnt->ideal += ideal;
	const double over = (double)cost / (double)(ideal ? ideal : 1);
	const bool global = kind >= PTX_ACC_SRC;
	if (cost > ideal && over > b->worst) {
		b->worst = over;
		char at[160] = "";
		for (int i = 0, len = 0; i < n && i < 8 && len < (int)sizeof at - 24; i++)
			len += snprintf(at + len, sizeof at - (size_t)len, "%s%lld", i ? ", " : "", (long long)a[i].at);
		snprintf(b->stats->worst, sizeof b->stats->worst,
		         "%s of %d bytes by %d lanes of a warp take %lld %s where %lld would do (at bytes %s%s of %s)",
		         ptx_acc_names[kind], bytes, n, (long long)cost, global ? "sectors" : "wavefronts", (long long)ideal,
		         at, n > 8 ? ", ..." : "", global ? "the operand" : "the buffer");
	}
}

/* Counts the requests of the accesses the threads noted since the last
 * barrier, and forgets them. */
void emu_count_interval(Block *b)
{
	for (int w = 0; w < (b->n + LANES - 1) / LANES; w++) {
		int64_t n = 0;
		for (int t = w * LANES; t < b->n && t < (w + 1) * LANES; t++)
			n += b->lane[t].nacc;
		if (!n)
			continue;
		if (n > b->tmpcap) {
			Acc *more = realloc(b->tmp, (size_t)n * sizeof *more);
			if (!more) {
				b->oom = true;
				break;
			}
			b->tmp = more, b->tmpcap = n;
		}
		Acc *a = b->tmp;
		n = 0;
		for (int t = w * LANES; t < b->n && t < (w + 1) * LANES; t++) {
			memcpy(a + n, b->lane[t].acc, (size_t)b->lane[t].nacc * sizeof *a);
			n += b->lane[t].nacc;
		}
		qsort(a, (size_t)n, sizeof *a, by_lane);
		for (int64_t i = 0; i < n; i++)
			a[i].occ = i && a[i].site == a[i - 1].site && a[i].lane == a[i - 1].lane ? a[i - 1].occ + 1 : 0;
		qsort(a, (size_t)n, sizeof *a, by_request);
		for (int64_t i = 0, j; i < n; i = j) {
			for (j = i + 1; j < n && a[j].site == a[i].site && a[j].occ == a[i].occ; j++)
				;
			count_request(b, a + i, (int)(j - i));
		}
	}
	for (int t = 0; t < b->n; t++)
		b->lane[t].nacc = 0;
}
