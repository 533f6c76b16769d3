/* render.c — --emit=svg: the Graphviz text drawn by Graphviz's own `dot`
 * (found on PATH), run without a shell, the text on its standard input
 * through a temporary file, the SVG read back from its standard output. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

/* Runs `dot -Tsvg` with stdin from fd in; its stdout into out.  Returns
 * the exit status, 127 when dot cannot be started. */
static int run_dot(int in, ax_buf *out)
{
    int pipefd[2];
    if (pipe(pipefd)) return 127;
    pid_t pid = fork();
    if (pid < 0) { close(pipefd[0]); close(pipefd[1]); return 127; }
    if (pid == 0) {
        dup2(in, STDIN_FILENO);
        dup2(pipefd[1], STDOUT_FILENO);
        close(pipefd[0]);
        close(pipefd[1]);
        execlp("dot", "dot", "-Tsvg", (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    char chunk[65536];
    ssize_t got;
    while ((got = read(pipefd[0], chunk, sizeof chunk)) > 0 || (got < 0 && errno == EINTR))
        if (got > 0) ax_buf_put(out, chunk, (size_t)got);
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int axc_render_svg(ax_buf *buf)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/axc-dot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    if (fd < 0 || write(fd, buf->data ? buf->data : "", buf->len) != (ssize_t)buf->len ||
        lseek(fd, 0, SEEK_SET)) {
        axc_fail("cannot use a temporary file in '%s': %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
        if (fd >= 0) close(fd);
        return AXC_EUSAGE;
    }
    ax_buf svg = {0};
    int st = run_dot(fd, &svg);
    close(fd);
    if (st == 127) axc_fail("--emit=svg needs Graphviz's 'dot' on PATH (Debian: apt install graphviz); "
                            "--emit=dot writes the graph as text");
    else if (st) axc_fail("Graphviz's dot failed (status %d) drawing the graph", st);
    if (st) { ax_buf_free(&svg); return AXC_EUSAGE; }
    ax_buf_free(buf);
    *buf = svg;
    return AXC_OK;
}
