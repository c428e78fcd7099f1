/*
 * batch.h - the tests' one-value view of the batched calls: the status when
 * it is an error, else the count the call hands out.  Lets a check compare
 * both in one expression (CHECK_EQ(t_blocked_add_batch(...), 100)).
 */
#ifndef AMQ_TEST_BATCH_H
#define AMQ_TEST_BATCH_H

#include "amq.h"

static inline int64_t t_count(int rc, uint64_t count)
{
    return rc < 0 ? (int64_t)rc : (int64_t)count;
}

#define T_BATCH_(call, ...)             \
    ({                                  \
        uint64_t t_n_ = 0;              \
        int t_rc_ = call(__VA_ARGS__, &t_n_); \
        t_count(t_rc_, t_n_);           \
    })

/* Calls that cannot fail: the count itself (UINT64_MAX if one ever did). */
#define T_COUNT_(call, ...)                   \
    ({                                        \
        uint64_t t_n_ = 0;                    \
        int t_rc_ = call(__VA_ARGS__, &t_n_); \
        t_rc_ < 0 ? UINT64_MAX : t_n_;        \
    })

#define t_blocked_add_batch(...) T_BATCH_(amq_blocked_add_batch, __VA_ARGS__)
#define t_blocked_add_batch64(...) T_BATCH_(amq_blocked_add_batch64, __VA_ARGS__)
#define t_blocked_add_batch_keys(...) T_BATCH_(amq_blocked_add_batch_keys, __VA_ARGS__)
#define t_blocked_add_batch_fixed(...) T_BATCH_(amq_blocked_add_batch_fixed, __VA_ARGS__)
#define t_blocked_contains_batch(...) T_COUNT_(amq_blocked_contains_batch, __VA_ARGS__)
#define t_blocked_contains_batch64(...) T_COUNT_(amq_blocked_contains_batch64, __VA_ARGS__)
#define t_blocked_contains_batch_keys(...) T_COUNT_(amq_blocked_contains_batch_keys, __VA_ARGS__)
#define t_blocked_contains_batch_fixed(...) \
    T_COUNT_(amq_blocked_contains_batch_fixed, __VA_ARGS__)
#define t_partitioned_add_batch(...) T_BATCH_(amq_partitioned_add_batch, __VA_ARGS__)
#define t_partitioned_contains_batch(...) T_COUNT_(amq_partitioned_contains_batch, __VA_ARGS__)
/* The cuckoo batch add: its status (it adds every key or fails). */
#define t_cuckoo_add_batch(...) amq_cuckoo_add_batch(__VA_ARGS__, NULL)
#define t_cuckoo_contains_batch(...) T_COUNT_(amq_cuckoo_contains_batch, __VA_ARGS__)
/* The copy counts return the count itself (they cannot fail). */
#define t_cuckoo_count(...) amq_cuckoo_count(__VA_ARGS__)
#define t_cuckoo_count_hash(...) amq_cuckoo_count_hash(__VA_ARGS__)
#define t_scuckoo_count(...) amq_scuckoo_count(__VA_ARGS__)
#define t_scuckoo_count_hash(...) amq_scuckoo_count_hash(__VA_ARGS__)

/* The policy's answer (1 or 0), or its error status. */
static inline int t_policy_contains(const void *blob, size_t len, const void *key,
                                    size_t key_len)
{
    int maybe = -100;
    int rc = amq_policy_contains(blob, len, key, key_len, &maybe);
    return rc < 0 ? rc : maybe;
}

#endif /* AMQ_TEST_BATCH_H */
