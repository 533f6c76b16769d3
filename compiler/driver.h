/* driver.h — the command-line driver: options (docs/cli.md#compile-options), the
 * compile pipeline shared by `axc` and `axc run`, and `axc run` itself. */
#ifndef AX_DRIVER_H
#define AX_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "ast.h"
#include "ir.h"
#include "lower.h"
#include "onnx.h"
#include "passes.h"
#include "tensorfile.h"
#include "train_graph.h"

#define AXC_VERSION "0.1.0"

/* Exit statuses (docs/cli.md#exit-status). */
enum { AXC_OK = 0, AXC_EINPUT = 1, AXC_EUSAGE = 2 };

#define AXC_MAX_DEFINES 64

typedef struct axc_named_file { /* --input NAME=FILE.npy */
    const char *name, *path;
} axc_named_file;

typedef struct axc_opts {
    bool run;                    /* `axc run` */
    const char *input;           /* FILE.ax */
    const char *output;          /* -o */
    const char *header;          /* --header */
    const char *target;          /* --target */
    const char *triple, *cpu;    /* --triple, --cpu (llvm target) */
    const char *arch;            /* --arch (--emit=ptx|hsaco: sm_90, gfx90a) */
    const char *model;           /* --model */
    const char *weights;         /* --weights */
    const char *save_weights;    /* --save-weights */
    const char *emit;            /* --emit */
    const char *depfile;         /* -MF */
    const char *deptarget;       /* -MT */
    bool make_deps;              /* -MD */
    bool mem_report, print_after_all, werror, no_warnings;
    int opt_level;               /* -O0..-O3 */
    size_t ram_budget;           /* --ram: largest arena allowed, 0 = no limit */
    size_t param_limit;          /* parameter bytes a model may hold; 0: 4 GiB (a fuzzer sets less) */
    uint64_t seed;
    bool seed_given;             /* --seed was on the command line */
    bool require_weights;        /* --require-weights: no random parameters without --seed */
    eltype_mode eltype;
    axrt_dtype dtype;            /* --dtype, when dtype_given: the model dtype */
    bool dtype_given;
    const char *prefix_maps[AXC_MAX_DEFINES]; /* --file-prefix-map OLD=NEW */
    int nprefix_maps;
    ax_define defines[AXC_MAX_DEFINES];
    int ndefines;
    /* axc run */
    axc_named_file *inputs;      /* heap, one slot per argument; names heap too */
    int ninputs;
    const char *run_output, *run_output_dir, *cc;
    long bench_runs;
    int threads;                 /* --threads: kernel threads, 0 = the runtime's default */
    bool interp;
    bool jit;                    /* --jit: ORC LLJIT instead of $CC */
    bool profile;                /* --profile: per-layer hooks (compile), the table (run) */
    bool blas;                   /* --blas=openblas: float32 dense/matmul via cblas_sgemm */
    ir_conv_algo conv_algo;      /* --conv-algo (IR_CONV_AUTO by default) */
    bool quantize;               /* --quantize=int8 (quantize.c) */
    axc_named_file *calib;       /* --calibrate NAME=FILE.npy, as inputs */
    int ncalib;
    onnx_input_shape *shapes;    /* --shape NAME=1x3x224x224 (ONNX inputs); heap, names too */
    int nshapes;
    const char *dump_dir;        /* axc run --dump-dir */
    /* axc train (docs/training.md); NaN: the optimizer's default */
    bool train;
    bool train_step;             /* axc --train: emit the training step as C */
    const char *target_file;     /* --target Y.npy */
    int loss;                    /* pass_loss_kind, -1: not given */
    int optimizer;               /* axc_optimizer */
    double lr, momentum, weight_decay, beta1, beta2, eps;
    bool nesterov;
    bool shuffle;                /* --shuffle: batches in an order drawn from --seed per epoch */
    bool grad_exchange;          /* axc --train --grad-exchange: also the split step (docs/distributed.md) */
    long epochs;
    /* axc train's loop (docs/training.md#schedules-and-clipping); 0 / NaN: not given */
    int lr_schedule;             /* axc_lr_schedule */
    long step_size, t_max, warmup_steps;
    double gamma;                /* --gamma, NaN: StepLR's 0.1 */
    double clip_grad_norm, clip_grad_value;
    bool drop_last;              /* --drop-last: the partial last batch left out */
    axc_named_file *val_inputs;  /* --val-input NAME=X.npy (heap, one slot per argument) */
    int nval_inputs;
    const char *val_target;      /* --val-target Y.npy */
    long early_stop;             /* --early-stop=PATIENCE epochs, 0: off */
    const char *checkpoint;      /* --checkpoint FILE */
    long checkpoint_every;       /* --checkpoint-every K (default 1) */
    const char *resume;          /* --resume FILE */
    /* internal (train_tail.c): every model input's dim 0 set to this before
     * pass_shape (axc train's smaller last batch); 0: as declared */
    int64_t batch_override;
    /* storage for the NAME parts of -D NAME=VALUE */
    char names[AXC_MAX_DEFINES][128];
    int nnames;
} axc_opts;

