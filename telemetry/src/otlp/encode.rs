//! The protobuf body of an OTLP/HTTP span export (an
//! `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`), written by hand.
//!
//! Why by hand: `opentelemetry-otlp`'s exporter first converts every `SpanData` into
//! `opentelemetry-proto`'s owned prost messages (a `String` and an allocation for every
//! attribute key and value, a `HashMap` to group the spans by instrumentation scope), then
//! encodes those: about 17 600 CPU instructions per span. [`TraceEncoder`] writes the same
//! bytes in one pass straight from the `SpanData`, into a buffer kept from one batch to the
//! next: the lengths that nested messages are prefixed with come from the `*_len` functions
//! below, so nothing is allocated per span or per attribute (the resource, the same for every
//! batch, is encoded once).
//!
//! What it writes must stay what `opentelemetry-proto` 0.33's transform
//! (`transform::trace::tonic`, `transform::common::tonic`) and prost produce for the same
//! spans: the unit tests below encode the same batches with both and hold this encoder to the
//! library's own encoding (equal decoded messages, and equal bytes). Fields at their default
//! value are left out as prost leaves them out (proto3); messages that the transform always
//! sets (`Span.status`, `ScopeSpans.scope`, `ResourceSpans.resource`, `KeyValue.value`) are
//! written even when empty, as prost writes them.

