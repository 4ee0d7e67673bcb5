#!/usr/bin/env bash
# Installs the official Agent Client Protocol SDKs the ACP interop tests drive
# (profiles/acp/tests/ and examples/acp-agent/tests/): PyPI `agent-client-protocol` in a
# virtualenv and npm `@agentclientprotocol/sdk` in a node_modules folder, both pinned, under
# $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/acp. Quick when done. The TypeScript
# SDK 2.4.0 (ESM only) runs on Debian's Node 20: no Node 22 is needed.
set -euo pipefail
PY_ACP='agent-client-protocol==0.12.1'
NPM_SDK='@agentclientprotocol/sdk@2.4.0'
dir="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/acp"
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
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("agent-client-protocol") != sys.argv[1])' "${PY_ACP#*==}" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$PY_ACP"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python agent-client-protocol", m.version("agent-client-protocol"))'

node_dir="$dir/node"
want="${NPM_SDK##*@}"
have=$(node -p "require('$node_dir/node_modules/@agentclientprotocol/sdk/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  mkdir -p "$node_dir"
  npm install --silent --no-audit --no-fund --prefix "$node_dir" "$NPM_SDK"
fi
echo "npm @agentclientprotocol/sdk $(node -p "require('$node_dir/node_modules/@agentclientprotocol/sdk/package.json').version")"
