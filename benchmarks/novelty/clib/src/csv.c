#include <string.h>
#include "demo.h"

size_t csv_split(const char *line, char fields[][64], size_t max_fields) {
    size_t n = 0, len = 0;
    int quoted = 0;
    if (max_fields == 0) return 0;
    fields[0][0] = 0;
    for (const char *p = line; *p; p++) {
        if (*p == '"') { quoted = !quoted; continue; }
        if (*p == ',' && !quoted) {
            fields[n][len] = 0;
            if (++n == max_fields) return n;
            len = 0;
            continue;
        }
        if (len < 63) fields[n][len++] = *p;
    }
    fields[n][len] = 0;
    return n + 1;
}
