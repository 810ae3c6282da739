# The fault, flood and crash-consistency suite at full size.
#
#   make soak   SIGKILLs of planner, executor and PLEG under churn (68), crisim
#               SIGKILLed and restarted, a hung CRI call, 100 clients with 200
#               calls each, 30 pods x 64 containers in evented mode, a
#               2,000-pod node; every test prints its counts and a SUMMARY line
#
# `make test` runs the same tests at small sizes; SYNCPOD_SOAK=1 selects the
# full ones. SOAK_RUN narrows the tests (a go test -run regexp).

SOAK_RUN     ?= ^Test(CrashConsistency|RuntimeFault|Flood|ConvergedCheck)
SOAK_TIMEOUT ?= 60m

.PHONY: soak

soak: containerd-images
	SYNCPOD_SOAK=1 $(GO) test -race -count=1 -v -timeout $(SOAK_TIMEOUT) -run '$(SOAK_RUN)' ./services/e2e \
		| grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|SUMMARY|faults injected|\.go:[0-9]+:'

# The private containerd of TestRuntimeFaultContainerdSIGKILLRestart imports
# the same image tarballs as make test's (mk/containerd.mk); it needs them
# built (soak depends on containerd-images for that).
export SYNCPOD_TEST_CONTAINERD_IMAGE_TARS ?= $(PAUSE_IMAGE_TAR) $(BUSYBOX_IMAGE_TAR)
