/* SPDX-License-Identifier: MIT */
/* pool.c - the persistent worker pool (see pool.h).
 *
 * A job is published by bumping a generation counter; workers that are
 * spinning see it at once, sleeping ones are woken through `wake`.  Every
 * worker decrements `pending` when it is done with a generation (workers
 * numbered past the job's size have nothing to do), and the last one wakes
 * the caller through `done`.  `run` keeps jobs of different callers apart.
 */
#define _POSIX_C_SOURCE 200809L
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

enum { SPIN_NS = 200000 }; /* how long an idle worker or a waiting caller spins */

typedef struct Pool {
	pthread_mutex_t run; /* held by the caller for the whole job */
	pthread_mutex_t mu;  /* guards the sleeps on wake and done */
	pthread_cond_t wake, done;
	int nworkers;        /* workers 1 .. nworkers exist */
	atomic_ulong gen;    /* bumped once per job */
	atomic_int pending;  /* workers not yet done with this generation */
	void (*fn)(void *, int);
	void *arg;
	int n;
	int base; /* the parts the caller runs: 0 .. base - 1; worker w runs w - 1 + base */
} Pool;

static Pool P = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                 PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 0, 1};

typedef struct Worker {
	int id;
	unsigned long seen; /* the generation this worker last ran */
} Worker;

static Worker workers[POOL_MAX_THREADS + 1]; /* 1 .. POOL_MAX_THREADS (all n parts where the caller runs none) */

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Spins up to SPIN_NS while cond(x) holds; returns whether it still holds. */
static bool spin_while(bool (*cond)(unsigned long), unsigned long x)
{
	int64_t t0 = 0;
	for (unsigned i = 0; cond(x); i++) {
		relax();
		if ((i & 255) == 255) {
			int64_t t = now_ns();
			if (t0 == 0)
				t0 = t;
			else if (t - t0 > SPIN_NS)
				return true;
		}
	}
	return false;
}

static bool same_gen(unsigned long seen) { return atomic_load(&P.gen) == seen; }
static bool busy(unsigned long unused)
{
	(void)unused;
	return atomic_load(&P.pending) != 0;
}

static void *worker_main(void *arg)
{
	Worker *w = arg;
	for (;;) {
		if (spin_while(same_gen, w->seen)) {
			pthread_mutex_lock(&P.mu);
			while (same_gen(w->seen))
				pthread_cond_wait(&P.wake, &P.mu);
			pthread_mutex_unlock(&P.mu);
		}
		w->seen = atomic_load(&P.gen);
		if (w->id - 1 + P.base < P.n)
			P.fn(P.arg, w->id - 1 + P.base);
		if (atomic_fetch_sub(&P.pending, 1) == 1) {
			pthread_mutex_lock(&P.mu);
			pthread_cond_broadcast(&P.done);
			pthread_mutex_unlock(&P.mu);
		}
	}
	return NULL;
}

/* Whether the calling threads have the stack a worker has (1, 0; -1 not
 * known yet): the main thread's is RLIMIT_STACK (raised where it can be:
 * util_stack_room); a caller with less runs no part itself.  (Taken once a
 * process: a system call per job would show in the times of small
 * kernels.) */
static atomic_int caller_room = -1;

static int room_of_callers(void)
{
	int room = atomic_load(&caller_room);
	if (room < 0) {
		struct rlimit r;
		room = getrlimit(RLIMIT_STACK, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= POOL_STACK_BYTES;
		atomic_store(&caller_room, room);
	}
	return room;
}

/* In a child of fork() only the forking thread exists: forget the workers. */
static void reset_in_child(void)
{
	P = (Pool){PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
	           PTHREAD_COND_INITIALIZER, 0, 0, 0, NULL, NULL, 0, 1};
	atomic_store(&caller_room, -1); /* (a child may set its own limit) */
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void) { pthread_atfork(NULL, NULL, reset_in_child); }

void pool_run(int n, void (*fn)(void *arg, int i), void *arg)
{
	if (n < 1)
		n = 1;
	if (n > POOL_MAX_THREADS)
		n = POOL_MAX_THREADS;
	pthread_once(&atfork_once, register_atfork);
	const int base = room_of_callers();
	if (n == 1 && base) {
		fn(arg, 0);
		return;
	}
	pthread_mutex_lock(&P.run);
	pthread_attr_t attr;
	const bool sized = pthread_attr_init(&attr) == 0;
	if (sized)
		pthread_attr_setstacksize(&attr, POOL_STACK_BYTES);
	while (P.nworkers < n - base) {
		Worker *w = &workers[P.nworkers + 1];
		*w = (Worker){P.nworkers + 1, atomic_load(&P.gen)};
		pthread_t tid;
		if (pthread_create(&tid, sized ? &attr : NULL, worker_main, w) != 0)
			break;
		pthread_detach(tid);
		P.nworkers++;
	}
	if (sized)
		pthread_attr_destroy(&attr);
	P.fn = fn, P.arg = arg, P.n = n, P.base = base;
	atomic_store(&P.pending, P.nworkers);
	pthread_mutex_lock(&P.mu);
	atomic_fetch_add(&P.gen, 1);
	pthread_cond_broadcast(&P.wake);
	pthread_mutex_unlock(&P.mu);

	if (base)
		fn(arg, 0);
	for (int i = P.nworkers + base; i < n; i++) /* parts no worker could take */
		fn(arg, i);
	if (spin_while(busy, 0)) {
		pthread_mutex_lock(&P.mu);
		while (busy(0))
			pthread_cond_wait(&P.done, &P.mu);
		pthread_mutex_unlock(&P.mu);
	}
	pthread_mutex_unlock(&P.run);
}
