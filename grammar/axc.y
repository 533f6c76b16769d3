/* axc.y — the grammar of the .ax language (docs/language.md#lexical-structure, #constants, #models), producing the
 * tree of ast.h.  Pure, reentrant, with locations; the scanner is axc.l.
 *
 * Error handling: syntax errors are reported through ax_diag with readable
 * token names (never bison's internal ones) and the parser recovers at the
 * next statement (`error sep`), or, for a broken model header, at the
 * model's `end`, so one run reports several errors.  ast_parse() returns
 * NULL when anything was reported.
 *
 * Locations carry byte offsets besides line/column so that every node's
 * span covers the whole construct, even across lines (the diagnostic
 * printer clips a multi-line span at the end of its first line). */
%define api.pure full
%define api.prefix {axc_yy}
%define api.location.type {axc_span}
%define parse.error custom
%locations
%lex-param   { yyscan_t scanner }
%parse-param { yyscan_t scanner } { axc_parser *p }
%initial-action {
    @$.first_line = @$.last_line = 1;
    @$.first_column = @$.last_column = 1;
    @$.first_off = @$.last_off = 0;
}

%code requires {
#include <stdbool.h>
#include <stdint.h>

#include "ast.h"

#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif

/* A token or rule location: bison's four line/column fields plus the byte
 * offsets [first_off, last_off) into the source. */
typedef struct axc_span {
    int first_line, first_column, last_line, last_column;
    int first_off, last_off;
} axc_span;
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                   \
    do {                                                              \
        if (N) {                                                      \
            (Cur).first_line = YYRHSLOC(Rhs, 1).first_line;           \
            (Cur).first_column = YYRHSLOC(Rhs, 1).first_column;       \
            (Cur).first_off = YYRHSLOC(Rhs, 1).first_off;             \
            (Cur).last_line = YYRHSLOC(Rhs, N).last_line;             \
            (Cur).last_column = YYRHSLOC(Rhs, N).last_column;         \
            (Cur).last_off = YYRHSLOC(Rhs, N).last_off;               \
        } else {                                                      \
            (Cur).first_line = (Cur).last_line = YYRHSLOC(Rhs, 0).last_line;       \
            (Cur).first_column = (Cur).last_column = YYRHSLOC(Rhs, 0).last_column; \
            (Cur).first_off = (Cur).last_off = YYRHSLOC(Rhs, 0).last_off;          \
        }                                                             \
    } while (0)

/* An open '(' or '[' the scanner has not yet seen closed. */
typedef struct axc_bracket {
    char open;
    ax_loc loc;
} axc_bracket;

/* State shared by the parser actions and the scanner (its yyextra). */
typedef struct axc_parser {
    ax_ctx *ctx;
    ast_file *file;
    int consts_cap, models_cap, blocks_cap;
    /* scanner position: 1-based line and column, 0-based byte offset */
    int line, col, off;
    int prev_token;             /* last token returned, 0 at the start */
    bool eof_newline_sent;
    axc_bracket *brackets;      /* stack of open brackets */
    int nbrackets, brackets_cap;
    int comment_depth;          /* nesting of #= =# */
    ax_loc comment_loc;         /* the outermost open #= */
    const char *block_word;     /* "begin"/"function" awaiting its 'end', or NULL */
    int errors_at_model;        /* ctx->errors when the current model began */
    ax_loc block_loc;
} axc_parser;

/* A growable list of pointers in the arena, for the parser's sequences. */
typedef struct axc_vec {
    void **items;
    int n, cap;
} axc_vec;

static inline ax_loc axc_loc(axc_span s)
{
    ax_loc l = {s.first_line, s.first_column, s.last_off - s.first_off};
    if (l.len < 1)
        l.len = 1;
    return l;
}

/* Tree constructors (ast.c), used by the grammar actions only. */
axc_vec *axc_vec_push(ax_arena *a, axc_vec *v, void *item);
ast_node *ast_new_node(ax_arena *a, ast_kind kind, ax_loc loc);
ast_node *ast_new_int(ax_arena *a, ax_loc loc, int64_t v);
ast_node *ast_new_float(ax_arena *a, ax_loc loc, double v);
ast_node *ast_new_ident(ax_arena *a, ax_loc loc, const char *name);
ast_node *ast_new_binary(ax_arena *a, ast_kind kind, int op, ax_loc loc, ast_node *lhs, ast_node *rhs);
ast_node *ast_new_list(ax_arena *a, ast_kind kind, ax_loc loc, ast_node *callee, axc_vec *args);
ast_node *ast_new_kwarg(ax_arena *a, ax_loc loc, const char *name, ast_node *value);
ast_node *ast_new_neg(ax_arena *a, ax_loc loc, ast_node *operand, bool operand_is_bare);
ast_stmt *ast_new_stmt(ax_arena *a, ast_stmt_kind kind, ax_loc loc);
void **axc_vec_array(ax_arena *a, const axc_vec *v, int *n);
}

