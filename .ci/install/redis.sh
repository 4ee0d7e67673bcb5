#!/usr/bin/env bash
# Installs Redis from Debian (redis-server 7.0 on bookworm) for the MCP shared session store's
# tests (profiles/mcp/tests/redis_store.rs and examples/mcp-server/tests/replicas.rs with the
# feature `redis`) and the A2A Redis task store's (profiles/a2a: stores.rs, isolation.rs,
# replicas.rs, replica_streams.rs and --lib store::redis with the feature `redis`;
# examples/a2a-agent/tests/replicas.rs and replicas_nginx.rs with `--store redis:URL`). The
# tests run servers of their own (`rpcwire_tests::redis::Redis`: `redis-server --port PORT
# --bind 127.0.0.1 --save ''` in a temporary folder), so the package's own service is stopped. Valkey (`valkey-server`) is taken instead when it is the one installed.
# Idempotent, quick when already installed.
set -euo pipefail

if ! command -v redis-server >/dev/null 2>&1 && ! command -v valkey-server >/dev/null 2>&1; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server
fi
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now redis-server >/dev/null 2>&1 || true; fi
# Without systemd the package's init script may have started one: stop it (the tests start
# their own on free ports).
if [ -x /etc/init.d/redis-server ]; then /etc/init.d/redis-server stop >/dev/null 2>&1 || true; fi

if command -v redis-server >/dev/null 2>&1; then redis-server --version; else valkey-server --version; fi
