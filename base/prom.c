/*
 * prom.c - the Prometheus text exposition format (see prom.h). Families are
 * kept in the order first seen, each with its sample lines in one growing
 * buffer, so that rendering is a concatenation.
 */
#include "prom.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *s;
	size_t len, cap;
};

struct family {
	char *name, *help;
	enum prom_type type;
	struct buf samples;
};

struct prom {
	struct family *fam;
	unsigned nfam, capfam;
	int err; /* the first error, sticky */
};

const double prom_latency_bounds[] = {1e-6, 2.5e-6, 5e-6,   1e-5, 2.5e-5, 5e-5,	  1e-4, 2.5e-4,
				      5e-4, 1e-3,   2.5e-3, 5e-3, 1e-2,	  2.5e-2, 5e-2, 0.1,
				      0.25, 0.5,    1,	    2.5,  5,	  10};
const unsigned prom_latency_nbounds = sizeof(prom_latency_bounds) / sizeof(prom_latency_bounds[0]);

int prom_hist_init(struct prom_hist *h, const double *bounds, unsigned nbounds)
{
	memset(h, 0, sizeof(*h));
	if (nbounds > PROM_HIST_MAX)
		return -EINVAL;
	for (unsigned i = 1; i < nbounds; i++)
		if (!(bounds[i] > bounds[i - 1]))
			return -EINVAL;
	memcpy(h->bounds, bounds, nbounds * sizeof(*bounds));
	h->nbounds = nbounds;
	return 0;
}

void prom_hist_observe_ns(struct prom_hist *h, uint64_t ns)
{
	double s = (double)ns / 1e9;
	unsigned i = 0;

	while (i < h->nbounds && s > h->bounds[i])
		i++;
	__atomic_fetch_add(&h->counts[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum_ns, ns, __ATOMIC_RELAXED);
}

struct prom *prom_new(void)
{
	return calloc(1, sizeof(struct prom));
}

void prom_free(struct prom *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->nfam; i++) {
		free(p->fam[i].name);
		free(p->fam[i].help);
		free(p->fam[i].samples.s);
	}
	free(p->fam);
	free(p);
}

static int fail(struct prom *p, int err)
{
	if (!p->err)
		p->err = err;
	return err;
}

static bool grow(struct buf *b, size_t more)
{
	size_t cap;
	char *s;

	if (b->len + more + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s)
		return false;
	b->s = s;
	b->cap = cap;
	return true;
}

static bool put(struct buf *b, const char *s, size_t n)
{
	if (!grow(b, n))
		return false;
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
	return true;
}

static bool putf(struct buf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < sizeof(tmp) && put(b, tmp, (size_t)n);
}

/* s with \, " (in label values) and newlines escaped. */
static bool put_escaped(struct buf *b, const char *s, bool quote)
{
	for (; *s; s++) {
		const char *rep = *s == '\\'	       ? "\\\\"
				  : *s == '\n'	       ? "\\n"
				  : quote && *s == '"' ? "\\\""
						       : NULL;

		if (!(rep ? put(b, rep, strlen(rep)) : put(b, s, 1)))
			return false;
	}
	return true;
}

int prom_valid_name(const char *s)
{
	if (!s || !*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == ':'))
			return 0;
	return 1;
}

static struct family *family(struct prom *p, const char *name, const char *help,
			     enum prom_type type)
{
	struct family *f;

	for (unsigned i = 0; i < p->nfam; i++)
		if (!strcmp(p->fam[i].name, name)) {
			if (p->fam[i].type != type) {
				fail(p, -EINVAL);
				return NULL;
			}
			return &p->fam[i];
		}
	if (!prom_valid_name(name)) {
		fail(p, -EINVAL);
		return NULL;
	}
	if (p->nfam == p->capfam) {
		unsigned cap = p->capfam ? 2 * p->capfam : 64;
		struct family *nf = realloc(p->fam, cap * sizeof(*nf));

		if (!nf) {
			fail(p, -ENOMEM);
			return NULL;
		}
		p->fam = nf;
		p->capfam = cap;
	}
	f = &p->fam[p->nfam];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	f->help = strdup(help ? help : "");
	f->type = type;
	if (!f->name || !f->help) {
		free(f->name);
		free(f->help);
		fail(p, -ENOMEM);
		return NULL;
	}
	p->nfam++;
	return f;
}

