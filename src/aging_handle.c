/*
 * aging_handle.c - the aging filter's public functions on a generic handle
 * (amq/aging.h), above filter.c; the filter itself is aging.c's.
 */
#include "aging_internal.h"
#include "common/endian.h"
#include "common/error.h"
#include "kind.h"

/* For tests: the scalar and the chosen path's masks of one key. */
void amq_aging_masks(const amq_filter *f, amq_hash128 h, uint64_t *scalar, uint64_t *chosen);

static amq_aging *aging_of(const amq_filter *f)
{
    return amq_filter_kind(f) == AMQ_KIND_AGING ? amq_filter_impl(f) : NULL;
}

int amq_aging_get_info(const amq_filter *f, amq_aging_info *info)
{
    const amq_aging *a = aging_of(f);
    if (a == NULL)
        return AMQ_EKIND;
    amq_aging_impl_info(a, info);
    return AMQ_OK;
}

int amq_aging_advance(amq_filter *f, uint64_t now_ms)
{
    amq_aging *a = aging_of(f);
    if (a == NULL)
        return AMQ_EKIND;
    if (!amq_aging_impl_timed(a))
        return AMQ_EUNSUPPORTED;
    if (amq_filter_is_readonly(f))
        return AMQ_EREADONLY;
    amq_aging_impl_advance(a, now_ms);
    return AMQ_OK;
}

int amq_aging_contains_at(const amq_filter *f, amq_hash128 h, uint64_t now_ms)
{
    const amq_aging *a = aging_of(f);
    if (a == NULL)
        return amq_filter_contains_hash(f, h);
    return amq_aging_impl_contains_at(a, h, now_ms);
}

int amq_aging_contains_batch_at(const amq_filter *f, const amq_hash128 *h, size_t n,
                                uint8_t *out, uint64_t now_ms)
{
    const amq_aging *a = aging_of(f);
    if (a == NULL)
        return amq_filter_contains_batch(f, h, n, out);
    amq_aging_impl_contains_batch_at(a, h, n, out, now_ms);
    return AMQ_OK;
}

int amq_aging_serialize_raw(const amq_filter *f, uint8_t params[AMQ_AGING_PARAMS_SIZE],
                     const uint8_t **payload, size_t *len)
{
    const amq_aging *a = aging_of(f);
    uint8_t *data;
    if (a == NULL)
        return AMQ_EKIND;
    if (!amq_aging_impl_raw_ok())
        return AMQ_EUNSUPPORTED;
    amq_aging_impl_params(a, params);
    amq_aging_impl_data(a, &data, len);
    *payload = data;
    return AMQ_OK;
}

int amq_aging_deserialize_raw(const uint8_t *params, size_t params_len, uint32_t hash_algo,
                     uint64_t seed, const amq_allocator *alloc, amq_filter **out,
                     amq_errinfo *err)
{
    amq_aging *a;
    int rc;

    *out = NULL;
    if (!amq_aging_impl_raw_ok())
        return amq_err(err, AMQ_EUNSUPPORTED, "raw aging state needs a little-endian host");
    rc = amq_hash_check_err(hash_algo, seed, AMQ_ECORRUPT, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_aging_impl_deserialize(params, params_len, hash_algo, seed, alloc, &a, err);
    if (rc != AMQ_OK)
        return rc;
    rc = amq_filter_wrap(amq_kind_lookup(AMQ_KIND_AGING), a, alloc, out);
    if (rc != AMQ_OK)
        return amq_err(err, rc, "out of memory");
    return AMQ_OK;
}

int amq_aging_export_header(const amq_filter *f, uint8_t hdr[AMQ_AGING_HEADER_SIZE],
                            const uint8_t **payload, size_t *len)
{
    int rc = amq_aging_serialize_raw(f, hdr, payload, len);
    if (rc != AMQ_OK)
        return rc;
    amq_store32(hdr + AMQ_AGING_PARAMS_SIZE, aging_of(f)->hash_algo);
    amq_store64(hdr + AMQ_AGING_PARAMS_SIZE + 4, aging_of(f)->seed);
    return AMQ_OK;
}

int amq_aging_import_header(const uint8_t *hdr, size_t len, const amq_allocator *alloc,
                            amq_filter **out, amq_errinfo *err)
{
    *out = NULL;
    if (hdr == NULL || len != AMQ_AGING_HEADER_SIZE)
        return amq_err(err, AMQ_ECORRUPT, "aging header is %zu bytes, expected %d", len,
                       AMQ_AGING_HEADER_SIZE);
    return amq_aging_deserialize_raw(hdr, AMQ_AGING_PARAMS_SIZE, amq_load32(hdr + AMQ_AGING_PARAMS_SIZE),
                            amq_load64(hdr + AMQ_AGING_PARAMS_SIZE + 4), alloc, out, err);
}

int amq_aging_data_mut(amq_filter *f, uint8_t **data, size_t *len)
{
    amq_aging *a = aging_of(f);
    if (a == NULL)
        return AMQ_EKIND;
    if (!amq_aging_impl_raw_ok())
        return AMQ_EUNSUPPORTED;
    if (amq_filter_is_readonly(f))
        return AMQ_EREADONLY;
    amq_aging_impl_data(a, data, len);
    return AMQ_OK;
}

void amq_aging_masks(const amq_filter *f, amq_hash128 h, uint64_t *scalar, uint64_t *chosen)
{
    const amq_aging *a = aging_of(f);
    *scalar = *chosen = 0;
    if (a == NULL)
        return;
    amq_aging_impl_masks(a, h, scalar, chosen);
}
