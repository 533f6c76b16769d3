/* onnx_ops_resize.c — Tile and Resize/Upsample: the IR's upsample where it
 * computes the same, else one interpolation matrix per resized axis
 * (constant, or computed by IR ops from scales known at run time). */
#ifdef AXC_ONNX
#include <math.h>
#include <string.h>

#include "onnx_ops.h"

/* Tile: a concatenation of copies along each axis. */
bool op_tile(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0);
    int64_t rep[IR_MAX_RANK], shape[IR_MAX_RANK];
    if (!ok || !xv) return false;
    int rank = ox_shape(s, xv, shape);
    if (ox_const_ints(s, IN(1), rep, IR_MAX_RANK) != rank) { if (!s->ctx->errors) ox_fail(s, "repeats has the wrong length"); return false; }
    int y = ox_node(s, xv);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        if (rep[ax] < 1 || rep[ax] > IR_SRC_ROOM) { ox_unsupported(s, "repeats under 1 or over 16"); return false; }
        if (rep[ax] == 1) continue;
        int src[IR_SRC_ROOM];
        for (int i = 0; i < rep[ax]; i++) src[i] = y;
        ir_attrs a = ir_attrs_unset();
        a.axis = ax;
        y = ox_add(s, IR_OP_concat, src, (int)rep[ax], &a);
    }
    return ox_set_node(s, 0, y, false);
}

/* Resize (nearest, linear, cubic; opset 10+) and Upsample (opset 7-9): the
 * IR's upsample where it computes the same (resize_upsample_mode), else one
 * interpolation matrix per resized axis: constant weights applied as a dense
 * when the scales are constants, weights computed by IR ops from the scales
 * when those come at run time (resize_runtime).  Exact for every scale and
 * coordinate mode, as onnx's reference: the length of an axis in the
 * coordinate formulas is in * scale, not the rounded output length. */
typedef struct resize_spec {
    const char *mode, *coord, *nearest;
    double cubic_a;
    bool exclude_outside;
} resize_spec;

/* The input coordinate of output i (of m) along an axis of length in. */
static double resize_coord(const char *mode, int64_t i, double scale, int64_t in, int64_t m)
{
    double len = (double)in * scale;
    if (!strcmp(mode, "half_pixel_symmetric"))   /* half_pixel centred: offset in/2 (1 - m / len) */
        return ((double)i + 0.5 - (double)m / 2) / scale + (double)in / 2 - 0.5;
    if (!strcmp(mode, "asymmetric")) return (double)i / scale;
    if (!strcmp(mode, "align_corners")) return len == 1 ? 0 : (double)i * (double)(in - 1) / (len - 1);
    if (!strcmp(mode, "pytorch_half_pixel")) return len != 1 ? (i + 0.5) / scale - 0.5 : -0.5;
    if (!strcmp(mode, "tf_half_pixel_for_nn")) return (i + 0.5) / scale;
    return (i + 0.5) / scale - 0.5;   /* half_pixel */
}

static int64_t nearest_index(const char *mode, double x)
{
    if (!strcmp(mode, "floor")) return (int64_t)floor(x);
    if (!strcmp(mode, "ceil")) return (int64_t)ceil(x);
    if (!strcmp(mode, "round_prefer_ceil")) return (int64_t)floor(x + 0.5);
    return (int64_t)ceil(x - 0.5);   /* round_prefer_floor */
}

/* Keys' cubic weight of the tap at distance d (0 <= d <= 2) for parameter a. */
static double cubic_weight(double a, double d)
{
    return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
}

