/* test_parser.c — the front end (grammar/axc.l, grammar/axc.y, grammar/ast.c)
 * against docs/language.md: every construct, both model forms, the benchmark
 * models, continuation and comment rules, node locations, and golden
 * diagnostics (exact text with source line and caret) for each class of
 * syntax error, several per file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"

/* ---- harness ------------------------------------------------------------- */

typedef struct parse_result {
    ax_ctx *ctx;
    ast_file *file;
    char *dump;      /* ast_dump text, or NULL on errors */
    char *diags;     /* everything printed to the diagnostic stream */
    size_t diags_len;
} parse_result;

static parse_result *parse(const char *src)
{
    parse_result *r = calloc(1, sizeof *r);
    r->ctx = ax_ctx_new();
    r->ctx->path = "t.ax";
    r->ctx->src = src;
    r->ctx->src_len = strlen(src);
    r->ctx->diag_out = open_memstream(&r->diags, &r->diags_len);
    r->file = ast_parse(r->ctx);
    fflush(r->ctx->diag_out);
    if (r->file) {
        ax_buf b = {0};
        ast_dump(r->file, &b);
        r->dump = b.data;
    }
    return r;
}

static void parse_free(parse_result *r)
{
    fclose(r->ctx->diag_out);
    free(r->diags);
    free(r->dump);
    ax_ctx_free(r->ctx);
    free(r);
}

typedef struct parse_case {
    const char *src;
    const char *expected;   /* dump for good input, diagnostics for bad */
} parse_case;

/* Good input: no diagnostics, and the dump is exactly as expected. */
static void check_dump(void **state)
{
    const parse_case *c = *state;
    parse_result *r = parse(c->src);
    assert_string_equal(r->diags, "");
    assert_non_null(r->file);
    assert_string_equal(r->dump, c->expected);
    parse_free(r);
}

/* Bad input: no tree, and the diagnostics are exactly as expected. */
static void check_diags(void **state)
{
    const parse_case *c = *state;
    parse_result *r = parse(c->src);
    assert_null(r->file);
    assert_true(r->ctx->errors > 0);
    assert_string_equal(r->diags, c->expected);
    parse_free(r);
}

