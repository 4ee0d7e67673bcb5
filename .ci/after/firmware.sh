#!/usr/bin/env bash
# The firmware images on emulated microcontrollers: builds each in release (rustfmt and clippy
# of its own workspace too), checks its size against its budget, and runs the qemu end-to-end
# tests: examples/firmware (Cortex-M3), examples/firmware-m0 (Cortex-M0, nRF51 on qemu's
# microbit).
#
# Budgets (issue: a firmware engineer's UART server with 1 KiB receive and 1 KiB transmit
# buffers): flash = text + data <= 16 KiB, static RAM = data + bss <= 4 KiB. Both are enforced;
# the stack high-water mark (from the firmware's `rpc.stats` method) is reported.
# The MCP image (rpcwire-firmware-mcp, same crate): flash <= 24 KiB, static RAM <= 6 KiB,
# enforced the same way; its end-to-end test is the Python MCP SDK through `rpcwire bridge`
# (cli/tests/firmware_mcp.rs), which reports its stack high-water mark.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLASH_BUDGET=16384
RAM_BUDGET=4096
ELF=examples/firmware/target/thumbv7m-none-eabi/release/rpcwire-firmware
MCP_FLASH_BUDGET=24576
MCP_RAM_BUDGET=6144
MCP_ELF=examples/firmware/target/thumbv7m-none-eabi/release/rpcwire-firmware-mcp
# The Cortex-M0 image: the demo methods in 16 KiB of flash and 4 KiB of RAM (issue 46).
M0_FLASH_BUDGET=16384
M0_RAM_BUDGET=4096
M0_ELF=examples/firmware-m0/target/thumbv6m-none-eabi/release/rpcwire-firmware-m0

for dir in examples/firmware examples/firmware-m0; do
  echo "--- $dir: build (release), rustfmt, clippy (its own workspace)"
  (cd "$dir" && cargo fmt --check)
  (cd "$dir" && CARGO_TARGET_DIR=target cargo build --release)
  (cd "$dir" && CARGO_TARGET_DIR=target cargo clippy --release -- -D warnings)
done

SIZE_TOOL=arm-none-eabi-size
if ! command -v "$SIZE_TOOL" >/dev/null; then
  echo "error: $SIZE_TOOL not found (.ci/install/embedded.sh installs binutils-arm-none-eabi)" >&2
  exit 1
fi
read -r text data bss _ < <("$SIZE_TOOL" -B "$ELF" | tail -n 1)
flash=$((text + data))
ram=$((data + bss))
read -r mtext mdata mbss _ < <("$SIZE_TOOL" -B "$MCP_ELF" | tail -n 1)
mflash=$((mtext + mdata))
mram=$((mdata + mbss))
read -r m0text m0data m0bss _ < <("$SIZE_TOOL" -B "$M0_ELF" | tail -n 1)
m0flash=$((m0text + m0data))
m0ram=$((m0data + m0bss))

echo "--- qemu end-to-end test"
log=$(mktemp)
cargo test -p rpcwire-tests --test firmware_qemu -- --nocapture 2>&1 | tee "$log"
stack=$(sed -n 's/.*FIRMWARE_STACK_USED=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
echo "--- qemu MCP test (Python MCP SDK through rpcwire bridge --serial)"
cargo test -p rpcwire-cli --test firmware_mcp -- --nocapture 2>&1 | tee "$log"
mstack=$(sed -n 's/.*FIRMWARE_MCP_STACK_USED=\([0-9]*\).*/\1/p' "$log" | tail -n 1)
rm -f "$log"

echo "--- firmware size"
printf '%-26s %7s %s\n' "text" "$text" ""
printf '%-26s %7s %s\n' "data" "$data" ""
printf '%-26s %7s %s\n' "bss" "$bss" ""
printf '%-26s %7s / %s (%d spare)\n' "flash (text+data)" "$flash" "$FLASH_BUDGET" "$((FLASH_BUDGET - flash))"
printf '%-26s %7s / %s (%d spare)\n' "static RAM (data+bss)" "$ram" "$RAM_BUDGET" "$((RAM_BUDGET - ram))"
printf '%-26s %7s\n' "stack high-water mark" "${stack:-unknown}"
echo "--- MCP firmware size (rpcwire-firmware-mcp)"
printf '%-26s %7s %s\n' "text" "$mtext" ""
printf '%-26s %7s %s\n' "data" "$mdata" ""
printf '%-26s %7s %s\n' "bss" "$mbss" ""
printf '%-26s %7s / %s (%d spare)\n' "flash (text+data)" "$mflash" "$MCP_FLASH_BUDGET" "$((MCP_FLASH_BUDGET - mflash))"
printf '%-26s %7s / %s (%d spare)\n' "static RAM (data+bss)" "$mram" "$MCP_RAM_BUDGET" "$((MCP_RAM_BUDGET - mram))"
printf '%-26s %7s\n' "stack high-water mark" "${mstack:-unknown}"
echo "--- Cortex-M0 firmware size (rpcwire-firmware-m0)"
printf '%-26s %7s / %s (%d spare)\n' "flash (text+data)" "$m0flash" "$M0_FLASH_BUDGET" "$((M0_FLASH_BUDGET - m0flash))"
printf '%-26s %7s / %s (%d spare)\n' "static RAM (data+bss)" "$m0ram" "$M0_RAM_BUDGET" "$((M0_RAM_BUDGET - m0ram))"

status=0
if [ "$flash" -gt "$FLASH_BUDGET" ]; then
  echo "error: flash $flash bytes exceeds the budget of $FLASH_BUDGET" >&2
  status=1
fi
if [ "$ram" -gt "$RAM_BUDGET" ]; then
  echo "error: static RAM $ram bytes exceeds the budget of $RAM_BUDGET" >&2
  status=1
fi
if [ "$mflash" -gt "$MCP_FLASH_BUDGET" ]; then
  echo "error: MCP image flash $mflash bytes exceeds the budget of $MCP_FLASH_BUDGET" >&2
  status=1
fi
if [ "$mram" -gt "$MCP_RAM_BUDGET" ]; then
  echo "error: MCP image static RAM $mram bytes exceeds the budget of $MCP_RAM_BUDGET" >&2
  status=1
fi
if [ "$m0flash" -gt "$M0_FLASH_BUDGET" ]; then
  echo "error: Cortex-M0 image flash $m0flash bytes exceeds the budget of $M0_FLASH_BUDGET" >&2
  status=1
fi
if [ "$m0ram" -gt "$M0_RAM_BUDGET" ]; then
  echo "error: Cortex-M0 image static RAM $m0ram bytes exceeds the budget of $M0_RAM_BUDGET" >&2
  status=1
fi
if [ -z "$mstack" ]; then
  echo "error: the MCP qemu test did not report the stack high-water mark" >&2
  status=1
fi
if [ -z "$stack" ]; then
  echo "error: the qemu test did not report the stack high-water mark" >&2
  status=1
fi
exit $status
