//! Log levels of `notifications/message` (the syslog severities of RFC 5424).

/// A log level, ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LogLevel {
    /// Detailed debugging information.
    #[default]
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Errors.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named by these bytes (string contents, no quotes).
    ///
    /// ```
    /// use rpcwire_mcp::LogLevel;
    /// assert_eq!(LogLevel::from_bytes(b"warning"), Some(LogLevel::Warning));
    /// assert_eq!(LogLevel::from_bytes(b"WARNING"), None);
    /// assert!(LogLevel::Error > LogLevel::Warning);
    /// ```
    pub fn from_bytes(name: &[u8]) -> Option<LogLevel> {
        LogLevel::ALL
            .into_iter()
            .find(|l| l.as_str().as_bytes() == name)
    }
}

impl core::fmt::Display for LogLevel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}
