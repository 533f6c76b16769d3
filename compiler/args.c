/* args.c — command-line parsing (docs/cli.md#compile-options).  Long options take their
 * value as `--opt=VALUE` or `--opt VALUE`; -D/-MF/-MT/-o accept the value
 * attached or as the next argument, as cc does. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "cg_target.h"
#include "driver.h"
#include "onnx.h"
#include "tflite.h"

static const char usage_text[] =
    "usage: axc [options] FILE.ax -o OUT          compile\n"
    "       axc run [options] FILE.ax [run options] compile, build, run once (or benchmark)\n"
    "       axc train [options] FILE.ax --input NAME=X.npy --target Y.npy --loss=L\n"
    "                 --save-weights=OUT.safetensors   train in batches (compiled step)\n"
    "       axc --train [options] FILE.ax --loss=L -o OUT.c   emit a training step as C\n"
    "       axc --help | --version\n"
    "\n"
    "options:\n"
    "  -o OUT                  output; .c writes C source and a header\n"
    "  --target=NAME           code generator (default: by OUT's extension, else the model's\n"
    "                          backend= option, else c); NAME is one of the targets below\n"
    "  --triple=T, --cpu=C     LLVM target for .o/.ll (default: host), e.g.\n"
    "                          thumbv7em-none-eabihf, cortex-m4\n"
    "  --header=FILE           where the C header goes (default: OUT with .h)\n"
    "  --model=NAME            compile one model of a multi-model file\n"
    "  --weights=FILE          parameters from a safetensors file\n"
    "  --seed=N                deterministic initialisation without --weights (default 0)\n"
    "  --require-weights       a model with parameters needs --weights (or --seed): no silent\n"
    "                          random parameters (axc.mk passes it when it finds no weights)\n"
    "  --save-weights=FILE     write the parameters used, as safetensors\n"
    "  -D NAME=VALUE           override a const\n"
    "  -O0 -O1 -O2 -O3         optimisation level (default -O2)\n"
    "  --emit=ir|dot|mem       print the IR, a Graphviz graph or the memory plan\n"
    "  --emit=svg|timeline     the graph drawn by Graphviz's dot, or the memory plan as a\n"
    "                          timeline (buffers as bars over the schedule, peak marked)\n"
    "  --emit=ptx|hsaco --arch=A  the cuda (hip) kernels compiled by NVRTC (hiprtc), no GPU\n"
    "                          needed: --arch=sm_80|sm_90 (gfx90a, ...)\n"
    "  --print-after-all       print the IR after every pass to stderr\n"
    "  --mem-report            print the arena plan\n"
    "  --ram=BYTES             bound the arena (the training step's too): recompute values or\n"
    "                          tile to fit, else fail (suffix K or M: 64K, 1M)\n"
    "  --eltype-mismatch=warn|convert|error|promote\n"
    "  --dtype=T               parameters and activations in T (Float32, Float16, BFloat16,\n"
    "                          Float64), over the model's dtype=; accumulation stays Float32\n"
    "  -MD, -MF FILE, -MT TARGET  write a make dependency file\n"
    "  --shape NAME=1x3x224x224  an ONNX input's whole shape, fixing its symbolic\n"
    "                          dimensions (batch, sequence) at compile time\n"
    "  --file-prefix-map=OLD=NEW  name the source NEW... instead of OLD... in the output\n"
    "                          (default: an absolute source path is named by its file name)\n"
    "  -Werror, -w             warnings as errors / no warnings\n"
    "  --blas=openblas         float32 dense and matmul call OpenBLAS's cblas_sgemm\n"
    "                          (the generated code then links -lopenblas; axc --train too)\n"
    "  --conv-algo=ALGO        3x3 stride-1 float32 convs: direct, winograd (F(4x4,3x3)\n"
    "                          wherever it applies), winograd2 (F(2x2,3x3), the smaller\n"
    "                          error) or auto (default: F(4x4,3x3) where it is faster)\n"
    "  --quantize=int8         int8 post-training quantisation of dense and conv layers,\n"
    "  --calibrate NAME=FILE.npy  with ranges observed on these inputs (samples along dim 0)\n"
    "\n"
    "run options:\n"
    "  --input NAME=FILE.npy   one per model input (default: filled from --seed)\n"
    "  --output FILE.npy       the output of a single-output model\n"
    "  --output-dir DIR        one DIR/NAME.npy per output\n"
    "  --bench N               time N runs after warm-up\n"
    "  --threads N             run the kernels on N threads (default 1)\n"
    "  --interp                use the reference interpreter\n"
    "  --jit                   compile in-process with LLVM's ORC JIT (no C compiler)\n"
    "  --profile               print time, share and rate per layer (also a compile option:\n"
    "                          the generated C then calls axc_profile_clock around each layer)\n"
    "  --dump-dir DIR          write every layer's output as DIR/NNN_LAYER.npy, index in\n"
    "                          DIR/index.tsv (compare two with: axc compare DIR REF_DIR)\n"
    "  --cc=CC                 C compiler for the generated code (default $CC or cc)\n"
    "\n"
    "train options (axc train and axc --train; docs/training.md):\n"
    "  --target Y.npy          targets, samples along dim 0 (cross_entropy: class indices)\n"
    "  --loss=mse|cross_entropy|bce_with_logits\n"
    "  --optimizer=sgd|adam|adamw|lion (default sgd)\n"
    "  --lr, --momentum, --nesterov, --weight-decay, --beta1, --beta2, --eps\n"
    "                          torch.optim defaults (Lion: lr 1e-4, betas 0.9, 0.99)\n"
    "  --epochs E              passes over the files (default 1; axc train)\n"
    "  --shuffle               batches in an order drawn from --seed each epoch (default: file\n"
    "                          order; axc train)\n"
    "  --lr-schedule=constant|step|cosine|onecycle  the learning rate per step (axc train):\n"
    "                          as StepLR, CosineAnnealingLR, OneCycleLR (momentum cycled too)\n"
    "  --step-size N, --gamma G  step: lr * G^floor(step / N) (G default 0.1)\n"
    "  --t-max N               cosine: its period's half (default: the run's total steps)\n"
    "  --warmup-steps N        lr * min(1, (step + 1) / N) from step 0 (not with onecycle)\n"
    "  --clip-grad-norm X      scale the gradients to a global L2 norm of at most X\n"
    "                          (clip_grad_norm_; axc train and axc --train)\n"
    "  --clip-grad-value X     clamp every gradient element to [-X, X] (clip_grad_value_)\n"
    "  --interp                train on the reference interpreter (default: the compiled step)\n"
    "  --drop-last             leave out the samples past the last whole batch\n"
    "                          (default: a smaller last batch, as DataLoader)\n"
    "  --val-input NAME=X.npy, --val-target Y.npy  validation loss (and accuracy) per epoch\n"
    "  --early-stop N          stop after N epochs without a better validation loss\n"
    "  --checkpoint FILE, --checkpoint-every K  the whole training state every K epochs\n"
    "  --resume FILE           continue from a checkpoint, bit for bit\n"
    "  --grad-exchange         axc --train: also emit the split step (<name>_train_grads, then\n"
    "                          <name>_train_apply) for data-parallel training (docs/distributed.md)\n"
    "  (--input as for run; the parameters start from --weights or --seed)\n"
    "  (the built code is cached in $AXC_CACHE_DIR, else $XDG_CACHE_HOME/axc or ~/.cache/axc;\n"
    "   AXC_CACHE_DIR=off disables the cache; AXC_CACHE_MAX_MB bounds it, default 1024)\n";

/* The usage text, then the targets (their rows, codegen/cg_targets.c) and
 * whether this axc has each one built. */
