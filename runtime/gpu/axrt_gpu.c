/* axrt_gpu.c — libaxrt_gpu: the CUDA and HIP loader (axrt_gpu.h).
 *
 * One implementation for both: a dialect table names the driver and
 * run-time compiler libraries and their entry points, whose C signatures
 * agree (handles and device pointers are pointer-sized).  Everything is
 * opened with dlopen, so neither this library nor the generated host C
 * needs a CUDA or HIP header or a link against libcuda.  Not freestanding
 * (it opens libraries and files): it is a separate library from libaxrt. */
#define _GNU_SOURCE
#include "axrt_gpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int (*fn_init)(unsigned);
typedef int (*fn_count)(int *);
typedef int (*fn_alloc)(void **, size_t);
typedef int (*fn_free)(void *);
typedef int (*fn_htod)(void *, const void *, size_t);
typedef int (*fn_dtoh)(void *, const void *, size_t);
typedef int (*fn_load)(void **, const void *);
typedef int (*fn_unload)(void *);
typedef int (*fn_getfn)(void **, void *, const char *);
typedef int (*fn_launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
typedef int (*fn_sync)(void);
typedef int (*fn_attr)(int *, int, int);
typedef int (*fn_ctxretain)(void **, int);
typedef int (*fn_ctxset)(void *);
typedef int (*fn_setdev)(int);
typedef int (*rtc_create)(void **, const char *, const char *, int, const char *const *,
                          const char *const *);
typedef int (*rtc_compile)(void *, int, const char *const *);
typedef int (*rtc_size)(void *, size_t *);
typedef int (*rtc_get)(void *, char *);
typedef int (*rtc_destroy)(void **);
typedef const char *(*rtc_errstr)(int);
typedef int (*rtc_version)(int *, int *);

/* The spellings of one dialect. */
typedef struct dialect_api {
    const char *vendor;                       /* "CUDA", "HIP" in messages */
    const char *driver_libs[4], *rtc_libs[6]; /* tried in order */
    const char *driver_env, *rtc_env;
    const char *init, *count, *alloc, *free, *htod, *dtoh, *load, *unload, *getfn, *launch, *sync;
    const char *rtc_create, *rtc_compile, *rtc_logsize, *rtc_log, *rtc_binsize, *rtc_bin,
        *rtc_textsize, *rtc_text, *rtc_destroy, *rtc_errstr, *rtc_version;
    const char *cache_ext;
} dialect_api;

static const dialect_api apis[] = {
    [AXRT_GPU_CUDA] = {"CUDA", {"libcuda.so.1", NULL},
                       {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", NULL},
                       "AXRT_CUDA_LIB", "AXRT_NVRTC_LIB",
                       "cuInit", "cuDeviceGetCount", "cuMemAlloc_v2", "cuMemFree_v2",
                       "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuModuleLoadData", "cuModuleUnload",
                       "cuModuleGetFunction", "cuLaunchKernel", "cuCtxSynchronize",
                       "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
                       "nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcGetPTXSize",
                       "nvrtcGetPTX", "nvrtcDestroyProgram", "nvrtcGetErrorString", "nvrtcVersion",
                       "cubin"},
    [AXRT_GPU_HIP] = {"HIP", {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5", NULL},
                      {"libhiprtc.so", "libhiprtc.so.6", "libamdhip64.so", "libamdhip64.so.5", NULL},
                      "AXRT_HIP_LIB", "AXRT_HIPRTC_LIB",
                      "hipInit", "hipGetDeviceCount", "hipMalloc", "hipFree", "hipMemcpyHtoD",
                      "hipMemcpyDtoH", "hipModuleLoadData", "hipModuleUnload", "hipModuleGetFunction",
                      "hipModuleLaunchKernel", "hipDeviceSynchronize",
                      "hiprtcCreateProgram", "hiprtcCompileProgram", "hiprtcGetProgramLogSize",
                      "hiprtcGetProgramLog", "hiprtcGetCodeSize", "hiprtcGetCode", "hiprtcGetCodeSize",
                      "hiprtcGetCode", "hiprtcDestroyProgram", "hiprtcGetErrorString", "hiprtcVersion",
                      "hsaco"},
};

typedef struct driver {
    void *lib;
    fn_init init;
    fn_count count;
    fn_alloc alloc;
    fn_free free;
    fn_htod htod;
    fn_dtoh dtoh;
    fn_load load;
    fn_unload unload;
    fn_getfn getfn;
    fn_launch launch;
    fn_sync sync;
} driver;

struct axrt_gpu {
    const axrt_gpu_model *model;
    const dialect_api *api;
    driver d;
    void *module;
    void **functions;                 /* one per launch */
    void *params, *arena;             /* device memory, allocated once */
    void *staging[AXRT_GPU_MAX_IO];   /* axrt_gpu_forward_host's device buffers */
    char error[256];
};

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* dlopen of the environment's override, else each name in turn.  The
 * libraries stay mapped after dlclose (RTLD_NODELETE): NVRTC carries its own
 * static C++ runtime, whose state (the exception pool) unloading would leak,
 * and a driver is not made to be unloaded and loaded again in one process. */
static void *open_first(const char *env, const char *const *names, const char **tried)
{
    const int mode = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
    const char *forced = getenv(env);
    if (forced && *forced) {
        *tried = forced;
        return dlopen(forced, mode);
    }
    *tried = names[0];
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], mode);
        if (h) return h;
    }
    return NULL;
}

