//! `rpcwire serve --metrics ADDR`: the calls' and connections' metrics in the Prometheus text
//! format (`rpcwire_telemetry::prometheus`: names, help lines and buckets from its catalog),
//! on an address of their own (loopback unless told otherwise), so that scraping needs no
//! access to the RPC port.

use std::net::SocketAddr;

use rpcwire_telemetry::prometheus::{self, PrometheusError};

/// Why the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// `--metrics` is neither `HOST:PORT` nor a port.
    #[error("--metrics {0}: expected HOST:PORT or a port (served on 127.0.0.1)")]
    Address(String),
    /// The recorder could not be installed or the address bound.
    #[error("--metrics: {0}")]
    Prometheus(#[from] PrometheusError),
}

/// `--metrics`'s address: `HOST:PORT`, or a port alone on the loopback interface.
pub fn parse_addr(text: &str) -> Result<SocketAddr, MetricsError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    text.parse::<u16>()
        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        .map_err(|_| MetricsError::Address(text.to_owned()))
}

/// Installs the Prometheus recorder and serves it on `addr`; returns the address bound (port
/// 0 picks one).
pub async fn serve(addr: SocketAddr) -> Result<SocketAddr, MetricsError> {
    Ok(prometheus::metrics_endpoint(addr).await?)
}

/// [`serve`], with `other` recording the same values beside the Prometheus recorder (the OTLP
/// export's, `serve --metrics ADDR --otlp URL`): one source for both exporters.
pub async fn serve_beside<R>(addr: SocketAddr, other: Option<R>) -> Result<SocketAddr, MetricsError>
where
    R: metrics::Recorder + Send + Sync + 'static,
{
    let metrics = match other {
        None => prometheus::install()?,
        Some(other) => prometheus::install_beside(other)?,
    };
    Ok(metrics.serve(addr).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:1").unwrap(),
            "0.0.0.0:1".parse().unwrap()
        );
        assert!(parse_addr("nowhere").is_err());
    }
}
