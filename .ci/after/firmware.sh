#!/usr/bin/env bash
# The firmware images on emulated microcontrollers: builds each in release (rustfmt and clippy
# of its own workspace too), checks its size against its budget, and runs the qemu end-to-end
# tests: examples/firmware (Cortex-M3), examples/firmware-m0 (Cortex-M0, nRF51 on qemu's
# microbit), examples/firmware-embassy (Cortex-M4F on qemu's mps2-an386: the embassy image and
# the typed-methods image).
#
# Budgets (issue: a firmware engineer's UART server with 1 KiB receive and 1 KiB transmit
# buffers): flash = text + data <= 16 KiB, static RAM = data + bss <= 4 KiB. Both are enforced;
# the stack high-water mark (from the firmware's `rpc.stats` method) is reported.
# The MCP image (rpcwire-firmware-mcp, same crate): flash <= 24 KiB, static RAM <= 6 KiB,
# enforced the same way; its end-to-end test is the Python MCP SDK through `rpcwire bridge`
# (cli/tests/firmware_mcp.rs), which reports its stack high-water mark, and its MCP 2026-07-28
# answers are checked exactly over its UART by tests/tests/firmware_qemu.rs.
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
# The embassy and typed images: sizes reported; what an f32 result costs (the typed image
# against its `integer-temp` build) at most 3 KiB, and its handler code at most 40 lines.
EMB_DIR=examples/firmware-embassy
EMB_ELF=$EMB_DIR/target/thumbv7em-none-eabihf/release/rpcwire-firmware-embassy
TYPED_ELF=$EMB_DIR/target/thumbv7em-none-eabihf/release/rpcwire-firmware-typed
TYPED_INT_ELF=$EMB_DIR/target/integer-temp/thumbv7em-none-eabihf/release/rpcwire-firmware-typed
F32_BUDGET=3072
HANDLER_LINES_BUDGET=40

echo "--- rpcwire-embedded-io's own cross builds with its optional features"
for target in thumbv6m-none-eabi thumbv7em-none-eabihf; do
  cargo build -p rpcwire-embedded-io --no-default-features --features async,defmt,embedded-io-06 --target "$target"
done

for dir in examples/firmware examples/firmware-m0 examples/firmware-embassy; do
  echo "--- $dir: build (release), rustfmt, clippy (its own workspace)"
  (cd "$dir" && cargo fmt --check)
  (cd "$dir" && CARGO_TARGET_DIR=target cargo build --release)
  (cd "$dir" && CARGO_TARGET_DIR=target cargo clippy --release -- -D warnings)
done

echo "--- the typed image with an integer temp.read (what the f32 result costs)"
(cd "$EMB_DIR" && CARGO_TARGET_DIR=target/integer-temp cargo build --release --bin rpcwire-firmware-typed --features integer-temp)
handler_lines=$(awk '/^\/\/ --- handler code/{f=1;next} /^\/\/ --- end of handler code/{f=0} f && !/^[[:space:]]*$/ && !/^[[:space:]]*\/\//' \
  "$EMB_DIR/src/bin/rpcwire-firmware-typed.rs" | wc -l)

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
flash_of() { local t d b; read -r t d b _ < <("$SIZE_TOOL" -B "$1" | tail -n 1); echo $((t + d)); }
ram_of() { local t d b; read -r t d b _ < <("$SIZE_TOOL" -B "$1" | tail -n 1); echo $((d + b)); }
emb_flash=$(flash_of "$EMB_ELF")
emb_ram=$(ram_of "$EMB_ELF")
typed_flash=$(flash_of "$TYPED_ELF")
typed_ram=$(ram_of "$TYPED_ELF")
typed_int_flash=$(flash_of "$TYPED_INT_ELF")
f32_cost=$((typed_flash - typed_int_flash))

# The qemu end-to-end tests ran in the test stage (the README's test command) and recorded the
# stack high-water marks in target/figures/; they run here only when this script runs alone.
figures=target/figures
if [ ! -s "$figures/firmware-stack-used" ] || [ ! -s "$figures/firmware-mcp-stack-used" ]; then
  echo "--- qemu end-to-end tests (no figures recorded by the test stage)"
  cargo test -p rpcwire-tests --test firmware_qemu
  cargo test -p rpcwire-cli --test firmware_mcp
fi
stack=$(cat "$figures/firmware-stack-used" 2>/dev/null || true)
mstack=$(cat "$figures/firmware-mcp-stack-used" 2>/dev/null || true)

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
echo "--- embassy firmware size (rpcwire-firmware-embassy)"
printf '%-26s %7s\n' "flash (text+data)" "$emb_flash"
printf '%-26s %7s\n' "static RAM (data+bss)" "$emb_ram"
echo "--- typed firmware size (rpcwire-firmware-typed)"
printf '%-26s %7s\n' "flash (text+data)" "$typed_flash"
printf '%-26s %7s\n' "static RAM (data+bss)" "$typed_ram"
printf '%-26s %7s\n' "flash, integer temp.read" "$typed_int_flash"
printf '%-26s %7s / %s\n' "f32 result costs" "$f32_cost" "$F32_BUDGET"
printf '%-26s %7s / %s\n' "handler code lines" "$handler_lines" "$HANDLER_LINES_BUDGET"

status=0
# budget WHAT VALUE LIMIT: the stage fails when VALUE is over LIMIT.
budget() {
  if [ "$2" -gt "$3" ]; then
    echo "error: $1 is $2, over the budget of $3" >&2
    status=1
  fi
}
budget "the JSON-RPC image's flash" "$flash" "$FLASH_BUDGET"
budget "the JSON-RPC image's static RAM" "$ram" "$RAM_BUDGET"
budget "the MCP image's flash" "$mflash" "$MCP_FLASH_BUDGET"
budget "the MCP image's static RAM" "$mram" "$MCP_RAM_BUDGET"
budget "the Cortex-M0 image's flash" "$m0flash" "$M0_FLASH_BUDGET"
budget "the Cortex-M0 image's static RAM" "$m0ram" "$M0_RAM_BUDGET"
budget "the flash an f32 result costs" "$f32_cost" "$F32_BUDGET"
budget "the typed image's handler code (lines)" "$handler_lines" "$HANDLER_LINES_BUDGET"
if [ -z "$mstack" ]; then
  echo "error: the MCP qemu test did not report the stack high-water mark" >&2
  status=1
fi
if [ -z "$stack" ]; then
  echo "error: the qemu test did not report the stack high-water mark" >&2
  status=1
fi
exit $status