/* Parses argv into o; prints the problem and returns AXC_EUSAGE, or
 * AXC_OK; *exit_now is set for --help/--version (already printed). */
int axc_parse_args(int argc, char **argv, axc_opts *o, bool *exit_now);
/* Releases what axc_parse_args allocated (after success or failure). */
void axc_free_args(axc_opts *o);

/* Front end and passes for every selected model: parse, lower, shapes,
 * dtypes, parameters (--weights or --seed), memory plan.  Returns AXC_OK or
 * an exit status; the graphs built so far are in models[0..*n) either way
 * (free them with axc_free_models). */
#define AXC_MAX_MODELS 64
int axc_build_models(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int *n);
/* Releases what the graphs hold outside the context arena. */
void axc_free_models(ir_graph **models, int n);

/* One file the command writes, and the option that named it. */
typedef struct axc_output {
    const char *opt, *path;
} axc_output;
/* AXC_OK, or AXC_EUSAGE (printed) when an output is the same file (device
 * and inode, or the same name in the same directory) as an input -- the
 * model, --weights, an --input, --target, a --calibrate file -- or as
 * another output. */
int axc_check_outputs(const axc_opts *o, const axc_output *outs, int n);

int axc_compile(ax_ctx *ctx, const axc_opts *o);   /* `axc FILE.ax -o OUT` */
int axc_run(ax_ctx *ctx, const axc_opts *o);       /* `axc run` */
int axc_train(ax_ctx *ctx, const axc_opts *o);     /* `axc train` (train.c) */
/* Writes g's parameters to --save-weights (atomically; outputs.c); an exit status. */
int axc_save_weights(const axc_opts *o, const ir_graph *g);

/* --optimizer (docs/training.md). */
typedef enum axc_optimizer { AXC_OPT_sgd, AXC_OPT_adam, AXC_OPT_adamw, AXC_OPT_lion, AXC_OPT_COUNT } axc_optimizer;
extern const char *const axc_optimizer_names[AXC_OPT_COUNT];
/* --lr-schedule (train_schedule.c) */
typedef enum axc_lr_schedule {
    AXC_SCHED_constant, AXC_SCHED_step, AXC_SCHED_cosine, AXC_SCHED_onecycle, AXC_SCHED_COUNT
} axc_lr_schedule;
extern const char *const axc_lr_schedule_names[AXC_SCHED_COUNT];
/* The optimizer settings of 0-based step `done` (optimizer steps taken
 * before it) of a run of `total` steps: base's lr scaled by --lr-schedule
 * and --warmup-steps, and under onecycle its momentum (SGD) or beta1 cycled,
 * as torch.optim.lr_scheduler steps once per batch. */
axrt_optim axc_scheduled_optim(const axc_opts *o, const axrt_optim *base, long done, long total);

