/* SPDX-License-Identifier: MIT */
/*
 * prom_lint [FILE]: strict checker for the Prometheus text exposition format,
 * version 0.0.4.  Reads FILE (or stdin when FILE is absent or "-").
 *
 * Exit status: 0 valid (prints "prom_lint: ok: F families, S samples" on
 * stdout), 1 invalid (prints "prom_lint: line N: <reason>" on stderr for the
 * first error found), 2 usage, I/O or memory error.
 *
 * Rules checked.  Where the 0.0.4 documentation is loose, the reference Go
 * parser (prometheus/common expfmt) decides, and where even that is lenient
 * the stricter reading is taken (marked "strict").
 *
 * Lines
 *  - Every line ends with '\n', the last one too.  No '\r' and no NUL byte
 *    anywhere.  Every line is valid UTF-8 (no overlong forms, surrogates or
 *    code points above U+10FFFF).  A line longer than 1 MiB (1048576 bytes
 *    without its '\n') is rejected.  Empty input is valid.
 *  - Lines that are empty or hold only spaces and tabs are ignored.  Spaces
 *    and tabs before the first token are allowed (as the Go parser does).
 *
 * Comments
 *  - A line whose first non-blank character is '#' is a comment.  If the
 *    first token after '#' (blanks between are allowed) is HELP or TYPE it
 *    is a directive, else the line is ignored.
 *  - "# HELP name text": name is a metric name, followed by the end of the
 *    line or by blanks and the docstring.  The docstring may be empty; its
 *    only escapes are \\ and \n (a lone trailing backslash is an error).
 *    "# HELP" with no name is an error (strict: the Go parser ignores it).
 *  - "# TYPE name type": type is exactly one of counter, gauge, histogram,
 *    summary, untyped (lower case, nothing after it, not even blanks).  A
 *    TYPE line without a type is an error (strict).
 *  - At most one HELP and one TYPE per family, and both come before the
 *    family's first sample (strict for HELP: the format says "HELP and TYPE
 *    lines first").
 *
 * Families
 *  - All lines of a family (HELP, TYPE, samples) form one contiguous group:
 *    a line for a family that ended (another family's line came after it)
 *    is an error.
 *  - A sample named n belongs to: the family n if one was declared (HELP or
 *    TYPE) or seen, unless that family is a histogram (its samples are
 *    n_bucket, n_sum, n_count only); else to histogram family b for
 *    n = b_bucket, b_sum, b_count; else to summary family b for
 *    n = b_sum, b_count; else to a new untyped family n.  So the samples of
 *    counter, gauge and untyped families carry the family's name exactly.
 *
 * Samples: name [ "{" labels "}" ] value [ timestamp ]
 *  - Metric names match [a-zA-Z_:][a-zA-Z0-9_:]*.  Label names match
 *    [a-zA-Z_][a-zA-Z0-9_]* and must not start with "__".
 *  - Label values are double-quoted; the only escapes are \\, \" and \n.
 *  - "{}" and a trailing comma ("{a="b",}") are allowed; "{,}" is not.
 *    Spaces and tabs are allowed between the name and '{' and around label
 *    tokens (as the Go parser does).
 *  - No label name twice in one sample.
 *  - The value is preceded by at least one space or tab (strict: the Go
 *    parser takes "x{}1") and is what Go's strconv.ParseFloat accepts
 *    minus what expfmt refuses: [+-]?(D+[.D*]|.D+)([eE][+-]?D+)?, NaN, and
 *    [+-]?Inf or [+-]?Infinity (NaN/Inf in any letter case, as Go).  No hex,
 *    no underscores; a finite value that overflows a double is an error.
 *  - The optional timestamp is -?D+ fitting in int64 (milliseconds), after
 *    one or more spaces or tabs (strict: no '+' sign).
 *  - Nothing follows the value or timestamp, not even blanks (as the Go
 *    parser).
 *  - No series twice in the whole input: same metric name and same label
 *    set, label order ignored.
 *
 * Type rules
 *  - counter: the value is not negative (NaN and +Inf are allowed).
 *  - histogram, per label set (all labels but "le"): every name_bucket has
 *    an "le" label whose value parses as above and is not NaN; le values
 *    strictly increase in order of appearance; bucket counts never
 *    decrease; an le=+Inf bucket exists and equals name_count; name_count
 *    exists.  name_sum and name_count carry no "le" label.  Bucket and
 *    count values are not negative and not NaN (strict).  name_sum is
 *    optional.
 *  - summary, per label set (all labels but "quantile"): every sample named
 *    name has a "quantile" label whose value parses as above and lies in
 *    [0, 1] (strict); quantiles strictly increase in order of appearance
 *    (the format requires increasing order).  name_sum and name_count carry
 *    no "quantile" label; name_count is not negative and not NaN (strict).
 *    name_sum and name_count are optional for summaries.
 *
 * Histogram checks that need all of a family's samples (+Inf bucket,
 * name_count) run when the family ends; their error names the line of the
 * last sample of the offending label set.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE (1024u * 1024u) /* bytes per line, without the '\n' */
