//! The MQTT side of the `rpcwire` command: `serve --mqtt URL --topic T [--group G]` (the demo
//! service on a topic, alone or in a shared subscription) and `call --mqtt URL --topic T` (the
//! connection a call goes over).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcwire_mqtt::rumqttc::v5::MqttOptions;
use rpcwire_mqtt::{MqttClient, MqttServer, REPLY_LEVEL};
use rpcwire_tokio::{Builder, Session};

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

/// Serves `builder`'s service as `args` say, until the broker refuses the connection.
pub async fn serve(args: &MqttServeArgs, builder: Builder) -> ExitCode {
    let (Some(url), Some(topic)) = (&args.mqtt, &args.topic) else {
        return ExitCode::from(EXIT_CONNECTION);
    };
    let options = match options(url, "rpcwire-serve") {
        Ok(options) => options,
        Err(code) => return code,
    };
    let server = MqttServer {
        group: args.group.clone(),
        status_topic: args.status_topic.clone(),
        ..MqttServer::new(topic.as_str())
    };
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
