/*
 * seeds.c - writes the seed corpus of every fuzz target, so that no binary
 * corpus lives in git.  Usage: fuzz-seeds OUTDIR; writes
 * OUTDIR/<target>/seed-NNNN for each target of the table at the bottom.
 * Deterministic: the same library gives the same files.
 *
 * Every kind built into the library gets seeds without any change here:
 * valid files come from amq_config_init(kind) at a small capacity (kinds
 * that need more than defaults add variants in kind_variants()), and the
 * payload target of a kind, fuzz_payload_<name>, gets their parameter
 * blocks and payloads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "amq.h"
#include "amq/guava.h"
#include "amq/partitioned.h"
#include "common/endian.h"
#include "../cli/crc64.h"

static const char *outdir;

/* ---- output -------------------------------------------------------------------- */

typedef struct sink {
    char dir[512];
    unsigned n;
} sink;

static void sink_open(sink *s, const char *target)
{
    snprintf(s->dir, sizeof s->dir, "%s/%s", outdir, target);
    if (mkdir(s->dir, 0777) != 0 && errno != EEXIST) {
        perror(s->dir);
        exit(2);
    }
    s->n = 0;
}

static void emit(sink *s, const void *data, size_t len)
{
    char path[600];
    FILE *fp;

    snprintf(path, sizeof path, "%s/seed-%04u", s->dir, s->n++);
    fp = fopen(path, "wb");
    if (fp == NULL || (len != 0 && fwrite(data, 1, len, fp) != len) || fclose(fp) != 0) {
        perror(path);
        exit(2);
    }
}

static void emit_str(sink *s, const char *str)
{
    emit(s, str, strlen(str));
}