#define SHOW_MAX 200		 /* bytes of a name or series shown in errors */

/* ---- small helpers --------------------------------------------------- */

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fputs("prom_lint: out of memory\n", stderr);
		exit(2);
	}
	return q;
}

static char *xstrndup(const char *s, size_t n)
{
	char *p = xrealloc(NULL, n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void buf_addc(struct buf *b, char c)
{
	buf_reserve(b, 1);
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

static void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

/* String-keyed open-addressing hash map; owns its keys, not its values. */
struct map_ent {
	char *key; /* NULL: empty slot */
	uint64_t hash;
	void *val;
};

struct map {
	struct map_ent *ent;
	size_t cap, n; /* cap is 0 or a power of two */
};

static struct map_ent *map_slot(const struct map *m, const char *key, uint64_t h)
{
	size_t mask = m->cap - 1;

	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		struct map_ent *e = &m->ent[i];

		if (!e->key || (e->hash == h && strcmp(e->key, key) == 0))
			return e;
	}
}

static void *map_get(const struct map *m, const char *key)
{
	if (!m->cap)
		return NULL;
	struct map_ent *e = map_slot(m, key, hash_str(key));
	return e->key ? e->val : NULL;
}

static void map_grow(struct map *m)
{
	struct map old = *m;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->ent = xrealloc(NULL, m->cap * sizeof(*m->ent));
	memset(m->ent, 0, m->cap * sizeof(*m->ent));
	for (size_t i = 0; i < old.cap; i++)
		if (old.ent[i].key)
			*map_slot(m, old.ent[i].key, old.ent[i].hash) = old.ent[i];
	free(old.ent);
}

/* Insert key -> val (val must not be NULL).  Returns false, changing
 * nothing, when the key is there already. */
static bool map_put(struct map *m, const char *key, void *val)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		map_grow(m);
	uint64_t h = hash_str(key);
	struct map_ent *e = map_slot(m, key, h);
	if (e->key)
		return false;
	e->key = xstrndup(key, strlen(key));
	e->hash = h;
	e->val = val;
	m->n++;
	return true;
}

/* Free the keys, and each value with fn when fn is not NULL. */
static void map_free(struct map *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->ent[i].key)
			continue;
		free(m->ent[i].key);
		if (fn)
			fn(m->ent[i].val);
	}
	free(m->ent);
	m->ent = NULL;
	m->cap = m->n = 0;
}

/* ---- lexical checks -------------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_metric_start(char c)
{
	return is_alpha_(c) || c == ':';
}

static bool is_metric_char(char c)
{
	return is_alpha_(c) || is_digit(c) || c == ':';
}

static bool is_label_char(char c)
{
	return is_alpha_(c) || is_digit(c);
}

/* Offset of the first byte that is not valid UTF-8, or n when all is. */
static size_t utf8_bad(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = s[i];
		size_t len;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			len = 2, cp = c & 0x1f, min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			len = 3, cp = c & 0x0f, min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return i;
		}
		if (n - i < len)
			return i;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += len;
	}
	return n;
}

static bool ieq(const char *s, size_t n, const char *lit)
{
	size_t k = strlen(lit);

	if (n != k)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lit[i])
			return false;
	}
	return true;
}

enum num_rc { NUM_OK, NUM_SYNTAX, NUM_RANGE };

/* Parse s[0..n) as the float syntax described at the top. */
static enum num_rc parse_float(const char *s, size_t n, struct buf *scratch, double *out)
{
	size_t i = 0;
	bool neg = false;

	if (n == 0)
		return NUM_SYNTAX;
	if (ieq(s, n, "nan")) {
		*out = NAN;
		return NUM_OK;
	}
	if (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-';
		i = 1;
	}
	if (ieq(s + i, n - i, "inf") || ieq(s + i, n - i, "infinity")) {
		*out = neg ? -INFINITY : INFINITY;
		return NUM_OK;
	}
	size_t int_digits = 0, frac_digits = 0;
	while (i < n && is_digit(s[i]))
		i++, int_digits++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, frac_digits++;
	}
	if (int_digits + frac_digits == 0)
		return NUM_SYNTAX;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t exp_digits = 0;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		while (i < n && is_digit(s[i]))
			i++, exp_digits++;
		if (!exp_digits)
			return NUM_SYNTAX;
	}
	if (i != n)
		return NUM_SYNTAX;

	scratch->len = 0;
	buf_add(scratch, s, n);
	errno = 0;
	char *end;
	double v = strtod(scratch->p, &end);
	if (end != scratch->p + n)
		return NUM_SYNTAX; /* cannot happen after the checks above */
	if (isinf(v))
		return NUM_RANGE; /* Go: ErrRange on overflow; underflow is fine */
	*out = v;
	return NUM_OK;
}

