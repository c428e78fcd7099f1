/*
 * crash_kill.c - crash safety of filter files: `amq add FILE KEYS` (in
 * place: journal, then the changed chunks), `amq add --rewrite FILE KEYS`
 * (whole-file replacement), `amq create FILE ... --force` and `amq add` of
 * a quotient filter (a kind that grows: the add finishes its growth, then
 * replaces the file whole) are killed with SIGKILL at random moments,
 * hundreds of times, and after each kill FILE must read, byte for byte, as
 * either the old complete filter or the new complete one - "read" meaning
 * with the journal a killed in-place add left beside it applied, as every
 * open does - and `amq info` must validate it (header and payload
 * checksums).  Temporary files of a killed save (".FILE.XXXXXX.amqtmp") may
 * stay behind; they are left in place for the following runs, which must
 * not be affected by them.
 *
 * Usage: crash_kill AMQ [ITERATIONS [SEED]]   (defaults 300, 1)
 * The filter is about 2.4 MB, so that a save (write, fsync, rename, fsync
 * of the directory) takes long enough to be hit; kill moments are uniform
 * over 1.5 times the median duration of 5 undisturbed runs.  Prints the
 * seed and the counts of each outcome; exit status 1 on any violation.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

/* Kill moments are uniform over this many times an undisturbed run. */
#define KILL_SPAN 1.5

static const char *amq;
static char dir[256];
static int failures;

