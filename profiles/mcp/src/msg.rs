//! MCP message shapes without a heap: the results and notification params a server sends
//! (serialized by rpcwire's own serializer, the one a `Connection` writes with), and zero-copy
//! readers of the params it receives.
//!
//! Everything here is hand-written against serde's `Serializer` rather than derived, so that
//! JSON fragments known in advance (a tool's input schema, a capabilities object) go out
//! verbatim through [`RAW_JSON_TOKEN`] and a firmware links one small serializer per shape.

use rpcwire::wire::ser::RAW_JSON_TOKEN;
use rpcwire::wire::{JsonStr, RawJson};
use serde::ser::{SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::{LogLevel, ProtocolVersion, Writer, SUPPORTED_VERSIONS};

/// A tool of a static tools table: its name, a description for the model, and its input's
/// JSON Schema as JSON text (an object schema, `{"type":"object",...}`), sent verbatim.
///
/// ```
/// use rpcwire_mcp::Tool;
/// static TOOLS: &[Tool<'static>] = &[Tool {
///     name: "add",
///     description: "Adds two integers.",
///     input_schema: r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#,
/// }];
/// assert_eq!(rpcwire_mcp::find_tool(TOOLS, b"add"), Some(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool<'a> {
    /// The tool's name (what `tools/call` names).
    pub name: &'a str,
    /// What it does, for the model.
    pub description: &'a str,
    /// The JSON Schema of its `arguments`, as JSON text. It is sent as it is, unchecked: it
    /// must be one valid JSON object.
    pub input_schema: &'a str,
}

/// The position in `tools` of the tool whose name is `name` (the string's contents as on the
/// wire; a tool name never needs escapes).
pub fn find_tool(tools: &[Tool<'_>], name: &[u8]) -> Option<usize> {
    tools.iter().position(|t| t.name.as_bytes() == name)
}

/// What a server says of itself in its `initialize` result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerInfo<'a> {
    /// `serverInfo.name`.
    pub name: &'a str,
    /// `serverInfo.version`.
    pub version: &'a str,
    /// `instructions`: how to use this server, for the model (optional).
    pub instructions: Option<&'a str>,
    /// Declare the `logging` capability (the server sends `notifications/message` and
    /// answers `logging/setLevel`).
    pub logging: bool,
}

/// Text for a tool result's content or a log message's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text<'a> {
    /// Text to escape as a JSON string.
    Str(&'a str),
    /// A complete JSON value, quotes included when it is a string (`br#""42 °C""#`), sent
    /// verbatim and unchecked. A firmware renders numbers into bytes and sends them this way
    /// without turning bytes into `&str` (which links a UTF-8 check).
    Json(&'a [u8]),
}

/// JSON text embedded verbatim by rpcwire's serializer (the caller guarantees it is valid).
/// Bytes, not `&str`: nothing needs a UTF-8 check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(pub &'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(RAW_JSON_TOKEN, &Bytes(self.0))
    }
}

/// Bytes that serialize as bytes (`[u8]` itself serializes as a sequence).
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Text<'_> {
    /// Writes the text as a JSON value.
    pub fn write(&self, w: &mut Writer<'_>) {
        match *self {
            Text::Str(text) => w.string(text),
            Text::Json(json) => w.raw(json),
        };
    }
}

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Text::Str(text) => s.serialize_str(text),
            Text::Json(json) => Raw(json).serialize(s),
        }
    }
}

/// The capabilities object of a server with tools, with and without logging.
const CAPS_TOOLS: &[u8] = br#"{"tools":{"listChanged":false}}"#;
const CAPS_TOOLS_LOGGING: &[u8] = br#"{"tools":{"listChanged":false},"logging":{}}"#;