/* Row i of the interpolation matrix of one axis: in weights at w. */
static void resize_row(const resize_spec *r, int64_t i, double scale, int64_t in, int64_t m, double *w)
{
    double c = resize_coord(r->coord, i, scale, in, m);
    if (!strcmp(r->mode, "nearest")) {
        int64_t k = nearest_index(r->nearest, c);
        w[k < 0 ? 0 : k >= in ? in - 1 : k] = 1;
    } else if (!strcmp(r->mode, "linear")) {
        c = c < 0 ? 0 : c > (double)(in - 1) ? (double)(in - 1) : c;
        int64_t k0 = (int64_t)floor(c), k1 = k0 + 1 < in ? k0 + 1 : in - 1;
        w[k0] += 1 - (c - (double)k0);
        w[k1] += c - (double)k0;
    } else {   /* cubic: taps floor(c) - 1 .. floor(c) + 2, edge-clamped */
        double f = floor(c), t = c - f, sum = 0, cw[4];
        for (int j = 0; j < 4; j++) {
            int64_t k = (int64_t)f + j - 1;
            cw[j] = r->exclude_outside && (k < 0 || k >= in) ? 0 : cubic_weight(r->cubic_a, fabs(t - (j - 1)));
            sum += cw[j];
        }
        for (int j = 0; j < 4; j++) {
            int64_t k = (int64_t)f + j - 1;
            w[k < 0 ? 0 : k >= in ? in - 1 : k] += r->exclude_outside ? cw[j] / sum : cw[j];
        }
    }
}

/* The IR upsample mode that computes this resize of a rank-4 tensor by
 * integer factors s of H and W, or -1.  Nearest: with half_pixel, the source
 * (i + 1/2) / s - 1/2 = floor(i / s) + (r - (s - 1) / 2) / s lies within 1/2
 * of floor(i / s), so either round_prefer_* gives it; asymmetric and
 * tf_half_pixel_for_nn give it with floor.  Linear: half_pixel is
 * align_corners=False, align_corners is itself. */
static int resize_upsample_mode(const resize_spec *r)
{
    bool half = !strcmp(r->coord, "half_pixel") || !strcmp(r->coord, "pytorch_half_pixel");
    if (!strcmp(r->mode, "nearest")) {
        bool round = !strncmp(r->nearest, "round_prefer_", 13);
        bool from_floor = !strcmp(r->coord, "asymmetric") || !strcmp(r->coord, "tf_half_pixel_for_nn");
        return (half && round) || (from_floor && !strcmp(r->nearest, "floor")) ? IR_UPSAMPLE_NEAREST : -1;
    }
    if (strcmp(r->mode, "linear")) return -1;
    return half ? IR_UPSAMPLE_BILINEAR : !strcmp(r->coord, "align_corners") ? IR_UPSAMPLE_BILINEAR_CORNERS : -1;
}

/* The IR upsample of x by the integer factors out / shape of dims 2 and 3
 * (dims 0 and 1 unchanged), or IR_NONE, nothing added, when it is not one. */
static int resize_as_upsample(ox_state *s, ox_val *x, int rank, const int64_t *shape, const int64_t *out,
                              const double *scales, int mode)
{
    if (rank != 4 || mode < 0 || out[0] != shape[0] || out[1] != shape[1] || scales[0] != 1 || scales[1] != 1)
        return IR_NONE;
    ir_attrs a = ir_attrs_unset();
    a.mode = mode;
    for (int d = 0; d < 2; d++) {
        if (out[2 + d] % shape[2 + d] || scales[2 + d] != (double)(out[2 + d] / shape[2 + d])) return IR_NONE;
        a.scale[d] = (int)(out[2 + d] / shape[2 + d]);
    }
    int src = ox_node_nhwc(s, x);
    return src == IR_NONE ? IR_NONE : ox_add(s, IR_OP_upsample, &src, 1, &a);
}

/* A float param of n values v0 + step * k, shaped [n, 1] (column) or [1, n]. */
static int ramp(ox_state *s, int64_t n, double v0, double step, bool column)
{
    double *v = ax_alloc(s->ctx->arena, sizeof *v * (size_t)n);
    for (int64_t k = 0; k < n; k++) v[k] = v0 + step * (double)k;
    int64_t shape[2] = {column ? n : 1, column ? 1 : n};
    return ox_param(s, v, 2, shape, NULL);
}

