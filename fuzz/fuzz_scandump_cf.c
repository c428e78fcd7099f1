/*
 * fuzz_scandump_cf.c - the RedisBloom CF dump decoders, as CF.LOADCHUNK
 * drives them: amq_scuckoo_header_decode + amq_scuckoo_from_header (counts
 * restored from the header, as the module does), then data chunks through
 * amq_scuckoo_chunk_apply, then commands on the result.
 *
 * Input: u16 header length H, H header bytes, then chunk records (u64
 * iterator, u16 length, bytes) up to one with iterator 0, then operations
 * (u8 op, u8 key length, key): add, add_unique, remove, count, contains,
 * compact.  Properties: every refusal is a status, changes nothing (a
 * chunk refused leaves the arrays as they were); on the loaded filter -
 * whatever garbage its arrays and counts hold - commands never crash, a
 * key added and not removed as often is always found (removing only keys
 * that were added, as the contract requires), SCANDUMP of it loads back to
 * the same arrays, and nothing leaks.
 */
#include "amq/scalable_cuckoo.h"

#define FZ_SD_FILTER amq_scuckoo
#define FZ_SD_CHUNK amq_scuckoo_chunk
#define FZ_SD_APPLY amq_scuckoo_chunk_apply
#define FZ_SD_WHAT "arrays"
#include "scandump.h"

#define MAX_MODEL 64

typedef struct model {
    const uint8_t *key[MAX_MODEL];
    size_t len[MAX_MODEL];
    unsigned copies[MAX_MODEL];
    size_t n;
} model;

static uint64_t fz_sd_sum(const amq_scuckoo *c)
{
    amq_scuckoo_info in;
    const uint8_t *data;
    uint64_t nb, sum = 0;
    size_t bytes;
    uint32_t j;

    amq_scuckoo_get_info(c, &in);
    for (j = 0; j < in.links; j++)
        if (amq_scuckoo_link(c, j, &nb, &data, &bytes) == AMQ_OK)
            sum = sum * 31 + amq_xxh3_64(data, bytes, j);
    return sum;
}

/* Slot reads the commands and checks of one input may make.  Every
 * command walks the chain (a lookup reads two buckets of every link, as
 * RedisBloom's; a compaction up to AMQ_SCUCKOO_COMPACT_WORK slots): on a
 * chain of 65,535 links of 255 slots a lookup reads 33M slots, and a check
 * of every key after every command took seconds an input (a timeout, not a
 * finding).  Commands stop when the next would pass it; checks are skipped
 * past it, but for the last, which has a budget of its own. */
#define READ_BUDGET (UINT64_C(1) << 22)
static uint64_t reads_left;

/* Takes the reads of n lookups from what is left: 0 when they do not fit. */
static int afford(const amq_scuckoo *c, uint64_t n)
{
    amq_scuckoo_info info;
    uint64_t cost;
    amq_scuckoo_get_info(c, &info);
    cost = n * info.links * 2 * info.bucket_size;
    if (cost > reads_left)
        return 0;
    reads_left -= cost;
    return 1;
}

static void check_model(const amq_scuckoo *c, const model *m, const char *after)
{
    size_t i;
    if (!afford(c, 2 * (uint64_t)m->n)) /* a contains and a count each */
        return;
    for (i = 0; i < m->n; i++)
        if (m->copies[i] > 0)
            FZ_CHECK(amq_scuckoo_contains(c, m->key[i], m->len[i]) == 1 &&
                         amq_scuckoo_count(c, m->key[i], m->len[i]) >= 1,
                     "after %s: key %zu (added %u times) is missing", after, i, m->copies[i]);
}

/* As CF.LOADCHUNK builds a filter from a header: the shape from the
 * header, the counts restored as given (redis/cf.c cf_from_header). */
static int load_header(const amq_scuckoo_header *h, const amq_allocator *al, amq_scuckoo **out)
{
    amq_scuckoo_header shape = *h;
    int rc;

    shape.num_items = 0;
    shape.num_deletes = 0;
    rc = amq_scuckoo_from_header(&shape, NULL, al, out);
    if (rc == AMQ_OK)
        amq_scuckoo_set_counts(*out, h->num_items, h->num_deletes);
    return rc;
}

