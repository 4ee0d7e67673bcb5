"""An MCP server written with the official Python SDK's FastMCP (named MCPServer since mcp 2),
served over stdio, for the tokio McpClient test (profiles/mcp/tests/interop.rs)."""

try:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP
except ModuleNotFoundError:  # mcp 2.x: FastMCP was renamed MCPServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP

mcp = FastMCP("python-fastmcp-example")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@mcp.tool()
def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


@mcp.tool()
async def count(to: int, ctx: Context) -> str:
    """Counts to `to`, reporting progress."""
    await ctx.info(f"python counting to {to}")
    for i in range(1, to + 1):
        await ctx.report_progress(i, to, f"step {i}")
    return f"python counted to {to}"


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ValueError(reason)


if __name__ == "__main__":
    mcp.run()