/* splitmix64 */
static uint64_t rnd(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void emit_random(sink *s, uint64_t seed, unsigned count, size_t maxlen)
{
    uint8_t buf[4096];
    unsigned i;
    size_t len, j;
    if (maxlen > sizeof buf)
        maxlen = sizeof buf;
    for (i = 0; i < count; i++) {
        len = (size_t)(rnd(&seed) % (maxlen + 1));
        for (j = 0; j < len; j++)
            buf[j] = (uint8_t)rnd(&seed);
        emit(s, buf, len);
    }
}

/* ---- filters of every kind ----------------------------------------------------------- */

#define MAX_FILES 96

typedef struct fileset {
    uint8_t *bytes[MAX_FILES];
    size_t len[MAX_FILES];
    uint32_t kind[MAX_FILES];
    size_t n;
} fileset;

static void add_keys(amq_filter *f, unsigned n)
{
    char key[32];
    unsigned i;
    int len;
    for (i = 0; i < n; i++) {
        len = snprintf(key, sizeof key, "key-%u", i);
        (void)amq_filter_add(f, key, (size_t)len);
    }
}

static void keep(fileset *fs, amq_filter *f)
{
    uint64_t size;
    if (f == NULL)
        return;
    if (fs->n == MAX_FILES) { /* full: the filter is dropped, not leaked */
        amq_filter_free(f);
        return;
    }
    if (amq_filter_serialized_size(f, &size) == AMQ_OK && size < (1u << 20)) {
        fs->bytes[fs->n] = malloc((size_t)size);
        if (fs->bytes[fs->n] != NULL &&
            amq_filter_serialize(f, fs->bytes[fs->n], (size_t)size, NULL) == AMQ_OK) {
            fs->len[fs->n] = (size_t)size;
            fs->kind[fs->n] = amq_filter_kind(f);
            fs->n++;
        }
    }
    amq_filter_free(f);
}

static int pick_u64(void *ctx, const amq_field *fd)
{
    uint64_t *v = ctx;
    if (strcmp(fd->name, "growing_to_slots") == 0)
        *v = fd->u64;
    return 0;
}

/* The slots a quotient filter is growing into (0: no growth under way). */
static uint64_t growing_to(const amq_filter *f)
{
    uint64_t v = 0;
    (void)amq_filter_describe(f, pick_u64, &v);
    return v;
}

/* Static kinds are built from their keys (the same "key-%u" set). */
static amq_filter *build_static(const amq_config *cfg, unsigned keys)
{
    amq_hash128 h[256];
    amq_filter *f = NULL;
    char key[32];
    unsigned i;
    int len;

    for (i = 0; i < keys && i < 256; i++) {
        len = snprintf(key, sizeof key, "key-%u", i);
        h[i] = amq_hash_key(cfg->hash_algo, cfg->seed, key, (size_t)len);
    }
    if (amq_filter_build(cfg, h, i, &f, NULL) != AMQ_OK)
        return NULL;
    return f;
}

static amq_filter *make(const amq_config *cfg, unsigned keys)
{
    amq_filter *f = NULL;
    if (amq_kind_is_static(cfg->kind))
        return build_static(cfg, keys);
    if (amq_filter_new(cfg, &f, NULL) != AMQ_OK)
        return NULL;
    add_keys(f, keys);
    return f;
}

/* Variants beyond a kind's defaults: other hashes, sizes, probe schemes. */
static void kind_variants(uint32_t kind, fileset *fs)
{
    amq_config cfg;
    amq_bloom_params p;
    amq_bloom *b;
    amq_filter *f;
    uint32_t probe;
    static const uint64_t bits[] = {1, 63, 64, 65, 1000};
    size_t i;

    amq_config_init(&cfg, kind);
    cfg.capacity = 100;
    cfg.hash_algo = AMQ_HASH_MURMUR3;
    cfg.seed = 7;
    keep(fs, make(&cfg, 30));
    cfg.hash_algo = AMQ_HASH_REDISBLOOM;
    cfg.seed = 0;
    keep(fs, make(&cfg, 30));
    cfg.hash_algo = AMQ_HASH_MURMUR64A;
    cfg.seed = 0x123456789abcdefull;
    keep(fs, make(&cfg, 30));

    if (kind == AMQ_KIND_FUSE) {
        amq_config_init(&cfg, kind);
        cfg.fingerprint_bits = 16;
        cfg.arity = 4;
        keep(fs, make(&cfg, 100));
    }
    if (kind == AMQ_KIND_RIBBON) {
        static const double rates[] = {0.5, 0.25, 0.001, 1e-9};
        for (i = 0; i < sizeof rates / sizeof rates[0]; i++) {
            amq_config_init(&cfg, kind);
            cfg.fpp = rates[i];
            keep(fs, make(&cfg, 100));
        }
    }
    if (kind == AMQ_KIND_AGING) {
        /* time mode, several generations in */
        amq_config_init(&cfg, kind);
        cfg.window_ms = 1000;
        cfg.rate = 50;
        f = make(&cfg, 0);
        if (f != NULL && amq_aging_advance(f, 123456) == AMQ_OK) {
            add_keys(f, 40);
            keep(fs, f);
        } else {
            amq_filter_free(f);
        }
    }
    if (kind == AMQ_KIND_PARTITIONED) {
        /* a slice (layout 1): partitions 2..4 of 8, as a partition-sharded filter's shard */
        amq_partitioned *sl;
        amq_config_init(&cfg, kind);
        cfg.partitions = 8;
        cfg.capacity = 400;
        f = make(&cfg, 100);
        if (f != NULL && amq_partitioned_slice(amq_filter_partitioned(f), 2, 3, NULL, &sl) ==
                             AMQ_OK) {
            amq_filter *g;
            if (amq_filter_from_partitioned(sl, &g) == AMQ_OK)
                keep(fs, g);
            else
                amq_partitioned_free(sl);
        }
        amq_filter_free(f);
    }
    if (kind == AMQ_KIND_EXPANDABLE) {
        /* from one bucket pair: two doublings and two entries in the stash */
        amq_config_init(&cfg, kind);
        cfg.capacity = 1;
        keep(fs, make(&cfg, 190));
    }
    if (kind == AMQ_KIND_QUOTIENT) {
        /* from the smallest table (64 slots): grown by 10 % many times, runs pushed into
         * later lines; at the loosest target; and five adds, all still in the ring */
        amq_config_init(&cfg, kind);
        cfg.capacity = 1;
        keep(fs, make(&cfg, 400));
        keep(fs, make(&cfg, 5));
        cfg.fpp = 0.5;
        keep(fs, make(&cfg, 120));
        /* saved during a growth (both tables, the growth block): from 1,000 keys, at the
         * first add that shows it under way, and two adds further into it */
        for (i = 0; i < 2; i++) {
            char key[32];
            unsigned n, more = 0;
            amq_config_init(&cfg, kind);
            cfg.capacity = 1000;
            if ((f = make(&cfg, 0)) == NULL)
                continue;
            for (n = 0; n < 5000 && (growing_to(f) == 0 || more++ < 2 * i); n++)
                (void)amq_filter_add(f, key, (size_t)snprintf(key, sizeof key, "key-%u", n));
            if (growing_to(f) != 0)
                keep(fs, f);
            else
                amq_filter_free(f);
        }
    }
    if (kind == AMQ_KIND_POCKET) {
        /* from the smallest start (64 keys): grown and split into 8 segments, spare
         * entries; five adds, all still pending; 6-bit entries run out of bits (deep
         * ranges, entries of 3 bits and fewer) */
        amq_config_init(&cfg, kind);
        cfg.capacity = 64;
        keep(fs, make(&cfg, 1000));
        keep(fs, make(&cfg, 5));
        cfg.fingerprint_bits = 6;
        keep(fs, make(&cfg, 5003));
        cfg.fingerprint_bits = 5;
        cfg.fpp = 0.5;
        keep(fs, make(&cfg, 700));
    }
    if (kind == AMQ_KIND_BLOOM) {
        for (i = 0; i < sizeof bits / sizeof bits[0]; i++) {
            amq_config_init(&cfg, kind);
            cfg.bits = bits[i];
            cfg.k = (uint32_t)(1 + i * 3);
            keep(fs, make(&cfg, 20));
        }
        amq_config_init(&cfg, kind);
        cfg.capacity = 64;
        cfg.bits_per_key = 10;
        keep(fs, make(&cfg, 64));
        for (probe = AMQ_BLOOM_PROBE_GUAVA; probe <= AMQ_BLOOM_PROBE_REDISBLOOM; probe++) {
            if (amq_bloom_params_for(100, 0.01, &p) != AMQ_OK)
                continue;
            p.probe = probe;
            if (probe == AMQ_BLOOM_PROBE_GUAVA)
                p.hash_algo = AMQ_HASH_MURMUR3;
            else
                p.hash_algo = AMQ_HASH_REDISBLOOM;
            if (amq_bloom_new(&p, NULL, &b) != AMQ_OK || amq_filter_from_bloom(b, &f) != AMQ_OK)
                continue;
            add_keys(f, 40);
            keep(fs, f);
        }
    }
}

static void all_filters(fileset *fs)
{
    amq_config cfg;
    uint32_t kind;

    memset(fs, 0, sizeof *fs);
    for (kind = 1; kind < 64; kind++) {
        if (amq_kind_name(kind) == NULL)
            continue;
        amq_config_init(&cfg, kind);
        cfg.capacity = 200;
        keep(fs, make(&cfg, 0));
        keep(fs, make(&cfg, 50));
        kind_variants(kind, fs);
    }
}

static void free_filters(fileset *fs)
{
    size_t i;
    for (i = 0; i < fs->n; i++)
        free(fs->bytes[i]);
}

/* ---- the targets' seeds ------------------------------------------------------------------ */

static void seeds_container(sink *s)
{
    fileset fs;
    size_t i, cut;
    uint8_t *copy;

    all_filters(&fs);
    for (i = 0; i < fs.n; i++) {
        emit(s, fs.bytes[i], fs.len[i]);
        /* A few damaged forms; the fuzzer finds the rest. */
        if (i % 4 == 0) {
            for (cut = 1; cut < fs.len[i]; cut = cut * 3 + 1)
                emit(s, fs.bytes[i], cut);
            copy = malloc(fs.len[i]);
            memcpy(copy, fs.bytes[i], fs.len[i]);
            copy[fs.len[i] - 1] ^= 0x40; /* payload checksum mismatch */
            emit(s, copy, fs.len[i]);
            free(copy);
        }
    }
    emit(s, "", 0);
    emit(s, "\x89" "AMQ\r\n\x1a\n", 8);
    emit_str(s, "plain text\n");
    free_filters(&fs);
}

/* fuzz_header: a control byte (repair both checksums), then a real file
 * with one header field changed. */
static void seeds_header(sink *s)
{
    static const size_t fields[] = {8, 10, 12, 14, 16, 24, 32, 36, 40, 48};
    fileset fs;
    size_t i, j;
    uint8_t *buf;

    all_filters(&fs);
    for (i = 0; i < fs.n && i < 4; i++) {
        buf = malloc(fs.len[i] + 1);
        buf[0] = 3;
        memcpy(buf + 1, fs.bytes[i], fs.len[i]);
        emit(s, buf, fs.len[i] + 1);
        for (j = 0; j < sizeof fields / sizeof fields[0]; j++) {
            buf[1 + fields[j]] ^= 0x81;
            emit(s, buf, fs.len[i] + 1);
            buf[1 + fields[j]] ^= 0x81;
        }
        free(buf);
    }
    free_filters(&fs);
}

/* fuzz_payload_<kind>: (algo, seed, items, P, params, payload) of real files. */
/* An expandable filter's bytes in the layout before lane 31 summed up the
 * stash (params 2: 0, lane 31 the count of the bucket's cells), which a
 * reader still loads; 0 when the payload is not the shape expected. */
static int older_expandable(uint8_t *params, uint8_t *payload, size_t len)
{
    const uint32_t q = (uint32_t)amq_load64(params + 8) & 0xffffffffu;
    const uint64_t cap = amq_load64(params + 24);
    uint64_t nb, i, c, n;
    if (q > 20 || cap > (1u << 20))
        return 0;
    nb = (uint64_t)1 << q;
    if (len != 64 * nb + 8 * cap)
        return 0;
    params[2] = params[3] = 0;
    for (i = 0; i < nb; i++)
        payload[64 * i + 62] = payload[64 * i + 63] = 0;
    for (i = 0; i < cap; i++) {
        c = amq_load64(payload + 64 * nb + 8 * i);
        if (c == 0 || (c >> 16) >= nb)
            continue;
        n = (uint64_t)payload[64 * (c >> 16) + 62] + 1;
        payload[64 * (c >> 16) + 62] = (uint8_t)n; /* a few cells a bucket here */
    }
    return 1;
}

/* A quotient filter's bytes with a deep list written by hand (the kind
 * makes one only after its table passed about 2^21 slots): two ranges in
 * the padding after the ring, and a run of one void lane (0x8000) in the
 * first free slot of line 0 whose slot the first range meets; 0 when the
 * payload is not the shape expected (the ring's 136 bytes, the growth's
 * 208 (none under way), their padding to 384, then the table). */
static int quotient_with_deep_list(uint8_t *params, uint8_t *payload, size_t len)
{
    const uint64_t m = amq_load64(params + 16), hb = 384;
    uint64_t w, a, lo;
    unsigned i;
    if (amq_load64(params + 32) != 0 || amq_load64(params + 48) != 0 || m < 64 || m > (1u << 20) ||
        len != hb + ((m + 27) / 28 + 16) * 64)
        return 0;
    w = amq_load64(payload + hb);
    if ((w & 255u) != 0)
        return 0;
    for (a = 0; a < 28; a++) /* a slot with no run whose lane is empty */
        if (!((w >> (8 + a)) & 1) && payload[hb + 8 + 2 * a] == 0 && payload[hb + 9 + 2 * a] == 0)
            break;
    if (a == 28)
        return 0; /* (an empty lane: no run covers it, so slot a's run of one fits there) */
    lo = (uint64_t)(((unsigned __int128)a << 64) / m) + 1; /* inside slot a */
    w |= (uint64_t)1 << (8 + a) | (uint64_t)1 << (36 + a);
    for (i = 0; i < 8; i++)
        payload[hb + i] = (uint8_t)(w >> (8 * i));
    payload[hb + 8 + 2 * a] = 0x00;
    payload[hb + 9 + 2 * a] = 0x80;
    params[32] = 2;
    for (i = 0; i < 8; i++) {
        payload[344 + i] = (uint8_t)(lo >> (8 * i));
        payload[352 + i] = (uint8_t)((lo + 1000) >> (8 * i));
        payload[360 + i] = (uint8_t)(UINT64_C(0xfff0000000000000) >> (8 * i));
        payload[368 + i] = 0xff;
    }
    return 1;
}

static void seeds_payload(uint32_t kind)
{
    char target[64];
    const char *name = amq_kind_name(kind);
    fileset fs;
    sink s;
    size_t i, j, off, plen;
    uint8_t *buf;

    snprintf(target, sizeof target, "fuzz_payload_%s", name);
    for (j = 0; target[j]; j++)
        if (target[j] == '-')
            target[j] = '_';
    sink_open(&s, target);
    all_filters(&fs);
    for (i = 0; i < fs.n; i++) {
        if (fs.kind[i] != kind)
            continue;
        plen = (size_t)(fs.bytes[i][32] | (fs.bytes[i][33] << 8));
        off = (size_t)amq_load64(fs.bytes[i] + 40);
        buf = malloc(19 + plen + fs.len[i]);
        buf[0] = fs.bytes[i][12]; /* hash algorithm: 1..4 map to themselves */
        memcpy(buf + 1, fs.bytes[i] + 16, 8);  /* seed */
        memcpy(buf + 9, fs.bytes[i] + 24, 8);  /* items */
        buf[17] = (uint8_t)plen;
        buf[18] = (uint8_t)(plen >> 8);
        memcpy(buf + 19, fs.bytes[i] + 64, plen);
        memcpy(buf + 19 + plen, fs.bytes[i] + off, fs.len[i] - off);
        emit(&s, buf, 19 + plen + fs.len[i] - off);
        if (kind == AMQ_KIND_EXPANDABLE && older_expandable(buf + 19, buf + 19 + plen,
                                                            fs.len[i] - off))
            emit(&s, buf, 19 + plen + fs.len[i] - off);
        if (kind == AMQ_KIND_QUOTIENT && plen == 64 &&
            quotient_with_deep_list(buf + 19, buf + 19 + plen, fs.len[i] - off))
            emit(&s, buf, 19 + plen + fs.len[i] - off);
        free(buf);
    }
    free_filters(&fs);
}

static void seeds_all_payloads(sink *unused)
{
    uint32_t kind;
    (void)unused;
    for (kind = 1; kind < 64; kind++)
        if (amq_kind_name(kind) != NULL)
            seeds_payload(kind);
}

static void seeds_policy(sink *s)
{
    static const double bpk[] = {1, 4.5, 10, 20, 44};
    static const size_t counts[] = {0, 1, 10, 100};
    static const uint32_t encodings[] = {AMQ_POLICY_LEVELDB, AMQ_POLICY_FUSE, AMQ_POLICY_RIBBON};
    amq_slice keys[100];
    char names[100][16];
    uint8_t blob[8192], in[8192];
    size_t i, j, c, e, len;

    for (i = 0; i < 100; i++) {
        keys[i].len = (size_t)snprintf(names[i], sizeof names[i], "key-%zu", i);
        keys[i].data = names[i];
    }
    for (e = 0; e < sizeof encodings / sizeof encodings[0]; e++)
    for (i = 0; i < sizeof bpk / sizeof bpk[0]; i++) {
        for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            if (amq_policy_build(encodings[e], keys, counts[c], bpk[i], blob,
                                 sizeof blob, &len) != AMQ_OK)
                continue;
            for (j = 0; j < 2; j++) { /* a present key and an absent one */
                const char *k = j == 0 ? "key-0" : "absent";
                in[0] = (uint8_t)strlen(k);
                memcpy(in + 1, k, in[0]);
                memcpy(in + 1 + in[0], blob, len);
                emit(s, in, 1 + in[0] + len);
            }
        }
    }
    emit(s, "\x01" "a" "\x00\xff\x00\x00\x00\x00\x00\x00\x00\xff", 12); /* extended */
    emit(s, "\x01" "a" "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x1f", 12); /* reserved k */
    emit(s, "\x00\x07", 2);
}

