#!/usr/bin/env bash
# Instructions per W1 call at the margin, whole server process, for the HTTP servers of the
# `http` bench: `rpcwire serve --http`, jsonrpsee's HTTP server and the hyper floor (a fixed
# answer, no JSON-RPC), each with one worker thread (RPCWIRE_THREADS=1).
#
# Each server runs under `valgrind --tool=callgrind` twice while `http-feed` POSTs W1 over 64
# keep-alive connections (BIG and then SMALL calls on each, every answer checked); the
# difference of the two instruction totals divided by the difference in calls is the cost of
# one more call: start-up, connection set-up and shutdown cancel out. Instructions, unlike
# times, do not move with the machine's load; they leave out the kernel (system calls), which
# is most of a call's time on loopback (see BENCHMARKS.md).
#
# Usage: bench/callgrind-http.sh          (from anywhere in the workspace)
# Environment: RPCWIRE_CALLGRIND_BIG (calls per connection, default 400), RPCWIRE_CALLGRIND_SMALL
# (default 100), RPCWIRE_BENCH_RPCWIRE (an rpcwire binary to measure instead of the workspace's
# build), RPCWIRE_BENCH_BEFORE (another rpcwire binary, an earlier build, measured in the same
# run as a row `rpcwire-before`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-400}"
small="${RPCWIRE_CALLGRIND_SMALL:-100}"
conns=64
if (( big <= small )); then
    echo "callgrind-http.sh: RPCWIRE_CALLGRIND_BIG must exceed RPCWIRE_CALLGRIND_SMALL" >&2
    exit 2
fi
if ! command -v valgrind >/dev/null; then
    echo "callgrind-http.sh: installing valgrind" >&2
    apt-get install -y valgrind >&2 || { apt-get update >&2 && apt-get install -y valgrind >&2; }
fi

cargo build --release -p rpcwire-cli --bin rpcwire
cargo build --release -p rpcwire-bench --features jsonrpsee \
    --bin http-feed --bin jsonrpsee-http --bin hyper-floor
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

work="$(mktemp -d)"
server=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# instructions PER_CONN PATH PROGRAM ARGS... : total instructions of the server process while
# http-feed makes PER_CONN calls on each of its connections.
instructions() {
    local per="$1" path="$2"
    shift 2
    local out="$work/callgrind.out" log="$work/valgrind.log"
    # Emptied here, not by the server's redirection: that happens in the background, and the
    # address search below could read the last run's address first.
    rm -f "$out"
    : >"$log"
    RPCWIRE_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>"$log" &
    server=$!
    # The address the server prints (not the 127.0.0.1:0 of its command line).
    local addr=""
    for _ in $(seq 1 300); do
        addr="$(grep -v '^==' "$log" | grep -oE '127\.0\.0\.1:[1-9][0-9]*' | head -1 || true)"
        [[ -n "$addr" ]] && break
        sleep 0.1
    done
    if [[ -z "$addr" ]]; then
        cat "$log" >&2
        echo "callgrind-http.sh: $* printed no address" >&2
        exit 1
    fi
    if ! "$target/release/http-feed" "$addr" "$path" "$per" >"$work/feed.log"; then
        echo "callgrind-http.sh: the calls to $* failed" >&2
        exit 1
    fi
    kill -TERM "$server"
    wait "$server" 2>/dev/null || true
    server=""
    local total
    total="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")"
    if [[ -z "$total" ]]; then
        echo "callgrind-http.sh: no summary line in $out" >&2
        exit 1
    fi
    echo "$total"
}

report() {
    local name="$1" path="$2"
    shift 2
    local at_big at_small
    at_big="$(instructions "$big" "$path" "$@")"
    at_small="$(instructions "$small" "$path" "$@")"
    local per=$(( (at_big - at_small) / ((big - small) * conns) ))
    printf '| %s | %s | %s | %s |\n' "$name" "$at_small" "$at_big" "$per"
    echo "$per" >"$work/$name.per"
}

echo "Instructions (callgrind, whole server process) answering W1 POSTs over $conns keep-alive connections;"
echo "margin = (I($big calls each) - I($small calls each)) / $(( (big - small) * conns )) calls"
echo
echo "| server | instructions, $small calls each | instructions, $big calls each | per call at the margin |"
echo "|---|---:|---:|---:|"
report rpcwire /rpc "${RPCWIRE_BENCH_RPCWIRE:-$target/release/rpcwire}" serve --http 127.0.0.1:0
if [[ -n "${RPCWIRE_BENCH_BEFORE:-}" ]]; then
    report rpcwire-before /rpc "$RPCWIRE_BENCH_BEFORE" serve --http 127.0.0.1:0
fi
report jsonrpsee / "$target/release/jsonrpsee-http"
report hyper-floor / "$target/release/hyper-floor"
# Every head other than the last (an `X-Request` field numbered per call): rpcwire cannot take
# a head for the connection's last one, and parses each.
HTTP_FEED_VARY=1 report rpcwire-heads-vary /rpc "${RPCWIRE_BENCH_RPCWIRE:-$target/release/rpcwire}" \
    serve --http 127.0.0.1:0
HTTP_FEED_VARY=1 report hyper-floor-heads-vary / "$target/release/hyper-floor"
echo
awk -v r="$(cat "$work/rpcwire.per")" -v j="$(cat "$work/jsonrpsee.per")" -v f="$(cat "$work/hyper-floor.per")" \
    'BEGIN { printf "jsonrpsee / rpcwire: %.2fx the instructions per call; hyper floor / rpcwire: %.2fx\n", j / r, f / r }'
awk -v r="$(cat "$work/rpcwire.per")" -v f="$(cat "$work/hyper-floor.per")" \
    -v rv="$(cat "$work/rpcwire-heads-vary.per")" -v fv="$(cat "$work/hyper-floor-heads-vary.per")" \
    'BEGIN { printf "rpcwire / hyper floor: %.3fx; with every head other than the last: %.3fx\n", r / f, rv / fv }'
if [[ -f "$work/rpcwire-before.per" ]]; then
    awk -v r="$(cat "$work/rpcwire.per")" -v b="$(cat "$work/rpcwire-before.per")" -v f="$(cat "$work/hyper-floor.per")" \
        'BEGIN { printf "rpcwire-before / hyper floor: %.3fx; rpcwire / rpcwire-before: %.3fx\n", b / f, r / b }'
fi
