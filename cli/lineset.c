/*
 * lineset.c - the flagged hashes and flagged lines of `amq dedup`
 * (lineset.h).
 */
#include <string.h>
#include <sys/mman.h>

#include "lineset.h"

#define AHEAD 16
/* Pass 1 grows at 3/4 full.  Pass 2 is sized at 1/2 full and grows at 3/5
 * (it only grows on a hash collision between different lines): every
 * input line is looked up in it, a quarter of them (the lines seen once)
 * unsuccessfully, and a linear-probing miss scans about (1 + 1/(1-a)^2)/2
 * slots - 13 at a load of 0.8, 2.5 at 0.5: the lower load buys pass 2
 * fewer probes for some peak memory. */
#define CAND_LOAD 0.75
#define LINE_LOAD 0.50
#define LINE_GROW 0.60

/* ---- memory ------------------------------------------------------------------- */

static void *big_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (size >= ((size_t)2 << 20))
        (void)madvise(p, size, MADV_HUGEPAGE);
#endif
    return p;
}

static void big_free(void *p, size_t size)
{
    if (p != NULL)
        munmap(p, size);
}

static inline uint64_t slot_of(uint64_t key, uint64_t nslots)
{
    return (uint64_t)(((unsigned __int128)key * nslots) >> 64);
}

static int table_size(uint64_t count, double load, uint64_t *nslots, size_t elem)
{
    double want = (double)count / load + 16.0;
    if (want > (double)(SIZE_MAX / elem) || want > 9e18)
        return -1;
    *nslots = (uint64_t)want;
    return 0;
}

/* ---- pass 1: the flagged keys -------------------------------------------------- */

static int cand_alloc(cand_set *c, uint64_t nslots)
{
    c->keys = big_alloc((size_t)nslots * sizeof *c->keys);
    if (c->keys == NULL)
        return -1;
    c->nslots = nslots;
    c->count = 0;
    c->limit = (uint64_t)((double)nslots * CAND_LOAD);
    return 0;
}

int cand_init(cand_set *c, uint64_t expected)
{
    uint64_t n;
    memset(c, 0, sizeof *c);
    if (table_size(expected < 4096 ? 4096 : expected, CAND_LOAD, &n, sizeof *c->keys) != 0)
        return -1;
    return cand_alloc(c, n);
}

void cand_free(cand_set *c)
{
    big_free(c->keys, (size_t)c->nslots * sizeof *c->keys);
    memset(c, 0, sizeof *c);
}

uint64_t cand_bytes(const cand_set *c)
{
    return c->nslots * sizeof *c->keys;
}

static int cand_put(cand_set *c, uint64_t key)
{
    uint64_t i = slot_of(key, c->nslots);
    for (;;) {
        if (c->keys[i] == key)
            return 0;
        if (c->keys[i] == 0) {
            c->keys[i] = key;
            c->count++;
            return 1;
        }
        if (++i == c->nslots)
            i = 0;
    }
}

static int cand_grow(cand_set *c)
{
    cand_set old = *c;
    uint64_t i;

    if (old.nslots > UINT64_MAX / 2 || cand_alloc(c, old.nslots * 2) != 0) {
        *c = old;
        return -1;
    }
    for (i = 0; i < old.nslots; i++)
        if (old.keys[i] != 0)
            (void)cand_put(c, old.keys[i]);
    big_free(old.keys, (size_t)old.nslots * sizeof *old.keys);
    return 0;
}

int cand_add(cand_set *c, uint64_t key)
{
    if (c->count >= c->limit && cand_grow(c) != 0)
        return -1;
    return cand_put(c, key);
}

int cand_add_batch(cand_set *c, const uint64_t *keys, size_t n)
{
    size_t i;

    for (i = 0; i < n && i < AHEAD; i++)
        __builtin_prefetch(&c->keys[slot_of(keys[i], c->nslots)], 1);
    for (i = 0; i < n; i++) {
        if (c->count >= c->limit && cand_grow(c) != 0)
            return -1;
        if (i + AHEAD < n)
            __builtin_prefetch(&c->keys[slot_of(keys[i + AHEAD], c->nslots)], 1);
        (void)cand_put(c, keys[i]);
    }
    return 0;
}

