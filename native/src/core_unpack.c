/*
 * core_unpack.c - a compressed core (zstd, xz, lz4 frames, gzip),
 * decompressed once into a temporary file that is deleted from the start.
 *
 * Why once, to a file: a core is read at addresses spread over all of it
 * (the runtime, thread states, frames, code objects, strings), so every
 * format would need random access into the decompressed stream.  zstd
 * (systemd-coredump's default) and a single-block xz stream can restart
 * only at their start: an index of restart points would need the
 * decoder's window at each (up to 128 MiB for zstd), which their libraries
 * cannot save.  One pass to a file costs what building such an index would
 * (the whole stream is decompressed once), then each read is a pread.
 * Memory stays the decoder's state and two buffers; pages of zeros are
 * left as holes, so the file takes the core's size less them.
 *
 * Every format's library is optional (found by CMake): a core compressed
 * with one this build lacks is refused naming the library's package.
 * Bounded: at most max_size bytes are written; a stream that ends early
 * (a core cut short) or turns corrupt keeps what came before it, marked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api.h"
#include "core.h"
#include "errors.h"
#include "reads.h"

#ifdef PYF_HAVE_ZSTD
#include <zstd.h>
#endif
#ifdef PYF_HAVE_LZMA
#include <lzma.h>
#endif
#ifdef PYF_HAVE_LZ4
#include <lz4frame.h>
#endif
#ifdef PYF_HAVE_ZLIB
#include <zlib.h>
#endif

/* The decoders' helpers, unused in a build without any of the libraries. */
#define UNUSED_WITHOUT_CODECS __attribute__((unused))

#define IN_SIZE ((size_t)1 << 20)
#define OUT_SIZE ((size_t)1 << 20)
#define HOLE_BLOCK 4096u
#define DEFAULT_MAX_SIZE ((uint64_t)1 << 40)
#define XZ_MEMLIMIT ((uint64_t)1 << 30)

static const struct {
    const char *name, *package, *tool;
} k_kinds[] = {
    [PYF_CORE_PLAIN] = {"plain", "", ""},
    [PYF_CORE_ZSTD] = {"zstd", "libzstd-dev", "zstd -d"},
    [PYF_CORE_XZ] = {"xz", "liblzma-dev", "xz -d"},
    [PYF_CORE_LZ4] = {"lz4", "liblz4-dev", "lz4 -d"},
    [PYF_CORE_GZIP] = {"gzip", "zlib1g-dev", "gzip -d"},
};

const char *pyf__core_compression_name(uint32_t kind)
{
    return kind <= PYF_CORE_GZIP ? k_kinds[kind].name : "unknown";
}

uint32_t pyf__core_compression_of(const uint8_t *h, size_t len)
{
    if (len >= 4 && h[0] == 0x28 && h[1] == 0xb5 && h[2] == 0x2f && h[3] == 0xfd)
        return PYF_CORE_ZSTD;
    if (len >= 4 && (h[0] & 0xf0) == 0x50 && h[1] == 0x2a && h[2] == 0x4d && h[3] == 0x18)
        return PYF_CORE_ZSTD; /* a skippable frame first */
    if (len >= 6 && memcmp(h, "\xfd" "7zXZ\0", 6) == 0)
        return PYF_CORE_XZ;
    if (len >= 4 && h[0] == 0x04 && h[1] == 0x22 && h[2] == 0x4d && h[3] == 0x18)
        return PYF_CORE_LZ4;
    if (len >= 2 && h[0] == 0x1f && h[1] == 0x8b)
        return PYF_CORE_GZIP;
    return PYF_CORE_PLAIN;
}

/* ==== the output file ==================================================== */

typedef struct sink {
    int fd;
    uint64_t size;       /* bytes produced */
    uint64_t max;
    const char *dir;
    int err;             /* errno of a failed write, 0 */
} sink;

