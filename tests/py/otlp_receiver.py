"""An OTLP/HTTP trace and metrics receiver for the tests (run by `rpcwire_tests::otlp::OtlpReceiver`): decodes each protobuf POST to
/v1/traces and /v1/metrics with the PyPI `opentelemetry-proto` messages and prints every span
as one JSON line on stdout, and every metrics export as one JSON line (`{"metrics": [...]}`,
one entry per data point).

Listens on 127.0.0.1 (port 0: the first line printed is `listening PORT`). Anything but a
POST to /v1/traces or /v1/metrics with a protobuf body is answered 404 or 400 and printed as
an `error` line, so that a wrong path or encoding fails the test instead of passing unseen.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def value(any_value):
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


def out(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path not in ("/v1/traces", "/v1/metrics"):
            out({"error": "path", "path": self.path})
            self.send_response(404)
            self.end_headers()
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            out({"error": "content-type", "value": self.headers.get("Content-Type")})
            self.send_response(400)
            self.end_headers()
            return
        if self.path == "/v1/metrics":
            self.metrics(body)
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    out(
                        {
                            "service": resource.get("service.name"),
                            "scope": scope_spans.scope.name,
                            "name": span.name,
                            "kind": span.kind,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "trace_state": span.trace_state,
                            "status": span.status.code,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "attributes": attributes(span.attributes),
                        }
                    )
        self.answer(ExportTraceServiceResponse().SerializeToString())

    def metrics(self, body):
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        points = []
        for resource_metrics in request.resource_metrics:
            resource = attributes(resource_metrics.resource.attributes)
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    data = getattr(metric, kind)
                    for point in data.data_points:
                        entry = {
                            "service": resource.get("service.name"),
                            "scope": scope_metrics.scope.name,
                            "name": metric.name,
                            "unit": metric.unit,
                            "type": kind,
                            "attributes": attributes(point.attributes),
                            "start": point.start_time_unix_nano,
                            "time": point.time_unix_nano,
                        }
                        if kind == "sum":
                            entry["monotonic"] = data.is_monotonic
                        if kind in ("sum", "histogram"):
                            entry["temporality"] = data.aggregation_temporality
                        if kind == "histogram":
                            entry["count"] = point.count
                            entry["sum"] = point.sum
                            entry["bucket_counts"] = list(point.bucket_counts)
                            entry["explicit_bounds"] = list(point.explicit_bounds)
                        else:
                            entry["value"] = getattr(point, point.WhichOneof("value"))
                        points.append(entry)
        out({"metrics": points})
        self.answer(ExportMetricsServiceResponse().SerializeToString())

    def answer(self, answer):
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    out_line = "listening %d\n" % server.server_address[1]
    sys.stdout.write(out_line)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
