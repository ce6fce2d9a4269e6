/* SPDX-License-Identifier: MIT */
/* pool.h - a persistent pool of worker threads for parallel kernels.
 *
 * Starting threads for every kernel call costs tens of microseconds and
 * fresh stacks (page faults on the kernels' stack buffers) each time, which
 * is as long as a whole sparse kernel at high sparsity.  The pool's workers
 * live for the process: after a job they spin for a short while (about a
 * fifth of a millisecond) so that back-to-back calls find them awake, then
 * sleep on a condition variable.  Jobs from several caller threads run one
 * at a time.  A child made by fork() starts with an empty pool.
 */
#ifndef PATC_POOL_H
#define PATC_POOL_H

enum { POOL_MAX_THREADS = 256 };
/* Each worker's stack: room for the kernels' stack buffers (the x86
 * kernels keep up to 1 MiB there) whatever the C library's default or
 * `ulimit -s` would give. */
enum { POOL_STACK_BYTES = 8 << 20 };

/* Runs fn(arg, i) for i = 0 .. n-1, i = 0 on the calling thread and the
 * others on the pool's workers (started on first need), and returns when all
 * have finished; where the process's stack limit is under POOL_STACK_BYTES
 * (a thread's stack may then be too small for a kernel), i = 0 runs on a
 * worker too.  n is clamped to 1 .. POOL_MAX_THREADS.  Where a worker
 * cannot be started, its parts run on the calling thread.  fn must not call
 * pool_run itself (the job would wait for its own pool). */
void pool_run(int n, void (*fn)(void *arg, int i), void *arg);

#endif
