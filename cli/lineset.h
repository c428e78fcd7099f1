/*
 * lineset.h - the exact part of `amq dedup`: the set of flagged hashes
 * (pass 1) and the set of flagged lines (pass 2).
 *
 * Pass 1 records the 64-bit key of every line the Bloom filter had "maybe
 * seen" in a cand_set.  Pass 2 turns it into a line_set: each key's slot
 * gets the bytes of the first line seen with that key, and later lines
 * with the key are compared byte for byte - so two different lines that
 * share a key (a hash collision) are still told apart.  Lines whose key is
 * not in the set occurred once.
 *
 * Both are open-addressing tables (linear probing, multiply-shift slot of
 * the key, key 0 reserved as "empty"), allocated with mmap and advised to
 * use huge pages: at hundreds of MB the TLB misses would otherwise cost as
 * much as the cache misses.
 *
 * The hash_set is the same kind of table over whole 128-bit hashes: `add`
 * and `build` on cuckoo kinds drop a key of the input only when its exact
 * hash was seen before in the run (a 64-bit digest would drop distinct
 * keys whose digests collide, and those would answer absent).
 */
#ifndef AMQ_CLI_LINESET_H
#define AMQ_CLI_LINESET_H

#include <stddef.h>
#include <stdint.h>

/* The key of a line: 64 bits of its 128-bit hash, never 0. */
static inline uint64_t lineset_key(uint64_t h)
{
    return h | (uint64_t)(h == 0);
}

typedef struct cand_set {
    uint64_t *keys;
    uint64_t nslots, count, limit;
} cand_set;

int cand_init(cand_set *c, uint64_t expected);
void cand_free(cand_set *c);
/* Adds one key: 1 if it was not in, 0 if it was, -1 when out of memory. */
int cand_add(cand_set *c, uint64_t key);
/* Adds keys[0..n) (those not in yet).  0, or -1 when out of memory. */
int cand_add_batch(cand_set *c, const uint64_t *keys, size_t n);
uint64_t cand_bytes(const cand_set *c);

typedef struct line_slot {
    uint64_t key;
    uint64_t ref; /* 0: no line yet; else 1 + offset of its bytes in the arena */
} line_slot;

typedef struct line_set {
    line_slot *slots;
    uint64_t nslots, count, limit;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} line_set;

/* Builds the line set from c's keys and frees c.  0, or -1 (no memory). */
int line_set_from_cand(line_set *s, cand_set *c);
void line_set_free(line_set *s);

#define LINESET_ABSENT UINT64_MAX

/* For each key, the first slot holding it, or LINESET_ABSENT. */
void line_set_find_batch(const line_set *s, const uint64_t *keys, size_t n, uint64_t *slot);

/*
 * The line (data, len) of the given key, found at slot: 1 if it is the first
 * time this line is seen (its bytes are kept), 0 if it was seen before, 2 if
 * it is new and the table was enlarged (slots from line_set_find_batch are
 * then stale), -1 when out of memory.
 */
int line_set_check(line_set *s, uint64_t slot, uint64_t key, const uint8_t *data, size_t len);

/* Prefetches what line_set_check will read for slot. */
void line_set_prefetch(const line_set *s, uint64_t slot);

uint64_t line_set_bytes(const line_set *s);

/* ---- the exact set of 128-bit hashes -------------------------------------------- */
typedef struct hash_slot {
    uint64_t h1, h2; /* (0, 0): empty (the hash (0, 0) itself is has_zero) */
} hash_slot;

typedef struct hash_set {
    hash_slot *slots;
    uint64_t nslots, count, limit;
    int has_zero;
} hash_set;

int hash_set_init(hash_set *s, uint64_t expected);
void hash_set_free(hash_set *s);
/* Adds the hash (h1, h2): 1 if it was not in, 0 if it was, -1 when out of memory. */
int hash_set_add(hash_set *s, uint64_t h1, uint64_t h2);

#endif /* AMQ_CLI_LINESET_H */
