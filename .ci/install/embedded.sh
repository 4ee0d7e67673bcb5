#!/usr/bin/env bash
# Tools for the serial and firmware end-to-end tests: qemu (lm3s6965evb, microbit and mps2-an386
# boards), socat (pty pairs), binutils for ARM (size budgets), and the rustup targets of the
# no_std builds and firmware images.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo"; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends qemu-system-arm socat binutils-arm-none-eabi >/dev/null
rustup target add thumbv7m-none-eabi thumbv6m-none-eabi thumbv7em-none-eabihf >/dev/null
qemu-system-arm --version | head -n1
socat -V | head -n2 | tail -n1
arm-none-eabi-size --version | head -n1
