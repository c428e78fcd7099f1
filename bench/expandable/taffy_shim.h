/* taffy_shim.h - the peer taffy cuckoo filter, when built in (HAVE_TAFFY). */
#include <stdint.h>
void *taffy_new(uint64_t bytes);
int taffy_add(void *t, uint64_t h);
int taffy_find(const void *t, uint64_t h);
uint64_t taffy_bytes(const void *t);
void taffy_free(void *t);
