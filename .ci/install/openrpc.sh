#!/usr/bin/env bash
# Installs the OpenRPC validator the rpc.discover test drives (cli/tests/cli_discover.rs):
# npm `@open-rpc/schema-utils-js`, pinned, into a node_modules folder under
# $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/openrpc. Quick when done.
set -euo pipefail
NPM_PKG='@open-rpc/schema-utils-js@2.2.1'
dir="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/openrpc"
mkdir -p "$dir"

need_apt=()
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  apt-get install -y --no-install-recommends "${need_apt[@]}"
fi

want="${NPM_PKG##*@}"
have=$(node -p "require('$dir/node_modules/@open-rpc/schema-utils-js/package.json').version" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  npm install --silent --no-audit --no-fund --prefix "$dir" "$NPM_PKG"
fi
echo "npm @open-rpc/schema-utils-js $(node -p "require('$dir/node_modules/@open-rpc/schema-utils-js/package.json').version")"
