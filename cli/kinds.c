/*
 * kinds.c - what the tool needs to know of particular kinds beyond the
 * generic handle: whether a kind grows, whether a filter is saturated,
 * whether a filter can take adds from several threads (the blocked Bloom
 * and partitioned kinds, once switched to their concurrent mode; the
 * others answer AMQ_EUNSUPPORTED).
 */
#include "cli.h"

int cli_kind_scales(uint32_t kind)
{
    /* an aging filter counts every add ever made, but holds only its window */
    return kind == AMQ_KIND_SCALABLE_BLOOM || kind == AMQ_KIND_SCALABLE_CUCKOO ||
           kind == AMQ_KIND_AGING;
}

int cli_warn_saturated(const char *path, const amq_filter *f)
{
    amq_stats st;
    amq_filter_stats(f, &st);
    if (cli_kind_scales(st.kind) || st.capacity == 0 || st.items <= st.capacity)
        return 0;
    cli_warn("%s holds %llu items, over its capacity of %llu: false-positive rate %.3g "
             "(created for %.3g)%s",
             path, (unsigned long long)st.items, (unsigned long long)st.capacity, st.fpp_now,
             st.fpp_target,
             st.fpp_now >= 0.5 ? "; most keys never added answer 'maybe present'" : "");
    return 1;
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
