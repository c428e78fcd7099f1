/*
 * redis_io.h - a small in-process stand-in for the parts of the Redis
 * module API that RDB loading and saving use, so that the module's own
 * rdb_load / rdb_save functions (redis/bf.c, redis/cf.c, compiled into the
 * target) run on fuzzer bytes without a server.
 *
 * The stand-in RDB stream is a byte string: LoadUnsigned and LoadDouble
 * take 8 little-endian bytes, LoadStringBuffer a u32 length then that many
 * bytes; running out sets the I/O error flag and returns 0 / NULL, as a
 * server does for a module type that handles I/O errors.  The Save
 * functions write the same encoding, so a value saved can be loaded back.
 * Alloc/TryAlloc/Calloc/Free count live blocks and refuse blocks above a
 * cap or beyond a 256 MiB machine (TryAlloc and Calloc return NULL;
 * Alloc, which aborts in a real server, must never be asked for more:
 * FZ_CHECK); INFO memory reports that machine, so the module's own memory
 * guard is exercised too.
 *
 * A target includes this header, then "../redis/rm.c", "../redis/util.c"
 * and the family file, and calls fz_redis_init() from LLVMFuzzerInitialize.
 */
#ifndef AMQ_FUZZ_REDIS_IO_H
#define AMQ_FUZZ_REDIS_IO_H

#include <stdarg.h>

#include "fuzz.h"
#include "../redis/module.h"

struct RedisModuleIO {
    const uint8_t *in; /* reading */
    size_t n;
    int error;
    uint8_t *out; /* writing */
    size_t len, cap;
};

/* The module's load-time configuration (module.c, not compiled in). */
amq_rm_config amq_rm_cfg = {0.01, 100, 2, 1024, 2, 20, 1, 32}; /* module.c's defaults */

#define FZ_REDIS_CAP ((size_t)16 << 20)

/* The machine the stand-in server reports (the module's memory guard
 * refuses what would not fit). */
#define FZ_REDIS_MACHINE ((unsigned long long)256 << 20)

static size_t fz_redis_live, fz_redis_live_bytes;

