# reliability.mk - fault tests and ThreadSanitizer runs (included by the
# Makefile; docs/reliability.md lists what each one promises).
#
#   make test-faults   SIGKILL during saves (CRASH_KILLS kills, CRASH_SEED),
#                      disk full (tmpfs when root, RLIMIT_FSIZE always)
#   make tsan          (the Makefile's rule) the unit-test programs named in
#                      TSAN_TESTS, built with -fsanitize=thread; this file
#                      appends the readers-on-every-kind test

CRASH_KILLS ?= 400
CRASH_SEED ?= 1
TSAN_TESTS += test_concurrent

.PHONY: test-faults test-tsan

$(BUILD)/tests/faults/crash_kill: tests/faults/crash_kill.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< -lxxhash

test-faults: $(BUILD)/amq $(BUILD)/tests/faults/crash_kill
	@$(BUILD)/tests/faults/crash_kill $(BUILD)/amq $(CRASH_KILLS) $(CRASH_SEED)
	@AMQ=$(BUILD)/amq sh tests/faults/disk_full.sh

test-tsan: tsan
