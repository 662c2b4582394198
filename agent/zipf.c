/*
 * zipf.c - rejection-inversion Zipf sampler (see zipf.h).
 *
 * h(x) = x^-s is the unnormalised density; H is an antiderivative of h and
 * H^-1 its inverse, written with log1p/expm1 helpers so that they stay
 * accurate as s approaches 1 (where H becomes log x).
 */
#include <errno.h>
#include <math.h>

#include "zipf.h"

/* log1p(x) / x, accurate near 0. */
static double helper1(double x)
{
	if (fabs(x) > 1e-8)
		return log1p(x) / x;
	return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}

/* expm1(x) / x, accurate near 0. */
static double helper2(double x)
{
	if (fabs(x) > 1e-8)
		return expm1(x) / x;
	return 1 + x * 0.5 * (1 + x * (1.0 / 3) * (1 + 0.25 * x));
}

static double h(double s, double x)
{
	return exp(-s * log(x));
}

/* H(x) = (x^(1-s) - 1) / (1 - s), or log x for s = 1. */
static double h_integral(double s, double x)
{
	double lx = log(x);

	return helper2((1 - s) * lx) * lx;
}

static double h_integral_inverse(double s, double x)
{
	double t = x * (1 - s);

	if (t < -1) /* rounding can push t just past the domain */
		t = -1;
	return exp(helper1(t) * x);
}

int zipf_init(struct zipf *z, uint64_t n, double s)
{
	if (n < 1 || !(s >= 0) || isinf(s))
		return -EINVAL;
	z->n = n;
	z->s = s;
	z->h_x1 = h_integral(s, 1.5) - 1;
	z->h_n = h_integral(s, (double)n + 0.5);
	z->accept_width = 2 - h_integral_inverse(s, h_integral(s, 2.5) - h(s, 2));
	return 0;
}

uint64_t zipf_sample(const struct zipf *z, struct rng *r)
{
	if (z->s == 0 || z->n == 1)
		return 1 + rng_below(r, z->n);
	/* Bounded in expectation (acceptance is high); the cap only guards against
	 * a broken RNG spinning forever. */
	for (int tries = 0; tries < 1000000; tries++) {
		double u = z->h_n + rng_double(r) * (z->h_x1 - z->h_n);
		double x = h_integral_inverse(z->s, u);
		double kd = floor(x + 0.5);
		uint64_t k;

		if (kd < 1)
			kd = 1;
		else if (kd > (double)z->n)
			kd = (double)z->n;
		k = (uint64_t)kd;
		if (kd - x <= z->accept_width || u >= h_integral(z->s, kd + 0.5) - h(z->s, kd))
			return k;
	}
	return 1;
}

double zipf_pmf(uint64_t n, double s, uint64_t k)
{
	double norm = 0;

	if (k < 1 || k > n)
		return 0;
	for (uint64_t i = n; i >= 1; i--) /* smallest terms first, for accuracy */
		norm += pow((double)i, -s);
	return pow((double)k, -s) / norm;
}
