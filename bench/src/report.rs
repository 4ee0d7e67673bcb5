//! Sizes from the environment, and the arithmetic of reports.

/// `RPCWIRE_BENCH_SCALE` (default 1.0): every call count is multiplied by it, so that
/// `RPCWIRE_BENCH_SCALE=0.1` gives a quick run. Unparsable or non-positive values count as 1.
pub fn scale() -> f64 {
    std::env::var("RPCWIRE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0)
}

/// `n` times `scale`, at least 1.
pub fn scaled(n: u64, scale: f64) -> u64 {
    // Call counts stay far below 2^53, where the float round trip is exact.
    ((n as f64 * scale).round() as u64).max(1)
}

/// The median of `values` (the lower middle one for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get((sorted.len().max(1) - 1) / 2).copied()
}

/// A rate in calls per second with thousands separated by spaces (`1 234 567`).
pub fn format_rate(rate: f64) -> String {
    let digits = format!("{:.0}", rate.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
