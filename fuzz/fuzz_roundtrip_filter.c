/*
 * fuzz_roundtrip_filter.c - build a filter from fuzz-chosen parameters and
 * keys, then save, load, clone and merge it, and check it still answers
 * the same: build -> serialize -> deserialize (copy, borrow, trusted) ->
 * same answers and same bytes; file save -> open (copy, mmap) -> same.
 *
 * Properties: no false negative ever (every key whose add returned 0 or 1
 * is found, before and after every transformation); add_batch leaves the
 * same bytes and the same per-key results as add one by one; the item count
 * is the number of adds that returned 1; clones and reloads serialize to
 * identical bytes; errors only where the parameters are out of range, and
 * nothing leaks.
 *
 * Input: u8 kind (index into makers[] below), then the kind's parameters
 * (its maker reads them), u8 flags (bit 0: also through a file; bit 1: keys
 * are hashes, then u8 shift and u64 base follow: a key's first 8 bytes,
 * little-endian and zero-padded, shifted right and added to base make its
 * h1, so that the fuzzer can crowd keys into a slot as a weak hash or keys
 * chosen against a known seed do), then keys as u8 length (mod 64) +
 * bytes, up to MAX_BYTE_KEYS (MAX_KEYS as hashes).
 *
 * A new kind adds one maker function and one line in makers[].
 */
#include <unistd.h>

#include "amq/bloom.h"
#include "filter_checks.h"

#define MAX_KEYS 512 /* keys as hashes (flags bit 1): enough to push a line's offset to 255 */
#define MAX_BYTE_KEYS 256
/* Allocations fail (AMQ_ENOMEM, which add may return) above 1 MiB each and
 * 6 MiB in all: a scalable filter whose kicks keep failing grows by its
 * expansion at every link, and copying tens of megabytes per input
 * would leave the fuzzer a few executions per second. */
#define RT_CAP ((size_t)1 << 20)
#define RT_TOTAL_CAP ((size_t)6 << 20)

/* ---- makers: a filter from fuzz bytes ------------------------------------------ */

static uint32_t pick_hash(fz_in *in, uint64_t *seed)
{
    uint32_t algo = 1u + fz_u8(in) % 4u;
    *seed = fz_u64(in);
    if (algo == AMQ_HASH_MURMUR3)
        *seed &= UINT32_MAX;
    if (algo == AMQ_HASH_REDISBLOOM)
        *seed = 0;
    return algo;
}

static int make_bloom(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    amq_config cfg;
    amq_bloom_params p;
    amq_bloom *b;
    unsigned how = fz_u8(in) % 4u;
    int rc;

    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.alloc = al;
    cfg.hash_algo = pick_hash(in, &cfg.seed);
    /* Small filters: a fuzzer wants many executions per second, and the
     * sizes that matter are the odd ones (1 bit, word boundaries). */
    cfg.capacity = fz_range(in, 1, 2000);
    switch (how) {
    case 0:
        cfg.fpp = ((double)fz_u16(in) + 1.0) / 65537.0;
        break;
    case 1:
        /* (0, 1024]: above 1000 must be refused.  Few keys then, or the
         * filter grows large. */
        cfg.bits_per_key = ((double)fz_u16(in) + 1.0) / 64.0;
        if (cfg.bits_per_key > 32.0)
            cfg.capacity = 1 + cfg.capacity % 64;
        break;
    case 2:
        cfg.bits = fz_range(in, 1, 65536);
        cfg.k = (uint32_t)fz_range(in, 1, 64);
        break;
    default:
        /* The other probe schemes exist only through amq_bloom_new. */
        memset(&p, 0, sizeof p);
        p.bits = fz_range(in, 1, 65536);
        p.k = (uint32_t)fz_range(in, 1, 64);
        p.probe = fz_u8(in) % 3u;
        p.hash_algo = cfg.hash_algo;
        p.seed = cfg.seed;
        rc = amq_bloom_new(&p, al, &b);
        FZ_CHECK(rc == AMQ_OK, "amq_bloom_new with valid parameters: %s", amq_strerror(rc));
        rc = amq_filter_from_bloom(b, out);
        FZ_CHECK(rc == AMQ_OK, "amq_filter_from_bloom: %s", amq_strerror(rc));
        return rc;
    }
    rc = amq_filter_new(&cfg, out, NULL);
    if (how == 1 && cfg.bits_per_key > 1000.0) {
        FZ_CHECK(rc == AMQ_ERANGE, "bits per key %g accepted (%d)", cfg.bits_per_key, rc);
        return rc;
    }
    FZ_CHECK(rc == AMQ_OK, "amq_filter_new (way %u) with valid parameters: %s", how,
             amq_strerror(rc));
    return rc;
}

