/* onnx_ops_rnn.c — the recurrent ONNX ops: RNN unrolled over the sequence
 * with IR ops; GRU and LSTM as the IR's gru/lstm, one per direction, with
 * the ONNX gate order and layouts mapped onto PyTorch's. */
#ifdef AXC_ONNX
#include <string.h>

#include "onnx_ops.h"

/* w[0] of a [1, r, c] tensor as [c, r] (a weight transposed for matmul). */
static int rnn_weight_t(ox_state *s, ox_val *w, int64_t r, int64_t c)
{
    int64_t shape[2] = {r, c};
    static const int perm[2] = {1, 0};
    return ox_transpose_perm(s, ox_reshape_to(s, ox_node(s, w), shape, 2), perm, 2);
}

/* RNN (forward, tanh, no sequence_lens or clip) unrolled over the sequence:
 * H_t = tanh(X_t W^T + H_{t-1} R^T + Wb + Rb); Y stacks the H_t, Y_h is the last. */
bool op_rnn(ox_state *s)
{
    bool ok = true;
    ox_val *xv = IN(0), *w = IN(1), *r = IN(2), *b = IN(3), *lens = IN(4), *h0 = IN(5);
    if (!ok || !xv || !w || !r) return false;
    int64_t xs[IR_MAX_RANK];
    bool batch_first = ox_attr_int(s, "layout", 0) == 1;
    int x = ox_node(s, xv);
    if (ox_shape(s, xv, xs) != 3 || x == IR_NONE) { ox_unsupported(s, "an RNN input that is not 3-D"); return false; }
    int64_t seq = batch_first ? xs[1] : xs[0], batch = batch_first ? xs[0] : xs[1], in = xs[2];
    const Onnx__AttributeProto *act = ox_attr(s, "activations");
    bool plain = !strcmp(ox_attr_str(s, "direction", "forward"), "forward") && !ox_attr(s, "clip") &&
                 (!act || (act->n_strings == 1 && act->strings[0].len == 4 && !memcmp(act->strings[0].data, "Tanh", 4)));
    for (int64_t i = 0; lens && plain && i < (lens->c ? lens->c->count : 0); i++) plain = lens->c->is_int && lens->c->iv[i] == seq;
    if (!plain || (lens && !lens->c)) {   /* sequence_lens only as constants equal to the length */
        ox_unsupported(s, "an RNN that is not forward tanh with full sequences and no clip");
        return false;
    }
    static const int swap01[3] = {1, 0, 2};
    if (batch_first) x = ox_transpose_perm(s, x, swap01, 3);
    int64_t hid = ox_attr_int(s, "hidden_size", 0);
    if (hid < 1 || hid > 1 << 16 || seq < 1 || seq > 4096) { ox_unsupported(s, "this RNN size"); return false; }
    int wt = rnn_weight_t(s, w, hid, in), rt = rnn_weight_t(s, r, hid, hid), bias = IR_NONE;
    if (b) {
        int64_t two[1] = {2 * hid};
        int bb = ox_reshape_to(s, ox_node(s, b), two, 1);
        bias = ox_bin(s, IR_OP_add, ox_slice_axis(s, bb, 0, 0, hid, 1), ox_slice_axis(s, bb, 0, hid, 2 * hid, 1));
    }
    int64_t bh[2] = {batch, hid}, step_shape[4] = {1, 1, batch, hid};
    int h;
    if (h0) h = ox_reshape_to(s, ox_node(s, h0), bh, 2);
    else h = ox_param(s, ax_alloc(s->ctx->arena, sizeof(double) * (size_t)(batch * hid)), 2, bh, NULL);
    int *steps = ax_alloc(s->ctx->arena, sizeof *steps * (size_t)seq);
    for (int64_t t = 0; t < seq && h != IR_NONE; t++) {
        int64_t xt_shape[2] = {batch, in};
        int xt = ox_reshape_to(s, ox_slice_axis(s, x, 0, t, t + 1, 1), xt_shape, 2);
        int pre = ox_bin(s, IR_OP_add, ox_bin(s, IR_OP_matmul, xt, wt), ox_bin(s, IR_OP_matmul, h, rt));
        if (bias != IR_NONE) pre = ox_bin(s, IR_OP_add, pre, bias);
        h = ox_un(s, IR_OP_tanh, pre);
        steps[t] = ox_reshape_to(s, h, step_shape, 4);
        if (steps[t] == IR_NONE) return false;
    }
    if (h == IR_NONE) return false;
    if (s->node->n_output > 0 && s->node->output[0][0]) {
        ir_attrs a = ir_attrs_unset();
        a.axis = 0;
        int y = seq == 1 ? steps[0] : ox_add(s, IR_OP_concat, steps, (int)seq, &a);
        static const int to_batch_first[4] = {2, 0, 1, 3};
        if (batch_first) y = ox_transpose_perm(s, y, to_batch_first, 4);
        if (!ox_set_node(s, 0, y, false)) return false;
    }
    if (s->node->n_output > 1 && s->node->output[1][0]) {
        int64_t hs[3] = {1, batch, hid}, hs_bf[3] = {batch, 1, hid};
        if (!ox_set_node(s, 1, ox_reshape_to(s, h, batch_first ? hs_bf : hs, 3), false)) return false;
    }
    return true;
}

