# fuzz.mk - fuzz targets, their seed corpora and their replay (included by
# the Makefile; docs/reliability.md explains how to add a target).
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="fuzz_container ..."]
#                      libFuzzer (clang), each target for FUZZ_SECONDS; the
#                      corpus grows in build/fuzz/corpus/<target>/, crashers
#                      land in build/fuzz/artifacts/<target>/, logs in
#                      build/fuzz/logs/
#   make fuzz-long     the same, 10 minutes per target
#   make test-fuzz     (part of make test) replays the generated seeds and
#                      fuzz/regressions/<target>/ through every target with a
#                      plain driver built with ASan + UBSan (no libFuzzer)

FUZZ_TARGETS ?= $(sort $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c)))
FUZZ_SECONDS ?= 60
FUZZ_LONG_SECONDS ?= 600
FUZZ_CC ?= clang
FUZZ_FLAGS ?=
FUZZ_DIR := build/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# Targets compile in pieces of the tool (cli/ sources) and the shared headers.
FUZZ_DEPS := $(wildcard fuzz/*.h) $(wildcard cli/*.c cli/*.h redis/*.c redis/*.h)
# zlib: the CLI targets compile in the tool's gzip reader.
FUZZ_LDLIBS = $(LDLIBS_ALL) -lz -lzstd -llzma -lbz2

.PHONY: fuzz fuzz-long fuzz-bins fuzz-lib fuzz-seeds test-fuzz fuzz-replay

# ---- libFuzzer builds (clang) ---------------------------------------------------------
# The library with coverage instrumentation, by a sub-make in its own build dir
# (where the Makefile's own rule builds it).
ifneq ($(BUILD),$(FUZZ_DIR)/lib)
$(FUZZ_DIR)/lib/libamq.a: $(LIB_SRC) $(wildcard src/*.h src/common/*.h include/*.h include/amq/*.h)
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_DIR)/lib CC=$(FUZZ_CC) OPT=-O1 WERROR=1 \
	    EXTRA_CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" EXTRA_LDFLAGS="$(FUZZ_SAN)" \
	    $(FUZZ_DIR)/lib/libamq.a

endif

fuzz-lib: $(FUZZ_DIR)/lib/libamq.a

$(FUZZ_DIR)/bin/%: fuzz/%.c $(FUZZ_DEPS) $(FUZZ_DIR)/lib/libamq.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS_ALL) -DAMQ_ADVANCED_API -Ifuzz -std=c11 -O1 -g $(WARN) -Werror $(FUZZ_SAN) \
	    -fsanitize=fuzzer -o $@ $< $(FUZZ_DIR)/lib/libamq.a $(FUZZ_LDLIBS)

fuzz-bins: $(patsubst %,$(FUZZ_DIR)/bin/%,$(FUZZ_TARGETS))

fuzz-seeds: $(BUILD)/fuzz/fuzz-seeds
	@rm -rf $(FUZZ_DIR)/seeds && mkdir -p $(FUZZ_DIR)
	@$(BUILD)/fuzz/fuzz-seeds $(FUZZ_DIR)/seeds

fuzz: deps-test fuzz-bins fuzz-seeds
	@fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_DIR) $(FUZZ_TARGETS)

fuzz-long:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_LONG_SECONDS)

# ---- replay without libFuzzer (any compiler; make test uses the ASan build) ------------
$(BUILD)/fuzz/fuzz-seeds: fuzz/seeds.c $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) -DAMQ_ADVANCED_API $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(STATIC_LIB) $(FUZZ_LDLIBS)

$(BUILD)/fuzz/replay_%: fuzz/%.c fuzz/replay.c $(FUZZ_DEPS) $(STATIC_LIB)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS_ALL) -DAMQ_ADVANCED_API -Ifuzz $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< fuzz/replay.c \
	    $(STATIC_LIB) $(FUZZ_LDLIBS)

# Each target's replay a target of its own, so that make -j runs them side by side; the
# seeds are generated afresh first.
FUZZ_REPLAYS := $(patsubst %,fuzz-replay/%,$(FUZZ_TARGETS))
.PHONY: $(FUZZ_REPLAYS) fuzz-corpus-seeds
fuzz-replay: $(FUZZ_REPLAYS)
fuzz-corpus-seeds: $(BUILD)/fuzz/fuzz-seeds
	@rm -rf $(BUILD)/fuzz/corpus-seeds
	@$(BUILD)/fuzz/fuzz-seeds $(BUILD)/fuzz/corpus-seeds
$(FUZZ_REPLAYS): fuzz-replay/%: $(BUILD)/fuzz/replay_% fuzz-corpus-seeds
	@$(BUILD)/fuzz/replay_$* $(BUILD)/fuzz/corpus-seeds/$* fuzz/regressions/$*

test-fuzz:
	@$(MAKE) --no-print-directory BUILD=build/asan SAN=1 WERROR=1 fuzz-replay

# ---- coverage of the library by the corpora (clang source-based coverage) --------------
#   make fuzz-cov      replays build/fuzz/corpus/<target> (what make fuzz grew), the
#                      seeds and the regressions through coverage-instrumented
#                      replay binaries and prints llvm-cov's report for src/
#                      (also in build/fuzz-cov/report.txt)
FUZZ_COV_DIR := build/fuzz-cov
FUZZ_COV_FLAGS := -fprofile-instr-generate -fcoverage-mapping
LLVM_PROFDATA ?= llvm-profdata
LLVM_COV ?= llvm-cov

.PHONY: fuzz-cov

ifneq ($(BUILD),$(FUZZ_COV_DIR)/lib)
$(FUZZ_COV_DIR)/lib/libamq.a: $(LIB_SRC) $(wildcard src/*.h src/common/*.h include/*.h include/amq/*.h)
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_COV_DIR)/lib CC=$(FUZZ_CC) OPT=-O1 WERROR=1 \
	    EXTRA_CFLAGS="$(FUZZ_COV_FLAGS)" EXTRA_LDFLAGS="$(FUZZ_COV_FLAGS)" \
	    $(FUZZ_COV_DIR)/lib/libamq.a
endif

$(FUZZ_COV_DIR)/bin/%: fuzz/%.c fuzz/replay.c $(FUZZ_DEPS) $(FUZZ_COV_DIR)/lib/libamq.a
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS_ALL) -DAMQ_ADVANCED_API -Ifuzz -std=c11 -O1 -g $(WARN) -Werror $(FUZZ_COV_FLAGS) \
	    -o $@ $< fuzz/replay.c $(FUZZ_COV_DIR)/lib/libamq.a $(FUZZ_LDLIBS)

fuzz-cov: $(patsubst %,$(FUZZ_COV_DIR)/bin/%,$(FUZZ_TARGETS)) fuzz-seeds
	@rm -rf $(FUZZ_COV_DIR)/prof && mkdir -p $(FUZZ_COV_DIR)/prof
	@for t in $(FUZZ_TARGETS); do \
	    LLVM_PROFILE_FILE=$(FUZZ_COV_DIR)/prof/$$t.profraw $(FUZZ_COV_DIR)/bin/$$t -q \
	        $(FUZZ_DIR)/corpus/$$t $(FUZZ_DIR)/seeds/$$t fuzz/regressions/$$t || exit 1; \
	done
	@$(LLVM_PROFDATA) merge -o $(FUZZ_COV_DIR)/all.profdata $(FUZZ_COV_DIR)/prof/*.profraw
	@$(LLVM_COV) report $(FUZZ_COV_DIR)/bin/$(firstword $(FUZZ_TARGETS)) \
	    $(patsubst %,-object $(FUZZ_COV_DIR)/bin/%,$(wordlist 2,99,$(FUZZ_TARGETS))) \
	    -instr-profile=$(FUZZ_COV_DIR)/all.profdata $(LIB_SRC) $(wildcard cli/*.c) \
	    | tee $(FUZZ_COV_DIR)/report.txt
