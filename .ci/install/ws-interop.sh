#!/usr/bin/env bash
# Installs what the WebSocket interop and browser tests use (cli/tests/ws_interop.rs,
# cli/tests/ws_console.rs): Python `websockets` and `selenium` in a virtualenv, Node's `ws` in a
# node_modules folder (both under $RPCWIRE_INTEROP, default ~/.cache/rpcwire-interop/ws), and
# Debian's Chromium with its chromedriver, and for transports/http/tests/axum_tls.rs's mutual
# TLS: NSS's certutil/pk12util and openssl (a test puts its client certificate into an NSS
# database under a scratch HOME, where Chromium on Linux looks for client certificates) and a
# Chromium policy that selects, without the dialog a headless browser cannot answer, a client
# certificate for https://127.0.0.1 pages, and only one issued by the tests' CA (its common
# name below). Chromium reads policies only from /etc/chromium/policies (its --policy switch is
# ignored in Debian's build). Pinned, idempotent, quick when already installed.
set -euo pipefail
DIR="${RPCWIRE_INTEROP:-$HOME/.cache/rpcwire-interop/ws}"
PY_PKGS=(websockets==17.4 selenium==4.45.0)
NODE_PKG='ws@8.23.0'
mkdir -p "$DIR"

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
[ -x /usr/bin/chromedriver ] || need_apt+=(chromium-driver)
command -v pk12util >/dev/null 2>&1 || need_apt+=(libnss3-tools)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

POLICY=/etc/chromium/policies/managed/rpcwire-loopback-client-certificate.json
mkdir -p "$(dirname "$POLICY")"
cat >"$POLICY" <<'JSON'
{"AutoSelectCertificateForUrls": ["{\"pattern\":\"https://127.0.0.1:*\",\"filter\":{\"ISSUER\":{\"CN\":\"rpcwire browser test CA\"}}}"]}
JSON

if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
if ! "$DIR/venv/bin/python" - "${PY_PKGS[@]}" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version
PY
then
  "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_PKGS[@]}"
fi

if [ "$(node -p "try{require('$DIR/node_modules/ws/package.json').version}catch(e){''}" 2>/dev/null)" != "${NODE_PKG#ws@}" ]; then
  npm install --silent --no-audit --no-fund --prefix "$DIR" "$NODE_PKG"
fi

"$DIR/venv/bin/python" -c 'import websockets, selenium; print("websockets", websockets.__version__, "selenium", selenium.__version__)'
node -p "'ws ' + require('$DIR/node_modules/ws/package.json').version"
/usr/bin/chromium --version 2>/dev/null
/usr/bin/chromedriver --version
