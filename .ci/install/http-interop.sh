#!/usr/bin/env bash
# Third-party HTTP clients and nginx for the HTTP transport's interop tests
# (cli/tests/http_interop.rs): Python httpx, jsonrpcclient and httpx-sse in a venv, Node's
# eventsource package in a local node_modules, nginx from Debian. Pinned; idempotent (a
# second run only checks). The directory is $RPCWIRE_HTTP_INTEROP, by default
# $HOME/.cache/rpcwire-interop/http.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
DIR="${RPCWIRE_HTTP_INTEROP:-$HOME/.cache/rpcwire-interop/http}"
PY_PKGS=(httpx==0.28.1 httpx-sse==0.4.3 jsonrpcclient==4.0.3)
NPM_PKG='eventsource@3.0.7'
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  # nginx is run by the tests from a temporary prefix; the package's own service is not needed.
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$DIR"
if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
if ! "$DIR/venv/bin/python" - "${PY_PKGS[@]}" <<'PY' 2>/dev/null
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version, spec
PY
then
  "$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "${PY_PKGS[@]}"
fi

want="${NPM_PKG#eventsource@}"
have="$(node -p "require('$DIR/node/node_modules/eventsource/package.json').version" 2>/dev/null || true)"
if [ "$have" != "$want" ]; then
  mkdir -p "$DIR/node"
  npm install --prefix "$DIR/node" --no-audit --no-fund --silent "$NPM_PKG" >/dev/null
fi

"$DIR/venv/bin/python" -c 'import importlib.metadata as m; print(" ".join(f"{p} {m.version(p)}" for p in ("httpx", "httpx-sse", "jsonrpcclient")))'
echo "eventsource $(node -p "require('$DIR/node/node_modules/eventsource/package.json').version")"
(nginx -v || /usr/sbin/nginx -v) 2>&1
