#!/usr/bin/env bash
# HTTP load generators for the graceful-shutdown test (cli/tests/drain_load.rs): wrk
# (HTTP/1.1 keep-alive) and h2load (HTTP/2, Debian package nghttp2-client). Idempotent (a
# second run only checks). That test's OTLP receiver comes from observability.sh.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi

missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "load tools: $(wrk --version 2>&1 | head -1 || true); $(h2load --version 2>&1 | head -1)"
