/* fuzz_npy.c — libFuzzer harness for tf_npy_parse, then tf_convert of the
 * parsed data to F32 (so conversion of arbitrary bit patterns is fuzzed too).
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE
 *        -Ibase -Iio -Iir -Iruntime tests/fuzz/fuzz_npy.c
 *        io/tensorfile.c base/util.c base/diag.c -ljson-c -lm
 * Seeds: tests/fuzz/corpus_npy/. */
#include <stdlib.h>
#include <string.h>

#include "tensorfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    tf_tensor t;
    char err[256];
    if (tf_npy_parse(buf, size, &t, err, sizeof err) == 0) {
        static const size_t sizes[AXRT_DTYPE_COUNT] = {4, 8, 2, 2, 1, 4, 8};
        size_t n = t.nbytes / sizes[t.dtype];
        float *out = malloc(n * sizeof *out + 1);
        tf_convert(out, AXRT_F32, t.data, t.dtype, n);
        free(out);
    } else if (memchr(err, '\n', strlen(err))) {
        abort(); /* messages are one line */
    }
    free(buf);
    return 0;
}
