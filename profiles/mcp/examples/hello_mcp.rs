//! An MCP server in a few lines: one tool with typed arguments, over stdio.
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

async fn add(ctx: ToolContext, Add { a, b }: Add) -> Result<String, ToolError> {
    ctx.progress(1.0, Some(1.0), Some("adding")).await; // sent if the client asked for it
    let sum = a.checked_add(b).ok_or_else(|| ToolError::new("overflow"))?; // isError: true
    Ok(sum.to_string())
}

#[tokio::main]
async fn main() -> Result<(), rpcwire_tokio::DriverError> {
    McpServer::new("hello-mcp", "0.1.0")
        .tool("add", "Adds two integers.", add)
        .serve_stdio()
        .await
}