/* ---- the exact set of 128-bit hashes ------------------------------------------------ */

static int hash_alloc(hash_set *s, uint64_t nslots)
{
    s->slots = big_alloc((size_t)nslots * sizeof *s->slots);
    if (s->slots == NULL)
        return -1;
    s->nslots = nslots;
    s->count = 0;
    s->limit = (uint64_t)((double)nslots * CAND_LOAD);
    return 0;
}

int hash_set_init(hash_set *s, uint64_t expected)
{
    uint64_t n;
    memset(s, 0, sizeof *s);
    if (table_size(expected < 4096 ? 4096 : expected, CAND_LOAD, &n, sizeof *s->slots) != 0)
        return -1;
    return hash_alloc(s, n);
}

void hash_set_free(hash_set *s)
{
    big_free(s->slots, (size_t)s->nslots * sizeof *s->slots);
    memset(s, 0, sizeof *s);
}

static int hash_put(hash_set *s, uint64_t h1, uint64_t h2)
{
    uint64_t i = slot_of(h1, s->nslots);
    for (;;) {
        hash_slot *e = &s->slots[i];
        if (e->h1 == h1 && e->h2 == h2)
            return 0;
        if ((e->h1 | e->h2) == 0) {
            e->h1 = h1;
            e->h2 = h2;
            s->count++;
            return 1;
        }
        if (++i == s->nslots)
            i = 0;
    }
}

static int hash_grow(hash_set *s)
{
    hash_set old = *s;
    uint64_t i;

    if (old.nslots > UINT64_MAX / 2 || hash_alloc(s, old.nslots * 2) != 0) {
        *s = old;
        return -1;
    }
    s->has_zero = old.has_zero;
    for (i = 0; i < old.nslots; i++)
        if ((old.slots[i].h1 | old.slots[i].h2) != 0)
            (void)hash_put(s, old.slots[i].h1, old.slots[i].h2);
    big_free(old.slots, (size_t)old.nslots * sizeof *old.slots);
    return 0;
}

int hash_set_add(hash_set *s, uint64_t h1, uint64_t h2)
{
    if ((h1 | h2) == 0) {
        int was = s->has_zero;
        s->has_zero = 1;
        return !was;
    }
    if (s->count >= s->limit && hash_grow(s) != 0)
        return -1;
    return hash_put(s, h1, h2);
}

/* ---- pass 2: the flagged lines ----------------------------------------------------- */

static int lines_alloc(line_set *s, uint64_t nslots)
{
    s->slots = big_alloc((size_t)nslots * sizeof *s->slots);
    if (s->slots == NULL)
        return -1;
    s->nslots = nslots;
    s->count = 0;
    s->limit = (uint64_t)((double)nslots * LINE_GROW);
    return 0;
}

/* Places a (key, ref) pair in the first free slot from key's home. */
static void lines_put(line_set *s, uint64_t key, uint64_t ref)
{
    uint64_t i = slot_of(key, s->nslots);
    while (s->slots[i].key != 0)
        if (++i == s->nslots)
            i = 0;
    s->slots[i].key = key;
    s->slots[i].ref = ref;
    s->count++;
}

int line_set_from_cand(line_set *s, cand_set *c)
{
    uint64_t n, i;

    memset(s, 0, sizeof *s);
    if (table_size(c->count, LINE_LOAD, &n, sizeof *s->slots) != 0 || lines_alloc(s, n) != 0)
        return -1;
    for (i = 0; i < c->nslots; i++)
        if (c->keys[i] != 0)
            lines_put(s, c->keys[i], 0);
    cand_free(c);
    return 0;
}

void line_set_free(line_set *s)
{
    big_free(s->slots, (size_t)s->nslots * sizeof *s->slots);
    big_free(s->arena, s->arena_cap);
    memset(s, 0, sizeof *s);
}

uint64_t line_set_bytes(const line_set *s)
{
    return s->nslots * sizeof *s->slots + s->arena_len;
}