/* The optimizer options with torch.optim's (and Lion's) defaults applied. */
axrt_optim axc_optim_from(const axc_opts *o);
/* pass_train_opts from the options (train_step.c). */
pass_train_opts axc_train_opts(const axc_opts *o);
/* axc --train (train_step.c): checks the command's limits, then turns
 * models[0] into the training step and adds its forward graph for the C
 * back end (pass_train_step_graphs); *train describes the state.  Returns
 * an exit status. */
int axc_train_step_graphs(ax_ctx *ctx, const axc_opts *o, ir_graph **models, int n, pass_train_step *train);

/* axc train's loops (train.c, train_exec.c; shared: train_loop.c).  The batches of 0-based epoch
 * `epoch` in the order they are used (file order, or --shuffle's). */
void axc_batch_order(const axc_opts *o, long epoch, int64_t *order, int64_t batches);
/* Every model input of t->g and the target (the last input) as whole batches
 * of one count (--drop-last: the partial last batch left out); cross_entropy
 * class indices checked against classes.  An exit status. */
struct axc_batch_file;
int axc_train_load_files(ax_ctx *ctx, const axc_opts *o, const pass_trainer *t, int64_t classes,
                         struct axc_batch_file *files, int64_t *batches);
/* Progress: off a terminal the step lines scripts read (and a line per epoch
 * with validation); on one a line per epoch updated in place with loss,
 * validation metrics, samples/s and time left. */
typedef struct axc_progress {
    bool tty, scheduled;
    long total, batches, epochs, batch, first_step, every, epoch_steps;
    double t0, last_draw, epoch_loss;
} axc_progress;
void axc_progress_start(axc_progress *p, const axc_opts *o, int64_t batches, long batch, long epochs_done);
void axc_progress_step(axc_progress *p, long step, double loss, double lr);
void axc_progress_epoch(axc_progress *p, long epoch, double mean_loss, double val_loss, double accuracy);
void axc_progress_end(axc_progress *p);
/* train_tail.c: the smaller last batch (DataLoader(drop_last=False)): the
 * model built again with every input's dim 0 the last batch's `samples`.
 * The interpreter runs its training graph on the main graph's parameters
 * and optimizer state; the compiled loop builds a second step from it whose
 * state must have the main step's layout.  Exit statuses. */
typedef struct axc_train_tail {
    int64_t samples;                   /* r, 0: no smaller last batch */
    ir_graph *models[AXC_MAX_MODELS];
    int nmodels;
    pass_trainer t;                     /* the interpreter's training graph at batch r */
} axc_train_tail;
int axc_tail_trainer(ax_ctx *ctx, const axc_opts *o, const pass_trainer *main_t, axc_train_tail *tail);
/* Copies the main graph's trainable parameters, running statistics and
 * Dropout counter into the tail graph (the only parameters training changes;
 * the rest were loaded alike). */
void axc_tail_sync(const pass_trainer *main_t, const axc_train_tail *tail);
int axc_tail_step_graphs(ax_ctx *ctx, const axc_opts *so, const pass_train_step *main_step, axc_train_tail *tail,
                         pass_train_step *train);
void axc_tail_free(axc_train_tail *tail);
/* Pads t (dim 0) with zero samples to a multiple of batch (arena memory). */
void axc_pad_to_batches(ax_ctx *ctx, tf_tensor *t, int64_t batch);
/* train_exec.c: `axc train` on the compiled step (generated C through the
 * run cache).  AXC_TRAIN_FALLBACK (a note printed) when it cannot run and
 * the interpreter should; else an exit status. */
#define AXC_TRAIN_FALLBACK (-1)
int axc_train_compiled(ax_ctx *ctx, const axc_opts *o);

/* The training and calibration data path (axc train --input/--target,
 * --calibrate): only a regular file whose first bytes are the .npy magic is
 * read, exactly its size (a device, FIFO or directory is refused before any
 * read), then parsed: the tensor in *t (data in the arena), 0; or the
 * problem printed and an exit status.  `what` names the option. */
