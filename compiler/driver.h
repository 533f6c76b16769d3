/* driver.h — the command-line driver: options (interface.md §1), the
 * compile pipeline shared by `axc` and `axc run`, and `axc run` itself. */
#ifndef AX_DRIVER_H
#define AX_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "ast.h"
#include "ir.h"
#include "lower.h"
#include "passes.h"

#define AXC_VERSION "0.1.0"

/* Exit statuses (interface.md §1). */
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
    uint64_t seed;
    eltype_mode eltype;
    ax_define defines[AXC_MAX_DEFINES];
    int ndefines;
    /* axc run */
    axc_named_file *inputs;      /* heap, one slot per argument; names heap too */
    int ninputs;
    const char *run_output, *run_output_dir, *cc;
    long bench_runs;
    bool interp;
    bool jit;                    /* --jit: ORC LLJIT instead of $CC */
    bool profile;                /* --profile: per-layer hooks (compile), the table (run) */
    const char *dump_dir;        /* axc run --dump-dir */
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

int axc_compile(ax_ctx *ctx, const axc_opts *o);   /* `axc FILE.ax -o OUT` */
int axc_run(ax_ctx *ctx, const axc_opts *o);       /* `axc run` */

/* Directory holding bin/axc's siblings include/ and lib/ (build tree or
 * install prefix), found from /proc/self/exe.  NULL if unknown or if
 * include/axrt.h or lib/libaxrt.a is missing there. */
const char *axc_home(ax_arena *a);

/* Per-layer profile of a loaded model built with hooks (profile.c). */
typedef struct axc_profile {
    axrt_layer_profile *layers;   /* the generated <name>_profile[] */
    axrt_layer_hook *hook;        /* the generated <name>_layer_hook */
    int count;
} axc_profile;
int axc_profile_attach(ax_ctx *ctx, void *dl, const ir_graph *g, axc_profile *p);
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

/* Prints "axc: error: MESSAGE" for usage and I/O problems. */
void axc_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