/* The other kinds go through amq_filter_new with fuzz-chosen options; a
 * refusal must be AMQ_ERANGE or AMQ_EINVAL (some option combinations are
 * invalid on purpose: the target then checks only that) or AMQ_ENOMEM
 * (over RT_CAP), with a message. */
static int make_from_config(amq_config *cfg, const amq_allocator *al, amq_filter **out)
{
    amq_errinfo err;
    int rc;

    cfg->alloc = al;
    memset(&err, 0, sizeof err);
    rc = amq_filter_new(cfg, out, &err);
    FZ_CHECK(rc == AMQ_OK ||
                 ((rc == AMQ_ERANGE || rc == AMQ_EINVAL || rc == AMQ_ENOMEM) && err.msg[0] != '\0'),
             "amq_filter_new (kind %u): %d (%s)", cfg->kind, rc, err.msg);
    return rc;
}

static int make_cuckoo(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    static const uint32_t fbits[] = {0, 8, 12, 16}, bsize[] = {0, 1, 2, 4, 8};
    amq_config cfg;

    amq_config_init(&cfg, AMQ_KIND_CUCKOO);
    cfg.hash_algo = pick_hash(in, &cfg.seed);
    cfg.capacity = fz_range(in, 1, 2000);
    cfg.fpp = ((double)fz_u16(in) + 1.0) / 65537.0;
    cfg.fingerprint_bits = fbits[fz_u8(in) % 4];
    cfg.bucket_size = bsize[fz_u8(in) % 5];
    cfg.max_kicks = (uint32_t)fz_range(in, 0, 1000);
    return make_from_config(&cfg, al, out);
}

static int make_scalable(fz_in *in, uint32_t kind, const amq_allocator *al, amq_filter **out)
{
    static const uint32_t fbits[] = {0, 8, 12, 16}, bsize[] = {0, 1, 2, 4};
    amq_config cfg;
    uint8_t opts;

    amq_config_init(&cfg, kind);
    opts = fz_u8(in);
    cfg.redisbloom = opts & 1;
    cfg.nonscaling = (opts >> 1) & 1;
    if (!cfg.redisbloom)
        cfg.hash_algo = pick_hash(in, &cfg.seed);
    /* Small, so that 256 keys make it grow. */
    cfg.capacity = fz_range(in, 1, 300);
    cfg.fpp = ((double)fz_u16(in) + 1.0) / 65537.0;
    cfg.expansion = (uint32_t)fz_range(in, 0, 4);
    if (kind == AMQ_KIND_SCALABLE_CUCKOO) {
        cfg.fingerprint_bits = cfg.redisbloom ? 0 : fbits[fz_u8(in) % 4];
        cfg.bucket_size = bsize[fz_u8(in) % 4];
        cfg.max_kicks = (uint32_t)fz_range(in, 0, 600);
    }
    return make_from_config(&cfg, al, out);
}

static int make_scalable_bloom(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    return make_scalable(in, AMQ_KIND_SCALABLE_BLOOM, al, out);
}

static int make_scalable_cuckoo(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    return make_scalable(in, AMQ_KIND_SCALABLE_CUCKOO, al, out);
}

