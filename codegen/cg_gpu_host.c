/* cg_gpu_host.c — the GPU back ends' host C99 (docs/gpu.md): the kernel
 * source cg_gpu.c wrote, embedded as a string; the parameter block; the
 * launch list; the model's header, descriptor and entry points, which call
 * libaxrt_gpu (runtime/gpu/axrt_gpu.h) to compile the kernels at start-up. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cg_gpu_internal.h"
#include "ir_interp.h"

static void emit_string(ax_buf *out, const char *text, size_t len)
{
    ax_buf_puts(out, "\"");
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)text[i];
        if (c == '\n') ax_buf_puts(out, "\\n\"\n\"");
        else if (c == '"' || c == '\\') ax_buf_printf(out, "\\%c", c);
        else if (c == '?') ax_buf_puts(out, "\\?");
        else ax_buf_put(out, &text[i], 1);
    }
    ax_buf_puts(out, "\"");
}

/* The parameter block as one string literal (compilers read those far
 * faster than initialiser lists), zero bytes between the aligned offsets. */
static void emit_param_block(gk *k, ax_buf *c)
{
    unsigned char *block = ax_alloc(arena_of(k), k->param_bytes + 1);
    memset(block, 0, k->param_bytes + 1);
    for (int id = 0; id < k->g->nnodes; id++) {
        const ir_node *n = node_at(k, id);
        if (n->dead || n->op != IR_OP_param) continue;
        if (!n->data) ax_die("cg_gpu: parameter %s has no data", n->name ? n->name : "?");
        memcpy(block + k->param_offset[id], n->data, ir_nbytes(n));
    }
    ax_buf_printf(c, "static const union { unsigned char bytes[%zu + 1]; double align; } %s_param_block = {\n",
                  k->param_bytes, k->g->name);
    if (k->param_bytes) cg_bytes_literal(c, block, k->param_bytes, 1);
    else ax_buf_puts(c, "\"\"\n");
    ax_buf_puts(c, "};\n");
}

static void emit_infos(gk *k, ax_buf *c, const char *what, const int *ids, const char *const *names, int count)
{
    ax_buf_printf(c, "static const axrt_tensor_info %s_%s[%d] = {\n", k->g->name, what, count);
    for (int i = 0; i < count; i++) {
        const ir_node *n = node_at(k, ids[i]);
        ax_buf_printf(c, "    {\"%s\", %s, %d, {", names[i], ir_dtypes[n->dtype].enum_name, n->rank);
        for (int d = 0; d < n->rank; d++) ax_buf_printf(c, "%s%lld", d ? ", " : "", (long long)n->shape[d]);
        ax_buf_puts(c, n->rank ? "}},\n" : "0}},\n");
    }
    ax_buf_puts(c, "};\n");
}

static const char *upper(ax_arena *a, const char *s)
{
    char *u = ax_strdup(a, s);
    for (char *c = u; *c; c++) *c = (char)toupper((unsigned char)*c);
    return u;
}

/* "NAME_forward_device(axrt_gpu *gpu, const float *x, float *y, void *stream)" etc. */
static void emit_signature(gk *k, ax_buf *out, const char *fn, const char **in, const char **outn, bool stream)
{
    ax_buf_printf(out, "int %s_%s(axrt_gpu *gpu", k->g->name, fn);
    for (int i = 0; i < k->g->ninputs; i++)
        ax_buf_printf(out, ", const %s *%s", ir_dtypes[node_at(k, k->g->inputs[i])->dtype].c_type, in[i]);
    for (int i = 0; i < k->g->noutputs; i++)
        ax_buf_printf(out, ", %s *%s", ir_dtypes[node_at(k, k->g->outputs[i])->dtype].c_type, outn[i]);
    ax_buf_puts(out, stream ? ", void *stream)" : ")");
}

static void emit_header_model(gk *k, ax_buf *h, const char **in, const char **out)
{
    const char *name = k->g->name, *up = upper(arena_of(k), name);
    ax_buf_printf(h, "\n/* model %s on %s: %s_init compiles the kernels for the device found (or\n"
                     "   reads them from the compiled-kernel cache), uploads the parameters and\n"
                     "   allocates %s_DEVICE_ARENA_BYTES of device memory, once; it returns NULL\n"
                     "   with the reason in err (no driver, no device, the compiler's log). */\n",
                  name, k->dl->vendor, name, up);
    ax_buf_printf(h, "#define %s_DEVICE_ARENA_BYTES ((size_t)%zu)\n#define %s_PARAM_BYTES ((size_t)%zu)\n",
                  up, k->device_arena, up, k->param_bytes);
    ax_buf_printf(h, "axrt_gpu *%s_init(char *err, size_t errlen);\n"
                     "/* device pointers, launched on stream (NULL: the default stream); allocates nothing */\n", name);
    emit_signature(k, h, "forward_device", in, out, true);
    ax_buf_puts(h, ";\n/* host pointers: copied in, run, copied out, synchronised */\n");
    emit_signature(k, h, "forward", in, out, false);
    ax_buf_printf(h, ";\nvoid %s_free(axrt_gpu *gpu);\nextern const axrt_gpu_model %s_gpu_model;\n"
                     "/* for generic drivers (axrt.h): run() starts the device on first use and\n"
                     "   copies in and out; on failure %s_gpu_error says why */\n"
                     "extern const axrt_model %s_model;\nextern char %s_gpu_error[1024];\n"
                     "/* axc run --bench: runs timed forwards on the device (CUDA/HIP events) after\n"
                     "   warmup ones, us[i] the microseconds of run i; -1 with %s_gpu_error set */\n"
                     "int %s_bench(const void *const *inputs, long warmup, long runs, double *us);\n",
                  name, name, name, name, name, name, name);
}