static bool parse_timestamp(const char *s, size_t n)
{
	size_t i = 0;
	bool neg = false;
	uint64_t v = 0, lim;

	if (n && s[0] == '-')
		neg = true, i = 1;
	if (i == n)
		return false;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (!is_digit(s[i]))
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	return true;
}

/* ---- the linter ------------------------------------------------------ */

enum mtype { T_UNTYPED, T_COUNTER, T_GAUGE, T_HISTOGRAM, T_SUMMARY };

static const char *const type_names[] = {
	[T_UNTYPED] = "untyped",     [T_COUNTER] = "counter", [T_GAUGE] = "gauge",
	[T_HISTOGRAM] = "histogram", [T_SUMMARY] = "summary",
};

/* A histogram or summary label set (labels other than le/quantile). */
struct group {
	char *labels;	    /* canonical form, for messages */
	unsigned long line; /* last sample of this label set */
	bool any_bound;	    /* a bucket (le) or quantile was seen */
	double last_bound;  /* its le or quantile */
	double last_cum;    /* its bucket count */
	bool inf_seen, count_seen;
	double inf_val, count_val;
};

struct family {
	char *name;
	enum mtype type;
	bool has_help, has_type;
	unsigned long nsamples;
	unsigned long last_line;
	struct map groups;     /* canonical labels -> struct group */
	struct group **gorder; /* groups in order of first appearance */
	size_t ngroups, gcap;
};

struct label {
	const char *name, *val; /* name into the line, val into lint.vals */
	size_t nlen, vlen;
	size_t voff; /* offset of val in lint.vals while parsing */
};

struct lint {
	unsigned long lineno;
	unsigned long nsamples;
	struct map families; /* name -> struct family */
	struct family *cur;  /* the family whose lines came last */
	struct map series;   /* canonical name{labels} -> (void *)1 */
	struct buf line, vals, key, gkey, scratch;
	struct label *labels;
	size_t nlabels, lcap;
	char err[512];
	unsigned long errline;
	char cbuf[16];
};

__attribute__((format(printf, 3, 4))) static int fail_at(struct lint *L, unsigned long line,
							 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(L->err, sizeof(L->err), fmt, ap);
	va_end(ap);
	L->errline = line;
	return -1;
}

#define fail(L, ...) fail_at((L), (L)->lineno, __VA_ARGS__)

/* c for a message: 'c' when printable ASCII, else its byte value. */
static const char *cdesc(struct lint *L, char c)
{
	unsigned char u = (unsigned char)c;

	if (u >= 0x20 && u < 0x7f)
		snprintf(L->cbuf, sizeof(L->cbuf), "'%c'", c);
	else
		snprintf(L->cbuf, sizeof(L->cbuf), "byte 0x%02x", u);
	return L->cbuf;
}

/* The escape sequence of backslash and c, for a message. */
static const char *edesc(struct lint *L, char c)
{
	unsigned char u = (unsigned char)c;

	if (u >= 0x20 && u < 0x7f)
		snprintf(L->cbuf, sizeof(L->cbuf), "\\%c", c);
	else
		snprintf(L->cbuf, sizeof(L->cbuf), "\\ + byte 0x%02x", u);
	return L->cbuf;
}

/* Length of s to show in a message, and whether it was cut. */
static int show_len(size_t n)
{
	return (int)(n > SHOW_MAX ? SHOW_MAX : n);
}

static const char *show_cut(size_t n)
{
	return n > SHOW_MAX ? "..." : "";
}

static void group_free(void *p)
{
	struct group *g = p;

	free(g->labels);
	free(g);
}

static void family_clear_groups(struct family *f)
{
	map_free(&f->groups, group_free);
	free(f->gorder);
	f->gorder = NULL;
	f->ngroups = f->gcap = 0;
}

static void family_free(void *p)
{
	struct family *f = p;

	family_clear_groups(f);
	free(f->name);
	free(f);
}