/* SCANDUMP of c, loaded back by LOADCHUNK, gives the same arrays. */
static void dump_and_reload(const amq_scuckoo *c, const amq_allocator *al, size_t max_chunk)
{
    uint8_t hdr[AMQ_SCUCKOO_HEADER_SIZE];
    amq_scuckoo_header h;
    amq_scuckoo *d;
    amq_scuckoo_info info;
    const uint8_t *data;
    uint64_t nb, total = 0;
    size_t bytes;
    uint32_t j;
    int rc;

    rc = amq_scuckoo_header_serialize(c, hdr, sizeof hdr);
    FZ_CHECK(rc == AMQ_OK, "header_encode of a loaded filter: %d", rc);
    FZ_CHECK(amq_scuckoo_header_decode(hdr, sizeof hdr, &h) == AMQ_OK, "own header refused");
    rc = load_header(&h, al, &d);
    if (rc == AMQ_ENOMEM)
        return;
    FZ_CHECK(rc == AMQ_OK, "from_header of an encoded header: %d", rc);
    amq_scuckoo_get_info(c, &info);
    /* A chunk never spans two links and finding one walks the chain: each
     * SCANDUMP call is linear in the links (bounded by
     * AMQ_SCUCKOO_MAX_LINKS), a whole dump of thousands of tiny ones
     * quadratic - seconds here, not a finding. */
    if (info.links <= 1024) {
        for (j = 0; j < info.links; j++)
            if (amq_scuckoo_link(c, j, &nb, &data, &bytes) == AMQ_OK)
                total += bytes;
        fz_sd_reload(c, d, max_chunk, total);
    }
    amq_scuckoo_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    amq_scuckoo_header h;
    amq_scuckoo *c = NULL;
    amq_allocator al;
    fz_alloc a;
    model m;
    const uint8_t *hdr;
    size_t hlen;
    int rc;

    al = fz_sd_allocator(&a);
    hlen = fz_sd_header(&in, &hdr);
    rc = amq_scuckoo_header_decode(hdr, hlen, &h);
    if (rc != AMQ_OK) {
        FZ_CHECK(rc == AMQ_ETRUNC || rc == AMQ_ECORRUPT, "header_decode: %d", rc);
        return 0;
    }
    rc = load_header(&h, &al, &c);
    if (rc != AMQ_OK) {
        FZ_CHECK(rc == AMQ_ECORRUPT || rc == AMQ_ENOMEM, "from_header: %d", rc);
        FZ_CHECK(c == NULL, "from_header failed but left a filter");
        FZ_CHECK_NO_LEAK(&a);
        return 0;
    }

    /* Data chunks, as LOADCHUNK it data. */
    fz_sd_load_chunks(c, &in);
    rc = amq_scuckoo_check(c);
    FZ_CHECK(rc == AMQ_OK || rc == AMQ_ECORRUPT, "validate: %d", rc);
    dump_and_reload(c, &al, 1 + (size % 300));

    /* Commands on whatever was loaded. */
    memset(&m, 0, sizeof m);
    reads_left = READ_BUDGET;
    while (in.n > 0) {
        unsigned op = fz_u8(&in) % 6;
        const uint8_t *key;
        size_t klen = fz_bytes(&in, 32, &key), i;

        if (op == 5 ? reads_left < AMQ_SCUCKOO_COMPACT_WORK : !afford(c, 1))
            break;
        if (op == 5)
            reads_left -= AMQ_SCUCKOO_COMPACT_WORK;

        for (i = 0; i < m.n; i++)
            if (m.len[i] == klen && memcmp(m.key[i], key, klen) == 0)
                break;
        switch (op) {
        case 0: /* CF.ADD */
        case 1: /* CF.ADDNX */
            rc = op == 0 ? amq_scuckoo_add(c, key, klen) : amq_scuckoo_add_unique(c, key, klen);
            FZ_CHECK(rc == 0 || rc == 1 || rc == AMQ_EFULL || rc == AMQ_ELIMIT ||
                         rc == AMQ_ENOMEM,
                     "add: %d", rc);
            if (rc == 1 && i == m.n && m.n < MAX_MODEL) {
                m.key[m.n] = key;
                m.len[m.n] = klen;
                m.copies[m.n++] = 1;
            } else if (rc == 1 && i < m.n) {
                m.copies[i]++;
            }
            break;
        case 2: /* CF.DEL of a key added (the contract: never of other keys) */
            if (i < m.n && m.copies[i] > 0) {
                rc = amq_scuckoo_remove(c, key, klen);
                FZ_CHECK(rc == 1, "removing an added key: %d", rc);
                m.copies[i]--;
            }
            break;
        case 3:
            (void)amq_scuckoo_count(c, key, klen);
            break;
        case 4:
            rc = amq_scuckoo_contains(c, key, klen);
            FZ_CHECK(rc == 0 || rc == 1, "contains: %d", rc);
            break;
        default:
            amq_scuckoo_compact(c, 1);
            break;
        }
        check_model(c, &m, "an operation");
    }
    reads_left = READ_BUDGET;
    check_model(c, &m, "the last operation");
    amq_scuckoo_free(c);
    FZ_CHECK_NO_LEAK(&a);
    return 0;
}
