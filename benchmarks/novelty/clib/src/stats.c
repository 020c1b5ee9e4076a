#include <math.h>
#include <stdlib.h>
#include "demo.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_mean(const double *xs, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += xs[i];
    return n ? sum / n : 0;
}

double stats_median(double *xs, size_t n) {
    if (!n) return 0;
    qsort(xs, n, sizeof *xs, cmp);
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

double stats_stddev(const double *xs, size_t n) {
    if (n < 2) return 0;
    double m = stats_mean(xs, n), acc = 0;
    for (size_t i = 0; i < n; i++) acc += (xs[i] - m) * (xs[i] - m);
    return sqrt(acc / (n - 1));
}

double stats_percentile(double *xs, size_t n, double p) {
    if (!n) return 0;
    qsort(xs, n, sizeof *xs, cmp);
    double rank = p / 100 * (n - 1);
    size_t lo = (size_t)rank;
    return lo + 1 < n ? xs[lo] + (rank - lo) * (xs[lo + 1] - xs[lo]) : xs[lo];
}
