#include <stdio.h>
#include <string.h>
#include "demo.h"

static int failures = 0, run = 0;
#define CHECK(name, cond, ...) do { run++; if (cond) printf("test %-28s ok\n", name); \
    else { failures++; printf("test %-28s FAILED: ", name); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void test_strbuf(void) {
    strbuf b; strbuf_init(&b);
    strbuf_append(&b, "hello"); strbuf_append(&b, ", world");
    CHECK("strbuf_append", !strcmp(b.data, "hello, world"), "got \"%s\"", b.data);
    CHECK("strbuf_len", b.len == 12, "len %zu", b.len);
    strbuf_free(&b); strbuf_init(&b);
    strbuf_append(&b, "  abc  "); strbuf_trim(&b);
    CHECK("strbuf_trim", !strcmp(b.data, "abc"), "expected \"abc\", got \"%s\"", b.data);
    strbuf_free(&b); strbuf_init(&b);
    for (int i = 0; i < 100; i++) strbuf_append(&b, "xy");
    CHECK("strbuf_grow", b.len == 200 && b.cap >= 201, "len %zu cap %zu", b.len, b.cap);
    strbuf_free(&b);
}

static void test_util(void) {
    CHECK("util_clamp_low", util_clamp(-5, 0, 10) == 0, "got %d", util_clamp(-5, 0, 10));
    CHECK("util_clamp_high", util_clamp(50, 0, 10) == 10, "got %d", util_clamp(50, 0, 10));
    CHECK("util_clamp_inside", util_clamp(5, 0, 10) == 5, "got %d", util_clamp(5, 0, 10));
    CHECK("util_count", util_count("a,b,,c", ',') == 3, "got %zu", util_count("a,b,,c", ','));
    int v = 0;
    CHECK("util_parse_int", util_parse_int("42", &v) == 0 && v == 42, "got %d", v);
    CHECK("util_parse_int_error", util_parse_int("4x2", &v) == -1, "accepted 4x2");
    CHECK("util_parse_int_empty_error", util_parse_int("", &v) == -1, "accepted empty");
}

static void test_hashmap(void) {
    hashmap *m = hashmap_new(8);
    char key[16];
    for (int i = 0; i < 50; i++) { snprintf(key, sizeof key, "k%d", i); hashmap_put(m, key, i); }
    CHECK("hashmap_size", hashmap_size(m) == 50, "size %zu", hashmap_size(m));
    int v = -1;
    CHECK("hashmap_get", hashmap_get(m, "k17", &v) && v == 17, "got %d", v);
    CHECK("hashmap_get_missing", !hashmap_get(m, "nope", &v), "found nope");
    hashmap_put(m, "k17", 99);
    CHECK("hashmap_overwrite", hashmap_get(m, "k17", &v) && v == 99 && hashmap_size(m) == 50, "got %d", v);
    CHECK("hashmap_remove", hashmap_remove(m, "k3") && !hashmap_get(m, "k3", &v), "k3 still there");
    CHECK("hashmap_remove_missing", !hashmap_remove(m, "k3"), "removed k3 twice");
    hashmap_free(m);
}

static void test_csv(void) {
    char f[8][64];
    size_t n = csv_split("a,b,c", f, 8);
    CHECK("csv_simple", n == 3 && !strcmp(f[2], "c"), "n=%zu", n);
    n = csv_split("\"x,y\",z", f, 8);
    CHECK("csv_quoted", n == 2 && !strcmp(f[0], "x,y"), "n=%zu f0=%s", n, f[0]);
    n = csv_split("", f, 8);
    CHECK("csv_empty", n == 1 && f[0][0] == 0, "n=%zu", n);
    n = csv_split("a,b,c,d", f, 2);
    CHECK("csv_max_fields", n == 2, "n=%zu", n);
}

static int near(double a, double b) { return a - b < 1e-9 && b - a < 1e-9; }

static void test_stats(void) {
    double a[] = {1, 2, 3, 4}, b[] = {5, 1, 3}, c[] = {2, 4, 4, 4, 5, 5, 7, 9}, d[] = {10, 20, 30, 40, 50};
    CHECK("stats_mean", near(stats_mean(a, 4), 2.5), "got %g", stats_mean(a, 4));
    CHECK("stats_mean_empty", near(stats_mean(a, 0), 0), "got %g", stats_mean(a, 0));
    CHECK("stats_median_even", near(stats_median(a, 4), 2.5), "got %g", stats_median(a, 4));
    CHECK("stats_median_odd", near(stats_median(b, 3), 3), "got %g", stats_median(b, 3));
    CHECK("stats_stddev", stats_stddev(c, 8) > 2.13 && stats_stddev(c, 8) < 2.14, "got %g", stats_stddev(c, 8));
    CHECK("stats_stddev_one", near(stats_stddev(a, 1), 0), "got %g", stats_stddev(a, 1));
    CHECK("stats_percentile_50", near(stats_percentile(d, 5, 50), 30), "got %g", stats_percentile(d, 5, 50));
    CHECK("stats_percentile_90", near(stats_percentile(d, 5, 90), 46), "got %g", stats_percentile(d, 5, 90));
    CHECK("stats_percentile_max", near(stats_percentile(d, 5, 100), 50), "got %g", stats_percentile(d, 5, 100));
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("running demo tests\n");
    test_strbuf(); test_util(); test_hashmap(); test_csv(); test_stats();
    printf("%d tests, %d failed\n", run, failures);
    return failures != 0;
}
