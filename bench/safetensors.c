/* safetensors.c — the smallest reader the harness needs: the whole file in
 * memory, tensors found by name in the JSON header.  It trusts the header's
 * shape only as far as the caller's expected element count, which is what
 * every row checks its weights against. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

float *bench_floats(size_t count)
{
    size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) { fprintf(stderr, "bench: out of memory\n"); exit(2); }
    memset(p, 0, bytes);
    return p;
}

static unsigned char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL &&
            fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        *len = (size_t)(n < 0 ? 0 : n);
    }
    fclose(f);
    return buf;
}

int bench_tensors_load(bench_tensors *t, const char *path)
{
    size_t len = 0;
    unsigned char *buf = read_whole(path, &len);
    if (!buf) { fprintf(stderr, "bench: cannot read %s\n", path); return -1; }
    uint64_t hlen = 0;
    for (int i = 7; len >= 8 && i >= 0; i--) hlen = hlen << 8 | buf[i];
    if (len < 8 || hlen > len - 8) {
        fprintf(stderr, "bench: %s is not a safetensors file\n", path);
        free(buf);
        return -1;
    }
    t->header = malloc(hlen + 1);
    if (!t->header) { fprintf(stderr, "bench: out of memory\n"); exit(2); }
    memcpy(t->header, buf + 8, hlen);
    t->header[hlen] = 0;
    t->data_bytes = len - 8 - hlen;
    t->data = (unsigned char *)bench_floats(t->data_bytes / sizeof(float) + 1);
    memcpy(t->data, buf + 8 + hlen, t->data_bytes);
    free(buf);
    return 0;
}

void bench_tensors_free(bench_tensors *t)
{
    free(t->header);
    free(t->data);
    t->header = NULL;
    t->data = NULL;
}

/* The text of the JSON object that follows the key "name", or NULL. */
static const char *find_entry(const char *header, const char *name, size_t *entry_len)
{
    size_t n = strlen(name);
    for (const char *p = strchr(header, '"'); p; p = strchr(p + 1, '"')) {
        if (strncmp(p + 1, name, n) || p[n + 1] != '"') continue;
        const char *open = p + n + 2;
        while (*open == ' ' || *open == ':') open++;
        const char *close = *open == '{' ? strchr(open, '}') : NULL;
        if (!close) return NULL;
        *entry_len = (size_t)(close - open + 1);
        return open;
    }
    return NULL;
}

/* Byte range [*begin, *end) of the F32 tensor name; 0 on success. */
static int locate(const bench_tensors *t, const char *name, unsigned long long *begin, unsigned long long *end)
{
    size_t len = 0;
    const char *entry = find_entry(t->header, name, &len);
    char text[512];
    if (!entry || len >= sizeof text) return -1;
    memcpy(text, entry, len);
    text[len] = 0;
    const char *offsets = strstr(text, "\"data_offsets\"");
    const char *open = offsets ? strchr(offsets, '[') : NULL;
    if (!strstr(text, "\"F32\"") || !open || sscanf(open, "[%llu , %llu]", begin, end) != 2) return -1;
    return *end < *begin || *end > t->data_bytes || *begin % 4 ? -1 : 0;
}

size_t bench_tensor_count(const bench_tensors *t, const char *name)
{
    unsigned long long begin, end;
    return locate(t, name, &begin, &end) ? 0 : (size_t)(end - begin) / sizeof(float);
}

const float *bench_tensor(const bench_tensors *t, const char *name, size_t count)
{
    unsigned long long begin, end;
    if (locate(t, name, &begin, &end) || end - begin != count * sizeof(float)) {
        fprintf(stderr, "bench: no F32 tensor '%s' with %zu elements\n", name, count);
        return NULL;
    }
    return (const float *)(t->data + begin);
}

const float *bench_param(const bench_tensors *t, const char *layer, const char *param, size_t count)
{
    char name[128];
    snprintf(name, sizeof name, "%s.%s", layer, param);
    return bench_tensor(t, name, count);
}
