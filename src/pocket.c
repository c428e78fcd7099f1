/*
 * pocket.c - the pocket kind's life, the same on every instruction set: a
 * filter made, freed, counted, copied and checked (pocket_internal.h says
 * what its parts are).  Its segments' memory, spare and growth are
 * pocket_core.h's; the bins' add, query and rewrite pocket_impl.h's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cpu.h"
#include "common/xxh3_8.h"
#include "pocket_core.h"

#define B PK_BUCKETS

amq_pk *amq_pk_shell(const amq_allocator *alloc)
{
    amq_allocator a;
    amq_pk *x;
    amq_alloc_init(&a, alloc);
    if ((x = amq_calloc(&a, sizeof *x)) == NULL)
        return NULL;
    x->alloc = a;
    x->isa = &amq_pk_isa_base;
#if defined(__x86_64__)
    if (amq_cpu_has(AMQ_CPU_AVX512_CORE | AMQ_CPU_AVX512VBMI2 | AMQ_CPU_AVX512CD | AMQ_CPU_BMI2))
        x->isa = &amq_pk_isa_avx512;
#endif
    x->eb = PK_ENTRY_BITS;
    x->unit = ldexp(1.0, -(int)PK_ENTRY_BITS);
    return x;
}

void amq_pk_set_hash(amq_pk *x, uint32_t algo, uint64_t seed)
{
    x->hash_algo = algo;
    x->seed = seed;
    x->x8 = amq_xxh3_8_mask(seed);
}

void amq_pk_set_bins(pk_seg *s, uint64_t nb)
{
    pk_set_bins(s, nb);
}

void amq_pk_free_segments(amq_pk *x)
{
    pk_free_segments(x);
}

void amq_pk_free(amq_pk *x)
{
    if (x == NULL)
        return;
    pk_free_segments(x);
    amq_free(&x->alloc, x->scr, (size_t)x->scr_cap * sizeof *x->scr);
    if (x->gscr != NULL)
        (void)munmap(x->gscr, x->gscr_len);
    amq_free(&x->alloc, x, sizeof *x);
}

uint64_t amq_pk_seg_bytes(const pk_seg *s)
{
    return s->nb * sizeof(pk_bin) + s->splen * 4u + s->ndeep * 16u;
}

void amq_pk_count(pk_seg *s)
{
    pk_count(s);
}

double amq_pk_rate(const amq_pk *x)
{
    return pk_rate(x);
}

int amq_pk_init(amq_pk *x, uint64_t start)
{
    pk_seg *s;
    x->start = start;
    x->b0 = (double)start / (PK_LOAD * PK_SLOTS);
    x->d = 0;
    if ((x->seg = s = amq_calloc(&x->alloc, sizeof *s)) == NULL)
        return AMQ_ENOMEM;
    pk_set_bins(s, grid(x, 0, 0));
    if (amq_region_alloc(&s->region, &x->alloc, (size_t)s->nb * sizeof(pk_bin)) != AMQ_OK) {
        amq_pk_free_segments(x);
        return AMQ_ENOMEM;
    }
    s->b = (pk_bin *)(void *)s->region.data;
    pk_count(s);
    return AMQ_OK;
}

/* ---- counts, copies and checks ------------------------------------------------------------ */

void amq_pk_lengths(const amq_pk *x, uint64_t cnt[16], double share[16])
{
    uint32_t i, l;
    memset(cnt, 0, 16 * sizeof *cnt);
    memset(share, 0, 16 * sizeof *share);
    for (i = 0; i < 1u << x->d; i++) {
        const pk_seg *s = &x->seg[i];
        uint64_t b, q, c[16] = {0};
        for (b = 0; b < s->nb; b++) {
            const uint32_t n = (uint32_t)__builtin_popcountll(s->b[b].map & PK_MAP_MASK);
            uint32_t e;
            for (e = 0; e < n; e++)
                c[31u - (uint32_t)__builtin_clz((uint32_t)s->b[b].e[e] | 1u)]++;
        }
        for (q = 0; q < s->splen; q++)
            if (s->sp[q] != 0)
                c[31u - (uint32_t)__builtin_clz(s->sp[q] & 0xffffu)]++;
        for (l = 0; l < 16; l++) { /* (amq_pk_count says why) */
            cnt[l] += c[l];
            share[l] += (double)c[l] * ldexp(pk_share(l), -(int)(s->k + x->d));
        }
    }
}


