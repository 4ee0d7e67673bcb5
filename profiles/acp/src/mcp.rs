//! The MCP servers a client gives in `session/new` (and `session/load`, `session/resume`),
//! connected through `rpcwire-mcp`'s client (stdio and Streamable HTTP) with their tools
//! listed, for the agent's code to call (feature `mcp`, on by default).

use std::fmt;
use std::time::Duration;

use agent_client_protocol_schema::v1::McpServer;
use rpcwire_mcp::http::{McpHttpClient, McpHttpError};
use rpcwire_mcp::tokio::{ClientOptions, McpClient, McpError, ServerTool, ToolResult};

/// Why an MCP server given by the client could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// The stdio server could not be started or initialized, or a request to it failed.
    #[error("MCP server {server}: {source}")]
    Mcp {
        /// The server's name, as the client gave it.
        server: String,
        /// What failed.
        #[source]
        source: McpError,
    },
    /// The Streamable HTTP server could not be reached or initialized.
    #[error("MCP server {server}: {source}")]
    Http {
        /// The server's name.
        server: String,
        /// What failed.
        #[source]
        source: McpHttpError,
    },
    /// A transport this crate does not connect (SSE, deprecated by MCP).
    #[error("MCP server {server}: the {transport} transport is not supported")]
    Unsupported {
        /// The server's name.
        server: String,
        /// Which transport.
        transport: &'static str,
    },
    /// No connected server of this name (or none offering this tool).
    #[error("no connected MCP server {0}")]
    Unknown(String),
}

/// How one server is connected: a child process it runs as, or an HTTP client.
enum Link {
    Stdio {
        client: McpClient,
        // Killed when dropped (with the session).
        _child: tokio::process::Child,
    },
    Http(McpHttpClient),
}

impl Link {
    fn client(&self) -> &McpClient {
        match self {
            Link::Stdio { client, .. } => client,
            Link::Http(http) => http.mcp(),
        }
    }
}

/// One connected server and the tools it listed.
struct Connected {
    name: String,
    link: Link,
    tools: Vec<ServerTool>,
}

/// The MCP servers of one session, connected, with their tools. What
/// [`SessionHandle::mcp`](crate::SessionHandle::mcp) shows the agent's code; the servers are
/// disconnected (stdio children killed, HTTP sessions dropped) when the session closes or is
/// deleted, or the connection ends.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Connected>,
}

impl fmt::Debug for McpServers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                self.servers
                    .iter()
                    .map(|s| (&s.name, s.tools.iter().map(|t| &t.name).collect::<Vec<_>>())),
            )
            .finish()
    }
}

/// Connects one server and lists its tools.
async fn connect(server: &McpServer, timeout: Duration) -> Result<Connected, McpServerError> {
    let options = ClientOptions {
        name: "rpcwire-acp".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        timeout: Some(timeout),
        ..ClientOptions::default()
    };
    let (name, link) = match server {
        McpServer::Stdio(stdio) => {
            let mut command = tokio::process::Command::new(&stdio.command);
            command
                .args(&stdio.args)
                .envs(stdio.env.iter().map(|e| (&e.name, &e.value)))
                // The server's logs are its own; the agent's stdout is the ACP wire.
                .stderr(std::process::Stdio::null());
            let (client, child) =
                McpClient::spawn_with(options, &mut command)
                    .await
                    .map_err(|source| McpServerError::Mcp {
                        server: stdio.name.clone(),
                        source,
                    })?;
            let link = Link::Stdio {
                client,
                _child: child,
            };
            (stdio.name.clone(), link)
        }
        McpServer::Http(http) => {
            let failed = |source| McpServerError::Http {
                server: http.name.clone(),
                source,
            };
            let mut builder = McpHttpClient::builder(&http.url)
                .options(options)
                .timeout(timeout);
            for header in &http.headers {
                builder = builder
                    .header(&header.name, &header.value)
                    .map_err(failed)?;
            }
            (
                http.name.clone(),
                Link::Http(builder.connect().await.map_err(failed)?),
            )
        }
        McpServer::Sse(sse) => {
            return Err(McpServerError::Unsupported {
                server: sse.name.clone(),
                transport: "SSE",
            })
        }
        // A transport added to the schema later.
        #[allow(unreachable_patterns)]
        _ => {
            return Err(McpServerError::Unsupported {
                server: String::new(),
                transport: "unknown",
            })
        }
    };
    let tools = link
        .client()
        .list_tools()
        .await
        .map_err(|source| McpServerError::Mcp {
            server: name.clone(),
            source,
        })?;
    Ok(Connected { name, link, tools })
}

impl McpServers {
    /// Connects every server (at once), each request bounded by `timeout`; the servers that
    /// could not be used are returned beside the others, which work.
    pub async fn connect(
        servers: &[McpServer],
        timeout: Duration,
    ) -> (McpServers, Vec<McpServerError>) {
        let attempts = futures_join(servers.iter().map(|server| connect(server, timeout))).await;
        let mut connected = McpServers::default();
        let mut failed = Vec::new();
        for attempt in attempts {
            match attempt {
                Ok(server) => connected.servers.push(server),
                Err(e) => failed.push(e),
            }
        }
        (connected, failed)
    }

    /// True when no server is connected.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The connected servers' names, in the order the client gave them.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.iter().map(|s| s.name.as_str())
    }

    /// Every tool, with the name of the server offering it.
    pub fn tools(&self) -> impl Iterator<Item = (&str, &ServerTool)> {
        self.servers
            .iter()
            .flat_map(|s| s.tools.iter().map(move |t| (s.name.as_str(), t)))
    }

    /// The first server offering a tool of this name.
    pub fn server_of(&self, tool: &str) -> Option<&str> {
        self.tools().find(|(_, t)| t.name == tool).map(|(s, _)| s)
    }

    /// Calls `tool` of `server` with `arguments` (`tools/call`). A tool that ran and failed is
    /// a result with `is_error`; a failed call is an error.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
    ) -> Result<ToolResult, McpServerError> {
        let connected = self
            .servers
            .iter()
            .find(|s| s.name == server)
            .ok_or_else(|| McpServerError::Unknown(server.to_owned()))?;
        connected
            .link
            .client()
            .call_tool(tool, arguments)
            .await
            .map_err(|source| McpServerError::Mcp {
                server: server.to_owned(),
                source,
            })
    }
}

/// Runs futures concurrently on this task and collects their outputs in order (one join needs
/// no extra dependency).
async fn futures_join<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future,
{
    // The futures borrow the request, so they cannot be spawned: they are polled together.
    let mut pending: Vec<std::pin::Pin<Box<F>>> = futures.map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = pending.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut all = true;
        for (future, out) in pending.iter_mut().zip(done.iter_mut()) {
            if out.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *out = Some(v),
                    std::task::Poll::Pending => all = false,
                }
            }
        }
        if all {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    done.into_iter().flatten().collect()
}