/// The result of an MCP request, as a server sends it with `Connection::respond` (one type
/// for every result, so a firmware instantiates `respond` once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// `{}`: the result of `ping` and `logging/setLevel`.
    Empty,
    /// The `initialize` result: `protocolVersion`, `capabilities`, `serverInfo`,
    /// `instructions`.
    Initialize {
        /// The negotiated revision.
        version: ProtocolVersion,
        /// Who the server is.
        info: &'a ServerInfo<'a>,
    },
    /// The `tools/list` result: every tool, in one page (no `nextCursor`).
    Tools(&'a [Tool<'a>]),
    /// A `tools/call` result with one text content item; `is_error: true` for a tool that
    /// failed (the model sees the failure; a JSON-RPC error is for calls that could not run).
    ToolResult {
        /// The content's text.
        text: Text<'a>,
        /// The tool failed.
        is_error: bool,
    },
    /// The `server/discover` result (2026-07-28): `supportedVersions`
    /// ([`SUPPORTED_VERSIONS`](crate::SUPPORTED_VERSIONS)), `capabilities`, `instructions`,
    /// the server's name and version in `_meta`, and the members every 2026-07-28 result of
    /// a cacheable method carries (`resultType`, `ttlMs`, `cacheScope`): it is complete in
    /// either form.
    Discover(&'a ServerInfo<'a>),
}

impl Reply<'_> {
    /// Writes the result as JSON text (what [`Server`](crate::Server) sends to a request of a
    /// session revision, as one [`Raw`] value; the `Serialize` impl gives the same text
    /// through a serializer).
    pub fn write(&self, w: &mut Writer<'_>) {
        self.write_members(w);
        w.raw(b"}");
    }

    /// Writes the result as a 2026-07-28 request gets it: with `resultType` `"complete"`,
    /// and for a cacheable result (`tools/list`, `server/discover`) `ttlMs` 0 (do not reuse)
    /// and `cacheScope` `"private"`, as the std server's results.
    pub fn write_completed(&self, w: &mut Writer<'_>) {
        let any = self.write_members(w);
        if !matches!(self, Reply::Discover(_)) {
            if any {
                w.raw(b",");
            }
            w.raw(b"\"resultType\":\"complete\"");
            if matches!(self, Reply::Tools(_)) {
                w.raw(CACHE_HINTS);
            }
        }
        w.raw(b"}");
    }

    /// Writes the result without its closing brace; true when it has members.
    fn write_members(&self, w: &mut Writer<'_>) -> bool {
        match *self {
            Reply::Empty => {
                w.raw(b"{");
                return false;
            }
            Reply::Initialize { version, info } => {
                w.raw(b"{\"protocolVersion\":\"")
                    .raw(version.as_str().as_bytes())
                    .raw(b"\",\"capabilities\":")
                    .raw(caps(info))
                    .raw(b",\"serverInfo\":");
                write_implementation(w, info);
                if let Some(instructions) = info.instructions {
                    w.raw(b",\"instructions\":").string(instructions);
                }
            }
            Reply::Tools(tools) => {
                w.raw(b"{\"tools\":[");
                for (i, tool) in tools.iter().enumerate() {
                    if i > 0 {
                        w.raw(b",");
                    }
                    w.raw(b"{\"name\":")
                        .string(tool.name)
                        .raw(b",\"description\":")
                        .string(tool.description)
                        .raw(b",\"inputSchema\":")
                        .raw(tool.input_schema.as_bytes())
                        .raw(b"}");
                }
                w.raw(b"]");
            }
            Reply::ToolResult { text, is_error } => {
                w.raw(b"{\"content\":[{\"type\":\"text\",\"text\":");
                text.write(w);
                w.raw(if is_error {
                    b"}],\"isError\":true"
                } else {
                    b"}],\"isError\":false"
                });
            }
            Reply::Discover(info) => {
                w.raw(b"{\"supportedVersions\":[");
                for (i, v) in SUPPORTED_VERSIONS.iter().enumerate() {
                    if i > 0 {
                        w.raw(b",");
                    }
                    w.raw(b"\"").raw(v.as_bytes()).raw(b"\"");
                }
                w.raw(b"],\"capabilities\":").raw(caps(info));
                if let Some(instructions) = info.instructions {
                    w.raw(b",\"instructions\":").string(instructions);
                }
                w.raw(b",\"_meta\":{\"")
                    .raw(crate::methods::META_SERVER_INFO.as_bytes())
                    .raw(b"\":");
                write_implementation(w, info);
                w.raw(b"},\"resultType\":\"complete\"").raw(CACHE_HINTS);
            }
        }
        true
    }
}

