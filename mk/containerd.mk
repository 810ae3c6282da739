# Real containerd for the integration tests (see mk/containerd.md).
#
#   make containerd-deps     apt-get install the Debian packages when missing (root only)
#   make containerd-images   OCI image tarballs built locally from busybox-static
#   make containerd-up       private containerd under .tmp/containerd/, images imported
#   make containerd-down     stop it, kill its shims and containers, unmount, remove state
#   make containerd-status   exit 0 when it answers
#
# `make test` runs deps, images and up before `make unit`, and down after.

CONTAINERD_DIR      := $(CURDIR)/.tmp/containerd
CONTAINERD_IMAGES   := $(CURDIR)/.tmp/images
CONTAINERD_SH       := $(CURDIR)/mk/containerd.sh
MKIMAGE             := $(BIN)/syncpod-mkimage
MKIMAGE_SRCS        := $(wildcard services/cmd/syncpod-mkimage/*.go services/ociimage/*.go)
# Tarballs are named after the image, so another name means another file.
image_tar = $(CONTAINERD_IMAGES)/$(subst :,_,$(subst /,_,$(1))).tar
HOST_BUSYBOX        := /bin/busybox

# The environment contract of the containerd tests (services/containerdtest).
# `?=` lets a caller point the tests at another containerd.
export SYNCPOD_TEST_CONTAINERD_ENDPOINT ?= unix://$(CONTAINERD_DIR)/containerd.sock
export SYNCPOD_TEST_PAUSE_IMAGE         ?= localhost/syncpod/pause:3.10
export SYNCPOD_TEST_BUSYBOX_IMAGE       ?= localhost/syncpod/busybox:1.36
# Required (unreachable containerd = FAIL, not skip) in CI and as root, where
# the targets above can always provide it.
ifneq ($(filter true 1 yes,$(CI))$(filter 0,$(shell id -u)),)
export SYNCPOD_TEST_REQUIRE_CONTAINERD ?= 1
endif

PAUSE_IMAGE_TAR     := $(call image_tar,$(SYNCPOD_TEST_PAUSE_IMAGE))
BUSYBOX_IMAGE_TAR   := $(call image_tar,$(SYNCPOD_TEST_BUSYBOX_IMAGE))

.PHONY: containerd-deps containerd-images containerd-up containerd-down containerd-status

containerd-deps:
	@$(CONTAINERD_SH) deps

# Images need busybox-static, hence deps first. Checked in the recipe, not
# with $(wildcard), because deps may have installed it a moment ago.
containerd-images: containerd-deps
	@if [ -e $(HOST_BUSYBOX) ]; then \
		$(MAKE) --no-print-directory $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR); \
	else \
		echo "containerd-harness: $(HOST_BUSYBOX) missing (apt-get install busybox-static): no images, containerd tests will SKIP" >&2; \
	fi

$(MKIMAGE): $(MKIMAGE_SRCS) services/go.mod
	$(STATIC_GO) build -trimpath -o $@ ./services/cmd/syncpod-mkimage

$(PAUSE_IMAGE_TAR): $(MKIMAGE) $(HOST_BUSYBOX)
	@mkdir -p $(@D)
	$(MKIMAGE) -kind pause -name $(SYNCPOD_TEST_PAUSE_IMAGE) -busybox $(HOST_BUSYBOX) -out $@

$(BUSYBOX_IMAGE_TAR): $(MKIMAGE) $(HOST_BUSYBOX)
	@mkdir -p $(@D)
	$(MKIMAGE) -kind busybox -name $(SYNCPOD_TEST_BUSYBOX_IMAGE) -busybox $(HOST_BUSYBOX) -out $@

containerd-up: containerd-images
	@$(CONTAINERD_SH) up $(CONTAINERD_DIR) $(SYNCPOD_TEST_PAUSE_IMAGE) $(SYNCPOD_TEST_BUSYBOX_IMAGE) $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR)

containerd-down:
	@$(CONTAINERD_SH) down $(CONTAINERD_DIR)

containerd-status:
	@$(CONTAINERD_SH) status $(CONTAINERD_DIR)

test-setup:: containerd-deps containerd-images containerd-up
test-teardown:: containerd-down
