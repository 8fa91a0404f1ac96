#!/usr/bin/env bash
# Runs a command that can be silent for minutes (a go build or go install
# from empty caches), printing "PREFIX: still building… Ns" every 30 s
# until it ends, and exits with its status.
#
#   hack/tools/progress.sh PREFIX COMMAND [ARG...]
#
# The heartbeat's sleep does not hold stdout, so a pipe such as
# `make test | tee log` closes as soon as the command ends.
set -uo pipefail

if [[ $# -lt 2 ]]; then
	echo "usage: hack/tools/progress.sh PREFIX COMMAND [ARG...]" >&2
	exit 2
fi
prefix=$1
shift

start=$SECONDS
# The heartbeat's sleep runs in the background of the heartbeat, which kills
# it when it is killed itself: a sleep left to finish on its own would
# outlive this script by up to 30 s (make run's Ctrl-C found one).
(
	trap 'kill "$nap" 2>/dev/null; exit 0' TERM INT HUP
	while :; do
		sleep 30 >/dev/null 2>&1 &
		nap=$!
		wait "$nap" || exit 0
		printf '%s: still building… %ds\n' "$prefix" "$((SECONDS - start))"
	done
) &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$@"
status=$?
kill "$heartbeat" 2>/dev/null
wait "$heartbeat" 2>/dev/null
exit "$status"
