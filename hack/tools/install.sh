#!/usr/bin/env bash
# Installs Go commands at pinned versions from the Go module proxy into a
# per-user cache directory, for the tools make needs beyond Go, make and gcc
# (golangci-lint, promtool, prometheus). The directory is named after the
# version by the Makefile, so a fresh clone reuses what an earlier one built.
#
#   hack/tools/install.sh DIR 'ABOUT' [go install flags] PKG@VERSION...
#
# DIR receives the commands; ABOUT is how long the first build takes, shown
# before it starts. The binaries are stripped; with STAMP set to the import
# path of a string variable (github.com/prometheus/common/version.Version),
# they carry the version of the last PKG@VERSION in it, for their --version. The commands are built into a temporary directory next to
# DIR, renamed into place only when all are built: an interrupted build leaves
# no half set behind. A line every 30 s shows the build is alive
# (progress.sh).
set -euo pipefail

if [[ $# -lt 3 ]]; then
	echo "usage: hack/tools/install.sh DIR 'ABOUT' [go install flags] PKG@VERSION..." >&2
	exit 2
fi
dir=$1
about=$2
shift 2

say() { printf 'tools: %s\n' "$*"; }

go=${GO:-go}
parent=$(dirname "$dir")
mkdir -p "$parent"
# Leftovers of builds killed more than a day ago.
find "$parent" -maxdepth 1 -name '.tmp-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
tmp=$(mktemp -d "$parent/.tmp-$(basename "$dir").XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

names=()
version=
for arg in "$@"; do
	if [[ $arg == *@* ]]; then
		names+=("$(basename "${arg%@*}")@${arg#*@}")
		version=${arg#*@}
	fi
done
ldflags="-s -w"
if [[ -n ${STAMP:-} ]]; then ldflags+=" -X $STAMP=$version"; fi
say "building ${names[*]} from the Go module proxy into $dir (first time: $about)…"
start=$SECONDS
GOBIN=$tmp "$(dirname "$0")/progress.sh" tools "$go" install -trimpath -ldflags "$ldflags" "$@"
chmod 755 "$tmp"
rm -rf "$dir"
mv "$tmp" "$dir"
say "built in $((SECONDS - start))s: $(cd "$dir" && echo *)"