static int temp_file(const char *dir)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    char path[4096];
    if (snprintf(path, sizeof path, "%s/pyframes-core-XXXXXX", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd2 = mkstemp(path);
    if (fd2 >= 0) {
        unlink(path);
        fcntl(fd2, F_SETFD, FD_CLOEXEC);
    }
    return fd2;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    static const uint8_t zeros[HOLE_BLOCK];
    return n <= sizeof zeros && memcmp(p, zeros, n) == 0;
}

/* Append n bytes, leaving holes for whole blocks of zeros.  False when the
 * file cannot take them (errno in s->err) or max_size is passed. */
UNUSED_WITHOUT_CODECS static bool sink_put(sink *s, const uint8_t *p, size_t n)
{
    if (n > s->max - s->size)
        return false;
    size_t at = 0;
    while (at < n) {
        size_t len = n - at < HOLE_BLOCK ? n - at : HOLE_BLOCK;
        if (!all_zero(p + at, len)) {
            size_t run = len; /* write neighbouring data blocks in one call */
            while (at + run < n) {
                size_t next = n - at - run < HOLE_BLOCK ? n - at - run : HOLE_BLOCK;
                if (all_zero(p + at + run, next))
                    break;
                run += next;
            }
            if (pyf__pwrite_all(s->fd, p + at, run, s->size + at) != 0) {
                s->err = errno;
                return false;
            }
            len = run;
        }
        at += len;
    }
    s->size += n;
    return true;
}

/* ==== the decoders ======================================================= */

typedef struct source {
    int fd;
    uint8_t *buf;
    size_t len, pos;     /* buf[pos, len) not yet decoded */
    bool eof;
    int err;
    uint64_t consumed;   /* compressed bytes read */
} source;

/* Refill the input buffer when it is empty: false at the end of the file
 * or on an error (s->err). */
UNUSED_WITHOUT_CODECS static bool source_fill(source *s)
{
    if (s->pos < s->len)
        return true;
    if (s->eof)
        return false;
    for (;;) {
        ssize_t n = read(s->fd, s->buf, IN_SIZE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            s->err = errno;
            s->eof = true;
            return false;
        }
        s->pos = 0;
        s->len = (size_t)n;
        s->consumed += (uint64_t)n;
        if (n == 0)
            s->eof = true;
        return n > 0;
    }
}

/* What a decoder's run ended with. */
enum { DONE, TRUNCATED, CORRUPT, FULL, NOMEM, READ_ERR };

/* A decoder's end once its input ran out: a read error, or a stream that
 * stopped inside a frame (incomplete), is not DONE. */
UNUSED_WITHOUT_CODECS static int ended(int end, int read_err, bool incomplete)
{
    if (end == DONE && read_err)
        return READ_ERR;
    if (end == DONE && incomplete)
        return TRUNCATED;
    return end;
}

typedef struct run {
    source *in;
    sink *out;
    uint8_t *obuf;
    char why[160];       /* the library's words for CORRUPT */
} run;

#ifdef PYF_HAVE_ZSTD
static int run_zstd(run *r)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    if (ds == NULL || ZSTD_isError(ZSTD_initDStream(ds))) {
        ZSTD_freeDStream(ds);
        return NOMEM;
    }
    size_t last = 0; /* 0 once a frame is complete */
    int end = DONE;
    for (bool more = true; end == DONE && more;) {
        /* at the end of the input, once more to flush what is held, unless
         * the last frame is whole (the next call would start another) */
        more = source_fill(r->in);
        if (!more && last == 0)
            break;
        ZSTD_inBuffer in = {r->in->buf, more ? r->in->len : 0, more ? r->in->pos : 0};
        ZSTD_outBuffer out;
        do {
            out = (ZSTD_outBuffer){r->obuf, OUT_SIZE, 0};
            last = ZSTD_decompressStream(ds, &out, &in);
            if (ZSTD_isError(last)) {
                pyf__fmt(r->why, sizeof r->why, "%s", ZSTD_getErrorName(last));
                end = CORRUPT;
            } else if (!sink_put(r->out, r->obuf, out.pos)) {
                end = FULL;
            }
        } while (end == DONE && (in.pos < in.size || out.pos == out.size));
        if (more)
            r->in->pos = in.pos;
    }
    ZSTD_freeDStream(ds);
    return ended(end, r->in->err, last != 0);
}
#endif

