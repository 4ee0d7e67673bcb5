//! How `rpcwire` logs: the format of its stderr log (`--log-format`), and the rate of the
//! refused callers' warnings (`serve --refusal-log-rate`, `--refusal-log-burst`).

use clap::{Args, ValueEnum};
use rpcwire_tokio::RefusalLogLimit;

/// The format of the stderr log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text per event (`2026-01-01T00:00:00Z  WARN target: message key=value`).
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`, the spans), for a
    /// log collector.
    Json,
}

/// The refusal log's rate, as `serve` takes it.
#[derive(Debug, Clone, Args)]
pub struct RefusalLogArgs {
    /// Log at most this many refused callers (authentication and authorization failures, with
    /// the peer and the reason, never the credential) per second once the burst is spent;
    /// those past it are counted in the metrics, and the next line logged says how many were
    /// left out (`suppressed`).
    #[arg(long, value_name = "N", default_value_t = RefusalLogLimit::default().per_second)]
    pub refusal_log_rate: u32,
    /// With --refusal-log-rate: this many lines at once.
    #[arg(long, value_name = "N", default_value_t = RefusalLogLimit::default().burst)]
    pub refusal_log_burst: u32,
}

impl RefusalLogArgs {
    /// The service's limit.
    pub fn limit(&self) -> RefusalLogLimit {
        RefusalLogLimit {
            per_second: self.refusal_log_rate,
            burst: self.refusal_log_burst,
        }
    }
}

/// Installs the stderr log in `format` with `filter`, beside `extra` (the OTLP export's
/// layer): the global subscriber.
pub fn install<L>(format: LogFormat, filter: tracing_subscriber::filter::Targets, extra: Option<L>)
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::Layer;
    // `Targets` asked per event rather than through its interest cached per callsite: with
    // the cached one, under `--log-calls` (a target at info beside the default at warn) the
    // refused callers' warnings were lost (seen in `cli/tests/cli_log_refusals.rs`; the cause
    // in the interest's caching was not found). The level hint is kept: below it (every
    // call's span and log line at the default level) nothing reaches the filter.
    let hint =
        tracing_subscriber::layer::Filter::<tracing_subscriber::Registry>::max_level_hint(&filter);
    let filter = tracing_subscriber::filter::dynamic_filter_fn(move |meta, _| {
        filter.would_enable(meta.target(), meta.level())
    });
    let filter = match hint {
        Some(hint) => filter.with_max_level_hint(hint),
        None => filter,
    };
    let registry = tracing_subscriber::registry().with(extra);
    // A line that cannot be written (stderr closed) is dropped: the layer's own report of it
    // (`eprintln!`) would panic the task that logged, a connection's or the drain's.
    let text = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(false);
    let _ = match format {
        LogFormat::Text => {
            tracing::subscriber::set_global_default(registry.with(text.with_filter(filter)))
        }
        LogFormat::Json => tracing::subscriber::set_global_default(
            registry.with(text.json().flatten_event(true).with_filter(filter)),
        ),
    };
}
