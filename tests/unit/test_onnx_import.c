/* test_onnx_import.c — the ONNX importer's work is linear in the node count
 * (issue 33, G2): a chain of N Relu nodes (protobuf wire bytes written here)
 * imported with a shape inference that counts the nodes it is asked to
 * infer.  Inferring the whole graph after every node (the old way) costs
 * about N^2 / 2 node inferences; incremental inference a small constant
 * times N.  Counts work, never time.  Skipped without the ONNX front end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "onnx.h"
#include "passes.h"
#include "test_support.h"

static long long inferred_nodes;   /* node inferences asked for so far */

static int counting_infer(ir_graph *g, int first)
{
    inferred_nodes += g->nnodes - first;
    return pass_shape_from(g, first);
}

static void put_varint(ax_buf *b, uint64_t v)
{
    do {
        uint8_t byte = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) byte |= 0x80;
        ax_buf_put(b, &byte, 1);
    } while (v);
}

/* Field num, length-delimited, holding payload. */
static void put_field(ax_buf *b, unsigned num, const void *payload, size_t len)
{
    put_varint(b, (uint64_t)num << 3 | 2);
    put_varint(b, len);
    ax_buf_put(b, payload, len);
}

static void put_string(ax_buf *b, unsigned num, const char *s)
{
    put_field(b, num, s, strlen(s));
}

/* A ValueInfoProto: name, a float tensor [1, 8]. */
static void put_value_info(ax_buf *graph, unsigned num, const char *name)
{
    ax_buf dim1 = {0}, dim8 = {0}, shape = {0}, tensor = {0}, type = {0}, vi = {0};
    put_varint(&dim1, 1 << 3), put_varint(&dim1, 1);   /* dim_value */
    put_varint(&dim8, 1 << 3), put_varint(&dim8, 8);
    put_field(&shape, 1, dim1.data, dim1.len);
    put_field(&shape, 1, dim8.data, dim8.len);
    put_varint(&tensor, 1 << 3), put_varint(&tensor, 1);   /* elem_type FLOAT */
    put_field(&tensor, 2, shape.data, shape.len);
    put_field(&type, 1, tensor.data, tensor.len);
    put_string(&vi, 1, name);
    put_field(&vi, 2, type.data, type.len);
    put_field(graph, num, vi.data, vi.len);
    ax_buf_free(&dim1), ax_buf_free(&dim8), ax_buf_free(&shape);
    ax_buf_free(&tensor), ax_buf_free(&type), ax_buf_free(&vi);
}

/* y = relu(relu(... relu(x))), n nodes, as ModelProto bytes into model. */
static void chain_model(ax_buf *model, int n)
{
    ax_buf graph = {0}, opset = {0};
    char in[32], out[32], name[32];
    for (int i = 0; i < n; i++) {
        ax_buf node = {0};
        snprintf(in, sizeof in, "t%d", i);
        snprintf(out, sizeof out, "t%d", i + 1);
        snprintf(name, sizeof name, "n%d", i);
        put_string(&node, 1, in);
        put_string(&node, 2, out);
        put_string(&node, 3, name);
        put_string(&node, 4, "Relu");
        put_field(&graph, 1, node.data, node.len);
        ax_buf_free(&node);
    }
    put_string(&graph, 2, "chain");
    put_value_info(&graph, 11, "t0");
    snprintf(out, sizeof out, "t%d", n);
    put_value_info(&graph, 12, out);
    put_varint(&opset, 2 << 3), put_varint(&opset, 13);
    put_varint(model, 1 << 3), put_varint(model, 8);   /* ir_version */
    put_field(model, 7, graph.data, graph.len);
    put_field(model, 8, opset.data, opset.len);
    ax_buf_free(&graph), ax_buf_free(&opset);
}

/* Node inferences to import a chain of n nodes (the graph must import). */
static long long import_work(int n, int *nodes)
{
    ax_buf model = {0};
    chain_model(&model, n);
    ax_ctx *ctx = test_ctx_new("chain.onnx", NULL);
    inferred_nodes = 0;
    ir_graph *g = onnx_import(ctx, "chain.onnx", model.data, model.len, counting_infer, NULL, 0);
    if (!g) fprintf(stderr, "%s\n", test_diagnostics(ctx));
    assert_non_null(g);
    *nodes = g->nnodes;
    ir_graph_free_nodes(g);
    test_ctx_free(ctx);
    ax_buf_free(&model);
    return inferred_nodes;
}

static void import_work_is_linear_in_the_node_count(void **state)
{
    (void)state;
    if (!onnx_available()) skip();
    int small_nodes, large_nodes;
    long long small = import_work(500, &small_nodes), large = import_work(4000, &large_nodes);
    /* each node inferred a bounded number of times: at most 4 per IR node
     * (was ~N^2 / 2: 8 million for 4000), and 8x the nodes is about 8x the work */
    assert_true(large_nodes >= 4000);
    assert_true(large <= 4LL * large_nodes);
    assert_true(large <= 10 * small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(import_work_is_linear_in_the_node_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