int amq_pk_seg_copy(const amq_pk *x, const pk_seg *s, pk_seg *d)
{
    amq_allocator *a = (amq_allocator *)&x->alloc;
    memset(d, 0, sizeof *d);
    amq_pk_set_bins(d, s->nb);
    d->epoch = s->epoch;
    if (amq_region_copy(&d->region, a, s->b, (size_t)s->nb * sizeof(pk_bin)) != AMQ_OK)
        return AMQ_ENOMEM;
    d->b = (pk_bin *)(void *)d->region.data;
    if (s->splen > 0) {
        if ((d->sp = amq_malloc(a, (size_t)s->splen * 4u)) == NULL)
            goto nomem;
        memcpy(d->sp, s->sp, (size_t)s->splen * 4u);
        d->spcap = s->spcap;
        d->splen = s->splen;
        d->spn = s->spn;
        d->spd = s->spd;
    }
    if (s->ndeep > 0) {
        if ((d->deep = amq_malloc(a, (size_t)s->ndeep * sizeof *d->deep)) == NULL)
            goto nomem;
        memcpy(d->deep, s->deep, (size_t)s->ndeep * sizeof *d->deep);
        d->ndeep = d->deepcap = s->ndeep;
        d->deep_width = s->deep_width;
    }
    amq_pk_count(d);
    return AMQ_OK;
nomem:
    amq_region_free(&d->region, a);
    if (d->sp != NULL)
        amq_free(a, d->sp, (size_t)d->splen * 4u);
    memset(d, 0, sizeof *d);
    return AMQ_ENOMEM;
}

const char *amq_pk_seg_check(const amq_pk *x, const pk_seg *s)
{
    uint64_t b, q, prev_g = 0, n = 0;
    for (b = 0; b < s->nb; b++) {
        const pk_bin *bin = &s->b[b];
        const uint32_t c = (uint32_t)__builtin_popcountll(bin->map & PK_MAP_MASK);
        uint32_t e;
        if (c > PK_SLOTS)
            return "a bin with more than 28 entries";
        for (e = 0; e < PK_SLOTS; e++) {
            if (e < c && (bin->e[e] == 0 || bin->e[e] >> (x->eb + 1u) != 0))
                return "an entry with no length marker or longer than the entries' bits";
            if (e >= c && bin->e[e] != 0)
                return "a bin's unused entry is not zero";
        }
    }
    if (s->splen > 0) {
        if (s->spcap < sp_min_cap(s) || s->spd != sp_d_for(s->spcap, s->m) ||
            s->splen != sp_len_for(s->spcap, s->spd) || s->sp[s->splen - 1u] != 0)
            return "the spare's size does not match its bins";
        for (q = 0; q < s->splen; q++) {
            uint64_t g;
            uint16_t v;
            if (s->sp[q] == 0)
                continue;
            g = pk_sp_bucket(s, q, s->sp[q]);
            v = (uint16_t)s->sp[q];
            if (g >= s->m || v == 0 || v >> (x->eb + 1u) != 0 || q < pk_sp_home(s, g) ||
                q - pk_sp_home(s, g) > s->spd || (n > 0 && g < prev_g))
                return "a spare entry out of its place or order";
            for (b = pk_sp_home(s, g); b < q; b++)
                if (s->sp[b] == 0)
                    return "a spare entry past an empty slot";
            prev_g = g;
            n++;
        }
        if (n != s->spn)
            return "the spare's count does not match its entries";
    } else if (s->spn != 0) {
        return "spare entries with no spare";
    }
    for (q = 0; q < s->ndeep; q++) {
        if (s->deep[q][0] > s->deep[q][1] || (q > 0 && deep_cmp(s->deep[q - 1], s->deep[q]) > 0))
            return "deep ranges out of order";
        if (s->deep[q][1] - s->deep[q][0] > s->deep_width)
            return "a deep range wider than recorded";
    }
    return NULL;
}
