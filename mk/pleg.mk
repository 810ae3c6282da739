# PLEG targets.
#
#   make pleg-bench   relist (100/1,000/5,000 containers vs the raw list calls)
#                     and fan-out to 100 subscribers, short runs
#   make pleg-test    the pleg module with -race (containerd test included
#                     when SYNCPOD_TEST_CONTAINERD_ENDPOINT is set)

.PHONY: pleg-bench pleg-test

pleg-bench:
	$(GO) test -run '^$$' -bench 'Relist|Fanout' -benchtime=200ms -benchmem ./pleg/ ./pleg/fanout/

pleg-test:
	$(GO) test -race -shuffle=on ./pleg/...
