/*
 * expandable-bench.c - the kinds that grow without a capacity, grown from
 * 1,000 keys: the expandable kind (11), the quotient kind (12) and the pocket
 * kind (13), against
 * what a user who knew the size would have built (cuckoo and blocked
 * filters sized in advance), the RedisBloom-layout scalable Bloom filter
 * grown from the same start, and the peer taffy cuckoo filter
 * (jbapple/libfilter, when built in), and RedisBloom's own scalable Bloom
 * filter (--redisbloom: the oracle's module, rb_peer.h).  8-byte random
 * keys, 1 % target.
 * Every figure comes through the public handle (amq_filter_add,
 * amq_filter_contains, amq_filter_add_batch, amq_filter_contains_batch).
 *
 *   expandable-bench [--kind expandable|quotient|pocket|both|all] [--max N] [--absent A]
 *                    [--queries Q] [--grow-only | --speed] [--csv FILE]
 *                    [--redisbloom MODULE]
 *
 * At every power of ten from 1e3 to N, for each kind: every added key
 * checked present (one key at a time, batched hashes and packed keys; a
 * false negative ends the run with status 1), the measured rate on A keys
 * never added (default 10M) and bits per key, beside the cuckoo filter
 * sized for that many keys; at N: ns per query (Q queries, default 4M, half
 * present), ns per add averaged over the whole growth, one key at a time
 * and batched (a second filter grown from 1,000 in batches of 4,096), each
 * the best of three turns taken with the blocked filter's (each turn's
 * queries on filters grown or filled again, in pages of their own: the
 * kind's, the blocked filter's and the scalable Bloom filter's alike, each
 * checked to answer as the first), and the blocked
 * filter's queries again at twice its bytes (sized for 2N, N keys in it:
 * about the quotient kind's bytes), which tells a query's cost from its
 * table's size.  Ratios are within this run.  The run ends with a verdict
 * line per criterion of issue 44 for each kind measured (PASS or FAIL and
 * the ratio); its status does not depend on them, only on the false
 * negatives.  With --redisbloom (not with --speed or --grow-only) the
 * scalable Bloom filter is also grown by RedisBloom's own code, its one-key
 * queries timed in the same turns, and the tenfold judged against both.
 *
 * --csv FILE also writes the powers of ten's rows, machine-readable (the
 * printed output does not change): a header line, then one line per kind
 * and power of ten, written as each is measured,
 *   kind,keys,expansions,fpp,bits_per_key,absent,cuckoo_bits_at_rate
 * fpp a fraction (not a percentage), cuckoo_bits_at_rate empty when no
 * cuckoo filter was built (--grow-only, --speed, below 1e4 keys).
 * scripts/expandable-1e9.sh plots it.
 *
 *   expandable-bench --add-profile [--max N]
 *
 * takes the quotient kind's add apart at N keys (add_profile, below): ns an
 * add by the table's load with no growth, the growth's own ns a moved
 * entry, and one whole cycle from growth to growth beside the blocked
 * filter's one-key add.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "expandable-bench"
#define AMQ_ADVANCED_API 1 /* amq_filter_contains_batch_fixed */
#include "amq.h"
#include "bench_common.h"
#ifdef HAVE_TAFFY
#include "taffy_shim.h"
#endif

#define BATCH 4096
#define START 1000 /* where every growing filter starts */
#define MAX_POWERS 20

/* Issue 44's lines. */
#define TARGET_FPP 0.01
#define MAX_BITS_RATIO 1.5 /* bits per key over the cuckoo filter's at the same measured rate */
#define MAX_QUERY_RATIO 2.0 /* one-key and batched queries over the blocked filter's */
#define MIN_SBLOOM_RATIO 10.0 /* the scalable Bloom filter's one-key query over the kind's */
#define MAX_ADD_RATIO 3.0 /* amortized add over the blocked filter's one-key add */

#include "rb_peer.h" /* (after START and TARGET_FPP) */

/* A kind grown from START keys, and what was measured of it. */
typedef struct {
    const char *name; /* the kind's name: "expandable", "quotient" */
    uint32_t kind;
    amq_filter *f;     /* grown one key at a time through every power of ten */
    double t_grow;     /* s: that growth's adds */
    int np;            /* powers of ten measured */
    uint64_t at[MAX_POWERS];
    double rate[MAX_POWERS], bits[MAX_POWERS];
    double need[MAX_POWERS]; /* the cuckoo filter's bits at rate[i]; 0: not measured */
    /* at the top size, ns: adds amortized over the growth, queries */
    double add1, addb, one, bat;
    amq_filter *turn;   /* the filter a turn's queries ask (see the turns in main) */
    uint64_t top_items; /* the batched filter just after its last growth */
    double top_bits;
} subject;

/* The machine's load average (Linux), or "?" : the figures are only as
 * quiet as the machine was. */
static void print_load(const char *when)
{
    double l1, l5, l15;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL && fscanf(f, "%lf %lf %lf", &l1, &l5, &l15) == 3)
        printf("Load average %s: %.2f %.2f %.2f (1, 5, 15 minutes)\n\n", when, l1, l5, l15);
    else
        printf("Load average %s: unknown\n\n", when);
    if (f != NULL)
        fclose(f);
}

