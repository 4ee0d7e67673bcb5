#!/usr/bin/env bash
# Installs the third-party JSON-RPC server the interop tests run `rpcwire call` against
# (cli/tests/interop_python.rs): Python's jsonrpcserver, pinned.
set -euo pipefail
if ! command -v python3 >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends python3 python3-pip
fi
pkg='jsonrpcserver==5.0.9'
python3 -m pip install --quiet --disable-pip-version-check "$pkg" \
  || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$pkg"
python3 -c 'import jsonrpcserver, importlib.metadata as m; print("jsonrpcserver", m.version("jsonrpcserver"))'
