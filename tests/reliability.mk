# reliability.mk - fault tests and ThreadSanitizer runs (included by the
# Makefile; docs/reliability.md lists what each one promises).
#
#   make test-faults   SIGKILL during saves (CRASH_KILLS kills, CRASH_SEED),
#                      disk full (tmpfs when root, RLIMIT_FSIZE always)
#   make tsan          the unit-test programs named in TSAN_TESTS, built with
#                      -fsanitize=thread (kinds with concurrency tests append
#                      their program: TSAN_TESTS += test_<name>)

CRASH_KILLS ?= 300
CRASH_SEED ?= 1
TSAN_TESTS += test_concurrent

.PHONY: test-faults tsan test-tsan

$(BUILD)/tests/faults/crash_kill: tests/faults/crash_kill.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $<

test-faults: $(BUILD)/amq $(BUILD)/tests/faults/crash_kill
	@$(BUILD)/tests/faults/crash_kill $(BUILD)/amq $(CRASH_KILLS) $(CRASH_SEED)
	@AMQ=$(BUILD)/amq sh tests/faults/disk_full.sh

tsan:
	@$(MAKE) --no-print-directory BUILD=build/tsan TSAN=1 WERROR=1 \
	    $(patsubst %,build/tsan/tests/%,$(sort $(TSAN_TESTS)))
	@TSAN_OPTIONS="halt_on_error=1 $(TSAN_OPTIONS)" AMQ_SLOW_TESTS=0 \
	    scripts/run-tests.sh $(patsubst %,build/tsan/tests/%,$(sort $(TSAN_TESTS)))

test-tsan: tsan
