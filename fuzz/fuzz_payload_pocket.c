/*
 * fuzz_payload_pocket.c - the pocket kind's parameter block and payload
 * (pending keys, segment records, bins, spare slots, deep ranges), framed in
 * a valid container (see payload.h).
 */
#define FZ_KIND AMQ_KIND_POCKET
#include "payload.h"