static amq_filter *make(uint32_t kind, uint64_t capacity, int redisbloom)
{
    return make_at(kind, capacity, redisbloom, TARGET_FPP);
}

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* a and b (the same keys added to the same kind, each in pages of its own) answer the first
 * million keys of the one-key query's stream alike; else the run ends. */
static void same_answers(const amq_filter *a, const amq_filter *b, const char *name, uint64_t n)
{
    uint64_t i, k;
    for (i = 0; i < 1000000; i++) {
        k = (i & 1) ? key(mix(i) % n, 1) : key(i, 3);
        if (amq_filter_contains(a, &k, sizeof k) != amq_filter_contains(b, &k, sizeof k)) {
            fprintf(stderr, BENCH_NAME ": %s grown again answers query %llu otherwise\n", name,
                    (unsigned long long)i);
            exit(1);
        }
    }
}

static void false_negative(const char *name, const char *how, uint64_t i, uint64_t n)
{
    fflush(stdout);
    fprintf(stderr, BENCH_NAME ": FALSE NEGATIVE: %s: key %llu of %llu answers absent (%s)\n",
            name, (unsigned long long)i, (unsigned long long)n, how);
    printf("\nFALSE NEGATIVE: %s: key %llu of %llu answers absent (%s)\n", name,
           (unsigned long long)i, (unsigned long long)n, how);
    exit(1);
}

/* Every one of the n added keys asked through amq_filter_contains and, with
 * all, also amq_filter_contains_batch on their hashes and
 * amq_filter_contains_batch_fixed on the packed keys.  Any that answers
 * absent ends the run. */
static void check_present(const amq_filter *f, const char *name, uint64_t n, int all)
{
    static amq_hash128 h[BATCH];
    static uint64_t keys[BATCH];
    static uint8_t out[BATCH];
    uint64_t i, j, m, k, found;
    for (i = 0; i < n; i++) {
        k = key(i, 1);
        if (amq_filter_contains(f, &k, sizeof k) != 1)
            false_negative(name, "amq_filter_contains", i, n);
    }
    for (i = 0; all && i < n; i += m) {
        m = n - i < BATCH ? n - i : BATCH;
        for (j = 0; j < m; j++) {
            keys[j] = key(i + j, 1);
            h[j] = amq_filter_hash(f, &keys[j], sizeof keys[j]);
        }
        memset(out, 0, sizeof out);
        amq_filter_contains_batch(f, h, (size_t)m, out);
        for (j = 0; j < m; j++)
            if (out[j] != 1)
                false_negative(name, "amq_filter_contains_batch", i + j, n);
        memset(out, 0, sizeof out);
        found = 0;
        amq_filter_contains_batch_fixed(f, keys, sizeof keys[0], (size_t)m, out, &found);
        for (j = 0; j < m; j++)
            if (out[j] != 1)
                false_negative(name, "amq_filter_contains_batch_fixed", i + j, n);
        if (found != m)
            false_negative(name, "amq_filter_contains_batch_fixed's count", i, n);
    }
}

/* A field of amq_filter_describe, by name (UINT64_MAX: not there). */
typedef struct {
    const char *name;
    uint64_t v;
} named_u64;

static int named_field(void *ctx, const amq_field *field)
{
    named_u64 *w = ctx;
    if (field->type == AMQ_FIELD_U64 && strcmp(field->name, w->name) == 0) {
        w->v = field->u64;
        return 1;
    }
    return 0;
}

/* A U64 field of f's kind (the run ends when the kind does not report it). */
static uint64_t field_u64(const amq_filter *f, const char *name)
{
    named_u64 w = {name, UINT64_MAX};
    amq_filter_describe(f, named_field, &w);
    if (w.v == UINT64_MAX) {
        fprintf(stderr, BENCH_NAME ": the kind reports no %s\n", name);
        exit(1);
    }
    return w.v;
}

/* A U64 field of f's kind, or UINT64_MAX when the kind does not report it. */
static uint64_t field_u64_if(const amq_filter *f, const char *name)
{
    named_u64 w = {name, UINT64_MAX};
    amq_filter_describe(f, named_field, &w);
    return w.v;
}

/* The kind's "expansions": doublings of the expandable kind, growths by
 * 10 % of the quotient kind. */
static unsigned long long expansions(const amq_filter *f)
{
    return (unsigned long long)field_u64(f, "expansions");
}

#define PROFILE_BLOCK 64 /* adds timed together between two looks at the growth */

/* Adds from key *i on, PROFILE_BLOCK at a time, until a growth is under way
 * (want 1) or none is (want 0): their seconds. */
static double adds_until(amq_filter *f, uint64_t *i, int want)
{
    double t = 0;
    while ((field_u64(f, "growing_to_slots") != 0) != want) {
        const double t0 = now_s();
        fill(f, *i, *i + PROFILE_BLOCK);
        t += now_s() - t0;
        *i += PROFILE_BLOCK;
    }
    return t;
}

