#include <stdlib.h>
#include <string.h>
#include "demo.h"

typedef struct entry { char *key; int value; struct entry *next; } entry;
struct hashmap { entry **buckets; size_t n, size; };

static size_t hash(const char *s) { size_t h = 5381; while (*s) h = h * 33 + (unsigned char)*s++; return h; }

hashmap *hashmap_new(size_t buckets) {
    hashmap *m = malloc(sizeof *m);
    m->buckets = calloc(buckets, sizeof *m->buckets);
    m->n = buckets;
    m->size = 0;
    return m;
}

void hashmap_put(hashmap *m, const char *key, int value) {
    entry **slot = &m->buckets[hash(key) % m->n];
    for (entry *e = *slot; e; e = e->next)
        if (!strcmp(e->key, key)) { e->value = value; return; }
    entry *e = malloc(sizeof *e);
    e->key = strdup(key);
    e->value = value;
    e->next = *slot;
    *slot = e;
    m->size++;
}

int hashmap_get(const hashmap *m, const char *key, int *value) {
    for (entry *e = m->buckets[hash(key) % m->n]; e; e = e->next)
        if (!strcmp(e->key, key)) { *value = e->value; return 1; }
    return 0;
}

int hashmap_remove(hashmap *m, const char *key) {
    for (entry **p = &m->buckets[hash(key) % m->n]; *p; p = &(*p)->next) {
        if (!strcmp((*p)->key, key)) {
            entry *e = *p;
            *p = e->next;
            free(e->key);
            free(e);
            m->size--;
            return 1;
        }
    }
    return 0;
}

size_t hashmap_size(const hashmap *m) { return m->size; }

void hashmap_free(hashmap *m) {
    for (size_t i = 0; i < m->n; i++)
        for (entry *e = m->buckets[i], *next; e; e = next) { next = e->next; free(e->key); free(e); }
    free(m->buckets);
    free(m);
}
