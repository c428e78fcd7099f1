/*
 * phonebook.c - the smallest useful libamq program: build a Bloom filter of
 * known phone numbers, save it, open it again by mmap and ask about others.
 *
 *   cc phonebook.c $(pkg-config --cflags --libs amq) -o phonebook
 */
#include <stdio.h>
#include <string.h>

#include <amq.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "phonebook.amq";
    amq_config cfg;
    amq_filter *f;
    amq_errinfo err;
    char number[32];
    int i, n, rc, found = 0;

    /* 100,000 known numbers at a 0.1 % false-positive rate. */
    amq_config_init(&cfg, AMQ_KIND_BLOOM);
    cfg.capacity = 100000;
    cfg.fpp = 0.001;
    rc = amq_filter_new(&cfg, &f, &err);
    if (rc != AMQ_OK) {
        fprintf(stderr, "create: %s\n", err.msg);
        return 1;
    }
    for (i = 0; i < 100000; i++) {
        n = snprintf(number, sizeof number, "+1555%07d", i * 3);
        amq_filter_add(f, number, (size_t)n);
    }
    rc = amq_filter_save(f, path, 0, &err);
    amq_filter_free(f);
    if (rc != AMQ_OK) {
        fprintf(stderr, "save: %s\n", err.msg);
        return 1;
    }

    /* Query in place: the file is mapped, nothing is copied. */
    rc = amq_filter_open(path, AMQ_OPEN_MMAP, NULL, &f, &err);
    if (rc != AMQ_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    for (i = 0; i < 300; i++) {
        n = snprintf(number, sizeof number, "+1555%07d", i);
        found += amq_filter_contains(f, number, (size_t)n);
    }
    amq_filter_free(f);
    /* 100 of the 300 were added (multiples of 3); the rest are absent. */
    printf("libamq %s: %d of 300 numbers may be known (100 are)\n", amq_version_string(), found);
    return found >= 100 && found <= 110 ? 0 : 1;
}
