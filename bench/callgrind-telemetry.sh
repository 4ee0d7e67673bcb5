#!/usr/bin/env bash
# What observability costs: instructions per W1 call at the margin (callgrind, whole server
# process), over stdio (`w1-feed`) and over HTTP (`http-feed`, 64 keep-alive connections), for
# three builds of `rpcwire serve` measured side by side in one run:
#   off      built without the `metrics` feature (`--no-default-features`);
#   idle     built with it, no `--metrics` (nothing recorded: no recorder installed);
#   metrics  built with it, `--metrics 127.0.0.1:0` (every call recorded by the Prometheus
#            recorder: a histogram per call, the in-flight gauge, connection gauges).
# Spans: `rpcwire serve` logs at warn level, so the call spans are created disabled (one
# cached level check each) in all three.
# Optional rows:
#   spans    RPCWIRE_BENCH_SPANS: a binary built with `--features otlp`, run with `--metrics`
#            and `--otlp` to a sink in this script (python3, answering every export 200): every
#            call span recorded by the OpenTelemetry layer and exported;
#   spans-R  with RPCWIRE_BENCH_SPANS_SAMPLE="R1 R2 ..." (ratios in [0, 1]) instead: the same,
#            run with `--otlp-sample R`, a row per ratio (the W1 calls come without a
#            `traceparent`: a fraction R of them gets a span), and `otlp-bin-metrics`, the same
#            binary with `--metrics` alone (no subscriber), the reference of the unsampled
#            calls' own cost (`spans-0` against it);
#   before, before-off   RPCWIRE_BENCH_BEFORE / RPCWIRE_BENCH_BEFORE_OFF: the two builds of an
#            earlier commit (`before` with `--metrics`, `before-off` the feature off), to compare
#            a change against in the same run.
#
# The margin is (I(BIG) - I(SMALL)) / (BIG - SMALL) calls: start-up and shutdown cancel out.
#
# Usage: bench/callgrind-telemetry.sh
# Environment: RPCWIRE_CALLGRIND_BIG / _SMALL (stdio calls, default 40000 / 4000),
# RPCWIRE_CALLGRIND_HTTP_BIG / _SMALL (HTTP calls per connection, default 200 / 50),
# RPCWIRE_BENCH_OFF and RPCWIRE_BENCH_ON (prebuilt binaries of the two builds),
# RPCWIRE_BENCH_BEFORE, RPCWIRE_BENCH_BEFORE_OFF, RPCWIRE_BENCH_SPANS,
# RPCWIRE_BENCH_SPANS_SAMPLE (optional rows, above).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-40000}"
small="${RPCWIRE_CALLGRIND_SMALL:-4000}"
hbig="${RPCWIRE_CALLGRIND_HTTP_BIG:-200}"
hsmall="${RPCWIRE_CALLGRIND_HTTP_SMALL:-50}"
conns=64
if ! command -v valgrind >/dev/null; then
    echo "callgrind-telemetry.sh: installing valgrind" >&2
    apt-get install -y valgrind >&2 || { apt-get update >&2 && apt-get install -y valgrind >&2; }
fi

target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
work="$(mktemp -d)"
server=""
sink=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null || true
    [[ -n "$sink" ]] && kill "$sink" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cargo build --release -p rpcwire-bench --bin w1-feed --bin http-feed
if [[ -n "${RPCWIRE_BENCH_OFF:-}" && -n "${RPCWIRE_BENCH_ON:-}" ]]; then
    cp "$RPCWIRE_BENCH_OFF" "$work/rpcwire-off"
    cp "$RPCWIRE_BENCH_ON" "$work/rpcwire-on"
else
    cargo build --release -p rpcwire-cli --bin rpcwire --no-default-features
    cp "$target/release/rpcwire" "$work/rpcwire-off"
    cargo build --release -p rpcwire-cli --bin rpcwire
    cp "$target/release/rpcwire" "$work/rpcwire-on"
fi

# An OTLP/HTTP sink on loopback for the `spans` row: reads each export and answers 200 (an
# empty protobuf message: no partial failure).
if [[ -n "${RPCWIRE_BENCH_SPANS:-}" ]]; then
    python3 - "$work/sink-port" <<'PY' &
import http.server, sys
class Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
server.serve_forever()
PY
    sink=$!
    for _ in $(seq 1 100); do
        [[ -f "$work/sink-port" ]] && break
        sleep 0.1
    done
    otlp_url="http://127.0.0.1:$(cat "$work/sink-port")"
fi

# The instructions of a run, less the start-up work whose amount depends on wall time and so
# does not cancel out between the two runs of a row: `quanta`'s calibration of the TSC clock
# (in `quanta::Clock::new`, run once when the Prometheus recorder is installed) reads the clock
# until enough time has passed, which under valgrind is anywhere between 3 and 7 million
# instructions, 60 per call at the margin either way (the "once_cell initialize" cost of
# earlier profiles).
summary() {
    local total calib
    total="$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$1")"
    calib="$(callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
        grep -E 'quanta::Clock::new' | head -1 | awk '{ gsub(",", "", $1); print $1 }' || true)"
    echo $(( total - ${calib:-0} ))
}