#ifdef PYF_HAVE_LZMA
static int run_xz(run *r)
{
    lzma_stream z = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&z, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK)
        return NOMEM;
    int end = DONE;
    for (;;) {
        bool more = source_fill(r->in);
        z.next_in = r->in->buf + r->in->pos;
        z.avail_in = r->in->len - r->in->pos;
        z.next_out = r->obuf;
        z.avail_out = OUT_SIZE;
        lzma_ret ret = lzma_code(&z, more ? LZMA_RUN : LZMA_FINISH);
        r->in->pos = r->in->len - z.avail_in;
        if (!sink_put(r->out, r->obuf, OUT_SIZE - z.avail_out)) {
            end = FULL;
            break;
        }
        if (ret == LZMA_STREAM_END)
            break;
        if (ret == LZMA_BUF_ERROR && !more) {
            end = TRUNCATED;
            break;
        }
        if (ret == LZMA_MEM_ERROR) {
            end = NOMEM;
            break;
        }
        if (ret == LZMA_MEMLIMIT_ERROR) {
            pyf__fmt(r->why, sizeof r->why, "it needs more than %llu MiB of memory to "
                     "decompress", (unsigned long long)(XZ_MEMLIMIT >> 20));
            end = CORRUPT;
            break;
        }
        if (ret != LZMA_OK) {
            pyf__fmt(r->why, sizeof r->why, "liblzma error %d", (int)ret);
            end = CORRUPT;
            break;
        }
        if (!more && z.avail_out != 0) {
            end = r->in->err ? READ_ERR : TRUNCATED;
            break;
        }
    }
    lzma_end(&z);
    return end;
}
#endif

#ifdef PYF_HAVE_LZ4
static int run_lz4(run *r)
{
    LZ4F_dctx *d = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
        return NOMEM;
    size_t hint = 0; /* 0 once a frame is complete */
    int end = DONE;
    for (bool more = true; end == DONE && more;) {
        more = source_fill(r->in);
        if (!more && hint == 0)
            break; /* the last frame is whole */
        const uint8_t *src = more ? r->in->buf + r->in->pos : NULL;
        size_t left = more ? r->in->len - r->in->pos : 0, dst;
        do {
            size_t used = left;
            dst = OUT_SIZE;
            hint = LZ4F_decompress(d, r->obuf, &dst, src, &used, NULL);
            if (LZ4F_isError(hint)) {
                pyf__fmt(r->why, sizeof r->why, "%s", LZ4F_getErrorName(hint));
                end = CORRUPT;
                break;
            }
            src = src != NULL ? src + used : NULL;
            left -= used;
            if (!sink_put(r->out, r->obuf, dst))
                end = FULL;
        } while (end == DONE && (left > 0 || dst == OUT_SIZE));
        if (more)
            r->in->pos = r->in->len - left;
    }
    LZ4F_freeDecompressionContext(d);
    return ended(end, r->in->err, hint != 0);
}
#endif

#ifdef PYF_HAVE_ZLIB
static int run_gzip(run *r)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 32) != Z_OK) /* gzip or zlib header */
        return NOMEM;
    int end = DONE, ret = Z_OK;
    while (end == DONE && source_fill(r->in)) {
        if (ret == Z_STREAM_END) { /* another member follows */
            inflateReset(&z);
            ret = Z_OK;
        }
        z.next_in = r->in->buf + r->in->pos;
        z.avail_in = (uInt)(r->in->len - r->in->pos);
        do {
            z.next_out = r->obuf;
            z.avail_out = (uInt)OUT_SIZE;
            ret = inflate(&z, Z_NO_FLUSH);
            if (ret == Z_STREAM_END && z.avail_in > 0) /* another member follows */
                ret = inflateReset(&z);
            else if (ret == Z_BUF_ERROR)
                ret = Z_OK; /* no progress: more input needed */
            if (ret != Z_OK && ret != Z_STREAM_END) {
                pyf__fmt(r->why, sizeof r->why, "%s", z.msg ? z.msg : "zlib error");
                end = ret == Z_MEM_ERROR ? NOMEM : CORRUPT;
            } else if (!sink_put(r->out, r->obuf, OUT_SIZE - z.avail_out)) {
                end = FULL;
            }
        } while (end == DONE && (z.avail_out == 0 || z.avail_in > 0) && ret != Z_STREAM_END);
        r->in->pos = r->in->len - z.avail_in;
    }
    inflateEnd(&z);
    return ended(end, r->in->err, ret != Z_STREAM_END);
}
#endif

