/* st_rng.c — the project's random numbers: xoshiro256** (Blackman and Vigna)
 * seeded by splitmix64 from a seed and a stream number, and the draws built
 * on it (uniform, exponential, normal, mean-one lognormal).
 *
 * Why here: the failure Monte-Carlo (analysis/failures.c) and the engine's
 * compute variability (sim/engine/compute.c) both need seeded, independent
 * streams that give the same numbers bit for bit; one generator serves both.
 *
 * Invariants: the state is integers only; uniform, log, exp and normal use
 * IEEE +, -, *, / and sqrt alone (this file is compiled without
 * floating-point contraction), so they are the same on every IEEE-754
 * platform.  Only st_rng_lognormal1's final exp() comes from the C library. */
#include <math.h>

#include "st_common.h"

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void st_rng_seed(st_rng *r, uint64_t seed, uint64_t stream)
{
  uint64_t x = seed ^ splitmix64(&stream);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t st_rng_next(st_rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double st_rng_uniform(st_rng *r) { return (double)((st_rng_next(r) >> 11) + 1) * 0x1p-53; }

/* The natural logarithm of x in (0, 1], from IEEE arithmetic alone: x = m 2^e
 * with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh((m - 1) / (m + 1)) by its
 * series (|s| < 0.172, 12 terms: the next is below 1e-19 of the sum). */
double st_rng_log(double x)
{
  int e = 0;
  double m = frexp(x, &e); /* exact: m in [0.5, 1) */
  if (m < 0.70710678118654752440) {
    m *= 2;
    e -= 1;
  }
  double s = (m - 1) / (m + 1), s2 = s * s, term = s, sum = 0;
  for (int k = 1; k <= 25; k += 2) {
    sum += term / k;
    term *= s2;
  }
  return e * 0.69314718055994530942 + 2 * sum;
}

double st_rng_exp(st_rng *r, double rate)
{
  if (!(rate > 0))
    return INFINITY;
  return -st_rng_log(st_rng_uniform(r)) / rate;
}

/* Marsaglia's polar method: (u, v) uniform in the square [-1, 1)^2 until
 * inside the unit disc (s = u^2 + v^2 in (0, 1)); u sqrt(-2 log s / s) is
 * standard normal.  The second normal of the pair is dropped, so a draw
 * depends on nothing but the stream's state. */
double st_rng_normal(st_rng *r)
{
  for (;;) {
    double u = 2 * st_rng_uniform(r) - 1, v = 2 * st_rng_uniform(r) - 1;
    double s = u * u + v * v;
    if (s > 0 && s < 1)
      return u * sqrt(-2 * st_rng_log(s) / s);
  }
}

double st_rng_lognormal1(st_rng *r, double sigma)
{
  if (!(sigma > 0))
    return 1.0;
  return exp(sigma * st_rng_normal(r) - 0.5 * sigma * sigma);
}