/// The caching hints of a cacheable 2026-07-28 result: do not reuse it, and never share it
/// between users.
const CACHE_HINTS: &[u8] = b",\"ttlMs\":0,\"cacheScope\":\"private\"";

/// The capabilities object of `info`.
fn caps(info: &ServerInfo<'_>) -> &'static [u8] {
    if info.logging {
        CAPS_TOOLS_LOGGING
    } else {
        CAPS_TOOLS
    }
}

/// `{"name":..,"version":..}`.
fn write_implementation(w: &mut Writer<'_>, info: &ServerInfo<'_>) {
    w.raw(b"{\"name\":")
        .string(info.name)
        .raw(b",\"version\":")
        .string(info.version)
        .raw(b"}");
}

struct ToolsSeq<'a>(&'a [Tool<'a>]);
struct TextContent<'a>(Text<'a>);
struct TextItem<'a>(Text<'a>);

impl Serialize for Tool<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Tool", 3)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("description", self.description)?;
        st.serialize_field("inputSchema", &Raw(self.input_schema.as_bytes()))?;
        st.end()
    }
}

impl Serialize for ToolsSeq<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for tool in self.0 {
            seq.serialize_element(tool)?;
        }
        seq.end()
    }
}

impl Serialize for TextItem<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("TextContent", 2)?;
        st.serialize_field("type", "text")?;
        st.serialize_field("text", &self.0)?;
        st.end()
    }
}

impl Serialize for TextContent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(1))?;
        seq.serialize_element(&TextItem(self.0))?;
        seq.end()
    }
}

impl Serialize for ServerInfo<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Implementation", 2)?;
        st.serialize_field("name", self.name)?;
        st.serialize_field("version", self.version)?;
        st.end()
    }
}

/// `{"io.modelcontextprotocol/serverInfo": {..}}`.
struct ServerInfoMeta<'a>(&'a ServerInfo<'a>);

impl Serialize for ServerInfoMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Meta", 1)?;
        st.serialize_field(crate::methods::META_SERVER_INFO, self.0)?;
        st.end()
    }
}

impl Serialize for Reply<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Reply::Empty => s.serialize_struct("Empty", 0)?.end(),
            Reply::Initialize { version, info } => {
                let mut st = s.serialize_struct("InitializeResult", 4)?;
                st.serialize_field("protocolVersion", version.as_str())?;
                st.serialize_field("capabilities", &Raw(caps(info)))?;
                st.serialize_field("serverInfo", info)?;
                if let Some(instructions) = info.instructions {
                    st.serialize_field("instructions", instructions)?;
                }
                st.end()
            }
            Reply::Tools(tools) => {
                let mut st = s.serialize_struct("ListToolsResult", 1)?;
                st.serialize_field("tools", &ToolsSeq(tools))?;
                st.end()
            }
            Reply::ToolResult { text, is_error } => {
                let mut st = s.serialize_struct("CallToolResult", 2)?;
                st.serialize_field("content", &TextContent(text))?;
                st.serialize_field("isError", &is_error)?;
                st.end()
            }
            Reply::Discover(info) => {
                let mut st = s.serialize_struct("DiscoverResult", 7)?;
                st.serialize_field("supportedVersions", &SUPPORTED_VERSIONS)?;
                st.serialize_field("capabilities", &Raw(caps(info)))?;
                if let Some(instructions) = info.instructions {
                    st.serialize_field("instructions", instructions)?;
                }
                st.serialize_field("_meta", &ServerInfoMeta(info))?;
                st.serialize_field("resultType", "complete")?;
                st.serialize_field("ttlMs", &0u32)?;
                st.serialize_field("cacheScope", "private")?;
                st.end()
            }
        }
    }
}