static void seeds_roundtrip_policy(sink *s)
{
    emit(s, "\x01\x80\x02\x03key\x01a\x00", 9);
    emit(s, "\x00\x00\x00\x00\x00\x00\x00\x24\x40\x02hi", 12); /* bpk 10.0 as a double */
    emit_random(s, 11, 40, 600);
}

/* Keys of klen random letters, each after its length byte, written from
 * buf[n] while n is under until and there is room for one more; returns
 * the new n. */
static size_t put_keys(uint8_t *buf, size_t n, size_t until, size_t cap, uint8_t klen,
                       uint64_t *st)
{
    size_t j;
    while (n < until && n + klen + 2u < cap) {
        buf[n++] = klen;
        for (j = 0; j < klen; j++)
            buf[n++] = (uint8_t)('a' + rnd(st) % 26);
    }
    return n;
}

static void seeds_roundtrip_filter(sink *s)
{
    uint8_t buf[512];
    uint64_t st = 5;
    unsigned how, i;
    size_t n, j;

    for (how = 0; how < 4; how++) {
        for (i = 0; i < 6; i++) {
            n = 0;
            buf[n++] = 0;                 /* kind: the first maker */
            buf[n++] = (uint8_t)how;      /* bloom: which way to size */
            buf[n++] = (uint8_t)i;        /* hash algorithm */
            for (j = 0; j < 8; j++)       /* seed */
                buf[n++] = (uint8_t)rnd(&st);
            buf[n++] = (uint8_t)(i * 40); /* capacity */
            buf[n++] = (uint8_t)i;
            for (j = 0; j < 6; j++)       /* the way's parameters */
                buf[n++] = (uint8_t)rnd(&st);
            buf[n++] = (uint8_t)(i & 1);  /* flags: through a file */
            n = put_keys(buf, n, 40u + 60u * i, sizeof buf, 8, &st);
            emit(s, buf, n);
        }
    }
    /* The other makers (kinds 1..): random parameters, 8-byte keys. */
    for (how = 1; how < 4; how++) {
        for (i = 0; i < 8; i++) {
            n = 0;
            buf[n++] = (uint8_t)how;
            for (j = 0; j < 24; j++)
                buf[n++] = (uint8_t)rnd(&st);
            buf[n++] = (uint8_t)(i & 1);
            n = put_keys(buf, n, 60u + 50u * i, sizeof buf, 8, &st);
            emit(s, buf, n);
        }
    }
    /* The quotient maker (7th): hash, seed, a capacity of 1 to 2000, a target, 8-byte keys. */
    for (i = 0; i < 8; i++) {
        n = 0;
        buf[n++] = 6;
        buf[n++] = (uint8_t)i;
        for (j = 0; j < 8; j++)
            buf[n++] = (uint8_t)rnd(&st);
        buf[n++] = (uint8_t)(i * 3); /* capacity */
        buf[n++] = 0;
        buf[n++] = (uint8_t)(i * 37); /* target: (u16 + 1) / 65537 */
        buf[n++] = i < 4 ? 0x02 : 0x40;
        buf[n++] = (uint8_t)(i & 1);
        n = put_keys(buf, n, 60u + 50u * i, sizeof buf, 8, &st);
        emit(s, buf, n);
    }
    /* The quotient maker with keys as hashes (flags bit 1): 256 keys crowded into slot 0, h1 =
     * v >> shift of 8 random bytes v, some 110 distinct entries: a crowd (crowd_add) in a table of
     * 2,106 slots, and in one of 64 that grows under it. */
    for (i = 0; i < 4; i++) {
        uint8_t big[2400];
        n = 0;
        big[n++] = 6;
        big[n++] = 0; /* the hash (keys are hashes) */
        for (j = 0; j < 8; j++)
            big[n++] = 0;
        big[n++] = i < 2 ? 0xcf : 0; /* capacity 2,000 or 1 */
        big[n++] = i < 2 ? 0x07 : 0;
        big[n++] = 0x8f; /* target (655 + 1) / 65537 */
        big[n++] = 0x02;
        big[n++] = (uint8_t)(2u | (i & 1u)); /* flags: keys are hashes; odd, through a file */
        big[n++] = i < 2 ? 19 : 14;          /* shift: 2^45 or 2^50 of the space */
        for (j = 0; j < 8; j++)              /* base */
            big[n++] = 0;
        for (j = 0; j < 256; j++) {
            unsigned b;
            big[n++] = 8;
            for (b = 0; b < 8; b++)
                big[n++] = (uint8_t)rnd(&st);
        }
        emit(s, big, n);
    }
    /* and 380 keys over 8 neighbouring slots of that table of 2,106 slots (shift 6 and the top
     * two bits of v clear: 2^56 of the space), then 40 over the 33 from there: runs under 64
     * pushed to a line's 255, the later keys into the deep list by their slot's run or, for a
     * slot with none, a run of its line before it (crowd_add, crowd_borrow) */
    for (i = 0; i < 2; i++) {
        uint8_t big[4000];
        n = 0;
        big[n++] = 6;
        big[n++] = 0;
        for (j = 0; j < 8; j++)
            big[n++] = 0;
        big[n++] = 0xcf;
        big[n++] = 0x07;
        big[n++] = 0x8f;
        big[n++] = 0x02;
        big[n++] = (uint8_t)(2u | i);
        big[n++] = 6;
        for (j = 0; j < 8; j++)
            big[n++] = j == 7 ? (uint8_t)(0x40 + i) : 0; /* base: a band inside the table */
        for (j = 0; j < 420; j++) {
            unsigned b;
            big[n++] = 8;
            for (b = 0; b < 8; b++)
                big[n++] = (uint8_t)rnd(&st);
            if (j < 380)
                big[n - 1] &= 0x3f; /* v's top byte, last (little-endian) */
        }
        emit(s, big, n);
    }
    emit_random(s, 17, 30, 400);
}

