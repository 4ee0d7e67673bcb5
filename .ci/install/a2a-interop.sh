#!/usr/bin/env bash
# Installs the official A2A SDKs the A2A interop tests drive (profiles/a2a/tests/,
# examples/a2a-agent/tests/, examples/orchestrator/tests/): PyPI `a2a-sdk[http-server]` (client,
# server, httpx; uvicorn serves the SDK's own agent; the `sqlite` and `postgresql` extras, SQLAlchemy
# with aiosqlite and asyncpg, for the SDK's `DatabaseTaskStore` in the A2A benchmark,
# bench/a2a/sdk_reference_agent.py) in a virtualenv and npm `@a2a-js/sdk` in a node_modules
# folder, all pinned, under $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/a2a. Quick
# when done.
set -euo pipefail
PY_A2A='a2a-sdk[http-server,sqlite,postgresql]==1.3.0'
PY_UVICORN='uvicorn==0.54.0'
# The extras' drivers, pinned too (the versions pip chose for a2a-sdk 1.3.0 in 2026-11).
PY_DB=('SQLAlchemy==2.1.9' 'aiosqlite==0.22.1' 'asyncpg==0.32.0')
NPM_SDK='@a2a-js/sdk@1.3.0'
dir="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/a2a"
mkdir -p "$dir"

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

venv="$dir/venv"
want_py="${PY_A2A##*==}"
# Every pinned `name==version` installed, or (re)install them all.
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(any(m.version(n) != v for n, v in (a.split("==") for a in sys.argv[1:])))' \
    "a2a-sdk==$want_py" "$PY_UVICORN" "${PY_DB[@]}" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$PY_A2A" "$PY_UVICORN" "${PY_DB[@]}"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python a2a-sdk", m.version("a2a-sdk"))'

node_dir="$dir/node"
want="${NPM_SDK##*@}"
have=$(node -p "require('$node_dir/node_modules/@a2a-js/sdk/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "$NPM_SDK"
fi
echo "npm @a2a-js/sdk $(node -p "require('$node_dir/node_modules/@a2a-js/sdk/package.json').version")"
