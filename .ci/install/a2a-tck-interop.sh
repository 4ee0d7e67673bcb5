#!/usr/bin/env bash
# Installs what the official A2A TCK (the pinned copy in ../shared/testdata/a2a-tck, see its
# PINNED.md) needs to run against this project's A2A server (examples/a2a-tck-sut/tests/):
# a Python 3.11+ virtualenv with the TCK's dependencies from PyPI, pinned (the TCK's
# pyproject.toml names only lower bounds; its uv.lock is not in the copy). The TCK itself is
# not installed: the test runs it from a temporary copy with this virtualenv's Python.
# Idempotent (a second run only checks). The directory is
# $RPCWIRE_INTEROP_DIR (default ~/.cache/rpcwire-interop)/a2a-tck.
set -euo pipefail
PY_PKGS=(
  pytest==9.2.0 pytest-asyncio==1.5.0 httpx==0.28.1 grpcio==1.85.3 protobuf==7.36.2
  googleapis-common-protos==1.76.0 jsonschema==4.26.0 pytest-html==4.2.0
  gherkin-official==42.0.1 Jinja2==3.1.6
)
DIR="${RPCWIRE_INTEROP_DIR:-$HOME/.cache/rpcwire-interop}/a2a-tck"
mkdir -p "$DIR"

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ "${#need_apt[@]}" -gt 0 ]; then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need_apt[@]}"
fi
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "the A2A TCK needs Python 3.11 or newer; python3 is $(python3 --version)" >&2
  exit 1
}

venv="$DIR/venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" - "${PY_PKGS[@]}" <<'PY' >/dev/null 2>&1
import sys, importlib.metadata as m
for spec in sys.argv[1:]:
    name, version = spec.split("==")
    assert m.version(name) == version, spec
PY
then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "${PY_PKGS[@]}"
fi
"$venv/bin/python" -c 'import importlib.metadata as m; print("python", *(f"{p} {m.version(p)}" for p in ("pytest", "httpx", "grpcio", "protobuf")))'