/* Resolves every name into the pointer array slots; returns the first
 * missing symbol, or NULL. */
static const char *resolve(void *lib, const char *const *names, void **slots, int n)
{
    for (int i = 0; i < n; i++) {
        void *p = dlsym(lib, names[i]);
        if (!p) return names[i];
        memcpy(&slots[i], &p, sizeof p);
    }
    return NULL;
}

static int open_driver(driver *d, const dialect_api *api, char *err, size_t errlen)
{
    const char *tried;
    memset(d, 0, sizeof *d);
    d->lib = open_first(api->driver_env, api->driver_libs, &tried);
    if (!d->lib) {
        say(err, errlen, "no %s device: cannot open the driver %s (%s)", api->vendor, tried, dlerror());
        return 1;
    }
    const char *names[] = {api->init, api->count, api->alloc, api->free, api->htod, api->dtoh,
                           api->load, api->unload, api->getfn, api->launch, api->sync};
    void *slots[11];
    const char *missing = resolve(d->lib, names, slots, 11);
    if (missing) {
        say(err, errlen, "the %s driver %s has no %s", api->vendor, tried, missing);
        dlclose(d->lib);
        d->lib = NULL;
        return 1;
    }
    memcpy(&d->init, &slots[0], sizeof slots[0]);
    memcpy(&d->count, &slots[1], sizeof slots[0]);
    memcpy(&d->alloc, &slots[2], sizeof slots[0]);
    memcpy(&d->free, &slots[3], sizeof slots[0]);
    memcpy(&d->htod, &slots[4], sizeof slots[0]);
    memcpy(&d->dtoh, &slots[5], sizeof slots[0]);
    memcpy(&d->load, &slots[6], sizeof slots[0]);
    memcpy(&d->unload, &slots[7], sizeof slots[0]);
    memcpy(&d->getfn, &slots[8], sizeof slots[0]);
    memcpy(&d->launch, &slots[9], sizeof slots[0]);
    memcpy(&d->sync, &slots[10], sizeof slots[0]);
    return 0;
}

/* cuInit/hipInit and a device count: "no CUDA device" where there is none. */
static int find_device(const driver *d, const dialect_api *api, char *err, size_t errlen)
{
    int count = 0, rc = d->init(0);
    if (rc == 100 || (rc == 0 && (d->count(&count) != 0 || count < 1))) {
        say(err, errlen, "no %s device (%s: %s)", api->vendor, rc ? api->init : api->count,
            rc ? "error 100, no device" : "0 devices");
        return 1;
    }
    if (rc) {
        say(err, errlen, "no %s device: %s failed with error %d%s", api->vendor, api->init, rc,
            rc == 34 ? " (the toolkit's stub library, not a driver)" : "");
        return 1;
    }
    return 0;
}

int axrt_gpu_probe(axrt_gpu_dialect dialect, char *err, size_t errlen)
{
    driver d;
    const dialect_api *api = &apis[dialect];
    if (open_driver(&d, api, err, errlen)) return 1;
    const int rc = find_device(&d, api, err, errlen);
    dlclose(d.lib);
    return rc;
}

/* ---- the run-time compiler ------------------------------------------------ */

