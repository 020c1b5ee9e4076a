#ifndef DEMO_H
#define DEMO_H
#include <stddef.h>

typedef struct { char *data; size_t len, cap; } strbuf;
void strbuf_init(strbuf *b);
void strbuf_append(strbuf *b, const char *s);
void strbuf_trim(strbuf *b);
void strbuf_free(strbuf *b);

int util_clamp(int v, int lo, int hi);
size_t util_count(const char *s, char c);
int util_parse_int(const char *s, int *out);
int util_log(int level, const char *msg, void *unused);

typedef struct hashmap hashmap;
hashmap *hashmap_new(size_t buckets);
void hashmap_put(hashmap *m, const char *key, int value);
int hashmap_get(const hashmap *m, const char *key, int *value);
int hashmap_remove(hashmap *m, const char *key);
size_t hashmap_size(const hashmap *m);
void hashmap_free(hashmap *m);

size_t csv_split(const char *line, char fields[][64], size_t max_fields);

double stats_mean(const double *xs, size_t n);
double stats_median(double *xs, size_t n);
double stats_stddev(const double *xs, size_t n);
double stats_percentile(double *xs, size_t n, double p);
#endif