int axc_read_npy_file(ax_ctx *ctx, const char *what, const char *path, tf_tensor *t);
/* Whether t (a float tensor) holds a NaN or an infinity: the first one's
 * flat index and value. */
bool axc_first_nonfinite(const tf_tensor *t, int64_t *index, double *value);

/* One training file of whole batches for an input node of the step's batch
 * shape, converted to the node's dtype (heap). */
typedef struct axc_batch_file {
    const char *path;
    uint8_t *data;
    size_t batch_bytes;
    int64_t batches;     /* whole batches */
    int64_t tail;        /* samples of the smaller last batch after them (zero-padded to a whole
                            batch in data), 0: none (docs/training.md#the-training-loop) */
} axc_batch_file;
/* Optimizer steps per epoch: the whole batches and the smaller last one. */
static inline int64_t axc_epoch_steps(const axc_batch_file *f) { return f->batches + (f->tail > 0); }
/* t as batches of n (dims after 0 equal, dim 0 a multiple of n's, float
 * for float): fills *f (free f->data), or prints the problem and returns an
 * exit status.  The fuzz harness tests/fuzz/fuzz_train_data.c drives it. */
int axc_train_batches(const tf_tensor *t, const ir_node *n, const char *what, const char *path,
                      axc_batch_file *f);
/* cross_entropy's targets: every class index of f within 0..classes-1. */
int axc_check_classes(const axc_batch_file *f, const ir_node *target, int64_t classes);

/* The source path the generated files name (banner, layer comments): the
 * first --file-prefix-map OLD=NEW whose OLD prefixes the input path rewrites
 * it; else a relative path stays as given and an absolute one becomes its
 * file name, so the output does not depend on where the tree lies. */
const char *axc_source_name(ax_arena *a, const axc_opts *o);
/* The part of path after its last '/'. */
const char *axc_base_name(const char *path);

/* Directory holding bin/axc's siblings include/ and lib/ (build tree or
 * install prefix), found from /proc/self/exe.  NULL if unknown or if
 * include/axrt.h or lib/libaxrt.a is missing there. */
const char *axc_home(ax_arena *a);

/* The cache of `axc run`'s shared objects (runcache.c): the path of the
 * entry for the sources in build_dir (model.c, model.h) built by compiler
 * command cc with flags against the runtime in home, or NULL when caching
 * is off or unusable.  open: the entry checked (a regular file of this
 * user's, writable by no one else, intact) as a path for dlopen naming the
 * open descriptor *fd (the caller closes it after dlopen), or NULL when it
 * is absent or ignored (a note on stderr says why).  drop: an entry that
 * did not load, noted and removed.  store copies a freshly built object
 * into entry (durably), then evicts the least recently used entries beyond
 * the cache's size bound. */
const char *axc_run_cache_entry(ax_arena *a, const char *cc, const char *flags, const char *build_dir,
                                const char *home);
/* The C compiler command (--cc, else $CC, else cc) and the build of
 * dir/model.c into dir/model.so against the runtime in home (run.c), with
 * the flags named by AXC_RUN_CFLAGS (part of the cache key); an exit
 * status, the failure printed. */
#define AXC_RUN_CFLAGS "-std=c99 -O2 -fPIC -shared -lm"
/* Generated code built and loaded as a shared object (run.c; axc run and
 * axc train): a temporary directory for model.c, model.h and model.so,
 * removed on a fatal signal too, and the library loaded from the run
 * cache's intact entry or else built with cc.  open makes the directory
 * ("axc-WHAT-XXXXXX"); load loads the sources the caller put there
 * (failure printed); the caller checks the library's symbols, then finish
 * stores a fresh build that passed and releases the cache lock; close
 * joins the library's threads, unloads it and removes the directory. */
