# The two commands README gives: `make demo` and `make test`.
# Both install Debian's ZooKeeper first if it is missing.

GO ?= go

.PHONY: test test-install flaky lint demo bench zookeeper

zookeeper:
	@scripts/install-zookeeper.sh

## test: gofmt, go vet, golangci-lint and the race-enabled tests of every
## package of every module, against real ZooKeeper servers that the tests
## start themselves: the main module, then the integration module (chaos,
## cut leaders and followers, scale, convergence and fast join; see
## docs/testing.md), then the side modules (scripts/test.sh); last, go get
## of each side module from a scratch module through a file-based module
## proxy of the working tree (scripts/test-install.sh).
test: zookeeper
	@scripts/test.sh

## test-install: make test's last step alone. It works offline from the
## module cache, which make test (or go mod download) has filled.
test-install:
	@scripts/test-install.sh

## flaky: every test of the main module three times over, race-enabled,
## to catch a test that depends on timing before CI, which runs each once
## (about 10 minutes on 2 cores). COUNT=10 for more.
COUNT ?= 3
flaky: zookeeper
	$(GO) test -race -gcflags=github.com/go-zookeeper/zk=-race=false -count=$(COUNT) ./...

MODULES = . integration bench metrics/prometheus examples/franzgo

## lint: golangci-lint (.golangci.yaml: staticcheck, depguard's import
## bans, errcheck, ...) over every module. The pinned version is built
## into ./bin the first time (a few minutes of CPU), from the module proxy.
lint:
	@lint=$$(scripts/install-golangci-lint.sh) && top=$$(pwd) && \
		for m in $(MODULES); do \
			echo "golangci-lint $$m"; \
			(cd $$m && $$lint run -c $$top/.golangci.yaml ./...) || exit 1; \
		done

## bench: the assignor comparison table (bench/RESULTS.md), the
## convergence benchmark and the session's resume against a local ZooKeeper.
bench: zookeeper
	cd bench && $(GO) test -run TestTable -v -table -out RESULTS.md -timeout 60m .
	cd integration && $(GO) test -run XXX -bench Convergence -benchtime 20x -timeout 60m .
	$(GO) test -run XXX -bench SessionResume -benchtime 20x ./internal/zksession

## demo: a local ZooKeeper and a few members in one process.
demo: zookeeper
	$(GO) run ./cmd/zkalloc demo