/* Run the checks that need all of f's samples, then drop its groups. */
static int family_end(struct lint *L, struct family *f)
{
	int rc = 0;

	if (f->type == T_HISTOGRAM) {
		for (size_t i = 0; i < f->ngroups && !rc; i++) {
			struct group *g = f->gorder[i];
			size_t gl = strlen(g->labels);

			if (!g->inf_seen)
				rc = fail_at(L, g->line,
					     "histogram %.*s%s%.*s%s has no le=\"+Inf\" bucket",
					     show_len(strlen(f->name)), f->name,
					     show_cut(strlen(f->name)), show_len(gl), g->labels,
					     show_cut(gl));
			else if (!g->count_seen)
				rc = fail_at(L, g->line, "histogram %.*s%s%.*s%s has no %.*s_count",
					     show_len(strlen(f->name)), f->name,
					     show_cut(strlen(f->name)), show_len(gl), g->labels,
					     show_cut(gl), show_len(strlen(f->name)), f->name);
			else if (g->inf_val != g->count_val)
				rc = fail_at(L, g->line,
					     "histogram %.*s%s%.*s%s: le=\"+Inf\" bucket %.17g "
					     "differs from _count %.17g",
					     show_len(strlen(f->name)), f->name,
					     show_cut(strlen(f->name)), show_len(gl), g->labels,
					     show_cut(gl), g->inf_val, g->count_val);
		}
	}
	family_clear_groups(f);
	return rc;
}

/* Make f the current family, ending the previous one.  created: f was just
 * made for this line; otherwise f must be the current family already. */
static int enter_family(struct lint *L, struct family *f, bool created)
{
	if (f == L->cur)
		goto ok;
	if (!created)
		return fail(L,
			    "lines of family %.*s%s are not contiguous (the family ended after "
			    "line %lu)",
			    show_len(strlen(f->name)), f->name, show_cut(strlen(f->name)),
			    f->last_line);
	if (L->cur && family_end(L, L->cur))
		return -1;
	L->cur = f;
ok:
	f->last_line = L->lineno;
	return 0;
}

static struct family *family_new(struct lint *L, const char *name, size_t n)
{
	struct family *f = xrealloc(NULL, sizeof(*f));

	memset(f, 0, sizeof(*f));
	f->name = xstrndup(name, n);
	map_put(&L->families, f->name, f);
	return f;
}

static struct family *family_find(struct lint *L, const char *name, size_t n)
{
	L->scratch.len = 0;
	buf_add(&L->scratch, name, n);
	return map_get(&L->families, L->scratch.p);
}

/* Read a metric name at s[*i]; returns its length (0: none). */
static size_t scan_metric_name(const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	if (*i < n && is_metric_start(s[*i]))
		for ((*i)++; *i < n && is_metric_char(s[*i]); (*i)++)
			;
	return *i - start;
}

static void skip_blanks(const char *s, size_t n, size_t *i)
{
	while (*i < n && is_blank(s[*i]))
		(*i)++;
}

static int do_help(struct lint *L, const char *s, size_t n, size_t i)
{
	skip_blanks(s, n, &i);
	size_t ns = i, nl = scan_metric_name(s, n, &i);
	if (!nl)
		return fail(L, "HELP line without a valid metric name");
	if (i < n && !is_blank(s[i]))
		return fail(L, "invalid character %s in metric name in HELP line", cdesc(L, s[i]));
	skip_blanks(s, n, &i);
	for (; i < n; i++) {
		if (s[i] != '\\')
			continue;
		if (i + 1 == n)
			return fail(L, "HELP text ends with a lone backslash");
		if (s[i + 1] != '\\' && s[i + 1] != 'n')
			return fail(L, "invalid escape %s in HELP text (only \\\\ and \\n)",
				    edesc(L, s[i + 1]));
		i++;
	}

	struct family *f = family_find(L, s + ns, nl);
	bool created = !f;
	if (created)
		f = family_new(L, s + ns, nl);
	else if (f == L->cur && f->has_help)
		return fail(L, "second HELP line for %.*s%s", show_len(nl), s + ns, show_cut(nl));
	else if (f == L->cur && f->nsamples)
		return fail(L, "HELP line for %.*s%s after its samples", show_len(nl), s + ns,
			    show_cut(nl));
	if (enter_family(L, f, created))
		return -1;
	f->has_help = true;
	return 0;
}

static int do_type(struct lint *L, const char *s, size_t n, size_t i)
{
	skip_blanks(s, n, &i);
	size_t ns = i, nl = scan_metric_name(s, n, &i);
	if (!nl)
		return fail(L, "TYPE line without a valid metric name");
	if (i < n && !is_blank(s[i]))
		return fail(L, "invalid character %s in metric name in TYPE line", cdesc(L, s[i]));
	skip_blanks(s, n, &i);
	if (i == n)
		return fail(L, "TYPE line for %.*s%s without a type", show_len(nl), s + ns,
			    show_cut(nl));
	enum mtype t;
	for (t = T_UNTYPED; t <= T_SUMMARY; t++)
		if (strlen(type_names[t]) == n - i && !memcmp(s + i, type_names[t], n - i))
			break;
	if (t > T_SUMMARY)
		return fail(L, "unknown metric type \"%.*s%s\"", show_len(n - i), s + i,
			    show_cut(n - i));

	struct family *f = family_find(L, s + ns, nl);
	bool created = !f;
	if (created)
		f = family_new(L, s + ns, nl);
	else if (f == L->cur && f->has_type)
		return fail(L, "second TYPE line for %.*s%s", show_len(nl), s + ns, show_cut(nl));
	else if (f == L->cur && f->nsamples)
		return fail(L, "TYPE line for %.*s%s after its samples", show_len(nl), s + ns,
			    show_cut(nl));
	if (enter_family(L, f, created))
		return -1;
	f->has_type = true;
	f->type = t;
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
	int c = memcmp(x->name, y->name, n);

	if (c)
		return c;
	return x->nlen < y->nlen ? -1 : x->nlen > y->nlen;
}

