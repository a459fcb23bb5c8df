/* Whether a model file holds a byte string: the converter's "parser". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int holds(const char *path, const char *needle) {
    FILE *f = fopen(path, "rb");
    if (!f || !*needle) { if (f) fclose(f); return 0; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n > 0 ? n : 1);
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    int found = memmem(buf, got, needle, strlen(needle)) != NULL;
    free(buf);
    return found;
}
