//! MCP protocol revisions and their negotiation.

/// An MCP protocol revision this crate speaks.
///
/// Ordered by date, so `v >= ProtocolVersion::V2025_06_18` reads as "this revision or later".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProtocolVersion {
    /// `2024-11-05`, the first published revision.
    V2024_11_05,
    /// `2025-03-26`: JSON-RPC batches, Streamable HTTP, tool annotations.
    V2025_03_26,
    /// `2025-06-18`: batches removed, structured tool output, elicitation.
    V2025_06_18,
    /// `2025-11-25`, the latest revision this crate speaks.
    V2025_11_25,
}

impl ProtocolVersion {
    /// The newest revision: what a server answers when the client asks for one it does not
    /// know, and what a client asks for.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Every revision, oldest first.
    pub const ALL: [ProtocolVersion; 4] = [
        ProtocolVersion::V2024_11_05,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_11_25,
    ];

    /// The revision's name on the wire (`"2025-06-18"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
        }
    }

    /// The revision named by these bytes (the string's contents, no quotes), if this crate
    /// speaks it.
    pub fn from_bytes(name: &[u8]) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL
            .into_iter()
            .find(|v| v.as_str().as_bytes() == name)
    }

    /// The revision a server answers to a client that asked for `requested` (`None`: the
    /// client named none, or not as a string): the same one when this crate speaks it, else
    /// [`LATEST`](ProtocolVersion::LATEST) (the client then decides whether to go on or
    /// disconnect, as the specification says).
    ///
    /// ```
    /// use rpcwire_mcp::ProtocolVersion;
    /// assert_eq!(ProtocolVersion::negotiate(Some(b"2025-03-26")), ProtocolVersion::V2025_03_26);
    /// assert_eq!(ProtocolVersion::negotiate(Some(b"1999-01-01")), ProtocolVersion::LATEST);
    /// assert_eq!(ProtocolVersion::negotiate(None), ProtocolVersion::LATEST);
    /// ```
    pub fn negotiate(requested: Option<&[u8]>) -> ProtocolVersion {
        requested
            .and_then(ProtocolVersion::from_bytes)
            .unwrap_or(ProtocolVersion::LATEST)
    }

    /// True when this revision forbids JSON-RPC batches (2025-06-18 and later): a batch is
    /// then answered with one Invalid Request (rpcwire's `Config::batches = false`).
    /// 2025-03-26 requires accepting them; 2024-11-05 says nothing of them.
    ///
    /// ```
    /// use rpcwire_mcp::ProtocolVersion;
    /// assert!(ProtocolVersion::V2025_06_18.refuses_batches());
    /// assert!(ProtocolVersion::V2025_11_25.refuses_batches());
    /// assert!(!ProtocolVersion::V2025_03_26.refuses_batches());
    /// ```
    pub const fn refuses_batches(self) -> bool {
        matches!(
            self,
            ProtocolVersion::V2025_06_18 | ProtocolVersion::V2025_11_25
        )
    }
}

impl core::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_by_date() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::from_bytes(v.as_str().as_bytes()), Some(v));
            assert_eq!(ProtocolVersion::negotiate(Some(v.as_str().as_bytes())), v);
        }
        let mut sorted = ProtocolVersion::ALL;
        sorted.sort_by_key(|v| v.as_str());
        assert_eq!(sorted, ProtocolVersion::ALL);
        assert_eq!(ProtocolVersion::from_bytes(b"2025-06-18 "), None);
        assert_eq!(ProtocolVersion::from_bytes(b""), None);
    }
}