use opentelemetry::trace::{SpanId, Status, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
use std::time::{SystemTime, UNIX_EPOCH};

/// The flag of `Span.flags` and `Link.flags` that says whether the parent (or the linked span)
/// is remote is known (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`); the transform always sets it.
const HAS_IS_REMOTE: u32 = 0x100;
/// The flag that says the parent (or the linked span) is remote
/// (`SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`).
const IS_REMOTE: u32 = 0x200;

/// No next span in a scope's chain.
const END: usize = usize::MAX;

/// Encodes batches of spans, under one resource, as the bytes of an
/// `ExportTraceServiceRequest`; keeps its working space between batches.
#[derive(Debug, Default)]
pub(crate) struct TraceEncoder {
    /// The fields of the `Resource` message (its attributes), encoded once.
    resource: Vec<u8>,
    /// `ResourceSpans.schema_url`: the resource's.
    resource_schema_url: String,
    /// The encoded length of each span of the batch being encoded.
    span_lens: Vec<usize>,
    /// The next span of the same scope as each span of the batch ([`END`] for the last one).
    next: Vec<usize>,
    /// The batch's instrumentation scopes in the order they first appear.
    groups: Vec<Group>,
}

/// The spans of one instrumentation scope in a batch.
#[derive(Debug)]
struct Group {
    /// The first span of the scope (whose scope is the group's).
    first: usize,
    /// The last span of the scope so far.
    last: usize,
    /// The bytes of the `spans` fields of its `ScopeSpans`.
    spans_len: usize,
    /// The encoded length of its `InstrumentationScope` message.
    scope_len: usize,
}

impl TraceEncoder {
    /// Takes the resource that every batch is exported under (as the transform's
    /// `ResourceAttributesWithSchema` does: its attributes in the resource's own order, its
    /// schema URL on the `ResourceSpans`).
    pub(crate) fn set_resource(&mut self, resource: &Resource) {
        self.resource.clear();
        for (key, value) in resource.iter() {
            put_key_value(1, key.as_str(), value, &mut self.resource);
        }
        self.resource_schema_url.clear();
        self.resource_schema_url
            .push_str(resource.schema_url().unwrap_or_default());
    }

    /// Writes `batch` into `out` (cleared first) as one `ExportTraceServiceRequest`: one
    /// `ResourceSpans`, with one `ScopeSpans` per instrumentation scope in the order the
    /// scopes first appear, each with its spans in the batch's order.
    pub(crate) fn encode(&mut self, batch: &[SpanData], out: &mut Vec<u8>) {
        out.clear();
        self.span_lens.clear();
        self.next.clear();
        self.groups.clear();
        // The scopes and the spans' lengths. Scopes are compared as the transform's `HashMap`
        // compares them (`same_scope`); the last one matched first, as a batch is mostly of
        // one scope.
        let mut current = 0;
        for (i, span) in batch.iter().enumerate() {
            let len = span_len(span);
            self.span_lens.push(len);
            self.next.push(END);
            let scope = &span.instrumentation_scope;
            let found = match self.groups.get(current) {
                Some(group) if same_scope(&batch[group.first].instrumentation_scope, scope) => {
                    Some(current)
                }
                _ => self
                    .groups
                    .iter()
                    .position(|group| same_scope(&batch[group.first].instrumentation_scope, scope)),
            };
            let g = match found {
                Some(g) => {
                    let last = self.groups[g].last;
                    self.next[last] = i;
                    self.groups[g].last = i;
                    g
                }
                None => {
                    self.groups.push(Group {
                        first: i,
                        last: i,
                        spans_len: 0,
                        scope_len: scope_len(scope),
                    });
                    self.groups.len() - 1
                }
            };
            self.groups[g].spans_len += field_len(2, len);
            current = g;
        }

        let mut resource_spans_len =
            field_len(1, self.resource.len()) + str_len(3, &self.resource_schema_url);
        for group in &self.groups {
            let scope = &batch[group.first].instrumentation_scope;
            resource_spans_len += field_len(2, scope_spans_len(group, scope));
        }
        out.reserve(field_len(1, resource_spans_len));

        // ExportTraceServiceRequest.resource_spans (1): one ResourceSpans.
        put_head(1, resource_spans_len, out);
        // ResourceSpans.resource (1).
        put_head(1, self.resource.len(), out);
        out.extend_from_slice(&self.resource);
        // ResourceSpans.scope_spans (2).
        for group in &self.groups {
            let scope = &batch[group.first].instrumentation_scope;
            put_head(2, scope_spans_len(group, scope), out);
            // ScopeSpans.scope (1).
            put_head(1, group.scope_len, out);
            put_scope(scope, out);
            // ScopeSpans.spans (2).
            let mut i = group.first;
            while i != END {
                put_head(2, self.span_lens[i], out);
                put_span(&batch[i], out);
                i = self.next[i];
            }
            // ScopeSpans.schema_url (3).
            put_str(3, scope.schema_url().unwrap_or_default(), out);
        }
        // ResourceSpans.schema_url (3).
        put_str(3, &self.resource_schema_url, out);
    }
}

/// Whether two spans' scopes are one (`InstrumentationScope`'s `Eq`, which the transform's
/// `HashMap` groups by: attributes in any order). Scopes cloned from one tracer's have their
/// attributes in the same order, compared without the two sorted copies `Eq` allocates.
fn same_scope(a: &InstrumentationScope, b: &InstrumentationScope) -> bool {
    a.name() == b.name()
        && a.version() == b.version()
        && a.schema_url() == b.schema_url()
        && (a.attributes().eq(b.attributes()) || a == b)
}

// Lengths and writers of fields, prost's way: a key (tag and wire type) as a varint, then a
// varint, eight or four little-endian bytes, or a varint length and that many bytes.

/// The bytes of a length-delimited field whose value is `len` bytes.
fn field_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// Writes the key and length of a length-delimited field whose value is `len` bytes.
fn put_head(tag: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

/// The bytes of a `string` or `bytes` field (none when empty).
fn str_len(tag: u32, value: &str) -> usize {
    if value.is_empty() {
        0
    } else {
        field_len(tag, value.len())
    }
}

/// Writes a `string` or `bytes` field unless it is empty.
fn put_str(tag: u32, value: &str, out: &mut Vec<u8>) {
    put_bytes(tag, value.as_bytes(), out);
}

/// Writes a `bytes` field unless it is empty.
fn put_bytes(tag: u32, value: &[u8], out: &mut Vec<u8>) {
    if !value.is_empty() {
        put_head(tag, value.len(), out);
        out.extend_from_slice(value);
    }
}

/// The bytes of a `uint32` or (non-negative) enum field (none when zero).
fn varint_len(tag: u32, value: u64) -> usize {
    if value == 0 {
        0
    } else {
        key_len(tag) + encoded_len_varint(value)
    }
}

/// Writes a `uint32` or (non-negative) enum field unless it is zero.
fn put_varint(tag: u32, value: u64, out: &mut Vec<u8>) {
    if value != 0 {
        encode_key(tag, WireType::Varint, out);
        encode_varint(value, out);
    }
}

/// The bytes of a `fixed64` field (none when zero).
fn fixed64_len(tag: u32, value: u64) -> usize {
    if value == 0 {
        0
    } else {
        key_len(tag) + 8
    }
}

/// Writes a `fixed64` field unless it is zero.
fn put_fixed64(tag: u32, value: u64, out: &mut Vec<u8>) {
    if value != 0 {
        encode_key(tag, WireType::SixtyFourBit, out);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

/// The bytes of a `fixed32` field (none when zero).
fn fixed32_len(tag: u32, value: u32) -> usize {
    if value == 0 {
        0
    } else {
        key_len(tag) + 4
    }
}

/// Writes a `fixed32` field unless it is zero.
fn put_fixed32(tag: u32, value: u32, out: &mut Vec<u8>) {
    if value != 0 {
        encode_key(tag, WireType::ThirtyTwoBit, out);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

// Values and attributes (`opentelemetry.proto.common.v1`).

/// The encoded length of the `AnyValue` of `value`. Its one-of field is written whatever its
/// value (`false`, `0` and `""` included), as prost writes a set one-of.
fn any_value_len(value: &Value) -> usize {
    match value {
        Value::Bool(_) => key_len(2) + 1,
        Value::I64(v) => key_len(3) + encoded_len_varint(*v as u64),
        Value::F64(_) => key_len(4) + 8,
        Value::String(v) => field_len(1, v.as_str().len()),
        Value::Array(array) => field_len(5, array_value_len(array)),
        // No other value in opentelemetry 0.33 (the transform panics on one): an empty
        // AnyValue.
        _ => 0,
    }
}

/// Writes the fields of the `AnyValue` of `value`.
fn put_any_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Bool(v) => put_bool_value(*v, out),
        Value::I64(v) => put_int_value(*v, out),
        Value::F64(v) => put_double_value(*v, out),
        Value::String(v) => put_string_value(v.as_str(), out),
        Value::Array(array) => {
            put_head(5, array_value_len(array), out);
            put_array_value(array, out);
        }
        _ => {}
    }
}

/// `AnyValue.bool_value` (2).
fn put_bool_value(value: bool, out: &mut Vec<u8>) {
    encode_key(2, WireType::Varint, out);
    encode_varint(u64::from(value), out);
}

/// `AnyValue.int_value` (3): an `int64`, negative values in ten bytes.
fn put_int_value(value: i64, out: &mut Vec<u8>) {
    encode_key(3, WireType::Varint, out);
    encode_varint(value as u64, out);
}

/// `AnyValue.double_value` (4).
fn put_double_value(value: f64, out: &mut Vec<u8>) {
    encode_key(4, WireType::SixtyFourBit, out);
    out.extend_from_slice(&value.to_le_bytes());
}

/// `AnyValue.string_value` (1), written even when empty.
fn put_string_value(value: &str, out: &mut Vec<u8>) {
    put_head(1, value.len(), out);
    out.extend_from_slice(value.as_bytes());
}

/// The encoded length of the `ArrayValue` of `array`: an `AnyValue` (`values`, 1) for each
/// element.
fn array_value_len(array: &Array) -> usize {
    match array {
        Array::Bool(values) => values.len() * field_len(1, key_len(2) + 1),
        Array::I64(values) => values
            .iter()
            .map(|v| field_len(1, key_len(3) + encoded_len_varint(*v as u64)))
            .sum(),
        Array::F64(values) => values.len() * field_len(1, key_len(4) + 8),
        Array::String(values) => values
            .iter()
            .map(|v| field_len(1, field_len(1, v.as_str().len())))
            .sum(),
        // No other array in opentelemetry 0.33 (the transform panics on one): an empty
        // ArrayValue.
        _ => 0,
    }
}

/// Writes the fields of the `ArrayValue` of `array`.
fn put_array_value(array: &Array, out: &mut Vec<u8>) {
    match array {
        Array::Bool(values) => {
            for v in values {
                put_head(1, key_len(2) + 1, out);
                put_bool_value(*v, out);
            }
        }
        Array::I64(values) => {
            for v in values {
                put_head(1, key_len(3) + encoded_len_varint(*v as u64), out);
                put_int_value(*v, out);
            }
        }
        Array::F64(values) => {
            for v in values {
                put_head(1, key_len(4) + 8, out);
                put_double_value(*v, out);
            }
        }
        Array::String(values) => {
            for v in values {
                put_head(1, field_len(1, v.as_str().len()), out);
                put_string_value(v.as_str(), out);
            }
        }
        _ => {}
    }
}

/// The encoded length of a `KeyValue`: its key (1) unless empty, its value (2) always.
fn key_value_len(key: &str, value: &Value) -> usize {
    str_len(1, key) + field_len(2, any_value_len(value))
}

/// Writes a `KeyValue` field `tag`.
fn put_key_value(tag: u32, key: &str, value: &Value, out: &mut Vec<u8>) {
    let value_len = any_value_len(value);
    put_head(tag, str_len(1, key) + field_len(2, value_len), out);
    put_str(1, key, out);
    put_head(2, value_len, out);
    put_any_value(value, out);
}

/// The bytes of the attributes (repeated `KeyValue` field `tag`).
fn attributes_len<'a>(tag: u32, attributes: impl IntoIterator<Item = &'a KeyValue>) -> usize {
    attributes
        .into_iter()
        .map(|kv| field_len(tag, key_value_len(kv.key.as_str(), &kv.value)))
        .sum()
}

/// Writes the attributes as the repeated `KeyValue` field `tag`.
fn put_attributes<'a>(
    tag: u32,
    attributes: impl IntoIterator<Item = &'a KeyValue>,
    out: &mut Vec<u8>,
) {
    for kv in attributes {
        put_key_value(tag, kv.key.as_str(), &kv.value, out);
    }
}

/// The encoded length of the `InstrumentationScope` message of `scope`: its name (1), version
/// (2) and attributes (3); its schema URL goes on the `ScopeSpans`.
fn scope_len(scope: &InstrumentationScope) -> usize {
    str_len(1, scope.name())
        + str_len(2, scope.version().unwrap_or_default())
        + attributes_len(3, scope.attributes())
}

/// Writes the fields of the `InstrumentationScope` message of `scope`.
fn put_scope(scope: &InstrumentationScope, out: &mut Vec<u8>) {
    put_str(1, scope.name(), out);
    put_str(2, scope.version().unwrap_or_default(), out);
    put_attributes(3, scope.attributes(), out);
}

/// The encoded length of the `ScopeSpans` of a group: its scope (1), spans (2) and schema URL
/// (3).
fn scope_spans_len(group: &Group, scope: &InstrumentationScope) -> usize {
    field_len(1, group.scope_len)
        + group.spans_len
        + str_len(3, scope.schema_url().unwrap_or_default())
}

// Spans (`opentelemetry.proto.trace.v1`).

/// The transform's `to_nanos`: nanoseconds since the Unix epoch, zero before it.
fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64
}

/// `Span.flags` and `Link.flags` as the transform's `build_span_flags` makes them: the W3C
/// trace flags, the "is remote known" flag always, and the "is remote" flag when it is.
fn span_flags(is_remote: bool, trace_flags: u8) -> u32 {
    let flags = u32::from(trace_flags) | HAS_IS_REMOTE;
    if is_remote {
        flags | IS_REMOTE
    } else {
        flags
    }
}

/// The length of `TraceState::header()` (`key=value` entries joined by `,`), without
/// building it.
fn trace_state_len(state: &TraceState) -> usize {
    let mut len = 0;
    for (i, (key, value)) in state.into_iter().enumerate() {
        len += usize::from(i > 0) + key.len() + 1 + value.len();
    }
    len
}

/// Writes a trace state field (`TraceState::header()`) unless it is empty.
fn put_trace_state(tag: u32, state: &TraceState, out: &mut Vec<u8>) {
    let len = trace_state_len(state);
    if len == 0 {
        return;
    }
    put_head(tag, len, out);
    for (i, (key, value)) in state.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(key.as_bytes());
        out.push(b'=');
        out.extend_from_slice(value.as_bytes());
    }
}