/* The blocked kinds: by fpp, by bits per key (NaN, negatives and values
 * above 1000 must be refused), or by bits + k (blocked: a whole number of
 * 512-bit blocks); partitioned with 0 (choose) to 64 partitions. */
static int make_blocked_kind(fz_in *in, uint32_t kind, const amq_allocator *al, amq_filter **out)
{
    static const double odd_bpk[] = {-1.0, 0.5, 1000.5, 1e300};
    amq_config cfg;
    unsigned how = fz_u8(in) % 4u;

    amq_config_init(&cfg, kind);
    cfg.hash_algo = pick_hash(in, &cfg.seed);
    cfg.capacity = fz_range(in, 1, 5000);
    switch (how) {
    case 0:
        cfg.fpp = ((double)fz_u16(in) + 1.0) / 65537.0;
        break;
    case 1:
        cfg.bits_per_key = ((double)fz_u16(in) + 1.0) / 256.0;
        break;
    case 2:
        cfg.bits_per_key = odd_bpk[fz_u8(in) % 4u];
        break;
    default:
        cfg.bits = fz_range(in, 1, 1u << 18);
        cfg.k = (uint32_t)fz_range(in, 1, 32);
        break;
    }
    if (kind == AMQ_KIND_PARTITIONED)
        cfg.partitions = (uint32_t)fz_range(in, 0, 64);
    if (how == 2 && (cfg.bits_per_key < 0.0 || cfg.bits_per_key > 1000.0)) {
        amq_errinfo err;
        int rc;
        cfg.alloc = al;
        memset(&err, 0, sizeof err);
        rc = amq_filter_new(&cfg, out, &err);
        FZ_CHECK(rc == AMQ_ERANGE && *out == NULL && err.msg[0] != '\0',
                 "kind %u: bits per key %g gave %d", kind, cfg.bits_per_key, rc);
        return rc;
    }
    return make_from_config(&cfg, al, out);
}

static int make_blocked(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    return make_blocked_kind(in, AMQ_KIND_BLOCKED, al, out);
}

static int make_partitioned(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    return make_blocked_kind(in, AMQ_KIND_PARTITIONED, al, out);
}

/* The quotient kind from a small start (256 keys grow it several times by
 * 10 %), targets in and out of its range [0.0001, 0.5] (those out refused). */
static int make_quotient(fz_in *in, const amq_allocator *al, amq_filter **out)
{
    amq_config cfg;

    amq_config_init(&cfg, AMQ_KIND_QUOTIENT);
    cfg.hash_algo = pick_hash(in, &cfg.seed);
    cfg.capacity = fz_range(in, 1, 2000);
    cfg.fpp = ((double)fz_u16(in) + 1.0) / 65537.0;
    return make_from_config(&cfg, al, out);
}

typedef struct maker {
    const char *kind;
    int (*make)(fz_in *in, const amq_allocator *al, amq_filter **out);
} maker;

static const maker makers[] = {
    {"bloom", make_bloom},
    {"cuckoo", make_cuckoo},
    {"scalable-bloom", make_scalable_bloom},
    {"scalable-cuckoo", make_scalable_cuckoo},
    {"blocked", make_blocked},
    {"partitioned", make_partitioned},
    {"quotient", make_quotient},
};
#define NMAKERS (sizeof makers / sizeof makers[0])

/* ---- checks ------------------------------------------------------------------------ */

typedef struct keyset {
    const uint8_t *key[MAX_KEYS];
    size_t len[MAX_KEYS];
    int added[MAX_KEYS]; /* add's result */
    amq_hash128 h[MAX_KEYS]; /* by_hash: the keys are these hashes */
    int by_hash;
    size_t n;
} keyset;

/* Is key i in f (by its hash, when the keys are hashes)? */
static int has_key(const amq_filter *f, const keyset *ks, size_t i)
{
    return ks->by_hash ? amq_filter_contains_hash(f, ks->h[i])
                       : amq_filter_contains(f, ks->key[i], ks->len[i]);
}

