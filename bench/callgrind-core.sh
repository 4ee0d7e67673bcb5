#!/usr/bin/env bash
# Instructions per message at the margin for the core alone, in process, on each shared
# workload (W1..W6 of ../shared/bench/), against the floor (`serde_json::from_slice::<IgnoredAny>`
# on the same bytes plus a copy), both from `tests/examples/workload_profile.rs`.
#
# Margin = (I(big) - I(small)) / (big - small), from callgrind's `summary:` line, so start-up
# cancels out.
#
# Usage: bench/callgrind-core.sh [w1 w2 ...]   (default: all six)
# Environment: RPCWIRE_CALLGRIND_BIG (default 100000), RPCWIRE_CALLGRIND_SMALL (default 10000).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-100000}"
small="${RPCWIRE_CALLGRIND_SMALL:-10000}"
if (( big <= small )); then
    echo "callgrind-core.sh: RPCWIRE_CALLGRIND_BIG must exceed RPCWIRE_CALLGRIND_SMALL" >&2
    exit 2
fi
workloads=("$@")
(( ${#workloads[@]} )) || workloads=(w1 w2 w3 w4 w5 w6)

cargo build --release -p rpcwire-tests --example workload_profile >&2
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
prog="$target/release/examples/workload_profile"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# instructions WORKLOAD N [floor]: the total instructions of one run.
instructions() {
    local out="$work/callgrind.out"
    rm -f "$out"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" "$@" >/dev/null 2>"$work/log" \
        || { cat "$work/log" >&2; exit 1; }
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

margin() {
    local b s
    b="$(instructions "$1" "$big" ${2:+"$2"})"
    s="$(instructions "$1" "$small" ${2:+"$2"})"
    echo $(( (b - s) / (big - small) ))
}

echo "| workload | floor | rpcwire core | ratio |"
echo "|---|---:|---:|---:|"
for w in "${workloads[@]}"; do
    f="$(margin "$w" floor)"
    c="$(margin "$w")"
    awk -v w="$w" -v f="$f" -v c="$c" 'BEGIN { printf "| %s | %d | %d | %.2fx |\n", toupper(w), f, c, c / f }'
done