static void emit_io_array(gk *k, ax_buf *c, const char *decl, const char **in, const char **out)
{
    ax_buf_printf(c, "    %s io[%d] = {", decl, k->g->ninputs + k->g->noutputs);
    for (int i = 0; i < k->g->ninputs; i++) ax_buf_printf(c, "%s%s", i ? ", " : "", in[i]);
    for (int i = 0; i < k->g->noutputs; i++) ax_buf_printf(c, ", %s", out[i]);
    ax_buf_puts(c, "};\n");
}

/* The generic descriptor (axrt.h axrt_model, as the C target's): its run
 * starts the device on first use (NAME_gpu_error says why it could not)
 * and runs a host forward; it needs no host arena. */
static void emit_descriptor(gk *k, ax_buf *c)
{
    const char *name = k->g->name;
    ax_buf_printf(c, "\nchar %s_gpu_error[1024];\nstatic axrt_gpu *%s_gpu_context;\n\n"
                     "static int %s_run(const void *const *inputs, void *const *outputs, void *arena)\n{\n"
                     "    (void)arena;\n"
                     "    if (%s_gpu_context == NULL)\n"
                     "        %s_gpu_context = %s_init(%s_gpu_error, sizeof %s_gpu_error);\n"
                     "    if (%s_gpu_context == NULL)\n        return -1;\n"
                     "    const int rc = axrt_gpu_forward_host(%s_gpu_context, inputs, outputs);\n"
                     "    if (rc)\n        snprintf(%s_gpu_error, sizeof %s_gpu_error, \"%%s\", axrt_gpu_error(%s_gpu_context));\n"
                     "    return rc == 0 ? 0 : rc == AXRT_GPU_ERR_INDEX ? AXRT_ERR_INDEX : -1;\n}\n\n"
                     "const axrt_model %s_model = {\"%s\", %d, %d, %s_inputs, %s_outputs, 0, %s_run};\n",
                  name, name, name, name, name, name, name, name, name, name, name, name, name, name, name,
                  k->g->ninputs, k->g->noutputs, name, name, name);
    ax_buf_printf(c, "\nint %s_bench(const void *const *inputs, long warmup, long runs, double *us)\n{\n"
                     "    if (%s_gpu_context == NULL)\n"
                     "        %s_gpu_context = %s_init(%s_gpu_error, sizeof %s_gpu_error);\n"
                     "    if (%s_gpu_context == NULL)\n        return -1;\n"
                     "    if (axrt_gpu_time_forward(%s_gpu_context, inputs, warmup, runs, us) == 0)\n        return 0;\n"
                     "    snprintf(%s_gpu_error, sizeof %s_gpu_error, \"%%s\", axrt_gpu_error(%s_gpu_context));\n"
                     "    return -1;\n}\n",
                  name, name, name, name, name, name, name, name, name, name, name);
}

static void emit_host_model(gk *k, ax_buf *c, const char *source_var, const char **in, const char **out)
{
    const char *name = k->g->name;
    const int nio = k->g->ninputs + k->g->noutputs;
    emit_param_block(k, c);
    ax_buf_printf(c, "static const axrt_gpu_launch %s_launches[%d] = {\n%s};\n", name,
                  k->nlaunches ? k->nlaunches : 1, k->nlaunches ? k->launches.data : "    {\"\", {0u, 0u, 0u}, {0u, 0u, 0u}},\n");
    emit_infos(k, c, "inputs", k->g->inputs, in, k->g->ninputs);
    emit_infos(k, c, "outputs", k->g->outputs, out, k->g->noutputs);
    ax_buf_printf(c, "static const size_t %s_io_bytes[%d] = {", name, nio);
    for (int i = 0; i < nio; i++) {
        const int id = i < k->g->ninputs ? k->g->inputs[i] : k->g->outputs[i - k->g->ninputs];
        ax_buf_printf(c, "%s%zu", i ? ", " : "", ir_nbytes(node_at(k, id)));
    }
    ax_buf_printf(c, "};\nconst axrt_gpu_model %s_gpu_model = {\"%s\", %s, %s, %s_param_block.bytes, (size_t)%zu, (size_t)%zu,\n"
                     "    %d, %d, %s_inputs, %s_outputs, %s_io_bytes, %s_launches, %d, (size_t)%zu};\n\n",
                  name, name, k->dl->enum_name, source_var, name, k->param_bytes, k->device_arena,
                  k->g->ninputs, k->g->noutputs, name, name, name, name, k->nlaunches, k->index_word);
    ax_buf_printf(c, "axrt_gpu *%s_init(char *err, size_t errlen)\n{\n    return axrt_gpu_init(&%s_gpu_model, err, errlen);\n}\n\n", name, name);
    emit_signature(k, c, "forward_device", in, out, true);
    ax_buf_puts(c, "\n{\n");
    emit_io_array(k, c, "const void *const", in, out);
    ax_buf_puts(c, "    return axrt_gpu_forward(gpu, io, stream);\n}\n\n");
    emit_signature(k, c, "forward", in, out, false);
    ax_buf_printf(c, "\n{\n    const void *const in[%d] = {", k->g->ninputs);
    for (int i = 0; i < k->g->ninputs; i++) ax_buf_printf(c, "%s%s", i ? ", " : "", in[i]);
    ax_buf_printf(c, "};\n    void *const out[%d] = {", k->g->noutputs);
    for (int i = 0; i < k->g->noutputs; i++) ax_buf_printf(c, "%s%s", i ? ", " : "", out[i]);
    ax_buf_printf(c, "};\n    return axrt_gpu_forward_host(gpu, in, out);\n}\n\n"
                     "void %s_free(axrt_gpu *gpu)\n{\n    axrt_gpu_free(gpu);\n}\n", name);
    emit_descriptor(k, c);
}

