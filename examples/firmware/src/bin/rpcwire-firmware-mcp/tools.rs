//! The device's MCP tools and the glue between the driver and `rpcwire_mcp::Server`.
//!
//! The MCP rules (handshake, negotiation, `tools/list`, `tools/call` parsing, progress-token
//! bookkeeping) are `rpcwire_mcp::Server`'s; this module only runs the tools. Results are
//! rendered as JSON text into a small stack buffer ([`crate::text::Text`]) and handed over as
//! bytes (`rpcwire_mcp::Text::Json`), so no UTF-8 check and no float code is linked.

use rpcwire::wire::RawJson;
use rpcwire::ErrorCode;
use rpcwire_embedded_io::Incoming;
use rpcwire_mcp::{member, Server, ServerInfo, Step, Tool, ToolCall};

use crate::clock::SysTickClock;
use crate::text::{int, Raw, Text};
use crate::{Ctx, INFLIGHT};

/// What the server says of itself in its `initialize` and `server/discover` results.
static INFO: ServerInfo<'static> = ServerInfo {
    name: "rpcwire-firmware-mcp",
    version: env!("CARGO_PKG_VERSION"),
    instructions: Some(
        "A Cortex-M3 board: read its counter, switch or blink its LED, add integers.",
    ),
    logging: false,
};

/// The tools, in `tools/list` order; [`Device::run`] matches on their positions.
static TOOLS: &[Tool<'static>] = &[
    Tool {
        name: "read_counter",
        description: "Reads the device's counter (tool calls served since boot), its uptime in milliseconds and its stack high-water mark in bytes.",
        input_schema: r#"{"type":"object","properties":{}}"#,
    },
    Tool {
        name: "set_led",
        description: "Turns the LED on or off.",
        input_schema: r#"{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}"#,
    },
    Tool {
        name: "add",
        description: "Adds two 64-bit integers on the device.",
        input_schema: r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#,
    },
    Tool {
        name: "blink",
        description: "Toggles the LED `times` times (1 to 20), 20 ms apart, reporting progress after each toggle when asked.",
        input_schema: r#"{"type":"object","properties":{"times":{"type":"integer","minimum":1,"maximum":20}},"required":["times"]}"#,
    },
];

/// The most toggles one `blink` call makes.
const MAX_BLINKS: i64 = 20;
/// Milliseconds between toggles.
const BLINK_MS: u64 = 20;

/// The device: its MCP server state and what the tools act on.
pub struct Device {
    server: Server<'static, INFLIGHT>,
    /// The LED (a variable on qemu; a GPIO pin on a board).
    led: bool,
    /// Tool calls served since boot.
    counter: u32,
}

impl Device {
    /// A device that has just booted (no session yet).
    pub const fn new() -> Self {
        Device {
            server: Server::new(&INFO, TOOLS),
            led: false,
            counter: 0,
        }
    }

    /// Handles one inbound item: the server answers the protocol's requests itself and hands
    /// over tool calls; `rpc.stats` is answered here, other requests get Method not found.
    pub fn handle(&mut self, ctx: &mut Ctx<'_>, item: Incoming<'_>) {
        let server = &mut self.server;
        let step = match item {
            Incoming::Request(req) => ctx.retry(|conn| server.request(conn, req)),
            Incoming::Notification(n) => Ok(server.notification(n)),
            // Responses (the device sends no requests), problems (already answered by the
            // connection) and events need nothing.
            _ => return,
        };
        match step {
            Ok(Step::Call(call)) => self.call(ctx, call),
            Ok(Step::Request(req)) => {
                let _ = if req.method.eq_str(crate::stats::METHOD) {
                    let mut text = Text::new();
                    let json = crate::stats::render(&ctx.conn().stats(), &mut text);
                    ctx.respond(req.handle, &Raw(json))
                } else {
                    ctx.reject(req.handle, ErrorCode::METHOD_NOT_FOUND)
                };
                self.server.finish(req.handle);
            }
            // Every tool runs to its end inside `call`: a cancellation can never find one
            // running.
            _ => {}
        }
    }

    fn call(&mut self, ctx: &mut Ctx<'_>, call: ToolCall<'_>) {
        self.counter = self.counter.wrapping_add(1);
        let mut text = Text::new();
        let failed = match call.tool {
            0 => {
                let uptime = crate::text::div_small(ctx.now().as_micros(), 1000).0;
                text.put(b"\"counter=")
                    .int(i64::from(self.counter))
                    .put(b" uptime_ms=")
                    .int(uptime as i64)
                    .put(b" stack_used=")
                    .int(crate::stack::used() as i64)
                    .put(b"\"");
                false
            }
            1 => match arg(call.arguments, "on").map(|v| v.as_bytes()) {
                Some(b"true") | Some(b"false") => {
                    self.led = arg(call.arguments, "on").map(|v| v.as_bytes()) == Some(b"true");
                    text.put(if self.led {
                        b"\"LED on\""
                    } else {
                        b"\"LED off\""
                    });
                    false
                }
                _ => {
                    text.put(br#""set_led expects {\"on\": true or false}""#);
                    true
                }
            },
            2 => match (int_arg(call.arguments, "a"), int_arg(call.arguments, "b")) {
                (Some(a), Some(b)) => match a.checked_add(b) {
                    Some(sum) => {
                        text.put(b"\"").int(sum).put(b"\"");
                        false
                    }
                    None => {
                        text.put(b"\"the sum overflows 64 bits\"");
                        true
                    }
                },
                _ => {
                    text.put(b"\"add expects integers a and b\"");
                    true
                }
            },
            _ => match int_arg(call.arguments, "times") {
                Some(times @ 1..=MAX_BLINKS) => {
                    self.blink(ctx, call, times as u32);
                    text.put(b"\"blinked ").int(times).put(b" times\"");
                    false
                }
                _ => {
                    text.put(b"\"blink expects times from 1 to 20\"");
                    true
                }
            },
        };
        let server = &mut self.server;
        let json = rpcwire_mcp::Text::Json(text.bytes());
        if ctx
            .retry(|conn| server.respond_tool(conn, call.handle, json, failed))
            .is_err()
        {
            // Never for these short results; still, the call must end.
            self.server.finish(call.handle);
            let _ = ctx.reject(call.handle, ErrorCode::INTERNAL_ERROR);
        }
    }

    /// Toggles the LED `times` times, sending `notifications/progress` after each toggle
    /// when the call carries a progress token (written out at once, before the result).
    fn blink(&mut self, ctx: &mut Ctx<'_>, call: ToolCall<'_>, times: u32) {
        let mut clock = SysTickClock::default();
        for done in 1..=times {
            self.led = !self.led;
            let until = clock.millis() + BLINK_MS;
            while clock.millis() < until {
                cortex_m::asm::wfi();
            }
            if call.wants_progress {
                let server = &mut self.server;
                let _ =
                    ctx.retry(|conn| server.progress(conn, call.handle, done, Some(times), None));
                ctx.flush();
            }
        }
    }
}

/// Member `name` of the call's arguments.
fn arg<'a>(arguments: Option<RawJson<'a>>, name: &str) -> Option<RawJson<'a>> {
    member(arguments?, name)
}

/// Member `name` of the call's arguments as an integer.
fn int_arg(arguments: Option<RawJson<'_>>, name: &str) -> Option<i64> {
    int(arg(arguments, name)?)
}
