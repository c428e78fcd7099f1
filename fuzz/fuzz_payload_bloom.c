/*
 * fuzz_payload_bloom.c - the classic Bloom filter's parameter block and bit
 * array, framed in a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_BLOOM
#include "payload.h"
