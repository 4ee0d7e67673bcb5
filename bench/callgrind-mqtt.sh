#!/usr/bin/env bash
# Instructions per W1 call at the margin, whole server process, over MQTT 5: `rpcwire serve
# --mqtt` and the plain `rumqttc` loop answering with serde_json (`mqtt-plain`), each with one
# worker thread, through one mosquitto on loopback.
#
# Each server runs under `valgrind --tool=callgrind` twice while `mqtt-feed` makes BIG and then
# SMALL calls (4 connections, 32 requests under way on each, QoS 0, every answer checked); the
# difference of the two instruction totals divided by the difference in calls is the cost of
# one more call: start-up and shutdown cancel out. The broker and the load generator run
# outside valgrind and are not counted.
#
# Usage: bench/callgrind-mqtt.sh          (from anywhere in the workspace)
# Environment: RPCWIRE_CALLGRIND_BIG (calls, default 8000), RPCWIRE_CALLGRIND_SMALL (default 2000).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-8000}"
small="${RPCWIRE_CALLGRIND_SMALL:-2000}"
if (( big <= small )); then
    echo "callgrind-mqtt.sh: RPCWIRE_CALLGRIND_BIG must exceed RPCWIRE_CALLGRIND_SMALL" >&2
    exit 2
fi
mosquitto="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
[[ -x "$mosquitto" ]] || { echo "callgrind-mqtt.sh: run .ci/install/brokers.sh first" >&2; exit 2; }
if ! command -v valgrind >/dev/null; then
    apt-get install -y valgrind >&2 || { apt-get update >&2 && apt-get install -y valgrind >&2; }
fi

cargo build --release -p rpcwire-cli --bin rpcwire
cargo build --release -p rpcwire-bench --features mqtt --bin mqtt-plain --bin mqtt-feed
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
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" >"$work/mosquitto.conf"
"$mosquitto" -c "$work/mosquitto.conf" >/dev/null 2>&1 &
broker=$!
for _ in $(seq 1 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break
    sleep 0.1
done

# instructions CALLS PROGRAM ARGS... : total instructions of the server process while
# mqtt-feed makes CALLS calls.
instructions() {
    local calls="$1"
    shift
    local out="$work/callgrind.out"
    rm -f "$out"
    RPCWIRE_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>"$work/valgrind.log" &
    server=$!
    # Ready once a call is answered (QoS 0 requests sent before it subscribed are lost).
    for _ in $(seq 1 120); do
        MQTT_FEED_STALL_MS=1000 "$target/release/mqtt-feed" 127.0.0.1 "$port" bench 1 1 1 >/dev/null 2>&1 && break
    done
    if ! "$target/release/mqtt-feed" 127.0.0.1 "$port" bench "$(( calls - 1 ))" 4 32 >"$work/feed.log"; then
        echo "callgrind-mqtt.sh: the calls to $* failed" >&2
        exit 1
    fi
    kill -TERM "$server"
    wait "$server" 2>/dev/null || true
    server=""
    local total
    total="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out")"
    [[ -n "$total" ]] || { echo "callgrind-mqtt.sh: no summary in $out" >&2; exit 1; }
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

echo "Instructions (callgrind, whole server process) answering W1 requests over MQTT 5;"
echo "margin = (I($big calls) - I($small calls)) / $(( big - small )) calls"
echo
echo "| server | instructions, $small calls | instructions, $big calls | per call at the margin |"
echo "|---|---:|---:|---:|"
report rpcwire "$target/release/rpcwire" serve --mqtt "mqtt://127.0.0.1:$port" --topic bench
report plain-rumqttc "$target/release/mqtt-plain" 127.0.0.1 "$port" bench
echo
awk -v r="$(cat "$work/rpcwire.per")" -v p="$(cat "$work/plain-rumqttc.per")" \
    'BEGIN { printf "rpcwire / plain rumqttc loop: %.2fx the instructions per call\n", r / p }'
