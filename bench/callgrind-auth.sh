#!/usr/bin/env bash
# What TLS and authentication cost per W1 call: `rpcwire serve --http` plain, over HTTPS
# (keep-alive: the handshakes are made before the calls), with static bearer tokens
# (`--tokens`), with JWTs verified against a JWKS URL (`--jwks`, the token cached after its
# first verification) and HTTPS with JWTs, each with one worker thread (RPCWIRE_THREADS=1).
#
# Instructions per call at the margin, as bench/callgrind-http.sh: each server runs under
# `valgrind --tool=callgrind` twice while `http-feed` POSTs W1 over 64 keep-alive connections
# (BIG and then SMALL calls on each); the difference of the totals over the difference in
# calls is the cost of one more call (start-up, handshakes, the first verification and
# shutdown cancel out). Then calls/s outside valgrind, the same servers side by side
# (RPCWIRE_RATE_CALLS calls per connection, default 2000).
#
# Needs openssl (the test certificate) and oauth2-mock-server (.ci/install/oauth-interop.sh;
# it signs the JWT and serves the JWKS).
#
# Usage: bench/callgrind-auth.sh          (from anywhere in the workspace)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
big="${RPCWIRE_CALLGRIND_BIG:-400}"
small="${RPCWIRE_CALLGRIND_SMALL:-100}"
rate_calls="${RPCWIRE_RATE_CALLS:-2000}"
conns=64
oauth="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/oauth/node"
[[ -f "$oauth/node_modules/oauth2-mock-server/package.json" ]] || {
    echo "callgrind-auth.sh: run .ci/install/oauth-interop.sh first" >&2
    exit 2
}

cargo build --release -p rpcwire-cli --bin rpcwire
cargo build --release -p rpcwire-bench --bin http-feed
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac

work="$(mktemp -d)"
server=""
issuer=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null || true
    [[ -n "$issuer" ]] && kill "$issuer" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The certificate (a CA and a server certificate for localhost).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench-ca \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -days 2 -extfile "$work/ext" -out "$work/server.pem" 2>/dev/null

# The authorization server: its issuer, its JWKS URL and one token (RS256, an hour).
cat >"$work/issuer.mjs" <<'JS'
const { OAuth2Server } = await import(process.argv[2] + "/node_modules/oauth2-mock-server/dist/index.mjs");
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
await server.start(0, "127.0.0.1");
const token = await server.issuer.buildToken({
  scopesOrTransform: (_h, p) => Object.assign(p, { sub: "bench", aud: "https://bench.test/rpc", scope: "calc" }),
});
console.log(`${server.issuer.url} ${server.issuer.url}/jwks ${token}`);
JS
node "$work/issuer.mjs" "$oauth" >"$work/issuer.out" &
issuer=$!
for _ in $(seq 1 100); do [[ -s "$work/issuer.out" ]] && break; sleep 0.1; done
read -r iss jwks token <"$work/issuer.out"
printf '%s bench calc\n' "static-bench-token-0123456789" >"$work/tokens"

