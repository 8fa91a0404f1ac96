#!/usr/bin/env bash
# Builds the local Kubernetes control plane (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, etcd; kwok on request)
# from the Go module proxy: no Docker, no release downloads. The binaries go to
# a per-user cache keyed by the pinned versions and are linked into bin/.
# Versions come from go.mod next to this script; README.md explains them.
set -euo pipefail

usage() {
	cat <<'EOF'
usage: hack/controlplane/build.sh [--with-kwok] [--skew] [--force]

  --with-kwok  also build kwok (fake nodes); same as WITH_KWOK=1
  --skew       also build the previous minor's kube-apiserver (skew/go.mod),
               linked with the current etcd into bin/skew/; same as WITH_SKEW=1
  --force      rebuild even if the cache already holds the binaries

Cache: $KOOPER_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/kooper)/controlplane/
EOF
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

with_kwok=${WITH_KWOK:-}
with_skew=${WITH_SKEW:-}
force=
for arg in "$@"; do
	case $arg in
	--with-kwok) with_kwok=1 ;;
	--skew) with_skew=1 ;;
	--force) force=1 ;;
	-h | --help) usage && exit 0 ;;
	*) echo "unknown argument: $arg" >&2 && usage >&2 && exit 2 ;;
	esac
done
case $with_kwok in
1 | true | yes) with_kwok=1 ;;
"" | 0 | false | no) with_kwok= ;;
*) echo "WITH_KWOK must be 1 or 0, got: $with_kwok" >&2 && exit 2 ;;
esac
case $with_skew in
1 | true | yes) with_skew=1 ;;
"" | 0 | false | no) with_skew= ;;
*) echo "WITH_SKEW must be 1 or 0, got: $with_skew" >&2 && exit 2 ;;
esac

say() { printf 'controlplane: %s\n' "$*"; }

go=${GO:-go}
# CGO_ENABLED=0 always: the binaries are static, and flipping cgo between runs
# would invalidate their whole build cache.
export CGO_ENABLED=0

# mod_version prints the version go.mod file $2 (default: the one next to
# this script) requires for module $1.
mod_version() {
	awk -v m="$1" '{ sub(/^require[ \t]+/, "") } $1 == m && $2 ~ /^v/ { print $2; exit }' "${2:-$here/go.mod}"
}

k8s_version=$(mod_version k8s.io/kubernetes)
etcd_version=$(mod_version go.etcd.io/etcd/server/v3)
# kwok is installed from its own module, with the versions its go.mod pins.
kwok_version=v0.7.0
if [[ -z $k8s_version || -z $etcd_version ]]; then
	echo "could not read the k8s.io/kubernetes and etcd versions from $here/go.mod" >&2
	exit 1
fi

cache_root=${KOOPER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kooper}/controlplane
dir=$cache_root/k8s-${k8s_version}_etcd-${etcd_version}

binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
packages=(
	k8s.io/kubernetes/cmd/kube-apiserver
	k8s.io/kubernetes/cmd/kube-controller-manager
	k8s.io/kubernetes/cmd/kube-scheduler
	k8s.io/kubernetes/cmd/kubectl
	./cmd/etcd
)

# complete reports whether directory $1 holds every binary named after it in
# the arguments.
complete() {
	local d=$1 b
	shift
	for b in "$@"; do [[ -x $d/$b ]] || return 1; done
}