static void seeds_cli_numbers(sink *s)
{
    static const char *strs[] = {
        "0", "1", "42", "5M", "1e6", "2.5k", "1Ki", "3Gi", "1T", "-5", "\t-5", " 5", "+5",
        "0x10", "010", "nan", "inf", "-inf", "1%", "0.01", "1e-300", "1e-400", "1e400",
        "18446744073709551615", "18446744073709551616", "1e20", "1.5", "5m", "5 M", "",
        "0xffffffffffffffff", "0x1p3", "1e", "e5", "5MM", "12abc"};
    uint8_t buf[128];
    size_t i, len;
    unsigned sel;

    for (sel = 0; sel < 4; sel++) {
        for (i = 0; i < sizeof strs / sizeof strs[0]; i++) {
            memset(buf, 0, 17);
            buf[0] = (uint8_t)sel;
            buf[1] = 1;                /* lo = 1 */
            memset(buf + 9, 0xff, 2);  /* hi = 65535 */
            len = strlen(strs[i]);
            memcpy(buf + 17, strs[i], len);
            emit(s, buf, 17 + len);
        }
    }
}

static void emit_args(sink *s, const char *const *args)
{
    uint8_t buf[512];
    size_t n = 0, len;
    for (; *args != NULL; args++) {
        len = strlen(*args);
        if (n + len + 1 > sizeof buf)
            break;
        memcpy(buf + n, *args, len);
        n += len;
        buf[n++] = '\0';
    }
    emit(s, buf, n > 0 ? n - 1 : 0);
}

static void seeds_cli_create(sink *s)
{
    static const char *const lines[][12] = {
        {"f.amq", "--capacity", "1000", NULL},
        {"f.amq", "--capacity", "1k", "--fpp", "0.001", "--force", NULL},
        {"f.amq", "--capacity", "100", "--fpp", "1%", "--hash", "murmur3", "--seed", "7", NULL},
        {"f.amq", "--bits", "1000", "--hashes", "3", NULL},
        {"f.amq", "--bits", "0", "--hashes", "3", NULL},
        {"f.amq", "--capacity", "500", "--bits-per-key", "10", NULL},
        {"f.amq", "--capacity", "0", NULL},
        {"f.amq", "--capacity", "10", "--fpp", "nan", NULL},
        {"f.amq", "--capacity", "9223372036854775808", NULL},
        {"f.amq", "--type", "bloom", "--capacity", "10", "--seed", "0x10", NULL},
        {"f.amq", "--type", "nosuch", "--capacity", "10", NULL},
        {"f.amq", "--capacity", "10", "--bucket-size", "4", NULL},
        {"--help", NULL},
        {"f.amq", "g.amq", NULL},
        {"f.amq", "--type", "aging", "--window", "1000", NULL},
        {"f.amq", "--type", "aging", "--window", "90s", "--rate", "20/s", "--fpp", "0.001", NULL},
        {"f.amq", "--type", "aging", "--window", "10m", NULL},
        {"f.amq", "--type", "aging", "--window", "1h", NULL},
        {"f.amq", "--type", "quotient", NULL},
        {"f.amq", "--type", "quotient", "--capacity", "1", "--fpp", "0.0001", NULL},
        {"f.amq", "--type", "expandable", "--fpp", "0.5", NULL},
    };
    size_t i;
    for (i = 0; i < sizeof lines / sizeof lines[0]; i++)
        emit_args(s, lines[i]);
}

/* fuzz_cli_lines: flags, largest read, (type, u16 length) per INPUT, text.
 * Types: 0 file, 1 pipe, 2 gzip file, 3 gzip pipe, 4 gzip read raw, 5 file
 * read from an offset of a descriptor (fuzz/fuzz_cli_lines.c). */