static void print_usage(void)
{
    fputs(usage_text, stdout);
    fputs("\ntargets:\n", stdout);
    for (int t = 0; t < IR_TARGET_COUNT; t++) {
        const cg_target *target = cg_target_get((ir_target_id)t);
        printf("  %-6s %-8s %s%s\n", ir_targets[t].name, target->outputs, target->summary,
               target->emit ? "" : " (not built)");
    }
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || *s == '-') return -1;
    *out = v;
    return 0;
}

static int set_eltype(axc_opts *o, const char *v)
{
    static const char *const names[] = {"warn", "convert", "error", "promote"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, names[i])) { o->eltype = (eltype_mode)i; return 0; }
    axc_fail("--eltype-mismatch expects warn, convert, error or promote, not '%s'", v);
    return -1;
}

/* --dtype=Float32|Float64|Float16|BFloat16 (or f32 f64 f16 bf16): the model
 * dtype, over the model's dtype= option (docs/precision.md). */
static int set_dtype(axc_opts *o, const char *v)
{
    axrt_dtype dt;
    if (!ir_dtype_parse(v, &dt) || !ir_dtype_is_float(dt)) {
        axc_fail("--dtype expects Float32, Float16, BFloat16 or Float64, not '%s'", v);
        return -1;
    }
    o->dtype = dt;
    o->dtype_given = true;
    return 0;
}

/* Copies the NAME of NAME=VALUE (eq points at '=') into o's storage. */
static const char *keep_name(axc_opts *o, const char *v, const char *eq, const char *opt)
{
    size_t len = (size_t)(eq - v);
    if (len >= sizeof o->names[0]) { axc_fail("%s: name too long in '%s'", opt, v); return NULL; }
    char *dst = o->names[o->nnames++];
    memcpy(dst, v, len);
    dst[len] = 0;
    return dst;
}

static int add_define(axc_opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) { axc_fail("-D expects NAME=VALUE, not '%s'", v); return -1; }
    if (o->ndefines == AXC_MAX_DEFINES) { axc_fail("too many -D options"); return -1; }
    ax_define *d = &o->defines[o->ndefines];
    if (!(d->name = keep_name(o, v, eq, "-D"))) return -1;
    d->value = eq + 1;
    o->ndefines++;
    return 0;
}

