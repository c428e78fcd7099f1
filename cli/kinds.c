/*
 * kinds.c - what the tool needs to know of particular kinds beyond the
 * generic handle: whether a kind grows, whether a filter is saturated,
 * whether a filter can take adds from several threads (the blocked Bloom
 * and partitioned kinds, once switched to their concurrent mode; the
 * others answer AMQ_EUNSUPPORTED).
 */
#define AMQ_ADVANCED_API 1 /* item counts that read no bit array (query --trust) */
#include <math.h>
#include <string.h>

#include "amq/advanced.h"
#include "cli.h"

/* ---- the kinds a user can name ------------------------------------------------------------ */

/* Kind ids are small, stored in files and never reused: asking the library's
 * table for the name of each id up to 255 lists exactly the kinds built in,
 * in id order, with no second list here to fall behind it. */
#define KIND_ID_MAX 255u

size_t cli_kind_names(const char **out, size_t cap, int creatable)
{
    uint32_t id;
    size_t n = 0;
    for (id = 1; id <= KIND_ID_MAX; id++) {
        const char *name = amq_kind_name(id);
        if (name == NULL || (creatable && amq_kind_is_static(id)))
            continue;
        if (n < cap)
            out[n] = name;
        n++;
    }
    return n;
}

size_t cli_kind_names_if(const char **out, size_t cap, int (*pred)(uint32_t kind))
{
    uint32_t id;
    size_t n = 0;
    for (id = 1; id <= KIND_ID_MAX; id++) {
        const char *name = amq_kind_name(id);
        if (name == NULL || !pred(id))
            continue;
        if (n < cap)
            out[n] = name;
        n++;
    }
    return n;
}

/* The kinds that grow from a start of their own, not from a size given in
 * advance (amq/filter.h: amq_config_init starts them at 4,096 keys).  Ids,
 * not names: a kind's name may change, its id is pinned. */
int cli_kind_unsized(uint32_t kind)
{
    return kind == AMQ_KIND_EXPANDABLE || kind == AMQ_KIND_QUOTIENT || kind == AMQ_KIND_POCKET;
}

const char *cli_a(const char *word)
{
    return word != NULL && word[0] != '\0' && strchr("aeiou", word[0]) != NULL ? "an" : "a";
}

void cli_help_names(FILE *out, const char *lead, const char *const *names, size_t n,
                    const char *dflt, const char *tail)
{
    size_t i, indent = strlen(lead), col = indent;
    char item[96];

    fputs(lead, out);
    for (i = 0; i < n; i++) {
        size_t len;
        snprintf(item, sizeof item, "%s%s%s", names[i],
                 dflt != NULL && strcmp(names[i], dflt) == 0 ? " (default)" : "",
                 i + 1 < n ? "," : tail != NULL ? tail : "");
        len = strlen(item);
        if (i > 0 && col + 1 + len > 79) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else if (i > 0) {
            fputc(' ', out);
            col++;
        }
        fputs(item, out);
        col += len;
    }
    fputc('\n', out);
}

/* Hash ids are small and never reused, as kind ids: the library's names of
 * ids 1 to 255 are every filter hash, each marked with the kinds whose
 * default it is (amq_config_init), the most kinds' default as "default". */
void cli_help_hashes(FILE *out, const char *lead)
{
    static char items[64][96];
    const char *names[64];
    uint32_t id, kind, common = cli_default_hash(AMQ_KIND_BLOOM);
    size_t n = 0;

    for (id = 1; id <= 255 && n < 64; id++) {
        const char *name = amq_hash_algo_name(id);
        size_t used, kinds = 0;
        if (name == NULL)
            continue;
        used = (size_t)snprintf(items[n], sizeof items[n], "%s", name);
        if (id == common) {
            snprintf(items[n] + used, sizeof items[n] - used, " (default)");
        } else {
            for (kind = 1; kind <= KIND_ID_MAX && used < sizeof items[n]; kind++)
                if (amq_kind_name(kind) != NULL && cli_default_hash(kind) == id)
                    used += (size_t)snprintf(items[n] + used, sizeof items[n] - used, "%s%s",
                                             kinds++ > 0 ? ", " : " (", amq_kind_name(kind));
            if (kinds > 0 && used < sizeof items[n])
                snprintf(items[n] + used, sizeof items[n] - used, "'s default)");
        }
        names[n] = items[n];
        n++;
    }
    cli_help_names(out, lead, names, n, NULL, NULL);
}

