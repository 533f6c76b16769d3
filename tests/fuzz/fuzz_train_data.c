/* fuzz_train_data.c — libFuzzer harness for the training data path of
 * `axc train` (and --calibrate): axc_read_npy_file on the bytes as a file
 * (a memfd: the regular-file, size and magic checks, the bounded read), then
 * axc_train_batches against an input node whose shape and dtype the first
 * bytes choose, the class-index check of cross_entropy's targets and the
 * non-finite scan of calibration data.
 *
 * Input: 5 bytes of node description, then the .npy file:
 *   [0] bits 0-1: rank 1..3 (0 -> 1); bit 2: Float64 (else Float32);
 *       bit 3: an integer (Int64) target node instead
 *   [1..3] dims, each 1 + byte % 8
 *   [4] the class count for the index check, 1 + byte
 * Seeds: tests/fuzz/corpus_train_data/.  A crash, a leak, undefined
 * behaviour or a multi-line message is a finding. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a file the reader opens by path. */
static int write_memfd(const uint8_t *data, size_t size, char *path, size_t cap)
{
    int fd = memfd_create("fuzz_train_data", 0);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) { close(fd); return -1; }
        done += (size_t)n;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    ir_node n;
    memset(&n, 0, sizeof n);
    n.name = "x";
    n.rank = 1 + (data[0] & 3) % 3;
    n.dtype = data[0] & 8 ? AXRT_I64 : data[0] & 4 ? AXRT_F64 : AXRT_F32;
    for (int d = 0; d < n.rank; d++) n.shape[d] = 1 + data[1 + d] % 8;
    const int64_t classes = 1 + data[4];
    char path[64];
    int fd = write_memfd(data + 5, size - 5, path, sizeof path);
    if (fd < 0) return 0;
    /* axc_fail's messages into a buffer (sanitizer reports write to fd 2
     * directly and still show): each must be one line */
    FILE *real_stderr = stderr;
    char *messages = NULL;
    size_t messages_len = 0;
    FILE *capture = open_memstream(&messages, &messages_len);
    if (capture) stderr = capture;
    ax_ctx *ctx = ax_ctx_new();
    tf_tensor t;
    if (axc_read_npy_file(ctx, "--input", path, &t) == AXC_OK) {
        int64_t at;
        double value;
        if (axc_first_nonfinite(&t, &at, &value) && (at < 0 || (size_t)at >= t.nbytes)) abort();
        axc_batch_file f = {0};
        if (axc_train_batches(&t, &n, "--input", path, &f) == AXC_OK) {
            if (n.dtype == AXRT_I64) axc_check_classes(&f, &n, classes);
            volatile uint8_t sink = 0;   /* every converted byte is readable */
            for (int64_t b = 0; b < f.batches; b++)
                for (size_t k = 0; k < f.batch_bytes; k++) sink ^= f.data[(size_t)b * f.batch_bytes + k];
            (void)sink;
        }
        free(f.data);
    }
    ax_ctx_free(ctx);
    close(fd);
    if (capture) {
        stderr = real_stderr;
        fclose(capture);
        bool one_line = true;   /* each line a whole message: "axc: error: ..." */
        for (const char *line = messages; line && *line && one_line; line = strchr(line, '\n') + 1)
            one_line = !strncmp(line, "axc: error: ", 12) && strchr(line, '\n');
        if (!one_line) { fputs(messages, stderr); abort(); }
        free(messages);
    }
    return 0;
}
