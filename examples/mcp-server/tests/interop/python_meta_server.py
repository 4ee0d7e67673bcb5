"""An MCP server written with the official Python SDK (MCPServer, FastMCP before mcp 2), served
over stdio, for client_traces.rs: its tool `trace_seen` answers, as JSON text, the `_meta` its
request came with and the SDK's own span of the call (the span `OpenTelemetryMiddleware`
makes of each request, its parent taken from `_meta.traceparent` by the SDK), as recorded by
OpenTelemetry's SDK (PyPI `opentelemetry-sdk`, installed by .ci/install/mcp-interop.sh).
"""

import json

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

# Before the server starts: the SDK's tracer then records its spans.
trace.set_tracer_provider(TracerProvider())

try:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP
except ModuleNotFoundError:  # mcp 2.x: FastMCP was renamed MCPServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as FastMCP

mcp = FastMCP("python-meta-server")


def as_dict(meta):
    if meta is None:
        return None
    if hasattr(meta, "model_dump"):
        return meta.model_dump(by_alias=True, exclude_none=True)
    return dict(meta)


@mcp.tool()
def trace_seen(ctx: Context) -> str:
    """The request's `_meta` and the SDK's span of this call."""
    span = trace.get_current_span()
    own = span.get_span_context()
    parent = getattr(span, "parent", None)
    return json.dumps(
        {
            "meta": as_dict(ctx.request_context.meta),
            "span": {
                "recording": span.is_recording(),
                "name": getattr(span, "name", None),
                "kind": getattr(getattr(span, "kind", None), "name", None),
                "trace_id": format(own.trace_id, "032x"),
                "span_id": format(own.span_id, "016x"),
                "parent_trace_id": format(parent.trace_id, "032x") if parent else None,
                "parent_span_id": format(parent.span_id, "016x") if parent else None,
                "parent_remote": parent.is_remote if parent else None,
                "attributes": dict(getattr(span, "attributes", {}) or {}),
            },
        }
    )


if __name__ == "__main__":
    mcp.run()
