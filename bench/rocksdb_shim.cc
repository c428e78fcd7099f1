/*
 * rocksdb_shim.cc - bench/rocksdb_shim.h over Debian's librocksdb-dev.
 *
 * Why the two class declarations below: RocksDB's public header
 * rocksdb/filter_policy.h hands out builders and readers
 * (FilterPolicy::GetBuilderWithContext, ::GetFilterBitsReader) but only
 * forward-declares their classes; their definitions sit in an internal
 * header that Debian does not install.  The library exports their virtual
 * interface (the default bodies of FilterBitsBuilder::Finish(buf, status),
 * ::MaybePostVerify and FilterBitsReader::MayMatch(int, Slice**, bool*) are
 * exported symbols), so this file declares the same virtual functions in the
 * same order - the order the shipped library's vtables hold them in - and
 * calls them.  amqb_rocks_finish checks the result (the filter's trailer
 * names what was built) and the benchmark checks every added key is found,
 * so a mismatch shows as an unavailable subject or false negatives, not as
 * figures.  The alternative through wholly public API - a table's filter
 * block, written by SstFileWriter and read through a DB - would time the
 * table reader, block cache and index with every query, not the filter.
 */
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice.h>
#include <rocksdb/status.h>
#include <rocksdb/table.h>

#include <cstring>
#include <memory>
#include <new>

#include "rocksdb_shim.h"

namespace ROCKSDB_NAMESPACE {

class FilterBitsBuilder {
  public:
    virtual ~FilterBitsBuilder() {}
    virtual void AddKey(const Slice &key) = 0;
    virtual size_t EstimateEntriesAdded() = 0;
    virtual Slice Finish(std::unique_ptr<const char[]> *buf) = 0;
    virtual Slice Finish(std::unique_ptr<const char[]> *buf, Status *status) = 0;
    virtual Status MaybePostVerify(const Slice &filter_content) = 0;
    virtual size_t ApproximateNumEntries(size_t bytes) = 0;
};

class FilterBitsReader {
  public:
    virtual ~FilterBitsReader() {}
    virtual bool MayMatch(const Slice &entry) = 0;
    virtual void MayMatch(int num_keys, Slice **keys, bool *may_match) = 0;
};

} // namespace ROCKSDB_NAMESPACE

namespace rdb = ROCKSDB_NAMESPACE;

struct amqb_rocks {
    /* Destroyed bottom up: the reader before the bytes it reads. */
    std::unique_ptr<const rdb::FilterPolicy> policy;
    std::unique_ptr<const char[]> buf;
    std::unique_ptr<rdb::FilterBitsBuilder> builder;
    std::unique_ptr<rdb::FilterBitsReader> reader;
    rdb::Slice filter;
    int want_ribbon = 0;
    const char *impl = "none";
};

extern "C" amqb_rocks *amqb_rocks_new(const char *policy, double bits_per_key)
{
    try {
        std::unique_ptr<amqb_rocks> r(new amqb_rocks);
        if (std::strcmp(policy, "bloom") == 0) {
            r->policy.reset(rdb::NewBloomFilterPolicy(bits_per_key));
        } else if (std::strcmp(policy, "ribbon") == 0) {
            r->policy.reset(rdb::NewRibbonFilterPolicy(bits_per_key));
            r->want_ribbon = 1;
        } else {
            return nullptr;
        }
        rdb::BlockBasedTableOptions topt;
        topt.format_version = 5; /* FastLocalBloom for the Bloom policy */
        topt.optimize_filters_for_memory = false;
        rdb::FilterBuildingContext ctx(topt);
        ctx.compaction_style = rdb::kCompactionStyleLevel;
        ctx.level_at_creation = 1; /* Ribbon from level 0 on (the default) */
        r->builder.reset(r->policy->GetBuilderWithContext(ctx));
        if (!r->builder)
            return nullptr;
        return r.release();
    } catch (...) {
        return nullptr;
    }
}

extern "C" void amqb_rocks_add(amqb_rocks *r, const void *key, size_t len)
{
    r->builder->AddKey(rdb::Slice(static_cast<const char *>(key), len));
}

/* The 5-byte trailer of a format_version 5 filter: byte 0 is -1 for the
 * cache-local Bloom family (byte 1 then 0 for FastLocalBloom), -2 for
 * Standard128Ribbon. */
static const char *trailer_impl(const rdb::Slice &f)
{
    if (f.size() < 5)
        return "other";
    const unsigned char *t = reinterpret_cast<const unsigned char *>(f.data()) + f.size() - 5;
    if (t[0] == 0xff && t[1] == 0)
        return "FastLocalBloom";
    if (t[0] == 0xfe)
        return "Standard128Ribbon";
    return "other";
}

extern "C" int amqb_rocks_finish(amqb_rocks *r)
{
    try {
        rdb::Status st;
        r->filter = r->builder->Finish(&r->buf, &st);
        r->builder.reset();
        if (!st.ok() || r->buf == nullptr)
            return -1;
        r->impl = trailer_impl(r->filter);
        if (std::strcmp(r->impl, r->want_ribbon ? "Standard128Ribbon" : "FastLocalBloom") != 0)
            return -1;
        r->reader.reset(r->policy->GetFilterBitsReader(r->filter));
        return r->reader ? 0 : -1;
    } catch (...) {
        return -1;
    }
}

extern "C" int amqb_rocks_may_match(amqb_rocks *r, const void *key, size_t len)
{
    return r->reader->MayMatch(rdb::Slice(static_cast<const char *>(key), len)) ? 1 : 0;
}

extern "C" uint64_t amqb_rocks_may_match_batch(amqb_rocks *r, const void *keys, size_t len,
                                               size_t n, uint8_t *out)
{
    const char *p = static_cast<const char *>(keys);
    rdb::Slice s[AMQB_ROCKS_MAX_BATCH];
    rdb::Slice *sp[AMQB_ROCKS_MAX_BATCH];
    bool m[AMQB_ROCKS_MAX_BATCH];
    uint64_t found = 0;
    for (size_t i = 0; i < n; i += AMQB_ROCKS_MAX_BATCH) {
        size_t b = n - i < AMQB_ROCKS_MAX_BATCH ? n - i : AMQB_ROCKS_MAX_BATCH;
        for (size_t j = 0; j < b; j++) {
            s[j] = rdb::Slice(p + (i + j) * len, len);
            sp[j] = &s[j];
        }
        r->reader->MayMatch(static_cast<int>(b), sp, m);
        for (size_t j = 0; j < b; j++) {
            found += m[j];
            if (out != nullptr)
                out[i + j] = m[j];
        }
    }
    return found;
}

extern "C" size_t amqb_rocks_bytes(const amqb_rocks *r)
{
    return r->reader ? r->filter.size() : 0;
}

extern "C" const char *amqb_rocks_impl(const amqb_rocks *r)
{
    return r->impl;
}

extern "C" void amqb_rocks_free(amqb_rocks *r)
{
    delete r;
}
