#!/usr/bin/env bash
# The one go build command of this repository: `make build` and the
# Dockerfile both run it, so the binaries in bin/ are the images' binaries.
# hack/build/build_test.go builds with it and checks that the result is
# static and trimmed, and that the Dockerfile and the Makefile call it.
#
#   hack/build/build.sh OUTPUT PACKAGE...
#
# OUTPUT is go build's -o: a directory ending in / (one binary per package,
# named after it) or a file (one package). VERSION (default dev) is stamped
# into main.version: the binaries' -version flag prints it. GO (default go),
# GOOS and GOARCH are honoured; CGO is always off.
#
# - CGO_ENABLED=0: a static binary that needs no libc, so it runs on
#   distroless/static or scratch.
# - -trimpath: no file-system paths of the build machine in the binary, so
#   builds are reproducible.
# - -s -w: no symbol table or DWARF; the build information that
#   `go version -m` prints stays.
set -euo pipefail

if (($# < 2)); then
	echo "usage: hack/build/build.sh OUTPUT PACKAGE..." >&2
	exit 2
fi
output="$1"
shift

export CGO_ENABLED=0
# From empty caches the build is silent for minutes: progress.sh says every
# 30 s that it goes on.
exec "$(dirname "${BASH_SOURCE[0]}")/../tools/progress.sh" build \
	"${GO:-go}" build -trimpath -ldflags "-s -w -X main.version=${VERSION:-dev}" -o "${output}" "$@"
