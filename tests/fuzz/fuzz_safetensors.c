/* fuzz_safetensors.c — libFuzzer harness for tf_safetensors_parse.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE
 *        -Ibase -Iio -Iir -Iruntime tests/fuzz/fuzz_safetensors.c
 *        io/tensorfile.c base/util.c base/diag.c -ljson-c -lm
 * Seeds: tests/fuzz/corpus_safetensors/.  On success every tensor's data
 * range is read, so an out-of-bounds pointer shows up under ASan. */
#include <stdlib.h>
#include <string.h>

#include "tensorfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy, so ASan sees reads past the end of the input */
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    ax_arena *a = ax_arena_new();
    tf_tensor *t;
    int n;
    char err[256];
    if (tf_safetensors_parse(a, buf, size, &t, &n, err, sizeof err) == 0) {
        volatile uint8_t sink = 0;
        for (int i = 0; i < n; i++)
            for (size_t b = 0; b < t[i].nbytes; b++)
                sink ^= t[i].data[b];
        (void)sink;
    } else if (memchr(err, '\n', strlen(err))) {
        abort(); /* messages are one line */
    }
    ax_arena_free(a);
    free(buf);
    return 0;
}
