/* cg_geom.c — the geometry of strided reads that the plans (cg_plan.c)
 * and the printers share (cg.h): broadcast and transpose strides, and
 * torch.matmul's batch geometry.  Pure functions of the nodes' shapes: a
 * leaf of codegen/ (docs/internals.md#layers). */
#include "cg.h"

void cg_broadcast_strides(const ir_node *src, const ir_node *n, int64_t *strides)
{
    int64_t stride = 1;
    for (int d = n->rank - 1; d >= 0; d--) {
        int sd = d - (n->rank - src->rank);
        strides[d] = (sd < 0 || src->shape[sd] == 1) ? 0 : stride;
        if (sd >= 0)
            stride *= src->shape[sd];
    }
}

void cg_transpose_strides(const ir_node *x, const ir_node *n, int64_t *strides)
{
    int64_t x_strides[IR_MAX_RANK], stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        x_strides[d] = stride;
        stride *= x->shape[d];
    }
    for (int i = 0; i < n->rank; i++)
        strides[i] = x_strides[n->attrs.perm[i]];
}

cg_matmul_geometry cg_matmul_geometry_of(const ir_node *a, const ir_node *b)
{
    cg_matmul_geometry g = {.m = a->rank >= 2 ? a->shape[a->rank - 2] : 1,
                            .k = a->shape[a->rank - 1],
                            .cols = b->rank >= 2 ? b->shape[b->rank - 1] : 1};
    const int a_batch = a->rank > 2 ? a->rank - 2 : 0, b_batch = b->rank > 2 ? b->rank - 2 : 0;
    g.rank = a_batch > b_batch ? a_batch : b_batch;
    int64_t stride_a = g.m * g.k, stride_b = g.k * g.cols;
    for (int d = g.rank - 1; d >= 0; d--) {
        const int da = d - (g.rank - a_batch), db = d - (g.rank - b_batch);
        const int64_t ea = da >= 0 ? a->shape[da] : 1, eb = db >= 0 ? b->shape[db] : 1;
        g.batch[d] = ea > eb ? ea : eb;
        g.a_strides[d] = ea == 1 ? 0 : stride_a;
        g.b_strides[d] = eb == 1 ? 0 : stride_b;
        stride_a *= ea;
        stride_b *= eb;
    }
    return g;
}