/* --add-profile: where the quotient kind's add spends its time at n keys.
 * A filter started with room for n keys (no growth until its table is 95 %
 * full) takes adds in windows of load, each timed: placing a key alone.
 * After its first growth, one whole cycle (from the end of that growth to
 * the end of the next, about n to 1.1 n keys) is timed in two parts: the
 * adds with no growth under way, and those during the growth, whose time
 * over as many places is the growth's own.  Beside it, the blocked
 * filter's one-key add (sized for n, n adds, best of three) in the same run. */
static void add_profile(uint64_t n)
{
    static const double load[] = {0.50, 0.70, 0.80, 0.85, 0.90, 0.93, 0.95};
    amq_filter *f = make(AMQ_KIND_QUOTIENT, n, 0), *b;
    const uint64_t m = field_u64(f, "slots");
    uint64_t i = 0, j, to, e1, a_n, a_g;
    double t, t_n, t_g, place, own, cycle, add_b = 1e30;
    int rep;
    size_t w;
    printf("## Where the quotient kind's add goes, at %llu keys (a table of %llu slots, started "
           "with room for them; 8-byte random keys)\n\n| load of the table | ns an add |\n|---|---|\n",
           (unsigned long long)n, (unsigned long long)m);
    fill(f, 0, (uint64_t)(load[0] * (double)m));
    i = (uint64_t)(load[0] * (double)m);
    for (w = 1; w < sizeof load / sizeof load[0]; w++) {
        /* the last window stops short of the growth (the pending keys are not entries yet) */
        to = (uint64_t)(load[w] * (double)m) - (w + 1 == sizeof load / sizeof load[0] ? 1 : 0);
        t = now_s();
        fill(f, i, to);
        t = now_s() - t;
        printf("| %.2f to %.2f | %.1f |\n", load[w - 1], load[w], t * 1e9 / (double)(to - i));
        i = to;
    }
    if (field_u64(f, "growing_to_slots") != 0) {
        fprintf(stderr, BENCH_NAME ": --add-profile: a growth began before the table was full\n");
        exit(1);
    }
    adds_until(f, &i, 1); /* the first growth: the cycle begins where it ends */
    adds_until(f, &i, 0);
    j = i;
    t_n = adds_until(f, &i, 1); /* placing keys alone, loads 0.86 to 0.95 */
    a_n = i - j;
    e1 = field_u64(f, "entries"); /* about the entries the growth moves */
    t_g = adds_until(f, &i, 0);
    a_g = i - j - a_n;
    amq_filter_free(f);
    for (rep = 0; rep < 3; rep++) {
        b = make(AMQ_KIND_BLOCKED, n, 0);
        t = now_s();
        fill(b, 0, n);
        add_b = dmin(add_b, now_s() - t);
        amq_filter_free(b);
    }
    add_b = add_b * 1e9 / (double)n;
    place = t_n * 1e9 / (double)a_n;
    own = t_g * 1e9 - place * (double)a_g; /* ns: the growth's, less its adds' own places */
    cycle = (t_n + t_g) * 1e9 / (double)(a_n + a_g);
    printf("\nOne whole cycle, from the end of a growth to the end of the next: %llu adds, "
           "%.1f ns an add; %llu of them with no growth under way, %.1f ns an add (placing the "
           "key); %llu during the growth, %.1f ns an add; the growth's own time, %llu entries "
           "moved: %.2f ns an entry, %.2f entries an add of the cycle, %.1f ns an add (%.0f %%)\n",
           (unsigned long long)(a_n + a_g), cycle, (unsigned long long)a_n, place,
           (unsigned long long)a_g, t_g * 1e9 / (double)a_g, (unsigned long long)e1,
           own / (double)e1, (double)e1 / (double)(a_n + a_g), own / (double)(a_n + a_g),
           100.0 * own / (double)(a_n + a_g) / cycle);
    printf("The blocked filter's one-key add, sized for %llu keys: %.1f ns; the cycle's add is "
           "%.2fx it (issue 44: at most %.0fx)\n\n",
           (unsigned long long)n, add_b, cycle / add_b, MAX_ADD_RATIO);
}

/* ns per one-key query over q keys, half present, half absent. */
static double query_ns(const amq_filter *f, uint64_t n, uint64_t q, uint64_t *sink)
{
    uint64_t i, k, hits = 0;
    double t = now_s();
    for (i = 0; i < q; i++) {
        k = (i & 1) ? key(mix(i) % n, 1) : key(i, 3);
        hits += (uint64_t)amq_filter_contains(f, &k, sizeof k);
    }
    t = now_s() - t;
    *sink += hits;
    return t * 1e9 / (double)q;
}

/* ns per key of batched queries (keys hashed in the timed loop). */
static double batch_ns(const amq_filter *f, uint64_t n, uint64_t q, uint64_t *sink)
{
    static amq_hash128 h[BATCH];
    static uint8_t out[BATCH];
    uint64_t i, j, k, hits = 0;
    double t = now_s();
    for (i = 0; i < q; i += BATCH) {
        for (j = 0; j < BATCH; j++) {
            uint64_t x = i + j;
            k = (x & 1) ? key(mix(x) % n, 1) : key(x, 3);
            h[j] = amq_filter_hash(f, &k, sizeof k);
        }
        amq_filter_contains_batch(f, h, BATCH, out);
        for (j = 0; j < BATCH; j++)
            hits += out[j];
    }
    t = now_s() - t;
    *sink += hits;
    return t * 1e9 / (double)q;
}

