# Private Docker engine for the compose test (see mk/dockerd.sh).
#
#   make dockerd-deps   apt-get install docker.io and docker-compose when missing (root only)
#   make dockerd-up     a private engine under .tmp/docker, for trying deploy/compose.yaml
#                       by hand (`. .tmp/docker/env` sets DOCKER_HOST)
#   make dockerd-down   stop it and remove its state
#
# TestComposeDeployment (services/e2e) starts and stops an engine of its
# own with mk/dockerd.sh; `make test` only installs the packages and
# grpcurl. SYNCPOD_TEST_COMPOSE_V2 may name a compose v2 binary to test
# as well as Debian's docker-compose.

DOCKERD_DIR := $(CURDIR)/.tmp/docker

export SYNCPOD_TEST_GRPCURL ?= $(GRPCURL)
# Required (no engine = FAIL, not skip) in CI and as root, where
# dockerd-deps installs it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_DOCKER ?= 1
endif

.PHONY: dockerd-deps dockerd-up dockerd-down

dockerd-deps:
	@mk/dockerd.sh deps

dockerd-up: dockerd-deps
	@mk/dockerd.sh up $(DOCKERD_DIR)
	@echo "engine up: . $(DOCKERD_DIR)/env   (sets DOCKER_HOST)"

dockerd-down:
	@mk/dockerd.sh down $(DOCKERD_DIR)

test-setup:: dockerd-deps $(GRPCURL)