/* ---- GRU, LSTM: the IR's gru/lstm (PyTorch's gate order), one per direction */

/* v's shape is want[0..rank); else a located error naming it. */
static bool rnn_shape_is(ox_state *s, ox_val *v, const char *what, const int64_t *want, int rank)
{
    int64_t got[IR_MAX_RANK];
    bool same = ox_shape(s, v, got) == rank;
    for (int i = 0; same && i < rank; i++) same = got[i] == want[i];
    if (!same) ox_fail(s, "%s '%s' does not have the shape that X, direction and hidden_size imply", what, v->name);
    return same;
}

/* Part p of direction d of an ONNX recurrent tensor, viewed as rows of
 * [dirs, parts, G gates, H, cols], with the gate blocks in PyTorch's order
 * (block k is ONNX block order[k]): [G*H, cols], or [G*H] when cols is 0.
 * Constants are reordered at import; a computed tensor by slices. */
static int rnn_gates(ox_state *s, ox_val *v, int d, int p, int parts, int gates, int64_t hid,
                     int64_t cols, const int *order)
{
    const int64_t c = cols ? cols : 1, block = hid * c, out[2] = {gates * hid, cols};
    const int64_t first = ((int64_t)d * parts + p) * gates;
    if (v->c) {
        double *vals = ax_alloc(s->ctx->arena, sizeof *vals * (size_t)(gates * block));
        for (int k = 0; k < gates; k++)
            memcpy(vals + k * block, v->c->v + (first + order[k]) * block, sizeof *vals * (size_t)block);
        return ox_param(s, vals, cols ? 2 : 1, out, NULL);
    }
    int64_t shape[IR_MAX_RANK], view[2] = {0, block};
    view[0] = ox_numel(shape, ox_shape(s, v, shape)) / block;
    int x = ox_reshape_to(s, ox_node(s, v), view, 2), src[4];
    for (int k = 0; k < gates; k++) src[k] = ox_slice_axis(s, x, 0, first + order[k], first + order[k] + 1, 1);
    ir_attrs a = ir_attrs_unset();
    a.axis = 0;
    for (int k = 0; k < gates; k++)
        if (src[k] == IR_NONE) return IR_NONE;
    return ox_reshape_to(s, ox_add(s, IR_OP_concat, src, gates, &a), out, cols ? 2 : 1);
}

/* Direction d of an initial state [dirs, batch, H] ([batch, dirs, H] in
 * layout 1) as [batch, H]. */
static int rnn_state(ox_state *s, ox_val *v, int d, bool batch_first, int64_t batch, int64_t hid)
{
    if (!v) return IR_NONE;
    const int64_t shape[2] = {batch, hid};
    return ox_reshape_to(s, ox_slice_axis(s, ox_node(s, v), batch_first ? 1 : 0, d, d + 1, 1), shape, 2);
}

/* What of the node the IR's gru/lstm cannot express, or NULL: activations
 * other than the defaults, clip, input_forget, peepholes, sequence_lens
 * other than constants equal to the length. */