void cli_help_kinds(FILE *out, const char *lead, int creatable, const char *tail)
{
    const char *names[KIND_ID_MAX];
    size_t n = cli_kind_names(names, KIND_ID_MAX, creatable);
    cli_help_names(out, lead, names, n < KIND_ID_MAX ? n : KIND_ID_MAX, "bloom", tail);
}

int cli_over_capacity(amq_filter *f, amq_stats *st)
{
    amq_stats own;
    uint64_t items, capacity;
    /* The counts first: the rates count bits over the whole array, which
     * query --trust must not read. */
    amq_filter_counts(f, &items, &capacity);
    if (!amq_kind_has_capacity(amq_filter_kind(f)) || capacity == 0 || items <= capacity)
        return 0;
    if (st == NULL)
        st = &own;
    amq_filter_stats(f, st);
    return st->fpp_now > st->fpp_target;
}

int cli_warn_saturated(const char *path, amq_filter *f)
{
    amq_stats st;
    if (!cli_over_capacity(f, &st))
        return 0;
    cli_warn("%s holds %llu items, over its capacity of %llu: false-positive rate %.3g "
             "(created for %.3g)%s",
             path, (unsigned long long)st.items, (unsigned long long)st.capacity, st.fpp_now,
             st.fpp_target,
             st.fpp_now >= 0.5 ? "; most keys never added answer 'maybe present'" : "");
    return 1;
}

int cli_check_fpp_met(const char *cmd, const amq_config *cfg, int takes_bits)
{
    amq_config probe = *cfg;
    amq_filter *f = NULL;
    amq_errinfo err;
    amq_stats st;
    double step, least;

    if (cfg->kind != AMQ_KIND_SCALABLE_CUCKOO)
        return 0;
    /* A link's rate is its fingerprints' and buckets', whatever its size: a small probe tells it. */
    probe.capacity = 1024;
    memset(&err, 0, sizeof err);
    if (amq_filter_new(&probe, &f, &err) != AMQ_OK)
        return 0; /* the real creation reports what is wrong */
    amq_filter_stats(f, &st);
    amq_filter_free(f);
    if (st.fpp_target <= cfg->fpp)
        return 0;
    /* The least rate it meets, rounded up to 3 digits: the one to ask for instead. */
    step = pow(10.0, floor(log10(st.fpp_target)) - 2.0);
    least = ceil(st.fpp_target / step) * step;
    if (takes_bits)
        cli_error("%s: a scalable-cuckoo filter of these fingerprints answers %.3g of absent "
                  "keys a link, over --fpp %g: give it more --fingerprint-bits (4 to 32; "
                  "RedisBloom's layout has 8)",
                  cmd, st.fpp_target, cfg->fpp);
    else if (cfg->redisbloom)
        cli_error("%s: a scalable-cuckoo filter in RedisBloom's layout (8-bit fingerprints) "
                  "answers %.3g of absent keys a link, over --fpp %g: ask for --fpp %.3g or "
                  "more, or drop --redisbloom",
                  cmd, st.fpp_target, cfg->fpp, least);
    else
        cli_error("%s: a scalable-cuckoo filter of the default fingerprints (16 bits) answers "
                  "%.3g of absent keys a link, over --fpp %g: ask for --fpp %.3g or more, or "
                  "make it with 'amq create --fingerprint-bits F' and fill it with 'amq add'",
                  cmd, st.fpp_target, cfg->fpp, least);
    return -1;
}

int cli_filter_concurrent_adds(amq_filter *f)
{
    return amq_filter_set_concurrent(f, 1) == AMQ_OK;
}

int cli_refuse_static(const amq_filter *f, const char *path, const char *what)
{
    const char *name = amq_kind_name(amq_filter_kind(f));
    if (!amq_kind_is_static(amq_filter_kind(f)))
        return 0;
    cli_error("%s: a %s filter is static: it holds exactly the keys it was built from and "
              "cannot %s keys; rebuild it from all the keys with 'amq build --type %s'; "
              "the file is left unchanged", path, name, what, name);
    return 1;
}