/* Append the sorted labels, all but the one named skip (may be NULL), as
 * {a="1",b="2"} with values escaped as in the format. */
static void canon_labels(struct lint *L, struct buf *b, const char *skip)
{
	size_t skipn = skip ? strlen(skip) : 0;
	bool first = true;

	buf_addc(b, '{');
	for (size_t k = 0; k < L->nlabels; k++) {
		const struct label *l = &L->labels[k];

		if (skip && l->nlen == skipn && !memcmp(l->name, skip, skipn))
			continue;
		if (!first)
			buf_addc(b, ',');
		first = false;
		buf_add(b, l->name, l->nlen);
		buf_add(b, "=\"", 2);
		for (size_t j = 0; j < l->vlen; j++) {
			char c = l->val[j];
			if (c == '\\' || c == '"')
				buf_addc(b, '\\'), buf_addc(b, c);
			else if (c == '\n')
				buf_add(b, "\\n", 2);
			else
				buf_addc(b, c);
		}
		buf_addc(b, '"');
	}
	buf_addc(b, '}');
}

static const struct label *label_find(const struct lint *L, const char *name)
{
	size_t n = strlen(name);

	for (size_t k = 0; k < L->nlabels; k++)
		if (L->labels[k].nlen == n && !memcmp(L->labels[k].name, name, n))
			return &L->labels[k];
	return NULL;
}

/* The group of f for the current labels without skip. */
static struct group *group_get(struct lint *L, struct family *f, const char *skip)
{
	L->gkey.len = 0;
	canon_labels(L, &L->gkey, skip);
	struct group *g = map_get(&f->groups, L->gkey.p);
	if (g)
		return g;
	g = xrealloc(NULL, sizeof(*g));
	memset(g, 0, sizeof(*g));
	g->labels = xstrndup(L->gkey.p, L->gkey.len);
	map_put(&f->groups, g->labels, g);
	if (f->ngroups == f->gcap) {
		f->gcap = f->gcap ? f->gcap * 2 : 8;
		f->gorder = xrealloc(f->gorder, f->gcap * sizeof(*f->gorder));
	}
	f->gorder[f->ngroups++] = g;
	return g;
}

/* Parse a label value's bound (le or quantile) as a float. */
static int label_float(struct lint *L, const struct label *l, const char *what, double *out)
{
	enum num_rc rc = parse_float(l->val, l->vlen, &L->scratch, out);

	if (rc != NUM_OK)
		return fail(L, "%s label value \"%.*s%s\" is not a %s float", what,
			    show_len(l->vlen), l->val, show_cut(l->vlen),
			    rc == NUM_RANGE ? "representable" : "valid");
	return 0;
}

enum kind { K_PLAIN, K_BUCKET, K_SUM, K_COUNT };

static bool has_suffix(const char *s, size_t n, const char *suf, size_t *base)
{
	size_t k = strlen(suf);

	if (n <= k || memcmp(s + n - k, suf, k))
		return false;
	*base = n - k;
	return true;
}

/* Find or make the family of sample name s[0..n); see the top comment. */
static struct family *resolve(struct lint *L, const char *s, size_t n, enum kind *kind,
			      bool *created)
{
	struct family *f = family_find(L, s, n);
	size_t b;

	*created = false;
	*kind = K_PLAIN;
	if (f && f->type != T_HISTOGRAM)
		return f;
	if (!f) {
		struct family *g = NULL;
		if (has_suffix(s, n, "_bucket", &b)) {
			g = family_find(L, s, b);
			if (g && g->type == T_HISTOGRAM) {
				*kind = K_BUCKET;
				return g;
			}
		} else if (has_suffix(s, n, "_sum", &b) || has_suffix(s, n, "_count", &b)) {
			g = family_find(L, s, b);
			if (g && (g->type == T_HISTOGRAM || g->type == T_SUMMARY)) {
				*kind = s[b + 1] == 's' ? K_SUM : K_COUNT;
				return g;
			}
		}
		*created = true;
		return family_new(L, s, n);
	}
	return f; /* a histogram named exactly like the sample: caller errs */
}