typedef struct rtc {
    void *lib;
    rtc_create create;
    rtc_compile compile;
    rtc_size logsize, binsize, textsize;
    rtc_get log, bin, text;
    rtc_destroy destroy;
    rtc_errstr errstr;
    rtc_version version;
} rtc;

static int open_rtc(rtc *r, const dialect_api *api, char *err, size_t errlen)
{
    const char *tried;
    memset(r, 0, sizeof *r);
    r->lib = open_first(api->rtc_env, api->rtc_libs, &tried);
    if (!r->lib) {
        say(err, errlen, "cannot open the %s run-time compiler %s (%s)", api->vendor, tried, dlerror());
        return 1;
    }
    const char *names[] = {api->rtc_create, api->rtc_compile, api->rtc_logsize, api->rtc_binsize,
                           api->rtc_textsize, api->rtc_log, api->rtc_bin, api->rtc_text,
                           api->rtc_destroy, api->rtc_errstr};
    void *slots[10];
    const char *missing = resolve(r->lib, names, slots, 10);
    if (missing) {
        say(err, errlen, "the %s run-time compiler %s has no %s", api->vendor, tried, missing);
        dlclose(r->lib);
        r->lib = NULL;
        return 1;
    }
    memcpy(&r->create, &slots[0], sizeof slots[0]);
    memcpy(&r->compile, &slots[1], sizeof slots[0]);
    memcpy(&r->logsize, &slots[2], sizeof slots[0]);
    memcpy(&r->binsize, &slots[3], sizeof slots[0]);
    memcpy(&r->textsize, &slots[4], sizeof slots[0]);
    memcpy(&r->log, &slots[5], sizeof slots[0]);
    memcpy(&r->bin, &slots[6], sizeof slots[0]);
    memcpy(&r->text, &slots[7], sizeof slots[0]);
    memcpy(&r->destroy, &slots[8], sizeof slots[0]);
    memcpy(&r->errstr, &slots[9], sizeof slots[0]);
    void *v = dlsym(r->lib, api->rtc_version);
    if (v) memcpy(&r->version, &v, sizeof v);
    return 0;
}

/* The program's log into err after "what failed: ". */
static void rtc_failure(const rtc *r, void *prog, int rc, const char *what, char *err, size_t errlen)
{
    size_t size = 0;
    char *log = NULL;
    if (prog && r->logsize(prog, &size) == 0 && size > 1 && (log = malloc(size + 1)) != NULL &&
        r->log(prog, log) == 0)
        log[size] = 0;
    say(err, errlen, "%s failed (%s)%s%s", what, r->errstr(rc), log ? ":\n" : "", log ? log : "");
    free(log);
}

/* AXRT_GPU_MATH=bf16: the CUDA GEMMs on tensor cores (BFloat16 operands,
 * Float32 accumulation) on sm_80 and later; anything else: exact Float32. */
static int math_bf16(const dialect_api *api)
{
    const char *m = getenv("AXRT_GPU_MATH");
    return api == &apis[AXRT_GPU_CUDA] && m && !strcmp(m, "bf16");
}

/* Compiles source for arch; binary: CUBIN/code object, else PTX text. */
static int rtc_build(const rtc *r, const dialect_api *api, const char *source, const char *arch,
                     int binary, char **out, size_t *len, char *err, size_t errlen)
{
    void *prog = NULL;
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *opts[3] = {arch_opt, "-default-device"};
    int nopts = arch[0] ? (api == &apis[AXRT_GPU_CUDA] ? 2 : 1) : 0;
    if (math_bf16(api)) opts[nopts++] = "-DAXK_MMA_BF16";
    int rc = r->create(&prog, source, "axc_kernels", 0, NULL, NULL);
    if (rc) { rtc_failure(r, NULL, rc, api->rtc_create, err, errlen); return 1; }
    rc = r->compile(prog, nopts, nopts ? opts : NULL);
    if (rc) { rtc_failure(r, prog, rc, api->rtc_compile, err, errlen); r->destroy(&prog); return 1; }
    size_t size = 0;
    rc = (binary ? r->binsize : r->textsize)(prog, &size);
    if (!rc && size == 0) rc = -1;
    *out = rc ? NULL : malloc(size);
    if (!rc && *out) rc = (binary ? r->bin : r->text)(prog, *out);
    r->destroy(&prog);
    if (rc || !*out) {
        free(*out);
        *out = NULL;
        say(err, errlen, "%s produced no code for %s", api->rtc_compile, arch);
        return 1;
    }
    *len = binary ? size : strlen(*out);
    return 0;
}

