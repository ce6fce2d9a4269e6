/* SPDX-License-Identifier: MIT */
/* gbt.c - gradient-boosted regression trees; see gbt.h.
 *
 * Each tree grows level by level with exact greedy splits.  The rows are
 * sorted once per feature; at each level one pass over every feature's
 * order visits each open node's rows in ascending value, so every node sees
 * all its split points (halfway between distinct consecutive values)
 * without sorting its rows again.  A tree's nodes are stored in creation
 * order, children after their parent: a walk down always ends, which is
 * what gbt_read checks of an untrusted file.
 */
#include "gbt.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum {
	MAX_TREES = 100000,
	MAX_FEAT = 65536,
	MAX_DEPTH = 30,
	MAX_NODES = 1 << 24, /* of one tree in a file */
	TOK_MAX = 64,        /* %.17g needs 24 */
};
#define MAX_ABS_VALUE 1e250 /* a file's base and leaves: sums stay finite */

typedef struct GbtNode {
	int32_t feat;        /* the split's feature; -1 for a leaf */
	int32_t left, right; /* indices within the tree, after this node's */
	double value;        /* the threshold (x < value goes left) or the leaf's output */
} GbtNode;

struct Gbt {
	int nfeat, ntrees;
	double base;
	size_t *first; /* tree t is nodes[first[t] .. first[t + 1]) */
	GbtNode *nodes;
	size_t cap_first, cap_nodes;
};

const GbtParams gbt_defaults = {.trees = 300, .max_depth = 4, .learning_rate = 0.05,
                                .min_leaf = 3, .subsample = 0.8, .seed = 1};

__attribute__((format(printf, 2, 3))) static bool fail(char *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (err)
		vsnprintf(err, GBT_ERR_MAX, fmt, ap);
	va_end(ap);
	return false;
}

