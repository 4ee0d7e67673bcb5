#!/usr/bin/env bash
# Instructions per W1 message at the margin, whole server process, for `rpcwire serve --stdio`
# and for the plain serde_json loop (`plain-loop --stdio`).
#
# Each server runs under `valgrind --tool=callgrind` twice, fed 100 000 and then 10 000 W1 calls
# (distinct ids) through its stdin by `w1-feed`, which checks every answer. The difference of
# the two instruction totals divided by 90 000 is the cost of one more message: process
# start-up, runtime set-up and shutdown cancel out.
#
# Why a feeder and not a file on stdin: the rpcwire server answers Server busy (-32001) once
# 1024 requests of one connection are open, and a file is read all at once, so such a run
# would mostly measure the rejection path. `w1-feed` keeps at most 1024 calls unanswered, like
# the end-to-end benchmark.
#
# Usage: bench/callgrind.sh            (from anywhere in the workspace)
# Environment: RPCWIRE_CALLGRIND_BIG (default 100000), RPCWIRE_CALLGRIND_SMALL (default 10000),
# RPCWIRE_BENCH_RPCWIRE (an rpcwire binary to measure instead of the workspace's build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-100000}"
small="${RPCWIRE_CALLGRIND_SMALL:-10000}"
if (( big <= small )); then
    echo "callgrind.sh: RPCWIRE_CALLGRIND_BIG must exceed RPCWIRE_CALLGRIND_SMALL" >&2
    exit 2
fi

if ! command -v valgrind >/dev/null; then
    echo "callgrind.sh: installing valgrind" >&2
    apt-get install -y valgrind >&2 || { apt-get update >&2 && apt-get install -y valgrind >&2; }
fi

# Release builds of only what is measured.
cargo build --release -p rpcwire-cli --bin rpcwire
cargo build --release -p rpcwire-bench --bin plain-loop --bin w1-feed
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
rpcwire="${RPCWIRE_BENCH_RPCWIRE:-$target/release/rpcwire}"
feed="$target/release/w1-feed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# instructions N PROGRAM ARGS... : total instructions of `PROGRAM ARGS... --stdio` answering N
# calls (w1-feed appends --stdio after the last argument).
instructions() {
    local n="$1"
    shift
    local out="$work/callgrind.out"
    rm -f "$out"
    if ! "$feed" --calls "$n" -- valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$@" 2>"$work/valgrind.log" >"$work/feed.log"; then
        cat "$work/valgrind.log" "$work/feed.log" >&2
        echo "callgrind.sh: the run of $* with $n calls failed" >&2
        exit 1
    fi
    # The `summary:` line holds the event totals of the whole process (all threads).
    local total
    total="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")"
    if [[ -z "$total" ]]; then
        echo "callgrind.sh: no summary line in $out" >&2
        exit 1
    fi
    echo "$total"
}

report() {
    local name="$1"
    shift
    local at_big at_small
    at_big="$(instructions "$big" "$@")"
    at_small="$(instructions "$small" "$@")"
    local per=$(( (at_big - at_small) / (big - small) ))
    printf '| %s | %s | %s | %s |\n' "$name" "$at_small" "$at_big" "$per"
    echo "$per" >"$work/$name.per"
}

echo "Instructions (callgrind, whole process) answering W1 calls over stdio; margin = (I($big) - I($small)) / $((big - small))"
echo
echo "| server | instructions, $small calls | instructions, $big calls | per message at the margin |"
echo "|---|---:|---:|---:|"
report plain-loop "$target/release/plain-loop"
report rpcwire "$rpcwire" serve
plain="$(cat "$work/plain-loop.per")"
rpc="$(cat "$work/rpcwire.per")"
echo
awk -v r="$rpc" -v p="$plain" 'BEGIN { if (p > 0) printf "rpcwire / plain loop: %.2fx the instructions per message\n", r / p }'
