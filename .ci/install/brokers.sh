#!/usr/bin/env bash
# Installs what the message-broker transports' tests use: the NATS server from Debian and its
# Python client `nats-py` (transports/nats/tests/nats.rs, cli/tests/cli_nats.rs, and the `nats`
# bench), and the Mosquitto broker and `paho-mqtt` (transports/mqtt/tests/mqtt.rs,
# cli/tests/cli_mqtt.rs: the tests start `mosquitto -c` with a configuration of their own); the Python
# clients in a virtualenv under $RPCWIRE_INTEROP (default ~/.cache/rpcwire-interop/brokers,
# where `rpcwire_tests::interop::venv_python("brokers", ..)` looks). Pinned, idempotent, quick
# when already installed.
set -euo pipefail
DIR="${RPCWIRE_INTEROP:-$HOME/.cache/rpcwire-interop/brokers}"
PY_PKGS=(nats-py==2.16.0 paho-mqtt==2.2.0)
mkdir -p "$DIR"

need_apt=()
command -v nats-server >/dev/null 2>&1 || need_apt+=(nats-server)
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need_apt+=(mosquitto)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi
# The Debian packages start their services; the tests run brokers of their own on loopback.
for service in nats-server mosquitto; do
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now "$service" >/dev/null 2>&1 || true; fi
done

if [ ! -x "$DIR/venv/bin/python" ]; then
  python3 -m venv "$DIR/venv"
fi
if ! "$DIR/venv/bin/python" - "${PY_PKGS[@]}" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version
PY
then
  "$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_PKGS[@]}"
fi

nats-server --version
"$DIR/venv/bin/python" -c 'import importlib.metadata as m; print("nats-py", m.version("nats-py"), "paho-mqtt", m.version("paho-mqtt"))'