static void *fk_try_alloc(size_t size)
{
    uint8_t *p;
    if (size > FZ_REDIS_CAP || fz_redis_live_bytes + size > FZ_REDIS_MACHINE)
        return NULL;
    p = malloc(size + 16);
    if (p == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    fz_redis_live++;
    fz_redis_live_bytes += size;
    return p + 16;
}

static void *fk_alloc(size_t size)
{
    void *p = fk_try_alloc(size);
    FZ_CHECK(p != NULL, "RedisModule_Alloc(%zu) would abort the server", size);
    return p;
}

static void *fk_calloc(size_t nmemb, size_t size)
{
    void *p;
    if (size != 0 && nmemb > SIZE_MAX / size)
        return NULL;
    p = fk_try_alloc(nmemb * size);
    if (p != NULL)
        memset(p, 0, nmemb * size);
    return p;
}

static void fk_free(void *ptr)
{
    if (ptr == NULL)
        return;
    size_t size;
    FZ_CHECK(fz_redis_live > 0, "more frees than allocations");
    memcpy(&size, (uint8_t *)ptr - 16, sizeof size);
    fz_redis_live--;
    fz_redis_live_bytes -= size;
    free((uint8_t *)ptr - 16);
}

static uint64_t fk_load_unsigned(RedisModuleIO *io)
{
    uint64_t v = 0;
    int i;
    if (io->error || io->n < 8) {
        io->error = 1;
        return 0;
    }
    for (i = 7; i >= 0; i--)
        v = (v << 8) | io->in[i];
    io->in += 8;
    io->n -= 8;
    return v;
}

static double fk_load_double(RedisModuleIO *io)
{
    uint64_t bits = fk_load_unsigned(io);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static char *fk_load_string(RedisModuleIO *io, size_t *lenptr)
{
    uint32_t len;
    char *p;
    int i;

    *lenptr = 0;
    if (io->error || io->n < 4) {
        io->error = 1;
        return NULL;
    }
    for (len = 0, i = 3; i >= 0; i--)
        len = (len << 8) | io->in[i];
    if (len > io->n - 4) {
        io->error = 1;
        return NULL;
    }
    p = fk_alloc(len + 1u); /* the server's string loader allocates it */
    memcpy(p, io->in + 4, len);
    io->in += 4 + (size_t)len;
    io->n -= 4 + (size_t)len;
    *lenptr = len;
    return p;
}

static void fk_put(RedisModuleIO *io, const void *data, size_t len)
{
    if (io->len + len > io->cap) {
        size_t cap = (io->cap + len) * 2;
        uint8_t *nb = realloc(io->out, cap);
        FZ_CHECK(nb != NULL, "out of memory");
        io->out = nb;
        io->cap = cap;
    }
    memcpy(io->out + io->len, data, len);
    io->len += len;
}

static void fk_save_unsigned(RedisModuleIO *io, uint64_t v)
{
    uint8_t b[8];
    int i;
    for (i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    fk_put(io, b, 8);
}

static void fk_save_double(RedisModuleIO *io, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    fk_save_unsigned(io, bits);
}

static void fk_save_string(RedisModuleIO *io, const char *s, size_t len)
{
    uint8_t b[4];
    int i;
    FZ_CHECK(len <= UINT32_MAX, "string of %zu bytes", len);
    for (i = 0; i < 4; i++)
        b[i] = (uint8_t)(len >> (8 * i));
    fk_put(io, b, 4);
    if (len != 0)
        fk_put(io, s, len);
}

static int fk_is_io_error(RedisModuleIO *io)
{
    return io->error;
}

static RedisModuleCtx *fk_ctx_from_io(RedisModuleIO *io)
{
    (void)io;
    return NULL;
}

static void fk_log_io_error(RedisModuleIO *io, const char *level, const char *fmt, ...)
{
    (void)io;
    (void)level;
    (void)fmt;
}

/* INFO memory of the stand-in server: no maxmemory, FZ_REDIS_MACHINE of
 * RAM, used_memory what the module holds. */
static int fk_info_token;

static RedisModuleServerInfoData *fk_get_server_info(RedisModuleCtx *ctx, const char *section)
{
    (void)ctx;
    (void)section;
    return (RedisModuleServerInfoData *)(void *)&fk_info_token;
}

static void fk_free_server_info(RedisModuleCtx *ctx, RedisModuleServerInfoData *data)
{
    (void)ctx;
    (void)data;
}

static unsigned long long fk_info_field(RedisModuleServerInfoData *data, const char *field,
                                        int *out_err)
{
    (void)data;
    *out_err = 0;
    if (strcmp(field, "used_memory") == 0)
        return fz_redis_live_bytes;
    if (strcmp(field, "total_system_memory") == 0)
        return FZ_REDIS_MACHINE;
    if (strcmp(field, "maxmemory") == 0)
        return 0;
    *out_err = 1;
    return 0;
}

static void fk_digest_buf(RedisModuleDigest *md, const char *ele, size_t len)
{
    (void)md;
    (void)ele;
    (void)len;
}

static void fk_digest_ll(RedisModuleDigest *md, long long ele)
{
    (void)md;
    (void)ele;
}

static void fk_digest_end(RedisModuleDigest *md)
{
    (void)md;
}

static FZ_UNUSED void fz_redis_init(void)
{
    RedisModule_Alloc = fk_alloc;
    RedisModule_TryAlloc = fk_try_alloc;
    RedisModule_Calloc = fk_calloc;
    RedisModule_Free = fk_free;
    RedisModule_LoadUnsigned = fk_load_unsigned;
    RedisModule_LoadDouble = fk_load_double;
    RedisModule_LoadStringBuffer = fk_load_string;
    RedisModule_SaveUnsigned = fk_save_unsigned;
    RedisModule_SaveDouble = fk_save_double;
    RedisModule_SaveStringBuffer = fk_save_string;
    RedisModule_IsIOError = fk_is_io_error;
    RedisModule_GetContextFromIO = fk_ctx_from_io;
    RedisModule_LogIOError = fk_log_io_error;
    RedisModule_GetServerInfo = fk_get_server_info;
    RedisModule_FreeServerInfo = fk_free_server_info;
    RedisModule_ServerInfoGetFieldUnsigned = fk_info_field;
    RedisModule_DigestAddStringBuffer = fk_digest_buf;
    RedisModule_DigestAddLongLong = fk_digest_ll;
    RedisModule_DigestEndSequence = fk_digest_end;
}

/* A reader over bytes, a writer into a growing buffer. */
static FZ_UNUSED RedisModuleIO fz_reader(const uint8_t *data, size_t n)
{
    RedisModuleIO io;
    memset(&io, 0, sizeof io);
    io.in = data;
    io.n = n;
    return io;
}

static FZ_UNUSED RedisModuleIO fz_writer(void)
{
    RedisModuleIO io;
    memset(&io, 0, sizeof io);
    return io;
}

#endif /* AMQ_FUZZ_REDIS_IO_H */
