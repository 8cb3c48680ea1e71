#!/usr/bin/env bash
# install-golangci-lint.sh: build the pinned golangci-lint into ./bin (once
# per machine; later runs find it there and exit at once). It comes from
# the Go module proxy, so it needs no download site; the build takes a few
# minutes of CPU the first time.
#
# Usage: scripts/install-golangci-lint.sh   (prints the binary's path)
set -euo pipefail

version=v2.15.0
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$top/bin
want="$bin/golangci-lint"
if [ -x "$want" ] && "$want" version 2>/dev/null | grep -q "version ${version#v}"; then
	echo "$want"
	exit 0
fi
mkdir -p "$bin"
echo "install-golangci-lint: building golangci-lint $version into $bin" >&2
GOBIN=$bin GOFLAGS=-mod=mod go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$version" >&2
echo "$want"