static int check_sample(struct lint *L, const char *name, size_t nl, double v)
{
	enum kind kind;
	bool created;
	struct family *f = resolve(L, name, nl, &kind, &created);

	if (enter_family(L, f, created))
		return -1;
	f->nsamples++;
	L->nsamples++;
	if (f->type == T_HISTOGRAM && kind == K_PLAIN)
		return fail(L,
			    "sample %.*s%s of histogram %.*s%s: a histogram has only _bucket, "
			    "_sum and _count samples",
			    show_len(nl), name, show_cut(nl), show_len(nl), name, show_cut(nl));

	/* labels: sort, no name twice, then the series must be new */
	for (size_t k = 0; k < L->nlabels; k++)
		L->labels[k].val = L->vals.p + L->labels[k].voff;
	if (L->nlabels > 1)
		qsort(L->labels, L->nlabels, sizeof(*L->labels), label_cmp);
	for (size_t k = 1; k < L->nlabels; k++)
		if (!label_cmp(&L->labels[k - 1], &L->labels[k]))
			return fail(L, "label %.*s%s appears twice", show_len(L->labels[k].nlen),
				    L->labels[k].name, show_cut(L->labels[k].nlen));
	L->key.len = 0;
	buf_add(&L->key, name, nl);
	canon_labels(L, &L->key, NULL);
	if (!map_put(&L->series, L->key.p, (void *)1))
		return fail(L, "duplicate series %.*s%s", show_len(L->key.len), L->key.p,
			    show_cut(L->key.len));

	const struct label *le = label_find(L, "le"), *q = label_find(L, "quantile");
	struct group *g;
	double bound;

	switch (f->type) {
	case T_COUNTER:
		if (v < 0)
			return fail(L, "counter %.*s%s has negative value %.17g", show_len(nl),
				    name, show_cut(nl), v);
		break;
	case T_HISTOGRAM:
		if (kind == K_BUCKET) {
			if (!le)
				return fail(L, "histogram bucket %.*s%s has no le label",
					    show_len(nl), name, show_cut(nl));
			if (label_float(L, le, "le", &bound))
				return -1;
			if (isnan(bound))
				return fail(L, "histogram bucket le is NaN");
			if (isnan(v) || v < 0)
				return fail(L, "histogram bucket count %.17g is negative or NaN",
					    v);
			g = group_get(L, f, "le");
			if (g->any_bound && !(bound > g->last_bound))
				return fail(L,
					    "histogram bucket le=%.17g does not increase (previous "
					    "le=%.17g)",
					    bound, g->last_bound);
			if (g->any_bound && v < g->last_cum)
				return fail(L,
					    "histogram bucket count %.17g is less than the "
					    "previous bucket's %.17g",
					    v, g->last_cum);
			g->any_bound = true;
			g->last_bound = bound;
			g->last_cum = v;
			if (isinf(bound) && bound > 0) {
				g->inf_seen = true;
				g->inf_val = v;
			}
		} else {
			if (le)
				return fail(L, "%.*s%s must not have an le label", show_len(nl),
					    name, show_cut(nl));
			if (kind == K_COUNT && (isnan(v) || v < 0))
				return fail(L, "histogram count %.17g is negative or NaN", v);
			g = group_get(L, f, NULL);
			if (kind == K_COUNT) {
				g->count_seen = true;
				g->count_val = v;
			}
		}
		g->line = L->lineno;
		break;
	case T_SUMMARY:
		if (kind == K_PLAIN) {
			if (!q)
				return fail(L, "summary sample %.*s%s has no quantile label",
					    show_len(nl), name, show_cut(nl));
			if (label_float(L, q, "quantile", &bound))
				return -1;
			if (!(bound >= 0 && bound <= 1))
				return fail(L, "summary quantile %.17g is not within [0, 1]",
					    bound);
			g = group_get(L, f, "quantile");
			if (g->any_bound && !(bound > g->last_bound))
				return fail(L,
					    "summary quantile %.17g does not increase (previous "
					    "%.17g)",
					    bound, g->last_bound);
			g->any_bound = true;
			g->last_bound = bound;
		} else {
			if (q)
				return fail(L, "%.*s%s must not have a quantile label",
					    show_len(nl), name, show_cut(nl));
			if (kind == K_COUNT && (isnan(v) || v < 0))
				return fail(L, "summary count %.17g is negative or NaN", v);
		}
		break;
	case T_GAUGE:
	case T_UNTYPED:
		break;
	}
	return 0;
}