static uint64_t rnd(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *path(const char *name)
{
    static char bufs[4][512];
    static int next;
    char *b = bufs[next++ & 3];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

/* Starts amq with args (NULL-terminated), output discarded. */
static pid_t spawn(char *const *args)
{
    char *argv[16];
    pid_t pid;
    int i, fd;

    argv[0] = (char *)amq;
    for (i = 0; args[i] != NULL && i < 14; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    pid = fork();
    if (pid == 0) {
        fd = open("/dev/null", O_RDWR);
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(amq, argv);
        _exit(127);
    }
    return pid;
}

static int run(char *const *args)
{
    int st;
    pid_t pid = spawn(args);
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint8_t *slurp(const char *p, size_t *len)
{
    struct stat st;
    uint8_t *buf;
    int fd = open(p, O_RDONLY);

    *len = 0;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || (buf = malloc((size_t)st.st_size + 1)) == NULL ||
        read(fd, buf, (size_t)st.st_size) != st.st_size) {
        close(fd);
        return NULL;
    }
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

/* Writes bytes to p through a temporary and rename (the test's own copy
 * must never be what is seen half-written). */
static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/*
 * The file as an open reads it: a complete journal of the same file (size,
 * inode, header area old or new; docs/file-format.md) applied over it.
 * Written from the format, not from the library, so that it checks it.
 * *journal: 1 if one was applied.
 */
static void apply_journal(const char *file, uint8_t *bytes, size_t len, int *journal)
{
    char jp[600];
    const char *slash = strrchr(file, '/');
    struct stat st;
    uint8_t *j;
    size_t jlen, pos = 40;
    uint64_t n, i, hlen, h;

    *journal = 0;
    snprintf(jp, sizeof jp, "%.*s/.%s.amqjournal", (int)(slash - file), file, slash + 1);
    j = slurp(jp, &jlen);
    if (j == NULL || stat(file, &st) != 0)
        goto done;
    if (jlen < 48 || memcmp(j, "AMQJRNL1", 8) != 0 || le64(j + 8) != len ||
        le64(j + 24) != (uint64_t)st.st_ino || le64(j + jlen - 8) != XXH3_64bits(j, jlen - 8))
        goto done;
    n = le64(j + 16);
    hlen = le64(j + 48) & 0xffffffffu;
    if (n == 0 || le64(j + 40) != 0 || hlen > len)
        goto done;
    h = XXH3_64bits(bytes, hlen);
    if (h != le64(j + 32) && h != XXH3_64bits(j + 56, hlen))
        goto done;
    for (i = 0; i < n; i++) {
        uint64_t off = le64(j + pos), rl = le64(j + pos + 8) & 0xffffffffu;
        if (pos + 16 + rl > jlen - 8 || off + rl > len)
            goto done; /* a valid journal never does this: the test then fails */
        memcpy(bytes + off, j + pos + 16, rl);
        pos += 16 + rl;
    }
    *journal = 1;
done:
    free(j);
}

static void put(const char *p, const uint8_t *bytes, size_t len)
{
    char tmp[600];
    const char *slash = strrchr(p, '/');
    int fd;

    /* Each kill starts from the old file alone: the journal of a killed
     * in-place add was written for the previous copy, and the new copy may
     * reuse its inode (then applying it would be right, but not what the
     * next kill is compared with). */
    snprintf(tmp, sizeof tmp, "%.*s/.%s.amqjournal", (int)(slash - p), p, slash + 1);
    unlink(tmp);
    snprintf(tmp, sizeof tmp, "%s.put", p);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, bytes, len) != (ssize_t)len || close(fd) != 0 ||
        rename(tmp, p) != 0) {
        perror(tmp);
        exit(2);
    }
}

static int temporaries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    size_t l;
    while (d != NULL && (e = readdir(d)) != NULL) {
        l = strlen(e->d_name);
        if (l > 7 && strcmp(e->d_name + l - 7, ".amqtmp") == 0)
            n++;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

typedef struct scenario {
    const char *name;
    char *args[12];   /* amq arguments; the target is path("f.amq") */
    uint8_t *old_bytes, *new_bytes;
    size_t old_len, new_len;
    double duration;  /* of an undisturbed run, seconds */
    unsigned n_old, n_new, n_journal;
} scenario;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void prepare(scenario *sc, const uint8_t *old_bytes, size_t old_len)
{
    double t0, took[5];
    int i;

    sc->old_bytes = (uint8_t *)old_bytes;
    sc->old_len = old_len;
    for (i = 0; i < 5; i++) {
        put(path("f.amq"), old_bytes, old_len);
        t0 = now();
        if (run(sc->args) != 0) {
            fprintf(stderr, "crash_kill: %s: an undisturbed run failed\n", sc->name);
            exit(2);
        }
        took[i] = now() - t0;
    }
    /* The median: a busy machine makes single runs noisy. */
    qsort(took, 5, sizeof took[0], cmp_double);
    sc->duration = took[2];
    sc->new_bytes = slurp(path("f.amq"), &sc->new_len);
    if (sc->new_bytes == NULL || (sc->new_len == old_len &&
                                  memcmp(sc->new_bytes, old_bytes, old_len) == 0)) {
        fprintf(stderr, "crash_kill: %s: the run did not change the file\n", sc->name);
        exit(2);
    }
}

static void one_kill(scenario *sc, uint64_t *seed, unsigned iter)
{
    char *info[] = {(char *)"info", (char *)path("f.amq"), NULL};
    uint8_t *got;
    size_t len;
    pid_t pid;
    int st;
    double delay = sc->duration * KILL_SPAN * (double)(rnd(seed) >> 11) / 9007199254740992.0;
    struct timespec ts;

    put(path("f.amq"), sc->old_bytes, sc->old_len);
    pid = spawn(sc->args);
    ts.tv_sec = (time_t)delay;
    ts.tv_nsec = (long)((delay - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);

    got = slurp(path("f.amq"), &len);
    if (got != NULL) {
        int journal;
        apply_journal(path("f.amq"), got, len, &journal);
        sc->n_journal += (unsigned)journal;
    }
    if (got != NULL && len == sc->old_len && memcmp(got, sc->old_bytes, len) == 0)
        sc->n_old++;
    else if (got != NULL && len == sc->new_len && memcmp(got, sc->new_bytes, len) == 0)
        sc->n_new++;
    else {
        failures++;
        fprintf(stderr, "  FAIL %s, kill %u after %.1f ms: the file (%zu bytes) is neither "
                        "the old (%zu) nor the new (%zu) filter\n",
                sc->name, iter, delay * 1e3, len, sc->old_len, sc->new_len);
    }
    free(got);
    if (run(info) != 0) {
        failures++;
        fprintf(stderr, "  FAIL %s, kill %u: amq info does not validate the file\n", sc->name,
                iter);
    }
}

int main(int argc, char **argv)
{
    unsigned iterations = 300, i;
    uint64_t seed = 1, s;
    char keys_path[512], *target;
    FILE *fp;
    uint8_t *base;
    size_t base_len;
    int leftovers;
    double t0;
    scenario add = {"amq add", {NULL}, NULL, NULL, 0, 0, 0, 0, 0, 0};
    scenario rewrite = {"amq add --rewrite", {NULL}, NULL, NULL, 0, 0, 0, 0, 0, 0};
    scenario create = {"amq create --force", {NULL}, NULL, NULL, 0, 0, 0, 0, 0, 0};
    scenario grow = {"amq add (quotient)", {NULL}, NULL, NULL, 0, 0, 0, 0, 0, 0};
    scenario *all[4] = {&add, &rewrite, &create, &grow};
    uint8_t *qbase;
    size_t qbase_len;

    if (argc < 2) {
        fprintf(stderr, "usage: crash_kill AMQ [ITERATIONS [SEED]]\n");
        return 2;
    }
    amq = argv[1];
    if (argc > 2)
        iterations = (unsigned)strtoul(argv[2], NULL, 10);
    if (argc > 3)
        seed = strtoull(argv[3], NULL, 0);
    snprintf(dir, sizeof dir, "%s/amq-crash-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    t0 = now();

    /* The old filter: 2M capacity (2.4 MB) with some keys; the new one of
     * each scenario is what an undisturbed run leaves. */
    snprintf(keys_path, sizeof keys_path, "%s", path("keys"));
    fp = fopen(keys_path, "w");
    for (i = 0; fp != NULL && i < 20000; i++)
        fprintf(fp, "key-%u\n", i);
    if (fp == NULL || fclose(fp) != 0)
        return 2;
    fp = fopen(path("more-keys"), "w");
    /* Enough keys that an in-place add spends a good part of its run
     * before its journal is durable (the commit point), so that kills
     * land on both sides of it. */
    for (i = 0; fp != NULL && i < 8000; i++)
        fprintf(fp, "more-%u\n", i);
    if (fp == NULL || fclose(fp) != 0)
        return 2;
    {
        char *mk[] = {(char *)"create", (char *)path("f.amq"), (char *)"--capacity",
                      (char *)"2M", NULL};
        char *fill[] = {(char *)"add", (char *)path("f.amq"), keys_path, NULL};
        if (run(mk) != 0 || run(fill) != 0) {
            fprintf(stderr, "crash_kill: cannot build the filter with %s\n", amq);
            return 2;
        }
    }
    base = slurp(path("f.amq"), &base_len);
    if (base == NULL)
        return 2;
    { /* the quotient filter: the same keys, grown from its default start */
        char *mk[] = {(char *)"create", (char *)path("f.amq"), (char *)"--type",
                      (char *)"quotient", (char *)"--force", NULL};
        char *fill[] = {(char *)"add", (char *)path("f.amq"), keys_path, NULL};
        if (run(mk) != 0 || run(fill) != 0 || (qbase = slurp(path("f.amq"), &qbase_len)) == NULL) {
            fprintf(stderr, "crash_kill: cannot build the quotient filter with %s\n", amq);
            return 2;
        }
    }

    target = strdup(path("f.amq")); /* path()'s buffers rotate */
    add.args[0] = (char *)"add";
    add.args[1] = target;
    snprintf(keys_path, sizeof keys_path, "%s", path("more-keys"));
    add.args[2] = keys_path;
    prepare(&add, base, base_len);
    rewrite.args[0] = (char *)"add";
    rewrite.args[1] = (char *)"--rewrite";
    rewrite.args[2] = target;
    rewrite.args[3] = keys_path;
    prepare(&rewrite, base, base_len);
    create.args[0] = (char *)"create";
    create.args[1] = target;
    create.args[2] = (char *)"--capacity";
    create.args[3] = (char *)"1800k";
    create.args[4] = (char *)"--fpp";
    create.args[5] = (char *)"0.02";
    create.args[6] = (char *)"--force";
    prepare(&create, base, base_len);
    grow.args[0] = (char *)"add";
    grow.args[1] = target;
    grow.args[2] = keys_path;
    prepare(&grow, qbase, qbase_len);

    s = seed;
    leftovers = 0;
    for (i = 0; i < iterations; i++) {
        int n;
        one_kill(all[i % 4], &s, i);
        /* Stale temporaries stay for the next runs, a few at a time (they
         * are 2.4 MB each). */
        if ((n = temporaries()) > 8) {
            char cmd[400];
            leftovers += n;
            snprintf(cmd, sizeof cmd, "rm -f '%s'/.*.amqtmp", dir);
            if (system(cmd) != 0)
                return 2;
        }
    }
    leftovers += temporaries();

    printf("crash_kill: seed %llu, %u kills in %.1f s (runs take %.0f, %.0f and %.0f ms): "
           "add in place left the old file %u times, the new %u (%u through a journal); "
           "add --rewrite old %u, new %u; create --force old %u, new %u; "
           "quotient add (%.0f ms) old %u, new %u; %d stale .amqtmp files; %d violations\n",
           (unsigned long long)seed, iterations, now() - t0, add.duration * 1e3,
           rewrite.duration * 1e3, create.duration * 1e3, add.n_old, add.n_new, add.n_journal,
           rewrite.n_old, rewrite.n_new, create.n_old, create.n_new, grow.duration * 1e3,
           grow.n_old, grow.n_new, leftovers, failures);
    /* Both outcomes must have been seen, or the kills did not straddle the
     * commit and the test proved nothing. */
    for (i = 0; i < 4; i++) {
        if (iterations >= 200 && (all[i]->n_old == 0 || all[i]->n_new == 0)) {
            fprintf(stderr, "  FAIL: %s: the kills never hit one side of the commit point\n",
                    all[i]->name);
            failures++;
        }
    }
    {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (failures == 0 && system(cmd) != 0)
            fprintf(stderr, "warning: could not remove %s\n", dir);
    }
    if (failures != 0)
        fprintf(stderr, "crash_kill: files kept in %s\n", dir);
    free(base);
    free(target);
    free(add.new_bytes);
    free(rewrite.new_bytes);
    free(create.new_bytes);
    free(grow.new_bytes);
    free(qbase);
    return failures == 0 ? 0 : 1;
}
