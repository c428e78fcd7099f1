/*
 * fuzz_payload_quotient.c - the quotient kind's parameter block and payload
 * (pending ring, deep list, table of lines), framed in a valid container
 * (see payload.h).
 */
#define FZ_KIND AMQ_KIND_QUOTIENT
#include "payload.h"
