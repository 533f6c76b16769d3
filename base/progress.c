/* progress.c — a progress line for long operations (benchmark runs,
 * profiling rounds) on standard error: "\rLABEL i/N", redrawn at most five
 * times a second and erased when done; nothing at all when standard error
 * is not a terminal, so logs and pipes stay clean. */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "ax.h"

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void ax_progress_start(ax_progress *p, const char *label, long total)
{
    p->label = label;
    p->total = total;
    p->shown = false;
    p->on_tty = isatty(STDERR_FILENO) != 0;
    p->last = seconds_now();
}

void ax_progress_step(ax_progress *p, long done)
{
    if (!p->on_tty)
        return;
    const double now = seconds_now();
    if (now - p->last < 0.2)
        return;
    p->last = now;
    p->shown = true;
    fprintf(stderr, "\r%s %ld/%ld", p->label, done, p->total);
    fflush(stderr);
}

void ax_progress_end(ax_progress *p)
{
    if (p->shown)
        fprintf(stderr, "\r\033[K");
    p->shown = false;
}