%code provides {
int axc_yylex(AXC_YYSTYPE *lval, AXC_YYLTYPE *lloc, yyscan_t scanner);
void axc_yyerror(AXC_YYLTYPE *loc, yyscan_t scanner, axc_parser *p, const char *msg);
}

%code {
#include <limits.h>
#include <string.h>

static ax_arena *arena_of(axc_parser *p) { return p->ctx->arena; }
static const char *source_text(axc_parser *p, axc_span s);
static void add_const(axc_parser *p, const char *name, ax_loc loc, ast_node *value);
static ast_node *bounded(axc_parser *p, ast_node *e);
static void add_model(axc_parser *p, ast_model *m, axc_vec *stmts);
static ast_model *new_model(axc_parser *p, axc_vec *opts, const char *name, ax_loc loc,
                            axc_vec *params, bool is_function);
static ast_model *new_block(axc_parser *p, axc_vec *opts, const char *kind, ax_loc kind_loc,
                            const char *name, ax_loc loc, axc_vec *inputs, axc_vec *kws);
static ast_param *new_block_input(axc_parser *p, const char *name, ax_loc loc);
static ast_const *new_block_kw(axc_parser *p, const char *name, ax_loc loc, ast_node *value);
static ast_stmt *new_for(axc_parser *p, ax_loc loc, const char *var, ax_loc var_loc,
                         const char *in, ax_loc in_loc, ast_node *iter, axc_vec *body);
static ast_node *new_slice(axc_parser *p, ax_loc loc, ast_node *lo, ast_node *hi, ast_node *step);
}

%union {
    const char *str;
    int64_t ival;
    double fval;
    ast_node *node;
    ast_stmt *stmt;
    ast_param *param;
    ast_option *option;
    ast_model *model;
    ast_const *bkw;
    axc_vec *vec;
}

%token NEWLINE
%token <str> IDENT
%token <ival> INT
%token <fval> FLOAT
%token KW_AXIOM KW_FUNCTION KW_BEGIN KW_END KW_RETURN KW_CONST KW_FOR
%token PIPE ARROW DOTMUL DOTDIV DOTPOW DCOLON DOTCALL

%type <node> expr postfix primary arg kwarg for_iter index_item slice_bound
%type <stmt> stmt
%type <param> param
%type <option> option
%type <model> model_head
%type <vec> options params param_list dims expr_list body tuple_items call_args arg_list kwarg_list
%type <vec> block_inputs block_input_list block_kws block_kw_list index_list name_list
%type <param> block_input
%type <bkw> block_kw
%type <str> option_value

%right ARROW
%left PIPE
%left '+' '-'
%left '*' '/' DOTMUL DOTDIV
%right DOTPOW
%precedence UMINUS

%%

file
    : %empty
    | file top_item
    ;

top_item
    : sep
    | KW_CONST IDENT '=' expr sep   { add_const(p, $2, axc_loc(@2), bounded(p, $4)); }
    | model_head body KW_END        { add_model(p, $1, $2); }
    | KW_AXIOM error KW_END         { yyerrok; }
    | model_head body error KW_END  { yyerrok; }
    | error sep                     { yyerrok; }
    ;