static const char *guard_name(ax_arena *a, const char *header_name)
{
    const char *base = strrchr(header_name, '/');
    char *guard = ax_sprintf(a, "AXC_%s", base ? base + 1 : header_name);
    for (char *c = guard; *c; c++) *c = isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_';
    return guard;
}

/* Kernel source of every model (into src) and their emitters (into ks). */
static int build_kernels(const cg_request *req, const gpu_dialect *dl, ax_buf *src, gk *ks)
{
    int errors = 0;
    for (int m = 0; m < req->nmodels; m++) errors += cgg_check_supported(req->models[m], dl);
    if (errors || req->nmodels < 1) return errors ? errors : 1;
    ax_buf_printf(src, "%s/* generated by axc from %s -- do not edit */\n", dl->prelude, req->source_name);
    for (int m = 0; m < req->nmodels; m++) {
        ks[m] = (gk){.g = req->models[m], .dl = dl, .src = src};
        cgg_emit_kernels(&ks[m]);
    }
    return 0;
}

int cgg_emit(const cg_request *req, const gpu_dialect *dl, ax_buf *c, ax_buf *h)
{
    ax_buf src = {0};
    gk ks[64];
    if (req->nmodels > 64) return 1;
    int errors = build_kernels(req, dl, &src, ks);
    if (errors) { ax_buf_free(&src); return errors; }
    if (req->kernels_only) { /* -o m.cu / m.hip, --emit=ptx|hsaco: the kernel source alone */
        ax_buf_put(c, src.data, src.len);
        ax_buf_free(&src);
        for (int m = 0; m < req->nmodels; m++) ax_buf_free(&ks[m].launches);
        return 0;
    }
    ax_arena *a = req->models[0]->ctx->arena;
    const char *guard = guard_name(a, req->header_name);
    ax_buf_printf(h, "/* Generated by axc from %s -- do not edit. */\n#ifndef %s\n#define %s\n\n"
                     "#include <stddef.h>\n#include \"axrt_gpu.h\"\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n",
                  req->source_name, guard, guard);
    ax_buf_printf(c, "/* Generated by axc from %s -- do not edit.\n"
                     "   Host C for the %s target: the kernel source below is compiled at start-up by\n"
                     "   libaxrt_gpu (link -laxrt_gpu -ldl; no %s headers or libraries at build time). */\n"
                     "#include <stddef.h>\n#include <stdio.h>\n#include \"%s\"\n\n"
                     "#if defined(__GNUC__)\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n#endif\n"
                     "static const char axc_kernel_source[] =\n",
                  req->source_name, dl->name, dl->vendor, req->header_name);
    emit_string(c, src.data, src.len);
    ax_buf_puts(c, ";\n");
    for (int m = 0; m < req->nmodels; m++) {
        const char **in, **out;
        cg_argument_names(ks[m].g, &in, &out);
        emit_header_model(&ks[m], h, in, out);
        ax_buf_printf(c, "\n/* ---- model %s ---- */\n", ks[m].g->name);
        emit_host_model(&ks[m], c, "axc_kernel_source", in, out);
        ax_buf_free(&ks[m].launches);
    }
    ax_buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n#endif\n");
    ax_buf_free(&src);
    return 0;
}

int cg_cuda_emit(const cg_request *req, ax_buf *c, ax_buf *h)
{
    return cgg_emit(req, &cgg_dialects[CGG_CUDA], c, h);
}

int cg_hip_emit(const cg_request *req, ax_buf *c, ax_buf *h)
{
    return cgg_emit(req, &cgg_dialects[CGG_HIP], c, h);
}