static void all_found(const amq_filter *f, const keyset *ks, const char *what)
{
    size_t i;
    for (i = 0; i < ks->n; i++)
        if (ks->added[i] >= 0)
            FZ_CHECK(has_key(f, ks, i) == 1, "%s: key %zu (added: %d) is missing", what, i,
                     ks->added[i]);
}

static void same_bytes(const amq_filter *a, const amq_filter *b, const char *what)
{
    size_t la, lb;
    uint8_t *x = fz_serialize(a, &la), *y = fz_serialize(b, &lb);
    FZ_CHECK(la == lb && memcmp(x, y, la) == 0, "%s: serialized bytes differ (%zu, %zu)", what,
             la, lb);
    free(x);
    free(y);
}

static char tmpdir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "%s/amq-fuzz-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (mkdtemp(tmpdir) == NULL)
        tmpdir[0] = '\0';
    return 0;
}

static void through_file(const amq_filter *f, const keyset *ks, const fz_probes *p,
                         const amq_allocator *al)
{
    char path[128];
    amq_filter *g;
    amq_errinfo err;
    unsigned flags;
    int rc;

    if (tmpdir[0] == '\0')
        return;
    snprintf(path, sizeof path, "%s/f.amq", tmpdir);
    rc = amq_filter_save(f, path, 0, &err);
    FZ_CHECK(rc == AMQ_OK, "save: %s", err.msg);
    for (flags = 0; flags < 4; flags++) {
        rc = amq_filter_open(path, flags, al, &g, &err);
        FZ_CHECK(rc == AMQ_OK, "open (flags %u): %s", flags, err.msg);
        all_found(g, ks, "opened");
        fz_same_answers(f, g, p, "opened");
        same_bytes(f, g, "opened");
        amq_filter_free(g);
    }
    unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned modes[] = {0, AMQ_OPEN_MMAP, AMQ_OPEN_TRUST,
                                     AMQ_OPEN_MMAP | AMQ_OPEN_TRUST};
    fz_in in = {data, size};
    const maker *mk = &makers[fz_u8(&in) % NMAKERS];
    amq_filter *f = NULL, *g = NULL, *h = NULL;
    amq_allocator al, al2;
    fz_alloc a, a2;
    fz_in params;
    fz_probes p;
    keyset *ks;
    amq_hash128 *hashes;
    uint8_t *bytes, *batch_added;
    size_t len, i, m;
    uint64_t ones = 0, base = 0;
    unsigned shift = 0;
    amq_stats st;
    amq_errinfo err;
    unsigned flags;
    int rc;

    al = fz_allocator(&a, RT_CAP);
    a.total_cap = RT_TOTAL_CAP;
    params = in;
    if (mk->make(&in, &al, &f) != AMQ_OK) {
        FZ_CHECK_NO_LEAK(&a);
        return 0;
    }
    flags = fz_u8(&in);
    ks = calloc(1, sizeof *ks);
    hashes = calloc(MAX_KEYS, sizeof *hashes);
    batch_added = calloc(MAX_KEYS, 1);
    FZ_CHECK(ks != NULL && hashes != NULL && batch_added != NULL, "out of memory");
    if (flags & 2) {
        shift = fz_u8(&in) % 64u;
        base = fz_u64(&in);
        ks->by_hash = 1;
    }
    while (in.n > 0 && ks->n < (ks->by_hash ? MAX_KEYS : MAX_BYTE_KEYS)) {
        size_t klen = fz_u8(&in) % 64u;
        uint64_t v = 0;
        if (klen > in.n)
            klen = in.n;
        ks->key[ks->n] = in.p;
        ks->len[ks->n] = klen;
        for (i = 0; i < klen && i < 8; i++)
            v |= (uint64_t)in.p[i] << (8 * i);
        ks->h[ks->n].h1 = base + (v >> shift);
        ks->h[ks->n].h2 = v * UINT64_C(0x9e3779b97f4a7c15) ^ klen;
        in.p += klen;
        in.n -= klen;
        ks->n++;
    }
    fz_probes_init(&p, data, size);

    /* Add one by one: each key is found right after its add. */
    for (i = 0; i < ks->n; i++) {
        rc = ks->by_hash ? amq_filter_add_hash(f, ks->h[i])
                         : amq_filter_add(f, ks->key[i], ks->len[i]);
        FZ_CHECK(fz_add_status_ok(rc), "add: %d (%s)", rc, amq_strerror(rc));
        ks->added[i] = rc;
        if (rc == 1)
            ones++;
        if (rc >= 0)
            FZ_CHECK(has_key(f, ks, i) == 1, "key %zu missing right after add", i);
        hashes[i] = ks->by_hash ? ks->h[i] : amq_filter_hash(f, ks->key[i], ks->len[i]);
    }
    all_found(f, ks, "after adding");
    a.total_cap = 0; /* the budget bounds growth; copies and saves may follow */
    amq_filter_stats(f, &st);
    FZ_CHECK(st.items == ones, "items %llu, adds that returned 1: %llu",
             (unsigned long long)st.items, (unsigned long long)ones);

    /* The same filter built with add_batch. */
    /* (Its own allocator with the same budget: the same allocations fail.) */
    in = params;
    al2 = fz_allocator(&a2, RT_CAP);
    a2.total_cap = RT_TOTAL_CAP;
    rc = mk->make(&in, &al2, &g);
    FZ_CHECK(rc == AMQ_OK, "the same parameters failed the second time: %d", rc);
    rc = amq_filter_add_batch(g, hashes, ks->n, batch_added);
    a2.total_cap = 0;
    FZ_CHECK(rc == AMQ_OK || (rc < 0 && fz_add_status_ok(rc)), "add_batch: %d", rc);
    if (rc == AMQ_OK) {
        for (i = 0; i < ks->n; i++)
            FZ_CHECK(batch_added[i] == ks->added[i], "key %zu: batch added %u, single %d", i,
                     batch_added[i], ks->added[i]);
        same_bytes(f, g, "add_batch");
    }
    amq_filter_free(g);
    FZ_CHECK_NO_LEAK(&a2);

    /* Bytes out and back in, every way. */
    bytes = fz_serialize(f, &len);
    for (m = 0; m < 4; m++) {
        rc = amq_filter_deserialize(bytes, len, modes[m], &al, &g, &err);
        FZ_CHECK(rc == AMQ_OK, "deserialize (flags %u) of fresh bytes: %s", modes[m], err.msg);
        all_found(g, ks, "deserialized");
        fz_same_answers(f, g, &p, "deserialized");
        same_bytes(f, g, "deserialized");
        amq_filter_free(g);
    }
    free(bytes);

    /* Clone; merge into an empty twin. */
    rc = amq_filter_clone(f, &al, &g);
    FZ_CHECK(rc == AMQ_OK, "clone: %d", rc);
    same_bytes(f, g, "clone");
    amq_filter_free(g);
    in = params;
    rc = mk->make(&in, &al, &h);
    FZ_CHECK(rc == AMQ_OK, "the same parameters failed the third time: %d", rc);
    rc = amq_filter_merge(h, f, &err);
    FZ_CHECK(rc == AMQ_OK || rc == AMQ_EUNSUPPORTED, "merge into an empty twin: %d", rc);
    if (rc == AMQ_OK) {
        all_found(h, ks, "merged");
        fz_same_answers(f, h, &p, "merged");
    }
    amq_filter_free(h);

    if (flags & 1)
        through_file(f, ks, &p, &al);

    amq_filter_free(f);
    FZ_CHECK_NO_LEAK(&a);
    free(ks);
    free(hashes);
    free(batch_added);
    return 0;
}