static void seeds_cli_lines(sink *s)
{
    static const char *texts[] = {"", "\n", "a", "a\n", "a\r\n", "a\r\nb", "\r", "\r\r\n",
                                  "\n\n\n", "one\ntwo\r\nthree", "x\0y\nz"};
    static const uint8_t setups[][8] = {
        /* flags, read max, type/len of up to 3 INPUTs (lengths: 2 bytes) */
        {0x00, 0, 0, 0xff, 0xff},     /* one file, any read size */
        {0x00, 1, 1, 0xff, 0xff},     /* a pipe read a byte at a time */
        {0x04, 3, 2 + 6 * 3, 0xff, 0xff}, /* gzip level 3, a reading thread */
        {0x10, 5, 3 + 6 * 0x10, 0xff, 0xff}, /* gzip in two members, from a pipe, scalar */
        {0x49, 0, 4, 0xff, 0xff, 0, 0, 0}, /* two INPUTs: gzip read raw, a file; parallel */
        {0x2e, 7, 5 + 6 * 2, 3, 0, 1, 2, 0}, /* 3 INPUTs, parallel serialized */
    };
    uint8_t buf[4096];
    uint64_t st = 29;
    size_t i, j, len, n;
    unsigned b;

    for (b = 0; b < sizeof setups / sizeof setups[0]; b++) {
        for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
            len = i == 10 ? 5 : strlen(texts[i]); /* "x\0y\nz" */
            n = 2 + 3 * (1 + (setups[b][0] & 3u));
            memcpy(buf, setups[b], 8);
            memset(buf + 8, 0, n > 8 ? n - 8 : 0);
            memcpy(buf + n, texts[i], len);
            emit(s, buf, n + len);
        }
    }
    /* Longer texts: many short lines, long lines, CRs. */
    for (b = 0; b < 12; b++) {
        n = 0;
        buf[n++] = (uint8_t)(b * 0x15);
        buf[n++] = (uint8_t)(b % 3 == 0 ? 0 : 1 + b * 9);
        for (j = 0; j < 3; j++) {
            buf[n++] = (uint8_t)(b + j);
            buf[n++] = (uint8_t)(rnd(&st) % 1200);
            buf[n++] = 0;
        }
        while (n < 200 + 300 * b && n + 2 < sizeof buf) {
            unsigned r = (unsigned)(rnd(&st) % 100);
            buf[n++] = r < 8 ? '\n' : r < 10 ? '\r' : (uint8_t)('a' + r % 26);
        }
        emit(s, buf, n);
    }
    emit_random(s, 23, 20, 3000);
}

/* fuzz_cli_gzip: flags, largest read(2), then bytes: gzip streams of one
 * and two members at several levels, cut short, with bytes after them,
 * and a few that are not gzip. */
static size_t gz(const void *p, size_t n, int level, uint8_t *out, size_t cap)
{
    z_stream zs;
    size_t len = 0;

    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    zs.next_in = (Bytef *)(uintptr_t)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    if (deflate(&zs, Z_FINISH) == Z_STREAM_END)
        len = cap - zs.avail_out;
    deflateEnd(&zs);
    return len;
}

static void seeds_cli_gzip(sink *s)
{
    static const char *texts[] = {"", "a\n", "one\ntwo\r\nthree",
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"};
    static const char *tails[] = {"", "\x1f", "\x1f\x8b", "\0", "junk"};
    uint8_t buf[2048], text[1024];
    uint64_t st = 31;
    size_t i, j, n, len, t;
    int level;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        for (level = 0; level <= 9; level += 3) {
            buf[0] = (uint8_t)(i + 4 * (unsigned)level);
            buf[1] = (uint8_t)(level == 0 ? 0 : 1 + i * 5);
            len = gz(texts[i], strlen(texts[i]), level, buf + 2, sizeof buf - 2);
            emit(s, buf, 2 + len);
            /* a second member */
            n = gz(texts[i], strlen(texts[i]), 9 - level, buf + 2 + len, sizeof buf - 2 - len);
            emit(s, buf, 2 + len + n);
            /* cut short, with bytes after it */
            emit(s, buf, 2 + len / 2);
            for (t = 1; t < sizeof tails / sizeof tails[0]; t++) {
                memcpy(buf + 2 + len, tails[t], strlen(tails[t]) + (t == 3));
                emit(s, buf, 2 + len + strlen(tails[t]) + (t == 3));
            }
        }
    }
    /* A larger text that expands, and a pipe. */
    for (j = 0; j < sizeof text; j++)
        text[j] = (uint8_t)(rnd(&st) % 4 == 0 ? '\n' : 'a' + rnd(&st) % 3);
    buf[0] = 1 | (5 << 2);
    buf[1] = 3;
    len = gz(text, sizeof text, 6, buf + 2, sizeof buf - 2);
    emit(s, buf, 2 + len);
    emit(s, "\x02\x00\x1f\x8b\x08\x00", 6); /* raw: passed through */
    emit(s, "\x00\x00plain\ntext\n", 13);
    emit(s, "\x00\x00\x1f", 3);
    emit(s, "\x00\x00\x78\x9c\x03\x00\x00\x00\x00\x01", 10); /* zlib, not gzip */
}

/* fuzz_guava: mode 0 + Guava bytes (valid, and one damaged per rule of the
 * format), mode 1 + round-trip parameters and keys. */
static void seeds_guava(sink *s)
{
    static const uint64_t ns[] = {0, 1, 10, 100, 1000};
    static const double ps[] = {0.5, 0.03, 0.001};
    amq_bloom_params p;
    amq_bloom *b;
    uint8_t buf[8192];
    size_t i, j, len;
    char key[32];
    uint64_t st = 37;

    for (i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        for (j = 0; j < sizeof ps / sizeof ps[0]; j++) {
            if (amq_guava_params_for(ns[i], ps[j], &p) != AMQ_OK ||
                amq_bloom_new(&p, NULL, &b) != AMQ_OK)
                continue;
            for (len = 0; len < ns[i] / 2; len++)
                (void)amq_bloom_add(b, key, (size_t)snprintf(key, sizeof key, "key-%zu", len));
            buf[0] = 0;
            if (amq_guava_serialize(b, buf + 1, sizeof buf - 1, &len, NULL) == AMQ_OK) {
                emit(s, buf, 1 + len);
                if (j == 0) {
                    buf[1] = 0; /* MITZ_32 */
                    emit(s, buf, 1 + len);
                    buf[1] = 2; /* unknown strategy */
                    emit(s, buf, 1 + len);
                    buf[1] = 1;
                    buf[2] = 0; /* k 0 */
                    emit(s, buf, 1 + len);
                    buf[2] = (uint8_t)p.k;
                    emit(s, buf, len); /* cut short */
                    buf[1 + len] = 0;
                    emit(s, buf, 2 + len); /* a byte after the words */
                    memcpy(buf + 3, "\x80\x00\x00\x00", 4); /* N < 0 */
                    emit(s, buf, 1 + len);
                    memcpy(buf + 3, "\x00\x00\x00\x00", 4); /* N = 0 */
                    emit(s, buf, 1 + len);
                }
            }
            amq_bloom_free(b);
        }
    }
    emit(s, "\x00\x01\x03\x00\x00", 5);
    /* Round trips: n, rate, variant, keys. */
    for (i = 0; i < 16; i++) {
        size_t n = 0;
        buf[n++] = 1;
        buf[n++] = (uint8_t)(rnd(&st) % 200);
        buf[n++] = (uint8_t)(i / 4);
        buf[n++] = (uint8_t)rnd(&st);
        buf[n++] = (uint8_t)(rnd(&st) % 256);
        buf[n++] = (uint8_t)(i % 4);
        n = put_keys(buf, n, 40u + 30u * i, sizeof buf, 6, &st);
        emit(s, buf, n);
    }
}

/* ---- RedisBloom-layout filters: RDB values and SCANDUMP chunks ------------------------------ */

typedef struct wbuf {
    uint8_t b[1 << 16];
    size_t n;
} wbuf;