# stdio N PROGRAM ARGS... : total instructions answering N calls (w1-feed appends --stdio).
stdio() {
    local n="$1"
    shift
    rm -f "$work/cg.out"
    "$target/release/w1-feed" --calls "$n" -- valgrind --tool=callgrind \
        --callgrind-out-file="$work/cg.out" "$@" 2>"$work/valgrind.log" >"$work/feed.log" || {
        cat "$work/valgrind.log" "$work/feed.log" >&2
        exit 1
    }
    summary "$work/cg.out"
}

# http PER_CONN PROGRAM ARGS... : total instructions while http-feed makes PER_CONN calls on
# each connection.
http() {
    local per="$1"
    shift
    rm -f "$work/cg.out"
    RPCWIRE_THREADS=1 valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" \
        2>"$work/valgrind.log" &
    server=$!
    local addr=""
    for _ in $(seq 1 300); do
        addr="$(grep 'serving' "$work/valgrind.log" | grep -oE '127\.0\.0\.1:[1-9][0-9]*' | head -1 || true)"
        [[ -n "$addr" ]] && break
        sleep 0.1
    done
    [[ -n "$addr" ]] || { cat "$work/valgrind.log" >&2; exit 1; }
    "$target/release/http-feed" "$addr" /rpc "$per" >"$work/feed.log" || exit 1
    kill -TERM "$server"
    wait "$server" 2>/dev/null || true
    server=""
    summary "$work/cg.out"
}

row() {
    local name="$1" kind="$2"
    shift 2
    local a b per
    if [[ "$kind" == stdio ]]; then
        b="$(stdio "$big" "$@")"
        a="$(stdio "$small" "$@")"
        per=$(( (b - a) / (big - small) ))
    else
        b="$(http "$hbig" "$@" --http 127.0.0.1:0)"
        a="$(http "$hsmall" "$@" --http 127.0.0.1:0)"
        per=$(( (b - a) / ((hbig - hsmall) * conns) ))
    fi
    echo "$per" >"$work/$kind-$name"
    printf '| %s | %s | %s |\n' "$kind" "$name" "$per"
}

echo "| transport | build | instructions per call at the margin |"
echo "|---|---|---:|"
for kind in stdio http; do
    row off "$kind" "$work/rpcwire-off" serve
    row idle "$kind" "$work/rpcwire-on" serve
    row metrics "$kind" "$work/rpcwire-on" serve --metrics 127.0.0.1:0
    if [[ -n "${RPCWIRE_BENCH_SPANS:-}" && -n "${RPCWIRE_BENCH_SPANS_SAMPLE:-}" ]]; then
        row otlp-bin-metrics "$kind" "$RPCWIRE_BENCH_SPANS" serve --metrics 127.0.0.1:0
        for ratio in $RPCWIRE_BENCH_SPANS_SAMPLE; do
            row "spans-$ratio" "$kind" "$RPCWIRE_BENCH_SPANS" serve --metrics 127.0.0.1:0 \
                --otlp "$otlp_url" --otlp-sample "$ratio"
        done
    elif [[ -n "${RPCWIRE_BENCH_SPANS:-}" ]]; then
        row spans "$kind" "$RPCWIRE_BENCH_SPANS" serve --metrics 127.0.0.1:0 --otlp "$otlp_url"
    fi
    if [[ -n "${RPCWIRE_BENCH_BEFORE_OFF:-}" ]]; then
        row before-off "$kind" "$RPCWIRE_BENCH_BEFORE_OFF" serve
    fi
    if [[ -n "${RPCWIRE_BENCH_BEFORE:-}" ]]; then
        row before "$kind" "$RPCWIRE_BENCH_BEFORE" serve --metrics 127.0.0.1:0
    fi
done
echo
for kind in stdio http; do
    off="$(cat "$work/$kind-off")"
    awk -v o="$off" -v i="$(cat "$work/$kind-idle")" -v m="$(cat "$work/$kind-metrics")" -v k="$kind" \
        'BEGIN { printf "%s: idle / off %.3fx, metrics / off %.3fx\n", k, i / o, m / o }'
    extras="spans before-off before otlp-bin-metrics"
    for ratio in ${RPCWIRE_BENCH_SPANS_SAMPLE:-}; do
        extras="$extras spans-$ratio"
    done
    for extra in $extras; do
        if [[ -f "$work/$kind-$extra" ]]; then
            awk -v o="$off" -v b="$(cat "$work/$kind-$extra")" -v k="$kind" -v n="$extra" \
                'BEGIN { printf "%s: %s / off %.3fx\n", k, n, b / o }'
        fi
    done
    if [[ -f "$work/$kind-spans-0" && -f "$work/$kind-otlp-bin-metrics" ]]; then
        awk -v r="$(cat "$work/$kind-otlp-bin-metrics")" -v z="$(cat "$work/$kind-spans-0")" -v k="$kind" \
            'BEGIN { printf "%s: unsampled call (spans-0 - otlp-bin-metrics) %d instructions\n", k, z - r }'
    fi
done
