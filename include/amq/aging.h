/*
 * amq/aging.h - the aging (sliding-window) filter: what the generic handle
 * cannot say.
 *
 * An aging filter (AMQ_KIND_AGING, "aging") is an age-partitioned Bloom
 * filter (Shtul, Baquero, Almeida 2020): k + l slices used as a circular
 * buffer of generations; a key goes into the k newest slices, a query looks
 * for k consecutive slices that hold it, and each new generation drops the
 * oldest slice and starts an empty one.  It forgets old keys smoothly while
 * keeping its false-positive rate over a sliding window.  docs/aging.md
 * states the guarantees; in short, for a filter sized for a window of W
 * insertions (or T milliseconds):
 *  - no false negative for a key added within the last W adds (count mode)
 *    or the last T ms (time mode, by the times passed in);
 *  - a false-positive rate of at most fpp_target while no generation gets
 *    more than gen_size adds (always so in count mode);
 *  - a key older than (k + l) * gen_size adds (or (k + l) * gen_ms ms) has
 *    left every slice and answers like a key never added.
 *
 * Create it through amq_filter_new with cfg.kind = AMQ_KIND_AGING:
 *  - count mode: cfg.capacity = W, cfg.fpp; a new generation starts every
 *    gen_size adds (each amq_filter_add counts, repeated keys too);
 *  - time mode: cfg.window_ms = T, cfg.rate = expected adds per second,
 *    cfg.fpp; generations follow the caller's clock: the library never
 *    reads one.  amq_aging_advance(f, now_ms) moves the filter to the time
 *    now_ms (milliseconds on any fixed epoch); amq_filter_add and
 *    amq_filter_contains act at the last time passed in.
 *
 * The generic handle gives add, contains, their batched forms, clear,
 * stats, describe, files, bytes and mmap; merge is unsupported.
 * Thread safety as in amq/filter.h: amq_aging_advance is a writer, the
 * *_at queries are readers.
 */
#ifndef AMQ_AGING_H
#define AMQ_AGING_H

#include "amq/common.h"
#include "amq/hash.h"

#ifdef __cplusplus
extern "C" {
#endif

struct amq_filter;

/* Geometry and state. */
typedef struct amq_aging_info {
    uint32_t time_mode;  /* 1: generations by time, 0: by add count */
    uint32_t k;          /* slices a key is added to (and probes per query run) */
    uint32_t l;          /* extra slices: the generations a key survives */
    uint64_t blocks;     /* blocks of (k + l) 64-bit words, one word per slice */
    uint64_t bytes;      /* bytes of filter data */
    uint64_t gen_size;   /* adds per generation (time mode: expected) */
    uint64_t gen_ms;     /* time mode: milliseconds per generation; else 0 */
    uint64_t window;     /* guaranteed window in adds: l * gen_size >= capacity */
    uint64_t window_ms;  /* time mode: guaranteed window, l * gen_ms */
    uint64_t horizon;    /* adds ((k + l) * gen_size) after which a key is gone */
    uint64_t horizon_ms; /* time mode: (k + l) * gen_ms */
    uint64_t generation; /* count: generations started; time: now_ms / gen_ms */
    uint64_t in_generation; /* adds in the current generation */
    uint64_t adds;       /* adds since creation or clear */
    double fpp_bound;    /* the false-positive bound at gen_size adds per generation */
} amq_aging_info;

/* Fills info; AMQ_EKIND when f is not an aging filter. */
AMQ_API int amq_aging_get_info(const struct amq_filter *f, amq_aging_info *info);

/*
 * Time mode: moves the filter's clock to now_ms, starting the generations
 * that began since the last call (at most k + l slices are cleared, whatever
 * the gap).  A time before the filter's current generation changes nothing:
 * the clock never goes back.  AMQ_EKIND for another kind, AMQ_EUNSUPPORTED
 * in count mode, AMQ_EREADONLY for a read-only filter.  O(blocks) when a
 * generation starts.
 */
AMQ_API int amq_aging_advance(struct amq_filter *f, uint64_t now_ms);

/*
 * Queries as of time now_ms without changing the filter (so also on a
 * read-only, mmap'd file): slices that would have been dropped by now_ms
 * are ignored.  1 may be present, 0 certainly absent (or forgotten).  In
 * count mode, and for filters of other kinds, now_ms is ignored: these are
 * then amq_filter_contains_hash and amq_filter_contains_batch (which, like
 * the batched form here, stores 1 or 0 in out[i] and returns AMQ_OK).
 */
AMQ_API int amq_aging_contains_at(const struct amq_filter *f, amq_hash128 h, uint64_t now_ms);
AMQ_API int amq_aging_contains_batch_at(const struct amq_filter *f, const amq_hash128 *h,
                                        size_t n, uint8_t *out, uint64_t now_ms);

/*
 * The sizing rule: the geometry amq_filter_new would choose for a window of
 * W adds at false-positive bound fpp (k, l, blocks, gen_size, fpp_bound and
 * bytes filled in info; the rest 0).  AMQ_ERANGE when W or fpp is out of
 * range, AMQ_EOVERFLOW when the filter would exceed 2^46 bytes.
 */
AMQ_API int amq_aging_info_for(uint64_t window, double fpp, amq_aging_info *info);

/* The false-positive bound of a geometry: k, l and lambda = gen_size /
 * blocks, the adds per block and generation (docs/aging.md, the model). */
AMQ_API double amq_aging_fpp_bound(uint32_t k, uint32_t l, double lambda);


#ifdef __cplusplus
}
#endif

#include "amq/compat.h" /* the old names, until 0.4 */

#endif /* AMQ_AGING_H */
