# Side-by-side benchmarks on a real runtime (bench/scripts/bench.sh, driving
# bench/cmd/syncpod-bench; README, Performance).
#
#   make bench           the raw-CRI floor, then syncpod, on a private containerd
#   make bench-kubelet   the kubelet v1.37.2 standalone, then syncpod, then the
#                        raw-CRI floor, each on a fresh identical containerd;
#                        then the kubelet and syncpod side by side (as
#                        bench-versus) for the starts and the 10-pod deletion;
#                        then the API-server path (bench-kubelet-api)
#   make bench-kubelet-api
#                        only the API-server path: one private etcd and
#                        kube-apiserver; a real kubelet and syncpod-node joined
#                        as two nodes at once, each on a fresh identical
#                        containerd; pod created bound to the node → Running
#                        (a watch), one pod on each a round, their order
#                        alternating, BENCH_API_RUNS rounds (20)
#
#   make bench-density   a whole node under many pods: the kubelet and syncpod
#                        joined at once to one private kube-apiserver, each on
#                        its own identical containerd, alternating rounds: the
#                        pod-startup SLI of 100 pods created at 5/s, bursts of
#                        110 and 250 pods (until all run, until all are gone),
#                        the agents' CPU and memory idle at 110; writes only the
#                        Density section of docs/benchmarks.md (DENSITY_PODS,
#                        DENSITY_RATE, DENSITY_BURSTS, DENSITY_ROUNDS, DENSITY_IDLE
#                        size it: bench/scripts/bench.sh)
#
#   make bench-versus    the kubelet and syncpod at once, each on its own
#                        identical containerd, starts by file alternating
#
# BENCH_RUNTIME=containerd1.6 runs every agent on Debian's containerd 1.6
# (no CRI events: both relist, at their default periods) instead of 2.x
# (e.g. make bench-kubelet BENCH_RUNTIME=containerd1.6); BENCH_ARGS passes flags to `syncpod-bench measure`, VERSUS_ARGS
# to `syncpod-bench versus`. Root only. Each target prints its tables and
# puts its sections into docs/benchmarks.md, with their plots under
# docs/benchmarks/ (package bench/report), keeping the sections other runs
# wrote (the other runtime's, Density, Scale): the target, the runtime and
# syncpod's version are named in it.
#   make bench-scale     many nodes under one control plane: upstream's hollow
#                        kubelet (kubemark v1.37.2, built once into the cache)
#                        against syncpod nodes on crisim in simulated mode, one
#                        side after the other, 30 pods a node created at 20/s
#                        bound round-robin, then deleted; pod startup
#                        percentiles, API requests a node a minute (the API
#                        server's audit log), CPU and memory a node.
#                        BENCH_SCALE_NODES (default 50; e.g. "10 20" runs both
#                        sides at each count) and the other BENCH_SCALE_* knobs
#                        of bench/scripts/scale-nodes.sh
#
.PHONY: bench bench-kubelet bench-kubelet-api bench-density bench-versus bench-scale bench-build

# The driver, built beside the services `make build` puts in bin/ (it is
# its own module, bench/, so `make build` leaves it out).
bench-build:
	$(STATIC_GO) build -trimpath -tags '$(STATIC_TAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/ ./bench/cmd/syncpod-bench

BENCH_ENV = BENCH_VERSION='$(VERSION)' BENCH_COMMAND='make $@'

bench: build bench-build containerd-deps containerd-images
	$(BENCH_ENV) bench/scripts/bench.sh syncpod

bench-kubelet: build bench-build containerd-deps containerd-images
	$(BENCH_ENV) bench/scripts/bench.sh kubelet

bench-kubelet-api: build bench-build containerd-deps containerd-images
	$(BENCH_ENV) bench/scripts/bench.sh kubelet-api

bench-density: build bench-build containerd-deps containerd-images
	$(BENCH_ENV) bench/scripts/bench.sh density

bench-versus: build bench-build containerd-deps containerd-images
	$(BENCH_ENV) bench/scripts/bench.sh versus

bench-scale: build bench-build
	$(BENCH_ENV) bench/scripts/bench.sh scale-nodes