void line_set_find_batch(const line_set *s, const uint64_t *keys, size_t n, uint64_t *slot)
{
    uint64_t i, k;
    size_t j;

    for (j = 0; j < n && j < AHEAD; j++)
        __builtin_prefetch(&s->slots[slot_of(keys[j], s->nslots)], 0);
    for (j = 0; j < n; j++) {
        if (j + AHEAD < n)
            __builtin_prefetch(&s->slots[slot_of(keys[j + AHEAD], s->nslots)], 0);
        k = keys[j];
        i = slot_of(k, s->nslots);
        for (;;) {
            if (s->slots[i].key == k) {
                slot[j] = i;
                break;
            }
            if (s->slots[i].key == 0) {
                slot[j] = LINESET_ABSENT;
                break;
            }
            if (++i == s->nslots)
                i = 0;
        }
    }
}

void line_set_prefetch(const line_set *s, uint64_t slot)
{
    uint64_t ref = s->slots[slot].ref;
    if (ref != 0)
        __builtin_prefetch(s->arena + ref - 1, 0);
}

/* ---- the arena: each line as a LEB128 length and its bytes ------------------------- */

static int arena_append(line_set *s, const uint8_t *data, size_t len, uint64_t *ref)
{
    size_t need = len + 10, cap;
    uint8_t *p;
    size_t v = len;

    if (s->arena_cap - s->arena_len < need) {
        cap = s->arena_cap != 0 ? s->arena_cap : ((size_t)4 << 20);
        while (cap - s->arena_len < need) {
            if (cap > SIZE_MAX / 2)
                return -1;
            cap *= 2;
        }
        if (s->arena == NULL)
            p = big_alloc(cap);
        else {
            p = mremap(s->arena, s->arena_cap, cap, MREMAP_MAYMOVE);
            if (p == MAP_FAILED)
                p = NULL;
        }
        if (p == NULL)
            return -1;
        s->arena = p;
        s->arena_cap = cap;
    }
    *ref = (uint64_t)s->arena_len + 1;
    p = s->arena + s->arena_len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    memcpy(p, data, len);
    s->arena_len = (size_t)(p - s->arena) + len;
    return 0;
}

static int arena_equal(const line_set *s, uint64_t ref, const uint8_t *data, size_t len)
{
    const uint8_t *p = s->arena + ref - 1;
    size_t v = 0;
    unsigned shift = 0;

    while (*p & 0x80) {
        v |= (size_t)(*p++ & 0x7f) << shift;
        shift += 7;
    }
    v |= (size_t)*p++ << shift;
    return v == len && memcmp(p, data, len) == 0;
}

static int lines_grow(line_set *s)
{
    line_set old = *s;
    uint64_t i;

    if (old.nslots > UINT64_MAX / 2 || lines_alloc(s, old.nslots * 2) != 0) {
        *s = old;
        return -1;
    }
    for (i = 0; i < old.nslots; i++)
        if (old.slots[i].key != 0)
            lines_put(s, old.slots[i].key, old.slots[i].ref);
    big_free(old.slots, (size_t)old.nslots * sizeof *old.slots);
    return 0;
}

int line_set_check(line_set *s, uint64_t slot, uint64_t key, const uint8_t *data, size_t len)
{
    uint64_t i = slot, ref;

    for (;;) {
        if (s->slots[i].key == key) {
            if (s->slots[i].ref == 0) {
                if (arena_append(s, data, len, &ref) != 0)
                    return -1;
                s->slots[i].ref = ref;
                return 1;
            }
            if (arena_equal(s, s->slots[i].ref, data, len))
                return 0;
        } else if (s->slots[i].key == 0) {
            break;
        }
        if (++i == s->nslots)
            i = 0;
    }
    /* Another line with the same key: a slot of its own. */
    if (arena_append(s, data, len, &ref) != 0)
        return -1;
    s->slots[i].key = key;
    s->slots[i].ref = ref;
    s->count++;
    if (s->count >= s->limit) {
        if (lines_grow(s) != 0)
            return -1;
        return 2;
    }
    return 1;
}
