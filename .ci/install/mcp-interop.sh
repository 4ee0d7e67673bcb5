#!/usr/bin/env bash
# Installs the official MCP SDKs the MCP interop tests drive (examples/mcp-server/tests/sdk_*.rs):
# PyPI `mcp` in a virtualenv, npm `@modelcontextprotocol/sdk` (1.x, the 2025 revisions) in one
# node_modules folder and npm `@modelcontextprotocol/client` (2.x, which speaks 2026-07-28) in
# another, all pinned, under $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/mcp.
# Quick when done.
set -euo pipefail
PY_MCP='mcp==2.3.0'
NPM_SDK='@modelcontextprotocol/sdk@1.32.2'
NPM_CLIENT='@modelcontextprotocol/client@2.4.0'
dir="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/mcp"
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
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != sys.argv[1])' "${PY_MCP#mcp==}" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$PY_MCP"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python mcp", m.version("mcp"))'
# OpenTelemetry's SDK beside the API that `mcp` 2 depends on: the SDK server's own span of each
# call (OpenTelemetryMiddleware) is then recorded, and the tool of
# examples/mcp-server/tests/interop/python_meta_server.py reports it (client_traces.rs). The
# API pinned with it: the SDK needs the same version.
PY_OTEL_SDK='opentelemetry-sdk==1.45.2'
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("opentelemetry-sdk") != sys.argv[1])' "${PY_OTEL_SDK#*==}" 2>/dev/null; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$PY_OTEL_SDK" "opentelemetry-api==${PY_OTEL_SDK#*==}"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python opentelemetry-sdk", m.version("opentelemetry-sdk"), "api", m.version("opentelemetry-api"))'

node_dir="$dir/node"
want="${NPM_SDK##*@}"
have=$(node -p "require('$node_dir/node_modules/@modelcontextprotocol/sdk/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "$NPM_SDK"
fi
echo "npm @modelcontextprotocol/sdk $(node -p "require('$node_dir/node_modules/@modelcontextprotocol/sdk/package.json').version")"

# The 2.x client (tests/sdk_modern.rs), in a folder of its own: it and the 1.x package both
# bring their own copies of the shared dependencies.
client_dir="$dir/node-client"
want="${NPM_CLIENT##*@}"
have=$(node -p "require('$client_dir/node_modules/@modelcontextprotocol/client/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$client_dir"
  npm install --silent --no-audit --no-fund --prefix "$client_dir" "$NPM_CLIENT"
fi
echo "npm @modelcontextprotocol/client $(node -p "require('$client_dir/node_modules/@modelcontextprotocol/client/package.json').version")"