int pyf__core_unpack(pyf_core *c, int in_fd, const char *path, uint32_t kind,
                     const char *temp_dir, uint64_t max_size, int *out_fd, uint64_t *size,
                     pyf_failure *f)
{
    int (*decode)(run *) = NULL;

    *out_fd = -1;
    *size = 0;
#ifdef PYF_HAVE_ZSTD
    if (kind == PYF_CORE_ZSTD)
        decode = run_zstd;
#endif
#ifdef PYF_HAVE_LZMA
    if (kind == PYF_CORE_XZ)
        decode = run_xz;
#endif
#ifdef PYF_HAVE_LZ4
    if (kind == PYF_CORE_LZ4)
        decode = run_lz4;
#endif
#ifdef PYF_HAVE_ZLIB
    if (kind == PYF_CORE_GZIP)
        decode = run_gzip;
#endif
    if (kind > PYF_CORE_GZIP || kind == PYF_CORE_PLAIN)
        return pyf__failure_set(f, PYF_EINVAL, "unknown compression %u", kind);
    if (decode == NULL)
        return pyf__failure_set(f, PYF_ENOTSUP, "%s is compressed with %s, which this "
                                "libpyframes was built without (build it with %s installed, "
                                "or decompress the core first: %s %s)", path,
                                k_kinds[kind].name, k_kinds[kind].package, k_kinds[kind].tool,
                                path);
    const char *dir = temp_dir;
    if (dir == NULL || dir[0] == '\0')
        dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0')
        dir = "/var/tmp";
    sink out = {temp_file(dir), 0, max_size ? max_size : DEFAULT_MAX_SIZE, dir, 0};
    if (out.fd < 0)
        return pyf__failure_set(f, PYF_EIO, "cannot make a temporary file in %s to decompress "
                                "%s into: %s (set TMPDIR to a directory with room for it)",
                                dir, path, strerror(errno));
    source in = {in_fd, malloc(IN_SIZE), 0, 0, false, 0, 0};
    run r = {&in, &out, malloc(OUT_SIZE), ""};
    int end = in.buf != NULL && r.obuf != NULL ? decode(&r) : NOMEM;
    free(in.buf);
    free(r.obuf);
    int rc = PYF_OK;
    switch (end) {
    case DONE:
        break;
    case TRUNCATED:
        pyf__core_partial(c, PYF_CORE_STREAM_ENDED, "its %s stream ends early, after %llu "
                          "bytes (the core is cut short): %llu bytes of the core are read",
                          k_kinds[kind].name, (unsigned long long)in.consumed,
                          (unsigned long long)out.size);
        break;
    case CORRUPT:
        pyf__core_partial(c, PYF_CORE_STREAM_ENDED, "its %s stream is corrupt past byte "
                          "%llu of the core (%s): what comes before is read",
                          k_kinds[kind].name, (unsigned long long)out.size, r.why);
        if (out.size == 0)
            rc = pyf__failure_set(f, PYF_ECORRUPT, "%s: its %s stream is corrupt from the "
                                  "start (%s)", path, k_kinds[kind].name, r.why);
        break;
    case FULL:
        if (out.err != 0)
            rc = pyf__failure_set(f, PYF_EIO, "cannot decompress %s into %s after %llu bytes: "
                                  "%s (set TMPDIR to a directory with room for the core, or "
                                  "decompress it there: %s %s)", path, dir,
                                  (unsigned long long)out.size, strerror(out.err),
                                  k_kinds[kind].tool, path);
        else
            rc = pyf__failure_set(f, PYF_EDEPTH, "%s decompresses to more than %llu bytes",
                                  path, (unsigned long long)out.max);
        break;
    case READ_ERR:
        rc = pyf__failure_set(f, PYF_EIO, "cannot read %s: %s", path, strerror(in.err));
        break;
    default:
        rc = pyf__failure_set(f, PYF_ENOMEM, "out of memory decompressing %s", path);
    }
    /* the holes at the end are part of the core */
    if (rc == PYF_OK && ftruncate(out.fd, (off_t)out.size) != 0)
        rc = pyf__failure_set(f, PYF_EIO, "cannot decompress %s into %s: %s", path, dir,
                              strerror(errno));
    if (rc != PYF_OK) {
        close(out.fd);
        return rc;
    }
    *out_fd = out.fd;
    *size = out.size;
    return PYF_OK;
}