/* A second filter of s's kind grown from START keys to n in batches of
 * BATCH (amq_filter_hash and amq_filter_add_batch, timed together): its
 * seconds.  With first, every key is then checked present (one key at a
 * time) and, for the quotient kind, the sawtooth's top noted: the bits per
 * key just after the last growth (the first batch whose bytes were more
 * than the batch's before; the stats are read outside the clock).  The
 * expandable kind's doubling holds both tables until it ends, which the
 * stats count: it has no such top. */
static double grow_batched(subject *s, uint64_t n, int first)
{
    static amq_hash128 h[BATCH];
    amq_filter *f = make(s->kind, START, 0);
    uint64_t i, j, m, k, last = 0;
    double t, secs = 0.0;
    amq_stats st;
    int rc;
    for (i = 0; i < n; i += m) {
        m = n - i < BATCH ? n - i : BATCH;
        t = now_s();
        for (j = 0; j < m; j++) {
            k = key(i + j, 1);
            h[j] = amq_filter_hash(f, &k, sizeof k);
        }
        rc = amq_filter_add_batch(f, h, (size_t)m, NULL);
        secs += now_s() - t;
        if (rc < 0) {
            fprintf(stderr, BENCH_NAME ": %s: batched add at %llu failed (%d)\n", s->name,
                    (unsigned long long)i, rc);
            exit(1);
        }
        if (first && s->kind == AMQ_KIND_QUOTIENT) {
            amq_filter_stats(f, &st);
            if (st.bytes > last) {
                if (last != 0) {
                    s->top_items = i + m;
                    s->top_bits = (double)st.bytes * 8.0 / (double)(i + m);
                }
                last = st.bytes;
            }
        }
    }
    if (first)
        check_present(f, s->name, n, 0);
    amq_filter_free(f);
    return secs;
}

static const char *verdict(int ok)
{
    return ok ? "PASS" : "FAIL";
}

/* The verdicts of issue 44 for s.  one_b, bat_b, add_b, one_s: the blocked
 * filter's and the scalable Bloom filter's ns at n (speed: 0 when not
 * measured); one_r: RedisBloom's own chain's (0: not run); taffy_*: the
 * peer's (taffy_bits 0: not run). */