static const char *rnn_unsupported(ox_state *s, bool lstm, int dirs, int64_t seq, ox_val *lens)
{
    static const char *const acts[3] = {"Sigmoid", "Tanh", "Tanh"};
    const int nact = lstm ? 3 : 2;
    const Onnx__AttributeProto *act = ox_attr(s, "activations");
    if (act && act->n_strings != (size_t)(nact * dirs)) return "activations other than the defaults";
    for (size_t i = 0; act && i < act->n_strings; i++)
        if (act->strings[i].len != strlen(acts[i % nact]) ||
            memcmp(act->strings[i].data, acts[i % nact], act->strings[i].len))
            return "activations other than the defaults";
    if (ox_attr(s, "clip")) return "clip";
    if (lstm && ox_attr_int(s, "input_forget", 0)) return "input_forget";
    if (lstm && NIN > 7 && s->node->input[7][0]) return "peepholes (input P)";
    if (lens && !lens->c) return "sequence_lens that is not a constant";
    for (int64_t i = 0; lens && i < lens->c->count; i++)
        if (!lens->c->is_int || lens->c->iv[i] != seq) return "sequence_lens shorter than the sequence";
    return NULL;
}

/* The directions' values joined along axis (one direction: itself). */
static int rnn_join(ox_state *s, const int *v, int dirs, int axis)
{
    ir_attrs cat = ir_attrs_unset();
    cat.axis = axis;
    if (dirs == 1 || v[0] == IR_NONE) return v[0];
    return v[1] == IR_NONE ? IR_NONE : ox_add(s, IR_OP_concat, v, 2, &cat);
}

/* Output out (Y_h, Y_c) as [dirs, batch, H] ([batch, dirs, H] in layout
 * 1): each direction's last step of v[d] [batch, seq, H]. */
static bool rnn_last_step(ox_state *s, int out, const int *v, int dirs, const bool *reverse,
                          bool batch_first, const int64_t *bsh)
{
    static const int swap01[3] = {1, 0, 2};
    const int64_t hn[3] = {bsh[0], 1, bsh[2]};
    int last[2];
    for (int d = 0; d < dirs; d++) {
        const int64_t t = reverse[d] ? 0 : bsh[1] - 1;
        last[d] = ox_reshape_to(s, ox_slice_axis(s, v[d], 1, t, t + 1, 1), hn, 3);
    }
    int h = rnn_join(s, last, dirs, 1);
    if (!batch_first) h = ox_transpose_perm(s, h, swap01, 3);
    return ox_set_node(s, out, h, false);
}

/* Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]) from each
 * direction's [batch, seq, H]. */
static bool rnn_sequence(ox_state *s, const int *y, int dirs, bool batch_first, const int64_t *bsh)
{
    static const int seq_first[4] = {1, 2, 0, 3};
    const int64_t step[4] = {bsh[0], bsh[1], 1, bsh[2]};
    int parts[2];
    for (int d = 0; d < dirs; d++) parts[d] = ox_reshape_to(s, y[d], step, 4);
    int all = rnn_join(s, parts, dirs, 2);
    if (!batch_first) all = ox_transpose_perm(s, all, seq_first, 4);
    return ox_set_node(s, 0, all, false);
}

/* Whether the current node's output i is named and read. */
static bool output_wanted(ox_state *s, int i)
{
    return s->node->n_output > (size_t)i && s->node->output[i][0] && ox_value_used(s, s->node->output[i]);
}

/* GRU and LSTM (opsets 7-14): per direction one IR gru/lstm over X as
 * [batch, seq, in], weights put in PyTorch's gate order (GRU z, r, h ->
 * r, z, n; LSTM i, o, f, c -> i, f, g, o). */