int axrt_gpu_compile(axrt_gpu_dialect dialect, const char *source, const char *arch, char **out,
                     size_t *len, char *err, size_t errlen)
{
    rtc r;
    const dialect_api *api = &apis[dialect];
    if (open_rtc(&r, api, err, errlen)) return 1;
    const int rc = rtc_build(&r, api, source, arch, dialect == AXRT_GPU_HIP, out, len, err, errlen);
    dlclose(r.lib);
    return rc;
}

/* ---- the compiled-kernel cache -------------------------------------------- */
/* Kernels are code the driver runs, and the cache may sit in a directory
 * others can reach (issue 33, G14/G15), so:
 *   - the directory is created 0700; one owned by someone else or writable
 *     by group or others is not used (a note on stderr says so);
 *   - an entry is the code followed by a trailer (kernel_trailer: its size
 *     and checksum); it is used only if it is a regular file (opened with
 *     O_NOFOLLOW), this user's, writable by no one else and intact, else a
 *     note says why and the kernels are compiled again, replacing it;
 *   - an entry is written to a fresh mkostemp name (O_EXCL: never through a
 *     planted link), fsynced, renamed into place, and the directory fsynced;
 *   - an intact entry the driver refuses (one from another driver, say) is
 *     compiled again too (axrt_gpu_init). */

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void cache_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("axrt_gpu: note: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* What follows the code in an entry: damage (truncation, altered bytes)
 * shows as a wrong magic, size or checksum. */
typedef struct kernel_trailer {
    char magic[8];   /* KERNEL_MAGIC */
    uint64_t size;   /* bytes of code before the trailer */
    uint64_t sum;    /* FNV-1a 64 of the code */
} kernel_trailer;
static const char KERNEL_MAGIC[8] = {'a', 'x', 'r', 't', 'g', 'p', 'u', '1'};

static uint64_t kernel_sum(const char *code, size_t len) { return fnv1a(14695981039346656037ULL, code, len); }

/* 1 when the cache directory may hold code this process runs. */
static int cache_dir_safe(const char *base)
{
    struct stat st;
    if (stat(base, &st) || !S_ISDIR(st.st_mode)) return 0;
    if (st.st_uid != geteuid()) {
        cache_note("not using the kernel cache directory '%s': owned by uid %u, not by you (uid %u)", base,
                   (unsigned)st.st_uid, (unsigned)geteuid());
        return 0;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        cache_note("not using the kernel cache directory '%s': writable by group or others (chmod 700 it)", base);
        return 0;
    }
    return 1;
}

/* dir/axc-<hash>.<ext>, or 0 when the cache is off, has no home or is unsafe. */
static int cache_path(char *path, size_t size, const dialect_api *api, const rtc *r,
                      const char *source, const char *arch)
{
    const char *dir = getenv("AXRT_GPU_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[1024];
    if (dir && !strcmp(dir, "off")) return 0;
    if (dir && *dir) snprintf(base, sizeof base, "%s", dir);
    else if (xdg && *xdg) snprintf(base, sizeof base, "%s/axc", xdg);
    else if (home && *home) snprintf(base, sizeof base, "%s/.cache/axc", home);
    else return 0;
    for (char *c = base + 1; *c; c++) /* mkdir -p */
        if (*c == '/') { *c = 0; mkdir(base, 0700); *c = '/'; }
    if (mkdir(base, 0700) && errno != EEXIST) return 0;
    if (!cache_dir_safe(base)) return 0;
    int major = 0, minor = 0;
    if (r->version) r->version(&major, &minor);
    char version[64];
    snprintf(version, sizeof version, "%s %s %d.%d%s", api->vendor, arch, major, minor,
             math_bf16(api) ? " bf16" : "");
    const uint64_t h = fnv1a(fnv1a(14695981039346656037ULL, version, strlen(version)), source, strlen(source));
    snprintf(path, size, "%s/axc-%016llx.%s", base, (unsigned long long)h, api->cache_ext);
    return 1;
}

/* NULL when the open entry fd (st) is usable, else why not. */
static const char *entry_unusable(int fd, const struct stat *st, char *why, size_t size)
{
    kernel_trailer t;
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_uid != geteuid()) {
        snprintf(why, size, "owned by uid %u, not by you (uid %u)", (unsigned)st->st_uid, (unsigned)geteuid());
        return why;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    if (st->st_size < (off_t)sizeof t || pread(fd, &t, sizeof t, st->st_size - (off_t)sizeof t) != (ssize_t)sizeof t ||
        memcmp(t.magic, KERNEL_MAGIC, sizeof t.magic))
        return "damaged (no checksum trailer: truncated, or not written by this libaxrt_gpu)";
    if (t.size != (uint64_t)st->st_size - sizeof t) return "damaged (its size is not the recorded size)";
    return NULL;
}

/* The code of an entry checked as above and against its checksum (malloc),
 * or NULL: absent, or ignored with a note. */
static char *read_entry(const char *path, size_t *len)
{
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            cache_note("ignoring the kernel cache entry '%s': %s; compiling again", path,
                       errno == ELOOP ? "a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    char why[128];
    const char *bad = fstat(fd, &st) ? strerror(errno) : entry_unusable(fd, &st, why, sizeof why);
    char *code = NULL;
    const size_t size = bad ? 0 : (size_t)st.st_size - sizeof(kernel_trailer);
    if (!bad && (code = malloc(size ? size : 1)) == NULL) bad = "out of memory";
    for (size_t got = 0; !bad && got < size;) {
        const ssize_t n = pread(fd, code + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) bad = "unreadable";
        else got += (size_t)n;
    }
    kernel_trailer t;
    if (!bad && (pread(fd, &t, sizeof t, (off_t)size) != (ssize_t)sizeof t || t.sum != kernel_sum(code, size)))
        bad = "damaged (its checksum does not match its bytes)";
    close(fd);
    if (bad) {
        cache_note("ignoring the kernel cache entry '%s': %s; compiling again", path, bad);
        free(code);
        return NULL;
    }
    *len = size;
    return code;
}

static int write_all(int fd, const void *data, size_t len)
{
    for (size_t put = 0; put < len;) {
        const ssize_t n = write(fd, (const char *)data + put, len - put);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        put += (size_t)n;
    }
    return 0;
}

/* Written to a fresh name beside (mkostemp: O_CREAT|O_EXCL, never through a
 * link planted there), fsynced and renamed into place: a reader never sees
 * half a file, and a crash leaves no truncated entry. */
static void write_entry(const char *path, const char *data, size_t len)
{
    char tmp[1300];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    const int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) return;
    kernel_trailer t = {{0}, len, kernel_sum(data, len)};
    memcpy(t.magic, KERNEL_MAGIC, sizeof t.magic);
    int ok = write_all(fd, data, len) == 0 && write_all(fd, &t, sizeof t) == 0 && fsync(fd) == 0;
    ok = close(fd) == 0 && ok && rename(tmp, path) == 0;
    if (!ok) { unlink(tmp); return; }
    char dir[1300];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    const int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
}

static int verbose(void)
{
    const char *v = getenv("AXRT_GPU_VERBOSE");
    return v && *v && strcmp(v, "0");
}

/* The device's architecture name: sm_XY from the compute capability, or
 * "" for HIP (hiprtc then compiles for the current device). */
static void device_arch(const driver *d, const dialect_api *api, char *arch, size_t size)
{
    arch[0] = 0;
    if (api != &apis[AXRT_GPU_CUDA]) return;
    fn_attr attr = NULL;
    void *p = dlsym(d->lib, "cuDeviceGetAttribute");
    if (p) memcpy(&attr, &p, sizeof p);
    int major = 0, minor = 0;
    if (attr && attr(&major, 75, 0) == 0 && attr(&minor, 76, 0) == 0)
        snprintf(arch, size, "sm_%d%d", major, minor);
}

/* The module's code: from the cache (when use_cache; then *from_cache),
 * or compiled.  *path: the cache entry, or "" when the cache is off. */
static char *module_code(axrt_gpu *g, const char *arch, int use_cache, int *from_cache, char *path, size_t size,
                         size_t *len, char *err, size_t errlen)
{
    rtc r;
    *from_cache = 0;
    path[0] = 0;
    if (open_rtc(&r, g->api, err, errlen)) return NULL;
    if (!cache_path(path, size, g->api, &r, g->model->source, arch)) path[0] = 0;
    char *code = path[0] && use_cache ? read_entry(path, len) : NULL;
    if (code) {
        *from_cache = 1;
        if (verbose()) fprintf(stderr, "axrt_gpu: %s kernels from the cache %s\n", g->model->name, path);
    } else if (rtc_build(&r, g->api, g->model->source, arch, 1, &code, len, err, errlen) == 0) {
        if (verbose()) fprintf(stderr, "axrt_gpu: %s kernels compiled for %s\n", g->model->name, arch[0] ? arch : "the device");
    }
    dlclose(r.lib);
    return code;
}

/* CUDA needs a current context: the device's primary one. */
static int make_current(const driver *d, const dialect_api *api, char *err, size_t errlen)
{
    if (api == &apis[AXRT_GPU_HIP]) {
        void *p = dlsym(d->lib, "hipSetDevice");
        fn_setdev set = NULL;
        if (p) memcpy(&set, &p, sizeof p);
        if (set && set(0) == 0) return 0;
        say(err, errlen, "hipSetDevice(0) failed");
        return 1;
    }
    void *pr = dlsym(d->lib, "cuDevicePrimaryCtxRetain"), *ps = dlsym(d->lib, "cuCtxSetCurrent");
    fn_ctxretain retain = NULL;
    fn_ctxset set = NULL;
    void *ctx = NULL;
    if (pr) memcpy(&retain, &pr, sizeof pr);
    if (ps) memcpy(&set, &ps, sizeof ps);
    if (retain && set && retain(&ctx, 0) == 0 && set(ctx) == 0) return 0;
    say(err, errlen, "cannot make a CUDA context on device 0");
    return 1;
}

static int load_module(axrt_gpu *g, const char *code, char *err, size_t errlen)
{
    int rc = g->d.load(&g->module, code);
    if (rc) { g->module = NULL; say(err, errlen, "%s failed with error %d", g->api->load, rc); return 1; }
    g->functions = calloc((size_t)g->model->nlaunches + 1, sizeof *g->functions);
    if (!g->functions) { say(err, errlen, "out of memory"); return 1; }
    for (int i = 0; i < g->model->nlaunches; i++) {
        rc = g->d.getfn(&g->functions[i], g->module, g->model->launches[i].kernel);
        if (rc) {
            say(err, errlen, "%s(%s) failed with error %d", g->api->getfn, g->model->launches[i].kernel, rc);
            return 1;
        }
    }
    return 0;
}

static void unload_module(axrt_gpu *g)
{
    if (g->module) g->d.unload(g->module);
    g->module = NULL;
    free(g->functions);
    g->functions = NULL;
}

/* The kernels compiled or from the cache, loaded; only compiled kernels
 * that load go into the cache, and cached ones the driver refuses are
 * compiled again, replacing the entry.  0, or 1 with err. */
static int load_kernels(axrt_gpu *g, const char *arch, char *err, size_t errlen)
{
    char path[1200];
    size_t len = 0;
    int from_cache = 0;
    char *code = module_code(g, arch, 1, &from_cache, path, sizeof path, &len, err, errlen);
    int failed = !code || load_module(g, code, err, errlen);
    if (failed && from_cache) {
        cache_note("ignoring the kernel cache entry '%s': the driver refuses it (%s); compiling again", path, err);
        unload_module(g);
        free(code);
        code = module_code(g, arch, 0, &from_cache, path, sizeof path, &len, err, errlen);
        failed = !code || load_module(g, code, err, errlen);
    }
    if (!failed && !from_cache && path[0]) write_entry(path, code, len);
    free(code);
    return failed;
}

/* Parameters uploaded, arena and staging buffers allocated: once. */
static int allocate(axrt_gpu *g, char *err, size_t errlen)
{
    const axrt_gpu_model *m = g->model;
    int rc = g->d.alloc(&g->params, m->param_bytes ? m->param_bytes : 1);
    if (!rc && m->param_bytes) rc = g->d.htod(g->params, m->params, m->param_bytes);
    if (!rc) rc = g->d.alloc(&g->arena, m->arena_bytes ? m->arena_bytes : 1);
    if (!rc && m->index_word) { /* device memory comes uninitialised */
        const int zero = 0;
        rc = g->d.htod((unsigned char *)g->arena + (m->index_word - 1), &zero, sizeof zero);
    }
    for (int i = 0; i < m->ninputs + m->noutputs && !rc; i++)
        rc = g->d.alloc(&g->staging[i], m->io_bytes[i] ? m->io_bytes[i] : 1);
    if (rc) say(err, errlen, "cannot allocate %zu bytes of %s device memory (error %d)",
                m->param_bytes + m->arena_bytes, g->api->vendor, rc);
    return rc ? 1 : 0;
}

axrt_gpu *axrt_gpu_init(const axrt_gpu_model *model, char *err, size_t errlen)
{
    say(err, errlen, "");
    if (model->ninputs + model->noutputs > AXRT_GPU_MAX_IO) {
        say(err, errlen, "model %s has more than %d inputs and outputs", model->name, AXRT_GPU_MAX_IO);
        return NULL;
    }
    axrt_gpu *g = calloc(1, sizeof *g);
    if (!g) { say(err, errlen, "out of memory"); return NULL; }
    g->model = model;
    g->api = &apis[model->dialect];
    if (open_driver(&g->d, g->api, err, errlen)) { free(g); return NULL; }
    char arch[32];
    int failed = find_device(&g->d, g->api, err, errlen) || make_current(&g->d, g->api, err, errlen);
    if (!failed) {
        device_arch(&g->d, g->api, arch, sizeof arch);
        failed = load_kernels(g, arch, err, errlen) || allocate(g, err, errlen);
    }
    if (failed) { axrt_gpu_free(g); return NULL; }
    return g;
}

int axrt_gpu_forward(axrt_gpu *g, const void *const *io, void *stream)
{
    const axrt_gpu_model *m = g->model;
    void *values[AXRT_GPU_MAX_IO + 2], *args[AXRT_GPU_MAX_IO + 2];
    const int nargs = 2 + m->ninputs + m->noutputs;
    values[0] = g->arena;
    values[1] = g->params;
    for (int i = 0; i < m->ninputs + m->noutputs; i++) memcpy(&values[2 + i], &io[i], sizeof io[i]);
    for (int i = 0; i < nargs; i++) args[i] = &values[i];
    for (int i = 0; i < m->nlaunches; i++) {
        const axrt_gpu_launch *l = &m->launches[i];
        const int rc = g->d.launch(g->functions[i], l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                   l->block[1], l->block[2], 0, stream, args, NULL);
        if (rc) {
            snprintf(g->error, sizeof g->error, "%s(%s) failed with error %d", g->api->launch, l->kernel, rc);
            return rc;
        }
    }
    return 0;
}

/* The index-error word read into *flag and cleared: 0 or the driver's code. */
static int take_index_word(axrt_gpu *g, int *flag)
{
    const axrt_gpu_model *m = g->model;
    *flag = 0;
    if (!m->index_word) return 0;
    unsigned char *word = (unsigned char *)g->arena + (m->index_word - 1);
    int rc = g->d.sync();
    if (!rc) rc = g->d.dtoh(flag, word, sizeof *flag);
    if (!rc && *flag) {
        const int zero = 0;
        rc = g->d.htod(word, &zero, sizeof zero);
    }
    return rc;
}

int axrt_gpu_index_error(axrt_gpu *g)
{
    int flag;
    return take_index_word(g, &flag) ? -1 : flag != 0;
}

int axrt_gpu_forward_host(axrt_gpu *g, const void *const *inputs, void *const *outputs)
{
    const axrt_gpu_model *m = g->model;
    int rc = 0, bad_index = 0;
    g->error[0] = 0;
    for (int i = 0; i < m->ninputs && !rc; i++) rc = g->d.htod(g->staging[i], inputs[i], m->io_bytes[i]);
    if (!rc) rc = axrt_gpu_forward(g, (const void *const *)g->staging, NULL);
    if (!rc) rc = g->d.sync();
    for (int i = 0; i < m->noutputs && !rc; i++)
        rc = g->d.dtoh(outputs[i], g->staging[m->ninputs + i], m->io_bytes[m->ninputs + i]);
    if (!rc) rc = take_index_word(g, &bad_index);
    if (rc && !g->error[0]) snprintf(g->error, sizeof g->error, "%s device call failed with error %d", g->api->vendor, rc);
    if (rc) return rc;
    if (bad_index) snprintf(g->error, sizeof g->error, "an Embedding index outside [0, vocab) (its rows are NaN)");
    return bad_index ? AXRT_GPU_ERR_INDEX : 0;
}

/* ---- device timing (axc run --bench) ---------------------------------------- */

typedef int (*fn_evcreate)(void **, unsigned);
typedef int (*fn_evrecord)(void *, void *);
typedef int (*fn_evsync)(void *);
typedef int (*fn_evelapsed)(float *, void *, void *);
typedef int (*fn_evdestroy)(void *);

typedef struct events {
    fn_evcreate create;
    fn_evrecord record;
    fn_evsync sync;
    fn_evelapsed elapsed;
    fn_evdestroy destroy;
} events;

/* The driver's event calls (looked up only when timing). */
static int open_events(axrt_gpu *g, events *e)
{
    const int cuda = g->api == &apis[AXRT_GPU_CUDA];
    const char *names[] = {cuda ? "cuEventCreate" : "hipEventCreateWithFlags",
                           cuda ? "cuEventRecord" : "hipEventRecord",
                           cuda ? "cuEventSynchronize" : "hipEventSynchronize",
                           cuda ? "cuEventElapsedTime" : "hipEventElapsedTime",
                           cuda ? "cuEventDestroy_v2" : "hipEventDestroy"};
    void *slots[5];
    const char *missing = resolve(g->d.lib, names, slots, 5);
    if (missing) {
        snprintf(g->error, sizeof g->error, "the %s driver has no %s", g->api->vendor, missing);
        return 1;
    }
    memcpy(&e->create, &slots[0], sizeof slots[0]);
    memcpy(&e->record, &slots[1], sizeof slots[0]);
    memcpy(&e->sync, &slots[2], sizeof slots[0]);
    memcpy(&e->elapsed, &slots[3], sizeof slots[0]);
    memcpy(&e->destroy, &slots[4], sizeof slots[0]);
    return 0;
}

/* One forward on the staged inputs between two events: its device time. */
static int timed_forward(axrt_gpu *g, const events *e, void *start, void *stop, double *us)
{
    float ms = 0.0f;
    int rc = e->record(start, NULL);
    if (!rc) rc = axrt_gpu_forward(g, (const void *const *)g->staging, NULL);
    if (!rc) rc = e->record(stop, NULL);
    if (!rc) rc = e->sync(stop);
    if (!rc) rc = e->elapsed(&ms, start, stop);
    *us = (double)ms * 1000.0;
    return rc;
}

int axrt_gpu_time_forward(axrt_gpu *g, const void *const *inputs, long warmup, long runs, double *us)
{
    const axrt_gpu_model *m = g->model;
    events e;
    void *start = NULL, *stop = NULL;
    g->error[0] = 0;
    if (open_events(g, &e)) return -1;
    int rc = 0;
    for (int i = 0; i < m->ninputs && !rc; i++) rc = g->d.htod(g->staging[i], inputs[i], m->io_bytes[i]);
    if (!rc) rc = e.create(&start, 0);
    if (!rc) rc = e.create(&stop, 0);
    for (long i = 0; i < warmup && !rc; i++) rc = axrt_gpu_forward(g, (const void *const *)g->staging, NULL);
    if (!rc) rc = g->d.sync();
    for (long i = 0; i < runs && !rc; i++) rc = timed_forward(g, &e, start, stop, &us[i]);
    if (start) e.destroy(start);
    if (stop) e.destroy(stop);
    if (rc && !g->error[0]) snprintf(g->error, sizeof g->error, "%s timing failed with error %d", g->api->vendor, rc);
    return rc;
}

const char *axrt_gpu_error(const axrt_gpu *g)
{
    return g->error;
}

void axrt_gpu_free(axrt_gpu *g)
{
    if (!g) return;
    if (g->d.lib) {
        for (int i = 0; i < AXRT_GPU_MAX_IO; i++)
            if (g->staging[i]) g->d.free(g->staging[i]);
        if (g->params) g->d.free(g->params);
        if (g->arena) g->d.free(g->arena);
        if (g->module) g->d.unload(g->module);
        dlclose(g->d.lib);
    }
    free(g->functions);
    free(g);
}
