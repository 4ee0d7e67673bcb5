//! The MQTT side of the `rpcwire` command: `serve --mqtt URL --topic T [--group G]` (the demo
//! service on a topic, alone or in a shared subscription), `call --mqtt URL --topic T` (the
//! connection a call goes over) and `bridge --serial DEV|--tcp ADDR --mqtt URL --topic T` (a
//! device served on the broker).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcwire_mqtt::rumqttc::v5::mqttbytes::QoS;
use rpcwire_mqtt::rumqttc::v5::MqttOptions;
use rpcwire_mqtt::{MqttClient, MqttServer, REPLY_LEVEL};
use rpcwire_tokio::{Builder, ErrorCode, Router, RpcError, Session};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::bridge::BridgeConfig;
use crate::EXIT_CONNECTION;

/// The MQTT options of `rpcwire serve`.
#[derive(Debug, Args)]
pub struct MqttServeArgs {
    /// Serve on an MQTT broker (e.g. mqtt://127.0.0.1:1883), one JSON-RPC message per MQTT
    /// message: MQTT 5 requests answered on their Response Topic, MQTT 3.1.1 ones published
    /// on TOPIC/reply/R answered on R.
    #[arg(long, value_name = "URL", requires = "topic")]
    pub mqtt: Option<String>,
    /// With --mqtt: the request topic.
    #[arg(long, value_name = "TOPIC", requires = "mqtt")]
    pub topic: Option<String>,
    /// With --mqtt: a shared subscription's group ($share/GROUP/TOPIC): each message goes to
    /// one server of it.
    #[arg(long, value_name = "GROUP", requires = "mqtt")]
    pub group: Option<String>,
    /// With --mqtt: a topic holding `online` (retained) while the server runs and `offline`
    /// (its last will) once it is gone.
    #[arg(long, value_name = "TOPIC", requires = "mqtt")]
    pub status_topic: Option<String>,
    /// With --mqtt: a persistent session (clean start off) that the broker keeps this many
    /// seconds after the connection is lost (MQTT 5 session expiry interval); requests are
    /// then subscribed at QoS 1, so those published while the server is away wait for it.
    /// Give a --client-id for a restarted server to find its session again.
    #[arg(long, value_name = "SECS", requires = "mqtt")]
    pub session_expiry: Option<u32>,
    /// With --mqtt: the MQTT client id (default: one of this process's own).
    #[arg(long, value_name = "ID", requires = "mqtt")]
    pub client_id: Option<String>,
}

/// The MQTT options of `rpcwire call`.
#[derive(Debug, Args)]
pub struct MqttCallArgs {
    /// Call over an MQTT broker (e.g. mqtt://127.0.0.1:1883), MQTT 5: the request is published
    /// on --topic with a Response Topic of the call's own.
    #[arg(long, value_name = "URL", requires = "topic")]
    pub mqtt: Option<String>,
    /// With --mqtt: the topic the service is served on.
    #[arg(long, value_name = "TOPIC", requires = "mqtt")]
    pub topic: Option<String>,
}

/// The options of a connection to the broker at `url` (`mqtt://HOST[:PORT]`, `tcp://` or no
/// scheme; port 1883 by default), with a client id of this process's own. Hand-written: the
/// URL parser of rumqttc is behind a feature that pulls in the `url` crate for this alone.
fn options(url: &str, role: &str) -> Result<MqttOptions, ExitCode> {
    let address = ["mqtt://", "tcp://"]
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .unwrap_or(url)
        .trim_end_matches('/');
    let (host, port) = match address.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().ok()),
        None => (address, Some(1883)),
    };
    let (Some(port), false) = (port, host.is_empty() || address.contains('/')) else {
        eprintln!("rpcwire: --mqtt wants mqtt://HOST[:PORT], not {url}");
        return Err(ExitCode::from(EXIT_CONNECTION));
    };
    let id = rpcwire_http::profile::random_id(role)
        .unwrap_or_else(|| format!("{role}-{}", std::process::id()));
    let mut options = MqttOptions::new(id, host.trim_matches(['[', ']']), port);
    options.set_keep_alive(Duration::from_secs(30));
    Ok(options)
}

/// Serves `builder`'s service as `args` say, until the broker refuses the connection or the
/// service's shutdown has drained the server.
pub async fn serve(args: &MqttServeArgs, builder: Builder) -> ExitCode {
    serve_within(args, builder, MqttServer::new("").timeout).await
}

/// [`serve`], each message answered within `answer_limit` (the server's timeout).
async fn serve_within(args: &MqttServeArgs, builder: Builder, answer_limit: Duration) -> ExitCode {
    let (Some(url), Some(topic)) = (&args.mqtt, &args.topic) else {
        return ExitCode::from(EXIT_CONNECTION);
    };
    let mut options = match options(url, "rpcwire-serve") {
        Ok(options) => options,
        Err(code) => return code,
    };
    if let Some(id) = &args.client_id {
        options.set_client_id(id.clone());
    }
    let mut server = MqttServer {
        group: args.group.clone(),
        status_topic: args.status_topic.clone(),
        timeout: answer_limit,
        ..MqttServer::new(topic.as_str())
    };
    if let Some(secs) = args.session_expiry {
        options.set_clean_start(false);
        options.set_session_expiry_interval(Some(secs));
        server.request_qos = QoS::AtLeastOnce;
    }
    let group = args.group.as_deref().unwrap_or("(none)");
    eprintln!(
        "rpcwire: serving the demo service on {url}, topic {topic} (and {topic}/{REPLY_LEVEL}/#), shared group {group}"
    );
    match server.serve(options, builder).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_CONNECTION)
        }
    }
}