static void w64(wbuf *w, uint64_t v)
{
    int i;
    for (i = 0; i < 8 && w->n < sizeof w->b; i++)
        w->b[w->n++] = (uint8_t)(v >> (8 * i));
}

static void wf64(wbuf *w, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    w64(w, bits);
}

static void wstr(wbuf *w, const uint8_t *data, size_t len)
{
    int i;
    if (w->n + 4 + len > sizeof w->b)
        return;
    for (i = 0; i < 4; i++)
        w->b[w->n++] = (uint8_t)(len >> (8 * i));
    memcpy(w->b + w->n, data, len);
    w->n += len;
}

static void wraw(wbuf *w, const void *data, size_t len)
{
    if (w->n + len <= sizeof w->b) {
        memcpy(w->b + w->n, data, len);
        w->n += len;
    }
}

/* Commands after a loaded dump (op, key length, key): add, add-unique,
 * remove, contains, compact, add, count. */
static const char seed_ops[] = "\0\3abc\1\3abd\2\3abc\4\2k1\5\0\0\3xyz\3\3xyz";

/* Small RedisBloom-mode BF filters: one link, several links, non-scaling. */
static amq_sbloom *rb_bloom(unsigned variant)
{
    amq_sbloom_params p;
    amq_sbloom *s;
    char key[32];
    unsigned i, n = 30 + 60 * variant;

    amq_sbloom_params_init(&p, 1);
    p.capacity = 20 + 10 * variant;
    p.fpp = variant == 2 ? 0.001 : 0.01;
    if (variant == 3)
        p.options |= AMQ_SBLOOM_NO_SCALING;
    if (amq_sbloom_new(&p, NULL, &s) != AMQ_OK)
        return NULL;
    for (i = 0; i < n; i++)
        (void)amq_sbloom_add(s, key, (size_t)snprintf(key, sizeof key, "k%u", i));
    return s;
}

static amq_scuckoo *rb_cuckoo(unsigned variant)
{
    amq_scuckoo_params p;
    amq_scuckoo *c;
    char key[32];
    unsigned i, n = 20 + 100 * variant;

    amq_scuckoo_params_init(&p, 1);
    p.capacity = 64;
    p.bucket_size = 1u << variant;
    if (amq_scuckoo_new(&p, NULL, &c) != AMQ_OK)
        return NULL;
    for (i = 0; i < n; i++)
        (void)amq_scuckoo_add(c, key, (size_t)snprintf(key, sizeof key, "k%u", i));
    for (i = 0; i < n / 4; i++)
        (void)amq_scuckoo_remove(c, key, (size_t)snprintf(key, sizeof key, "k%u", i));
    return c;
}

/* fuzz_rdb_bf: encoding byte, then the value as bf_rdb_save writes it
 * (encoding 4), and the older layouts (encodings 0..3). */
static void seeds_rdb_bf(sink *s)
{
    amq_sbloom *b;
    amq_sbloom_info in;
    amq_sbloom_link_info l;
    const uint8_t *data;
    unsigned v, enc;
    uint32_t i;
    wbuf *w = malloc(sizeof *w);

    for (v = 0; v < 4 && w != NULL; v++) {
        if ((b = rb_bloom(v)) == NULL)
            continue;
        amq_sbloom_get_info(b, &in);
        for (enc = 0; enc <= 4; enc++) {
            w->n = 0;
            w->b[w->n++] = (uint8_t)enc;
            w64(w, in.items);
            w64(w, in.links);
            if (enc >= 2)
                w64(w, in.options);
            if (enc >= 4)
                w64(w, in.expansion);
            for (i = 0; i < in.links; i++) {
                amq_sbloom_link(b, i, &l, &data);
                w64(w, l.entries);
                wf64(w, l.fpp);
                w64(w, l.hashes);
                wf64(w, l.bpe);
                if (enc >= 1) {
                    w64(w, l.bits);
                    w64(w, l.n2);
                }
                wstr(w, data, (size_t)l.bytes);
                w64(w, l.items);
            }
            emit(s, w->b, w->n);
        }
        amq_sbloom_free(b);
    }
    free(w);
}

static void seeds_rdb_cf(sink *s)
{
    amq_scuckoo *c;
    amq_scuckoo_info in;
    const uint8_t *data;
    uint64_t nb;
    size_t bytes;
    unsigned v, enc;
    uint32_t j;
    wbuf *w = malloc(sizeof *w);

    for (v = 0; v < 3 && w != NULL; v++) {
        if ((c = rb_cuckoo(v)) == NULL)
            continue;
        amq_scuckoo_get_info(c, &in);
        for (enc = 3; enc <= 4; enc++) {
            w->n = 0;
            w->b[w->n++] = (uint8_t)enc;
            w64(w, in.links);
            w64(w, in.num_buckets);
            w64(w, in.items);
            w64(w, in.deletes);
            if (enc >= 4) {
                w64(w, in.bucket_size);
                w64(w, in.max_kicks);
                w64(w, in.expansion);
            }
            for (j = 0; j < in.links; j++) {
                amq_scuckoo_link(c, j, &nb, &data, &bytes);
                if (enc >= 4)
                    w64(w, nb);
                wstr(w, data, bytes);
            }
            emit(s, w->b, w->n);
        }
        amq_scuckoo_free(c);
    }
    free(w);
}

/* The bytes of a filter of kind at capacity n built from the keys "k0" ..
 * "k<n-1>" (n at most 64); the quotient kind, which no builder makes (its
 * size follows its keys), created and then added to; the pocket kind too,
 * from at least 64 keys (its fewest), its first 5 keys added again after so
 * that its ring of pending keys holds them; another kind the builder refuses,
 * created empty.  A new buffer of *size bytes; NULL when that fails or *size
 * is over max. */
static uint8_t *keyed_filter(uint32_t kind, unsigned n, uint64_t max, uint64_t *size)
{
    amq_config cfg;
    amq_filter *f = NULL;
    amq_hash128 h[64];
    uint8_t *buf = NULL;
    unsigned j;
    char key[16];
    int rc;

    amq_config_init(&cfg, kind);
    cfg.capacity = n;
    for (j = 0; j < n && j < 64; j++)
        h[j] = amq_hash_key(cfg.hash_algo, cfg.seed, key,
                            (size_t)snprintf(key, sizeof key, "k%u", j));
    if (kind == AMQ_KIND_POCKET && cfg.capacity < 64)
        cfg.capacity = 64;
    if (kind == AMQ_KIND_QUOTIENT || kind == AMQ_KIND_POCKET) {
        unsigned a;
        rc = amq_filter_new(&cfg, &f, NULL);
        if (rc == AMQ_OK)
            rc = amq_filter_add_batch(f, h, j, NULL);
        for (a = 0; kind == AMQ_KIND_POCKET && a < 5 && rc == AMQ_OK; a++) {
            const int added = amq_filter_add(f, key, (size_t)snprintf(key, sizeof key, "k%u", a));
            rc = added < 0 ? added : AMQ_OK;
        }
    } else if ((rc = amq_filter_build(&cfg, h, j, &f, NULL)) != AMQ_OK) {
        rc = amq_filter_new(&cfg, &f, NULL);
    }
    if (rc != AMQ_OK) {
        amq_filter_free(f);
        return NULL;
    }
    if (amq_filter_serialized_size(f, size) == AMQ_OK && *size <= max &&
        (buf = malloc((size_t)*size)) != NULL &&
        amq_filter_serialize(f, buf, (size_t)*size, NULL) != AMQ_OK) {
        free(buf);
        buf = NULL;
    }
    amq_filter_free(f);
    return buf;
}

/* fuzz_rdb_amq: encoding byte 4, then the value as amqt_rdb_save writes it
 * (state, maxsize, total, filled, chunk count, the amq file's bytes) for a
 * few kinds, and a loading value (state 1: the header and a little more). */
