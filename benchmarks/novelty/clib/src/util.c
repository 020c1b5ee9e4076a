#include <stdio.h>
#include <stdlib.h>
#include "demo.h"

int util_clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

size_t util_count(const char *s, char c) {
    size_t n = 0;
    for (; *s; s++) n += *s == c;
    return n;
}

int util_parse_int(const char *s, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end) return -1;
    *out = (int)v;
    return 0;
}

int util_log(int level, const char *msg, void *unused) {
    return fprintf(stderr, "[%d] %s\n", level, msg) < 0 ? -1 : 0;
}