/* " value\n", in the fewest digits that read back as the same double. */
static bool put_value(struct buf *b, double v)
{
	char num[40];

	snprintf(num, sizeof(num), "%.15g", v);
	if (strtod(num, NULL) != v)
		snprintf(num, sizeof(num), "%.17g", v);
	return putf(b, " %s\n", num);
}

/* name{labels[,le="bound"]} value */
static int sample(struct prom *p, struct buf *b, const char *name, const char *suffix,
		  const struct prom_label *labels, unsigned nlabels, const char *le, double value)
{
	bool ok = put(b, name, strlen(name)) && put(b, suffix, strlen(suffix));

	if (ok && (nlabels || le)) {
		ok = put(b, "{", 1);
		for (unsigned i = 0; ok && i < nlabels; i++) {
			if (!prom_valid_name(labels[i].name) || strchr(labels[i].name, ':'))
				return fail(p, -EINVAL);
			ok = (i == 0 || put(b, ",", 1)) &&
			     put(b, labels[i].name, strlen(labels[i].name)) && put(b, "=\"", 2) &&
			     put_escaped(b, labels[i].value ? labels[i].value : "", true) &&
			     put(b, "\"", 1);
		}
		if (ok && le)
			ok = (nlabels == 0 || put(b, ",", 1)) && putf(b, "le=\"%s\"", le);
		ok = ok && put(b, "}", 1);
	}
	ok = ok && put_value(b, value);
	return ok ? 0 : fail(p, -ENOMEM);
}

int prom_add(struct prom *p, const char *name, const char *help, enum prom_type type,
	     const struct prom_label *labels, unsigned nlabels, double value)
{
	struct family *f;

	if (type == PROM_HISTOGRAM)
		return fail(p, -EINVAL);
	f = family(p, name, help, type);
	if (!f)
		return p->err;
	return sample(p, &f->samples, name, "", labels, nlabels, NULL, value);
}

int prom_add_hist(struct prom *p, const char *name, const char *help,
		  const struct prom_label *labels, unsigned nlabels, const struct prom_hist *h)
{
	struct family *f = family(p, name, help, PROM_HISTOGRAM);
	uint64_t cum = 0;
	char le[32];
	int rc = 0;

	if (!f)
		return p->err;
	for (unsigned i = 0; i <= h->nbounds && rc == 0; i++) {
		cum += __atomic_load_n(&h->counts[i], __ATOMIC_RELAXED);
		if (i < h->nbounds)
			snprintf(le, sizeof(le), "%g", h->bounds[i]);
		else
			strcpy(le, "+Inf");
		rc = sample(p, &f->samples, name, "_bucket", labels, nlabels, le, (double)cum);
	}
	if (rc == 0)
		rc = sample(p, &f->samples, name, "_sum", labels, nlabels, NULL,
			    (double)__atomic_load_n(&h->sum_ns, __ATOMIC_RELAXED) / 1e9);
	if (rc == 0)
		rc = sample(p, &f->samples, name, "_count", labels, nlabels, NULL, (double)cum);
	return rc;
}

static const char *type_name(enum prom_type t)
{
	return t == PROM_COUNTER ? "counter" : t == PROM_GAUGE ? "gauge" : "histogram";
}

char *prom_render(struct prom *p, size_t *len)
{
	struct buf out = {0};

	if (p->err) {
		errno = -p->err;
		return NULL;
	}
	for (unsigned i = 0; i < p->nfam; i++) {
		const struct family *f = &p->fam[i];

		if (!(put(&out, "# HELP ", 7) && put(&out, f->name, strlen(f->name)) &&
		      put(&out, " ", 1) && put_escaped(&out, f->help, false) &&
		      putf(&out, "\n# TYPE %s %s\n", f->name, type_name(f->type)) &&
		      (f->samples.len == 0 || put(&out, f->samples.s, f->samples.len)))) {
			free(out.s);
			errno = ENOMEM;
			return NULL;
		}
	}
	if (!out.s && !put(&out, "", 0)) {
		errno = ENOMEM;
		return NULL;
	}
	*len = out.len;
	return out.s;
}