static void print_verdicts(const subject *s, uint64_t n, double one_b, double bat_b, double add_b,
                           double one_s, double one_r, double taffy_one, double taffy_bits,
                           double taffy_rate)
{
    int i, pass = 0, fail = 0;
    printf("### Verdicts, the %s kind (issue 44)\n\n", s->name);
    printf("PASS  no false negative: every added key answered present at every power of ten "
           "(one key, batched hashes, packed keys%s)\n",
           one_b > 0 ? "; and every key of the filter grown in batches, one key at a time" : "");
    pass++;
    for (i = 0; i < s->np; i++) {
        const int ok = s->rate[i] <= TARGET_FPP;
        printf("%s  fpp at %llu keys: %.3f %% (%.2fx the 1 %% target, <= 1x)\n", verdict(ok),
               (unsigned long long)s->at[i], s->rate[i] * 100.0, s->rate[i] / TARGET_FPP);
        if (ok)
            pass++;
        else
            fail++;
    }
    for (i = 0; i < s->np; i++) {
        int ok;
        if (s->at[i] < 10000)
            continue;
        if (s->need[i] <= 0) {
            printf("SKIP  bits/key at %llu keys: %.2f (no cuckoo filter built: --speed or "
                   "--grow-only)\n", (unsigned long long)s->at[i], s->bits[i]);
            continue;
        }
        ok = s->bits[i] <= MAX_BITS_RATIO * s->need[i];
        printf("%s  bits/key at %llu keys: %.2f / %.2f (cuckoo sized in advance at the same "
               "measured rate) = %.2fx (<= %.1fx)\n",
               verdict(ok), (unsigned long long)s->at[i], s->bits[i], s->need[i],
               s->bits[i] / s->need[i], MAX_BITS_RATIO);
        if (ok)
            pass++;
        else
            fail++;
    }
    if (s->np > 0 && s->need[s->np - 1] > 0) {
        /* what the bits above leave out: the memory a pocket filter keeps for its next spare
         * rebuild and growth (amq_stats' bytes are its tables, as a file holds them) */
        const uint64_t kept = field_u64_if(s->f, "scratch_bytes");
        const double at = (double)s->at[s->np - 1];
        if (kept != UINT64_MAX)
            printf("(info) kept beside the tables at %llu keys (scratch_bytes: a spare's rebuild "
                   "list, a growth's lists): %.2f MB, %.2f bits/key; with them %.2f / %.2f = "
                   "%.3fx\n",
                   (unsigned long long)s->at[s->np - 1], (double)kept / 1e6,
                   (double)kept * 8.0 / at, s->bits[s->np - 1] + (double)kept * 8.0 / at,
                   s->need[s->np - 1],
                   (s->bits[s->np - 1] + (double)kept * 8.0 / at) / s->need[s->np - 1]);
    }
    if (one_b > 0) {
        const double r1 = s->one / one_b, rb = s->bat / bat_b, rs = one_s / s->one,
                     ra = s->add1 / add_b, rab = s->addb / add_b;
        printf("%s  one-key query at %llu keys: %.1f / %.1f ns (blocked one-key) = %.2fx "
               "(<= %.0fx)\n",
               verdict(r1 <= MAX_QUERY_RATIO), (unsigned long long)n, s->one, one_b, r1,
               MAX_QUERY_RATIO);
        printf("%s  batched query at %llu keys: %.1f / %.1f ns (blocked batched) = %.2fx "
               "(<= %.0fx)\n",
               verdict(rb <= MAX_QUERY_RATIO), (unsigned long long)n, s->bat, bat_b, rb,
               MAX_QUERY_RATIO);
        printf("%s  scalable Bloom (RedisBloom layout, grown from 1,000) one-key query / %s's at "
               "%llu keys: %.1f / %.1f ns = %.1fx (>= %.0fx)\n",
               verdict(rs >= MIN_SBLOOM_RATIO), s->name, (unsigned long long)n, one_s, s->one,
               rs, MIN_SBLOOM_RATIO);
        if (one_r > 0) {
            const double rr = one_r / s->one;
            printf("%s  scalable Bloom, RedisBloom's own code (the oracle's SBChain_Check), grown "
                   "from 1,000, one-key query / %s's at %llu keys: %.1f / %.1f ns = %.1fx "
                   "(>= %.0fx)\n",
                   verdict(rr >= MIN_SBLOOM_RATIO), s->name, (unsigned long long)n, one_r, s->one,
                   rr, MIN_SBLOOM_RATIO);
            pass += rr >= MIN_SBLOOM_RATIO;
            fail += rr < MIN_SBLOOM_RATIO;
        }
        printf("%s  amortized add, one key at a time, grown to %llu keys: %.1f / %.1f ns "
               "(blocked one-key add) = %.2fx (<= %.0fx)\n",
               verdict(ra <= MAX_ADD_RATIO), (unsigned long long)n, s->add1, add_b, ra,
               MAX_ADD_RATIO);
        printf("%s  amortized add, batched, grown to %llu keys: %.1f / %.1f ns (blocked one-key "
               "add) = %.2fx (<= %.0fx)\n",
               verdict(rab <= MAX_ADD_RATIO), (unsigned long long)n, s->addb, add_b, rab,
               MAX_ADD_RATIO);
        pass += (r1 <= MAX_QUERY_RATIO) + (rb <= MAX_QUERY_RATIO) + (rs >= MIN_SBLOOM_RATIO) +
                (ra <= MAX_ADD_RATIO) + (rab <= MAX_ADD_RATIO);
        fail += (r1 > MAX_QUERY_RATIO) + (rb > MAX_QUERY_RATIO) + (rs < MIN_SBLOOM_RATIO) +
                (ra > MAX_ADD_RATIO) + (rab > MAX_ADD_RATIO);
        if (s->top_items > 0 && s->np > 0 && s->need[s->np - 1] > 0)
            printf("(info) the sawtooth's top: just after its last growth, at %llu keys, %.2f bits "
                   "per key, %.2fx the cuckoo filter's at the rate measured at %llu keys\n",
                   (unsigned long long)s->top_items, s->top_bits,
                   s->top_bits / s->need[s->np - 1], (unsigned long long)n);
    } else
        printf("SKIP  queries and adds at %llu keys: not timed (--grow-only)\n",
               (unsigned long long)n);
    if (taffy_bits > 0) {
        printf("PASS  side by side with a real peer: taffy cuckoo (jbapple/libfilter) in this "
               "process at %llu keys: one-key query %.1f ns (%s / taffy %.2fx), %.2f bits/key at "
               "fpp %.3f %% (%s: %.2f at %.3f %%)\n",
               (unsigned long long)n, taffy_one, s->name, s->one / taffy_one, taffy_bits,
               taffy_rate * 100.0, s->name, s->np > 0 ? s->bits[s->np - 1] : 0.0,
               s->np > 0 ? s->rate[s->np - 1] * 100.0 : 0.0);
        pass++;
    } else
#ifdef HAVE_TAFFY
        printf("SKIP  side by side with a real peer: taffy not run (--speed or --grow-only)\n");
#else
        printf("SKIP  side by side with a real peer: taffy not built (libfilter's sources not "
               "found: make bench-expandable LIBFILTER=path)\n");
#endif
    printf("\n%s: %d PASS, %d FAIL\n\n", s->name, pass, fail);
}