static int do_sample(struct lint *L, const char *s, size_t n, size_t i)
{
	size_t ns = i, nl = scan_metric_name(s, n, &i);

	if (!nl) {
		if (s[i] == '{' || s[i] == '"')
			return fail(L, "sample without a metric name");
		return fail(L, "invalid character %s at the start of a metric name",
			    cdesc(L, s[i]));
	}
	const char *name = s + ns;
	size_t after_name = i;
	skip_blanks(s, n, &i);

	L->nlabels = 0;
	L->vals.len = 0;
	buf_reserve(&L->vals, 0);
	if (i < n && s[i] == '{') {
		i++;
		for (;;) {
			skip_blanks(s, n, &i);
			if (i < n && s[i] == '}')
				break;
			size_t ls = i;
			if (i < n && is_alpha_(s[i]))
				for (i++; i < n && is_label_char(s[i]); i++)
					;
			size_t ll = i - ls;
			if (!ll) {
				if (i == n)
					return fail(L, "unterminated label set (no '}')");
				return fail(L, "invalid character %s where a label name belongs",
					    cdesc(L, s[i]));
			}
			if (ll >= 2 && s[ls] == '_' && s[ls + 1] == '_')
				return fail(L, "label name %.*s%s is reserved (starts with \"__\")",
					    show_len(ll), s + ls, show_cut(ll));
			skip_blanks(s, n, &i);
			if (i == n || s[i] != '=') {
				if (i < n && !is_blank(s[i]) && i == ls + ll)
					return fail(L, "invalid character %s in label name",
						    cdesc(L, s[i]));
				return fail(L, "expected '=' after label name %.*s%s", show_len(ll),
					    s + ls, show_cut(ll));
			}
			i++;
			skip_blanks(s, n, &i);
			if (i == n || s[i] != '"')
				return fail(L, "label value of %.*s%s is not double-quoted",
					    show_len(ll), s + ls, show_cut(ll));
			i++;
			size_t voff = L->vals.len;
			for (;; i++) {
				if (i == n)
					return fail(L, "unterminated label value for %.*s%s",
						    show_len(ll), s + ls, show_cut(ll));
				if (s[i] == '"')
					break;
				if (s[i] != '\\') {
					buf_addc(&L->vals, s[i]);
					continue;
				}
				if (++i == n)
					return fail(L, "unterminated label value for %.*s%s",
						    show_len(ll), s + ls, show_cut(ll));
				if (s[i] == 'n')
					buf_addc(&L->vals, '\n');
				else if (s[i] == '\\' || s[i] == '"')
					buf_addc(&L->vals, s[i]);
				else
					return fail(L,
						    "invalid escape %s in label value (only "
						    "\\\\, \\\" and \\n)",
						    edesc(L, s[i]));
			}
			i++; /* the closing quote */
			if (L->nlabels == L->lcap) {
				L->lcap = L->lcap ? L->lcap * 2 : 16;
				L->labels = xrealloc(L->labels, L->lcap * sizeof(*L->labels));
			}
			L->labels[L->nlabels++] = (struct label){
				.name = s + ls,
				.nlen = ll,
				.voff = voff,
				.vlen = L->vals.len - voff,
			};
			skip_blanks(s, n, &i);
			if (i < n && s[i] == ',') {
				i++;
				continue;
			}
			if (i < n && s[i] == '}')
				break;
			if (i == n)
				return fail(L, "unterminated label set (no '}')");
			return fail(L, "expected ',' or '}' after a label value, not %s",
				    cdesc(L, s[i]));
		}
		i++; /* '}' */
		after_name = i;
		skip_blanks(s, n, &i);
	} else if (i < n && i == after_name) {
		return fail(L, "invalid character %s in metric name", cdesc(L, s[i]));
	}

	if (i == n) {
		if (i > after_name)
			return fail(L, "missing value (only trailing whitespace after the name)");
		return fail(L, "missing value");
	}
	if (i == after_name) {
		if (s[i - 1] == '}')
			return fail(L, "expected a space or tab after '}', not %s", cdesc(L, s[i]));
		return fail(L, "no space or tab before the value");
	}
	size_t vs = i;
	while (i < n && !is_blank(s[i]))
		i++;
	double v;
	enum num_rc nrc = parse_float(s + vs, i - vs, &L->scratch, &v);
	if (nrc != NUM_OK)
		return fail(L, "value \"%.*s%s\" is not a %s float", show_len(i - vs), s + vs,
			    show_cut(i - vs), nrc == NUM_RANGE ? "representable" : "valid");
	if (i < n) {
		skip_blanks(s, n, &i);
		if (i == n)
			return fail(L, "trailing whitespace after the value");
		size_t ts = i;
		while (i < n && !is_blank(s[i]))
			i++;
		if (!parse_timestamp(s + ts, i - ts))
			return fail(L, "timestamp \"%.*s%s\" is not a 64-bit integer",
				    show_len(i - ts), s + ts, show_cut(i - ts));
		if (i < n) {
			skip_blanks(s, n, &i);
			if (i == n)
				return fail(L, "trailing whitespace after the timestamp");
			return fail(L, "unexpected text after the timestamp");
		}
	}
	return check_sample(L, name, nl, v);
}