static void seeds_rdb_amq(sink *s)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOOM, AMQ_KIND_BLOCKED, AMQ_KIND_CUCKOO,
                                     AMQ_KIND_SCALABLE_CUCKOO, AMQ_KIND_AGING,
                                     AMQ_KIND_RIBBON, AMQ_KIND_FUSE, AMQ_KIND_QUOTIENT,
                                     AMQ_KIND_POCKET};
    wbuf *w = malloc(sizeof *w);
    size_t i;

    for (i = 0; i < sizeof kinds / sizeof kinds[0] && w != NULL; i++) {
        uint64_t size;
        uint8_t *buf = keyed_filter(kinds[i], 64, 4096, &size);

        if (buf != NULL) {
            w->n = 0;
            w->b[w->n++] = 4;
            w64(w, 0);
            w64(w, 0);
            w64(w, size);
            w64(w, size);
            w64(w, 1);
            wstr(w, buf, (size_t)size);
            emit(s, w->b, w->n);
            /* loading: the first size / 2 bytes (the header is in them) */
            w->n = 0;
            w->b[w->n++] = 4;
            w64(w, 1);
            w64(w, 123456);
            w64(w, size);
            w64(w, size / 2 + 200 < size ? size / 2 + 200 : size);
            w64(w, 1);
            wstr(w, buf, (size_t)(size / 2 + 200 < size ? size / 2 + 200 : size));
            emit(s, w->b, w->n);
        }
        free(buf);
    }
    free(w);
}

/* fuzz_cli_redis_amq: a DUMP payload of an AMQ.* key (mode 0: as the server writes it;
 * mode 2: its CRC recomputed by the target), and the AMQ.LOADCHUNK chunks of the same file
 * (mode 1: u32 iterator, u16 length, bytes). */
static void rdb_len(wbuf *w, uint64_t v)
{
    int i;
    if (v < 64) {
        wraw(w, (uint8_t[]){(uint8_t)v}, 1);
    } else if (v < 16384) {
        wraw(w, (uint8_t[]){(uint8_t)(0x40 | (v >> 8)), (uint8_t)v}, 2);
    } else {
        wraw(w, (uint8_t[]){0x81}, 1);
        for (i = 7; i >= 0; i--)
            wraw(w, (uint8_t[]){(uint8_t)(v >> (8 * i))}, 1);
    }
}

static void seeds_cli_redis_amq(sink *s)
{
    static const uint32_t kinds[] = {AMQ_KIND_BLOCKED, AMQ_KIND_CUCKOO, AMQ_KIND_RIBBON,
                                     AMQ_KIND_QUOTIENT, AMQ_KIND_POCKET};
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    wbuf *w = malloc(sizeof *w);
    uint64_t id = 0;
    size_t i, k;

    for (i = 0; i < 9; i++)
        id = id << 6 | (uint64_t)(strchr(set, "amqfilter"[i]) - set);
    id = id << 10 | 4;
    for (k = 0; k < sizeof kinds / sizeof kinds[0] && w != NULL; k++) {
        uint8_t *buf;
        uint64_t size, crc, off;
        unsigned j;

        if ((buf = keyed_filter(kinds[k], 32, 2000, &size)) == NULL)
            continue;
        w->n = 0;
        wraw(w, (uint8_t[]){0}, 1); /* mode 0 */
        wraw(w, (uint8_t[]){7}, 1);
        rdb_len(w, id);
        rdb_len(w, 2), rdb_len(w, 0);      /* state */
        rdb_len(w, 2), rdb_len(w, 0);      /* maxsize */
        rdb_len(w, 2), rdb_len(w, size);   /* total */
        rdb_len(w, 2), rdb_len(w, size);   /* filled */
        rdb_len(w, 2), rdb_len(w, 1);      /* chunks */
        rdb_len(w, 5), rdb_len(w, size);
        wraw(w, buf, (size_t)size);
        rdb_len(w, 0);
        wraw(w, (uint8_t[]){10, 0}, 2);    /* RDB version */
        crc = cli_crc64_jones(w->b + 1, w->n - 1);
        for (j = 0; j < 8; j++)
            wraw(w, (uint8_t[]){(uint8_t)(crc >> (8 * j))}, 1);
        emit(s, w->b, w->n);
        w->b[0] = 2; /* mode 2: the target recomputes the CRC */
        emit(s, w->b, w->n);
        w->n = 0;
        wraw(w, (uint8_t[]){1}, 1); /* mode 1: chunks of 300 bytes */
        for (off = 0; off < size; off += 300) {
            uint64_t n = size - off < 300 ? size - off : 300;
            uint64_t it = off + n;
            wraw(w, (uint8_t[]){(uint8_t)it, (uint8_t)(it >> 8), (uint8_t)(it >> 16),
                                (uint8_t)(it >> 24), (uint8_t)n, (uint8_t)(n >> 8)}, 6);
            wraw(w, buf + off, (size_t)n);
        }
        emit(s, w->b, w->n);
        free(buf);
    }
    free(w);
}

/* fuzz_rdb_af: encoding 4, then af_rdb_save's fields - the parameter block,
 * hash algorithm, seed, chunk count, the payload as one chunk - of aging
 * filters by count and by time, empty and with keys. */
static void seeds_rdb_af(sink *s)
{
    static const uint64_t windows[] = {10, 1000};
    uint8_t params[AMQ_AGING_PARAMS_SIZE];
    const uint8_t *payload;
    amq_config cfg;
    amq_filter *f;
    amq_stats st;
    size_t len;
    unsigned v;
    wbuf *w = malloc(sizeof *w);

    for (v = 0; v < 4 && w != NULL; v++) {
        amq_config_init(&cfg, AMQ_KIND_AGING);
        cfg.capacity = windows[v % 2];
        cfg.fpp = 0.01;
        if (v >= 2) {
            cfg.window_ms = 60000;
            cfg.rate = 5.0;
        }
        if (amq_filter_new(&cfg, &f, NULL) != AMQ_OK)
            continue;
        if (v % 2)
            add_keys(f, 50);
        amq_filter_stats(f, &st);
        if (amq_aging_serialize_raw(f, params, &payload, &len) == AMQ_OK && len < 32768) {
            w->n = 0;
            w->b[w->n++] = 4;
            wstr(w, params, sizeof params);
            w64(w, st.hash_algo);
            w64(w, st.seed);
            w64(w, 1);
            wstr(w, payload, len);
            emit(s, w->b, w->n);
        }
        amq_filter_free(f);
    }
    free(w);
}

/* fuzz_scandump_*: u16 header length H, the header chunk, then chunks as
 * (u64 iterator, u16 length, bytes) - a real dump in SCANDUMP order.  A
 * dump starts w with its header, adds each chunk, and is emitted twice:
 * alone, and with the end of the chunks and a few commands after it. */
static void dump_header(wbuf *w, const uint8_t *hdr, size_t hlen)
{
    w->n = 0;
    w->b[w->n++] = (uint8_t)hlen;
    w->b[w->n++] = (uint8_t)(hlen >> 8);
    wraw(w, hdr, hlen);
}

static void dump_chunk(wbuf *w, uint64_t next, const uint8_t *data, size_t len)
{
    uint8_t l2[2] = {(uint8_t)len, (uint8_t)(len >> 8)};
    w64(w, next);
    wraw(w, l2, 2);
    wraw(w, data, len);
}

static void emit_dump(sink *s, wbuf *w)
{
    emit(s, w->b, w->n);
    wraw(w, "\0\0\0\0\0\0\0\0\0\0", 10);
    wraw(w, seed_ops, sizeof seed_ops - 1);
    emit(s, w->b, w->n);
}

