#!/usr/bin/env bash
# Installs the official A2A SDKs the A2A interop tests drive (profiles/a2a/tests/,
# examples/a2a-agent/tests/, examples/orchestrator/tests/): PyPI `a2a-sdk[http-server]` (client,
# server, httpx; uvicorn serves the SDK's own agent) in a virtualenv and npm `@a2a-js/sdk` in a node_modules folder, both pinned,
# under $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/a2a. Quick when done.
set -euo pipefail
PY_A2A='a2a-sdk[http-server]==1.3.0'
PY_UVICORN='uvicorn==0.54.0'
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
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("a2a-sdk") != sys.argv[1] or m.version("uvicorn") != sys.argv[2])' "$want_py" "${PY_UVICORN##*==}" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$PY_A2A" "$PY_UVICORN"
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