tmp=
cleanup() {
	if [[ -n $tmp ]]; then rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# compile runs "$@" (a go build or go install, silent for minutes), printing
# a line every 30 s (hack/tools/progress.sh).
compile() { "$root/hack/tools/progress.sh" controlplane "$@"; }

# newdir creates an empty directory inside the cache for a build in progress:
# it is renamed into place only when complete, so an interrupted build never
# leaves half a set behind. Leftovers of killed builds are removed after a day.
newdir() {
	mkdir -p "$cache_root"
	find "$cache_root" -maxdepth 1 -name '.tmp-*' -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
	tmp=$(mktemp -d "$cache_root/.tmp-$1.XXXXXX")
	chmod 755 "$tmp"
}

# publish renames the finished build $tmp to $dir, keeping a kwok added to the
# old set earlier.
publish() {
	if [[ -f $dir/kwok.version ]]; then mv -f "$dir/kwok" "$dir/kwok.version" "$tmp/" 2>/dev/null || true; fi
	rm -rf "$dir"
	mv "$tmp" "$dir"
	tmp=
}

# kwok joins the set in $dir (so one directory holds everything) with a marker
# naming its version, since the directory's name does not.
kwok_built() { [[ -x $dir/kwok && $(cat "$dir/kwok.version" 2>/dev/null) == "$kwok_version" ]]; }

# check_staging fails unless every staging replace of go.mod file $2 is at
# the version matching k8s.io/kubernetes $1.
check_staging() {
	local want=v0.${1#v1.} wrong
	wrong=$(awk -v want="$want" '$2 == "=>" && $1 ~ /^k8s\.io\// && $4 != want { print "  " $0 }' "$2")
	if [[ -n $wrong ]]; then
		echo "$2: every staging module must be replaced with $want to match k8s.io/kubernetes $1 (go run ./hack/bump fixes it):" >&2
		echo "$wrong" >&2
		exit 1
	fi
}

# stamp prints the -ldflags for Kubernetes version $1, the k8s.io/kubernetes
# of the go.mod in the working directory. Unstamped servers report
# v0.0.0-master+$Format:%H$, which kubectl cannot parse. buildDate is the
# module's release time, so builds are reproducible.
stamp() {
	local v=$1 major minor build_date flags="-s -w" pkg
	major=${v#v}
	major=${major%%.*}
	minor=${v#v*.}
	minor=${minor%%.*}
	build_date=$("$go" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
	done
	printf '%s' "$flags"
}

build_core() {
	check_staging "$k8s_version" "$here/go.mod"
	newdir "k8s-${k8s_version}_etcd-${etcd_version}"
	cd "$here"

	local t=$SECONDS
	say "downloading modules… (k8s.io/kubernetes $k8s_version, etcd $etcd_version)"
	"$go" mod download
	say "modules ready ($((SECONDS - t))s)"

	local ldflags
	ldflags=$(stamp "$k8s_version")

	t=$SECONDS
	local names
	names=$(printf '%s, ' "${binaries[@]}")
	say "compiling ${names%, } (the first build needs about 14 CPU-minutes: 6.5-11 minutes on 2 cores)…"
	# One go build for all five: they share most packages, compiled once.
	compile "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/" "${packages[@]}"
	say "compiled in $((SECONDS - t))s"
	publish
}

build_kwok() {
	newdir "kwok-$kwok_version"
	local t=$SECONDS
	say "downloading and compiling kwok $kwok_version (1.5-2 minutes the first time)…"
	GOBIN=$tmp compile "$go" install -trimpath \
		-ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$kwok_version" \
		"sigs.k8s.io/kwok/cmd/kwok@$kwok_version"
	say "kwok built in $((SECONDS - t))s"
	# Renaming one file is atomic; the marker, written last, vouches for it.
	mv -f "$tmp/kwok" "$dir/kwok"
	echo "$kwok_version" >"$dir/kwok.version"
	rm -rf "$tmp"
	tmp=
}

# The previous minor's kube-apiserver, for the version-skew run of the
# library's integration tests. It is built alone from skew/go.mod (kubectl
# and the other components would add minutes and no coverage) and paired with
# the current etcd, which serves the etcd v3 API every supported
# kube-apiserver speaks.
skew_version=$(mod_version k8s.io/kubernetes "$here/skew/go.mod")
skew_dir=$cache_root/k8s-${skew_version}-apiserver

build_skew() {
	check_staging "$skew_version" "$here/skew/go.mod"
	newdir "k8s-${skew_version}-apiserver"
	cd "$here/skew"
	local t=$SECONDS
	say "downloading modules… (k8s.io/kubernetes $skew_version, kube-apiserver only)"
	"$go" mod download
	local ldflags
	ldflags=$(stamp "$skew_version")
	say "compiling kube-apiserver $skew_version for the version-skew tests (first time: 3-6 minutes on 2 cores)…"
	compile "$go" build -trimpath -ldflags "$ldflags" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver
	say "compiled in $((SECONDS - t))s"
	rm -rf "$skew_dir"
	mv "$tmp" "$skew_dir"
	tmp=
}

# link points <bindir>/<name> at directory $2 for each name after them, or
# copies where symlinks are not possible.
link_into() {
	local bindir=$1 d=$2 b
	shift 2
	mkdir -p "$bindir"
	for b in "$@"; do
		ln -sfn "$d/$b" "$bindir/$b" 2>/dev/null || cp -f "$d/$b" "$bindir/$b"
	done
}
link() { link_into "$root/bin" "$@"; }

size() { awk -v b="$(wc -c <"$1")" 'BEGIN { printf "%.0f MB", b / 1e6 }'; }

total=$SECONDS
if [[ -z $force ]] && complete "$dir" "${binaries[@]}"; then
	say "control plane $k8s_version already built in $dir"
else
	build_core
fi
linked=("${binaries[@]}")
if [[ -n $with_kwok ]]; then
	if [[ -z $force ]] && kwok_built; then
		say "kwok $kwok_version already built in $dir"
	else
		build_kwok
	fi
	linked+=(kwok)
fi
link "$dir" "${linked[@]}"

for b in "${linked[@]}"; do
	printf '  bin/%-24s %s\n' "$b" "$(size "$root/bin/$b")"
done
"$root/bin/kube-apiserver" --version
"$root/bin/kubectl" version --client
"$root/bin/etcd" --version
if [[ -n $with_kwok ]]; then "$root/bin/kwok" --version; fi
if [[ -n $with_skew ]]; then
	if [[ -z $force ]] && complete "$skew_dir" kube-apiserver; then
		say "kube-apiserver $skew_version (skew) already built in $skew_dir"
	else
		build_skew
	fi
	link_into "$root/bin/skew" "$skew_dir" kube-apiserver
	link_into "$root/bin/skew" "$dir" etcd
	printf '  bin/skew/%-19s %s\n' kube-apiserver "$(size "$root/bin/skew/kube-apiserver")"
	"$root/bin/skew/kube-apiserver" --version
fi
say "done in $((SECONDS - total))s; binaries in $dir (linked from bin/)"
say "outside this repository: export KOOPER_CONTROLPLANE_BIN=$dir"
