#!/usr/bin/env bash
# Installs what the observability tests run against (cli/tests/observability_prometheus.rs,
# cli/tests/observability_otlp.rs, and the OTLP receiver of cli/tests/drain_load.rs): a real Prometheus server (Debian's `prometheus`, run by
# the test in the foreground with its own configuration and storage on 127.0.0.1; the package
# ships `promtool`, whose `check metrics` the test runs on every exposition), the PyPI
# `prometheus-client` parser of the text exposition format, and the PyPI `opentelemetry-proto`
# messages that the OTLP receiver of the tests (tests/otlp_receiver.py) decodes the exported
# spans with; pinned, in a virtualenv under $HOME/.cache/rpcwire-interop.
set -euo pipefail
if ! command -v prometheus >/dev/null 2>&1; then
  apt-get update
  # No recommends: the node exporter and the rest are not needed.
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus
  # The package starts a system service on :9090; the tests run their own server.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
fi
prometheus --version 2>&1 | head -n 1
promtool --version 2>&1 | head -n 1
DIR="$HOME/.cache/rpcwire-interop/observability"
if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
"$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check 'prometheus-client==0.21.1' \
  'opentelemetry-proto==1.45.2' 'protobuf==6.33.6'
"$DIR/venv/bin/python" -c 'import importlib.metadata as m; print("prometheus-client", m.version("prometheus-client"))'
"$DIR/venv/bin/python" -c 'import importlib.metadata as m; print("opentelemetry-proto", m.version("opentelemetry-proto"), "protobuf", m.version("protobuf"))'
