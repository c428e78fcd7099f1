// cuckooref.cc - efficient/cuckoofilter, its own code (src/cuckoofilter.h
// from AMQ_PEERS), behind bench/peers/peers.h: CuckooFilter<uint64_t, 12>
// with its default table (4 slots per bucket) and hash.  Built -O3 as its
// own Makefile builds it.  Compiled only when the code is there
// (bench/peers/cuckooref_absent.c otherwise).
#include "peers.h"

#include "cuckoofilter.h"

struct amqb_cref {
    explicit amqb_cref(size_t n) : f(n) {}
    cuckoofilter::CuckooFilter<uint64_t, 12> f;
};

extern "C" {
int amqb_cref_available(void)
{
    return 1;
}

amqb_cref *amqb_cref_new(size_t n)
{
    return new amqb_cref(n);
}

uint64_t amqb_cref_add(amqb_cref *c, const uint64_t *keys, size_t n)
{
    uint64_t fails = 0;
    for (size_t i = 0; i < n; i++)
        fails += c->f.Add(keys[i]) != cuckoofilter::Ok;
    return fails;
}

uint64_t amqb_cref_query(const amqb_cref *c, const uint64_t *keys, size_t n)
{
    uint64_t hits = 0;
    for (size_t i = 0; i < n; i++)
        hits += c->f.Contain(keys[i]) == cuckoofilter::Ok;
    return hits;
}

uint64_t amqb_cref_bytes(const amqb_cref *c)
{
    return c->f.SizeInBytes();
}

void amqb_cref_free(amqb_cref *c)
{
    delete c;
}
}
