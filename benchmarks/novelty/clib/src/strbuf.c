#include <stdlib.h>
#include <string.h>
#include "demo.h"

void strbuf_init(strbuf *b) { b->data = calloc(16, 1); b->len = 0; b->cap = 16; }

void strbuf_append(strbuf *b, const char *s) {
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap) b->cap *= 2;
        b->data = realloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, s, n + 1);
    b->len += n;
}

void strbuf_trim(strbuf *b) {
    size_t start = 0;
    while (start < b->len && b->data[start] == ' ') start++;
    size_t end = b->len;
    while (end > start && b->data[end - 1] == ' ') end--;
    memmove(b->data, b->data + start, end - start);
    b->len = end - start;
    b->data[b->len] = 0;
}

void strbuf_free(strbuf *b) { free(b->data); b->data = NULL; b->len = b->cap = 0; }
