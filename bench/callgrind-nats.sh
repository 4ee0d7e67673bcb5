#!/usr/bin/env bash
# Instructions per W1 call at the margin, whole server process, over NATS: `rpcwire serve
# --nats` and the plain `async-nats` loop answering with serde_json (`nats-plain`), each with
# one worker thread, through one nats-server on loopback.
#
# Each server runs under `valgrind --tool=callgrind` twice while `nats-feed` makes BIG and then
# SMALL calls (4 connections, 32 requests under way on each, every answer checked); the
# difference of the two instruction totals divided by the difference in calls is the cost of
# one more call: start-up and shutdown cancel out. The broker and the load generator run
# outside valgrind and are not counted.
#
# Usage: bench/callgrind-nats.sh          (from anywhere in the workspace)
# Environment: RPCWIRE_CALLGRIND_BIG (calls, default 8000), RPCWIRE_CALLGRIND_SMALL (default 2000).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-8000}"
small="${RPCWIRE_CALLGRIND_SMALL:-2000}"
if (( big <= small )); then
    echo "callgrind-nats.sh: RPCWIRE_CALLGRIND_BIG must exceed RPCWIRE_CALLGRIND_SMALL" >&2
    exit 2
fi
command -v nats-server >/dev/null || { echo "callgrind-nats.sh: run .ci/install/brokers.sh first" >&2; exit 2; }
if ! command -v valgrind >/dev/null; then
    apt-get install -y valgrind >&2 || { apt-get update >&2 && apt-get install -y valgrind >&2; }
fi

cargo build --release -p rpcwire-cli --bin rpcwire
cargo build --release -p rpcwire-bench --features nats --bin nats-plain --bin nats-feed
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

work="$(mktemp -d)"
server=""
broker=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null || true
    [[ -n "$broker" ]] && kill "$broker" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
nats-server -a 127.0.0.1 -p "$port" >/dev/null 2>&1 &
broker=$!
url="nats://127.0.0.1:$port"

# instructions CALLS PROGRAM ARGS... : total instructions of the server process while
# nats-feed makes CALLS calls.
instructions() {
    local calls="$1"
    shift
    local out="$work/callgrind.out"
    rm -f "$out"
    RPCWIRE_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>"$work/valgrind.log" &
    server=$!
    # Ready once a call is answered (before it: "no responders").
    for _ in $(seq 1 600); do
        "$target/release/nats-feed" "$url" bench 1 1 1 >/dev/null 2>&1 && break
        sleep 0.1
    done
    if ! "$target/release/nats-feed" "$url" bench "$(( calls - 1 ))" 4 32 >"$work/feed.log"; then
        echo "callgrind-nats.sh: the calls to $* failed" >&2
        exit 1
    fi
    kill -TERM "$server"
    wait "$server" 2>/dev/null || true
    server=""
    local total
    total="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")"
    [[ -n "$total" ]] || { echo "callgrind-nats.sh: no summary in $out" >&2; exit 1; }
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

echo "Instructions (callgrind, whole server process) answering W1 requests over NATS;"
echo "margin = (I($big calls) - I($small calls)) / $(( big - small )) calls"
echo
echo "| server | instructions, $small calls | instructions, $big calls | per call at the margin |"
echo "|---|---:|---:|---:|"
report rpcwire "$target/release/rpcwire" serve --nats "$url" --subject bench
report plain-async-nats "$target/release/nats-plain" "$url" bench
report plain-on-service-module "$target/release/nats-plain" "$url" bench service
echo
awk -v r="$(cat "$work/rpcwire.per")" -v p="$(cat "$work/plain-async-nats.per")" \
    -v s="$(cat "$work/plain-on-service-module.per")" \
    'BEGIN { printf "rpcwire / plain async-nats loop: %.2fx the instructions per call; rpcwire / the plain loop on the service module: %.2fx\n", r / p, r / s }'