/* Makes room for n elements of size sz in *p, doubling its capacity. */
static bool grow(void **p, size_t *cap, size_t n, size_t sz)
{
	if (n <= *cap)
		return true;
	size_t c = *cap ? *cap : 16;
	while (c < n)
		c *= 2;
	void *q = realloc(*p, c * sz);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static Gbt *gbt_new(int nfeat)
{
	Gbt *g = calloc(1, sizeof *g);
	if (!g || !grow((void **)&g->first, &g->cap_first, 1, sizeof *g->first)) {
		free(g);
		return NULL;
	}
	g->nfeat = nfeat;
	g->first[0] = 0;
	return g;
}

/* Closes the tree whose nodes end at `end`. */
static bool gbt_push_tree(Gbt *g, size_t end)
{
	if (!grow((void **)&g->first, &g->cap_first, (size_t)g->ntrees + 2, sizeof *g->first))
		return false;
	g->first[++g->ntrees] = end;
	return true;
}

void gbt_free(Gbt *g)
{
	if (!g)
		return;
	free(g->first);
	free(g->nodes);
	free(g);
}

int gbt_nfeat(const Gbt *g) { return g->nfeat; }

static double tree_eval(const GbtNode *t, const double *x)
{
	const GbtNode *nd = t;
	while (nd->feat >= 0)
		nd = t + (x[nd->feat] < nd->value ? nd->left : nd->right);
	return nd->value;
}

double gbt_predict(const Gbt *g, const double *x)
{
	double s = g->base;
	for (int t = 0; t < g->ntrees; t++)
		s += tree_eval(g->nodes + g->first[t], x);
	return s;
}

void gbt_range(const Gbt *g, double *lo, double *hi)
{
	*lo = *hi = g->base;
	for (int t = 0; t < g->ntrees; t++) {
		double tl = INFINITY, th = -INFINITY;
		for (size_t i = g->first[t]; i < g->first[t + 1]; i++)
			if (g->nodes[i].feat < 0) {
				tl = fmin(tl, g->nodes[i].value);
				th = fmax(th, g->nodes[i].value);
			}
		*lo += tl, *hi += th;
	}
}

/* ---- training ---- */

/* An open node of the level being grown, with its best split so far. */
typedef struct Open {
	int32_t node, cnt, child; /* child: the left child's slot on the next level */
	int32_t cl, feat;         /* rows scanned so far; the best split's feature or -1 */
	double sum, sl, last;     /* residual sums of all and scanned rows; last value scanned */
	double score, thr;        /* the best split's sl^2/cl + sr^2/cr, its threshold */
} Open;

typedef struct Trainer {
	const double *X;
	int n, nfeat;
	const GbtParams *p;
	int32_t *order; /* nfeat runs of the n rows, each ascending in its feature */
	int32_t *slot;  /* each row's open node, -1 when out of play */
	double *resid;
	Open *open, *next;
} Trainer;

typedef struct Keyed {
	double v;
	int32_t row;
} Keyed;

/* Ties go by row, so the order and hence the model do not depend on qsort. */
static int keyed_cmp(const void *a, const void *b)
{
	const Keyed *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return (x->row > y->row) - (x->row < y->row);
}

/* Finds the best split of each of the nopen open nodes. */
static void level_split(Trainer *t, int nopen)
{
	int minl = t->p->min_leaf;
	for (int s = 0; s < nopen; s++) /* a split must beat no split */
		t->open[s].score = t->open[s].sum * t->open[s].sum / t->open[s].cnt;
	for (int f = 0; f < t->nfeat; f++) {
		for (int s = 0; s < nopen; s++) {
			t->open[s].cl = 0;
			t->open[s].sl = 0;
		}
		const int32_t *ord = t->order + (size_t)f * t->n;
		for (int k = 0; k < t->n; k++) {
			int32_t row = ord[k], s = t->slot[row];
			if (s < 0)
				continue;
			Open *o = &t->open[s];
			double v = t->X[(size_t)row * t->nfeat + f];
			int cr = o->cnt - o->cl;
			if (o->cl >= minl && cr >= minl && v > o->last) {
				double sr = o->sum - o->sl;
				double score = o->sl * o->sl / o->cl + sr * sr / cr;
				if (score > o->score) {
					/* where rounding moves the midpoint out of
					 * (last, v], v itself still separates them */
					double thr = 0.5 * o->last + 0.5 * v;
					o->score = score;
					o->feat = f;
					o->thr = thr > o->last && thr <= v ? thr : v;
				}
			}
			o->cl++;
			o->sl += t->resid[row];
			o->last = v;
		}
	}
}

/* Grows one tree on the rows in slot 0 (at least one) into nd; returns its
 * node count, at most 2 * rows - 1 as every leaf holds a row. */
static int tree_grow(Trainer *t, GbtNode *nd)
{
	int nopen = 1, nnodes = 1;
	t->open[0] = (Open){.node = 0};
	for (int i = 0; i < t->n; i++)
		if (t->slot[i] == 0) {
			t->open[0].cnt++;
			t->open[0].sum += t->resid[i];
		}
	for (int depth = 0; nopen > 0; depth++) {
		for (int s = 0; s < nopen; s++)
			t->open[s].feat = -1;
		if (depth < t->p->max_depth)
			level_split(t, nopen);
		int nnext = 0;
		for (int s = 0; s < nopen; s++) {
			Open *o = &t->open[s];
			if (o->feat < 0) {
				double v = t->p->learning_rate * o->sum / o->cnt;
				nd[o->node] = (GbtNode){-1, 0, 0, v};
				continue;
			}
			nd[o->node] = (GbtNode){o->feat, nnodes, nnodes + 1, o->thr};
			o->child = nnext;
			t->next[nnext++] = (Open){.node = nnodes++};
			t->next[nnext++] = (Open){.node = nnodes++};
		}
		for (int i = 0; i < t->n; i++) {
			int32_t s = t->slot[i];
			if (s < 0)
				continue;
			const Open *o = &t->open[s];
			if (o->feat < 0) {
				t->slot[i] = -1;
				continue;
			}
			int32_t c = o->child + !(t->X[(size_t)i * t->nfeat + o->feat] < o->thr);
			t->slot[i] = c;
			t->next[c].cnt++;
			t->next[c].sum += t->resid[i];
		}
		Open *tmp = t->open;
		t->open = t->next;
		t->next = tmp;
		nopen = nnext;
	}
	return nnodes;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Whether the rows and parameters can be trained on (n rows of nfeat
 * features, finite, y of bounded magnitude); else err. */
static bool train_input_ok(const double *X, const double *y, int n, int nfeat, const GbtParams *p,
                           char err[GBT_ERR_MAX])
{
	if (n < 2 || n > MAX_NODES / 2 || nfeat < 1 || nfeat > MAX_FEAT) {
		fail(err, "need 2..%d rows of 1..%d features, got %d rows of %d", MAX_NODES / 2,
		     MAX_FEAT, n, nfeat);
		return false;
	}
	if (p->trees < 0 || p->trees > MAX_TREES || p->max_depth < 1 || p->max_depth > MAX_DEPTH ||
	    !(p->learning_rate > 0 && p->learning_rate <= 1) || p->min_leaf < 1 ||
	    !(p->subsample > 0 && p->subsample <= 1)) {
		fail(err, "parameters out of range (trees 0..%d, max_depth 1..%d, min_leaf >= 1, "
		          "learning_rate and subsample in (0, 1])", MAX_TREES, MAX_DEPTH);
		return false;
	}
	for (size_t i = 0; i < (size_t)n * nfeat; i++)
		if (!isfinite(X[i])) {
			fail(err, "X row %zu, feature %zu is not finite", i / nfeat, i % nfeat);
			return false;
		}
	for (int i = 0; i < n; i++)
		if (!isfinite(y[i]) || fabs(y[i]) > GBT_MAX_ABS_Y) {
			fail(err, "y row %d is %g, not a finite number of magnitude <= %g", i, y[i], GBT_MAX_ABS_Y);
			return false;
		}
	return true;
}

Gbt *gbt_train(const double *X, const double *y, int n, int nfeat, const GbtParams *p,
               char err[GBT_ERR_MAX])
{
	if (!p)
		p = &gbt_defaults;
	/* a tree has fewer than 2n nodes: its file must stay readable */
	if (!train_input_ok(X, y, n, nfeat, p, err))
		return NULL;
	double base = 0;
	for (int i = 0; i < n; i++)
		base += y[i];
	base /= n;

	bool ok = false;
	size_t nn = (size_t)n;
	Trainer t = {.X = X, .n = n, .nfeat = nfeat, .p = p};
	Gbt *g = gbt_new(nfeat);
	Keyed *keyed = malloc(nn * sizeof *keyed);
	int32_t *perm = malloc(nn * sizeof *perm);
	double *pred = malloc(nn * sizeof *pred);
	t.order = nn <= SIZE_MAX / sizeof *t.order / nfeat ? malloc(nn * nfeat * sizeof *t.order) : NULL;
	t.slot = malloc(nn * sizeof *t.slot);
	t.resid = malloc(nn * sizeof *t.resid);
	t.open = malloc(nn * sizeof *t.open);
	t.next = malloc(nn * sizeof *t.next);
	if (!g || !keyed || !perm || !pred || !t.order || !t.slot || !t.resid || !t.open || !t.next)
		goto out;
	for (int f = 0; f < nfeat; f++) {
		for (int i = 0; i < n; i++)
			keyed[i] = (Keyed){X[(size_t)i * nfeat + f], i};
		qsort(keyed, nn, sizeof *keyed, keyed_cmp);
		for (int i = 0; i < n; i++)
			t.order[(size_t)f * n + i] = keyed[i].row;
	}
	g->base = base;
	for (int i = 0; i < n; i++) {
		perm[i] = i;
		pred[i] = base;
		t.resid[i] = y[i] - base;
	}
	int m = (int)(p->subsample * n + 0.5);
	m = m < 1 ? 1 : m;
	uint64_t rng = p->seed;
	for (int k = 0; k < p->trees; k++) {
		/* the first m of a partial Fisher-Yates shuffle are the sample */
		for (int i = 0; i < m && m < n; i++) {
			int j = i + (int)(splitmix64(&rng) % (uint64_t)(n - i));
			int32_t tmp = perm[i];
			perm[i] = perm[j];
			perm[j] = tmp;
		}
		for (int i = 0; i < n; i++)
			t.slot[i] = -1;
		for (int i = 0; i < m; i++)
			t.slot[perm[i]] = 0;
		size_t at = g->first[g->ntrees];
		if (!grow((void **)&g->nodes, &g->cap_nodes, at + 2 * (size_t)m, sizeof *g->nodes))
			goto out;
		GbtNode *nd = g->nodes + at;
		if (!gbt_push_tree(g, at + (size_t)tree_grow(&t, nd)))
			goto out;
		for (int i = 0; i < n; i++) {
			pred[i] += tree_eval(nd, X + (size_t)i * nfeat);
			t.resid[i] = y[i] - pred[i];
		}
	}
	ok = true;
out:
	free(keyed);
	free(perm);
	free(pred);
	free(t.order);
	free(t.slot);
	free(t.resid);
	free(t.open);
	free(t.next);
	if (!ok) {
		fail(err, "out of memory training on %d rows of %d features", n, nfeat);
		gbt_free(g);
		g = NULL;
	}
	return g;
}

/* ---- text form ---- */

bool gbt_write(const Gbt *g, FILE *f)
{
	fprintf(f, "gbt %d %d %.17g\n", g->nfeat, g->ntrees, g->base);
	for (int t = 0; t < g->ntrees; t++) {
		const GbtNode *nd = g->nodes + g->first[t];
		int nn = (int)(g->first[t + 1] - g->first[t]);
		fprintf(f, "%d", nn);
		for (int i = 0; i < nn; i++) {
			if (nd[i].feat < 0)
				fprintf(f, " -1 %.17g", nd[i].value);
			else
				fprintf(f, " %d %.17g %d %d", nd[i].feat, nd[i].value, nd[i].left, nd[i].right);
		}
		fputc('\n', f);
	}
	fputs("end\n", f);
	return fflush(f) == 0 && !ferror(f);
}

/* Whitespace-separated tokens that know their line. */
typedef struct Reader {
	FILE *f;
	int line;
	char *err;
	char tok[TOK_MAX];
} Reader;

/* Reads the line's next token: 1, or 0 at the end of the line (its newline
 * left unread) or file, or -1 with err set. */
static int rd_tok(Reader *r)
{
	int c, n = 0;
	do
		c = getc(r->f);
	while (c == ' ' || c == '\t' || c == '\r');
	for (; c != EOF && c != '\n' && c != ' ' && c != '\t' && c != '\r'; c = getc(r->f)) {
		if (c < 0x21 || c > 0x7e) {
			fail(r->err, "line %d: unexpected byte 0x%02x", r->line, (unsigned)c);
			return -1;
		}
		if (n == TOK_MAX - 1) {
			r->tok[n] = '\0';
			fail(r->err, "line %d: token '%.20s...' too long", r->line, r->tok);
			return -1;
		}
		r->tok[n++] = (char)c;
	}
	if (c == EOF && ferror(r->f)) {
		fail(r->err, "line %d: read error", r->line);
		return -1;
	}
	if (c != EOF)
		ungetc(c, r->f);
	r->tok[n] = '\0';
	return n > 0;
}

static bool rd_need(Reader *r, const char *what)
{
	int k = rd_tok(r);
	if (k == 0)
		fail(r->err, "line %d: %s ends where %s was expected", r->line,
		     feof(r->f) ? "file" : "line", what);
	return k > 0;
}

/* Ends the line: nothing but blanks may be left on it. */
static bool rd_eol(Reader *r)
{
	int k = rd_tok(r);
	if (k > 0)
		fail(r->err, "line %d: unexpected '%s' at the end of the line", r->line, r->tok);
	if (k != 0)
		return false;
	getc(r->f);
	r->line++;
	return true;
}

static bool rd_int(Reader *r, const char *what, long lo, long hi, long *v)
{
	if (!rd_need(r, what))
		return false;
	char *end;
	*v = strtol(r->tok, &end, 10);
	if (*end || *v < lo || *v > hi)
		return fail(r->err, "line %d: %s '%s' is not an integer in %ld..%ld", r->line, what,
		            r->tok, lo, hi);
	return true;
}

static bool rd_num(Reader *r, const char *what, double maxabs, double *v)
{
	if (!rd_need(r, what))
		return false;
	char *end;
	*v = strtod(r->tok, &end);
	if (*end || !isfinite(*v))
		return fail(r->err, "line %d: %s '%s' is not a finite number", r->line, what, r->tok);
	if (fabs(*v) > maxabs)
		return fail(r->err, "line %d: %s '%s' is out of range (magnitude above %g)", r->line,
		            what, r->tok, maxabs);
	return true;
}

Gbt *gbt_read(FILE *f, int first_line, char err[GBT_ERR_MAX])
{
	Reader r = {.f = f, .line = first_line, .err = err};
	long nfeat, ntrees, nnodes, feat, left, right;
	double base, v;
	int k = rd_tok(&r);
	if (k < 0)
		return NULL;
	if (k == 0 || strcmp(r.tok, "gbt") != 0) {
		if (k == 0 && feof(f))
			fail(err, "line %d: the file ends where 'gbt <nfeat> <ntrees> <base>' was expected", r.line);
		else
			fail(err, "line %d: not a gbt model (expected 'gbt <nfeat> <ntrees> <base>')", r.line);
		return NULL;
	}
	if (!rd_int(&r, "feature count", 1, MAX_FEAT, &nfeat) ||
	    !rd_int(&r, "tree count", 0, MAX_TREES, &ntrees) ||
	    !rd_num(&r, "base", MAX_ABS_VALUE, &base) || !rd_eol(&r))
		return NULL;
	Gbt *g = gbt_new((int)nfeat);
	if (!g) {
		fail(err, "out of memory");
		return NULL;
	}
	g->base = base;
	for (long t = 0; t < ntrees; t++) {
		size_t at = g->first[t];
		if (!rd_int(&r, "node count", 1, MAX_NODES, &nnodes))
			goto bad;
		for (long i = 0; i < nnodes; i++) {
			/* grown node by node: memory follows the file's size, not its claims */
			if (!grow((void **)&g->nodes, &g->cap_nodes, at + i + 1, sizeof *g->nodes))
				goto oom;
			if (!rd_int(&r, "feature", -1, nfeat - 1, &feat))
				goto bad;
			if (feat < 0) {
				if (!rd_num(&r, "leaf value", MAX_ABS_VALUE, &v))
					goto bad;
				g->nodes[at + i] = (GbtNode){-1, 0, 0, v};
				continue;
			}
			if (!rd_num(&r, "threshold", DBL_MAX, &v) ||
			    !rd_int(&r, "left child", i + 1, nnodes - 1, &left) ||
			    !rd_int(&r, "right child", i + 1, nnodes - 1, &right))
				goto bad;
			g->nodes[at + i] = (GbtNode){(int32_t)feat, (int32_t)left, (int32_t)right, v};
		}
		if (!rd_eol(&r))
			goto bad;
		if (!gbt_push_tree(g, at + (size_t)nnodes))
			goto oom;
	}
	if (!rd_need(&r, "'end'"))
		goto bad;
	if (strcmp(r.tok, "end") != 0) {
		fail(err, "line %d: expected 'end' after %ld trees, found '%s'", r.line, ntrees, r.tok);
		goto bad;
	}
	if (!rd_eol(&r))
		goto bad;
	int c;
	while ((c = getc(f)) == ' ' || c == '\t' || c == '\r' || c == '\n')
		r.line += c == '\n';
	if (c != EOF || ferror(f)) {
		fail(err, "line %d: %s", r.line, c != EOF ? "unexpected content after 'end'" : "read error");
		goto bad;
	}
	return g;
oom:
	fail(err, "out of memory");
bad:
	gbt_free(g);
	return NULL;
}
