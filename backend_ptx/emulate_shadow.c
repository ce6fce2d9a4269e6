/* SPDX-License-Identifier: MIT */
/* emulate_shadow.c - the GPU emulator's shadow of shared memory (see
 * emulate.c): per byte of each shared buffer, who wrote it last and
 * between which two barriers, who read it there, the copies in flight to
 * it and the wgmma in flight that read it; an access checked against it
 * records the block's first race or read of what no thread wrote.  Also
 * the cp.async copies of a thread, landed at its wait_group. */
#define _POSIX_C_SOURCE 200809L
#include "emulate_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared memory's shadow ---- */

/* Thread t as "(tid.x, tid.y)". */
static const char *thread_name(const Block *b, int t, char buf[32])
{
	if (t == MULTI)
		return "another thread";
	snprintf(buf, 32, "thread (%d, %d)", t % b->bx, t / b->bx);
	return buf;
}

/* Records in msg, where empty, the fault of thread t, which `verb`s byte
 * i of r: how that goes wrong, after the name of thread u (a thread, or
 * MULTI; -1: none). */
static void fault(const Block *b, char msg[PTX_ERR_MAX], const Region *r, int64_t i, int t, const char *verb, int u,
                  const char *how)
{
	if (msg[0])
		return;
	char tn[32], un[32];
	snprintf(msg, PTX_ERR_MAX, "emulation: %s %s byte %lld of a %lld-byte shared buffer%s%s%s",
	         thread_name(b, t, tn), verb, (long long)i, (long long)r->size, u != -1 ? " that " : "",
	         u != -1 ? thread_name(b, u, un) : "", how);
}

/* The shadow of the buffer at base (size bytes), made where new; -1 and
 * b->oom where memory or the slots run out (a kernel has 2 buffers at most). */
int emu_region_of(Block *b, const void *base, int64_t size)
{
	for (int i = 0; i < b->nregions; i++)
		if (b->region[i].base == base)
			return i;
	if (b->nregions == MAX_REGIONS || size <= 0) {
		b->oom = true;
		return -1;
	}
	Region *r = &b->region[b->nregions];
	int32_t **arr[SHADOWS] = {&r->w_iv, &r->w_th, &r->w_fc, &r->r_iv, &r->r_th, &r->pend, &r->wgrd};
	for (int a = 0; a < SHADOWS; a++)
		if (!(*arr[a] = malloc((size_t)size * sizeof(int32_t)))) {
			for (int j = 0; j < a; j++)
				free(*arr[j]);
			b->oom = true;
			return -1;
		}
	for (int64_t i = 0; i < size; i++)
		r->w_iv[i] = r->r_iv[i] = -1, r->pend[i] = r->wgrd[i] = 0;
	r->base = base, r->size = size;
	return b->nregions++;
}

/* Thread t reads bytes off .. off + bytes - 1 of r; async: through the
 * tensor cores (wgmma), which see a write only after its writer's
 * fence.proxy.async. */
void emu_sh_read(Block *b, Region *r, int64_t off, int64_t bytes, int t, bool async)
{
	for (int64_t i = off; i < off + bytes && i < r->size; i++) {
		if (async && r->w_iv[i] >= b->iv0 && b->lane[r->w_th[i]].fences <= r->w_fc[i])
			fault(b, b->race, r, i, t, "passes to a wgmma", r->w_th[i],
			      " wrote with no fence.proxy.async after (the tensor cores may read it stale)");
		if (r->pend[i])
			fault(b, b->race, r, i, t, "reads", -1,
			      " while a cp.async to it is in flight (before its wait_group): a race");
		else if (r->w_iv[i] < b->iv0)
			fault(b, b->unwritten, r, i, t, "reads", -1, ", which no thread of its block wrote");
		else if (r->w_iv[i] == b->iv && r->w_th[i] != t)
			fault(b, b->race, r, i, t, "reads", r->w_th[i], " writes between the same two barriers: a race");
		r->r_th[i] = r->r_iv[i] == b->iv && r->r_th[i] != t ? MULTI : t;
		r->r_iv[i] = b->iv;
	}
}

/* Thread t writes bytes off .. off + bytes - 1 of r: a store (WRITE), or
 * a cp.async, issued (ISSUE: in flight until it lands) or landing (LAND). */
void emu_sh_write(Block *b, Region *r, int64_t off, int64_t bytes, int t, int how)
{
	const char *verb = how == WRITE ? "writes" : "copies to";
	for (int64_t i = off; i < off + bytes && i < r->size; i++) {
		if (how == LAND)
			r->pend[i]--;
		if (r->r_iv[i] == b->iv && r->r_th[i] != t)
			fault(b, b->race, r, i, t, verb, r->r_th[i], " reads between the same two barriers: a race");
		else if (r->w_iv[i] == b->iv && r->w_th[i] != t)
			fault(b, b->race, r, i, t, verb, r->w_th[i], " also writes between the same two barriers: a race");
		else if (how != LAND && r->pend[i])
			fault(b, b->race, r, i, t, verb, -1, " while a cp.async to it is in flight: a race");
		else if (how != LAND && r->wgrd[i])
			fault(b, b->race, r, i, t, verb, -1,
			      " while a wgmma that reads it is in flight (before the wgmma.wait_group that completes it): a race");
		if (how == ISSUE)
			r->pend[i]++;
		else
			r->w_iv[i] = b->iv, r->w_th[i] = t, r->w_fc[i] = b->lane[t].fences;
	}
}

/* Lands thread t's copies of groups up to `upto`. */
void emu_land(Block *b, int t, int64_t upto)
{
	Lane *ln = &b->lane[t];
	int keep = 0;
	for (int i = 0; i < ln->ncp; i++) {
		Copy *cp = &ln->cp[i];
		if (cp->group > upto) {
			ln->cp[keep++] = *cp;
			continue;
		}
		memcpy(cp->dst, cp->data, (size_t)cp->bytes);
		if (cp->region >= 0)
			emu_sh_write(b, &b->region[cp->region], cp->off, cp->bytes, t, LAND);
	}
	ln->ncp = keep;
}