static int add_c(ox_state *s, int x, double c) { return ox_bin(s, IR_OP_add, x, ox_scalar(s, c)); }
static int mul_c(ox_state *s, int x, double c) { return ox_bin(s, IR_OP_mul, x, ox_scalar(s, c)); }

/* x clamped to [lo, hi]. */
static int clamp_c(ox_state *s, int x, double lo, double hi)
{
    return ox_bin(s, IR_OP_min, ox_bin(s, IR_OP_max, x, ox_scalar(s, lo)), ox_scalar(s, hi));
}

/* [k == j] for integer-valued k [1, m] and the column j = 0..in-1: 0/1 [in, m]. */
static int one_hot(ox_state *s, int k, int64_t in)
{
    int d = ox_un(s, IR_OP_abs, ox_bin(s, IR_OP_sub, k, ramp(s, in, 0, 1, true)));
    return ox_un(s, IR_OP_relu, ox_bin(s, IR_OP_sub, ox_scalar(s, 1), d));
}

/* Keys' cubic weight of the distances d >= 1 (far) or <= 1 (near), by IR ops. */
static int cubic_weight_ir(ox_state *s, int d, double a, bool far)
{
    if (far) return add_c(s, ox_bin(s, IR_OP_mul, add_c(s, ox_bin(s, IR_OP_mul, add_c(s, mul_c(s, d, a), -5 * a), d), 8 * a), d), -4 * a);
    return add_c(s, ox_bin(s, IR_OP_mul, ox_bin(s, IR_OP_mul, add_c(s, mul_c(s, d, a + 2), -(a + 3)), d), d), 1);
}

/* The transposed interpolation matrix [in, m] of one axis whose scale is the
 * computed [1] node sc: resize_row's formulas as IR ops on the coordinates
 * of the m outputs, a [1, m] row. */
static int resize_weights_ir(ox_state *s, const resize_spec *r, int sc, int64_t in, int64_t m)
{
    const char *cm = r->coord;
    int x;
    if (!strcmp(cm, "align_corners") && m == 1) x = ramp(s, 1, 0, 0, false);   /* 0, even where in scale = 1 */
    else if (!strcmp(cm, "align_corners"))   /* i (in - 1) / (in scale - 1) */
        x = ox_bin(s, IR_OP_div, ramp(s, m, 0, (double)(in - 1), false), add_c(s, mul_c(s, sc, (double)in), -1));
    else if (!strcmp(cm, "asymmetric")) x = ox_bin(s, IR_OP_div, ramp(s, m, 0, 1, false), sc);
    else if (!strcmp(cm, "half_pixel_symmetric"))   /* resize_coord's */
        x = add_c(s, ox_bin(s, IR_OP_div, ramp(s, m, 0.5 - (double)m / 2, 1, false), sc), (double)in / 2 - 0.5);
    else {
        x = ox_bin(s, IR_OP_div, ramp(s, m, 0.5, 1, false), sc);
        if (strcmp(cm, "tf_half_pixel_for_nn")) x = add_c(s, x, -0.5);
    }
    if (!strcmp(r->mode, "nearest")) {
        const char *nm = r->nearest;
        int k = !strcmp(nm, "floor") ? ox_un(s, IR_OP_floor, x) : !strcmp(nm, "ceil") ? ox_un(s, IR_OP_ceil, x)
              : !strcmp(nm, "round_prefer_ceil") ? ox_un(s, IR_OP_floor, add_c(s, x, 0.5)) : ox_un(s, IR_OP_ceil, add_c(s, x, -0.5));
        return one_hot(s, clamp_c(s, k, 0, (double)(in - 1)), in);
    }
    if (!strcmp(r->mode, "linear")) {   /* the hat 1 - |x - j| at x clamped into the axis */
        int d = ox_un(s, IR_OP_abs, ox_bin(s, IR_OP_sub, clamp_c(s, x, 0, (double)(in - 1)), ramp(s, in, 0, 1, true)));
        return ox_un(s, IR_OP_relu, ox_bin(s, IR_OP_sub, ox_scalar(s, 1), d));
    }
    int f = ox_un(s, IR_OP_floor, x), t = ox_bin(s, IR_OP_sub, x, f), w = IR_NONE, sum = IR_NONE;
    for (int j = 0; j < 4; j++) {
        int d = j == 0 ? add_c(s, t, 1) : j == 1 ? t : add_c(s, mul_c(s, t, -1), j - 1);
        int c = cubic_weight_ir(s, d, r->cubic_a, j == 0 || j == 3), k = add_c(s, f, j - 1);
        if (r->exclude_outside)   /* times [0 <= k <= in - 1] */
            c = ox_bin(s, IR_OP_mul, c, ox_un(s, IR_OP_relu, ox_un(s, IR_OP_sign, ox_bin(s, IR_OP_mul, add_c(s, k, 0.5),
                                                                            add_c(s, mul_c(s, k, -1), (double)in - 0.5)))));
        int term = ox_bin(s, IR_OP_mul, c, one_hot(s, clamp_c(s, k, 0, (double)(in - 1)), in));
        w = j ? ox_bin(s, IR_OP_add, w, term) : term;
        sum = j ? ox_bin(s, IR_OP_add, sum, c) : c;
    }
    return r->exclude_outside ? ox_bin(s, IR_OP_div, w, sum) : w;
}

