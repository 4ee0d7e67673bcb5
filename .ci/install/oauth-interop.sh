#!/usr/bin/env bash
# The authorization server and the clients of the authentication tests
# (cli/tests/auth_matrix.rs, cli/tests/auth_python.rs): npm `oauth2-mock-server` (issues
# signed JWTs, serves its JWKS) in a local node_modules, and a virtualenv with Python
# `httpx`, `websockets` and the official MCP SDK. Pinned; idempotent (a second run only
# checks). The directory is $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/oauth.
set -euo pipefail
NPM_PKG='oauth2-mock-server@9.3.0'
PY_PKGS=(mcp==2.3.0 httpx==0.28.1 websockets==17.4)
DIR="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/oauth"
mkdir -p "$DIR"

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

want="${NPM_PKG##*@}"
have=$(node -p "require('$DIR/node/node_modules/oauth2-mock-server/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$DIR/node"
  npm install --silent --no-audit --no-fund --prefix "$DIR/node" "$NPM_PKG"
fi
echo "npm oauth2-mock-server $(node -p "require('$DIR/node/node_modules/oauth2-mock-server/package.json').version")"

venv="$DIR/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" - "${PY_PKGS[@]}" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version, spec
PY
then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY_PKGS[@]}"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python", *(f"{p} {m.version(p)}" for p in ("mcp", "httpx", "websockets")))'