/// The bytes of a trace state field (none when empty).
fn trace_state_field_len(tag: u32, state: &TraceState) -> usize {
    match trace_state_len(state) {
        0 => 0,
        len => field_len(tag, len),
    }
}

/// `Span.kind`: the OTLP `SpanKind` (never `SPAN_KIND_UNSPECIFIED`).
fn kind_code(kind: &opentelemetry::trace::SpanKind) -> u64 {
    use opentelemetry::trace::SpanKind;
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

/// `Status.code` and `Status.message` of a span's status (a message only for an error).
fn status_parts(status: &Status) -> (u64, &str) {
    match status {
        Status::Unset => (0, ""),
        Status::Ok => (1, ""),
        Status::Error { description } => (2, description),
    }
}

/// The encoded length of the `Status` message: its message (2) and code (3).
fn status_len(status: &Status) -> usize {
    let (code, message) = status_parts(status);
    str_len(2, message) + varint_len(3, code)
}

/// The encoded length of an `Event` message: its time (1), name (2), attributes (3) and
/// dropped attributes (4).
fn event_len(event: &opentelemetry::trace::Event) -> usize {
    fixed64_len(1, unix_nanos(event.timestamp))
        + str_len(2, &event.name)
        + attributes_len(3, &event.attributes)
        + varint_len(4, u64::from(event.dropped_attributes_count))
}

/// The encoded length of a `Link` message: trace id (1), span id (2), trace state (3),
/// attributes (4), dropped attributes (5), flags (6).
fn link_len(link: &opentelemetry::trace::Link) -> usize {
    let context = &link.span_context;
    field_len(1, 16)
        + field_len(2, 8)
        + trace_state_field_len(3, context.trace_state())
        + attributes_len(4, &link.attributes)
        + varint_len(5, u64::from(link.dropped_attributes_count))
        + fixed32_len(
            6,
            span_flags(context.is_remote(), context.trace_flags().to_u8()),
        )
}

/// The encoded length of a `Span` message.
fn span_len(span: &SpanData) -> usize {
    let context = &span.span_context;
    let mut len = field_len(1, 16)
        + field_len(2, 8)
        + trace_state_field_len(3, context.trace_state())
        + fixed32_len(
            16,
            span_flags(span.parent_span_is_remote, context.trace_flags().to_u8()),
        )
        + str_len(5, &span.name)
        + varint_len(6, kind_code(&span.span_kind))
        + fixed64_len(7, unix_nanos(span.start_time))
        + fixed64_len(8, unix_nanos(span.end_time))
        + attributes_len(9, &span.attributes)
        + varint_len(10, u64::from(span.dropped_attributes_count))
        + varint_len(12, u64::from(span.events.dropped_count))
        + varint_len(14, u64::from(span.links.dropped_count))
        + field_len(15, status_len(&span.status));
    if span.parent_span_id != SpanId::INVALID {
        len += field_len(4, 8);
    }
    for event in span.events.iter() {
        len += field_len(11, event_len(event));
    }
    for link in span.links.iter() {
        len += field_len(13, link_len(link));
    }
    len
}

/// Writes the fields of the `Span` message of `span`, in the order prost writes them: by tag
/// (`flags`, 16, last).
fn put_span(span: &SpanData, out: &mut Vec<u8>) {
    let context = &span.span_context;
    put_bytes(1, &context.trace_id().to_bytes(), out);
    put_bytes(2, &context.span_id().to_bytes(), out);
    put_trace_state(3, context.trace_state(), out);
    if span.parent_span_id != SpanId::INVALID {
        put_bytes(4, &span.parent_span_id.to_bytes(), out);
    }
    put_str(5, &span.name, out);
    put_varint(6, kind_code(&span.span_kind), out);
    put_fixed64(7, unix_nanos(span.start_time), out);
    put_fixed64(8, unix_nanos(span.end_time), out);
    put_attributes(9, &span.attributes, out);
    put_varint(10, u64::from(span.dropped_attributes_count), out);
    for event in span.events.iter() {
        put_head(11, event_len(event), out);
        put_fixed64(1, unix_nanos(event.timestamp), out);
        put_str(2, &event.name, out);
        put_attributes(3, &event.attributes, out);
        put_varint(4, u64::from(event.dropped_attributes_count), out);
    }
    put_varint(12, u64::from(span.events.dropped_count), out);
    for link in span.links.iter() {
        let context = &link.span_context;
        put_head(13, link_len(link), out);
        put_bytes(1, &context.trace_id().to_bytes(), out);
        put_bytes(2, &context.span_id().to_bytes(), out);
        put_trace_state(3, context.trace_state(), out);
        put_attributes(4, &link.attributes, out);
        put_varint(5, u64::from(link.dropped_attributes_count), out);
        put_fixed32(
            6,
            span_flags(context.is_remote(), context.trace_flags().to_u8()),
            out,
        );
    }
    put_varint(14, u64::from(span.links.dropped_count), out);
    // Span.status (15): always set by the transform, so written even when empty (Unset).
    let (code, message) = status_parts(&span.status);
    put_head(15, status_len(&span.status), out);
    put_str(2, message, out);
    put_varint(3, code, out);
    put_fixed32(
        16,
        span_flags(span.parent_span_is_remote, context.trace_flags().to_u8()),
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{
        Event, Link, SpanContext, SpanKind, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry::StringValue;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use prost::Message as _;
    use std::time::Duration;

    /// The library's body for `batch`: what `opentelemetry-otlp` sends
    /// (`OtlpHttpClient::build_trace_export_body`).
    fn library(batch: &[SpanData], resource: Option<&Resource>) -> Vec<u8> {
        let resource = resource
            .map(ResourceAttributesWithSchema::from)
            .unwrap_or_default();
        let request = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch.to_vec(), &resource),
        };
        request.encode_to_vec()
    }

    /// Encodes `batch` with `encoder` and with the library, and holds them equal: the same
    /// decoded message, and the same bytes (the library's grouping keeps the order in which
    /// scopes first appear, and prost writes fields in a fixed order).
    fn assert_as_library(
        encoder: &mut TraceEncoder,
        batch: &[SpanData],
        resource: Option<&Resource>,
    ) {
        let mut ours = vec![0xAA; 3]; // Cleared by `encode`.
        encoder.encode(batch, &mut ours);
        let theirs = library(batch, resource);
        let decoded_ours = ExportTraceServiceRequest::decode(ours.as_slice()).unwrap();
        let decoded_theirs = ExportTraceServiceRequest::decode(theirs.as_slice()).unwrap();
        assert_eq!(decoded_ours, decoded_theirs);
        assert_same_bytes(&ours, &theirs);
    }

    /// `ours == theirs`, or a panic that shows where they part.
    fn assert_same_bytes(ours: &[u8], theirs: &[u8]) {
        if ours != theirs {
            let at = ours.iter().zip(theirs).take_while(|(a, b)| a == b).count();
            let around =
                |bytes: &[u8]| bytes[at.saturating_sub(16)..(at + 16).min(bytes.len())].to_vec();
            panic!(
                "{} bytes encoded, the library's {}; they part at byte {at}:\n ours   {:?}\n theirs {:?}",
                ours.len(),
                theirs.len(),
                around(ours),
                around(theirs),
            );
        }
    }

    /// An attribute of every kind of value: empty and non-empty strings, negative, zero and
    /// large integers, doubles, booleans, and arrays of each kind (empty ones too).
    fn every_value() -> Vec<KeyValue> {
        vec![
            KeyValue::new("bool.true", true),
            KeyValue::new("bool.false", false),
            KeyValue::new("int.zero", 0_i64),
            KeyValue::new("int.negative", -1_i64),
            KeyValue::new("int.min", i64::MIN),
            KeyValue::new("int.max", i64::MAX),
            KeyValue::new("int.small", 300_i64),
            KeyValue::new("double", -2.5_f64),
            KeyValue::new("double.zero", 0.0_f64),
            KeyValue::new("string", "value"),
            KeyValue::new("string.empty", ""),
            KeyValue::new("string.utf8", "héllo ✓"),
            KeyValue::new("", "empty key"),
            KeyValue::new("array.bool", Value::Array(vec![true, false].into())),
            KeyValue::new("array.int", Value::Array(vec![-7_i64, 0, 1 << 40].into())),
            KeyValue::new(
                "array.double",
                Value::Array(vec![1.5_f64, 0.0, -0.25].into()),
            ),
            KeyValue::new(
                "array.string",
                Value::Array(vec![StringValue::from(""), StringValue::from("a")].into()),
            ),
            KeyValue::new("array.bool.empty", Value::Array(Vec::<bool>::new().into())),
            KeyValue::new("array.int.empty", Value::Array(Vec::<i64>::new().into())),
            KeyValue::new("array.double.empty", Value::Array(Vec::<f64>::new().into())),
            KeyValue::new(
                "array.string.empty",
                Value::Array(Vec::<StringValue>::new().into()),
            ),
            // Long enough for a two-byte length.
            KeyValue::new("string.long", "x".repeat(300)),
        ]
    }

    fn at(nanos: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(nanos)
    }

    fn context(trace: u128, span: u64, sampled: bool, remote: bool, state: &str) -> SpanContext {
        let flags = if sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            flags,
            remote,
            state.parse::<TraceState>().unwrap(),
        )
    }

    /// A span with nothing but its ids, kind, times and scope.
    fn plain(id: u64, kind: SpanKind, scope: InstrumentationScope) -> SpanData {
        SpanData {
            span_context: context(0x0af7651916cd43dd8448eb211c80319c, id, true, false, ""),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: kind,
            name: format!("span {id}").into(),
            start_time: at(1_700_000_000_000_000_000 + id),
            end_time: at(1_700_000_000_500_000_000 + id),
            attributes: vec![],
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: scope,
        }
    }

    fn rpcwire_scope() -> InstrumentationScope {
        InstrumentationScope::builder("rpcwire").build()
    }

    fn full_scope(attributes: Vec<KeyValue>) -> InstrumentationScope {
        InstrumentationScope::builder("other-lib")
            .with_version("1.2.3")
            .with_schema_url("https://opentelemetry.io/schemas/1.26.0")
            .with_attributes(attributes)
            .build()
    }

    /// Spans that cover every field: every kind, a remote, a local and no parent, trace
    /// states, each status, events and links with attributes, dropped counts, every value.
    fn batch() -> Vec<SpanData> {
        let mut spans = Vec::new();

        // A server span with a remote parent, a trace state, every value, an error status,
        // events, links and dropped counts.
        let mut server = plain(1, SpanKind::Server, rpcwire_scope());
        server.span_context = context(
            0x4bf92f3577b34da6a3ce929d0e0e4736,
            0x1020304050607080,
            true,
            false,
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
        );
        server.parent_span_id = SpanId::from(0x00f067aa0ba902b7);
        server.parent_span_is_remote = true;
        server.attributes = every_value();
        server.dropped_attributes_count = 3;
        server.status = Status::error("the call failed");
        server.events.events = vec![
            Event::new("exception", at(1_700_000_000_100_000_000), every_value(), 2),
            Event::new("", at(0), vec![], 0),
            Event::new(
                "before the epoch",
                UNIX_EPOCH - Duration::from_secs(1),
                vec![KeyValue::new("k", "v")],
                0,
            ),
        ];
        server.events.dropped_count = 4;
        server.links.links = vec![
            Link::new(
                context(
                    0x22334455667788990011223344556677,
                    0x2030405060708090,
                    true,
                    true,
                    "vendor=link",
                ),
                vec![
                    KeyValue::new("link.attr", "linked"),
                    KeyValue::new("n", -5_i64),
                ],
                5,
            ),
            Link::new(context(1, 2, false, false, ""), vec![], 0),
        ];
        server.links.dropped_count = 6;
        spans.push(server);

        // A client span of another scope, with a local parent, unsampled, status Ok.
        let mut client = plain(
            2,
            SpanKind::Client,
            full_scope(vec![KeyValue::new("a", 1_i64), KeyValue::new("b", "two")]),
        );
        client.span_context = context(0x4bf92f3577b34da6a3ce929d0e0e4736, 2, false, false, "");
        client.parent_span_id = SpanId::from(0x1020304050607080);
        client.status = Status::Ok;
        spans.push(client);

        // The first scope again (its spans are grouped together), every other kind.
        spans.push(plain(3, SpanKind::Internal, rpcwire_scope()));
        let mut producer = plain(4, SpanKind::Producer, rpcwire_scope());
        producer.status = Status::error("");
        producer.name = "".into();
        producer.start_time = UNIX_EPOCH;
        producer.end_time = UNIX_EPOCH - Duration::from_secs(5);
        spans.push(producer);
        // The same scope as the client's, its attributes in another order: one scope.
        let mut consumer = plain(
            5,
            SpanKind::Consumer,
            full_scope(vec![KeyValue::new("b", "two"), KeyValue::new("a", 1_i64)]),
        );
        consumer.span_context = context(7, 5, true, true, "");
        spans.push(consumer);
        // A scope that differs only in its attributes' values.
        spans.push(plain(
            6,
            SpanKind::Internal,
            full_scope(vec![KeyValue::new("a", 2_i64), KeyValue::new("b", "two")]),
        ));
        spans
    }

    fn resource() -> Resource {
        Resource::builder_empty()
            .with_schema_url(
                [
                    KeyValue::new("service.name", "rpcwire"),
                    KeyValue::new("service.instance.id", "i-1"),
                    KeyValue::new("pid", 4242_i64),
                    KeyValue::new("weights", Value::Array(vec![0.5_f64, 2.0].into())),
                ],
                "https://opentelemetry.io/schemas/1.26.0",
            )
            .build()
    }

    #[test]
    fn every_field_is_encoded_as_the_library_encodes_it() {
        let resource = resource();
        let mut encoder = TraceEncoder::default();
        encoder.set_resource(&resource);
        let batch = batch();
        assert_as_library(&mut encoder, &batch, Some(&resource));

        // The checks above see every field: three scope groups, the spans in order.
        let mut body = Vec::new();
        encoder.encode(&batch, &mut body);
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let scopes = &request.resource_spans[0].scope_spans;
        let names =
            |i: usize| -> Vec<&str> { scopes[i].spans.iter().map(|s| s.name.as_str()).collect() };
        assert_eq!(scopes.len(), 3);
        assert_eq!(names(0), ["span 1", "span 3", ""]);
        assert_eq!(names(1), ["span 2", "span 5"]);
        assert_eq!(names(2), ["span 6"]);
        let server = &scopes[0].spans[0];
        assert_eq!(server.flags, 0x301);
        assert_eq!(
            server.trace_state,
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
        );
        assert_eq!(server.attributes.len(), every_value().len());
        assert_eq!(server.links[0].flags, 0x301);
        assert_eq!(server.links[1].flags, 0x100);
        assert_eq!(scopes[1].spans[0].flags, 0x100);
        assert_eq!(
            scopes[1].schema_url,
            "https://opentelemetry.io/schemas/1.26.0"
        );
        assert_eq!(
            request.resource_spans[0].schema_url,
            "https://opentelemetry.io/schemas/1.26.0"
        );
    }

    #[test]
    fn each_span_alone_and_resources_without_schema_or_attributes() {
        let with_schema = resource();
        let plain_resource = Resource::builder_empty()
            .with_attributes([KeyValue::new("service.name", "x")])
            .build();
        let empty = Resource::builder_empty().build();
        for resource in [&with_schema, &plain_resource, &empty] {
            let mut encoder = TraceEncoder::default();
            encoder.set_resource(resource);
            for span in batch() {
                assert_as_library(&mut encoder, &[span], Some(resource));
            }
        }
        // No resource set: an empty one, as the library's default.
        let mut encoder = TraceEncoder::default();
        assert_as_library(&mut encoder, &batch(), None);
    }

    #[test]
    fn an_empty_batch_is_the_resource_alone() {
        let resource = resource();
        let mut encoder = TraceEncoder::default();
        encoder.set_resource(&resource);
        assert_as_library(&mut encoder, &[], Some(&resource));
        let mut encoder = TraceEncoder::default();
        assert_as_library(&mut encoder, &[], None);
    }

    #[test]
    fn the_encoder_is_reused_across_batches() {
        let resource = resource();
        let mut encoder = TraceEncoder::default();
        encoder.set_resource(&resource);
        let batch = batch();
        // A large batch, then smaller ones: nothing of a batch is left in the next.
        let large: Vec<SpanData> = batch.iter().cycle().take(200).cloned().collect();
        assert_as_library(&mut encoder, &large, Some(&resource));
        assert_as_library(&mut encoder, &batch[1..3], Some(&resource));
        assert_as_library(&mut encoder, &batch, Some(&resource));
        // A new resource replaces the old one.
        let other = Resource::builder_empty()
            .with_attributes([KeyValue::new("service.name", "other")])
            .build();
        encoder.set_resource(&other);
        assert_as_library(&mut encoder, &batch, Some(&other));
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn value() -> impl Strategy<Value = Value> {
            prop_oneof![
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(Value::I64),
                any::<f64>().prop_map(Value::F64),
                ".{0,200}".prop_map(|s| Value::String(s.into())),
                prop::collection::vec(any::<bool>(), 0..4).prop_map(|v| Value::Array(v.into())),
                prop::collection::vec(any::<i64>(), 0..4).prop_map(|v| Value::Array(v.into())),
                prop::collection::vec(any::<f64>(), 0..4).prop_map(|v| Value::Array(v.into())),
                prop::collection::vec(".{0,20}", 0..4).prop_map(|v| {
                    Value::Array(
                        v.into_iter()
                            .map(StringValue::from)
                            .collect::<Vec<_>>()
                            .into(),
                    )
                }),
            ]
        }

        fn attributes() -> impl Strategy<Value = Vec<KeyValue>> {
            prop::collection::vec(
                ("[a-z.]{0,12}", value()).prop_map(|(k, v)| KeyValue::new(k, v)),
                0..6,
            )
        }

        proptest! {
            #[test]
            fn any_values_and_counts_are_encoded_as_the_library_encodes_them(
                span_attributes in attributes(),
                event_attributes in attributes(),
                scope_attributes in attributes(),
                name in ".{0,40}",
                dropped in any::<(u32, u32, u32)>(),
                times in any::<(u64, u64)>(),
                remote in any::<bool>(),
                kind in 0..5_u8,
            ) {
                let kind = [SpanKind::Internal, SpanKind::Server, SpanKind::Client, SpanKind::Producer, SpanKind::Consumer][usize::from(kind)].clone();
                let mut span = plain(9, kind, full_scope(scope_attributes));
                span.name = name.into();
                span.attributes = span_attributes;
                span.dropped_attributes_count = dropped.0;
                span.parent_span_id = SpanId::from(11);
                span.parent_span_is_remote = remote;
                span.start_time = at(times.0);
                span.end_time = at(times.1);
                span.events.events = vec![Event::new("e", at(times.1), event_attributes, dropped.1)];
                span.events.dropped_count = dropped.2;
                let mut encoder = TraceEncoder::default();
                let mut ours = Vec::new();
                encoder.encode(std::slice::from_ref(&span), &mut ours);
                // Bytes only: NaN doubles are not equal to themselves once decoded.
                assert_same_bytes(&ours, &library(&[span], None));
            }
        }
    }
}