static bool op_recurrent(ox_state *s, bool lstm)
{
    bool ok = true;
    ox_val *xv = IN(0), *w = IN(1), *r = IN(2), *b = IN(3), *lens = IN(4), *h0 = IN(5);
    ox_val *c0 = lstm ? IN(6) : NULL;
    if (!ok || !xv || !w || !r) return false;
    static const int gru_order[3] = {1, 0, 2}, lstm_order[4] = {0, 2, 3, 1};
    const int gates = lstm ? 4 : 3, *order = lstm ? lstm_order : gru_order;
    const bool batch_first = ox_attr_int(s, "layout", 0) == 1;
    const char *dir = ox_attr_str(s, "direction", "forward");
    const int dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    int64_t xs[IR_MAX_RANK], hid = ox_attr_int(s, "hidden_size", 0);
    int x = ox_node(s, xv);
    if (x == IR_NONE || ox_shape(s, xv, xs) != 3) { ox_unsupported(s, "a recurrent input that is not 3-D"); return false; }
    const int64_t seq = batch_first ? xs[1] : xs[0], batch = batch_first ? xs[0] : xs[1], in = xs[2];
    const char *why = strcmp(dir, "forward") && strcmp(dir, "reverse") && dirs == 1 ? "this direction"
                      : hid < 1 || hid > 1 << 16 || seq > 1 << 20 ? "this hidden_size or length"
                      : rnn_unsupported(s, lstm, dirs, seq, lens);
    if (why) { ox_unsupported(s, why); return false; }
    const int64_t wsh[3] = {dirs, gates * hid, in}, rsh[3] = {dirs, gates * hid, hid};
    const int64_t bsh[2] = {dirs, 2 * gates * hid}, hsh[3] = {batch_first ? batch : dirs, batch_first ? dirs : batch, hid};
    if (!rnn_shape_is(s, w, "W", wsh, 3) || !rnn_shape_is(s, r, "R", rsh, 3) || (b && !rnn_shape_is(s, b, "B", bsh, 2)) ||
        (h0 && !rnn_shape_is(s, h0, "initial_h", hsh, 3)) || (c0 && !rnn_shape_is(s, c0, "initial_c", hsh, 3)))
        return false;
    static const int swap01[3] = {1, 0, 2};
    if (!batch_first) x = ox_transpose_perm(s, x, swap01, 3);
    int y[2], cells[2];
    bool reverse[2];
    const bool want_c = lstm && output_wanted(s, 2);
    for (int d = 0; d < dirs; d++) {
        int src[7] = {x, rnn_gates(s, w, d, 0, 1, gates, hid, in, order), rnn_gates(s, r, d, 0, 1, gates, hid, hid, order),
                      b ? rnn_gates(s, b, d, 0, 2, gates, hid, 0, order) : IR_NONE,
                      b ? rnn_gates(s, b, d, 1, 2, gates, hid, 0, order) : IR_NONE,
                      rnn_state(s, h0, d, batch_first, batch, hid), rnn_state(s, c0, d, batch_first, batch, hid)};
        if (src[1] == IR_NONE || src[2] == IR_NONE) return false;
        ir_attrs a = ir_attrs_unset();
        reverse[d] = d == 1 || !strcmp(dir, "reverse");
        a.reverse = reverse[d];
        a.linear_before_reset = !lstm && ox_attr_int(s, "linear_before_reset", 0) != 0;
        y[d] = ox_add(s, lstm ? IR_OP_lstm : IR_OP_gru, src, lstm ? 7 : 6, &a);
        a.cell = true;   /* Y_c: the same LSTM again, keeping c (only when read) */
        cells[d] = want_c ? ox_add(s, IR_OP_lstm, src, 7, &a) : IR_NONE;
        if (y[d] == IR_NONE || (want_c && cells[d] == IR_NONE)) return false;
    }
    const int64_t dims[3] = {batch, seq, hid};
    return (!output_wanted(s, 0) || rnn_sequence(s, y, dirs, batch_first, dims)) &&
           (!output_wanted(s, 1) || rnn_last_step(s, 1, y, dirs, reverse, batch_first, dims)) &&
           (!want_c || rnn_last_step(s, 2, cells, dirs, reverse, batch_first, dims));
}

bool op_gru(ox_state *s) { return op_recurrent(s, false); }
bool op_lstm(ox_state *s) { return op_recurrent(s, true); }

#else
/* Built without protobuf-c: onnx_import.c reports it. */
typedef int onnx_ops_rnn_left_out;
#endif
