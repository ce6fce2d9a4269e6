/* outfile.c - temporary output files, removed on interruption, renamed
 * into place alone or as a group; see outfile.h. */
#define _POSIX_C_SOURCE 200809L
#include "outfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct Entry {
	char *tmp, *path;
	bool finished; /* written, waiting for the group's end */
	bool remove;   /* not a temporary file: path to remove at the group's end */
	pid_t pid;     /* the process that made it (a forked child's are not its parent's) */
} Entry;

/* The entries, read by the signal handler: changed only with the signals
 * held off (hold/release). */
static Entry *entries;
static volatile int nentries;
static int cap;
static bool grouped;

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
enum { NCAUGHT = sizeof caught / sizeof caught[0] };
/* The thread that writes the files (outfile.h: one), of process
 * writer_pid.  Holding the signals off holds them for it alone, and a
 * signal sent to the process may land on any thread that does not hold it
 * (OpenBLAS's, the x86 pool's): there the handler only passes it on to
 * this thread, where it waits while held. */
static pthread_t writer;
static volatile pid_t writer_pid;
/* The child of outfile_spawn_wait while it runs (its process group's id),
 * or 0. */
static volatile pid_t spawned;

extern char **environ;

/* The spawned child's group ended with sig, the child waited for: a
 * second to end as sig would have it (a compiler driver removes its own
 * temporary files), then SIGKILL. */
static void end_spawned(int sig)
{
	const pid_t c = spawned;
	if (c <= 0)
		return;
	kill(-c, sig);
	const struct timespec tick = {0, 10 * 1000 * 1000};
	pid_t r = 0;
	for (int i = 0; i < 100 && (r = waitpid(c, NULL, WNOHANG)) == 0; i++)
		nanosleep(&tick, NULL);
	kill(-c, SIGKILL); /* (what it started lives on in its group) */
	if (r == 0)
		waitpid(c, NULL, 0);
}

/* The files of this process removed, then the signal's own action. */
static void on_signal(int sig)
{
	const pid_t me = getpid();
	if (me == writer_pid && !pthread_equal(pthread_self(), writer)) {
		pthread_kill(writer, sig);
		return;
	}
	if (me == writer_pid)
		end_spawned(sig);
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && entries[i].pid == me)
			unlink(entries[i].tmp);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

/* At exit() (util_oom, util_ice), the files not yet in place. */
static void at_exit(void)
{
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && entries[i].pid == getpid())
			unlink(entries[i].tmp);
}

/* The handlers, once, for the signals whose action is the default one (a
 * signal ignored, as under nohup, stays ignored). */
