//! JSON-RPC error codes.

/// A JSON-RPC error code, with the specification's constants.
///
/// ```
/// use rpcwire::ErrorCode;
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND.message(), "Method not found");
/// assert!(ErrorCode(-32050).is_server_error());
/// assert_eq!(ErrorCode(7).message(), "Server error");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid Request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// rpcwire's answer to a request it has no room for (in-flight table full, batch reply
    /// space exhausted): try again later. In the implementation-defined server-error range.
    pub const SERVER_BUSY: ErrorCode = ErrorCode(-32001);
    /// Start of the implementation-defined server-error range (`-32099..=-32000`).
    pub const SERVER_ERROR_START: i32 = -32099;
    /// End of the implementation-defined server-error range.
    pub const SERVER_ERROR_END: i32 = -32000;

    /// True for `-32099..=-32000`.
    pub const fn is_server_error(self) -> bool {
        self.0 >= Self::SERVER_ERROR_START && self.0 <= Self::SERVER_ERROR_END
    }

    /// The standard message for this code ("Parse error", "Invalid Request", ...); codes the
    /// specification does not name get "Server error".
    pub const fn message(self) -> &'static str {
        match self.0 {
            -32700 => "Parse error",
            -32600 => "Invalid Request",
            -32601 => "Method not found",
            -32602 => "Invalid params",
            -32603 => "Internal error",
            -32001 => "Server busy",
            _ => "Server error",
        }
    }
}

impl core::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.0, self.message())
    }
}