/* Resize by scales known only at run time (a graph input, say): the output
 * shape is the one the model declares, the coordinates use the scales' values. */
static int resize_runtime(ox_state *s, const resize_spec *r, ox_val *x, ox_val *sc, int rank, const int64_t *shape)
{
    int64_t out[IR_MAX_RANK], ss[IR_MAX_RANK];
    if (ox_declared_shape(s, s->node->output[0], out) != rank || ox_shape(s, sc, ss) != 1 || ss[0] != rank) {
        ox_unsupported(s, "scales computed at run time without a declared static output shape");
        return IR_NONE;
    }
    int y = ox_node(s, x), scn = ox_node(s, sc);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        int64_t in = shape[ax], m = out[ax];
        if (in == 1 && m == 1) continue;   /* every coordinate clamps to the one element */
        if (m * in > ((int64_t)1 << 22) || (m == 1 && !strcmp(r->coord, "pytorch_half_pixel"))) {
            ox_unsupported(s, "a run-time resize this large, or to length 1 with pytorch_half_pixel");
            return IR_NONE;
        }
        int wt = resize_weights_ir(s, r, ox_slice_axis(s, scn, 0, ax, ax + 1, 1), in, m), back[IR_MAX_RANK];
        int t = ox_axis_last(s, y, rank, ax, back);
        y = t == IR_NONE ? t : ox_transpose_perm(s, ox_bin(s, IR_OP_matmul, t, wt), back, rank);
    }
    return y;
}

/* The coordinate and nearest modes named are ones resize_coord and
 * nearest_index know (half_pixel_symmetric: opset 19). */
static bool resize_names_ok(ox_state *s, const resize_spec *r)
{
    static const char *const coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn"};
    static const char *const nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    bool coord_ok = false, nearest_ok = false;
    for (size_t i = 0; i < sizeof coords / sizeof *coords; i++) coord_ok |= !strcmp(r->coord, coords[i]);
    for (size_t i = 0; i < sizeof nearest / sizeof *nearest; i++) nearest_ok |= !strcmp(r->nearest, nearest[i]);
    if (!coord_ok || !nearest_ok) {
        ox_fail(s, "unknown coordinate_transformation_mode '%s' or nearest_mode '%s'", r->coord, r->nearest);
        return false;
    }
    return true;
}