int main(int argc, char **argv)
{
    uint64_t max = 10000000, absent = 10000000, q = 4000000, n, p, sink = 0;
    amq_filter *b = NULL, *sb = NULL, *b2 = NULL;
    subject subj[3], *s;
    const char *which = "both", *csv_path = NULL;
    FILE *csv = NULL;
    double t, t0 = now_s(), t_grown = 0, t_timed = 0, worst, one_b = 0, bat_b = 0, add_b = 0, one_s = 0;
    double one_b2 = 0, bat_b2 = 0; /* the blocked filter at twice its bytes */
    double taffy_one = 0, taffy_bits = 0, taffy_rate = 0;
    double one_r = 0; /* RedisBloom's own chain's one-key query (0: not run) */
    const char *rb_path = NULL;
    rb_peer rbp = {0};
    int i, ns = 0, grow_only = 0, speed = 0, profile = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
            max = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--absent") == 0 && i + 1 < argc)
            absent = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
            q = (uint64_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
            which = argv[++i];
        else if (strcmp(argv[i], "--grow-only") == 0)
            grow_only = 1;
        else if (strcmp(argv[i], "--speed") == 0) /* the timings at N only: no cuckoo, no peer */
            speed = 1;
        else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--add-profile") == 0) /* the quotient kind's add, taken apart */
            profile = 1;
        else if (strcmp(argv[i], "--redisbloom") == 0 && i + 1 < argc)
            rb_path = argv[++i];
        else {
            fprintf(stderr, "usage: expandable-bench [--kind expandable|quotient|pocket|both|all] [--max N]"
                            " [--absent A] [--queries Q] [--grow-only | --speed] [--csv FILE]\n"
                            "                        [--redisbloom MODULE]\n"
                            "       expandable-bench --add-profile [--max N]\n");
            return 2;
        }
    }
    if (max < START || absent == 0 || q < BATCH) {
        fprintf(stderr, BENCH_NAME ": --max is at least %d, --absent at least 1, --queries at "
                                   "least %d\n", START, BATCH);
        return 2;
    }
    if (profile && strcmp(which, "expandable") == 0) {
        fprintf(stderr, BENCH_NAME ": --add-profile takes the quotient kind's add apart (the "
                                   "expandable kind's doubling has no such cycle)\n");
        return 2;
    }
    if (profile) {
        print_load("at the start");
        add_profile(max);
        print_load("at the end");
        return 0;
    }
    memset(subj, 0, sizeof subj);
    if (strcmp(which, "expandable") == 0 || strcmp(which, "both") == 0 ||
        strcmp(which, "all") == 0) {
        subj[ns].name = "expandable";
        subj[ns++].kind = AMQ_KIND_EXPANDABLE;
    }
    if (strcmp(which, "quotient") == 0 || strcmp(which, "both") == 0 ||
        strcmp(which, "all") == 0) {
        subj[ns].name = "quotient";
        subj[ns++].kind = AMQ_KIND_QUOTIENT;
    }
    if (strcmp(which, "pocket") == 0 || strcmp(which, "all") == 0) {
        subj[ns].name = "pocket";
        subj[ns++].kind = AMQ_KIND_POCKET;
    }
    if (ns == 0) {
        fprintf(stderr,
                BENCH_NAME ": --kind is expandable, quotient, pocket, both (the first two) or all, "
                           "not %s\n",
                which);
        return 2;
    }
    if (csv_path != NULL) {
        csv = fopen(csv_path, "w");
        if (csv == NULL) {
            perror(csv_path);
            return 2;
        }
        fprintf(csv, "kind,keys,expansions,fpp,bits_per_key,absent,cuckoo_bits_at_rate\n");
    }
    print_load("at the start");
    printf("## Grown from 1,000 keys (8-byte random keys, 1 %% target, %llu absent keys; every "
           "added key checked present at every power of ten)\n\n",
           (unsigned long long)absent);
    if (grow_only || speed) /* no cuckoo filter is built: no columns for it */
        printf("| keys | filter | expansions | measured fpp | bits/key |\n|---|---|---|---|---|\n");
    else
        printf("| keys | filter | expansions | measured fpp | bits/key | cuckoo sized for 1 %%: fpp |"
               " bits/key | cuckoo sized for the measured fpp r / 2r: fpp | bits/key |"
               " cuckoo at r: bits/key | ratio |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (s = subj; s < subj + ns; s++)
        s->f = make(s->kind, START, 0);
    for (n = 0, p = START; p <= max && subj[0].np < MAX_POWERS; p *= 10) {
        double r1 = 0, b1 = 0;
        for (s = subj; s < subj + ns; s++) { /* the kinds grow in the same turns */
            t = now_s();
            fill(s->f, n, p);
            s->t_grow += now_s() - t;
        }
        n = p;
        if (n >= 10000 && !grow_only && !speed)
            cuckoo_at(n, absent, TARGET_FPP, &r1, &b1);
        for (s = subj; s < subj + ns; s++) {
            const int k = s->np++;
            check_present(s->f, s->name, n, 1);
            s->at[k] = n;
            s->rate[k] = rate(s->f, absent);
            s->bits[k] = bits_per_key(s->f, n);
            printf("| %llu | %s | %llu | %.3f %% | %.2f |", (unsigned long long)n, s->name,
                   expansions(s->f), s->rate[k] * 100.0, s->bits[k]);
            if (n >= 10000 && !grow_only && !speed) {
                double ra, ba, rb, bb;
                s->need[k] = cuckoo_need(n, absent, s->rate[k], &ra, &ba, &rb, &bb);
                printf(" %.3f %% | %.2f | %.3f %% / %.3f %% | %.2f / %.2f | %.2f | %.2fx |\n",
                       r1 * 100.0, b1, ra * 100.0, rb * 100.0, ba, bb, s->need[k],
                       s->bits[k] / s->need[k]);
            } else if (grow_only || speed)
                printf("\n");
            else
                printf(" | | | | | |\n");
            fflush(stdout);
            if (csv != NULL) {
                fprintf(csv, "%s,%llu,%llu,%.9f,%.4f,%llu,", s->name, (unsigned long long)n,
                        expansions(s->f), s->rate[k], s->bits[k], (unsigned long long)absent);
                if (s->need[k] > 0)
                    fprintf(csv, "%.4f", s->need[k]);
                fprintf(csv, "\n");
                fflush(csv);
            }
        }
    }
    printf("\n");
    t_grown = now_s();
    for (s = subj; s < subj + ns; s++) {
        for (i = 0, worst = 0.0; i < s->np; i++)
            worst = s->rate[i] > worst ? s->rate[i] : worst;
        printf("Highest measured fpp, %s: %.3f %% (target 1 %%)\n", s->name, worst * 100.0);
    }
    if (grow_only) {
        for (s = subj; s < subj + ns; s++)
            printf("Amortized add while growing, %s: %.1f ns\n", s->name,
                   s->t_grow * 1e9 / (double)n);
        printf("\n");
    } else {
        /* the machine may be shared: each figure is the best of 3 reps, the
         * subjects taking turns within a rep, so that a busy second hurts all;
         * and each rep's filters are in pages of their own (grown again), as a
         * table's pages alone move its time on this VM */
        int rep;
        for (s = subj; s < subj + ns; s++) {
            s->add1 = s->t_grow;
            s->addb = s->one = s->bat = 1e30;
        }
        add_b = one_b = bat_b = one_s = one_b2 = bat_b2 = 1e30;
        sb = make(AMQ_KIND_SCALABLE_BLOOM, START, 1);
        fill(sb, 0, n);
        if (rb_path != NULL && !speed)
            rb_grow(&rbp, rb_path, sb, n, absent);
        /* the blocked filter again with twice its bytes, about the quotient kind's: does a
         * query's time follow the table's size (TLB, page walks) or the query's work? */
        b2 = make(AMQ_KIND_BLOCKED, 2 * n, 0);
        fill(b2, 0, n);
        for (rep = 0; rep < 3; rep++) {
            amq_filter_free(b);
            b = make(AMQ_KIND_BLOCKED, n, 0);
            t = now_s();
            fill(b, 0, n);
            add_b = dmin(add_b, now_s() - t);
            for (s = subj; s < subj + ns; s++) {
                s->turn = s->f;
                if (rep < 2) { /* the growth again, beside the blocked filter's adds */
                    amq_filter *e2 = make(s->kind, START, 0);
                    t = now_s();
                    fill(e2, 0, n);
                    s->add1 = dmin(s->add1, now_s() - t);
                    same_answers(e2, s->f, s->name, n);
                    s->turn = e2;
                }
                if (rep < 2) /* and in batches (not beside its own growth: two turns) */
                    s->addb = dmin(s->addb, grow_batched(s, n, rep == 0));
            }
            /* each turn's queries ask a filter of its own, as the blocked filter's do (the
             * same bytes in other pages: on this VM a table's pages alone move its queries'
             * time by a fifth, so one filter for all three turns against three would hand
             * the blocked filter the luckier pages) */
            for (s = subj; s < subj + ns; s++)
                s->one = dmin(s->one, query_ns(s->turn, n, q, &sink));
            one_b = dmin(one_b, query_ns(b, n, q, &sink));
            one_b2 = dmin(one_b2, query_ns(b2, n, q, &sink));
            for (s = subj; s < subj + ns; s++)
                s->bat = dmin(s->bat, batch_ns(s->turn, n, q, &sink));
            bat_b = dmin(bat_b, batch_ns(b, n, q, &sink));
            bat_b2 = dmin(bat_b2, batch_ns(b2, n, q, &sink));
            if (rep < 2) { /* the scalable Bloom filter in pages of its own each turn too */
                amq_filter *sb2 = make(AMQ_KIND_SCALABLE_BLOOM, START, 1);
                fill(sb2, 0, n);
                same_answers(sb2, sb, "scalable Bloom", n);
                one_s = dmin(one_s, query_ns(sb2, n, q / 4, &sink));
                amq_filter_free(sb2);
            } else
                one_s = dmin(one_s, query_ns(sb, n, q / 4, &sink));
            if (rbp.dl != NULL) /* (one chain: its growth takes minutes at 1e8) */
                one_r = one_r > 0 ? dmin(one_r, rb_query_ns(&rbp, n, q / 4, &sink))
                                  : rb_query_ns(&rbp, n, q / 4, &sink);
            for (s = subj; s < subj + ns; s++) {
                if (s->turn != s->f)
                    amq_filter_free(s->turn);
                s->turn = NULL;
            }
        }
        add_b *= 1e9 / (double)n;
        printf("\n## At %llu keys: ns per operation (best of 3)\n\n| filter | add (amortized) |"
               " add, batched (amortized) | query, one key | query, batched | bits/key |\n"
               "|---|---|---|---|---|---|\n",
               (unsigned long long)n);
        for (s = subj; s < subj + ns; s++) {
            s->add1 *= 1e9 / (double)n;
            s->addb *= 1e9 / (double)n;
            printf("| %s, grown from 1,000 | %.1f | %.1f | %.1f | %.1f | %.2f |\n", s->name,
                   s->add1, s->addb, s->one, s->bat, bits_per_key(s->f, n));
        }
        printf("| blocked, sized in advance | %.1f | | %.1f | %.1f | %.2f |\n", add_b, one_b, bat_b,
               bits_per_key(b, n));
        printf("| blocked, sized for %llu keys (twice the bytes), %llu in it | | | %.1f | %.1f |"
               " %.2f |\n",
               (unsigned long long)(2 * n), (unsigned long long)n, one_b2, bat_b2,
               bits_per_key(b2, n));
        printf("| scalable Bloom, RedisBloom layout, grown from 1,000 | | | %.1f | | %.2f |\n",
               one_s, bits_per_key(sb, n));
        if (one_r > 0)
            printf("| peer: RedisBloom's own scalable Bloom (the oracle's code), grown from 1,000 |"
                   " %.1f | | %.1f | | (as above) |\n",
                   rbp.add_ns, one_r);
        printf("\nThe blocked filter at twice its bytes: one-key query %.2fx, batched %.2fx its"
               " time at its own size (the table's size alone)\n\n",
               one_b2 / one_b, bat_b2 / bat_b);
        for (s = subj; s < subj + ns; s++)
            printf("Ratios, %s: one-key query %.2fx blocked (target <= 2), batched %.2fx blocked"
                   " batched (<= 2), scalable Bloom / %s one-key %.1fx (>= 10), amortized add"
                   " %.2fx blocked add (<= 3), batched %.2fx\n",
                   s->name, s->one / one_b, s->bat / bat_b, s->name, one_s / s->one,
                   s->add1 / add_b, s->addb / add_b);
        printf("\n");
    }
    t_timed = now_s();
    if (!grow_only) {
        printf("| filter | add | query, one key | | bits/key |\n|---|---|---|---|---|\n");
#ifdef HAVE_TAFFY
        if (speed) {
            printf("| peer: taffy cuckoo | not run (--speed) | | | |\n");
        } else {
            void *tf = taffy_new(4096);
            uint64_t j, k, hits = 0, fp = 0;
            double ta, tq;
            ta = now_s();
            for (j = 0; j < n; j++) {
                k = key(j, 1);
                taffy_add(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
            }
            ta = now_s() - ta;
            tq = now_s();
            for (j = 0; j < q; j++) {
                k = (j & 1) ? key(mix(j) % n, 1) : key(j, 3);
                hits += (uint64_t)taffy_find(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
            }
            tq = now_s() - tq;
            for (j = 0; j < absent; j++) {
                k = key(j, 2);
                fp += (uint64_t)taffy_find(tf, amq_hash_key(AMQ_HASH_XXH3, 0, &k, sizeof k).h1);
            }
            sink += hits;
            taffy_one = tq * 1e9 / (double)q;
            taffy_bits = (double)taffy_bytes(tf) * 8.0 / (double)n;
            taffy_rate = (double)fp / (double)absent;
            printf("| peer: taffy cuckoo (jbapple/libfilter), grown from 4 KiB | %.1f | %.1f | |"
                   " %.2f (fpp %.3f %%) |\n",
                   ta * 1e9 / (double)n, taffy_one, taffy_bits, 100.0 * taffy_rate);
            taffy_free(tf);
        }
#else
        printf("| peer: taffy cuckoo | not built (make bench-expandable LIBFILTER=path) | | | |\n");
#endif
        printf("\n");
    }
    for (s = subj; s < subj + ns; s++)
        print_verdicts(s, n, grow_only ? 0 : one_b, bat_b, add_b, one_s, one_r, taffy_one,
                       taffy_bits, taffy_rate);
    t = now_s();
    printf("Run time: %.0f s (growth, checks, rates and cuckoo filters %.0f s; timed turns %.0f s;"
           " the peer %.0f s)\n",
           t - t0, t_grown - t0, t_timed - t_grown, t - t_timed);
    print_load("at the end");
    fflush(stdout); /* (the sink on stderr after the report, not inside it, in a log of both) */
    fprintf(stderr, "(%llu)\n", (unsigned long long)sink);
    for (s = subj; s < subj + ns; s++)
        amq_filter_free(s->f);
    amq_filter_free(b);
    amq_filter_free(b2);
    amq_filter_free(sb);
    rb_close(&rbp);
    if (csv != NULL) {
        const int bad = ferror(csv);
        if (fclose(csv) != 0 || bad) {
            fprintf(stderr, BENCH_NAME ": could not write %s\n", csv_path);
            return 1;
        }
    }
    return 0;
}
