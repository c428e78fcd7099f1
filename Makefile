# amq - approximate-membership filters: library, tool, Redis module.
# GNU make.  `make help` lists the targets.

# The version is the header's (include/amq/common.h), the one place it is written for the
# C side: the library, the tool's --version, amq.pc and the installed man page take it.
version_part = $(shell sed -n 's/^\#define AMQ_VERSION_$(1) \([0-9]*\)$$/\1/p' include/amq/common.h)
VERSION_MAJOR := $(call version_part,MAJOR)
VERSION := $(VERSION_MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build
libdir     ?= $(PREFIX)/lib
includedir ?= $(PREFIX)/include
bindir     ?= $(PREFIX)/bin
mandir     ?= $(PREFIX)/share/man
datadir    ?= $(PREFIX)/share

OPT      ?= -O2
# Debug information: full by default; make test's sanitizer, ThreadSanitizer and clang builds
# take line tables only (-g1: file and line in every report, a third less compile time).
DEBUG_FLAGS ?= -g
WARN     := -Wall -Wextra -Wshadow -Wconversion -Wstrict-prototypes -Wpointer-arith \
            -Wformat=2 -Wno-format-nonliteral
ifeq ($(WERROR),1)
WARN     += -Werror
endif
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ifeq ($(SAN),1)
OPT      := -O1
EXTRA_CFLAGS += $(SAN_FLAGS)
EXTRA_LDFLAGS += $(SAN_FLAGS)
endif
ifeq ($(TSAN),1)
OPT      := -O1
EXTRA_CFLAGS += -fsanitize=thread
EXTRA_LDFLAGS += -fsanitize=thread
endif

CPPFLAGS_ALL := -Iinclude -Isrc -D_GNU_SOURCE $(CPPFLAGS)
# The tool, the module and the benchmark see the public headers only (the
# library's internals are src/; scripts/check-layering.sh checks the links).
CPPFLAGS_PUB := -Iinclude -D_GNU_SOURCE $(CPPFLAGS)
CFLAGS_ALL   := -std=c11 $(OPT) $(DEBUG_FLAGS) -fPIC -pthread $(WARN) $(EXTRA_CFLAGS) $(CFLAGS)
LIB_CFLAGS   := $(CFLAGS_ALL) -fvisibility=hidden -DAMQ_BUILDING_LIBRARY -DAMQ_ADVANCED_API
LDLIBS_ALL   := -lxxhash -lm -pthread $(LDLIBS)
LDFLAGS_ALL  := $(EXTRA_LDFLAGS) $(LDFLAGS)

LIB_SRC  := $(wildcard src/*.c src/common/*.c)
LIB_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRC))
CLI_SRC  := $(wildcard cli/*.c)
CLI_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRC))
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(TEST_SRC))
TEST_SUPPORT := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/unit/support/*.c))
REDIS_SRC := $(wildcard redis/*.c)
REDIS_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(REDIS_SRC))
REDIS_MODULE := $(BUILD)/amq.so
BENCH_SRC := $(wildcard bench/*.c)
BENCH_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(BENCH_SRC))
# The binary fuse head to head (bench/static/fuse_bench.c): a section of
# amq-bench, and amq-bench-fuse's whole run (bench/static/fuse_main.c).
FUSE_H2H_OBJ := $(BUILD)/obj/bench/static/fuse_bench.o
BENCH_OBJ += $(FUSE_H2H_OBJ)
BENCH_BIN := $(BUILD)/bench/amq-bench
AGING_BENCH := $(BUILD)/bench/aging-bench
ARITH_BENCH := $(BUILD)/bench/cuckoo-arith
STATIC_BENCH := $(BUILD)/bench/amq-bench-static
FUSE_BENCH := $(BUILD)/bench/amq-bench-fuse
LAYOUTS_BENCH := $(BUILD)/bench/layouts-bench
EXP_BENCH := $(BUILD)/bench/expandable-bench
AB_LIB := $(BUILD)/bench/ab-lib
GROWTH_PROTO := $(BUILD)/bench/growth-proto
EXP_STALL := $(BUILD)/bench/expandable-stall
PREFETCH_WAIT := $(BUILD)/bench/prefetch-wait
# Where the bench finds the peers' own code (below, "The peers' own code").
AMQ_PEERS ?= ../shared/peers
# The real RocksDB filters (bench/rocksdb_shim.cc, C++) join the benchmark
# when Debian's librocksdb-dev is installed; without it the rows are left out.
CXX ?= g++
ifneq ($(wildcard /usr/include/rocksdb/filter_policy.h),)
BENCH_CXX_SRC := $(wildcard bench/*.cc)
BENCH_DEFS    := -DAMQB_HAVE_ROCKSDB=1
BENCH_LIBS    := -lrocksdb
BENCH_LINK    := $(CXX)
else
BENCH_LINK    := $(if $(wildcard $(AMQ_PEERS)/cuckoofilter/src/cuckoofilter.h),$(if \
                   $(wildcard /usr/include/openssl/evp.h),$(CXX),$(CC)),$(CC))
endif
BENCH_OBJ += $(patsubst %.cc,$(BUILD)/obj/%.o,$(BENCH_CXX_SRC))
CXXFLAGS_ALL := -std=c++17 $(OPT) $(DEBUG_FLAGS) -fPIC -pthread -Wall -Wextra -Wshadow \
                -Wconversion $(if $(filter 1,$(WERROR)),-Werror) $(CXXFLAGS)

STATIC_LIB := $(BUILD)/libamq.a
SHARED_LIB := $(BUILD)/libamq.so.$(VERSION)
SONAME     := libamq.so.$(VERSION_MAJOR)

# Debian packages the build and the tests need (installed by `make deps`).
BUILD_DEPS := libxxhash-dev zlib1g-dev libzstd-dev liblzma-dev libbz2-dev
TEST_DEPS  := redis-server redis-tools python3-redis clang libclang-rt-14-dev \
              default-jdk-headless libguava-java libbloom-dev librocksdb-dev \
              python3-dev python3-pytest python3-numpy python3-mypy zstd xz-utils bzip2 zsh
# Building Redis 8 / Valkey 8 for make test-servers (scripts/build-servers.sh).
SERVER_DEPS := gcc g++ make pkg-config xz-utils ca-certificates util-linux
BENCH_DEPS := libbloom-dev librocksdb-dev gnuplot-nox golang-github-dcso-bloom-cli hyperfine time

.PHONY: all lib cli tests test unit-runs test-unit test-headers test-cli test-asan test-aging-long test-example \
        test-clang test-clang-san demo bench \
        bench-quick test-bench bench-aging bench-expandable bench-expandable-1e9 bench-expandable-stall bench-prefetch-wait bench-expandable-layouts bench-cuckoo-arith bench-cuckoo-one-slot bench-static bench-fuse tsan \
        install uninstall clean help deps deps-test deps-bench format redis-module test-redis \
        test-servers servers deps-servers test-module-asan \
        bench-redis bench-cluster \
        test-interop bench-tool python test-python test-python-asan bench-python

all: lib cli redis-module

redis-module: $(REDIS_MODULE)

lib: $(STATIC_LIB) $(BUILD)/libamq.so

cli: $(BUILD)/amq

help:
	@echo "amq $(VERSION) - make targets:"
	@echo "  all (default)  build/libamq.a, build/libamq.so, build/amq, build/amq.so (Redis module)"
	@echo "  test-redis     the Redis module against real redis-server instances"
	@echo "  test-servers   the module's Redis suite on Redis 7.0 (Debian 12), Redis 8.0.2 and"
	@echo "                 Valkey 8.1.1 (built once per machine from Debian 13 sources into"
	@echo "                 AMQ_SERVERS_CACHE, default /var/cache/amq-servers)"
	@echo "  servers        only build those servers"
	@echo "  bench-redis    redis-benchmark of the module (writes docs/redis-bench.md) and"
	@echo "                 AMQ.MEXISTS beside BF.MEXISTS (docs/redis-bench-amq.md)"
	@echo "  bench-cluster  a sharded filter over 1 vs N shards of a loopback cluster"
	@echo "                 (writes docs/bench-cluster.md)"
	@echo "  test           install missing Debian packages, then every test: unit, bench"
	@echo "                 smoke, CLI, Redis module, Guava interop, example + pkg-config,"
	@echo "                 unit tests under ASan+UBSan and with clang, fuzz corpora replay,"
	@echo "                 kill/disk-full faults, ThreadSanitizer; two parts at a time (make"
	@echo "                 -j2), each part's seconds printed when it ends"
	@echo "  test-unit, test-cli, test-interop, test-example, test-asan, test-clang,"
	@echo "  test-fuzz      the parts of make test, one at a time"
	@echo "  test-clang-san the unit tests, the tool's sanitized paths and the fuzz corpora"
	@echo "                 built by clang with ASan+UBSan (clang's UBSan catches what gcc's"
	@echo "                 does not: NULL + 0, ...); not in make test, .ci/run runs it after"
	@echo "  test-module-asan  the module's Redis suite with amq.so under ASan+UBSan in Redis"
	@echo "                 8.0.2 (libc malloc, the runtime preloaded); not in make test,"
	@echo "                 .ci/run runs it after test-servers"
	@echo "  test-python-asan  the Python suite with the extension and libamq under ASan+UBSan"
	@echo "                 (the runtime preloaded into python3); not in make test, .ci/run"
	@echo "                 runs it"
	@echo "  test-headers   each public header compiles alone (run by test-unit)"
	@echo "  demo           the phone-number case of the seeds on generated data"
	@echo "  fuzz           libFuzzer, each target FUZZ_SECONDS (60); fuzz-long: 10 minutes"
	@echo "                 (docs/reliability.md)"
	@echo "  test-faults    SIGKILL during saves, disk full"
	@echo "  test-aging-long  the aging filter's window over 100M adds (docs/aging.md)"
	@echo "  bench          benchmarks against the peers (writes docs/benchmarks.md; over 90"
	@echo "                 minutes on a 2-core machine, nothing else running: the log's"
	@echo "                 [time] lines give each section's)"
	@echo "  bench-quick    the same at smaller sizes (a few minutes)"
	@echo "  bench-fuse     amq's binary fuse vs xor_singleheader's code alone (docs/benchmarks-fuse.md;"
	@echo "                 peers' code from AMQ_PEERS, default ../shared/peers; make bench runs"
	@echo "                 the same section into docs/benchmarks.md)"
	@echo "  bench-aging    aging filter vs two rotated Bloom filters (docs/bench-aging.md)"
	@echo "  bench-expandable  the expandable, quotient and pocket kinds grown from 1,000 keys"
	@echo "                 against cuckoo, blocked, scalable Bloom and taffy, a verdict per"
	@echo "                 criterion of issue 44 (EXP_MAX, default 1e8; EXP_KIND"
	@echo "                 expandable|quotient|pocket|both|all, default all; RedisBloom's own"
	@echo "                 scalable Bloom from RB_ORACLE, default ../shared/oracle/redisbloom-*.so)"
	@echo "  bench-expandable-1e9  a kind grown from 1,000 keys to EXP_1E9_MAX (default 1e9): fpp"
	@echo "                 at every power of ten and bits/key, written as docs/pocket-1e9.svg"
	@echo "                 and .md (EXP_KIND expandable|quotient|pocket|both, default pocket;"
	@echo "                 the others: docs/expandable-1e9.*; EXP_1E9_OUT=dir elsewhere;"
	@echo "                 scripts/expandable-1e9.sh)"
	@echo "  bench-expandable-stall  every add of a growing kind timed alone: the worst add at"
	@echo "                 each power of ten (EXP_STALL_KIND, default expandable; EXP_STALL_MAX,"
	@echo "                 default 5e7)"
	@echo "  bench-prefetch-wait  what a prefetch of a line not in cache costs the instructions"
	@echo "                 behind it, small and huge pages (PREFETCH_WAIT_MIB, default 276)"
	@echo "  bench-expandable-layouts  two prototype layouts for an expandable filter whose"
	@echo "                 memory follows its keys beside the quotient kind (docs/expandable-log.md;"
	@echo "                 LAYOUTS_MAX, default 1e8)"
	@echo "  bench-cuckoo-one-slot  where 1-slot cuckoo buckets first refuse an add, by"
	@echo "                 fingerprint width and table size (docs/cuckoo.md; about a minute)"
	@echo "  tsan           the concurrency tests under ThreadSanitizer"
	@echo "  bench-tool     whole commands vs sort -u, awk, dcso bloom (docs/benchmarks-tool.md)"
	@echo "  python         the Python package's extension in build/python (pip install ./python"
	@echo "                 installs it); test-python runs its pytest suite; bench-python"
	@echo "                 measures it against set() and the C library (docs/benchmarks-python.md)"
	@echo "  install        PREFIX=$(PREFIX) DESTDIR=... : headers, libraries, amq.pc, amq, amq.1,"
	@echo "                 the Redis module as \$$(libdir)/amq/amq.so"
	@echo "  uninstall      remove what install put there"
	@echo "  deps           install missing build packages (apt-get, non-interactive)"
	@echo "  clean          remove build/"
	@echo "Variables: CC=gcc|clang, OPT=-O2, DEBUG_FLAGS=-g, WERROR=1, SAN=1 (ASan+UBSan), BUILD=dir"

# ---- dependencies -------------------------------------------------------------
deps:
	@scripts/ensure-deps.sh $(BUILD_DEPS)
deps-test: deps
	@scripts/ensure-deps.sh $(TEST_DEPS)
deps-bench: deps
	@scripts/ensure-deps.sh $(BENCH_DEPS)

# ---- library ----------------------------------------------------------------------
$(BUILD)/obj/src/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(LIB_CFLAGS) -MMD -MP -c $< -o $@

# The SIMD paths of the blocked Bloom and cuckoo filters: one file per instruction set,
# called only when the CPU has it (run-time dispatch).  -mprfchw: their adds
# prefetch with PREFETCHW, which every CPU with AVX2 runs (older ones as a
# NOP); see AMQ_BLK_PREFETCHW.
ifneq ($(filter x86_64 amd64,$(shell uname -m)),)
$(BUILD)/obj/src/blocked_bloom_avx2.o: LIB_CFLAGS += -mavx2 -mprfchw
$(BUILD)/obj/src/blocked_bloom_avx512.o: LIB_CFLAGS += -mavx512f -mavx2 -mprfchw
# The cuckoo filter's: its AVX2 leaves add BMI2 by attribute (its AVX2
# gathers run on CPUs with AVX2 alone).
$(BUILD)/obj/src/cuckoo_avx2.o: LIB_CFLAGS += -mavx2
# The quotient kind's table, compiled with AVX2 and BMI2 (quotient_impl.h).
$(BUILD)/obj/src/quotient_avx2.o: LIB_CFLAGS += -mavx2 -mbmi2
$(BUILD)/obj/src/quotient_avx512.o: LIB_CFLAGS += -mavx512f -mavx512bw -mavx512vl -mavx2 -mbmi2
# The pocket kind's bins with AVX-512 (pocket_impl.h; the byte compress is VBMI2's).
$(BUILD)/obj/src/pocket_avx512.o: LIB_CFLAGS += -mavx512f -mavx512bw -mavx512vl -mavx512dq \
	-mavx512cd -mavx512vbmi2 -mavx2 -mbmi2
$(BUILD)/obj/src/cuckoo_avx512.o: LIB_CFLAGS += -mavx512f -mavx512dq -mavx512bw -mavx512vl
endif

$(STATIC_LIB): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/libamq.so: $(SHARED_LIB)
	ln -sf libamq.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# ---- tool -----------------------------------------------------------------------------
$(BUILD)/obj/cli/%.o: cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/amq: $(CLI_OBJ) $(STATIC_LIB)
	$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJ) $(STATIC_LIB) $(LDLIBS_ALL) -lz -lzstd -llzma -lbz2

# ---- Redis module -------------------------------------------------------------------
# Module objects are hidden except RedisModule_OnLoad; the library comes from
# the static archive with its symbols kept local (--exclude-libs).
$(BUILD)/obj/redis/%.o: redis/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -fvisibility=hidden -MMD -MP -c $< -o $@

$(REDIS_MODULE): $(REDIS_OBJ) $(STATIC_LIB)
	$(CC) -shared $(LDFLAGS_ALL) -Wl,-z,defs -Wl,--exclude-libs,ALL -o $@ $(REDIS_OBJ) \
	    $(STATIC_LIB) $(LDLIBS_ALL)

# ---- tests ------------------------------------------------------------------------------
# The tests cover the advanced API too.
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) -DAMQ_ADVANCED_API -Itests/unit $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_SUPPORT) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(TEST_SUPPORT) $(STATIC_LIB) $(LDLIBS_ALL)

# The in-place API takes no allocator: this test refuses the C library's malloc on demand.
$(BUILD)/tests/test_inplace_nomem: LDFLAGS_ALL += -Wl,--wrap=malloc
# Nor a file system: this test fails each I/O call of an in-place add and its recovery in turn.
$(BUILD)/tests/test_inplace_iofail: LDFLAGS_ALL += -Wl,--wrap=open,--wrap=fstat,--wrap=read \
	-Wl,--wrap=pread,--wrap=pwrite,--wrap=write,--wrap=fsync,--wrap=fdatasync,--wrap=unlink
# And this one each I/O call of a save (amq_filter_save's target: its lock, temporary, rename).
$(BUILD)/tests/test_save_iofail: LDFLAGS_ALL += -Wl,--wrap=open,--wrap=fstat,--wrap=flock \
	-Wl,--wrap=pread,--wrap=pwrite,--wrap=fchmod,--wrap=fsync,--wrap=close,--wrap=rename \
	-Wl,--wrap=renameat2,--wrap=link,--wrap=unlink

# The benchmark is built with the tests (so that it cannot rot) and run
# on tiny sizes by `make test`; `make bench` runs it for real.
tests: $(TEST_BIN) $(BENCH_BIN) $(AGING_BENCH) $(ARITH_BENCH) $(STATIC_BENCH) $(FUSE_BENCH)

# Each program's run is a target of its own, so that make -j (make test's parts, when a
# CPU is free) runs them side by side.
UNIT_RUNS := $(patsubst $(BUILD)/tests/%,run-unit/%,$(TEST_BIN))
.PHONY: $(UNIT_RUNS) run-unit/test_cuckoo@avx2 run-unit/test_quotient@avx2 \
	run-unit/test_quotient@scalar run-unit/test_pocket@scalar
test-unit: unit-runs test-headers
# The programs' runs alone (make test's ASan part: the headers' check is the compiler's, cc's
# there as in the gcc part's test-unit).
# The longest runs first, so that the last ones to end are short.
unit-runs: run-unit/test_quotient@scalar run-unit/test_pocket@scalar run-unit/test_cuckoo@avx2 \
	run-unit/test_quotient@avx2 $(UNIT_RUNS)

$(UNIT_RUNS): run-unit/%: $(BUILD)/tests/%
	@scripts/run-tests.sh $<

# A program again on a path the CPU's best leaves out, at the sizes the sanitizer run
# takes (AMQ_TEST_SMALL=1, tests/unit/test.h: the run above holds the millions) and
# without the slow tests (the cuckoo filter's, of hashes given and one key at a time,
# which no AMQ_SIMD changes).
ISA_RERUN = AMQ_SLOW_TESTS=0 AMQ_TEST_SMALL=1 AMQ_SIMD=$(1) scripts/run-tests.sh

# The cuckoo filter's batches by AVX2 gathers, on a CPU that would take AVX-512's.
run-unit/test_cuckoo@avx2: $(BUILD)/tests/test_cuckoo
	@$(call ISA_RERUN,avx2) $<

# The quotient kind's every test on its AVX2 table and its baseline one too (the run
# above took the CPU's best: AVX-512's here).
run-unit/test_quotient@avx2: $(BUILD)/tests/test_quotient
	@$(call ISA_RERUN,avx2) $<

run-unit/test_quotient@scalar: $(BUILD)/tests/test_quotient
	@$(call ISA_RERUN,scalar) $<

# The pocket kind's every test on its baseline bins too (the run above took AVX-512's
# here; it has no AVX2 path).
run-unit/test_pocket@scalar: $(BUILD)/tests/test_pocket
	@$(call ISA_RERUN,scalar) $<

# Every public header compiles alone (and amq/advanced.h only when asked for);
# every status-returning public function lists its statuses.
test-headers:
	@scripts/check-headers.sh $(CC)
	@scripts/check-errors.py include

# Each script's run a target of its own, as the unit tests' (tests/cli/run.sh runs them all
# in one go).
CLI_RUNS := $(patsubst tests/cli/%.sh,run-cli/%,$(wildcard tests/cli/test_*.sh))
.PHONY: $(CLI_RUNS)
test-cli: $(CLI_RUNS)
$(CLI_RUNS): run-cli/%: $(BUILD)/amq
	@AMQ=$(BUILD)/amq sh tests/cli/$*.sh

test-redis: $(REDIS_MODULE) $(BUILD)/amq python
	@AMQ=$(BUILD)/amq AMQ_PYTHON=$(CURDIR)/$(BUILD)/python /usr/bin/python3 tests/redis/run.py --module $(REDIS_MODULE)

# The same suite on every server the module supports (scripts/test-servers.sh).
test-servers: deps-test deps-servers $(REDIS_MODULE) $(BUILD)/amq python
	@AMQ=$(BUILD)/amq AMQ_PYTHON=$(CURDIR)/$(BUILD)/python scripts/test-servers.sh $(REDIS_MODULE)

servers: deps-servers
	@scripts/build-servers.sh

# The suite again with amq.so built with ASan + UBSan, in Redis 8 built with libc's malloc
# (the module's blocks then carry redzones): scripts/test-module-asan.sh says what it leaves
# out and why.  Not in make test (its 15 minutes are spent): .ci/run calls it.
test-module-asan: deps-test deps-servers $(BUILD)/amq python
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 WERROR=1 build/asan/amq.so
	@CC=$(CC) AMQ=$(BUILD)/amq AMQ_PYTHON=$(CURDIR)/$(BUILD)/python scripts/test-module-asan.sh \
	    build/asan/amq.so

deps-servers:
	@scripts/ensure-deps.sh $(SERVER_DEPS)

# Guava interoperability against Debian's libguava-java (skipped without a JDK).
test-interop: $(BUILD)/amq
	@tests/interop/guava.sh $(BUILD)/amq

# The aging kind's window guarantee over 100M adds (make test runs 20M).
test-aging-long: $(BUILD)/tests/test_aging
	@AMQ_AGING_STREAM=100000000 AMQ_TEST_FILTER=aging_stream_window_long $(BUILD)/tests/test_aging

# The unit tests, then the tool's command paths (tests/cli/sanitized.sh: leaks
# and errors on refusals), under ASan + UBSan.
test-asan:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 WERROR=1 AMQ_SLOW_TESTS=0 test-unit
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 WERROR=1 build/asan/amq
	@AMQ=build/asan/amq sh tests/cli/sanitized.sh

# ThreadSanitizer: the tests of the kinds that allow concurrent adds.  An
# entry program:name runs only that program's tests whose names hold name:
# ThreadSanitizer reports races between threads, so test_blocked_bloom's
# single-threaded tests would check nothing (docs/reliability.md).
TSAN_TESTS := test_blocked_bloom:concurrent test_partitioned
tsan:
	@$(MAKE) --no-print-directory BUILD=build/tsan TSAN=1 WERROR=1 \
	    $(addprefix build/tsan/tests/,$(foreach t,$(TSAN_TESTS),$(firstword $(subst :, ,$(t)))))
	@for t in $(TSAN_TESTS); do \
	    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build/tsan/tests/$${t%%:*} \
	        $$(case $$t in *:*) echo "$${t#*:}";; esac) || exit 1; \
	done
	@echo "make tsan: no data races reported"

test-example: lib cli redis-module $(BENCH_BIN)
	@scripts/check-exports.sh $(BUILD)/libamq.so
	@scripts/check-prefetch.sh $(BUILD)
	@tests/layering/run.sh $(BUILD) $(CC)
	@scripts/test-example.sh $(BUILD)

# The library, tool, unit tests and Redis module must also build warning-free with clang.
test-clang:
	@$(MAKE) --no-print-directory -s CC=clang BUILD=build/clang WERROR=1 AMQ_SLOW_TESTS=0 test-unit
	@$(MAKE) --no-print-directory -s CC=clang BUILD=build/clang WERROR=1 build/clang/amq.so

# clang's UndefinedBehaviorSanitizer checks what gcc's does not (arithmetic on
# a null pointer, NULL + 0, among them), so the unit tests, the tool's command
# paths and the fuzz corpora run again in a clang ASan+UBSan build.  Not in
# make test (its 15 minutes are spent): .ci/run calls it after, alone, so
# its steps take both CPUs themselves.
CLANG_SAN := CC=clang BUILD=build/clang-san SAN=1 WERROR=1
test-clang-san:
	@$(MAKE) --no-print-directory -j2 -Otarget $(CLANG_SAN) AMQ_SLOW_TESTS=0 test-unit build/clang-san/amq
	@AMQ=build/clang-san/amq sh tests/cli/sanitized.sh
	@$(MAKE) --no-print-directory -j2 -Otarget $(CLANG_SAN) fuzz-replay

# make test's parts, each a target of its own under one make -j2 (-Otarget prints each
# part's output whole when it ends, and a line with its seconds): a CPU takes the next part
# whose build is done, so neither waits while the other still has work (a machine of 2 CPUs,
# CI's; README).  Each build directory is written by one part only (test-build-*, which the
# parts that run from it come after), and the parts that start Redis servers run one after
# the other (test-redis, then test-python).  The longest parts are listed first.
TEST_PARTS := test-part/asan-unit test-part/fuzz test-part/redis test-part/unit \
    test-part/clang test-part/python test-part/cli test-part/tsan test-part/bench \
    test-part/asan-cli test-part/example test-part/faults test-part/interop
.PHONY: $(TEST_PARTS) test-build-gcc test-build-asan
test: deps-test
	@$(MAKE) --no-print-directory -j2 -Otarget $(TEST_PARTS)
	@echo "make test: all tests passed"

# One part: $(1) run, then its name and seconds.
define test_part
@t0=$$(date +%s); $(1) && echo "make test: $(@F) done in $$(($$(date +%s) - t0)) s"
endef
# What the gcc parts run: the tool, module, tests, benchmarks' smoke programs, Python.
TEST_GCC_BUILT := all tests python $(LAYOUTS_BENCH) $(EXP_BENCH) $(AB_LIB) $(GROWTH_PROTO) \
    $(BINS_PROTO) $(BUILD)/tests/faults/crash_kill
test-build-gcc:
	$(call test_part,$(MAKE) --no-print-directory WERROR=1 $(TEST_GCC_BUILT))
test-part/unit test-part/bench test-part/cli test-part/redis test-part/interop test-part/example \
    test-part/faults: test-build-gcc
	$(call test_part,$(MAKE) --no-print-directory WERROR=1 test-$(@F))
test-part/python: test-build-gcc | test-part/redis
	$(call test_part,$(MAKE) --no-print-directory WERROR=1 test-python)
test-part/tsan:
	$(call test_part,$(MAKE) --no-print-directory DEBUG_FLAGS=-g1 tsan)
test-part/clang:
	$(call test_part,$(MAKE) --no-print-directory DEBUG_FLAGS=-g1 test-clang)

# The ASan + UBSan build: test-asan's and test-fuzz's programs, built once for both (line
# tables only, as the two above: a report still names every frame's file and line).
TEST_ASAN := BUILD=build/asan SAN=1 WERROR=1 DEBUG_FLAGS=-g1
test-build-asan:
	$(call test_part,$(MAKE) --no-print-directory $(TEST_ASAN) \
	    $(patsubst $(BUILD)/%,build/asan/%,$(TEST_BIN)) build/asan/amq \
	    $(patsubst %,build/asan/fuzz/replay_%,$(FUZZ_TARGETS)) build/asan/fuzz/fuzz-seeds)
test-part/asan-unit: test-build-asan
	$(call test_part,$(MAKE) --no-print-directory $(TEST_ASAN) AMQ_SLOW_TESTS=0 unit-runs)
test-part/asan-cli: test-build-asan
	$(call test_part,AMQ=build/asan/amq sh tests/cli/sanitized.sh)
test-part/fuzz: test-build-asan
	$(call test_part,$(MAKE) --no-print-directory $(TEST_ASAN) fuzz-replay)

# Fuzz targets, seed corpora, replay (fuzz/fuzz.mk): make fuzz, fuzz-long, test-fuzz.
include fuzz/fuzz.mk
# Kill-during-save and disk-full tests, ThreadSanitizer (tests/reliability.mk).
include tests/reliability.mk

# ---- demo and benchmarks ---------------------------------------------------------------------
# The peers' own code, built by the bench from AMQ_PEERS when it is there
# (never copied into the repo; `make test` never needs it): each shim under
# bench/peers/ includes the peer's sources when found, and otherwise answers
# "absent" and its rows are skipped with a line saying so.  -O3 (and
# -march=native for the two whose own builds use it), as the peers build
# themselves.
PEER_XORFUSE := $(wildcard $(AMQ_PEERS)/xor_singleheader/include/binaryfusefilter.h)
# (its hashutil.h includes OpenSSL's evp.h: without libssl-dev, skipped too)
PEER_CUCKOO  := $(if $(wildcard /usr/include/openssl/evp.h),$(wildcard \
                  $(AMQ_PEERS)/cuckoofilter/src/cuckoofilter.h))
PEER_LIBFILTER := $(wildcard $(AMQ_PEERS)/libfilter/c/lib/block.c)
PEER_FLAGS := -DAMQB_PEERS_DIR='"$(abspath $(AMQ_PEERS))"'
PEER_OBJ := $(BUILD)/obj/bench/peers/xorfuse.o $(BUILD)/obj/bench/peers/lblock.o
$(BUILD)/obj/bench/peers/xorfuse.o: bench/peers/xorfuse.c $(PEER_XORFUSE)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(PEER_FLAGS) $(if $(PEER_XORFUSE),-DAMQB_HAVE_XORFUSE=1 \
	    -isystem $(AMQ_PEERS)/xor_singleheader/include) $(CFLAGS_ALL) -O3 -c $< -o $@
ifneq ($(PEER_CUCKOO),)
PEER_OBJ += $(BUILD)/obj/bench/peers/cuckooref.o
$(BUILD)/obj/bench/peers/cuckooref.o: bench/peers/cuckooref.cc $(PEER_CUCKOO)
	@mkdir -p $(@D)
	$(CXX) -isystem $(AMQ_PEERS)/cuckoofilter/src $(CXXFLAGS_ALL) -O3 -march=native -c $< -o $@
else
PEER_OBJ += $(BUILD)/obj/bench/peers/cuckooref_absent.o
$(BUILD)/obj/bench/peers/cuckooref_absent.o: bench/peers/cuckooref_absent.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@
endif
ifneq ($(PEER_LIBFILTER),)
PEER_LF_OBJ := $(patsubst %,$(BUILD)/obj/bench/peers/libfilter/%.o,block memory util)
PEER_OBJ += $(PEER_LF_OBJ)
$(BUILD)/obj/bench/peers/libfilter/%.o: $(AMQ_PEERS)/libfilter/c/lib/%.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O3 -march=native -fPIC -w -I$(AMQ_PEERS)/libfilter/c/include -c $< -o $@
endif
$(BUILD)/obj/bench/peers/lblock.o: bench/peers/lblock.c $(PEER_LIBFILTER)
	@mkdir -p $(@D)
	$(CC) $(if $(PEER_LIBFILTER),-DAMQB_HAVE_LIBFILTER=1 \
	    -isystem $(AMQ_PEERS)/libfilter/c/include) $(CFLAGS_ALL) -O3 -march=native -c $< -o $@

$(BUILD)/obj/bench/%.o: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) -Ibench $(BENCH_DEFS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(BUILD)/obj/bench/%.o: bench/%.cc
	@mkdir -p $(@D)
	$(CXX) -Ibench $(CXXFLAGS_ALL) -MMD -MP -c $< -o $@

# The model of efficient/cuckoofilter is built as issue 20 built the reference (-O3
# -march=native): its loops stand for the peer's, so they are compiled as the peer's are.
$(BUILD)/obj/bench/subject_model_cuckoo.o: CFLAGS_ALL += -O3 -march=native
# amq's inline fuse query (amq/fuse_view.h) compiles into this file, as the
# reference's header-inline query into bench/peers/xorfuse.c: both at -O3.
$(BUILD)/obj/bench/static/fuse_bench.o: CFLAGS_ALL += -O3

$(BENCH_BIN): $(BENCH_OBJ) $(PEER_OBJ) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(BENCH_LINK) $(LDFLAGS_ALL) -o $@ $(BENCH_OBJ) $(PEER_OBJ) $(STATIC_LIB) -lbloom $(BENCH_LIBS) \
	    $(LDLIBS_ALL)

# The static kinds beside RocksDB's Ribbon and FastLocalBloom and amq's
# blocked filter at 1M, 10M, 100M keys; writes docs/benchmarks-static.md.
$(STATIC_BENCH): $(BUILD)/obj/bench/static/static_bench.o \
                 $(patsubst %.cc,$(BUILD)/obj/%.o,$(BENCH_CXX_SRC)) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(BENCH_LINK) $(LDFLAGS_ALL) -o $@ $^ $(BENCH_LIBS) $(LDLIBS_ALL)

# amq's binary fuse beside the reference code, alone and with every option
# (writes docs/benchmarks-fuse.md; make bench runs the same section).
$(FUSE_BENCH): $(BUILD)/obj/bench/static/fuse_main.o $(FUSE_H2H_OBJ) \
               $(BUILD)/obj/bench/peers/xorfuse.o $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# Not part of make bench, which runs the same section at 1M, 10M and 100M
# keys (about 20 minutes of its run, 3 reps at 100M); alone it takes as long.
bench-fuse: deps-bench
	@$(MAKE) --no-print-directory $(FUSE_BENCH)
	nice $(FUSE_BENCH) --reps 3 --qreps 5 --md docs/benchmarks-fuse.md

bench-static: deps-bench
	@$(MAKE) --no-print-directory $(STATIC_BENCH)
	nice $(STATIC_BENCH) --md docs/benchmarks-static.md

# Full run: the library against its peers at n = 1M, 10M, 100M
# (docs/benchmarks.md and docs/bench-*.svg; 3 GiB of memory; its log
# prints each section's time and the whole run's), then whole commands
# against theirs (bench-tool: docs/benchmarks-tool.md), with bench-aging and
# bench-cuckoo-arith first.  Nothing else should run meanwhile.
bench: deps-bench
	@$(MAKE) --no-print-directory $(BENCH_BIN)
	$(BENCH_BIN)
	@$(MAKE) --no-print-directory bench-tool

bench-quick: deps-bench
	@$(MAKE) --no-print-directory $(BENCH_BIN)
	$(BENCH_BIN) --quick

test-bench: $(BENCH_BIN) $(AGING_BENCH) $(ARITH_BENCH) $(FUSE_BENCH) $(LAYOUTS_BENCH) $(EXP_BENCH) $(AB_LIB) \
    $(GROWTH_PROTO) $(EXP_STALL) $(PREFETCH_WAIT) $(BUILD)/libamq.so
	@$(BENCH_BIN) --smoke --data $(BUILD)/bench-smoke > $(BUILD)/bench-smoke.log 2>&1 || \
	    { cat $(BUILD)/bench-smoke.log; exit 1; }
	@echo "amq-bench --smoke: ok"
	@$(AGING_BENCH) --smoke > $(BUILD)/bench-aging-smoke.log 2>&1 || \
	    { cat $(BUILD)/bench-aging-smoke.log; exit 1; }
	@echo "aging-bench --smoke: ok"
	@$(ARITH_BENCH) --smoke > $(BUILD)/bench-arith-smoke.log 2>&1 || \
	    { cat $(BUILD)/bench-arith-smoke.log; exit 1; }
	@echo "cuckoo-arith --smoke: ok"
	@$(FUSE_BENCH) --n 20000 --reps 1 > $(BUILD)/bench-fuse-smoke.log 2>&1 || \
	    { cat $(BUILD)/bench-fuse-smoke.log; exit 1; }
	@echo "amq-bench-fuse (n = 20000): ok"
	@$(LAYOUTS_BENCH) --max 3e5 --absent 1e5 --queries 1e5 --speed > $(BUILD)/bench-layouts-smoke.log 2>&1 || \
	    { cat $(BUILD)/bench-layouts-smoke.log; exit 1; }
	@echo "layouts-bench (300,000 keys, every key checked present): ok"
	@$(LAYOUTS_BENCH) --layout quotient --start 16 --max 2.5e6 --absent 1e5 --queries 1e5 --speed \
	    > $(BUILD)/bench-layouts-deep.log 2>&1 || { cat $(BUILD)/bench-layouts-deep.log; exit 1; }
	@echo "layouts-bench quotient from 16 keys to 2.5M (keys out of bits, in the deep list): ok"
	@$(EXP_BENCH) --kind all --max 1e5 --absent 1e5 --queries 1e5 \
	    > $(BUILD)/bench-expandable-smoke.log 2>&1 && \
	    grep -q '^The blocked filter at twice its bytes: one-key query' \
	    $(BUILD)/bench-expandable-smoke.log || { cat $(BUILD)/bench-expandable-smoke.log; exit 1; }
	@echo "expandable-bench, expandable, quotient and pocket kinds to 100,000 keys (every key checked present): ok"
	@$(EXP_BENCH) --add-profile --max 1e5 > $(BUILD)/bench-expandable-profile.log 2>&1 && \
	    grep -q '^One whole cycle, from the end of a growth' $(BUILD)/bench-expandable-profile.log && \
	    grep -q '^| 0.93 to 0.95 | ' $(BUILD)/bench-expandable-profile.log || \
	    { cat $(BUILD)/bench-expandable-profile.log; exit 1; }
	@echo "expandable-bench --add-profile, the quotient kind's add taken apart at 100,000 keys: ok"
	@$(AB_LIB) $(BUILD)/libamq.so $(abspath $(BUILD)/libamq.so) --n 2e5 --chunk 5e4 --rounds 2 \
	    --queries 1e5 --growth 2 > $(BUILD)/bench-ab-lib.log 2>&1 && \
	    grep -q '^answers that differ: 0 of' $(BUILD)/bench-ab-lib.log && \
	    grep -q '^bytes: identical ([0-9]*), after the adds$$' $(BUILD)/bench-ab-lib.log && \
	    grep -q '^ absent keys ' $(BUILD)/bench-ab-lib.log && \
	    grep -q "^growth's adds" $(BUILD)/bench-ab-lib.log || \
	    { cat $(BUILD)/bench-ab-lib.log; exit 1; }
	@echo "ab-lib, one build against itself by two paths (the same answers, the same bytes): ok"
	@$(GROWTH_PROTO) $(BUILD)/libamq.so $(abspath $(BUILD)/libamq.so) --segments 4 --stagger 1.1 \
	    --n 1e5 --absent 1e4 > $(BUILD)/bench-growth-proto.log 2>&1 && \
	    grep -q '^| 100000 | .* | 0 |$$' $(BUILD)/bench-growth-proto.log || \
	    { cat $(BUILD)/bench-growth-proto.log; exit 1; }
	@echo "growth-proto, 4 segments beside one filter, every 97th key present: ok"
	@$(EXP_STALL) --max 1e6 --kind pocket > $(BUILD)/bench-expandable-stall.log 2>&1 && \
	    grep -q '^Kind pocket, grown from 1,000 keys' $(BUILD)/bench-expandable-stall.log && \
	    grep -q '^| 1000000 | ' $(BUILD)/bench-expandable-stall.log || \
	    { cat $(BUILD)/bench-expandable-stall.log; exit 1; }
	@echo "expandable-stall --kind pocket, every add of 1M timed: ok"
	@$(PREFETCH_WAIT) --mib 8 --iters 2e4 --rounds 1 > $(BUILD)/bench-prefetch-wait.log 2>&1 && \
	    grep -q '^| huge (advised) | 200 | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |$$' \
	    $(BUILD)/bench-prefetch-wait.log || { cat $(BUILD)/bench-prefetch-wait.log; exit 1; }
	@echo "prefetch-wait, an 8 MiB table: ok"

# Two builds of libamq in one process, by turns (scripts/ab-lib.sh): public
# functions only, through dlopen.
$(AB_LIB): bench/expandable/ab-lib.c bench/expandable/bench_common.h bench/expandable/bench_dl.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -Ibench/expandable -o $@ $< -ldl

# The quotient kind at another growth factor, whole or in segments, beside
# the shipped one (scripts/growth-proto.sh builds the other library).
$(GROWTH_PROTO): bench/expandable/growth-proto.c bench/expandable/bench_common.h \
    bench/expandable/bench_dl.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -Ibench/expandable -o $@ $< -ldl -lm

# The expandable, quotient and pocket kinds grown from 1,000 keys against
# filters sized in advance, the scalable Bloom filter and the peer taffy
# cuckoo filter (built from LIBFILTER's sources when that tree is present;
# never copied into the repo), ending with a verdict per criterion of issue
# 44.  EXP_KIND: expandable, quotient, pocket, both (the first two) or all
# (the default).
LIBFILTER ?= $(firstword $(wildcard ../shared/peers/libfilter ../../shared/peers/libfilter))
EXP_TAFFY_SRC := $(wildcard $(LIBFILTER)/c/lib/taffy-cuckoo.c $(LIBFILTER)/c/lib/memory.c $(LIBFILTER)/c/lib/util.c)
$(EXP_BENCH): bench/expandable/expandable-bench.c bench/expandable/taffy_shim.c \
    bench/expandable/rb_peer.h bench/expandable/bench_common.h $(STATIC_LIB)
	@mkdir -p $(@D)
ifneq ($(EXP_TAFFY_SRC),)
	$(CC) -std=c11 -O2 -march=native -w -I$(LIBFILTER)/c/include -Ibench/expandable -c \
	    bench/expandable/taffy_shim.c -o $(BUILD)/bench/taffy_shim.o
	for s in $(EXP_TAFFY_SRC); do $(CC) -std=c11 -O2 -march=native -w -I$(LIBFILTER)/c/include \
	    -c $$s -o $(BUILD)/bench/peer_$$(basename $$s .c).o || exit 1; done
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -DHAVE_TAFFY -Ibench/expandable -o $@ $< \
	    $(BUILD)/bench/taffy_shim.o $(patsubst $(LIBFILTER)/c/lib/%.c,$(BUILD)/bench/peer_%.o,$(EXP_TAFFY_SRC)) \
	    $(STATIC_LIB) $(LDLIBS_ALL) -lm -ldl
else
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -Ibench/expandable -o $@ $< $(STATIC_LIB) $(LDLIBS_ALL) -ldl
endif

# RedisBloom's own module (the oracle, never part of the repo): when it is there, the bench also
# grows RedisBloom's scalable Bloom filter with its own code (rb_peer.h).
RB_ORACLE ?= $(firstword $(wildcard ../shared/oracle/redisbloom-*.so ../../shared/oracle/redisbloom-*.so))

bench-expandable: deps-bench
	@$(MAKE) --no-print-directory $(EXP_BENCH)
	$(EXP_BENCH) --max $(or $(EXP_MAX),1e8) --kind $(or $(EXP_KIND),all) \
	    $(if $(RB_ORACLE),--redisbloom $(RB_ORACLE))

# A kind grown from 1,000 keys to EXP_1E9_MAX (default 1e9), --grow-only:
# the rate at every power of ten and the bits per key, printed and written as
# docs/pocket-1e9.svg (gnuplot) and docs/pocket-1e9.md, or expandable-1e9.* for
# the other kinds (EXP_1E9_OUT: another directory).  EXP_KIND: pocket (the default here), quotient,
# expandable or both (the last two).  The script's header has the memory and time it needs.
bench-expandable-1e9: deps
	BUILD=$(BUILD) scripts/expandable-1e9.sh --kind $(or $(EXP_KIND),pocket) \
	    $(if $(EXP_1E9_OUT),--out $(EXP_1E9_OUT)) $(or $(EXP_1E9_MAX),1e9)

# The worst single add of a growing kind (EXP_STALL_KIND: expandable, the default, quotient or
# pocket) grown to EXP_STALL_MAX keys (the expandable kind's doubling is spread over the adds:
# no add copies the whole table; a pocket growth rewrites one segment).
$(EXP_STALL): bench/expandable/expandable-stall.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -o $@ $< $(STATIC_LIB) $(LDLIBS_ALL)

bench-expandable-stall: $(EXP_STALL)
	$(EXP_STALL) --max $(or $(EXP_STALL_MAX),5e7) --kind $(or $(EXP_STALL_KIND),expandable)

# What a prefetch of a line not in cache costs the instructions behind it
# (the pocket kind's add: docs/expandable-log.md), on a table of
# PREFETCH_WAIT_MIB MiB (default 276).
$(PREFETCH_WAIT): bench/expandable/prefetch-wait.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -o $@ $<

bench-prefetch-wait: $(PREFETCH_WAIT)
	$(PREFETCH_WAIT) --mib $(or $(PREFETCH_WAIT_MIB),276)

# Two prototype layouts for an expandable filter whose memory follows its
# keys and the quotient kind (kind 12, the third prototype made a kind),
# grown from 1,000 keys to LAYOUTS_MAX: rate, bits per key beside the cuckoo
# filter at the same rate, times beside the blocked filter
# (docs/expandable-log.md).  Measurement only: the prototypes are not in libamq.
LAYOUTS_SRC := bench/expandable/layouts-bench.c bench/expandable/layout_chunks.c \
               bench/expandable/layout_lines.c
$(LAYOUTS_BENCH): $(LAYOUTS_SRC) $(wildcard bench/expandable/layout_*.h) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -march=native -Ibench/expandable -o $@ $(LAYOUTS_SRC) \
	    $(STATIC_LIB) $(LDLIBS_ALL)

bench-expandable-layouts: deps-bench
	@$(MAKE) --no-print-directory $(LAYOUTS_BENCH)
	$(LAYOUTS_BENCH) --max $(or $(LAYOUTS_MAX),1e8)

# The aging filter against two rotated blocked Bloom filters of the same
# memory (writes docs/bench-aging.md and docs/bench-aging.svg; a few minutes).
$(AGING_BENCH): bench/aging/aging-bench.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -o $@ $< $(STATIC_LIB) $(LDLIBS_ALL)

bench-aging: deps-bench
	@$(MAKE) --no-print-directory $(AGING_BENCH)
	$(AGING_BENCH) --out docs --data $(BUILD)

bench: bench-aging

# The cuckoo query's arithmetic, layout by layout, beside the reference's
# (issue 20; writes docs/bench-cuckoo-arith.md, under a minute).  Built as
# the model of the reference is, -O3 -march=native: every variant alike.
$(ARITH_BENCH): bench/cuckoo/cuckoo-arith.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -O3 -march=native -o $@ $<

bench-cuckoo-arith:
	@$(MAKE) --no-print-directory $(ARITH_BENCH)
	nice $(ARITH_BENCH) > docs/bench-cuckoo-arith.md.tmp && \
	    mv docs/bench-cuckoo-arith.md.tmp docs/bench-cuckoo-arith.md

bench: bench-cuckoo-arith

# Where 1-slot cuckoo buckets first refuse an add, by width and table size (the
# sizing's rule for them, docs/cuckoo.md; about a minute).
ONE_SLOT_BENCH := $(BUILD)/bench/cuckoo-one-slot
$(ONE_SLOT_BENCH): bench/cuckoo/one-slot.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_PUB) $(CFLAGS_ALL) -o $@ $< $(STATIC_LIB) $(LDLIBS_ALL)

bench-cuckoo-one-slot:
	@$(MAKE) --no-print-directory $(ONE_SLOT_BENCH)
	$(ONE_SLOT_BENCH) --widths 10,12,14,16 --slots 2.5e6,1e7,4e7,1.6e8

demo: deps
	@$(MAKE) --no-print-directory all
	@scripts/demo.sh $(BUILD)/amq

# AMQ.MEXISTS beside BF.MEXISTS: filters of these many keys (docs/redis-bench-amq.md).
AMQ_BENCH_SIZES ?= 1000000,100000000

bench-redis: deps-test
	@$(MAKE) --no-print-directory $(REDIS_MODULE) $(BUILD)/amq
	@/usr/bin/python3 tests/redis/bench.py --module $(REDIS_MODULE) --out docs/redis-bench.md
	@/usr/bin/python3 tests/redis/bench_amq.py --module $(REDIS_MODULE) --amq $(BUILD)/amq \
	    --sizes $(AMQ_BENCH_SIZES) --out docs/redis-bench-amq.md

# contains_many of a sharded filter over 1 shard against N shards of a loopback cluster, for
# the BF, CF and AMQ.* backends (and partition routing), and the per-command costs
# docs/cluster.md's model uses (writes docs/bench-cluster.md).
bench-cluster: deps-test
	@$(MAKE) --no-print-directory $(REDIS_MODULE) python $(BUILD)/amq
	@/usr/bin/python3 tests/redis/bench_cluster.py --module $(REDIS_MODULE) \
	    --python $(CURDIR)/$(BUILD)/python --amq $(CURDIR)/$(BUILD)/amq --out docs/bench-cluster.md

# Whole commands against their peers (sort -u, awk, dcso bloom); writes
# docs/benchmarks-tool.md.  NAMES=0 skips the 200M-name row (3.6 GB of data).
bench-tool: deps-bench
	@$(MAKE) --no-print-directory all
	@bench/tool/tool-bench.sh $(BUILD)/amq


# ---- Python package (python/, docs/python.md) ------------------------------------------
# The extension for Debian's /usr/bin/python3 (which sees python3-numpy and
# python3-pytest), built by the package's own backend into $(BUILD)/python.
PYTHON ?= /usr/bin/python3
python: $(STATIC_LIB)
	@AMQ_BUILD_DIR=$(BUILD) $(PYTHON) python/buildtool/amq_build.py --inplace $(BUILD)/python \
	    >/dev/null

# The Python suite with the extension and libamq built with ASan + UBSan, the runtime preloaded
# into Debian's python3 (scripts/test-python-asan.sh).  Not in make test: .ci/run calls it.
test-python-asan: deps-test python $(BUILD)/amq $(REDIS_MODULE)
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 WERROR=1 build/asan/libamq.a
	@CC=$(CC) scripts/test-python-asan.sh $(BUILD)

test-python: python $(BUILD)/amq $(REDIS_MODULE)
	@cd python/tests && AMQ_BIN=$(CURDIR)/$(BUILD)/amq PYTHONPATH=$(CURDIR)/$(BUILD)/python \
	    AMQ_BUILD_DIR=$(CURDIR)/$(BUILD) $(PYTHON) -m pytest -q -p no:cacheprovider .
	@# the .pyi stubs say what the extension takes (Debian's python3-mypy)
	@cd $(BUILD)/python && $(PYTHON) -m mypy.stubtest amq

# Python's set, the C library's batched query and the amq tool, same keys
# (writes docs/benchmarks-python.md).
bench-python: deps-test
	@$(MAKE) --no-print-directory python $(BUILD)/amq $(BENCH_BIN)
	@PYTHONPATH=$(CURDIR)/$(BUILD)/python $(PYTHON) python/bench/bench_python.py \
	    --amq $(BUILD)/amq --out docs/benchmarks-python.md

# ---- install --------------------------------------------------------------------------------------
install: all
	install -d $(DESTDIR)$(includedir)/amq $(DESTDIR)$(libdir)/pkgconfig \
	    $(DESTDIR)$(bindir) $(DESTDIR)$(mandir)/man1
	install -m 644 include/amq.h $(DESTDIR)$(includedir)/amq.h
	install -m 644 include/amq/*.h $(DESTDIR)$(includedir)/amq/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(libdir)/libamq.a
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(libdir)/libamq.so.$(VERSION)
	ln -sf libamq.so.$(VERSION) $(DESTDIR)$(libdir)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(libdir)/libamq.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(libdir)|g' \
	    -e 's|@INCLUDEDIR@|$(includedir)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    amq.pc.in > $(DESTDIR)$(libdir)/pkgconfig/amq.pc
	install -m 755 $(BUILD)/amq $(DESTDIR)$(bindir)/amq
	sed -e '1s|"amq [0-9.]*"|"amq $(VERSION)"|' docs/amq.1 > $(DESTDIR)$(mandir)/man1/amq.1
	chmod 644 $(DESTDIR)$(mandir)/man1/amq.1
	install -d $(DESTDIR)$(datadir)/bash-completion/completions $(DESTDIR)$(datadir)/zsh/site-functions
	install -m 644 completions/amq.bash $(DESTDIR)$(datadir)/bash-completion/completions/amq
	install -m 644 completions/_amq $(DESTDIR)$(datadir)/zsh/site-functions/_amq
	install -d $(DESTDIR)$(libdir)/amq
	install -m 755 $(REDIS_MODULE) $(DESTDIR)$(libdir)/amq/amq.so

uninstall:
	rm -f $(DESTDIR)$(includedir)/amq.h
	rm -rf $(DESTDIR)$(includedir)/amq
	rm -f $(DESTDIR)$(libdir)/libamq.a $(DESTDIR)$(libdir)/libamq.so* \
	    $(DESTDIR)$(libdir)/pkgconfig/amq.pc $(DESTDIR)$(bindir)/amq \
	    $(DESTDIR)$(mandir)/man1/amq.1 \
	    $(DESTDIR)$(datadir)/bash-completion/completions/amq \
	    $(DESTDIR)$(datadir)/zsh/site-functions/_amq $(DESTDIR)$(libdir)/amq/amq.so
	-rmdir $(DESTDIR)$(libdir)/amq 2>/dev/null

format:
	clang-format -i include/*.h include/amq/*.h src/*.c src/common/*.[ch] cli/*.[ch]

clean:
	rm -rf build

# Keep objects of tests and tools (not intermediates to delete).
.SECONDARY:

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(REDIS_OBJ:.o=.d) $(BENCH_OBJ:.o=.d) \
    $(BUILD)/obj/bench/static/fuse_main.d $(BUILD)/obj/bench/static/static_bench.d \
    $(patsubst $(BUILD)/tests/%,$(BUILD)/obj/tests/unit/%.d,$(TEST_BIN)) $(TEST_SUPPORT:.o=.d)
