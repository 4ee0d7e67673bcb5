//! The `rpcwire bridge` command: its arguments, the device it opens (a serial port or a TCP
//! address), and where the device is served: on stdio ([`crate::bridge::run`]) or, with
//! `--mqtt`, on an MQTT broker ([`crate::mqtt::bridge`]). Apart from the bridge itself so that
//! the MQTT side can use the bridge's codes without the two importing each other.

use std::time::Duration;

use crate::bridge::{
    run, BridgeConfig, BridgeError, DEFAULT_MAX_FRAME, DEFAULT_MAX_PENDING, DEFAULT_TIMEOUT_SECS,
    EXIT_DEVICE,
};

macro_rules! report {
    ($($arg:tt)*) => { eprintln!("rpcwire bridge: {}", format_args!($($arg)*)) };
}

/// `rpcwire bridge` arguments.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("device").required(true).args(["serial", "tcp"])))]
pub struct BridgeArgs {
    /// The device's serial port (e.g. /dev/ttyACM0, 8N1, no flow control).
    #[arg(long, value_name = "PATH")]
    pub serial: Option<String>,
    /// Serial baud rate (default 115200).
    #[arg(long, value_name = "N", requires = "serial")]
    pub baud: Option<u32>,
    /// The device's TCP address (e.g. a board's network console or an emulator's socket).
    #[arg(long, value_name = "ADDR")]
    pub tcp: Option<String>,
    /// Seconds a host's call may wait while the device sends nothing; then it fails with a
    /// JSON-RPC error (code -32000, `data.reason` "device_timeout").
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT_SECS)]
    pub timeout: f64,
    /// Largest frame taken from either side, in bytes (longer device lines are dropped, longer
    /// host lines refused).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FRAME)]
    pub max_frame: usize,
    /// Host calls waiting for the device at once; more get Server busy (-32001).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PENDING)]
    pub max_pending: usize,
    /// The notification method the device sends when it boots (reported as a reset).
    #[arg(long, value_name = "METHOD", default_value = "booted")]
    pub boot_method: String,
    /// With --mqtt: the device served on an MQTT broker instead of stdio.
    #[command(flatten)]
    pub mqtt: crate::mqtt::MqttServeArgs,
}

/// Exit code: bad arguments.
pub const EXIT_USAGE: u8 = 2;

/// `rpcwire bridge`: opens the device, bridges it to stdio; exit 0 when stdin ends.
pub async fn main(args: BridgeArgs) -> std::process::ExitCode {
    use std::process::ExitCode;
    let timeout = match Duration::try_from_secs_f64(args.timeout) {
        Ok(t) if !t.is_zero() => t,
        _ => {
            report!("--timeout must be a positive number of seconds");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.max_frame == 0 || args.max_pending == 0 {
        report!("--max-frame and --max-pending must be positive");
        return ExitCode::from(EXIT_USAGE);
    }
    let config = BridgeConfig {
        max_frame: args.max_frame,
        timeout,
        max_pending: args.max_pending,
        boot_method: args.boot_method,
        ..BridgeConfig::default()
    };
    let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
    let outcome = if let Some(path) = &args.serial {
        let baud = args.baud.unwrap_or(115_200);
        if baud == 0 {
            report!("--baud must be a positive number");
            return ExitCode::from(EXIT_USAGE);
        }
        let port = match rpcwire_serial::open_async(path, baud) {
            Ok(port) => port,
            Err(e) => {
                report!("cannot open {e}");
                return ExitCode::from(EXIT_DEVICE);
            }
        };
        let (r, w) = tokio::io::split(port);
        if args.mqtt.mqtt.is_some() {
            return crate::mqtt::bridge(&args.mqtt, r, w, config).await;
        }
        report!("bridging stdio to {path} at {baud} baud");
        run(stdin, stdout, r, w, config).await
    } else {
        let addr = args.tcp.unwrap_or_default();
        let stream =
            match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&addr)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    report!("cannot connect to {addr}: {e}");
                    return ExitCode::from(EXIT_DEVICE);
                }
                Err(_) => {
                    report!("timed out connecting to {addr}");
                    return ExitCode::from(EXIT_DEVICE);
                }
            };
        let _ = stream.set_nodelay(true);
        let (r, w) = stream.into_split();
        if args.mqtt.mqtt.is_some() {
            return crate::mqtt::bridge(&args.mqtt, r, w, config).await;
        }
        report!("bridging stdio to {addr}");
        run(stdin, stdout, r, w, config).await
    };
    match outcome {
        Ok(stats) => {
            report!(
                "stdin ended: {} frames to the device, {} to the host, {} dropped from the device, {} refused, {} timed out, {} resets",
                stats.to_device, stats.to_host, stats.dropped, stats.refused, stats.timeouts, stats.resets
            );
            ExitCode::SUCCESS
        }
        // The host stopped reading our stdout: the quiet exit of every command.
        Err(BridgeError::Host(e)) if crate::out::is_stdout_closed(&e) => {
            crate::out::stdout_closed()
        }
        Err(e) => {
            report!("{e}");
            ExitCode::from(EXIT_DEVICE)
        }
    }
}
