# Private Docker engine for the compose test (see mk/dockerd.sh).
#
#   make dockerd-deps   apt-get install docker.io and docker-compose when missing (root only)
#   make dockerd-up     a private engine under .tmp/docker, for trying deploy/compose.yaml
#                       by hand (`. .tmp/docker/env` sets DOCKER_HOST)
#   make dockerd-down   stop it and remove its state
#
#   make compose-build  build the current Docker Compose (v5, the `docker compose`
#                       plugin) from the Go module proxy, once per version, into
#                       /var/cache/syncpod/compose (mk/composebin.sh)
#
# TestComposeDeployment (services/e2e) starts and stops an engine of its
# own with mk/dockerd.sh, and brings deploy/compose.yaml up with Debian's
# docker-compose 1.29.2 and with the current Compose that compose-build
# made (SYNCPOD_TEST_COMPOSE_CURRENT may name another binary); `make test`
# installs the packages, grpcurl and that build.

DOCKERD_DIR := $(CURDIR)/.tmp/docker

export SYNCPOD_TEST_GRPCURL ?= $(GRPCURL)
# Required (no engine = FAIL, not skip) in CI and as root, where
# dockerd-deps installs it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_DOCKER ?= 1
endif

# Not COMPOSE_*: docker compose reads its settings from such variables.
DOCKER_COMPOSE_VERSION ?= v5.6.0
export DOCKER_COMPOSE_VERSION

.PHONY: dockerd-deps dockerd-up dockerd-down compose-build

dockerd-deps:
	@mk/dockerd.sh deps

# Like containerd 2.x and the Kubernetes binaries, a one-time build kept
# outside the clone and timed on its own; only as root, where the compose
# test runs.
compose-build:
	@if [ "$$(id -u)" -ne 0 ]; then echo "compose: not root: no Docker Compose $(DOCKER_COMPOSE_VERSION) (the compose test will SKIP)" >&2; exit 0; fi; \
	if bin=$$(GO=$(GO) mk/composebin.sh --cached 2>/dev/null); then \
	  echo "compose: Docker Compose $(DOCKER_COMPOSE_VERSION) cached at $$bin"; \
	else \
	  echo "compose: building Docker Compose $(DOCKER_COMPOSE_VERSION) once (not part of the test time; cached outside the clone)"; \
	  start=$$(date +%s); GO=$(GO) mk/composebin.sh >/dev/null || exit 1; \
	  echo "compose: one-time build of Docker Compose $(DOCKER_COMPOSE_VERSION): $$(( $$(date +%s) - start )) s"; \
	fi

dockerd-up: dockerd-deps
	@mk/dockerd.sh up $(DOCKERD_DIR)
	@echo "engine up: . $(DOCKERD_DIR)/env   (sets DOCKER_HOST)"

dockerd-down:
	@mk/dockerd.sh down $(DOCKERD_DIR)

test-setup:: dockerd-deps compose-build $(GRPCURL)