#define DUMP_CASE(name, src, dump) \
    {#name, check_dump, NULL, NULL, &(parse_case){src, dump}}
#define DIAG_CASE(name, src, diags) \
    {#name, check_diags, NULL, NULL, &(parse_case){src, diags}}

/* ---- good input ------------------------------------------------------------ */

#define MODEL_HEAD "@axiom m(x::Float32[1, 4]) begin\n"

static const struct CMUnitTest dump_tests[] = {
    /* The six benchmark models, verbatim. */
    DUMP_CASE(bench_r1_mlp_b1,
        "# R1: MLP 784 -> 256 -> 10, batch 1\n"
        "@axiom mlp_b1(x::Float32[1, 784]) begin\n"
        "    Dense(784 => 256, activation=relu)\n"
        "    Dense(256 => 10, activation=softmax)\n"
        "end\n",
        "(model mlp_b1 chain\n"
        "  (param x Float32 1 784)\n"
        "  (call Dense (=> 784 256) (kw activation relu))\n"
        "  (call Dense (=> 256 10) (kw activation softmax)))\n"),
    DUMP_CASE(bench_r2_mlp_b32,
        "# R2: MLP 784 -> 256 -> 10, batch 32\n"
        "@axiom mlp_b32(x::Float32[32, 784]) begin\n"
        "    Dense(784 => 256, activation=relu)\n"
        "    Dense(256 => 10, activation=softmax)\n"
        "end\n",
        "(model mlp_b32 chain\n"
        "  (param x Float32 32 784)\n"
        "  (call Dense (=> 784 256) (kw activation relu))\n"
        "  (call Dense (=> 256 10) (kw activation softmax)))\n"),
    DUMP_CASE(bench_r3_resnet_block,
        "# R3: ResNet-18 basic block, 56x56x64, batch 1 (inference BatchNorm)\n"
        "@axiom function resnet_block(x::Float32[1, 56, 56, 64])\n"
        "    conv1 = Conv((3, 3), 64 => 64, pad=1, bias=false)\n"
        "    bn1   = BatchNorm(64)\n"
        "    conv2 = Conv((3, 3), 64 => 64, pad=1, bias=false)\n"
        "    bn2   = BatchNorm(64)\n"
        "    h = relu(bn1(conv1(x)))\n"
        "    return relu(bn2(conv2(h)) + x)\n"
        "end\n",
        "(model resnet_block function\n"
        "  (param x Float32 1 56 56 64)\n"
        "  (= conv1 (call Conv (tuple 3 3) (=> 64 64) (kw pad 1) (kw bias false)))\n"
        "  (= bn1 (call BatchNorm 64))\n"
        "  (= conv2 (call Conv (tuple 3 3) (=> 64 64) (kw pad 1) (kw bias false)))\n"
        "  (= bn2 (call BatchNorm 64))\n"
        "  (= h (call relu (call bn1 (call conv1 x))))\n"
        "  (return (call relu (+ (call bn2 (call conv2 h)) x))))\n"),
    DUMP_CASE(bench_r4_bert_layer,
        "# R4: Transformer encoder layer (BERT-base: d=768, 12 heads, FFN 3072, GELU, post-LN), seq 128, batch 1\n"
        "# Parameter names match torch.nn.TransformerEncoderLayer(768, 12, 3072, activation=\"gelu\", batch_first=True)\n"
        "@axiom function bert_layer(x::Float32[1, 128, 768])\n"
        "    self_attn = MultiHeadAttention(768 => 12)\n"
        "    linear1   = Dense(768 => 3072)\n"
        "    linear2   = Dense(3072 => 768)\n"
        "    norm1     = LayerNorm(768)\n"
        "    norm2     = LayerNorm(768)\n"
        "    h = norm1(x + self_attn(x))\n"
        "    return norm2(h + linear2(gelu(linear1(h))))\n"
        "end\n",
        "(model bert_layer function\n"
        "  (param x Float32 1 128 768)\n"
        "  (= self_attn (call MultiHeadAttention (=> 768 12)))\n"
        "  (= linear1 (call Dense (=> 768 3072)))\n"
        "  (= linear2 (call Dense (=> 3072 768)))\n"
        "  (= norm1 (call LayerNorm 768))\n"
        "  (= norm2 (call LayerNorm 768))\n"
        "  (= h (call norm1 (+ x (call self_attn x))))\n"
        "  (return (call norm2 (+ h (call linear2 (call gelu (call linear1 h)))))))\n"),
    DUMP_CASE(bench_r5_layernorm,
        "# R5: LayerNorm(768), batch 32\n"
        "@axiom layernorm(x::Float32[32, 768]) begin\n"
        "    LayerNorm(768)\n"
        "end\n",
        "(model layernorm chain\n"
        "  (param x Float32 32 768)\n"
        "  (call LayerNorm 768))\n"),
    DUMP_CASE(bench_r6_softmax,
        "# R6: softmax over 10000 classes, batch 32\n"
        "@axiom softmax_wide(x::Float32[32, 10000]) begin\n"
        "    softmax\n"
        "end\n",
        "(model softmax_wide chain\n"
        "  (param x Float32 32 10000)\n"
        "  softmax)\n"),

    /* docs/language.md#models: options, labels, bare activations, several inputs,
     * const dims, several models, a file without a final newline. */
    DUMP_CASE(chain_with_options_and_labels,
        "const N = 64\n"
        "@axiom backend=cuda dtype=Float16 mlp(x::Float32[N, 784], m::i64[N,]) begin\n"
        "    fc1 = Dense(784 => 256)\n"
        "    relu\n"
        "    Flatten()\n"
        "end\n"
        "@axiom function enc(x::Float32[1, 128, 2 * N])\n"
        "    return x, x\n"
        "end",
        "(const N 64)\n"
        "(model mlp chain\n"
        "  (option backend cuda)\n"
        "  (option dtype Float16)\n"
        "  (param x Float32 N 784)\n"
        "  (param m i64 N)\n"
        "  (= fc1 (call Dense (=> 784 256)))\n"
        "  relu\n"
        "  (call Flatten))\n"
        "(model enc function\n"
        "  (param x Float32 1 128 (* 2 N))\n"
        "  (return x x))\n"),
    DUMP_CASE(function_form_from_spec,
        "@axiom function resblock(x::Float32[1, 56, 56, 64])\n"
        "    conv1 = Conv((3, 3), 64 => 64, pad=1, bias=false)\n"
        "    h = x |> conv1 |> relu\n"
        "    h = x |> Dense(8 => 8)\n"
        "    return relu(h + x)\n"
        "end\n",
        "(model resblock function\n"
        "  (param x Float32 1 56 56 64)\n"
        "  (= conv1 (call Conv (tuple 3 3) (=> 64 64) (kw pad 1) (kw bias false)))\n"
        "  (= h (|> (|> x conv1) relu))\n"
        "  (= h (|> x (call Dense (=> 8 8))))\n"
        "  (return (call relu (+ h x))))\n"),
    DUMP_CASE(semicolons_and_blank_lines,
        "\n\n@axiom m(x::Float32[1, 4]) begin Dense(4 => 8); relu;; Dense(8 => 2)\n\n\nend\n\n",
        "(model m chain\n"
        "  (param x Float32 1 4)\n"
        "  (call Dense (=> 4 8))\n"
        "  relu\n"
        "  (call Dense (=> 8 2)))\n"),
    DUMP_CASE(begin_on_next_line,
        "@axiom m(x::Float32[1, 4])\nbegin\n    relu\nend\n",
        "(model m chain\n  (param x Float32 1 4)\n  relu)\n"),
    DUMP_CASE(empty_file, "", ""),
    DUMP_CASE(only_comments, "# nothing\n#= block\n =#\n", ""),

    /* Calls: positional, keyword after ',' or ';', trailing commas, nested. */
    DUMP_CASE(call_argument_forms,
        MODEL_HEAD
        "    softmax(x; dims=-1)\n"
        "    leaky_relu(x, alpha=0.01)\n"
        "    concat(a, b, c; dims=1, extra=2,)\n"
        "    f(; k=v)\n"
        "    g(a, b,)\n"
        "    h()\n"
        "    Dense(4 => 8)(x)\n"
        "end\n",
        "(model m chain\n"
        "  (param x Float32 1 4)\n"
        "  (call softmax x (kw dims -1))\n"
        "  (call leaky_relu x (kw alpha 0.01))\n"
        "  (call concat a b c (kw dims 1) (kw extra 2))\n"
        "  (call f (kw k v))\n"
        "  (call g a b)\n"
        "  (call h)\n"
        "  (call (call Dense (=> 4 8)) x))\n"),
    DUMP_CASE(tuples_and_parentheses,
        MODEL_HEAD
        "    reshape(x, (2, -1))\n"
        "    t = (x,)\n"
        "    t = ((1, 2,), (3,), (4))\n"
        "    t = (a + b) * 2\n"
        "end\n",
        "(model m chain\n"
        "  (param x Float32 1 4)\n"
        "  (call reshape x (tuple 2 -1))\n"
        "  (= t (tuple x))\n"
        "  (= t (tuple (tuple 1 2) (tuple 3) 4))\n"
        "  (= t (* (+ a b) 2)))\n"),
    /* Precedence: * / .* ./ over + -, all left-associative; |> below
     * arithmetic; => lowest and right-associative; unary minus tightest. */
    DUMP_CASE(operator_precedence,
        MODEL_HEAD
        "    a + b * c - d / e\n"
        "    a - b - c\n"
        "    a .* b ./ c\n"
        "    a + b |> f |> g\n"
        "    a => b => c |> f\n"
        "    -a * b\n"
        "    2.0 * -x\n"
        "end\n",
        "(model m chain\n"
        "  (param x Float32 1 4)\n"
        "  (- (+ a (* b c)) (/ d e))\n"
        "  (- (- a b) c)\n"
        "  (./ (.* a b) c)\n"
        "  (|> (|> (+ a b) f) g)\n"
        "  (=> a (=> b (|> c f)))\n"
        "  (* (neg a) b)\n"
        "  (* 2.0 (neg x)))\n"),
    DUMP_CASE(numbers_and_minus_folding,
        "const A = -1\n"
        "const B = -(1)\n"
        "const C = - 2.5\n"
        "const D = 1e-5\n"
        "const E = 1.0e-12\n"
        "const F = .5\n"
        "const G = 3.0\n"
        "const H = 9223372036854775807\n"
        "const I = 1E3\n"
        "const J = x - 1\n",
        "(const A -1)\n"
        "(const B (neg 1))\n"
        "(const C -2.5)\n"
        "(const D 1e-05)\n"
        "(const E 1e-12)\n"
        "(const F 0.5)\n"
        "(const G 3.0)\n"
        "(const H 9223372036854775807)\n"
        "(const I 1e+03)\n"
        "(const J (- x 1))\n"),
    /* docs/language.md#lexical-structure: newlines inside brackets and after an operator, |>,
     * ',' or '=>' continue the statement. */
    DUMP_CASE(continuation_rules,
        "@axiom function f(x::Float32[1,\n"
        "                             4])\n"
        "    h = Dense(4 =>\n"
        "              8,\n"
        "              activation=relu)(x) +\n"
        "        x |>\n"
        "        relu\n"
        "    y = h .*\n"
        "        2.0\n"
        "    return h,\n"
        "           y\n"
        "end\n",
        "(model f function\n"
        "  (param x Float32 1 4)\n"
        "  (= h (|> (+ (call (call Dense (=> 4 8) (kw activation relu)) x) x) relu))\n"
        "  (= y (.* h 2.0))\n"
        "  (return h y))\n"),
    DUMP_CASE(comments,
        "#= header #= nested =# still a comment =#\n"
        "@axiom m(x::Float32[1, 4]) begin  # trailing\n"
        "    Dense(4 => 8)  #= inline =#  # and a line comment\n"
        "    #= spans\n"
        "       lines =# relu\n"
        "    # relu6\n"
        "end\n",
        "(model m chain\n"
        "  (param x Float32 1 4)\n"
        "  (call Dense (=> 4 8))\n"
        "  relu)\n"),
    /* Julia's broadcast call f.(args) (docs/language.md#more-operators: max.(a, b)): a call
     * marked as such, its arguments continuing over newlines as in ( ). */
    DUMP_CASE(broadcast_call,
        "@axiom function f(a::Float32[1, 4])\n"
        "    h = max.(a,\n"
        "             2.0) .* relu.(a)\n"
        "    return clamp.(h, 0.0, 1.0; alpha=1)\n"
        "end\n",
        "(model f function\n"
        "  (param a Float32 1 4)\n"
        "  (= h (.* (call. max a 2.0) (call. relu a)))\n"
        "  (return (call. clamp h 0.0 1.0 (kw alpha 1))))\n"),
    DUMP_CASE(crlf_line_ends,
        "@axiom m(x::Float32[1, 4]) begin\r\n    relu\r\nend\r\n",
        "(model m chain\n  (param x Float32 1 4)\n  relu)\n"),
};

/* ---- locations -------------------------------------------------------------- */

static void assert_loc(ax_loc loc, int line, int col, int len)
{
    assert_int_equal(loc.line, line);
    assert_int_equal(loc.col, col);
    assert_int_equal(loc.len, len);
}

static void test_locations(void **state)
{
    parse_result *r = parse(
        "const N = -3\n"
        "@axiom dtype=Float32 function f(x::Float32[1, N])\n"
        "    fc = Dense(4 => 8;\n"
        "               bias=false)\n"
        "    return fc(x) + 1.5, x |> relu\n"
        "end\n");
    assert_non_null(r->file);
    assert_loc(r->file->consts[0].loc, 1, 7, 1);
    assert_loc(r->file->consts[0].value->loc, 1, 11, 2);          /* -3 */
    const ast_model *m = &r->file->models[0];
    assert_loc(m->loc, 2, 31, 1);
    assert_loc(m->opts[0].loc, 2, 8, 13);                          /* dtype=Float32 */
    assert_loc(m->params[0].loc, 2, 33, 1);
    assert_loc(m->params[0].type_loc, 2, 36, 7);
    assert_loc(m->params[0].dims[1]->loc, 2, 47, 1);
    const ast_stmt *s = m->stmts[0];
    assert_loc(s->loc, 3, 5, 45);                                   /* to the ')' on line 4 */
    assert_loc(s->name_loc, 3, 5, 2);
    const ast_node *call = s->value;
    assert_loc(call->loc, 3, 10, 40);
    assert_loc(call->callee->loc, 3, 10, 5);
    assert_loc(call->args[0]->loc, 3, 16, 6);                      /* 4 => 8 */
    assert_loc(call->args[1]->loc, 4, 16, 10);                     /* bias=false */
    const ast_stmt *ret = m->stmts[1];
    assert_loc(ret->loc, 5, 5, 29);
    assert_int_equal(ret->nrets, 2);
    assert_loc(ret->rets[0]->loc, 5, 12, 11);                      /* fc(x) + 1.5 */
    assert_loc(ret->rets[0]->lhs->loc, 5, 12, 5);
    assert_loc(ret->rets[1]->loc, 5, 25, 9);                       /* x |> relu */
    parse_free(r);
}

/* ---- diagnostics ------------------------------------------------------------ */

static const struct CMUnitTest diag_tests[] = {
    DIAG_CASE(unclosed_paren,
        MODEL_HEAD
        "    Dense(4 => 8\n"
        "    relu\n"
        "end\n",
        "t.ax:3:5: error: expected ')' to close '(' at 2:10\n"
        "    relu\n"
        "    ^~~~\n"),
    DIAG_CASE(unclosed_paren_at_eof,
        MODEL_HEAD
        "    Dense(4 => 8,\n",
        "t.ax:2:18: error: expected ')' to close '(' at 2:10\n"
        "    Dense(4 => 8,\n"
        "                 ^\n"),
    DIAG_CASE(mismatched_bracket,
        "@axiom g(x::Float32[1, 4) begin\n"
        "    relu\n"
        "end\n",
        "t.ax:1:25: error: expected ']' to close '[' at 1:20\n"
        "@axiom g(x::Float32[1, 4) begin\n"
        "                        ^\n"),
    DIAG_CASE(stray_end,
        MODEL_HEAD
        "    relu\n"
        "end\n"
        "end\n",
        "t.ax:4:1: error: expected '@axiom' or 'const' at top level, not 'end'\n"
        "end\n"
        "^~~\n"),
    DIAG_CASE(statement_at_top_level,
        "x\n"
        "Dense(3 => 4)\n",
        "t.ax:1:1: error: expected '@axiom' or 'const' at top level, not identifier 'x'\n"
        "x\n"
        "^\n"
        "t.ax:2:1: error: expected '@axiom' or 'const' at top level, not identifier 'Dense'\n"
        "Dense(3 => 4)\n"
        "^~~~~\n"),
    DIAG_CASE(missing_end_at_eof,
        MODEL_HEAD
        "    Dense(4 => 8)\n",
        "t.ax:2:18: error: expected 'end' to close 'begin' at 1:28\n"
        "    Dense(4 => 8)\n"
        "                 ^\n"),
    DIAG_CASE(missing_end_before_next_model,
        "@axiom function f(x::Float32[1, 4])\n"
        "    return x\n"
        "@axiom g(x::Float32[1, 4]) begin\n"
        "    relu\n"
        "end\n",
        "t.ax:3:1: error: expected 'end' to close 'function' at 1:8\n"
        "@axiom g(x::Float32[1, 4]) begin\n"
        "^~~~~~\n"),
    DIAG_CASE(unterminated_block_comment,
        MODEL_HEAD
        "    relu\n"
        "end\n"
        "#= open #= nested =# still open\n",
        "t.ax:4:1: error: unterminated block comment\n"
        "#= open #= nested =# still open\n"
        "^~\n"),
    DIAG_CASE(unexpected_character,
        MODEL_HEAD
        "    relu $\n"
        "\ty = \x01 + \xc3\xa9\n"
        "end\n",
        "t.ax:2:10: error: unexpected character '$'\n"
        "    relu $\n"
        "         ^\n"
        "t.ax:3:6: error: unexpected character '\\x01'\n"
        "\ty = \x01 + \xc3\xa9\n"
        "\t    ^\n"
        "t.ax:3:10: error: unexpected character '\xc3\xa9'\n"
        "\ty = \x01 + \xc3\xa9\n"
        "\t        ^~\n"),
    DIAG_CASE(unexpected_token_with_alternatives,
        "@axiom m(x Float32[1, 4]) begin\n"
        "end\n",
        "t.ax:1:12: error: unexpected identifier 'Float32', expected '::'\n"
        "@axiom m(x Float32[1, 4]) begin\n"
        "           ^~~~~~~\n"),
    DIAG_CASE(two_statements_on_one_line,
        MODEL_HEAD
        "    Dense(4 => 8) relu\n"
        "end\n",
        "t.ax:2:19: error: unexpected identifier 'relu', expected newline or ';'\n"
        "    Dense(4 => 8) relu\n"
        "                  ^~~~\n"),
    DIAG_CASE(newline_ends_a_complete_statement,
        MODEL_HEAD
        "    x\n"
        "    + y\n"
        "end\n",
        "t.ax:3:5: error: unexpected '+'\n"
        "    + y\n"
        "    ^\n"),
    DIAG_CASE(return_without_value,
        "@axiom function f(x::Float32[1, 4])\n"
        "    return\n"
        "end\n",
        "t.ax:2:11: error: unexpected newline\n"
        "    return\n"
        "          ^\n"),
    DIAG_CASE(return_in_chain,
        MODEL_HEAD
        "    relu\n"
        "    return x\n"
        "end\n",
        "t.ax:3:5: error: 'return' is not allowed in a 'begin ... end' chain: its last statement is the output\n"
        "    return x\n"
        "    ^~~~~~~~\n"),
    DIAG_CASE(bad_numbers,
        "const A = 99999999999999999999\n"
        "const B = 1e999\n"
        "const C = 2x\n",
        "t.ax:1:11: error: integer literal '99999999999999999999' does not fit in 64 bits\n"
        "const A = 99999999999999999999\n"
        "          ^~~~~~~~~~~~~~~~~~~~\n"
        "t.ax:2:11: error: number '1e999' is out of range\n"
        "const B = 1e999\n"
        "          ^~~~~\n"
        "t.ax:3:11: error: invalid number '2x'\n"
        "const C = 2x\n"
        "          ^~\n"),
    DIAG_CASE(unknown_macro,
        "@axoim mlp(x::Float32[1, 4]) begin\n"
        "    relu\n"
        "end\n"
        "@model m(x::Float32[1, 4]) begin\n"
        "end\n",
        "t.ax:1:1: error: unknown macro '@axoim'; did you mean '@axiom'?\n"
        "@axoim mlp(x::Float32[1, 4]) begin\n"
        "^~~~~~\n"
        "t.ax:4:1: error: unknown macro '@model' (models start with '@axiom')\n"
        "@model m(x::Float32[1, 4]) begin\n"
        "^~~~~~\n"),
    /* Recovery: one message per broken statement, then parsing goes on,
     * including into the next model. */
    DIAG_CASE(several_errors_in_one_file,
        "const = 3\n"
        "@axiom m(x::Float32[1, 4]) begin\n"
        "    Dense(4 => ,)\n"
        "    f(a; 3)\n"
        "    relu\n"
        "end\n"
        "@axiom function g(x::Float32[1, 4])\n"
        "    y = (1, 2\n"
        "    return y\n"
        "end\n",
        "t.ax:1:7: error: unexpected '=', expected identifier\n"
        "const = 3\n"
        "      ^\n"
        "t.ax:3:16: error: unexpected ','\n"
        "    Dense(4 => ,)\n"
        "               ^\n"
        "t.ax:4:10: error: unexpected number '3', expected identifier\n"
        "    f(a; 3)\n"
        "         ^\n"
        "t.ax:9:5: error: expected ')' to close '(' at 8:9\n"
        "    return y\n"
        "    ^~~~~~\n"),
};

static void test_error_limit_applies(void **state)
{
    ax_buf src = {0};
    ax_buf_puts(&src, MODEL_HEAD);
    for (int i = 0; i < 30; i++)
        ax_buf_puts(&src, "    relu relu\n");
    ax_buf_puts(&src, "end\n");
    parse_result *r = parse(src.data);
    assert_null(r->file);
    assert_int_equal(r->ctx->errors, 30);
    assert_non_null(strstr(r->diags, "t.ax:21:10: error: unexpected identifier 'relu'"));
    assert_null(strstr(r->diags, "t.ax:22:10"));
    assert_non_null(strstr(r->diags, "axc: too many errors, stopping\n"));
    parse_free(r);
    ax_buf_free(&src);
}

static void test_deep_nesting_is_an_error(void **state)
{
    ax_buf src = {0};
    ax_buf_puts(&src, "const A = ");
    for (int i = 0; i < 20000; i++)
        ax_buf_puts(&src, "(");
    ax_buf_puts(&src, "1\n");
    parse_result *r = parse(src.data);
    assert_null(r->file);
    assert_non_null(strstr(r->diags, "error: expression nested too deeply"));
    parse_free(r);
    ax_buf_free(&src);
}

int main(void)
{
    static const struct CMUnitTest other_tests[] = {
        cmocka_unit_test(test_locations),
        cmocka_unit_test(test_error_limit_applies),
        cmocka_unit_test(test_deep_nesting_is_an_error),
    };
    int failed = 0;
    failed += _cmocka_run_group_tests("parser_dump", dump_tests,
                                      sizeof dump_tests / sizeof dump_tests[0], NULL, NULL);
    failed += _cmocka_run_group_tests("parser_diagnostics", diag_tests,
                                      sizeof diag_tests / sizeof diag_tests[0], NULL, NULL);
    failed += cmocka_run_group_tests(other_tests, NULL, NULL);
    return failed;
}