static void seeds_scandump_bf(sink *s)
{
    amq_sbloom *b;
    uint8_t hdr[4096];
    const uint8_t *data;
    size_t hlen, len;
    uint64_t it, next;
    unsigned v;
    wbuf *w = malloc(sizeof *w);

    for (v = 0; v < 4 && w != NULL; v++) {
        if ((b = rb_bloom(v)) == NULL)
            continue;
        hlen = amq_sbloom_header_serialized_size(b);
        if (hlen <= sizeof hdr && amq_sbloom_header_serialize(b, hdr, sizeof hdr) == AMQ_OK) {
            dump_header(w, hdr, hlen);
            for (it = 1; amq_sbloom_chunk(b, it, 100, &data, &len, &next) == AMQ_OK && len != 0;
                 it = next)
                dump_chunk(w, next, data, len);
            emit_dump(s, w);
        }
        amq_sbloom_free(b);
    }
    free(w);
}

static void seeds_scandump_cf(sink *s)
{
    amq_scuckoo *c;
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    const uint8_t *data;
    size_t len;
    uint64_t it, next;
    unsigned v;
    wbuf *w = malloc(sizeof *w);

    for (v = 0; v < 3 && w != NULL; v++) {
        if ((c = rb_cuckoo(v)) == NULL)
            continue;
        if (amq_scuckoo_header_serialize(c, hdr, sizeof hdr) == AMQ_OK) {
            dump_header(w, hdr, sizeof hdr);
            for (it = 1; amq_scuckoo_chunk(c, it, 100, &data, &len, &next) == AMQ_OK && len != 0;
                 it = next)
                dump_chunk(w, next, data, len);
            emit_dump(s, w);
        }
        amq_scuckoo_free(c);
    }
    free(w);
}

/* fuzz_shard_stream: u8 N - 1, then a sharded filter's RESP stream: what
 * `amq export --to redis --shards N` writes, and broken ones. */
static void emit_resp(uint8_t *buf, size_t *n, size_t cap, const char *const *args)
{
    size_t k = 0, len;
    int m = 0;
    while (args[m] != NULL)
        m++;
    *n += (size_t)snprintf((char *)buf + *n, cap - *n, "*%d\r\n", m);
    for (k = 0; args[k] != NULL; k++) {
        len = strlen(args[k]);
        *n += (size_t)snprintf((char *)buf + *n, cap - *n, "$%zu\r\n%s\r\n", len, args[k]);
    }
}

static void seeds_shard_stream(sink *s)
{
    static const char *const del[] = {"DEL", "f:{0.1}.amq-load", NULL};
    static const char *const c0h[] = {"BF.LOADCHUNK", "f:{0.1}.amq-load", "1", "hdr0", NULL};
    static const char *const c0d[] = {"BF.LOADCHUNK", "f:{0.1}.amq-load", "9", "data", NULL};
    static const char *const c1h[] = {"CF.LOADCHUNK", "f:{1.0}", "1", "hdr1", NULL};
    static const char *const c2h[] = {"BF.LOADCHUNK", "f:{2.0}", "1", "hdr2", NULL};
    static const char *const ren[] = {"RENAMENX", "f:{0.1}.amq-load", "f:{0.1}", NULL};
    static const char *const set[] = {"SET", "f", "{\"shards\": 3, \"keys\": []}", "NX", NULL};
    static const char *const bad[] = {"BF.LOADCHUNK", "g:{9.0}", "1", "x", NULL};
    static const char *const other[] = {"BF.LOADCHUNK", "g:{1.0}", "1", "x", NULL};
    static const char *const amq2[] = {"AMQ.LOADCHUNK", "f:{2.0}", "4", "\x89" "AMQ", NULL};
    static const char *const pset[] = {"SET", "f", "{\"routing\": \"partition\", \"shards\": 3}",
                                       NULL};
    uint8_t buf[1024];
    size_t n;
    unsigned v;

    for (v = 0; v < 7; v++) {
        n = 0;
        buf[n++] = 2; /* N = 3 */
        emit_resp(buf, &n, sizeof buf, del);
        emit_resp(buf, &n, sizeof buf, c0h);
        emit_resp(buf, &n, sizeof buf, c0d);
        emit_resp(buf, &n, sizeof buf, ren);
        emit_resp(buf, &n, sizeof buf, c1h);
        emit_resp(buf, &n, sizeof buf, v == 1 ? bad : v == 2 ? other : v == 6 ? amq2 : c2h);
        emit_resp(buf, &n, sizeof buf, v == 6 ? pset : set);
        if (v == 3) {
            const char *scan = "*2\r\n:1\r\n$3\r\nabc\r\n";
            memcpy(buf + n, scan, strlen(scan));
            n += strlen(scan);
        }
        if (v == 4)
            n -= 5; /* cut inside the last command */
        if (v == 5)
            buf[0] = 3; /* N = 4: the metadata says 3 */
        emit(s, buf, n);
    }
}

/* ---- the table: one line per target ------------------------------------------------------ */

/* fuzz_journal: journals (the target sets their file size, inode and checksum): none of
 * records, the file's head alone, the head and a record past it. */
static void seeds_journal(sink *s)
{
    uint8_t j[40 + 16 + 64 + 16 + 16 + 8];
    memset(j, 0, sizeof j);
    memcpy(j, "AMQJRNL1", 8);
    emit(s, j, 48); /* no record */
    amq_store64(j + 16, 1);
    amq_store64(j + 40, 0);  /* the head, at 0 */
    amq_store32(j + 48, 64); /* its 64 bytes */
    emit(s, j, 40 + 16 + 64 + 8);
    amq_store64(j + 16, 2);
    amq_store64(j + 40 + 16 + 64, 4096); /* 16 bytes at 4096 */
    amq_store32(j + 40 + 16 + 64 + 8, 16);
    emit(s, j, sizeof j);
}

static const struct {
    const char *target; /* directory name; NULL: the function names its own */
    void (*gen)(sink *s);
} targets[] = {
    {"fuzz_container", seeds_container},
    {"fuzz_file_open", seeds_container},
    {"fuzz_header", seeds_header},
    {NULL, seeds_all_payloads},
    {"fuzz_policy", seeds_policy},
    {"fuzz_roundtrip_filter", seeds_roundtrip_filter},
    {"fuzz_roundtrip_policy", seeds_roundtrip_policy},
    {"fuzz_cli_numbers", seeds_cli_numbers},
    {"fuzz_cli_create", seeds_cli_create},
    {"fuzz_cli_lines", seeds_cli_lines},
    {"fuzz_cli_gzip", seeds_cli_gzip},
    {"fuzz_guava", seeds_guava},
    {"fuzz_rdb_bf", seeds_rdb_bf},
    {"fuzz_rdb_cf", seeds_rdb_cf},
    {"fuzz_rdb_amq", seeds_rdb_amq},
    {"fuzz_cli_redis_amq", seeds_cli_redis_amq},
    {"fuzz_rdb_af", seeds_rdb_af},
    {"fuzz_scandump_bf", seeds_scandump_bf},
    {"fuzz_scandump_cf", seeds_scandump_cf},
    {"fuzz_shard_stream", seeds_shard_stream},
    {"fuzz_journal", seeds_journal},
};

int main(int argc, char **argv)
{
    sink s;
    size_t i;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        perror(outdir);
        return 2;
    }
    for (i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        if (targets[i].target != NULL)
            sink_open(&s, targets[i].target);
        targets[i].gen(&s);
    }
    return 0;
}