/* Resize's axes attribute (opset 18; na of them, -1: absent, every axis in
 * order) into pos: for each of the rank axes its entry of scales or sizes,
 * or -1 when not resized. */
static bool resize_axes(ox_state *s, int na, int64_t *axes, int rank, int *pos)
{
    for (int i = 0; i < rank; i++) pos[i] = na < 0 ? i : -1;
    if (!ox_norm_axes(s, axes, na, rank)) return false;
    for (int k = 0; k < na; k++) pos[axes[k]] = k;
    return true;
}

/* keep_aspect_ratio_policy (opset 18) with sizes: not_larger / not_smaller
 * scale every resized axis by the smallest / largest of their size ratios,
 * the length rounded half up, as onnx's reference; stretch keeps them. */
static bool resize_keep_aspect(ox_state *s, const int *pos, int rank, const int64_t *shape, double *scales,
                               int64_t *out)
{
    const char *policy = s->opset >= 18 ? ox_attr_str(s, "keep_aspect_ratio_policy", "stretch") : "stretch";
    bool larger = !strcmp(policy, "not_larger"), smaller = !strcmp(policy, "not_smaller");
    if (!strcmp(policy, "stretch")) return true;
    if (!larger && !smaller) {
        ox_fail(s, "unknown keep_aspect_ratio_policy '%s'", policy);
        return false;
    }
    double scale = 0;
    bool first = true;
    for (int i = 0; i < rank; i++) {
        if (pos[i] < 0) continue;
        if (first || (larger ? scales[i] < scale : scales[i] > scale)) scale = scales[i];
        first = false;
    }
    for (int i = 0; i < rank; i++) {
        if (pos[i] < 0) continue;
        scales[i] = scale;
        if (!ox_double_to_int(scale * (double)shape[i] + 0.5, &out[i]) || out[i] < 1 || out[i] > ((int64_t)1 << 20)) {
            ox_fail(s, "bad scale or size");
            return false;
        }
    }
    return true;
}

/* antialias=1 (opset 18) widens linear and cubic filters when downscaling:
 * refused there, the same as antialias=0 everywhere else. */
static bool resize_antialias_ok(ox_state *s, const resize_spec *r, int rank, const double *scales)
{
    if (s->opset < 18 || !ox_attr_int(s, "antialias", 0) || !strcmp(r->mode, "nearest")) return true;
    for (int i = 0; i < rank; i++)
        if (scales[i] < 1) {
            ox_unsupported(s, "antialias=1 when downscaling with linear or cubic interpolation");
            return false;
        }
    return true;
}

/* The mode, coordinate mode, nearest mode and cubic parameters of the
 * current Resize (or Upsample) node into r; false after a located error
 * for a mode not mapped. */
static bool resize_spec_of(ox_state *s, bool upsample, resize_spec *r)
{
    *r = (resize_spec){.mode = ox_attr_str(s, "mode", "nearest"), .cubic_a = ox_attr_float(s, "cubic_coeff_a", -0.75),
                       .exclude_outside = ox_attr_int(s, "exclude_outside", 0) != 0};
    if (upsample && !strcmp(r->mode, "bilinear")) r->mode = "linear";   /* Upsample-7's other name */
    r->coord = upsample ? "asymmetric" : ox_attr_str(s, "coordinate_transformation_mode", s->opset < 11 ? "asymmetric" : "half_pixel");
    r->nearest = upsample || s->opset < 11 ? "floor" : ox_attr_str(s, "nearest_mode", "round_prefer_floor");
    if ((strcmp(r->mode, "nearest") && strcmp(r->mode, "linear") && strcmp(r->mode, "cubic")) || !strcmp(r->coord, "tf_crop_and_resize")) {
        ox_unsupported(s, "this resize mode (nearest, linear and cubic only, no tf_crop_and_resize)");
        return false;
    }
    return resize_names_ok(s, r);
}

