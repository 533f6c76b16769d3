/* train_data.c — the training and calibration data (docs/training.md):
 * .npy files read safely (axc train --input/--target/--val-*, --calibrate)
 * and cut into whole batches of an input node's shape, checked for
 * non-finite values and, for cross_entropy, for class indices in range.
 * A leaf of the driver: it calls no other command file. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

/* Reads all of fd (a regular file of size bytes) into buf; -1 on a short
 * read (the file shrank) or an error. */
static int read_exactly(int fd, uint8_t *buf, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, buf + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { if (n == 0) errno = EIO; return -1; }
        done += (size_t)n;
    }
    return 0;
}

int axc_read_npy_file(ax_ctx *ctx, const char *what, const char *path, tf_tensor *t)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before the
     * file-type check refuses it */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) { axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno)); return AXC_EUSAGE; }
    struct stat st;
    int rc = AXC_OK;
    uint8_t magic[6];
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        axc_fail("%s '%s' is not a regular file (a .npy file is expected)", what, path);
        rc = AXC_EUSAGE;
    } else if (st.st_size < (off_t)sizeof magic || read_exactly(fd, magic, sizeof magic) ||
               memcmp(magic, "\x93NUMPY", sizeof magic)) {
        axc_fail("%s '%s' is not a .npy file (no \\x93NUMPY magic at its start)", what, path);
        rc = AXC_EINPUT;
    }
    if (rc) { close(fd); return rc; }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = ax_alloc(ctx->arena, len + 1);
    if (read_exactly(fd, buf, len)) {
        axc_fail("%s: cannot read '%s': %s", what, path, strerror(errno));
        close(fd);
        return AXC_EUSAGE;
    }
    close(fd);
    char err[256];
    if (tf_npy_parse(buf, len, t, err, sizeof err)) { axc_fail("%s '%s': %s", what, path, err); return AXC_EINPUT; }
    return AXC_OK;
}

bool axc_first_nonfinite(const tf_tensor *t, int64_t *index, double *value)
{
    if (!ir_dtype_is_float(t->dtype)) return false;
    const size_t size = ir_dtypes[t->dtype].size, count = t->nbytes / size;
    double chunk[256];
    for (size_t at = 0; at < count; at += 256) {
        size_t n = count - at < 256 ? count - at : 256;
        tf_convert(chunk, AXRT_F64, t->data + at * size, t->dtype, n);
        for (size_t k = 0; k < n; k++)
            if (!isfinite(chunk[k])) { *index = (int64_t)(at + k); *value = chunk[k]; return true; }
    }
    return false;
}

int axc_train_batches(const tf_tensor *t, const ir_node *n, const char *what, const char *path,
                      axc_batch_file *f)
{
    bool fits = t->rank == n->rank && t->rank > 0 && t->shape[0] > 0 && t->shape[0] % n->shape[0] == 0;
    for (int d = 1; fits && d < n->rank; d++) fits = t->shape[d] == n->shape[d];
    char want[128], got[128];
    if (!fits) {
        ir_shape_str(n->shape, n->rank, want, sizeof want);
        ir_shape_str(t->shape, t->rank, got, sizeof got);
        axc_fail("%s '%s' holds %s but takes whole batches of %s (dim 0 a multiple of %lld)", what, path, got,
                 want, (long long)n->shape[0]);
        return AXC_EINPUT;
    }
    if (ir_dtype_is_float(t->dtype) != ir_dtype_is_float(n->dtype)) {
        axc_fail("%s '%s' holds %s values but %s ones are expected", what, path, ir_dtype_name(t->dtype),
                 ir_dtype_is_float(n->dtype) ? "floating-point" : "integer (Int64 or Int32)");
        return AXC_EINPUT;
    }
    size_t count = 1;
    for (int d = 0; d < t->rank; d++) count *= (size_t)t->shape[d];
    f->path = path;
    f->batches = t->shape[0] / n->shape[0];
    f->tail = 0;
    f->batch_bytes = ir_nbytes(n);
    f->data = malloc(count * ir_dtypes[n->dtype].size + 1);
    if (!f->data) ax_out_of_memory(0);
    tf_convert(f->data, n->dtype, t->data, t->dtype, count);
    return AXC_OK;
}

int axc_check_classes(const axc_batch_file *f, const ir_node *target, int64_t classes)
{
    int64_t count = axc_epoch_steps(f) * ir_numel(target);   /* a last batch's padding is class 0 */
    for (int64_t i = 0; i < count; i++) {
        int64_t c = target->dtype == AXRT_I64 ? ((const int64_t *)(const void *)f->data)[i]
                                               : ((const int32_t *)(const void *)f->data)[i];
        if (c < 0 || c >= classes) {
            axc_fail("--target '%s': class index %lld at row %lld is outside 0..%lld (the model has %lld classes)",
                     f->path, (long long)c, (long long)i, (long long)classes - 1, (long long)classes);
            return AXC_EINPUT;
        }
    }
    return AXC_OK;
}
