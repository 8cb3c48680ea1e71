#!/usr/bin/env bash
# test-install.sh: installs the side modules a user would `go get`, as a
# user's go get would, from a scratch module through a file-based module
# proxy, with no network: the last step of `make test`.
#
# scripts/modproxy builds the proxy from the working tree: every module
# of the repository at the version that the side modules require of the
# root (and go.work replaces), as tagging that version would publish
# them (docs/releasing.md). The modules they depend on come from the
# module cache's download directory, which the earlier steps of make test
# filled; nothing else is reachable (GOPROXY has no network entry), so a
# requirement that only a workspace or a replace could satisfy fails
# here. The scratch modules have a module cache of their own: the real
# one must never hold a version of zkalloc built from a work tree.
#
# Installed: metrics/prometheus (the Prometheus adapter) and
# examples/franzgo (a library: its Consumer and MemSink can be used as
# they are). Not installed: integration and bench, our test suites.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
root=github.com/zkalloc/zkalloc
cache=$($GO env GOMODCACHE)/cache/download

# The scratch modules' module cache has a fixed path in this checkout
# (bin/ is ignored by git), emptied before and after: the build cache's
# keys include the path of a dependency's directory, so at a fixed path
# the dependencies compile once per machine, not once per run.
modcache=$PWD/bin/test-install-modcache
tmp=
cleanup() {
	# Module caches are read-only; go clean makes them removable.
	GOMODCACHE=$modcache $GO clean -modcache >/dev/null 2>&1 || true
	rm -rf "$modcache" ${tmp:+"$tmp"}
}
cleanup # what a killed run left
tmp=$(mktemp -d)
trap cleanup EXIT

fail() {
	echo "test-install.sh: FAIL: $*" >&2
	exit 1
}

version=$($GO run ./scripts/modproxy -out "$tmp/proxy") || fail "building the module proxy"
echo "+ module proxy of the working tree at $version: $tmp/proxy"

# The go command indexes a package's files in the module cache by the
# module's directory (its "module index", in the build cache), trusting
# that module@version never changes; here it does, with every commit,
# under the one fixed path, so a stale index left out a file added since
# (internal/decision/jobstart.go: "undefined: decision.JobDrop" on the
# second run in one clone). GODEBUG=goindex=0 turns the index off; the
# build cache still keys compiled packages by their files' contents.
#
# install MODULE MAIN: go get MODULE@version in a new scratch module and
# build MAIN, a main package that uses it.
install() {
	local mod=$1 main=$2 dir
	dir=$tmp/scratch-${mod//\//-}
	mkdir -p "$dir"
	printf '%s\n' "$main" >"$dir/main.go"
	echo "+ go get $mod@$version && go build (in a scratch module)"
	if ! (
		cd "$dir" &&
			export GOPROXY="file://$tmp/proxy,file://$cache" GOFLAGS=-mod=mod \
				GOSUMDB=off GONOSUMDB=$root GOWORK=off GOTOOLCHAIN=local \
				GOMODCACHE="$modcache" GODEBUG=goindex=0 &&
			$GO mod init scratch &&
			$GO get "$mod@$version" &&
			$GO build -o /dev/null .
	) >"$dir/log" 2>&1; then
		cat "$dir/log" >&2
		fail "go get $mod@$version from a scratch module"
	fi
}

install $root/metrics/prometheus 'package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/zkalloc/zkalloc"
	zkprom "github.com/zkalloc/zkalloc/metrics/prometheus"
)

func main() {
	var a *zkalloc.Allocator // built, not run
	prometheus.NewRegistry().MustRegister(zkprom.NewCollector(a, nil))
}'

install $root/examples/franzgo 'package main

import "github.com/zkalloc/zkalloc/examples/franzgo"

func main() {
	_ = &franzgo.Consumer{Group: "billing", Sink: &franzgo.MemSink{}}
}'

echo "test-install.sh: ok"