static void install(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	atexit(at_exit);
	for (int i = 0; i < NCAUGHT; i++) {
		struct sigaction old, sa;
		if (sigaction(caught[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_NODEFER; /* (the default action restored by the handler itself) */
		sigemptyset(&sa.sa_mask);
		sigaction(caught[i], &sa, NULL);
	}
}

static void hold(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (int i = 0; i < NCAUGHT; i++)
		sigaddset(&set, caught[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void release(const sigset_t *old) { sigprocmask(SIG_SETMASK, old, NULL); }

static char *dup_or_die(const char *s)
{
	char *d = strdup(s);
	if (!d)
		util_oom();
	return d;
}

static void add(const char *tmp, const char *path, bool remove)
{
	install();
	/* (made before the signals are held: util_oom may exit) */
	char *t = tmp ? dup_or_die(tmp) : NULL, *p = dup_or_die(path);
	Entry *grown = entries;
	if (nentries == cap) {
		grown = malloc((size_t)(cap ? 2 * cap : 8) * sizeof *grown);
		if (!grown)
			util_oom();
		if (nentries)
			memcpy(grown, entries, (size_t)nentries * sizeof *grown);
	}
	sigset_t old;
	hold(&old);
	Entry *was = entries;
	if (grown != entries) {
		entries = grown;
		cap = cap ? 2 * cap : 8;
	}
	entries[nentries] = (Entry){t, p, false, remove, getpid()};
	nentries++;
	if (writer_pid != getpid()) /* (the first file, or a forked child's) */
		writer = pthread_self(), writer_pid = getpid();
	release(&old);
	if (was != grown)
		free(was);
}

static int find(const char *tmp)
{
	for (int i = 0; i < nentries; i++)
		if (!entries[i].remove && !strcmp(entries[i].tmp, tmp))
			return i;
	return -1;
}

/* Entry i out of the list (the signals held off by the caller). */
static void take_out(int i)
{
	free(entries[i].tmp);
	free(entries[i].path);
	memmove(&entries[i], &entries[i + 1], (size_t)(nentries - i - 1) * sizeof *entries);
	nentries--;
}

int outfile_mkstemp(char *tmp, const char *path)
{
	install();
	sigset_t old;
	hold(&old); /* (no moment where the file exists untracked) */
	const int fd = mkstemp(tmp);
	const int err = errno;
	if (fd >= 0)
		add(tmp, path, false);
	release(&old);
	errno = err;
	return fd;
}

bool outfile_finish(const char *tmp)
{
	const int i = find(tmp);
	PATC_ASSERT(i >= 0);
	if (grouped) {
		entries[i].finished = true;
		return true;
	}
	sigset_t old;
	hold(&old);
	const bool ok = rename(tmp, entries[i].path) == 0;
	const int err = errno;
	if (!ok)
		unlink(tmp);
	take_out(i);
	release(&old);
	errno = err;
	return ok;
}

void outfile_drop(const char *tmp)
{
	const int i = find(tmp);
	PATC_ASSERT(i >= 0);
	sigset_t old;
	hold(&old);
	unlink(tmp);
	take_out(i);
	release(&old);
}

void outfile_group_begin(void)
{
	PATC_ASSERT(!grouped);
	grouped = true;
}

void outfile_group_remove(const char *path)
{
	PATC_ASSERT(grouped);
	add(NULL, path, true);
}

const char *outfile_pending(const char *path)
{
	for (int i = 0; grouped && i < nentries; i++)
		if (!entries[i].remove && entries[i].finished && !strcmp(entries[i].path, path))
			return entries[i].tmp;
	return NULL;
}

/* A hard link to path's file under a new name beside it (as temporary
 * files are named), into backup; false where path does not exist or the
 * link cannot be made (a file system without them). */
static bool back_up(const char *path, char *backup, size_t size)
{
	if ((size_t)snprintf(backup, size, "%s.tmp.XXXXXX", path) >= size)
		return false;
	const int fd = mkstemp(backup); /* (a name of our own, then the link in its place) */
	if (fd < 0)
		return false;
	close(fd);
	unlink(backup);
	return link(path, backup) == 0;
}

bool outfile_group_end(bool commit)
{
	PATC_ASSERT(grouped);
	grouped = false;
	sigset_t old;
	hold(&old);
	int err = 0;
	/* The group's entries in order: whether its path held a file, a link
	 * to that file (NULL: none, or no link could be made), whether the
	 * entry's removal or rename is done. */
	struct Step {
		int entry;
		bool existed, applied;
		char *backup;
	} *steps = NULL;
	int nsteps = 0;
	for (int i = 0; i < nentries; i++)
		nsteps += entries[i].remove || entries[i].finished;
	if (commit && nsteps && !(steps = calloc((size_t)nsteps, sizeof *steps)))
		err = ENOMEM;
	for (int i = 0, j = 0; commit && !err && i < nentries; i++) {
		const Entry *e = &entries[i];
		if (!e->remove && !e->finished)
			continue;
		struct Step *t = &steps[j++];
		t->entry = i;
		struct stat st;
		t->existed = lstat(e->path, &st) == 0;
		char backup[4096];
		if (t->existed && back_up(e->path, backup, sizeof backup) && !(t->backup = strdup(backup))) {
			unlink(backup);
			err = ENOMEM;
		}
	}
	/* the earlier set's files not written again, then the renames in order */
	for (int j = 0; commit && !err && j < nsteps; j++) {
		const Entry *e = &entries[steps[j].entry];
		if (e->remove && unlink(e->path) != 0 && errno != ENOENT)
			err = errno;
		steps[j].applied = e->remove && !err;
	}
	for (int j = 0; commit && !err && j < nsteps; j++) {
		const Entry *e = &entries[steps[j].entry];
		if (!e->remove && rename(e->tmp, e->path) != 0)
			err = errno;
		else if (!e->remove)
			steps[j].applied = true;
	}
	/* a failure puts back what was there: a file replaced or removed from
	 * its link, a file that was not there removed (one replaced where no
	 * link could be made stays: the one before is gone) */
	for (int j = 0; err && j < nsteps; j++) {
		struct Step *t = &steps[j];
		if (!t->applied)
			continue;
		if (t->backup && rename(t->backup, entries[t->entry].path) == 0) {
			free(t->backup);
			t->backup = NULL;
		} else if (!t->existed)
			unlink(entries[t->entry].path);
	}
	for (int j = 0; steps && j < nsteps; j++)
		if (steps[j].backup) {
			unlink(steps[j].backup);
			free(steps[j].backup);
		}
	free(steps);
	for (int i = 0; i < nentries;) {
		Entry *e = &entries[i];
		if (!e->remove && !e->finished) { /* still being written: not the group's */
			i++;
			continue;
		}
		if (!e->remove && (!commit || err))
			unlink(e->tmp); /* (gone already where it was renamed) */
		take_out(i);
	}
	release(&old);
	errno = err;
	return !commit || !err;
}

/* fd moved past stderr, close-on-exec (a pipe made while stdout or stderr
 * is closed may take its number); -1 on failure. */
static int above_stdio(int fd)
{
	if (fd < 0)
		return -1;
	const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return moved;
}

/* What the child pid writes to the pipe from, passed on to our stderr
 * until it exits: not until every holder of the pipe closes it, as what
 * the child leaves running may hold it for good.  0 with *status, or -1
 * with errno where waitpid failed. */
static int relay_wait(pid_t pid, int from, int *status)
{
	char buf[4096];
	bool open = true;
	for (;;) {
		struct pollfd p = {from, POLLIN, 0};
		if (open && poll(&p, 1, 100) > 0) {
			const ssize_t n = read(from, buf, sizeof buf);
			if (n > 0 && write(STDERR_FILENO, buf, (size_t)n) < 0) { /* (its words lost, not the link) */
			}
			if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
				open = false;
			continue;
		}
		const pid_t w = waitpid(pid, status, open ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
	}
	if (open && fcntl(from, F_SETFL, O_NONBLOCK) == 0) { /* what it wrote before it ended */
		ssize_t n;
		while ((n = read(from, buf, sizeof buf)) > 0)
			if (write(STDERR_FILENO, buf, (size_t)n) < 0)
				break;
	}
	return 0;
}

int outfile_spawn_wait(char *const argv[])
{
	install();
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	const int from = above_stdio(fds[0]), to = above_stdio(fds[1]);
	if (from < 0 || to < 0) {
		const int e = errno;
		if (from >= 0)
			close(from);
		if (to >= 0)
			close(to);
		errno = e;
		return -1;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	if (posix_spawn_file_actions_init(&fa) != 0 || posix_spawnattr_init(&at) != 0)
		util_oom();
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, to, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, to, STDERR_FILENO);
	sigset_t old;
	hold(&old); /* (no moment where the child runs unknown to the handler) */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &old);
	pid_t pid;
	const int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	if (e == 0)
		spawned = pid;
	release(&old);
	close(to);
	if (e != 0) {
		close(from);
		errno = e;
		return -1;
	}
	int status;
	const int rc = relay_wait(pid, from, &status);
	const int err = errno;
	close(from);
	hold(&old);
	spawned = 0;
	release(&old);
	errno = err;
	return rc < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