/// The connection a call goes over (`None` without `--mqtt`).
pub async fn session(args: &MqttCallArgs, builder: Builder) -> Option<Result<Session, ExitCode>> {
    let (url, topic) = (args.mqtt.as_ref()?, args.topic.as_ref()?);
    let options = match options(url, "rpcwire-call") {
        Ok(options) => options,
        Err(code) => return Some(Err(code)),
    };
    Some(
        MqttClient::new(topic.as_str())
            .start(options, builder)
            .await
            .map_err(|e| {
                eprintln!("rpcwire: {e}");
                ExitCode::from(EXIT_CONNECTION)
            }),
    )
}

/// `rpcwire bridge ... --mqtt`: the device at the other end of `device_in`/`device_out`
/// (newline-framed JSON-RPC, a serial line or a TCP socket) served on the broker as `args`
/// say.
///
/// The device link goes through the stdio bridge's engine ([`crate::bridge::run`]), so the
/// device is checked exactly as `rpcwire bridge` on stdio checks it: garbled, oversize and
/// invalid lines and answers to no waiting call are dropped and reported on stderr; the boot
/// notification (`config.boot_method`) is a reset that fails every waiting call at once with
/// -32000 (`data.reason` "device_reset"); a call fails with -32000 "device_timeout" when the
/// device stays silent for `config.timeout`; past `config.max_pending` calls get Server busy.
/// The engine's host end is an in-memory pipe to a client connection of the bridge's own:
/// every request that reaches the bridge on the broker is called on the device through it
/// (by method and params, with an id of that connection's, so that callers on the broker
/// never collide on ids) and its answer, or the engine's error, passed back as it is.
/// Notifications are passed on. Ends when the device link closes (or the broker refuses the
/// connection); the broker then publishes the status topic's last will.
pub async fn bridge<R, W>(
    args: &MqttServeArgs,
    device_in: R,
    device_out: W,
    config: BridgeConfig,
) -> ExitCode
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max_frame = config.max_frame;
    // The engine's own -32000 "device_timeout" must come before the server's -32096: the
    // server waits at least a second longer than `--timeout` (and never less than its
    // default).
    let answer_limit = MqttServer::new("")
        .timeout
        .max(config.timeout.saturating_add(Duration::from_secs(1)));
    // The pipe holds a few frames each way; the engine and the connection read it always.
    let (ours, engine_end) = tokio::io::duplex(max_frame.saturating_mul(2).max(PIPE_MIN));
    let (host_in, host_out) = tokio::io::split(engine_end);
    let engine = crate::bridge::run(host_in, host_out, device_in, device_out, config);
    // No timeout of its own: the engine answers every call it forwards (timeout, reset,
    // link closed) and refuses the rest.
    let (device, _link) = Builder::new()
        .max_frame(max_frame)
        .request_timeout(None)
        .run_io(ours)
        .into_parts();
    let (calls, notes) = (device.clone(), device);
    let router = Router::new()
        .fallback_method(move |ctx, params| {
            let device = calls.clone();
            async move {
                let method = ctx.method();
                let answer = match params {
                    Some(params) => device.call::<_, Box<RawValue>>(method, params).await,
                    None => device.call::<_, Box<RawValue>>(method, ()).await,
                };
                answer.map_err(|e| match e.rpc() {
                    Some(error) => error.clone(),
                    None => RpcError::new(
                        ErrorCode(crate::bridge::DEVICE_ERROR),
                        "the device link closed before an answer",
                    )
                    .with_data(&serde_json::json!({ "reason": "device_closed" })),
                })
            }
        })
        .fallback_notification(move |ctx, params| {
            let device = notes.clone();
            async move {
                let _ = match params {
                    Some(params) => device.notify(ctx.method(), params).await,
                    None => device.notify(ctx.method(), ()).await,
                };
            }
        });
    let builder = Builder::new().router(router).max_frame(max_frame);
    let url = args.mqtt.as_deref().unwrap_or_default();
    eprintln!("rpcwire bridge: serving the device on {url}");
    tokio::select! {
        code = serve_within(args, builder, answer_limit) => code,
        ended = engine => {
            match ended {
                Ok(stats) => eprintln!("rpcwire bridge: the device link ended ({stats:?})"),
                Err(e) => eprintln!("rpcwire bridge: {e}"),
            }
            ExitCode::from(crate::bridge::EXIT_DEVICE)
        }
    }
}

/// The smallest in-memory pipe between the bridge engine and the bridge's connection.
const PIPE_MIN: usize = 16 << 10;
