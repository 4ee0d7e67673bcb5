//! The initialize handshake: which requests a server takes in each phase.

use rpcwire::wire::RawJson;
use rpcwire::ErrorCode;

use crate::msg::InitializeParams;
use crate::{methods, ProtocolVersion};

/// Where a server is in the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Phase {
    /// Nothing yet: only `initialize` and `ping` are taken.
    AwaitingInitialize,
    /// `initialize` answered with this revision; waiting for `notifications/initialized`.
    /// Requests are taken already (a client may pipeline them behind the notification).
    Initializing(ProtocolVersion),
    /// `notifications/initialized` received: normal operation.
    Ready(ProtocolVersion),
}

/// Why a request was refused by the handshake; answered with [`Refusal::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Refusal {
    /// A request other than `initialize` or `ping` before `initialize`.
    NotInitialized,
    /// A second `initialize`.
    AlreadyInitialized,
}

impl Refusal {
    /// The JSON-RPC error code to answer with (Invalid Request: the request is out of the
    /// protocol's order).
    pub const fn code(self) -> ErrorCode {
        methods::NOT_INITIALIZED
    }

    /// A message for the error.
    pub const fn message(self) -> &'static str {
        match self {
            Refusal::NotInitialized => "server not initialized",
            Refusal::AlreadyInitialized => "already initialized",
        }
    }
}

/// The handshake's state: `initialize` → result → `notifications/initialized`.
///
/// ```
/// use rpcwire_mcp::{Handshake, Phase, ProtocolVersion, Refusal};
/// let mut hs = Handshake::new();
/// assert_eq!(hs.admit(b"tools/list"), Err(Refusal::NotInitialized));
/// assert_eq!(hs.admit(b"ping"), Ok(()));
/// let params = rpcwire::wire::RawJson::parse(r#"{"protocolVersion":"2025-06-18"}"#, 8).unwrap();
/// assert_eq!(hs.initialize(Some(params)), Ok(ProtocolVersion::V2025_06_18));
/// assert_eq!(hs.admit(b"tools/list"), Ok(()));
/// assert_eq!(hs.admit(b"initialize"), Err(Refusal::AlreadyInitialized));
/// hs.initialized();
/// assert_eq!(hs.phase(), Phase::Ready(ProtocolVersion::V2025_06_18));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    phase: Phase,
}

impl Default for Handshake {
    fn default() -> Self {
        Handshake::new()
    }
}

impl Handshake {
    /// A server that has received nothing yet.
    pub const fn new() -> Self {
        Handshake {
            phase: Phase::AwaitingInitialize,
        }
    }

    /// The current phase.
    pub const fn phase(&self) -> Phase {
        self.phase
    }

    /// The negotiated revision, once `initialize` is answered.
    pub const fn version(&self) -> Option<ProtocolVersion> {
        match self.phase {
            Phase::AwaitingInitialize => None,
            Phase::Initializing(v) | Phase::Ready(v) => Some(v),
        }
    }

    /// Whether a request for `method` (name bytes as on the wire) is taken now: `ping`
    /// always; `initialize` once; anything else once `initialize` is answered.
    pub fn admit(&self, method: &[u8]) -> Result<(), Refusal> {
        let initialize = method == methods::INITIALIZE.as_bytes();
        match self.phase {
            _ if method == methods::PING.as_bytes() => Ok(()),
            Phase::AwaitingInitialize if initialize => Ok(()),
            Phase::AwaitingInitialize => Err(Refusal::NotInitialized),
            _ if initialize => Err(Refusal::AlreadyInitialized),
            _ => Ok(()),
        }
    }

    /// Takes `initialize` (call once its result is written): negotiates the revision and
    /// moves to [`Phase::Initializing`].
    pub fn initialize(&mut self, params: Option<RawJson<'_>>) -> Result<ProtocolVersion, Refusal> {
        self.start(InitializeParams::parse(params).negotiate())
    }

    /// Like [`initialize`](Handshake::initialize) with the revision already negotiated (a
    /// host that decoded the params its own way).
    pub fn start(&mut self, version: ProtocolVersion) -> Result<ProtocolVersion, Refusal> {
        self.admit(methods::INITIALIZE.as_bytes())?;
        self.phase = Phase::Initializing(version);
        Ok(version)
    }

    /// Takes `notifications/initialized` (ignored before `initialize`).
    pub fn initialized(&mut self) {
        if let Phase::Initializing(v) = self.phase {
            self.phase = Phase::Ready(v);
        }
    }
}
