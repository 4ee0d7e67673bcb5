//! The MCP conformance suite's client under test (`conformance client --command mcp-client`):
//! the suite starts a scenario's server, runs `mcp-client URL` with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`, the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION` (2026-07-28:
//! the stateless revision; older ones: a session) and the scenario's data in
//! `MCP_CONFORMANCE_CONTEXT`, then scores what the server saw. Everything here goes through
//! rpcwire-mcp's public client API ([`McpHttpClient`], [`McpClient`]), as the SDKs' own
//! conformance clients go through theirs.
//!
//! Exits 0 when the scenario ran, 1 (with the error on stderr) when it did not.

use std::process::ExitCode;

use rpcwire_mcp::http::{
    Authorizer, ClientAssertion, EnterpriseGrant, McpHttpClient, Mode, OAuth, OAuthConfig,
    OAuthError,
};
use rpcwire_mcp::tokio::{ClientHandlers, ClientOptions, ElicitResult, McpClient, Root};
use rpcwire_mcp::STATELESS_VERSION;
use serde_json::{json, Map, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Where the authorization server sends the user back (never listened on: [`AutoApprove`]
/// reads the redirect's `Location` instead).
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client's id where the authorization server takes Client ID Metadata Documents.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The browser step against the suite's authorization server, which approves at once: GET
/// the authorization URL and take the redirect's `Location` (what a browser would follow to
/// the redirect URI).
struct AutoApprove;

impl Authorizer for AutoApprove {
    fn authorize(
        &self,
        authorization_url: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<String, OAuthError>> + Send + '_>>
    {
        Box::pin(async move {
            redirect_location(&authorization_url)
                .await
                .map_err(|e| OAuthError::Authorizer(e.to_string()))
        })
    }
}

/// `GET url` over plain HTTP/1.1 (the suite's servers are `http://localhost`); the
/// `Location` of its redirect.
async fn redirect_location(url: &str) -> Result<String, Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url::Url::parse(url)?;
    let host = url.host_str().ok_or("no host")?;
    let port = url.port_or_known_default().ok_or("no port")?;
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    };
    let mut stream = tokio::net::TcpStream::connect((host, port)).await?;
    let request =
        format!("GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut head = Vec::new();
    // The head is all that is read (bounded): the body does not matter.
    let mut chunk = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 << 10 {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await??;
        if n == 0 {
            break;
        }
        head.extend_from_slice(chunk.get(..n).unwrap_or_default());
    }
    let head = String::from_utf8_lossy(&head);
    head.lines()
        .find_map(|l| {
            l.split_once(':')
                .filter(|(name, _)| name.eq_ignore_ascii_case("location"))
                .map(|(_, v)| v.trim().to_owned())
        })
        .ok_or_else(|| format!("no redirect: {}", head.lines().next().unwrap_or("")).into())
}

fn main() -> ExitCode {
    // The suite keeps stderr in its results: `MCP_CLIENT_DEBUG=1` for every step there.
    let level = if std::env::var_os("MCP_CLIENT_DEBUG").is_some() {
        tracing::Level::DEBUG
    } else {
        tracing::Level::WARN
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A line that cannot be written (stderr closed) is dropped; the subscriber's own
        // report of it would panic the task that logged.
        .log_internal_errors(false)
        .with_max_level(level)
        .init();
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=NAME mcp-client URL");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mcp-client: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&scenario, &url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-client: scenario {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The scenario's data (`MCP_CONFORMANCE_CONTEXT`), `null` when there is none.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null)
}

/// Answers every elicitation by accepting: `confirmed: true` where the schema asks for it,
/// the schema's defaults for the rest (the library fills them in); a sampling with a canned
/// assistant message; the roots with one directory.
fn handlers() -> ClientHandlers {
    ClientHandlers::new()
        .elicitation(|request| async move {
            let mut content = Map::new();
            let asks_confirmed = request
                .requested_schema
                .pointer("/properties/confirmed")
                .is_some();
            if asks_confirmed {
                content.insert("confirmed".into(), json!(true));
            }
            Ok(ElicitResult::accept(content))
        })
        .sampling(|_params| async {
            Ok(json!({"role": "assistant", "model": "conformance-client",
                "content": {"type": "text", "text": "sampled"}, "stopReason": "endTurn"}))
        })
        .roots(vec![Root {
            uri: "file:///tmp".into(),
            name: Some("tmp".into()),
        }])
}

async fn connect(url: &str, handlers: ClientHandlers) -> Result<McpHttpClient, Error> {
    connect_with(url, handlers, None).await
}

async fn connect_with(
    url: &str,
    handlers: ClientHandlers,
    oauth: Option<OAuth>,
) -> Result<McpHttpClient, Error> {
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_default();
    let mode = if version == STATELESS_VERSION {
        Mode::Stateless
    } else {
        Mode::Sessions
    };
    let options = ClientOptions {
        name: "rpcwire-conformance-client".into(),
        handlers,
        ..ClientOptions::default()
    };
    let mut builder = McpHttpClient::builder(url).mode(mode).options(options);
    if let Some(oauth) = oauth {
        builder = builder.oauth(oauth);
    }
    Ok(builder.connect().await?)
}

async fn run(scenario: &str, url: &str) -> Result<(), Error> {
    match scenario {
        "http-custom-headers" => {
            let client = connect(url, handlers()).await?;
            client.mcp().list_tools().await?;
            let calls = context()["toolCalls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for call in calls {
                let name = call["name"].as_str().unwrap_or_default();
                client.mcp().call_tool(name, &call["arguments"]).await?;
            }
            client.close().await?;
            Ok(())
        }
        "http-standard-headers" => {
            let client = connect(url, handlers()).await?;
            exercise_everything(client.mcp()).await?;
            client.close().await?;
            Ok(())
        }
        "json-schema-ref-no-deref" => {
            // Listing is the scenario: the schema's network `$ref` must not be fetched.
            let client = connect(url, handlers()).await?;
            client.mcp().list_tools().await?;
            client.close().await?;
            Ok(())
        }
        s if s.starts_with("auth/") => {
            let ctx = context();
            let mut config = OAuthConfig::new("rpcwire-conformance-client", REDIRECT_URI);
            config.client_metadata_url = Some(CLIENT_METADATA_URL.into());
            // auth/pre-registration: the credentials the suite registered for the client.
            config.client_id = ctx["client_id"].as_str().map(str::to_owned);
            config.client_secret = ctx["client_secret"].as_str().map(str::to_owned);
            // The client credentials extension: no user, the context's client.
            config.client_credentials =
                s == "auth/client-credentials-basic" || s == "auth/client-credentials-jwt";
            // Enterprise-managed authorization: the context's identity provider and ID token.
            if let (Some(endpoint), Some(id_token)) = (
                ctx["idp_token_endpoint"].as_str(),
                ctx["idp_id_token"].as_str(),
            ) {
                config.enterprise = Some(EnterpriseGrant {
                    idp_token_endpoint: endpoint.to_owned(),
                    id_token: id_token.to_owned(),
                    idp_client_id: ctx["idp_client_id"].as_str().unwrap_or_default().to_owned(),
                });
            }
            // ... with `private_key_jwt` (RFC 7523) where the context holds a key.
            if let Some(pem) = ctx["private_key_pem"].as_str() {
                config.client_assertion = Some(ClientAssertion {
                    private_key_pem: pem.to_owned(),
                    algorithm: ctx["signing_algorithm"]
                        .as_str()
                        .unwrap_or("ES256")
                        .to_owned(),
                });
            }
            let client =
                connect_with(url, handlers(), Some(OAuth::new(config, AutoApprove))).await?;
            call_every_tool(client.mcp()).await?;
            client.close().await?;
            Ok(())
        }
        _ => {
            // initialize, tools_call, sse-retry, request-metadata, elicitation defaults, MRTR,
            // invalid tool headers, $ref: list the tools and call each one.
            let client = connect(url, handlers()).await?;
            call_every_tool(client.mcp()).await?;
            client.close().await?;
            Ok(())
        }
    }
}

/// Lists the tools and calls each with arguments made from its schema.
async fn call_every_tool(mcp: &McpClient) -> Result<(), Error> {
    for tool in mcp.list_tools().await? {
        let result = mcp
            .call_tool(&tool.name, arguments_for(&tool.input_schema))
            .await?;
        tracing::info!(tool = tool.name, text = result.joined_text(), "called");
    }
    Ok(())
}

/// Every list, each item read or got once, each tool called.
async fn exercise_everything(mcp: &McpClient) -> Result<(), Error> {
    call_every_tool(mcp).await?;
    for resource in mcp.list_resources().await? {
        mcp.read_resource(&resource.uri).await?;
    }
    for prompt in mcp.list_prompts().await? {
        let arguments: Map<String, Value> = prompt
            .arguments
            .iter()
            .map(|a| (a.name.clone(), json!("test")))
            .collect();
        mcp.get_prompt(&prompt.name, arguments).await?;
    }
    Ok(())
}

/// A value for each required property of an input schema, of its type.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("number") | Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("test"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