typedef struct axc_built {
    char *dir;
    int cleanup[4];
    void *dl;
    const char *cached;   /* the cache entry, or NULL */
    int lock;             /* the cache entry's build lock, or -1 */
    bool hit;             /* loaded from the cache */
    int entry_fd;         /* hit: the entry's descriptor dlopen read, open while loaded */
} axc_built;
int axc_built_open(ax_ctx *ctx, const char *what, axc_built *b);
int axc_built_load(ax_ctx *ctx, const axc_opts *o, const char *home, const char *flags, bool gpu, axc_built *b);
void axc_built_finish(ax_ctx *ctx, axc_built *b, bool ok);
void axc_built_close(ax_ctx *ctx, axc_built *b);
const char *axc_cc_command(const axc_opts *o);
int axc_compile_shared(ax_ctx *ctx, const axc_opts *o, const char *dir, const char *home, bool gpu);
const char *axc_run_cache_open(ax_arena *a, const char *entry, int *fd);
void axc_run_cache_drop(const char *entry, const char *why);
void axc_run_cache_store(ax_arena *a, const char *built, const char *entry);
/* lock: after a miss, waits until no other axc builds entry (an exclusive
 * flock on ENTRY.lock) and returns the lock's descriptor (-1: no lock; go
 * on without); the caller then looks for the entry again.  unlock releases
 * it, removing the lock file once the entry was stored. */
int axc_run_cache_lock(ax_arena *a, const char *entry);
void axc_run_cache_unlock(ax_arena *a, const char *entry, int lock, bool stored);

/* --quantize=int8 (quantize.c): runs the float model over the --calibrate
 * samples in the reference interpreter, quantises its dense and conv layers
 * (pass_quant) and prints the calibration set's error per output.  Returns
 * an exit status. */
int axc_quantize(ax_ctx *ctx, const axc_opts *o, ir_graph *g);
/* A model whose file is quantised (ONNX QuantizeLinear/QLinear*: ir_node
 * file_scale) runs its dense/conv/add/... in int8 with the file's scales and
 * zero points (no calibration); axc_file_quantised says whether g is one. */
bool axc_file_quantised(const ir_graph *g);
int axc_quantize_file(ax_ctx *ctx, const axc_opts *o, ir_graph *g);
/* Whether the model at path (its bytes in ctx->src) is a TFLite flatbuffer:
 * a .tflite file, or any other than .onnx whose bytes 4..7 are "TFL3". */
bool axc_is_tflite(const ax_ctx *ctx, const char *path);

/* Per-layer profile of a loaded model built with hooks (profile.c). */
typedef struct axc_profile {
    axrt_layer_profile *layers;   /* the generated <name>_profile[] */
    axrt_layer_hook *hook;        /* the generated <name>_layer_hook */
    int count;
} axc_profile;
/* lookup(handle, symbol) finds the generated globals: dlsym on a loaded
 * library, or the JIT's (cg_llvm_jit_symbol). */
int axc_profile_attach(ax_ctx *ctx, void *(*lookup)(void *, const char *), void *handle, const ir_graph *g,
                       axc_profile *p);
void axc_profile_reset(const axc_profile *p);
void axc_profile_print(const axc_profile *p, const char *model, double wall_us_per_run);
/* --dump-dir: every layer's output of the next run as DIR/NNN_LAYER.npy and
 * DIR/index.tsv; end reports a write failure. */
int axc_profile_dump_begin(const axc_profile *p, const char *dir);
int axc_profile_dump_end(const axc_profile *p);

/* --emit=svg: replaces the Graphviz text in buf by the SVG `dot -Tsvg`
 * draws (render.c).  Returns an exit status (2 when dot is missing). */
int axc_render_svg(ax_buf *buf);

/* `axc compare DIR REF_DIR [--rtol R]` (compare.c): argv after "compare". */
int axc_compare_main(int argc, char **argv);

/* Prints "axc: error: MESSAGE" for usage and I/O problems (outputs.c). */
void axc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
