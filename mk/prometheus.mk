# Prometheus from Debian for the end-to-end metrics test.
#
#   make prometheus-deps   install Debian's prometheus when missing (root only),
#                          without letting its package start a system service
#
# policy-rc.d (exit 101) keeps the package from starting a service, so
# nothing has to be stopped afterwards (and nothing is ever ended by name).
# The test starts its own prometheus on a free loopback port with a config
# scraping the syncpod binaries it started, and stops it again.

PROMETHEUS_BIN ?= /usr/bin/prometheus

export SYNCPOD_TEST_PROMETHEUS ?= $(PROMETHEUS_BIN)
# Required (missing prometheus = FAIL, not skip) in CI and as root, where
# prometheus-deps installs it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_PROMETHEUS ?= 1
endif

.PHONY: prometheus-deps

prometheus-deps:
	@if [ -x "$(PROMETHEUS_BIN)" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then \
		echo "prometheus-deps: $(PROMETHEUS_BIN) is missing and this is not root: the metrics e2e test will SKIP"; exit 0; \
	fi; \
	policy=/usr/sbin/policy-rc.d; had_policy=0; [ -e $$policy ] && had_policy=1; \
	if [ $$had_policy = 0 ]; then printf '#!/bin/sh\nexit 101\n' > $$policy; chmod +x $$policy; fi; \
	rc=0; { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends prometheus; } || rc=$$?; \
	if [ $$had_policy = 0 ]; then rm -f $$policy; fi; \
	exit $$rc

test-setup:: prometheus-deps