bool op_resize(ox_state *s)
{
    bool ok = true, upsample = !strcmp(s->node->op_type, "Upsample");
    ox_val *x = IN(0);
    if (!ok || !x) return false;
    int64_t shape[IR_MAX_RANK], out[IR_MAX_RANK];
    double scales[IR_MAX_RANK];
    int rank = ox_shape(s, x, shape);
    resize_spec r;
    if (!resize_spec_of(s, upsample, &r)) return false;
    ox_val *sc = NULL, *sz = NULL;
    const Onnx__AttributeProto *attr = upsample ? ox_attr(s, "scales") : NULL;
    if (upsample && !attr) sc = IN(1);
    else if (!upsample && s->opset < 11) sc = IN(1);
    else if (!upsample) { sc = NIN > 2 ? IN(2) : NULL; sz = NIN > 3 ? IN(3) : NULL; }
    if (!ok) return false;
    if (sc && sc->c && sc->c->count == 0) sc = NULL;
    int64_t axes[IR_MAX_RANK];
    int na = upsample || s->opset < 18 ? -1 : ox_attr_ints(s, "axes", axes, IR_MAX_RANK);
    if (sc && !sc->c && !sz) {
        if (na >= 0 || (ox_attr_int(s, "antialias", 0) && strcmp(r.mode, "nearest"))) {
            ox_unsupported(s, "axes or antialias=1 with scales computed at run time");
            return false;
        }
        return ox_set_node(s, 0, resize_runtime(s, &r, x, sc, rank, shape), false);
    }
    int pos[IR_MAX_RANK];   /* the entry of scales or sizes for each axis, or -1 */
    if (!resize_axes(s, na, axes, rank, pos)) return false;
    int want = na >= 0 ? na : rank;
    for (int i = 0; i < rank; i++) {
        int k = pos[i];
        if (k < 0) scales[i] = 1, out[i] = shape[i];
        else if (attr && (int)attr->n_floats == want) scales[i] = attr->floats[k];
        else if (sc && sc->c && sc->c->count == want) scales[i] = sc->c->v[k];
        else if (sz && sz->c && sz->c->count == want) scales[i] = sz->c->v[k] / (double)shape[i];
        else { ox_unsupported(s, "scales or sizes that are not constants of the input's rank"); return false; }
        bool known = k < 0 || (sz && sz->c ? ox_int_at(s, sz->c, k, &out[i]) : ox_double_to_int(floor((double)shape[i] * scales[i]), &out[i]));
        if (!known || !(scales[i] > 0) || out[i] < 1 || out[i] > ((int64_t)1 << 20)) { if (!s->ctx->errors) ox_fail(s, "bad scale or size"); return false; }
    }
    if (sz && !resize_keep_aspect(s, pos, rank, shape, scales, out)) return false;
    if (!resize_antialias_ok(s, &r, rank, scales)) return false;
    int y = resize_as_upsample(s, x, rank, shape, out, scales, resize_upsample_mode(&r));
    if (y != IR_NONE || s->ctx->errors) return ox_set_node(s, 0, y, true);
    y = ox_node(s, x);
    for (int ax = 0; ax < rank && y != IR_NONE; ax++) {
        if (out[ax] == shape[ax] && scales[ax] == 1) continue;
        int64_t in = shape[ax], m = out[ax];
        if (m * in > ((int64_t)1 << 22)) { ox_unsupported(s, "a resize this large"); return false; }
        double *w = ax_alloc(s->ctx->arena, sizeof *w * (size_t)(m * in));
        for (int64_t i = 0; i < m; i++) resize_row(&r, i, scales[ax], in, m, w + i * in);
        y = ox_weigh_axis(s, y, ax, w, m);
    }
    return ox_set_node(s, 0, y, false);
}

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_resize_left_out;
#endif
