# The two commands README gives: `make demo` and `make test`.
# Both install Debian's ZooKeeper first if it is missing.

GO ?= go

.PHONY: test demo zookeeper

zookeeper:
	@scripts/install-zookeeper.sh

## test: go vet, gofmt and the race-enabled tests of every package,
## against real ZooKeeper servers that the tests start themselves.
test: zookeeper
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) test -race -count=1 ./...

## demo: a local ZooKeeper and a few members in one process.
demo: zookeeper
	$(GO) run ./cmd/zkalloc-demo