/* NAME=FILE.npy of --input or --calibrate, appended to list (a slot per argument). */
static int add_named_file(axc_named_file *list, int *count, const char *opt, const char *v)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) { axc_fail("%s expects NAME=FILE.npy, not '%s'", opt, v); return -1; }
    char *name = malloc((size_t)(eq - v) + 1);
    if (!name) ax_die("out of memory");
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = 0;
    list[*count].name = name;
    list[*count].path = eq + 1;
    (*count)++;
    return 0;
}

/* --shape NAME=D0xD1x...: positive dimensions, at most IR_MAX_RANK of them. */
static int add_shape(axc_opts *o, const char *v)
{
    const char *eq = strchr(v, '=');
    onnx_input_shape *s = &o->shapes[o->nshapes];
    if (!eq || eq == v || !eq[1]) goto bad;
    s->rank = 0;
    for (const char *p = eq + 1;; p++) {
        char *end;
        if (*p < '0' || *p > '9' || s->rank == IR_MAX_RANK) goto bad;
        errno = 0;
        unsigned long long d = strtoull(p, &end, 10);
        if (errno || d < 1 || d > ((uint64_t)1 << 40)) goto bad;
        s->dims[s->rank++] = (int64_t)d;
        p = end;
        if (!*p) break;
        if (*p != 'x') goto bad;
    }
    char *name = malloc((size_t)(eq - v) + 1);
    if (!name) ax_die("out of memory");
    memcpy(name, v, (size_t)(eq - v));
    name[eq - v] = 0;
    s->name = name;
    for (int i = 0; i < o->nshapes; i++)
        if (!strcmp(o->shapes[i].name, name)) { axc_fail("--shape %s= given twice", name); free(name); return -1; }
    o->nshapes++;
    return 0;
bad:
    axc_fail("--shape expects NAME=DIMS with %d positive dimensions at most, such as input=1x3x224x224, "
             "not '%s'", IR_MAX_RANK, v);
    return -1;
}

/* --ram=BYTES: plain bytes or a K/M suffix (binary: 64K = 65536). */
static int set_ram(axc_opts *o, const char *v)
{
    char *end;
    errno = 0;
    unsigned long long bytes = strtoull(v, &end, 10);
    unsigned long long unit = *end == 'K' || *end == 'k' ? 1024 : *end == 'M' || *end == 'm' ? 1048576 : 1;
    if (unit > 1) end++;
    if (errno || end == v || *end || *v == '-' || bytes == 0 || bytes > SIZE_MAX / unit) {
        axc_fail("--ram expects a byte count such as 65536, 64K or 1M, not '%s'", v);
        return -1;
    }
    o->ram_budget = (size_t)(bytes * unit);
    return 0;
}

/* Options that take a value.  `run` marks the ones only `axc run` accepts. */
typedef enum {
    V_OUT, V_TARGET, V_HEADER, V_MODEL, V_WEIGHTS, V_SEED, V_SAVE, V_EMIT, V_ELTYPE,
    V_MF, V_MT, V_D, V_RAM, V_INPUT, V_OUTPUT, V_OUTDIR, V_BENCH, V_CC, V_DUMP, V_PREFIX_MAP, V_THREADS,
    V_TRIPLE, V_CPU, V_BLAS, V_DTYPE, V_ARCH, V_QUANTIZE, V_CALIBRATE, V_SHAPE, V_CONV_ALGO,
    /* training options from here on (set_value checks `>= V_LOSS`) */
    V_LOSS, V_OPTIMIZER, V_LR, V_MOMENTUM, V_WD, V_BETA1,
    V_BETA2, V_EPS, V_CLIP_NORM, V_CLIP_VALUE,
    /* axc train's loop only from here on (not axc --train: try_value_opt checks `>= V_EPOCHS`) */
    V_EPOCHS, V_LR_SCHEDULE, V_STEP_SIZE, V_GAMMA, V_T_MAX, V_WARMUP,
    V_VAL_INPUT, V_VAL_TARGET, V_EARLY_STOP, V_CHECKPOINT, V_CHECKPOINT_EVERY, V_RESUME
} value_opt;