/// The params of a notification an MCP server sends (one type for all, so a firmware
/// instantiates `send_notification` once); [`method`](Notice::method) names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice<'a> {
    /// `notifications/progress`.
    Progress {
        /// The request's progress token, as JSON text (a string or an integer).
        token: &'a [u8],
        /// Progress so far; increases with each notification for the same token.
        progress: u32,
        /// The total, when known.
        total: Option<u32>,
        /// A human-readable message.
        message: Option<&'a str>,
    },
    /// `notifications/message`.
    Log {
        /// Severity.
        level: LogLevel,
        /// The logger's name.
        logger: Option<&'a str>,
        /// The message (any JSON value; text here).
        data: Text<'a>,
    },
    /// `notifications/cancelled`.
    Cancelled {
        /// The id of the request to cancel, as JSON text.
        request_id: &'a [u8],
        /// Why.
        reason: Option<&'a str>,
    },
}

impl Notice<'_> {
    /// The notification's method name.
    pub const fn method(&self) -> &'static str {
        match self {
            Notice::Progress { .. } => crate::methods::PROGRESS,
            Notice::Log { .. } => crate::methods::MESSAGE,
            Notice::Cancelled { .. } => crate::methods::CANCELLED,
        }
    }
}

impl Notice<'_> {
    /// Writes the params as JSON text (what [`Server`](crate::Server) sends; the
    /// `Serialize` impl gives the same text through a serializer).
    pub fn write(&self, w: &mut Writer<'_>) {
        match *self {
            Notice::Progress {
                token,
                progress,
                total,
                message,
            } => {
                w.raw(b"{\"progressToken\":")
                    .raw(token)
                    .raw(b",\"progress\":")
                    .u32(progress);
                if let Some(total) = total {
                    w.raw(b",\"total\":").u32(total);
                }
                if let Some(message) = message {
                    w.raw(b",\"message\":").string(message);
                }
                w.raw(b"}");
            }
            Notice::Log {
                level,
                logger,
                data,
            } => {
                w.raw(b"{\"level\":\"")
                    .raw(level.as_str().as_bytes())
                    .raw(b"\"");
                if let Some(logger) = logger {
                    w.raw(b",\"logger\":").string(logger);
                }
                w.raw(b",\"data\":");
                data.write(w);
                w.raw(b"}");
            }
            Notice::Cancelled { request_id, reason } => {
                w.raw(b"{\"requestId\":").raw(request_id);
                if let Some(reason) = reason {
                    w.raw(b",\"reason\":").string(reason);
                }
                w.raw(b"}");
            }
        }
    }
}

impl Serialize for Notice<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Notice::Progress {
                token,
                progress,
                total,
                message,
            } => {
                let mut st = s.serialize_struct("ProgressNotification", 4)?;
                st.serialize_field("progressToken", &Raw(token))?;
                st.serialize_field("progress", &progress)?;
                if let Some(total) = total {
                    st.serialize_field("total", &total)?;
                }
                if let Some(message) = message {
                    st.serialize_field("message", message)?;
                }
                st.end()
            }
            Notice::Log {
                level,
                logger,
                data,
            } => {
                let mut st = s.serialize_struct("LoggingMessageNotification", 3)?;
                st.serialize_field("level", level.as_str())?;
                if let Some(logger) = logger {
                    st.serialize_field("logger", logger)?;
                }
                st.serialize_field("data", &data)?;
                st.end()
            }
            Notice::Cancelled { request_id, reason } => {
                let mut st = s.serialize_struct("CancelledNotification", 2)?;
                st.serialize_field("requestId", &Raw(request_id))?;
                if let Some(reason) = reason {
                    st.serialize_field("reason", reason)?;
                }
                st.end()
            }
        }
    }
}

/// The value of member `name` of an object (`None` for a missing member or a non-object).
pub fn member<'a>(object: RawJson<'a>, name: &str) -> Option<RawJson<'a>> {
    object
        .members()
        .find(|(key, _)| key.eq_str(name))
        .map(|(_, value)| value)
}