tls=(--tls-cert "$work/server.pem" --tls-key "$work/server.key")
jwt=(--jwks "$jwks" --issuer "$iss" --audience https://bench.test/rpc)

# start PROGRAM ARGS...: the server in the background (under $wrap), its address in $addr.
start() {
    local log="$work/server.log"
    : >"$log"
    RPCWIRE_THREADS=1 $wrap "$@" 2>"$log" &
    server=$!
    addr=""
    for _ in $(seq 1 300); do
        addr="$(grep -v '^==' "$log" | grep -oE '127\.0\.0\.1:[1-9][0-9]*' | head -1 || true)"
        [[ -n "$addr" ]] && break
        sleep 0.1
    done
    [[ -n "$addr" ]] || { cat "$log" >&2; echo "callgrind-auth.sh: $* printed no address" >&2; exit 1; }
}

stop() {
    kill -TERM "$server"
    wait "$server" 2>/dev/null || true
    server=""
}

# feed CALLS ENV...: http-feed with these variables (HTTP_FEED_CA, HTTP_FEED_BEARER).
feed() {
    local calls="$1"
    shift
    env "$@" "$target/release/http-feed" "$addr" /rpc "$calls" >/dev/null 2>"$work/feed.err" \
        || { cat "$work/feed.err" >&2; exit 1; }
}

instructions() {
    local per="$1" envs="$2"
    shift 2
    local out="$work/callgrind.out"
    rm -f "$out"
    wrap="valgrind --tool=callgrind --callgrind-out-file=$out"
    start "$@"
    # shellcheck disable=SC2086
    feed "$per" $envs
    stop
    sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$out"
}

rate() {
    local envs="$1"
    shift
    wrap=""
    start "$@"
    # shellcheck disable=SC2086
    feed "$rate_calls" $envs
    stop
    sed -n 's/.*: \([0-9]*\) calls\/s$/\1/p' "$work/feed.err"
}

# The last two rows send the same requests as `tokens` and `jwt` (their `Authorization`
# header included) to the server without authentication: the difference to those rows is
# what checking the credential costs, apart from the bytes the header adds to every request.
# The last three: every head differs from the one before (`HTTP_FEED_VARY`: an `X-Request`
# field numbered per call), so no head is taken for the connection's last one.
names=(plain https tokens jwt https-jwt plain+token-header plain+jwt-header
       plain,heads-vary tokens,heads-vary jwt,heads-vary)
envs=("" "HTTP_FEED_CA=$work/ca.pem" "HTTP_FEED_BEARER=static-bench-token-0123456789"
      "HTTP_FEED_BEARER=$token" "HTTP_FEED_CA=$work/ca.pem HTTP_FEED_BEARER=$token"
      "HTTP_FEED_BEARER=static-bench-token-0123456789" "HTTP_FEED_BEARER=$token"
      "HTTP_FEED_VARY=1" "HTTP_FEED_VARY=1 HTTP_FEED_BEARER=static-bench-token-0123456789"
      "HTTP_FEED_VARY=1 HTTP_FEED_BEARER=$token")
args=("" "${tls[*]}" "--tokens $work/tokens" "${jwt[*]}" "${tls[*]} ${jwt[*]}" "" ""
      "" "--tokens $work/tokens" "${jwt[*]}")

echo "W1 POSTs over $conns keep-alive connections, one server thread;"
echo "instructions at the margin = (I($big calls each) - I($small calls each)) / $(( (big - small) * conns )) calls"
echo
echo "| server | per call at the margin | vs plain | calls/s | vs plain |"
echo "|---|---:|---:|---:|---:|"
declare -A per rates
for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    at_big="$(instructions "$big" "${envs[$i]}" "$target/release/rpcwire" serve --http 127.0.0.1:0 ${args[$i]})"
    # shellcheck disable=SC2086
    at_small="$(instructions "$small" "${envs[$i]}" "$target/release/rpcwire" serve --http 127.0.0.1:0 ${args[$i]})"
    per[$i]=$(( (at_big - at_small) / ((big - small) * conns) ))
    # shellcheck disable=SC2086
    rates[$i]="$(rate "${envs[$i]}" "$target/release/rpcwire" serve --http 127.0.0.1:0 ${args[$i]})"
    awk -v n="${names[$i]}" -v p="${per[$i]}" -v p0="${per[0]}" -v r="${rates[$i]}" -v r0="${rates[0]}" \
        'BEGIN { printf "| %s | %d | %.3f | %d | %.3f |\n", n, p, p / p0, r, r / r0 }'
done
awk -v t="${per[2]}" -v j="${per[3]}" -v h="${per[1]}" -v hj="${per[4]}" \
    'BEGIN { printf "\ncached JWT / static tokens: %.3f; HTTPS+JWT / HTTPS: %.3f\n", j / t, hj / h }'
awk -v t="${per[2]}" -v j="${per[3]}" -v th="${per[5]}" -v jh="${per[6]}" \
    'BEGIN { printf "same requests without authentication: static tokens %.3f, cached JWT %.3f\n", t / th, j / jh }'
awk -v p="${per[7]}" -v t="${per[8]}" -v j="${per[9]}" \
    'BEGIN { printf "every head other than the last: static tokens %.3f, cached JWT %.3f against plain\n", t / p, j / p }'
