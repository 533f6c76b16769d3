/* test_util.c — the compiler's plumbing (base/util.c, base/diag.c):
 * arena, text buffers, whole-file reads, all-or-nothing output writing,
 * name suggestions, and the diagnostic format and policies of
 * docs/language.md#diagnostics (caret under tabs, clipping, -Werror, -w, error limit). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ax.h"

/* ---- helpers --------------------------------------------------------- */

static char *make_temp_dir(void)
{
    char tmpl[] = "/tmp/axc_test_util.XXXXXX";
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    return strdup(dir);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static void assert_file_holds(const char *path, const char *text)
{
    ax_arena *a = ax_arena_new();
    size_t len = 0;
    char *got = ax_read_file(a, path, &len);
    assert_non_null(got);
    assert_int_equal(len, strlen(text));
    assert_string_equal(got, text);
    ax_arena_free(a);
}

/* Removes the files a test left in dir (only on success paths) and dir. */
static void remove_dir(char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = join(dir, e->d_name);
        unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
}

/* ---- arena ------------------------------------------------------------ */

static void test_arena_alloc_zeroed_aligned(void **state)
{
    ax_arena *a = ax_arena_new();
    for (int i = 1; i < 2000; i++) {
        unsigned char *p = ax_alloc(a, (size_t)(i % 97) + 1);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (int j = 0; j < i % 97 + 1; j++)
            assert_int_equal(p[j], 0);
        memset(p, 0xab, (size_t)(i % 97) + 1);
    }
    unsigned char *big = ax_alloc(a, 1 << 20);   /* larger than a chunk */
    assert_int_equal((uintptr_t)big % 16, 0);
    assert_int_equal(big[0], 0);
    assert_int_equal(big[(1 << 20) - 1], 0);
    ax_arena_free(a);
}

static void test_arena_strings(void **state)
{
    ax_arena *a = ax_arena_new();
    assert_string_equal(ax_strdup(a, "conv1"), "conv1");
    assert_string_equal(ax_strndup(a, "weight.bias", 6), "weight");
    assert_string_equal(ax_strndup(a, "ab", 10), "ab");
    assert_string_equal(ax_sprintf(a, "%s.%d", "layer", 12), "layer.12");
    assert_string_equal(ax_sprintf(a, "%s", ""), "");
    ax_arena_free(a);
}

/* ---- ax_buf -------------------------------------------------------------- */

static void test_buf_grows_and_terminates(void **state)
{
    ax_buf b = {0};
    ax_buf_puts(&b, "x");
    for (int i = 0; i < 1000; i++)
        ax_buf_printf(&b, ",%d", i);
    ax_buf_put(&b, "!?", 1);
    assert_int_equal(b.len, strlen(b.data));
    assert_memory_equal(b.data, "x,0,1,2,", 8);
    assert_string_equal(b.data + b.len - 5, ",999!");
    ax_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

/* ---- files ----------------------------------------------------------------- */

static void test_read_file(void **state)
{
    char *dir = make_temp_dir();
    char *path = join(dir, "in.ax");
    FILE *f = fopen(path, "wb");
    fwrite("abc\0def", 1, 7, f);
    fclose(f);
    ax_arena *a = ax_arena_new();
    size_t len = 0;
    char *text = ax_read_file(a, path, &len);
    assert_non_null(text);
    assert_int_equal(len, 7);
    assert_memory_equal(text, "abc\0def", 8);   /* NUL-terminated too */
    char *missing = join(dir, "missing.ax");
    errno = 0;
    assert_null(ax_read_file(a, missing, &len));
    assert_int_equal(errno, ENOENT);
    assert_null(ax_read_file(a, dir, &len));
    assert_int_equal(errno, EISDIR);
    ax_arena_free(a);
    free(missing);
    free(path);
    remove_dir(dir);
}

static void test_write_atomic_creates_and_replaces(void **state)
{
    char *dir = make_temp_dir();
    char *path = join(dir, "out.c");
    assert_int_equal(ax_write_file_atomic(path, "first", 5), 0);
    assert_file_holds(path, "first");
    assert_int_equal(ax_write_file_atomic(path, "second!", 7), 0);
    assert_file_holds(path, "second!");
    assert_int_equal(count_entries(dir), 1);   /* no temporary left */
    mode_t old = umask(022);
    assert_int_equal(ax_write_file_atomic(path, "", 0), 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    assert_int_equal(st.st_size, 0);
    free(path);
    remove_dir(dir);
}

static void test_write_atomic_into_missing_dir_fails(void **state)
{
    char *dir = make_temp_dir();
    char *path = join(dir, "nope/out.c");
    errno = 0;
    assert_int_equal(ax_write_file_atomic(path, "x", 1), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(count_entries(dir), 0);
    free(path);
    remove_dir(dir);
}

/* ---- outset -------------------------------------------------------------- */

static void test_outset_commit(void **state)
{
    char *dir = make_temp_dir();
    char *c = join(dir, "m.c"), *h = join(dir, "m.h");
    ax_outset o = {0};
    assert_int_equal(ax_stage(&o, c, "code", 4), 0);
    assert_int_equal(ax_stage(&o, h, "header", 6), 0);
    assert_int_equal(access(c, F_OK), -1);     /* nothing final before commit */
    assert_int_equal(count_entries(dir), 2);   /* the two temporaries */
    assert_int_equal(ax_commit(&o), 0);
    assert_int_equal(o.n, 0);
    assert_file_holds(c, "code");
    assert_file_holds(h, "header");
    assert_int_equal(count_entries(dir), 2);
    free(c);
    free(h);
    remove_dir(dir);
}

static void test_outset_abort_leaves_nothing(void **state)
{
    char *dir = make_temp_dir();
    char *c = join(dir, "m.c"), *h = join(dir, "m.h");
    ax_outset o = {0};
    assert_int_equal(ax_stage(&o, c, "code", 4), 0);
    assert_int_equal(ax_stage(&o, h, "header", 6), 0);
    ax_abort(&o);
    assert_int_equal(o.n, 0);
    assert_int_equal(count_entries(dir), 0);
    free(c);
    free(h);
    remove_dir(dir);
}

/* The second rename fails (its directory vanished after staging): the
 * first output, already renamed, must be removed again. */
static void test_outset_failed_commit_leaves_nothing(void **state)
{
    char *dir = make_temp_dir();
    char *sub = join(dir, "sub");
    assert_int_equal(mkdir(sub, 0700), 0);
    char *c = join(dir, "m.c"), *h = join(sub, "m.h");
    ax_outset o = {0};
    assert_int_equal(ax_stage(&o, c, "code", 4), 0);
    assert_int_equal(ax_stage(&o, h, "header", 6), 0);
    /* Make the rename into sub fail: replace sub by a plain file. */
    char *staged_h = strdup(o.temp[1]);
    assert_int_equal(unlink(staged_h), 0);
    assert_int_equal(rmdir(sub), 0);
    FILE *f = fopen(sub, "w");
    fclose(f);
    assert_int_equal(ax_commit(&o), -1);
    assert_int_equal(o.n, 0);
    assert_int_equal(access(c, F_OK), -1);
    assert_int_equal(count_entries(dir), 1);   /* only the blocking file */
    free(staged_h);
    free(c);
    free(h);
    free(sub);
    remove_dir(dir);
}

/* The rename that fails comes after one that replaced an existing file:
 * that file's old contents must be back (a failed commit used to unlink
 * it), and nothing else left. */
static void test_outset_failed_commit_restores_old(void **state)
{
    char *dir = make_temp_dir();
    char *sub = join(dir, "sub");
    assert_int_equal(mkdir(sub, 0700), 0);
    char *c = join(dir, "m.c"), *h = join(sub, "m.h");
    assert_int_equal(ax_write_file_atomic(c, "old code", 8), 0);
    ax_outset o = {0};
    assert_int_equal(ax_stage(&o, h, "header", 6), 0);   /* renamed last */
    assert_int_equal(ax_stage(&o, c, "code", 4), 0);     /* renamed first */
    char *staged_h = strdup(o.temp[0]);
    assert_int_equal(unlink(staged_h), 0);
    assert_int_equal(rmdir(sub), 0);
    FILE *f = fopen(sub, "w");
    fclose(f);
    assert_int_equal(ax_commit(&o), -1);
    assert_file_holds(c, "old code");
    assert_int_equal(count_entries(dir), 2);   /* m.c and the blocking file */
    free(staged_h);
    free(c);
    free(h);
    free(sub);
    remove_dir(dir);
}

/* A FIFO destination is written in place, not renamed over; a directory
 * is refused when staged. */
static void test_outset_special_destinations(void **state)
{
    char *dir = make_temp_dir();
    char *fifo = join(dir, "pipe"), *sub = join(dir, "sub");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);   /* a reader, so the write does not wait */
    assert_true(rd >= 0);
    ax_outset o = {0};
    errno = 0;
    assert_int_equal(ax_stage(&o, sub, "x", 1), -1);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(ax_stage(&o, fifo, "data", 4), 0);
    assert_int_equal(ax_commit(&o), 0);
    char got[8] = {0};
    assert_int_equal(read(rd, got, sizeof got), 4);
    assert_memory_equal(got, "data", 4);
    close(rd);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(count_entries(dir), 2);
    unlink(fifo);
    rmdir(sub);
    free(fifo);
    free(sub);
    remove_dir(dir);
}

/* Same file by device and inode, or by directory and name when absent. */
static void test_same_file(void **state)
{
    char *dir = make_temp_dir();
    char *a = join(dir, "a"), *b = join(dir, "b"), *dot = join(dir, "./a"), *new1 = join(dir, "n"),
         *new2 = join(dir, "./n");
    assert_int_equal(ax_write_file_atomic(a, "x", 1), 0);
    assert_true(ax_same_file(a, dot));
    assert_false(ax_same_file(a, b));
    assert_true(ax_same_file(new1, new2));
    assert_int_equal(link(a, b), 0);
    assert_true(ax_same_file(a, b));
    assert_false(ax_same_file(a, new1));
    unlink(b);
    free(a);
    free(b);
    free(dot);
    free(new1);
    free(new2);
    remove_dir(dir);
}

/* ax_read_file_max refuses a file over the bound, an endless one too. */
static void test_read_file_bounded(void **state)
{
    ax_arena *a = ax_arena_new();
    size_t len = 0;
    errno = 0;
    assert_null(ax_read_file_max(a, "/dev/zero", 1 << 20, &len));
    assert_int_equal(errno, EFBIG);
    char *dir = make_temp_dir();
    char *path = join(dir, "f");
    assert_int_equal(ax_write_file_atomic(path, "12345", 5), 0);
    errno = 0;
    assert_null(ax_read_file_max(a, path, 4, &len));
    assert_int_equal(errno, EFBIG);
    assert_non_null(ax_read_file_max(a, path, 5, &len));
    assert_int_equal(len, 5);
    ax_arena_free(a);
    free(path);
    remove_dir(dir);
}

static void test_outset_stage_failure_then_abort(void **state)
{
    char *dir = make_temp_dir();
    char *c = join(dir, "m.c"), *bad = join(dir, "missing/m.h");
    ax_outset o = {0};
    assert_int_equal(ax_stage(&o, c, "code", 4), 0);
    assert_int_equal(ax_stage(&o, bad, "header", 6), -1);
    assert_int_equal(o.n, 1);
    ax_abort(&o);
    assert_int_equal(count_entries(dir), 0);
    free(c);
    free(bad);
    remove_dir(dir);
}

/* A set holds any number of files (a model may have 40 outputs): all of
 * them are committed, and an abort of as many leaves nothing. */
static void test_outset_many(void **state)
{
    char *dir = make_temp_dir();
    for (int commit = 0; commit < 2; commit++) {
        ax_outset o = {0};
        for (int i = 0; i < 40; i++) {
            char name[16];
            snprintf(name, sizeof name, "f%d", i);
            char *p = join(dir, name);
            assert_int_equal(ax_stage(&o, p, "x", 1), 0);
            free(p);
        }
        assert_int_equal(count_entries(dir), 40);
        if (commit) {
            assert_int_equal(ax_commit(&o), 0);
            assert_int_equal(count_entries(dir), 40);
            for (int i = 0; i < 40; i++) {
                char name[16];
                snprintf(name, sizeof name, "f%d", i);
                char *p = join(dir, name);
                assert_int_equal(access(p, F_OK), 0);
                unlink(p);
                free(p);
            }
        } else {
            ax_abort(&o);
        }
        assert_int_equal(count_entries(dir), 0);
    }
    remove_dir(dir);
}

/* ---- ax_suggest ----------------------------------------------------------- */

static void test_suggest(void **state)
{
    const char *const layers[] = {"Dense", "Conv", "BatchNorm", "LayerNorm", "relu", "relu6"};
    int n = 6;
    assert_string_equal(ax_suggest("Dens", layers, n), "Dense");
    assert_string_equal(ax_suggest("dense", layers, n), "Dense");      /* case only */
    assert_string_equal(ax_suggest("BatchNrm", layers, n), "BatchNorm");
    assert_string_equal(ax_suggest("Relu", layers, n), "relu");        /* closest case wins */
    assert_string_equal(ax_suggest("relu", layers, n), "relu6");       /* identical is skipped */
    assert_string_equal(ax_suggest("Desne", layers, n), "Dense");  /* a swap is one edit */
    assert_null(ax_suggest("Dexxe", layers, n));      /* 2 edits > max(1, 5/3) */
    assert_null(ax_suggest("xyz", layers, n));
    assert_null(ax_suggest("Dense", layers, 1));
    assert_null(ax_suggest("a", layers, 0));
}

/* ---- diagnostics ---------------------------------------------------------- */

typedef struct captured {
    ax_ctx *ctx;
    char *text;
    size_t len;
} captured;

static captured *capture_new(const char *path, const char *src)
{
    captured *c = calloc(1, sizeof *c);
    c->ctx = ax_ctx_new();
    c->ctx->path = path;
    c->ctx->src = src;
    c->ctx->src_len = src ? strlen(src) : 0;
    c->ctx->diag_out = open_memstream(&c->text, &c->len);
    return c;
}

static const char *capture_text(captured *c)
{
    fflush(c->ctx->diag_out);
    return c->text;
}

static void capture_free(captured *c)
{
    fclose(c->ctx->diag_out);
    free(c->text);
    ax_ctx_free(c->ctx);
    free(c);
}

static const char mlp_src[] =
    "@axiom mlp(x::Float32[1, 784]) begin\n"
    "    Dense(784 => 512)\n"
    "    Dense(784 => 256, activation=relu)\n"
    "end\n";

static void test_diag_format_matches_spec(void **state)
{
    captured *c = capture_new("mlp.ax", mlp_src);
    ax_loc loc = {3, 5, 34};
    ax_error(c->ctx, loc, "Dense(784 => 256) expects input [..., 784] but gets [1, %d]", 512);
    assert_string_equal(capture_text(c),
        "mlp.ax:3:5: error: Dense(784 => 256) expects input [..., 784] but gets [1, 512]\n"
        "    Dense(784 => 256, activation=relu)\n"
        "    ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n");
    assert_int_equal(c->ctx->errors, 1);
    capture_free(c);
}

static void test_diag_tabs_and_clipping(void **state)
{
    captured *c = capture_new("t.ax", "a\n\tx =\tfoo(1)\r\nlast");
    ax_loc in_tabs = {2, 6, 3};   /* foo, after two tabs */
    ax_warning(c->ctx, in_tabs, "w");
    ax_loc past_end = {2, 9, 40};   /* a span running onto the next line */
    ax_note(c->ctx, past_end, "n");
    ax_loc at_eol = {3, 5, 1};
    ax_error(c->ctx, at_eol, "e");
    assert_string_equal(capture_text(c),
        "t.ax:2:6: warning: w\n"
        "\tx =\tfoo(1)\n"
        "\t   \t^~~\n"
        "t.ax:2:9: note: n\n"
        "\tx =\tfoo(1)\n"
        "\t   \t   ^~~\n"
        "t.ax:3:5: error: e\n"
        "last\n"
        "    ^\n");
    assert_int_equal(c->ctx->warnings, 1);
    assert_int_equal(c->ctx->errors, 1);
    capture_free(c);
}

static void test_diag_without_location(void **state)
{
    captured *c = capture_new("m.ax", mlp_src);
    ax_error(c->ctx, ax_noloc(), "cannot open '%s'", "w.safetensors");
    c->ctx->path = NULL;
    ax_warning(c->ctx, ax_noloc(), "no file");
    assert_string_equal(capture_text(c),
        "m.ax: error: cannot open 'w.safetensors'\n"
        "axc: warning: no file\n");
    capture_free(c);
}

static void test_diag_werror_and_no_warnings(void **state)
{
    captured *c = capture_new("m.ax", mlp_src);
    ax_loc loc = {1, 12, 1};
    c->ctx->werror = true;
    ax_warning(c->ctx, loc, "input 'x' is Float64");
    assert_int_equal(c->ctx->errors, 1);
    assert_int_equal(c->ctx->warnings, 0);
    c->ctx->no_warnings = true;
    ax_warning(c->ctx, loc, "dropped");
    assert_int_equal(c->ctx->errors, 1);
    assert_string_equal(capture_text(c),
        "m.ax:1:12: error: input 'x' is Float64 [-Werror]\n"
        "@axiom mlp(x::Float32[1, 784]) begin\n"
        "           ^\n");
    capture_free(c);
}

static void test_diag_error_limit(void **state)
{
    captured *c = capture_new(NULL, NULL);
    c->ctx->max_errors = 2;
    for (int i = 0; i < 5; i++)
        ax_error(c->ctx, ax_noloc(), "e%d", i);
    ax_note(c->ctx, ax_noloc(), "after the limit");
    assert_int_equal(c->ctx->errors, 5);
    assert_string_equal(capture_text(c),
        "axc: error: e0\n"
        "axc: error: e1\n"
        "axc: too many errors, stopping\n");
    capture_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_alloc_zeroed_aligned),
        cmocka_unit_test(test_arena_strings),
        cmocka_unit_test(test_buf_grows_and_terminates),
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_write_atomic_creates_and_replaces),
        cmocka_unit_test(test_write_atomic_into_missing_dir_fails),
        cmocka_unit_test(test_outset_commit),
        cmocka_unit_test(test_outset_abort_leaves_nothing),
        cmocka_unit_test(test_outset_failed_commit_leaves_nothing),
        cmocka_unit_test(test_outset_failed_commit_restores_old),
        cmocka_unit_test(test_outset_special_destinations),
        cmocka_unit_test(test_same_file),
        cmocka_unit_test(test_read_file_bounded),
        cmocka_unit_test(test_outset_stage_failure_then_abort),
        cmocka_unit_test(test_outset_many),
        cmocka_unit_test(test_suggest),
        cmocka_unit_test(test_diag_format_matches_spec),
        cmocka_unit_test(test_diag_tabs_and_clipping),
        cmocka_unit_test(test_diag_without_location),
        cmocka_unit_test(test_diag_werror_and_no_warnings),
        cmocka_unit_test(test_diag_error_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