/// The progress token of a request's params (`_meta.progressToken`: a string or an integer),
/// as its JSON text.
///
/// ```
/// use rpcwire::wire::RawJson;
/// let p = RawJson::parse(r#"{"name":"x","_meta":{"progressToken":"t-1"}}"#, 8).unwrap();
/// assert_eq!(rpcwire_mcp::progress_token(Some(p)).map(|t| t.as_bytes()), Some(&b"\"t-1\""[..]));
/// let p = RawJson::parse(r#"{"_meta":{"progressToken":[1]}}"#, 8).unwrap();
/// assert!(rpcwire_mcp::progress_token(Some(p)).is_none()); // neither string nor integer
/// ```
pub fn progress_token(params: Option<RawJson<'_>>) -> Option<RawJson<'_>> {
    let token = member(member(params?, "_meta")?, "progressToken")?;
    match token.as_bytes().first()? {
        b'"' => Some(token),
        b'-' | b'0'..=b'9' if is_integer(token.as_bytes()) => Some(token),
        _ => None,
    }
}

/// True for a JSON number without fraction or exponent.
fn is_integer(text: &[u8]) -> bool {
    !text.iter().any(|b| matches!(b, b'.' | b'e' | b'E'))
}

/// The params of `initialize` that the handshake reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InitializeParams<'a> {
    /// `protocolVersion`, when a string.
    pub protocol_version: Option<JsonStr<'a>>,
    /// `clientInfo.name`, when a string.
    pub client_name: Option<JsonStr<'a>>,
}

impl<'a> InitializeParams<'a> {
    /// Reads them; anything missing or of the wrong kind is `None` (negotiation then answers
    /// the latest revision).
    pub fn parse(params: Option<RawJson<'a>>) -> Self {
        let Some(params) = params else {
            return InitializeParams::default();
        };
        InitializeParams {
            protocol_version: member(params, "protocolVersion").and_then(|v| v.as_json_str()),
            client_name: member(params, "clientInfo")
                .and_then(|c| member(c, "name"))
                .and_then(|v| v.as_json_str()),
        }
    }

    /// The revision to answer (see [`ProtocolVersion::negotiate`]).
    pub fn negotiate(&self) -> ProtocolVersion {
        ProtocolVersion::negotiate(self.protocol_version.map(|v| v.escaped_bytes()))
    }
}

/// The params of `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallParams<'a> {
    /// The tool's name (string contents as on the wire).
    pub name: JsonStr<'a>,
    /// The name's JSON text, quotes included (to echo it in an error).
    pub name_json: RawJson<'a>,
    /// `arguments`: an object when present.
    pub arguments: Option<RawJson<'a>>,
    /// `_meta.progressToken`, as JSON text.
    pub progress_token: Option<RawJson<'a>>,
}

impl<'a> CallParams<'a> {
    /// Reads them: `None` when `name` is missing or not a string, or `arguments` is present
    /// and not an object (the call is then answered Invalid params).
    pub fn parse(params: Option<RawJson<'a>>) -> Option<Self> {
        let p = params?;
        let name_json = member(p, "name")?;
        let arguments = match member(p, "arguments") {
            Some(a) if a.is_object() => Some(a),
            Some(a) if a.is_null() => None,
            Some(_) => return None,
            None => None,
        };
        Some(CallParams {
            name: name_json.as_json_str()?,
            name_json,
            arguments,
            progress_token: progress_token(params),
        })
    }
}

/// The `requestId` of `notifications/cancelled` params (a string or a number), as JSON text.
pub fn cancelled_request_id(params: Option<RawJson<'_>>) -> Option<RawJson<'_>> {
    let id = member(params?, crate::methods::CANCELLED_ID_MEMBER)?;
    matches!(id.as_bytes().first()?, b'"' | b'-' | b'0'..=b'9').then_some(id)
}

/// The `level` of `logging/setLevel` params.
pub fn set_level(params: Option<RawJson<'_>>) -> Option<LogLevel> {
    let level = member(params?, "level")?.as_json_str()?;
    LogLevel::from_bytes(level.escaped_bytes())
}