static int do_line(struct lint *L, const char *s, size_t n)
{
	size_t bad;

	if ((bad = utf8_bad((const unsigned char *)s, n)) < n)
		return fail(L, "invalid UTF-8 at byte %zu", bad + 1);
	const char *z;
	if ((z = memchr(s, '\0', n)))
		return fail(L, "NUL byte at byte %zu", (size_t)(z - s) + 1);
	if ((z = memchr(s, '\r', n)))
		return fail(L, "carriage return at byte %zu", (size_t)(z - s) + 1);

	size_t i = 0;
	skip_blanks(s, n, &i);
	if (i == n)
		return 0; /* blank line */
	if (s[i] != '#')
		return do_sample(L, s, n, i);
	i++;
	skip_blanks(s, n, &i);
	size_t ks = i;
	while (i < n && !is_blank(s[i]))
		i++;
	if (i - ks == 4 && !memcmp(s + ks, "HELP", 4))
		return do_help(L, s, n, i);
	if (i - ks == 4 && !memcmp(s + ks, "TYPE", 4))
		return do_type(L, s, n, i);
	return 0; /* plain comment */
}

enum rd { RD_LINE, RD_LAST, RD_EOF, RD_LONG, RD_ERR };

/* Read one line into L->line without its '\n'.  RD_LAST: a final line that
 * has no '\n'. */
static enum rd read_line(FILE *in, struct buf *b)
{
	int c;

	b->len = 0;
	buf_reserve(b, 0);
	while ((c = getc_unlocked(in)) != EOF) {
		if (c == '\n')
			return RD_LINE;
		if (b->len >= MAX_LINE)
			return RD_LONG;
		if (b->len + 1 >= b->cap)
			buf_reserve(b, 1);
		b->p[b->len++] = (char)c;
	}
	if (ferror(in))
		return RD_ERR;
	return b->len ? RD_LAST : RD_EOF;
}

static void lint_free(struct lint *L)
{
	map_free(&L->families, family_free);
	map_free(&L->series, NULL);
	buf_free(&L->line);
	buf_free(&L->vals);
	buf_free(&L->key);
	buf_free(&L->gkey);
	buf_free(&L->scratch);
	free(L->labels);
}

static void usage(FILE *f)
{
	fputs("usage: prom_lint [FILE]\n"
	      "Check that FILE (default: stdin) is valid Prometheus text exposition\n"
	      "format 0.0.4.  Exit 0 valid, 1 invalid, 2 usage or I/O error.\n",
	      f);
}

int main(int argc, char **argv)
{
	const char *path = NULL;

	if (argc > 2) {
		usage(stderr);
		return 2;
	}
	if (argc == 2) {
		if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return 0;
		}
		if (argv[1][0] == '-' && argv[1][1]) {
			fprintf(stderr, "prom_lint: unknown option %s\n", argv[1]);
			usage(stderr);
			return 2;
		}
		if (strcmp(argv[1], "-"))
			path = argv[1];
	}

	FILE *in = stdin;
	if (path && !(in = fopen(path, "r"))) {
		fprintf(stderr, "prom_lint: %s: %s\n", path, strerror(errno));
		return 2;
	}

	struct lint L;
	memset(&L, 0, sizeof(L));
	int status = 0;
	for (;;) {
		enum rd r = read_line(in, &L.line);

		if (r == RD_EOF)
			break;
		L.lineno++;
		if (r == RD_ERR) {
			fprintf(stderr, "prom_lint: %s: read error: %s\n", path ? path : "stdin",
				strerror(errno));
			status = 2;
			break;
		}
		if (r == RD_LONG) {
			fail(&L, "line longer than %u bytes", MAX_LINE);
			status = 1;
			break;
		}
		if (r == RD_LAST) {
			fail(&L, "last line does not end with a newline");
			status = 1;
			break;
		}
		if (do_line(&L, L.line.p, L.line.len)) {
			status = 1;
			break;
		}
	}
	if (!status && L.cur && family_end(&L, L.cur))
		status = 1;
	if (status == 1)
		fprintf(stderr, "prom_lint: line %lu: %s\n", L.errline, L.err);
	else if (!status)
		printf("prom_lint: ok: %zu families, %lu samples\n", L.families.n, L.nsamples);
	if (path)
		fclose(in);
	lint_free(&L);
	if (!status && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "prom_lint: write error: %s\n", strerror(errno));
		return 2;
	}
	return status;
}