static const struct { const char *name; value_opt id; bool run; } value_opts[] = {
    {"-o", V_OUT, false},          {"--target", V_TARGET, false},
    {"--header", V_HEADER, false}, {"--model", V_MODEL, false},
    {"--weights", V_WEIGHTS, false}, {"--seed", V_SEED, false},
    {"--save-weights", V_SAVE, false}, {"--emit", V_EMIT, false},
    {"--eltype-mismatch", V_ELTYPE, false}, {"-MF", V_MF, false},
    {"-MT", V_MT, false},          {"-D", V_D, false},
    {"--ram", V_RAM, false},        {"--file-prefix-map", V_PREFIX_MAP, false},
    {"--input", V_INPUT, true},    {"--output", V_OUTPUT, true},
    {"--output-dir", V_OUTDIR, true}, {"--bench", V_BENCH, true},
    {"--cc", V_CC, true},          {"--dump-dir", V_DUMP, true},
    {"--threads", V_THREADS, true}, {"--blas", V_BLAS, false},
    {"--triple", V_TRIPLE, false}, {"--cpu", V_CPU, false},
    {"--dtype", V_DTYPE, false}, {"--arch", V_ARCH, false},
    {"--quantize", V_QUANTIZE, false}, {"--calibrate", V_CALIBRATE, false},
    {"--shape", V_SHAPE, false},   {"--conv-algo", V_CONV_ALGO, false},
    {"--loss", V_LOSS, false},
    {"--optimizer", V_OPTIMIZER, false}, {"--lr", V_LR, false},
    {"--momentum", V_MOMENTUM, false}, {"--weight-decay", V_WD, false},
    {"--beta1", V_BETA1, false}, {"--beta2", V_BETA2, false},
    {"--eps", V_EPS, false}, {"--epochs", V_EPOCHS, false},
    {"--lr-schedule", V_LR_SCHEDULE, false}, {"--step-size", V_STEP_SIZE, false},
    {"--gamma", V_GAMMA, false}, {"--t-max", V_T_MAX, false},
    {"--warmup-steps", V_WARMUP, false}, {"--clip-grad-norm", V_CLIP_NORM, false},
    {"--clip-grad-value", V_CLIP_VALUE, false},
    {"--val-input", V_VAL_INPUT, false}, {"--val-target", V_VAL_TARGET, false},
    {"--early-stop", V_EARLY_STOP, false}, {"--checkpoint-every", V_CHECKPOINT_EVERY, false},
    {"--checkpoint", V_CHECKPOINT, false}, {"--resume", V_RESUME, false},
};

