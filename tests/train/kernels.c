/* kernels.c — a driver for the train suite: runs one of libaxrt's backward
 * kernels (axrt.h "training step's backward kernels") in float64 on numbers
 * read from stdin and prints its result, so that run.py can compare it with
 * PyTorch autograd.  stdin: the kernel's name, its integer arguments, then
 * the operand values (see each case); stdout: the result's values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axrt.h"

/* Every buffer of the run, freed at its end (LeakSanitizer under make test-asan). */
static void *buffers[8];
static size_t nbuffers;

static void free_buffers(void)
{
    while (nbuffers) free(buffers[--nbuffers]);
}

/* n elements of size bytes (one more, never of length 0), kept for free_buffers. */
static void *buffer(size_t n, size_t size)
{
    void *b = malloc((n + 1) * size);
    if (!b || nbuffers == sizeof buffers / sizeof buffers[0]) exit(2);
    return buffers[nbuffers++] = b;
}

static double *read_values(size_t n)
{
    double *v = buffer(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        if (scanf("%lf", &v[i]) != 1) exit(2);
    return v;
}

static void print_values(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) printf("%.17g\n", v[i]);
}

static int read_int(void)
{
    int v;
    if (scanf("%d", &v) != 1) exit(2);
    return v;
}

/* n h w c oh ow oc kh kw sh sw dh dw pt pl groups */
static axrt_conv2d_params read_conv(void)
{
    axrt_conv2d_params p;
    int *f[] = {&p.n, &p.h, &p.w, &p.c, &p.oh, &p.ow, &p.oc, &p.kh, &p.kw, &p.stride_h, &p.stride_w,
                &p.dilation_h, &p.dilation_w, &p.pad_top, &p.pad_left, &p.groups};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) *f[k] = read_int();
    return p;
}

/* pool_grad: n h w c oh ow kh kw sh sw pt pl pb pr is_max count_pad; dy, x -> dx */
static void pool_grad(void)
{
    axrt_pool2d_params p;
    int *f[] = {&p.n, &p.h, &p.w, &p.c, &p.oh, &p.ow, &p.kh, &p.kw, &p.stride_h, &p.stride_w,
                &p.pad_top, &p.pad_left, &p.pad_bottom, &p.pad_right};
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) *f[k] = read_int();
    int is_max = read_int(), count_pad = read_int();
    size_t ndy = (size_t)p.n * p.oh * p.ow * p.c, nx = (size_t)p.n * p.h * p.w * p.c;
    double *dy = read_values(ndy), *x = read_values(nx), *dx = buffer(nx, sizeof *dx);
    axrt_pool2d_grad_f64(dy, x, dx, &p, is_max, p.pad_bottom, p.pad_right, count_pad);
    print_values(dx, nx);
}

int main(void)
{
    atexit(free_buffers);
    char name[64];
    if (scanf("%63s", name) != 1) return 2;
    if (!strcmp(name, "conv_grad_weight")) {   /* conv params; dy, x -> dw */
        axrt_conv2d_params p = read_conv();
        size_t ndy = (size_t)p.n * p.oh * p.ow * p.oc, nx = (size_t)p.n * p.h * p.w * p.c;
        size_t nw = (size_t)p.oc * (p.c / p.groups) * p.kh * p.kw;
        double *dy = read_values(ndy), *x = read_values(nx), *dw = buffer(nw, sizeof *dw);
        axrt_conv2d_grad_weight_f64(dy, x, dw, &p);
        print_values(dw, nw);
    } else if (!strcmp(name, "conv_grad_input")) {   /* transposed conv params (dy in, x out); dy, w -> dx */
        axrt_conv2d_params p = read_conv();
        size_t ndy = (size_t)p.n * p.h * p.w * p.c, nx = (size_t)p.n * p.oh * p.ow * p.oc;
        size_t nw = (size_t)p.c * (p.oc / p.groups) * p.kh * p.kw;
        double *dy = read_values(ndy), *w = read_values(nw), *dx = buffer(nx, sizeof *dx);
        axrt_conv_transpose2d_f64(dy, w, NULL, dx, &p);
        print_values(dx, nx);
    } else if (!strcmp(name, "pool_grad")) {   /* n h w c oh ow kh kw sh sw pt pl pb pr is_max; dy, x -> dx */
        pool_grad();
    } else if (!strcmp(name, "scatter")) {   /* x_count rank dy_shape strides offset; dy -> x */
        int64_t shape[AXRT_MAX_RANK], strides[AXRT_MAX_RANK];
        size_t count = (size_t)read_int(), ndy = 1;
        int rank = read_int();
        for (int d = 0; d < rank; d++) ndy *= (size_t)(shape[d] = read_int());
        for (int d = 0; d < rank; d++) strides[d] = read_int();
        int64_t offset = read_int();
        double *dy = read_values(ndy), *x = buffer(count, sizeof *x);
        axrt_scatter_strided_f64(dy, x, count, shape, strides, offset, rank);
        print_values(x, count);
    } else if (!strcmp(name, "embedding_grad")) {   /* n vocab dim; idx, dy -> dw */
        size_t n = (size_t)read_int(), vocab = (size_t)read_int(), dim = (size_t)read_int();
        int64_t *idx = buffer(n, sizeof *idx);
        for (size_t i = 0; i < n; i++) idx[i] = read_int();
        double *dy = read_values(n * dim), *dw = buffer(vocab * dim, sizeof *dw);
        if (axrt_embedding_grad_f64(idx, AXRT_I64, dy, dw, n, vocab, dim)) return 1;
        print_values(dw, vocab * dim);
    } else if (!strcmp(name, "dropout")) {   /* n stream seed step p; x -> y */
        size_t n = (size_t)read_int();
        int stream = read_int();
        int64_t counter[2];
        counter[0] = read_int(), counter[1] = read_int();
        double p, *x, *y;
        if (scanf("%lf", &p) != 1) return 2;
        x = read_values(n), y = buffer(n, sizeof *y);
        axrt_dropout_f64(x, counter, y, n, (uint64_t)stream, p);
        print_values(y, n);
    } else {
        return 2;
    }
    return 0;
}
