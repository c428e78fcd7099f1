/*
 * fuzz_payload_scalable_bloom.c - the scalable-bloom kind's parameter block and
 * payload, framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_SCALABLE_BLOOM
#include "payload.h"