/* A non-negative finite number for a training option. */
static int set_real(double *out, const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < 0) {
        axc_fail("%s expects a non-negative number, not '%s'", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* A positive finite number (--gamma, the clipping bounds: zero would stop
 * training or zero every gradient). */
static int set_positive(double *out, const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || !(x > 0)) {
        axc_fail("%s expects a positive number, not '%s'", opt, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* A step count of the schedule (--step-size, --t-max, --warmup-steps). */
static int set_steps(long *out, const char *opt, const char *v)
{
    uint64_t n;
    if (parse_u64(v, &n) || n < 1 || n > 1000000000) {
        axc_fail("%s expects a step count from 1 to 1000000000, not '%s'", opt, v);
        return -1;
    }
    *out = (long)n;
    return 0;
}

/* --loss / --optimizer / --lr-schedule: a name from a table. */
static int set_choice(int *out, const char *opt, const char *v, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) { *out = i; return 0; }
    ax_buf list = {0};
    for (int i = 0; i < n; i++) ax_buf_printf(&list, "%s%s", i ? (i == n - 1 ? " or " : ", ") : "", names[i]);
    axc_fail("%s expects %s, not '%s'", opt, list.data, v);
    ax_buf_free(&list);
    return -1;
}

static int set_train_value(axc_opts *o, value_opt id, const char *v)
{
    uint64_t n;
    switch (id) {
    case V_LOSS: return set_choice(&o->loss, "--loss", v, pass_loss_names, PASS_LOSS_COUNT);
    case V_OPTIMIZER: return set_choice(&o->optimizer, "--optimizer", v, axc_optimizer_names, AXC_OPT_COUNT);
    case V_LR: return set_real(&o->lr, "--lr", v);
    case V_MOMENTUM: return set_real(&o->momentum, "--momentum", v);
    case V_WD: return set_real(&o->weight_decay, "--weight-decay", v);
    case V_BETA1: return set_real(&o->beta1, "--beta1", v);
    case V_BETA2: return set_real(&o->beta2, "--beta2", v);
    case V_EPS: return set_real(&o->eps, "--eps", v);
    case V_EPOCHS:
        if (parse_u64(v, &n) || n < 1 || n > 1000000) {
            axc_fail("--epochs expects a count from 1 to 1000000, not '%s'", v);
            return -1;
        }
        o->epochs = (long)n;
        return 0;
    case V_LR_SCHEDULE:
        return set_choice(&o->lr_schedule, "--lr-schedule", v, axc_lr_schedule_names, AXC_SCHED_COUNT);
    case V_STEP_SIZE: return set_steps(&o->step_size, "--step-size", v);
    case V_T_MAX: return set_steps(&o->t_max, "--t-max", v);
    case V_WARMUP: return set_steps(&o->warmup_steps, "--warmup-steps", v);
    case V_GAMMA: return set_positive(&o->gamma, "--gamma", v);
    case V_CLIP_NORM: return set_positive(&o->clip_grad_norm, "--clip-grad-norm", v);
    case V_CLIP_VALUE: return set_positive(&o->clip_grad_value, "--clip-grad-value", v);
    case V_VAL_INPUT: return add_named_file(o->val_inputs, &o->nval_inputs, "--val-input", v);
    case V_VAL_TARGET: o->val_target = v; return 0;
    case V_EARLY_STOP: return set_steps(&o->early_stop, "--early-stop", v);
    case V_CHECKPOINT: o->checkpoint = v; return 0;
    case V_CHECKPOINT_EVERY: return set_steps(&o->checkpoint_every, "--checkpoint-every", v);
    case V_RESUME: o->resume = v; return 0;
    default: return -1;
    }
}

/* The options whose value is kept as given: where each goes in axc_opts. */
static const struct { value_opt id; size_t field; } string_values[] = {
    {V_OUT, offsetof(axc_opts, output)},        {V_HEADER, offsetof(axc_opts, header)},
    {V_MODEL, offsetof(axc_opts, model)},       {V_WEIGHTS, offsetof(axc_opts, weights)},
    {V_SAVE, offsetof(axc_opts, save_weights)}, {V_EMIT, offsetof(axc_opts, emit)},
    {V_MF, offsetof(axc_opts, depfile)},        {V_MT, offsetof(axc_opts, deptarget)},
    {V_OUTPUT, offsetof(axc_opts, run_output)}, {V_OUTDIR, offsetof(axc_opts, run_output_dir)},
    {V_DUMP, offsetof(axc_opts, dump_dir)},     {V_CC, offsetof(axc_opts, cc)},
    {V_TRIPLE, offsetof(axc_opts, triple)},     {V_CPU, offsetof(axc_opts, cpu)},
    {V_ARCH, offsetof(axc_opts, arch)},
};

static int set_conv_algo(axc_opts *o, const char *v)
{
    for (int a = 0; a < IR_CONV_ALGO_COUNT; a++)
        if (!strcmp(v, ir_conv_algo_names[a])) {
            o->conv_algo = (ir_conv_algo)a;
            return 0;
        }
    /* the algorithms, then auto, as docs/errors.md and the spec list them */
    _Static_assert(IR_CONV_AUTO == 0, "auto is first in ir_conv_algo_names");
    ax_buf names = {0};
    ax_buf_join(&names, ir_conv_algo_names + IR_CONV_AUTO + 1, IR_CONV_ALGO_COUNT - 1, ", ", ", ");
    axc_fail("unknown convolution algorithm '%s' (expected %s or %s)", v, names.data,
             ir_conv_algo_names[IR_CONV_AUTO]);
    ax_buf_free(&names);
    return -1;
}

static int set_value(axc_opts *o, value_opt id, const char *v)
{
    uint64_t n;
    for (size_t i = 0; i < sizeof string_values / sizeof string_values[0]; i++)
        if (string_values[i].id == id) {
            memcpy((char *)o + string_values[i].field, &v, sizeof v);
            return 0;
        }
    switch (id) {
    case V_TARGET: /* axc train: the targets file (docs/training.md), else the code generator */
        if (o->train) o->target_file = v;
        else o->target = v;
        return 0;
    case V_ELTYPE: return set_eltype(o, v);
    case V_DTYPE: return set_dtype(o, v);
    case V_D: return add_define(o, v);
    case V_RAM: return set_ram(o, v);
    case V_INPUT: return add_named_file(o->inputs, &o->ninputs, "--input", v);
    case V_CALIBRATE: return add_named_file(o->calib, &o->ncalib, "--calibrate", v);
    case V_SHAPE: return add_shape(o, v);
    case V_QUANTIZE:
        if (strcmp(v, "int8")) { axc_fail("--quantize expects int8, not '%s'", v); return -1; }
        o->quantize = true;
        return 0;
    case V_PREFIX_MAP:
        if (!strchr(v, '=') || *v == '=') { axc_fail("--file-prefix-map expects OLD=NEW, not '%s'", v); return -1; }
        if (o->nprefix_maps == AXC_MAX_DEFINES) { axc_fail("too many --file-prefix-map options"); return -1; }
        o->prefix_maps[o->nprefix_maps++] = v;
        return 0;
    case V_SEED:
        if (parse_u64(v, &o->seed)) { axc_fail("--seed expects a non-negative integer, not '%s'", v); return -1; }
        o->seed_given = true;
        return 0;
    case V_BENCH:
        if (parse_u64(v, &n) || n < 1 || n > 100000000) {
            axc_fail("--bench expects a run count from 1 to 100000000, not '%s'", v);
            return -1;
        }
        o->bench_runs = (long)n;
        return 0;
    case V_CONV_ALGO: return set_conv_algo(o, v);
    case V_BLAS:
        if (strcmp(v, "openblas")) { axc_fail("unknown BLAS '%s' (expected openblas)", v); return -1; }
        o->blas = true;
        return 0;
    case V_THREADS:
        if (parse_u64(v, &n) || n < 1 || n > 256) {
            axc_fail("--threads expects a thread count from 1 to 256, not '%s'", v);
            return -1;
        }
        o->threads = (int)n;
        return 0;
    default: return set_train_value(o, id, v);
    }
}

/* Matches argv[*i] against the value options; 1 = consumed, 0 = not a
 * value option, -1 = error. */
static int try_value_opt(int argc, char **argv, int *i, axc_opts *o)
{
    const char *a = argv[*i];
    for (size_t k = 0; k < sizeof value_opts / sizeof value_opts[0]; k++) {
        const char *name = value_opts[k].name;
        size_t len = strlen(name);
        if (strncmp(a, name, len)) continue;
        const char *v = NULL;
        bool is_short = name[1] != '-';
        if (a[len] == '=' && !is_short) v = a + len + 1;
        else if (a[len] && is_short) v = a + len; /* -DN=1, -ofile */
        else if (a[len]) continue;               /* --outputx: another option */
        else if (*i + 1 < argc) v = argv[++*i];
        else { axc_fail("option '%s' needs a value", name); return -1; }
        /* run options only with `axc run` (--input with train too), the
         * training ones (V_LOSS on) only with `axc train`, and all but the
         * loop's (V_EPOCHS on) with `axc --train` too */
        const bool train_only = value_opts[k].id >= V_LOSS;
        const bool allowed = train_only ? o->train || (o->train_step && value_opts[k].id < V_EPOCHS)
                           : !value_opts[k].run || o->run || (o->train && value_opts[k].id == V_INPUT);
        if (!allowed) {
            axc_fail("option '%s' is only valid with 'axc %s'", name, train_only ? "train" : "run");
            return -1;
        }
        return set_value(o, value_opts[k].id, v) ? -1 : 1;
    }
    return 0;
}

static int try_flag(const char *a, axc_opts *o)
{
    if (!strcmp(a, "-MD")) o->make_deps = true;
    else if (!strcmp(a, "--mem-report")) o->mem_report = true;
    else if (!strcmp(a, "--print-after-all")) o->print_after_all = true;
    else if (!strcmp(a, "-Werror")) o->werror = true;
    else if (!strcmp(a, "-w")) o->no_warnings = true;
    else if (!strcmp(a, "--interp") && (o->run || o->train)) o->interp = true;
    else if (!strcmp(a, "--drop-last") && o->train) o->drop_last = true;
    else if (!strcmp(a, "--jit") && o->run) o->jit = true;
    else if (!strcmp(a, "--profile")) o->profile = true;
    else if (!strcmp(a, "--require-weights")) o->require_weights = true;
    else if (!strcmp(a, "--nesterov") && (o->train || o->train_step)) o->nesterov = true;
    else if (!strcmp(a, "--train") && o->train_step) return 1;   /* seen by axc_parse_args */
    else if (!strcmp(a, "--shuffle") && o->train) o->shuffle = true;
    else if (!strcmp(a, "--grad-exchange") && o->train_step) o->grad_exchange = true;
    else if (a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3' && !a[3]) o->opt_level = a[2] - '0';
    else return 0;
    return 1;
}

static const char *const flag_opts[] = {"-MD", "--mem-report", "--print-after-all", "-Werror", "-w",
                                        "--interp", "--profile", "--require-weights", "--nesterov", "--train", "--shuffle", "--drop-last", "--grad-exchange", "-O0",
                                        "-O1", "-O2", "-O3", "--help", "--version"};

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* An unknown option: a known flag given in a mode that does not take it
 * (--shuffle outside axc train) says so, else a did-you-mean over every
 * option. */
static void unknown_option(const char *a)
{
    size_t len = strcspn(a, "=");
    for (size_t k = 0; k < COUNT(flag_opts); k++)
        if (strlen(flag_opts[k]) == len && !strncmp(a, flag_opts[k], len)) {
            axc_fail("option '%s' is not valid in this mode (see axc --help for where it belongs)", flag_opts[k]);
            return;
        }
    const char *names[COUNT(value_opts) + COUNT(flag_opts)];
    int n = 0;
    for (size_t k = 0; k < COUNT(value_opts); k++) names[n++] = value_opts[k].name;
    for (size_t k = 0; k < COUNT(flag_opts); k++) names[n++] = flag_opts[k];
    char opt[64];
    snprintf(opt, sizeof opt, "%.*s", (int)(len < sizeof opt ? len : sizeof opt - 1), a);
    const char *s = ax_suggest(opt, names, n);
    if (s) axc_fail("unknown option '%s' (did you mean '%s'?)", a, s);
    else axc_fail("unknown option '%s' (see axc --help)", a);
}

static int check_emit(const axc_opts *o)
{
    static const char *const kinds[] = {"ir", "dot", "mem", "svg", "timeline", "ptx", "hsaco"};
    if (!o->emit) return 0;
    for (int i = 0; i < 7; i++) if (!strcmp(o->emit, kinds[i])) return 0;
    if (!strcmp(o->emit, "ax") && o->input && !onnx_is_model(o->input) && !tflite_is_model(o->input)) {
        axc_fail("--emit=ax prints an imported model (FILE.onnx, FILE.tflite) as .ax; '%s' is .ax already", o->input);
        return -1;
    }
    if (!strcmp(o->emit, "ax")) return 0;
    axc_fail("--emit expects ir, dot, mem, svg, timeline, ptx, hsaco or ax, not '%s'", o->emit);
    return -1;
}

/* torch.optim's own checks (ValueError there): betas in [0, 1), and
 * Nesterov momentum only with a positive momentum. */
static int check_optimizer(const axc_opts *o)
{
    if (o->nesterov && o->optimizer != AXC_OPT_sgd) {
        axc_fail("--nesterov applies to --optimizer=sgd only");
        return AXC_EUSAGE;
    }
    const double betas[2] = {o->beta1, o->beta2};
    for (int k = 0; k < 2; k++)
        if (!isnan(betas[k]) && betas[k] >= 1) {
            axc_fail("--beta%d expects a number in [0, 1), not %g (torch.optim refuses it too)", k + 1, betas[k]);
            return AXC_EUSAGE;
        }
    if (o->nesterov && !(o->momentum > 0)) {
        axc_fail("--nesterov needs a positive --momentum (torch.optim refuses it too)");
        return AXC_EUSAGE;
    }
    return AXC_OK;
}

/* The schedule's options fit together: each sub-option belongs to its
 * schedule, StepLR needs its step size, OneCycleLR has its own warm-up,
 * and one clipping at a time (axc --train takes only the clipping, the
 * rest stay unset there). */
static int check_schedule(const axc_opts *o)
{
    const int sched = o->lr_schedule;
    const char *stray = o->step_size && sched != AXC_SCHED_step ? "--step-size"
                      : !isnan(o->gamma) && sched != AXC_SCHED_step ? "--gamma"
                      : o->t_max && sched != AXC_SCHED_cosine ? "--t-max" : NULL;
    if (stray) {
        axc_fail("%s applies to --lr-schedule=%s only", stray, strcmp(stray, "--t-max") ? "step" : "cosine");
        return AXC_EUSAGE;
    }
    if (sched == AXC_SCHED_step && !o->step_size) {
        axc_fail("--lr-schedule=step needs --step-size=N (the steps between two multiplications by --gamma)");
        return AXC_EUSAGE;
    }
    if (sched == AXC_SCHED_onecycle && o->warmup_steps) {
        axc_fail("--warmup-steps does not combine with --lr-schedule=onecycle (its first phase is the warm-up)");
        return AXC_EUSAGE;
    }
    if (o->clip_grad_norm > 0 && o->clip_grad_value > 0) {
        axc_fail("%s and %s exclude each other", "--clip-grad-norm", "--clip-grad-value");
        return AXC_EUSAGE;
    }
    return AXC_OK;
}

/* Options that the training modes do not take (axc train runs on the
 * interpreter; the generated step has no per-layer clock): refused rather
 * than ignored. */
static int refuse_in_training(const axc_opts *o)
{
    const char *bad = o->profile ? "--profile" : o->blas && o->train ? "--blas" : NULL;
    if (!bad) return AXC_OK;
    axc_fail("option '%s' is not valid in this mode (see axc --help for where it belongs)", bad);
    return AXC_EUSAGE;
}

/* What `axc train` cannot do without, and what it refuses. */
static int check_train(const axc_opts *o)
{
    const char *missing = !o->target_file ? "--target Y.npy" : o->loss < 0 ? "--loss=mse|cross_entropy|bce_with_logits"
                        : !o->save_weights ? "--save-weights OUT.safetensors" : NULL;
    if (missing) { axc_fail("'axc %s' needs %s", "train", missing); return AXC_EUSAGE; }
    if (o->output || o->emit) {
        axc_fail("'axc train' writes only --save-weights (and --checkpoint)");
        return AXC_EUSAGE;
    }
    if ((o->nval_inputs > 0) != (o->val_target != NULL) || (o->early_stop && !o->val_target) ||
        (o->checkpoint_every && !o->checkpoint)) {
        axc_fail("%s", o->early_stop && !o->val_target ? "--early-stop needs a validation set (--val-input, --val-target)"
                       : o->checkpoint_every && !o->checkpoint ? "--checkpoint-every needs --checkpoint FILE"
                       : "--val-input and --val-target go together");
        return AXC_EUSAGE;
    }
    return refuse_in_training(o) || check_schedule(o) ? AXC_EUSAGE : check_optimizer(o);
}

/* What `axc --train` cannot do without (it writes C: -o OUT.c or --emit). */
static int check_train_step(const axc_opts *o)
{
    if (o->loss < 0) { axc_fail("'axc %s' needs %s", "--train", "--loss=mse|cross_entropy|bce_with_logits"); return AXC_EUSAGE; }
    if (!o->output && !o->emit) { axc_fail("'axc %s' needs %s", "--train", "-o OUT.c"); return AXC_EUSAGE; }
    return refuse_in_training(o) || check_schedule(o) ? AXC_EUSAGE : check_optimizer(o);
}

/* The defaults, and the arrays of repeatable options (at most argc each). */
static void init_opts(axc_opts *o, int argc)
{
    memset(o, 0, sizeof *o);
    o->opt_level = 2;
    o->inputs = calloc((size_t)argc + 1, sizeof *o->inputs);
    o->val_inputs = calloc((size_t)argc + 1, sizeof *o->val_inputs);
    o->calib = calloc((size_t)argc + 1, sizeof *o->calib);
    o->shapes = calloc((size_t)argc + 1, sizeof *o->shapes);
    if (!o->inputs || !o->val_inputs || !o->calib || !o->shapes) ax_die("out of memory");
    o->loss = -1;
    o->lr = o->momentum = o->weight_decay = o->beta1 = o->beta2 = o->eps = NAN;
    o->epochs = 1;
    o->gamma = NAN;
}

int axc_parse_args(int argc, char **argv, axc_opts *o, bool *exit_now)
{
    init_opts(o, argc);
    *exit_now = false;
    int i = 1;
    if (argc > 1 && !strcmp(argv[1], "run")) { o->run = true; i = 2; }
    else if (argc > 1 && !strcmp(argv[1], "train")) { o->train = true; i = 2; }
    for (int k = i; k < argc && !o->run && !o->train; k++)   /* before the training options it allows */
        if (!strcmp(argv[k], "--train")) o->train_step = true;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_usage(); *exit_now = true; return AXC_OK; }
        if (!strcmp(a, "--version")) { printf("axc %s\n", AXC_VERSION); *exit_now = true; return AXC_OK; }
        int r = try_value_opt(argc, argv, &i, o);
        if (r < 0) return AXC_EUSAGE;
        if (r > 0 || try_flag(a, o)) continue;
        if (a[0] == '-' && a[1]) { unknown_option(a); return AXC_EUSAGE; }
        if (o->input) { axc_fail("more than one input file ('%s' and '%s')", o->input, a); return AXC_EUSAGE; }
        o->input = a;
    }
    if (!o->input) { axc_fail("no input file (see axc --help)"); return AXC_EUSAGE; }
    if (o->run && o->output) {
        axc_fail("'axc run' does not write code: -o %s is not used (--output FILE.npy or --output-dir DIR "
                 "write its results; 'axc FILE.ax -o OUT.c' writes C)", o->output);
        return AXC_EUSAGE;
    }
    if (check_emit(o)) return AXC_EUSAGE;
    if (o->train) return check_train(o);
    if (o->train_step) return check_train_step(o);
    if (!o->run && !o->output && !o->emit && !o->mem_report && !o->save_weights) {
        axc_fail("no output: give -o OUT or --emit=ir|dot|mem|svg|timeline");
        return AXC_EUSAGE;
    }
    if (o->interp && (o->profile || o->dump_dir)) {
        axc_fail("--profile and --dump-dir need generated code, not --interp");
        return AXC_EUSAGE;
    }
    if (o->run_output && o->run_output_dir) { axc_fail("--output and --output-dir exclude each other"); return AXC_EUSAGE; }
    if (o->jit && o->interp) { axc_fail("%s and %s exclude each other", "--jit", "--interp"); return AXC_EUSAGE; }
    if (o->quantize && o->interp) {
        axc_fail("--quantize=int8 runs in generated code (C, or LLVM with --jit), not --interp");
        return AXC_EUSAGE;
    }
    if (o->quantize && !o->ncalib) {
        axc_fail("--quantize=int8 needs calibration inputs: --calibrate NAME=FILE.npy per model input");
        return AXC_EUSAGE;
    }
    if (!o->quantize && o->ncalib) { axc_fail("--calibrate is used only with --quantize=int8"); return AXC_EUSAGE; }
    if (o->nshapes && o->input && !onnx_is_model(o->input)) {
        axc_fail("--shape fixes an ONNX model's input shapes; a .ax model's shapes are in its signature");
        return AXC_EUSAGE;
    }
    return AXC_OK;
}

void axc_free_args(axc_opts *o)
{
    for (int i = 0; i < o->ninputs; i++)
        free((char *)o->inputs[i].name);
    free(o->inputs);
    o->inputs = NULL;
    for (int i = 0; i < o->nval_inputs; i++)
        free((char *)o->val_inputs[i].name);
    free(o->val_inputs);
    o->val_inputs = NULL;
    o->nval_inputs = 0;
    o->ninputs = 0;
    for (int i = 0; i < o->ncalib; i++)
        free((char *)o->calib[i].name);
    free(o->calib);
    o->calib = NULL;
    o->ncalib = 0;
    for (int i = 0; i < o->nshapes; i++)
        free((char *)o->shapes[i].name);
    free(o->shapes);
    o->shapes = NULL;
    o->nshapes = 0;
}
