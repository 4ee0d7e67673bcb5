#!/usr/bin/env bash
# Installs PostgreSQL from Debian (15 on bookworm) for the A2A PostgreSQL store's tests
# (profiles/a2a/tests/stores.rs, isolation.rs, replicas.rs with `--features postgres`). The
# tests run servers of their own: `initdb` in a temporary folder as user `postgres`, then
# `postgres -D DIR -k DIR -p PORT -h 127.0.0.1` (`rpcwire_tests::postgres`), so the package's
# own cluster is stopped. Idempotent, quick when already installed.
set -euo pipefail

bin_dir() {
  for dir in /usr/lib/postgresql/*/bin; do
    if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then echo "$dir"; fi
  done | sort -V | tail -n 1
}

if [ -z "$(bin_dir)" ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
fi
if command -v systemctl >/dev/null 2>&1; then systemctl disable --now postgresql >/dev/null 2>&1 || true; fi
id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres

"$(bin_dir)/postgres" --version
"$(bin_dir)/initdb" --version
