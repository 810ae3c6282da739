# critest, cri-tools' CRI validation suite, against syncpod-crisim, inside
# a throwaway root filesystem (mk/critest.sh; never on the host: critest's
# specs change the system they run on).
#
#   make critest        the focused set (CRITEST_FOCUS); part of `make test`
#   make critest-full   every spec; writes .tmp/critest/full/passed.txt and
#                       failed.txt (which specs a host-process runtime
#                       passes: see docs/design.md, "crisim and critest")
#
# Both need root (namespaces and a tmpfs root) and busybox-static, which
# `make containerd-deps` installs.

CRITEST_VERSION := v1.37.0
CRITEST         := $(BIN)/critest
CRITEST_DIR     := $(CURDIR)/.tmp/critest
CRITEST_SH      := $(CURDIR)/mk/critest.sh
# The CRI lifecycle every runtime the executor drives must get right:
# sandboxes and containers created, started, stopped (also when unknown or
# already stopped) and removed (also while running), exec, stats, and
# Version and Status.
CRITEST_FOCUS   := should support basic operations|Runtime info|Idempotence

.PHONY: critest critest-full

$(CRITEST): mk/critestbin.sh
	@mk/critestbin.sh $@ $(CRITEST_VERSION)

# critest_report DIR: count the specs of DIR/critest.xml by outcome into
# DIR/passed.txt and DIR/failed.txt, and print the counts.
critest_report = names() { grep -o "<testcase name=\"\[It\] [^\"]*\" classname=\"[^\"]*\" status=\"$$1\"" $(1)/critest.xml | sed 's/^<testcase name="\[It\] \(.*\)" classname=.*/\1/' | sort; }; \
	names passed > $(1)/passed.txt || true; names failed > $(1)/failed.txt || true; \
	echo "critest on crisim: $$(wc -l < $(1)/passed.txt) passed, $$(wc -l < $(1)/failed.txt) failed (lists in $(1))"

critest: $(CRITEST) build-run containerd-deps
	@rm -rf $(CRITEST_DIR)/focused && mkdir -p $(CRITEST_DIR)
	@rc=0; $(CRITEST_SH) $(CRITEST) $(BIN)/syncpod-crisim $(HOST_BUSYBOX) $(CRITEST_DIR)/focused \
	  --ginkgo.focus '$(CRITEST_FOCUS)' --ginkgo.fail-on-empty > $(CRITEST_DIR)/focused.log 2>&1 || rc=$$?; \
	  tail -n 4 $(CRITEST_DIR)/focused.log; $(call critest_report,$(CRITEST_DIR)/focused); \
	  [ $$rc -eq 0 ] || { cat $(CRITEST_DIR)/focused.log; exit $$rc; }

critest-full: $(CRITEST) build-run containerd-deps
	@rm -rf $(CRITEST_DIR)/full && mkdir -p $(CRITEST_DIR)
	@$(CRITEST_SH) $(CRITEST) $(BIN)/syncpod-crisim $(HOST_BUSYBOX) $(CRITEST_DIR)/full > $(CRITEST_DIR)/full.log 2>&1 || true; \
	  tail -n 4 $(CRITEST_DIR)/full.log; $(call critest_report,$(CRITEST_DIR)/full)

# In `make test` (root), after the unit tests.
ifeq ($(shell id -u),0)
unit-extra:: critest
endif
