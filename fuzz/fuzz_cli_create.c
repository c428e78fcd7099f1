/*
 * fuzz_cli_create.c - `amq create`'s option parsing and checking
 * (cli/cmd_create.c), run on fuzz-chosen command lines.
 *
 * The tool's own source is compiled in with two calls replaced: amq_filter_new
 * (by macro, in this translation unit only) gets a capped checking
 * allocator, so an absurd size is an AMQ_ENOMEM rather than gigabytes, and
 * the tool's save (cli_save_filter, defined here instead of cli/target.c)
 * serializes to memory and reloads instead of writing a file.
 *
 * Input: the arguments after "create", separated by NUL bytes (at most 24).
 * Properties: the exit status is 0 or 2; 2 always comes with a message on
 * standard error; the configuration the tool hands the library never has
 * an accepted option silently ignored (--hashes without a non-zero --bits,
 * a bits-per-key that is not positive); a filter the tool creates is
 * within the documented limits and round-trips; nothing leaks.
 */
#include "cli_capture.h"

#include "amq.h"
#include "filter_checks.h"

/* Filters above 4 MiB are refused (AMQ_ENOMEM, which the tool reports):
 * serializing and reloading 50 MB under ASan takes seconds per input. */
#define FZ_CLI_CAP ((size_t)4 << 20)

static fz_alloc fz_a;
static amq_allocator fz_al;
static int fz_saves;

static int fz_filter_new(const amq_config *cfg, amq_filter **out, amq_errinfo *err)
{
    amq_config c = *cfg;
    amq_stats st;
    int rc;

    FZ_CHECK(cfg->k == 0 || cfg->bits != 0, "k %u given without bits: it would be ignored",
             cfg->k);
    FZ_CHECK(cfg->bits_per_key >= 0.0, "bits per key %g", cfg->bits_per_key);
    c.alloc = &fz_al;
    rc = amq_filter_new(&c, out, err);
    if (rc != AMQ_OK) {
        FZ_CHECK(*out == NULL && err->msg[0] != '\0', "amq_filter_new: %d without a message",
                 rc);
        return rc;
    }
    amq_filter_stats(*out, &st);
    FZ_CHECK(st.bytes > 0 && st.bytes <= FZ_CLI_CAP, "a filter of %llu bytes",
             (unsigned long long)st.bytes);
    FZ_CHECK(fz_is_rate(st.fpp_target), "target rate %g", st.fpp_target);
    if (cfg->bits != 0 && cfg->kind == AMQ_KIND_BLOOM)
        FZ_CHECK(st.bits == cfg->bits && st.hashes == cfg->k, "asked %llu bits %u probes, got "
                 "%llu, %u", (unsigned long long)cfg->bits, cfg->k,
                 (unsigned long long)st.bits, st.hashes);
    return rc;
}

static int fz_filter_save(const amq_filter *f, const char *path, unsigned flags,
                          amq_errinfo *err)
{
    amq_filter *g = NULL;
    uint8_t *bytes;
    size_t len;
    int rc;

    (void)path;
    (void)err;
    FZ_CHECK(flags == 0 || flags == AMQ_SAVE_EXCL, "save flags %u", flags);
    fz_saves++;
    bytes = fz_serialize(f, &len);
    rc = amq_filter_deserialize(bytes, len, 0, &fz_al, &g, err);
    FZ_CHECK(rc == AMQ_OK, "a created filter does not reload: %s", err->msg);
    amq_filter_free(g);
    free(bytes);
    return AMQ_OK;
}

#define amq_filter_new fz_filter_new
#include "../cli/util.c"
#include "../cli/aging.c"
#include "../cli/kinds.c"
#include "../cli/cmd_create.c"
#undef amq_filter_new

/* The tool saves through cli/target.c (locks, refusals of existing files);
 * here the save is the in-memory round trip above. */
int cli_save_filter(const char *path, const amq_filter *f, unsigned flags)
{
    amq_errinfo err;
    return fz_filter_save(f, path, (flags & CLI_TARGET_FORCE) ? 0 : AMQ_SAVE_EXCL, &err) ==
                   AMQ_OK
               ? 0
               : -1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_cli_init();
    fz_al = fz_allocator(&fz_a, FZ_CLI_CAP);
    return 0;
}

#define MAX_ARGS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *argv[MAX_ARGS + 2], *buf;
    int argc = 1, rc;
    size_t i, start = 0;

    buf = malloc(size + 1);
    FZ_CHECK(buf != NULL, "out of memory");
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = (char *)"create";
    for (i = 0; i <= size && argc <= MAX_ARGS; i++) {
        if (buf[i] == '\0') {
            argv[argc++] = buf + start;
            start = i + 1;
        }
    }
    argv[argc] = NULL;

    fz_err_reset();
    fz_saves = 0;
    optind = 0; /* glibc: start a fresh scan */
    rc = cmd_create(argc, argv);
    FZ_CHECK(rc == 0 || rc == EXIT_TROUBLE, "exit status %d", rc);
    if (rc == EXIT_TROUBLE)
        FZ_CHECK(fz_err_text()[0] != '\0', "exit status 2 without a message");
    else
        FZ_CHECK(fz_saves <= 1, "%d saves", fz_saves);
    FZ_CHECK_NO_LEAK(&fz_a);
    free(buf);
    return 0;
}