sep
    : NEWLINE
    | ';'
    ;

newlines
    : %empty
    | newlines NEWLINE
    ;

model_head
    : KW_AXIOM options IDENT '(' params ')' newlines KW_BEGIN
        { $$ = new_model(p, $2, $3, axc_loc(@3), $5, false); }
    | KW_AXIOM options KW_FUNCTION IDENT '(' params ')'
        { $$ = new_model(p, $2, $4, axc_loc(@4), $6, true); }
    | KW_AXIOM options IDENT KW_FUNCTION IDENT '(' block_inputs block_kws ')'
        { $$ = new_block(p, $2, $3, axc_loc(@3), $5, axc_loc(@5), $7, $8); }
    ;

block_inputs
    : %empty                            { $$ = NULL; }
    | block_input_list
    | block_input_list ','
    ;

block_input_list
    : block_input                       { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | block_input_list ',' block_input  { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

block_input
    : IDENT                             { $$ = new_block_input(p, $1, axc_loc(@1)); }
    | param
    ;

block_kws
    : %empty                            { $$ = NULL; }
    | ';' block_kw_list                 { $$ = $2; }
    | ';' block_kw_list ','             { $$ = $2; }
    ;

block_kw_list
    : block_kw                          { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | block_kw_list ',' block_kw        { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

block_kw
    : IDENT             { $$ = new_block_kw(p, $1, axc_loc(@1), NULL); }
    | IDENT '=' expr    { $$ = new_block_kw(p, $1, axc_loc(@1), $3); }
    ;

options
    : %empty            { $$ = NULL; }
    | options option    { $$ = axc_vec_push(arena_of(p), $1, $2); }
    ;

option
    : IDENT '=' option_value
        {
            $$ = ax_alloc(arena_of(p), sizeof *$$);
            $$->key = $1;
            $$->value = $3;
            $$->loc = axc_loc(@$);
        }
    ;

option_value
    : IDENT     { $$ = $1; }
    | INT       { $$ = source_text(p, @1); }
    | FLOAT     { $$ = source_text(p, @1); }
    ;

params
    : %empty                { $$ = NULL; }
    | param_list
    | param_list ','
    ;

param_list
    : param                 { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | param_list ',' param  { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

param
    : IDENT DCOLON IDENT '[' dims ']'
        {
            $$ = ax_alloc(arena_of(p), sizeof *$$);
            $$->name = $1;
            $$->loc = axc_loc(@1);
            $$->type = $3;
            $$->type_loc = axc_loc(@3);
            $$->dims = (ast_node **)axc_vec_array(arena_of(p), $5, &$$->ndims);
        }
    ;

body
    : %empty            { $$ = NULL; }
    | body sep
    | body stmt sep     { $$ = axc_vec_push(arena_of(p), $1, $2); }
    | body error sep    { $$ = $1; yyerrok; }
    ;

stmt
    : expr
        {
            $$ = ast_new_stmt(arena_of(p), AST_STMT_EXPR, axc_loc(@$));
            $$->value = bounded(p, $1);
        }
    | IDENT '=' expr
        {
            $$ = ast_new_stmt(arena_of(p), AST_STMT_ASSIGN, axc_loc(@$));
            $$->name = $1;
            $$->name_loc = axc_loc(@1);
            $$->value = bounded(p, $3);
        }
    | IDENT ',' name_list '=' expr
        {
            $$ = ast_new_stmt(arena_of(p), AST_STMT_UNPACK, axc_loc(@$));
            axc_vec *names = axc_vec_push(arena_of(p), NULL, ast_new_ident(arena_of(p), axc_loc(@1), $1));
            for (int i = 0; i < $3->n; i++)
                names = axc_vec_push(arena_of(p), names, $3->items[i]);
            $$->targets = (ast_node **)axc_vec_array(arena_of(p), names, &$$->ntargets);
            $$->value = $5;
        }
    | KW_RETURN expr_list
        {
            $$ = ast_new_stmt(arena_of(p), AST_STMT_RETURN, axc_loc(@$));
            $$->rets = (ast_node **)axc_vec_array(arena_of(p), $2, &$$->nrets);
        }
    | KW_FOR IDENT IDENT for_iter sep body KW_END
        { $$ = new_for(p, axc_loc(@$), $2, axc_loc(@2), $3, axc_loc(@3), $4, $6); }
    ;

for_iter
    : expr
    | expr ':' expr     { $$ = ast_new_binary(arena_of(p), AST_RANGE, 0, axc_loc(@$), $1, $3); }
    ;

dims
    : expr_list
    | expr_list ','
    ;

name_list
    : IDENT                 { $$ = axc_vec_push(arena_of(p), NULL, ast_new_ident(arena_of(p), axc_loc(@1), $1)); }
    | name_list ',' IDENT   { $$ = axc_vec_push(arena_of(p), $1, ast_new_ident(arena_of(p), axc_loc(@3), $3)); }
    ;

expr_list
    : expr                  { $$ = axc_vec_push(arena_of(p), NULL, bounded(p, $1)); }
    | expr_list ',' expr    { $$ = axc_vec_push(arena_of(p), $1, bounded(p, $3)); }
    ;

expr
    : expr ARROW expr   { $$ = ast_new_binary(arena_of(p), AST_PAIR, 0, axc_loc(@$), $1, $3); }
    | expr PIPE expr    { $$ = ast_new_binary(arena_of(p), AST_PIPE, 0, axc_loc(@$), $1, $3); }
    | expr '+' expr     { $$ = ast_new_binary(arena_of(p), AST_BINOP, '+', axc_loc(@$), $1, $3); }
    | expr '-' expr     { $$ = ast_new_binary(arena_of(p), AST_BINOP, '-', axc_loc(@$), $1, $3); }
    | expr '*' expr     { $$ = ast_new_binary(arena_of(p), AST_BINOP, '*', axc_loc(@$), $1, $3); }
    | expr '/' expr     { $$ = ast_new_binary(arena_of(p), AST_BINOP, '/', axc_loc(@$), $1, $3); }
    | expr DOTMUL expr  { $$ = ast_new_binary(arena_of(p), AST_BINOP, AST_OP_DOTMUL, axc_loc(@$), $1, $3); }
    | expr DOTPOW expr  { $$ = ast_new_binary(arena_of(p), AST_BINOP, AST_OP_DOTPOW, axc_loc(@$), $1, $3); }
    | expr DOTDIV expr  { $$ = ast_new_binary(arena_of(p), AST_BINOP, AST_OP_DOTDIV, axc_loc(@$), $1, $3); }
    | '-' expr %prec UMINUS
        { $$ = ast_new_neg(arena_of(p), axc_loc(@$), $2, $2->loc.col == @2.first_column && $2->loc.line == @2.first_line); }
    | postfix
    ;

postfix
    : primary
    | postfix '(' call_args ')'
        { $$ = ast_new_list(arena_of(p), AST_CALL, axc_loc(@$), $1, $3); }
    | postfix DOTCALL call_args ')'     /* f.(args): a broadcast call */
        { $$ = ast_new_list(arena_of(p), AST_CALL, axc_loc(@$), $1, $3); $$->op = AST_OP_DOTCALL; }
    | postfix '[' index_list ']'
        { $$ = ast_new_list(arena_of(p), AST_INDEX, axc_loc(@$), $1, $3); }
    ;

index_list
    : index_item                    { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | index_list ',' index_item     { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

index_item
    : expr
    | slice_bound ':' slice_bound   { $$ = new_slice(p, axc_loc(@$), $1, $3, NULL); }
    | slice_bound ':' slice_bound ':' slice_bound
        { $$ = new_slice(p, axc_loc(@$), $1, $3, $5); }
    | slice_bound DCOLON slice_bound    /* a::s, the '::' of a type annotation */
        { $$ = new_slice(p, axc_loc(@$), $1, NULL, $3); }
    ;

slice_bound
    : %empty    { $$ = NULL; }
    | expr
    ;

primary
    : IDENT                     { $$ = ast_new_ident(arena_of(p), axc_loc(@$), $1); }
    | INT                       { $$ = ast_new_int(arena_of(p), axc_loc(@$), $1); }
    | FLOAT                     { $$ = ast_new_float(arena_of(p), axc_loc(@$), $1); }
    | '(' expr ')'              { $$ = $2; }
    | '(' expr ',' ')'
        { $$ = ast_new_list(arena_of(p), AST_TUPLE, axc_loc(@$), NULL, axc_vec_push(arena_of(p), NULL, $2)); }
    | '(' tuple_items ')'       { $$ = ast_new_list(arena_of(p), AST_TUPLE, axc_loc(@$), NULL, $2); }
    | '(' tuple_items ',' ')'   { $$ = ast_new_list(arena_of(p), AST_TUPLE, axc_loc(@$), NULL, $2); }
    | '[' expr KW_FOR IDENT IDENT for_iter ']'
        {
            if (strcmp($5, "in") != 0)
                ax_error(p->ctx, axc_loc(@5), "expected 'in' after the loop variable, not '%s'", $5);
            $$ = ast_new_binary(arena_of(p), AST_COMPREHENSION, 0, axc_loc(@$), $2, $6);
            $$->name = $4;
        }
    ;

tuple_items
    : expr ',' expr
        { $$ = axc_vec_push(arena_of(p), axc_vec_push(arena_of(p), NULL, $1), $3); }
    | tuple_items ',' expr      { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

call_args
    : %empty                            { $$ = NULL; }
    | arg_list
    | arg_list ','
    | arg_list ';' kwarg_list           { $$ = $1; for (int i = 0; i < $3->n; i++) $$ = axc_vec_push(arena_of(p), $$, $3->items[i]); }
    | arg_list ';' kwarg_list ','       { $$ = $1; for (int i = 0; i < $3->n; i++) $$ = axc_vec_push(arena_of(p), $$, $3->items[i]); }
    | ';' kwarg_list                    { $$ = $2; }
    | ';' kwarg_list ','                { $$ = $2; }
    ;

arg_list
    : arg                   { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | arg_list ',' arg      { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

arg
    : expr
    | kwarg
    ;

kwarg_list
    : kwarg                 { $$ = axc_vec_push(arena_of(p), NULL, $1); }
    | kwarg_list ',' kwarg  { $$ = axc_vec_push(arena_of(p), $1, $3); }
    ;

kwarg
    : IDENT '=' expr        { $$ = ast_new_kwarg(arena_of(p), axc_loc(@$), $1, $3); }
    ;

%%

#include "axc.lex.h"

/* The source text a location covers, copied into the arena. */
static const char *source_text(axc_parser *p, axc_span s)
{
    return ax_strndup(arena_of(p), p->ctx->src + s.first_off, (size_t)(s.last_off - s.first_off));
}

/* e, after reporting it when it is nested deeper than AST_MAX_DEPTH (a
 * statement, constant or dimension is a whole expression; everything
 * inside it counts in its depth). */
static ast_node *bounded(axc_parser *p, ast_node *e)
{
    if (e && e->depth > AST_MAX_DEPTH)
        ax_error(p->ctx, e->loc, "expression nested too deeply (%d levels; at most %d are allowed)",
                 e->depth, AST_MAX_DEPTH);
    return e;
}

static void add_const(axc_parser *p, const char *name, ax_loc loc, ast_node *value)
{
    ast_file *f = p->file;
    if (f->nconsts == p->consts_cap) {
        p->consts_cap = p->consts_cap ? 2 * p->consts_cap : 8;
        ast_const *grown = ax_alloc(arena_of(p), (size_t)p->consts_cap * sizeof *grown);
        if (f->nconsts)
            memcpy(grown, f->consts, (size_t)f->nconsts * sizeof *grown);
        f->consts = grown;
    }
    ast_const *c = &f->consts[f->nconsts++];
    c->name = name;
    c->loc = loc;
    c->value = value;
}

/* Copies a vector of pointers to structs into an array of the structs. */
static void *vec_to_structs(axc_parser *p, axc_vec *v, size_t size, int *n)
{
    *n = v ? v->n : 0;
    if (!*n)
        return NULL;
    char *out = ax_alloc(arena_of(p), (size_t)*n * size);
    for (int i = 0; i < *n; i++)
        memcpy(out + (size_t)i * size, v->items[i], size);
    return out;
}

static ast_model *new_model(axc_parser *p, axc_vec *opts, const char *name, ax_loc loc,
                            axc_vec *params, bool is_function)
{
    p->errors_at_model = p->ctx->errors;
    ast_model *m = ax_alloc(arena_of(p), sizeof *m);
    m->name = name;
    m->loc = loc;
    m->is_function = is_function;
    m->opts = vec_to_structs(p, opts, sizeof(ast_option), &m->nopts);
    m->params = vec_to_structs(p, params, sizeof(ast_param), &m->nparams);
    return m;
}

/* Attaches the body and appends the model.  A chain's value is its last
 * statement, so `return` there is a located error -- unless the model
 * already had syntax errors: then its body may have swallowed the next
 * model (a missing 'end'), and the 'return' is that model's. */
static ast_param *new_block_input(axc_parser *p, const char *name, ax_loc loc)
{
    ast_param *in = ax_alloc(arena_of(p), sizeof *in);
    in->name = name;
    in->loc = loc;
    return in;
}

static ast_const *new_block_kw(axc_parser *p, const char *name, ax_loc loc, ast_node *value)
{
    ast_const *c = ax_alloc(arena_of(p), sizeof *c);
    c->name = name;
    c->loc = loc;
    c->value = value;
    return c;
}

/* `@axiom block function NAME(inputs; params)`: kind must be the word block. */
static ast_model *new_block(axc_parser *p, axc_vec *opts, const char *kind, ax_loc kind_loc,
                            const char *name, ax_loc loc, axc_vec *inputs, axc_vec *kws)
{
    if (strcmp(kind, "block") != 0)
        ax_error(p->ctx, kind_loc, "unknown model kind '%s' (write '@axiom block function ...' "
                 "for a block)", kind);
    if (opts)
        ax_error(p->ctx, ((ast_option *)opts->items[0])->loc,
                 "a block takes no options (it uses the model's)");
    ast_model *m = new_model(p, NULL, name, loc, inputs, true);
    m->is_block = true;
    m->kwparams = vec_to_structs(p, kws, sizeof(ast_const), &m->nkwparams);
    return m;
}

static ast_stmt *new_for(axc_parser *p, ax_loc loc, const char *var, ax_loc var_loc,
                         const char *in, ax_loc in_loc, ast_node *iter, axc_vec *body)
{
    if (strcmp(in, "in") != 0)
        ax_error(p->ctx, in_loc, "expected 'in' after the loop variable, not '%s'", in);
    ast_stmt *s = ast_new_stmt(arena_of(p), AST_STMT_FOR, loc);
    s->name = var;
    s->name_loc = var_loc;
    s->value = iter;
    s->body = (ast_stmt **)axc_vec_array(arena_of(p), body, &s->nbody);
    return s;
}

static ast_node *new_slice(axc_parser *p, ax_loc loc, ast_node *lo, ast_node *hi, ast_node *step)
{
    ast_node *n = ast_new_binary(arena_of(p), AST_SLICE, 0, loc, lo, hi);
    n->step = step;
    return n;
}

static void add_model(axc_parser *p, ast_model *m, axc_vec *stmts)
{
    m->stmts = (ast_stmt **)axc_vec_array(arena_of(p), stmts, &m->nstmts);
    bool clean = p->ctx->errors == p->errors_at_model;
    for (int i = 0; i < m->nstmts && clean; i++) {
        if (m->is_function || (m->stmts[i]->kind != AST_STMT_RETURN && m->stmts[i]->kind != AST_STMT_UNPACK))
            continue;
        if (m->stmts[i]->kind == AST_STMT_UNPACK)
            ax_error(p->ctx, m->stmts[i]->loc, "'a, b = ...' is not allowed in a 'begin ... end' "
                     "chain: each statement there takes one value (use the function form)");
        else
            ax_error(p->ctx, m->stmts[i]->loc,
                     "'return' is not allowed in a 'begin ... end' chain: its last statement is the output");
    }
    ast_file *f = p->file;
    if (m->is_block) {
        if (f->nblocks == p->blocks_cap) {
            p->blocks_cap = p->blocks_cap ? 2 * p->blocks_cap : 4;
            ast_model *grown = ax_alloc(arena_of(p), (size_t)p->blocks_cap * sizeof *grown);
            if (f->nblocks)
                memcpy(grown, f->blocks, (size_t)f->nblocks * sizeof *grown);
            f->blocks = grown;
        }
        f->blocks[f->nblocks++] = *m;
        return;
    }
    if (f->nmodels == p->models_cap) {
        p->models_cap = p->models_cap ? 2 * p->models_cap : 4;
        ast_model *grown = ax_alloc(arena_of(p), (size_t)p->models_cap * sizeof *grown);
        if (f->nmodels)
            memcpy(grown, f->models, (size_t)f->nmodels * sizeof *grown);
        f->models = grown;
    }
    f->models[f->nmodels++] = *m;
}

/* ---- syntax error messages ---------------------------------------------- */

/* How a token kind reads in a message (never bison's internal names). */
static const char *token_words(yysymbol_kind_t kind)
{
    switch (kind) {
    case YYSYMBOL_YYEOF: return "end of file";
    case YYSYMBOL_NEWLINE: return "newline";
    case YYSYMBOL_IDENT: return "identifier";
    case YYSYMBOL_INT: case YYSYMBOL_FLOAT: return "number";
    case YYSYMBOL_KW_AXIOM: return "'@axiom'";
    case YYSYMBOL_KW_FUNCTION: return "'function'";
    case YYSYMBOL_KW_BEGIN: return "'begin'";
    case YYSYMBOL_KW_END: return "'end'";
    case YYSYMBOL_KW_RETURN: return "'return'";
    case YYSYMBOL_KW_CONST: return "'const'";
    case YYSYMBOL_KW_FOR: return "'for'";
    case YYSYMBOL_PIPE: return "'|>'";
    case YYSYMBOL_ARROW: return "'=>'";
    case YYSYMBOL_DOTMUL: return "'.*'";
    case YYSYMBOL_DOTDIV: return "'./'";
    case YYSYMBOL_DOTPOW: return "'.^'";
    case YYSYMBOL_DCOLON: return "'::'";
    case YYSYMBOL_DOTCALL: return "'.('";
    default: return yysymbol_name(kind);   /* single characters: "'('" */
    }
}

static bool is_expected(const yysymbol_kind_t *expected, int n, yysymbol_kind_t kind)
{
    for (int i = 0; i < n; i++)
        if (expected[i] == kind)
            return true;
    return false;
}

/* "identifier 'foo'", "number '3'", or just the kind's words. */
static void describe_found(axc_parser *p, yysymbol_kind_t kind, const axc_span *loc, ax_buf *msg)
{
    if (kind == YYSYMBOL_IDENT || kind == YYSYMBOL_INT || kind == YYSYMBOL_FLOAT)
        ax_buf_printf(msg, "%s '%.*s'", token_words(kind), loc->last_off - loc->first_off,
                      p->ctx->src + loc->first_off);
    else
        ax_buf_puts(msg, token_words(kind));
}

/* ", expected A, B or C" when there are few enough alternatives to help. */
static void describe_expected(const yysymbol_kind_t *expected, int n, ax_buf *msg)
{
    const char *words[4];
    int nwords = 0;
    for (int i = 0; i < n; i++) {
        const char *w = token_words(expected[i]);
        bool seen = false;
        for (int j = 0; j < nwords; j++)
            seen = seen || strcmp(words[j], w) == 0;
        if (seen)
            continue;
        if (nwords == 3)
            return;
        words[nwords++] = w;
    }
    for (int i = 0; i < nwords; i++)
        ax_buf_printf(msg, "%s%s", i == 0 ? ", expected " : i == nwords - 1 ? " or " : ", ", words[i]);
}

/* The most helpful message: an unclosed bracket or block first, then what
 * the top level accepts, else "unexpected X[, expected ...]". */
static void syntax_message(axc_parser *p, yysymbol_kind_t found, const axc_span *loc,
                           const yysymbol_kind_t *expected, int n, ax_buf *msg)
{
    if (p->nbrackets > 0) {
        const axc_bracket *b = &p->brackets[p->nbrackets - 1];
        yysymbol_kind_t closer = YYTRANSLATE(b->open == '(' ? ')' : ']');
        if (found != closer && is_expected(expected, n, closer)) {
            ax_buf_printf(msg, "expected '%c' to close '%c' at %d:%d", b->open == '(' ? ')' : ']',
                          b->open, b->loc.line, b->loc.col);
            return;
        }
    }
    if (p->block_word && (found == YYSYMBOL_YYEOF || found == YYSYMBOL_KW_AXIOM)
        && is_expected(expected, n, YYSYMBOL_KW_END)) {
        ax_buf_printf(msg, "expected 'end' to close '%s' at %d:%d", p->block_word,
                      p->block_loc.line, p->block_loc.col);
        return;
    }
    if (is_expected(expected, n, YYSYMBOL_KW_AXIOM) && is_expected(expected, n, YYSYMBOL_KW_CONST)) {
        ax_buf_puts(msg, "expected '@axiom' or 'const' at top level, not ");   /* only there */
        describe_found(p, found, loc, msg);
        return;
    }
    ax_buf_puts(msg, "unexpected ");
    describe_found(p, found, loc, msg);
    describe_expected(expected, n, msg);
}

static int yyreport_syntax_error(const yypcontext_t *yyctx, yyscan_t scanner, axc_parser *p)
{
    yysymbol_kind_t expected[YYNTOKENS];
    int n = yypcontext_expected_tokens(yyctx, expected, YYNTOKENS);
    if (n < 0)
        return n;
    yysymbol_kind_t found = yypcontext_token(yyctx);
    const axc_span *loc = yypcontext_location(yyctx);
    if (found != YYSYMBOL_YYUNDEF) {   /* else the scanner reported it */
        ax_buf msg = {0};
        syntax_message(p, found, loc, expected, n, &msg);
        ax_error(p->ctx, axc_loc(*loc), "%s", msg.data);
        ax_buf_free(&msg);
    }
    /* Recovery resumes at the next separator; brackets left open by the
     * broken statement would otherwise swallow every later newline. */
    p->nbrackets = 0;
    return 0;
}

void axc_yyerror(axc_span *loc, yyscan_t scanner, axc_parser *p, const char *msg)
{
    if (strcmp(msg, "memory exhausted") == 0)
        msg = "expression nested too deeply";
    ax_error(p->ctx, axc_loc(*loc), "%s", msg);
}

ast_file *ast_parse(ax_ctx *ctx)
{
    if (!ctx->src) {
        ctx->src = "";
        ctx->src_len = 0;
    }
    if (ctx->src_len > INT_MAX / 2) {
        ax_error(ctx, ax_noloc(), "%s is too large to compile", ctx->path ? ctx->path : "the input");
        return NULL;
    }
    axc_parser p = {0};
    p.ctx = ctx;
    p.file = ax_alloc(ctx->arena, sizeof *p.file);
    p.line = p.col = 1;
    int errors_before = ctx->errors;
    yyscan_t scanner;
    if (axc_yylex_init_extra(&p, &scanner) != 0)
        ax_die("cannot initialise the scanner");
    YY_BUFFER_STATE buf = axc_yy_scan_bytes(ctx->src, (int)ctx->src_len, scanner);
    int rc = axc_yyparse(scanner, &p);
    axc_yy_delete_buffer(buf, scanner);
    axc_yylex_destroy(scanner);
    return rc == 0 && ctx->errors == errors_before ? p.file : NULL;
}
