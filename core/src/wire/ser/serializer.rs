//! The value serializer: `serde`'s data model written as compact JSON into a [`Sink`], byte
//! for byte what serde_json writes, and the entry points that drive it.

use core::fmt;

use serde::ser::{self, Serialize};

use super::error::{SerializeError, ToSliceError};
use super::key::KeySer;
use super::numbers::{put_f32, put_f64, put_i128, put_signed, put_u128, put_unsigned};
use super::sink::{CountingSink, Sink, SliceSink};
use super::strings::{put_display, put_str};

/// The newtype-struct name that marks already-encoded JSON text.
///
/// When the serializer meets `serialize_newtype_struct(RAW_JSON_TOKEN, value)` and `value`
/// serializes as a string or as bytes (`serialize_bytes`; directly, or through further newtype
/// structs or `Some`), those bytes are written verbatim: no quotes, no escaping. The type that
/// does this is responsible for holding valid JSON; the serializer does not check it. Bytes
/// spare the caller a UTF-8 check (`core::str::from_utf8`) of text it built itself. Anything
/// else inside the marker is serialized normally. Map keys ignore the marker (a key is always a
/// quoted, escaped string). Other serializers do not know the marker: to them the value is a
/// newtype struct around a string or bytes.
///
/// ```
/// use rpcwire::wire::ser::{to_slice, RAW_JSON_TOKEN};
///
/// struct Raw<'a>(&'a str);
/// impl serde::Serialize for Raw<'_> {
///     fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
///         s.serialize_newtype_struct(RAW_JSON_TOKEN, self.0)
///     }
/// }
///
/// let mut buf = [0u8; 32];
/// let n = to_slice(&[Raw(r#"{"a":[1,2]}"#)], &mut buf);
/// assert_eq!(n, Ok(13));
/// assert_eq!(&buf[..13], br#"[{"a":[1,2]}]"#);
///
/// // The same with bytes, for text built in a buffer (no UTF-8 check needed).
/// struct RawBytes<'a>(&'a [u8]);
/// struct Bytes<'a>(&'a [u8]);
/// impl serde::Serialize for Bytes<'_> {
///     fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
///         s.serialize_bytes(self.0)
///     }
/// }
/// impl serde::Serialize for RawBytes<'_> {
///     fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
///         s.serialize_newtype_struct(RAW_JSON_TOKEN, &Bytes(self.0))
///     }
/// }
/// let n = to_slice(&(1, RawBytes(b"[true]")), &mut buf);
/// assert_eq!(&buf[..n.unwrap()], b"[1,[true]]");
/// ```
pub const RAW_JSON_TOKEN: &str = "$rpcwire::RawJson";

/// Serialize `value` as compact JSON into `sink`.
///
/// On error, what was already put into `sink` is a truncated prefix and should be discarded.
#[inline]
pub fn to_sink<T, S>(value: &T, sink: &mut S) -> Result<(), SerializeError>
where
    T: Serialize + ?Sized,
    S: Sink + ?Sized,
{
    value.serialize(Ser { sink, raw: false })
}

/// Serialize into a slice. `Ok(n)` = bytes written at the start of `buf`;
/// `Err(ToSliceError::BufferTooSmall { required })` when it does not fit.
///
/// A serialization error takes precedence over the size.
#[inline]
pub fn to_slice<T: Serialize + ?Sized>(value: &T, buf: &mut [u8]) -> Result<usize, ToSliceError> {
    let mut sink = SliceSink::new(buf);
    to_sink(value, &mut sink)?;
    if sink.fits() {
        Ok(sink.len())
    } else {
        Err(ToSliceError::BufferTooSmall {
            required: sink.len(),
        })
    }
}

/// Exact encoded length.
#[inline]
pub fn encoded_len<T: Serialize + ?Sized>(value: &T) -> Result<usize, SerializeError> {
    let mut sink = CountingSink::default();
    to_sink(value, &mut sink)?;
    Ok(sink.len)
}

/// The value serializer. `raw` is set inside a [`RAW_JSON_TOKEN`] newtype: a string is then
/// written verbatim.
struct Ser<'a, S: ?Sized> {
    sink: &'a mut S,
    raw: bool,
}

impl<'a, S: Sink + ?Sized> Ser<'a, S> {
    /// Writes `{"variant":` — the opening of every externally tagged variant with content.
    #[inline]
    fn open_variant(&mut self, variant: &str) {
        self.sink.put(b"{");
        put_str(self.sink, variant);
        self.sink.put(b":");
    }

    #[inline]
    fn open_compound(
        self,
        open: &'static [u8],
        close: &'static [u8],
        len: Option<usize>,
    ) -> Compound<'a, S> {
        self.sink.put(open);
        let state = if len == Some(0) {
            self.sink.put(close);
            State::Empty
        } else {
            State::First
        };
        Compound {
            sink: self.sink,
            state,
        }
    }
}

impl<'a, S: Sink + ?Sized> ser::Serializer for Ser<'a, S> {
    type Ok = ();
    type Error = SerializeError;

    type SerializeSeq = Compound<'a, S>;
    type SerializeTuple = Compound<'a, S>;
    type SerializeTupleStruct = Compound<'a, S>;
    type SerializeTupleVariant = Compound<'a, S>;
    type SerializeMap = Compound<'a, S>;
    type SerializeStruct = Compound<'a, S>;
    type SerializeStructVariant = Compound<'a, S>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), SerializeError> {
        self.sink.put(if v { b"true" } else { b"false" });
        Ok(())
    }

    #[inline]
    fn serialize_i8(self, v: i8) -> Result<(), SerializeError> {
        put_signed(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_i16(self, v: i16) -> Result<(), SerializeError> {
        put_signed(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_i32(self, v: i32) -> Result<(), SerializeError> {
        put_signed(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), SerializeError> {
        put_signed(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_i128(self, v: i128) -> Result<(), SerializeError> {
        put_i128(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_u8(self, v: u8) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_u16(self, v: u16) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_u128(self, v: u128) -> Result<(), SerializeError> {
        put_u128(self.sink, v, false);
        Ok(())
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<(), SerializeError> {
        put_f32(self.sink, v)
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), SerializeError> {
        put_f64(self.sink, v)
    }

    #[inline]
    fn serialize_char(self, v: char) -> Result<(), SerializeError> {
        put_str(self.sink, v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), SerializeError> {
        if self.raw {
            self.sink.put(v.as_bytes());
        } else {
            put_str(self.sink, v);
        }
        Ok(())
    }

    /// An array of numbers, as `serde_json` does; verbatim inside [`RAW_JSON_TOKEN`].
    fn serialize_bytes(self, v: &[u8]) -> Result<(), SerializeError> {
        if self.raw {
            self.sink.put(v);
            return Ok(());
        }
        self.sink.put(b"[");
        for (i, &byte) in v.iter().enumerate() {
            if i != 0 {
                self.sink.put(b",");
            }
            put_unsigned(self.sink, byte, false);
        }
        self.sink.put(b"]");
        Ok(())
    }

    #[inline]
    fn serialize_none(self) -> Result<(), SerializeError> {
        self.serialize_unit()
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), SerializeError> {
        value.serialize(self)
    }

    #[inline]
    fn serialize_unit(self) -> Result<(), SerializeError> {
        self.sink.put(b"null");
        Ok(())
    }

    #[inline]
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), SerializeError> {
        self.serialize_unit()
    }

    #[inline]
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
    ) -> Result<(), SerializeError> {
        put_str(self.sink, variant);
        Ok(())
    }

    #[inline]
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        let raw = self.raw || name == RAW_JSON_TOKEN;
        value.serialize(Ser {
            sink: self.sink,
            raw,
        })
    }

    #[inline]
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        self.open_variant(variant);
        value.serialize(Ser {
            sink: &mut *self.sink,
            raw: false,
        })?;
        self.sink.put(b"}");
        Ok(())
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Compound<'a, S>, SerializeError> {
        Ok(self.open_compound(b"[", b"]", len))
    }

    #[inline]
    fn serialize_tuple(self, len: usize) -> Result<Compound<'a, S>, SerializeError> {
        self.serialize_seq(Some(len))
    }

    #[inline]
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'a, S>, SerializeError> {
        self.serialize_seq(Some(len))
    }

    #[inline]
    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, S>, SerializeError> {
        self.open_variant(variant);
        self.serialize_seq(Some(len))
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Compound<'a, S>, SerializeError> {
        Ok(self.open_compound(b"{", b"}", len))
    }

    #[inline]
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Compound<'a, S>, SerializeError> {
        if name == SERDE_JSON_RAW_TOKEN {
            return Ok(Compound {
                sink: self.sink,
                state: State::Raw,
            });
        }
        self.serialize_map(Some(len))
    }

    #[inline]
    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'a, S>, SerializeError> {
        self.open_variant(variant);
        self.serialize_map(Some(len))
    }

    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> Result<(), SerializeError> {
        put_display(self.sink, value)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Opened and already closed (length announced as 0).
    Empty,
    /// Nothing written yet.
    First,
    /// At least one element written.
    Rest,
    /// Inside `serde_json`'s `RawValue` (its struct token): the one field is raw JSON text.
    Raw,
}

/// The struct name `serde_json::value::RawValue` serializes under: its one field is JSON text,
/// written verbatim, so a handler's `Box<RawValue>` goes out unchanged.
const SERDE_JSON_RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// Serializer for arrays, objects and the variants that wrap them.
struct Compound<'a, S: ?Sized> {
    sink: &'a mut S,
    state: State,
}

impl<S: Sink + ?Sized> Compound<'_, S> {
    /// The separator before an element or key. Mirrors `serde_json`, even for a lying length.
    #[inline]
    fn separate(&mut self) {
        if self.state != State::First {
            self.sink.put(b",");
        }
        self.state = State::Rest;
    }

    #[inline]
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerializeError> {
        self.separate();
        value.serialize(Ser {
            sink: &mut *self.sink,
            raw: false,
        })
    }

    #[inline]
    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        self.separate();
        put_str(self.sink, key);
        self.sink.put(b":");
        value.serialize(Ser {
            sink: &mut *self.sink,
            raw: false,
        })
    }

    /// Closes the array or object, then the variant wrapper if there is one.
    #[inline]
    fn close(self, close: &'static [u8], variant: bool) {
        if !matches!(self.state, State::Empty | State::Raw) {
            self.sink.put(close);
        }
        if variant {
            self.sink.put(b"}");
        }
    }
}

impl<S: Sink + ?Sized> ser::SerializeSeq for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), SerializeError> {
        self.element(value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"]", false);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeTuple for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_element<T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), SerializeError> {
        self.element(value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"]", false);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeTupleStruct for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerializeError> {
        self.element(value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"]", false);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeTupleVariant for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerializeError> {
        self.element(value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"]", true);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeMap for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerializeError> {
        self.separate();
        key.serialize(KeySer {
            sink: &mut *self.sink,
        })
    }

    #[inline]
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerializeError> {
        self.sink.put(b":");
        value.serialize(Ser {
            sink: &mut *self.sink,
            raw: false,
        })
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"}", false);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeStruct for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        if self.state == State::Raw {
            return value.serialize(Ser {
                sink: &mut *self.sink,
                raw: true,
            });
        }
        self.field(key, value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"}", false);
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::SerializeStructVariant for Compound<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    #[inline]
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        self.field(key, value)
    }

    #[inline]
    fn end(self) -> Result<(), SerializeError> {
        self.close(b"}", true);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::wire::ser::strings::{escape_mask, put_str_contents_with, ESCAPE};
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::Value;
    use std::collections::BTreeMap;
    use std::string::String;
    use std::vec::Vec;
    use std::{format, vec};

    /// Encodes with every entry point and checks that they agree; returns the bytes.
    fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerializeError> {
        let len = encoded_len(value)?;
        let mut buf = vec![0u8; len];
        assert_eq!(to_slice(value, &mut buf), Ok(len));
        let mut sink = SliceSink::new(&mut buf);
        to_sink(value, &mut sink)?;
        assert_eq!(sink.len(), len);
        assert!(sink.fits());
        Ok(sink.written().map(<[u8]>::to_vec).unwrap_or_default())
    }

    #[test]
    fn serde_json_raw_values_go_out_verbatim() {
        let raw = serde_json::value::RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap();
        assert_eq!(encode(&raw).unwrap(), br#"{"a": [1, 2]}"#);
        let nested = (1, &raw, vec![&raw]);
        assert_eq!(
            encode(&nested).unwrap(),
            serde_json::to_vec(&nested).unwrap()
        );
    }

    fn assert_matches_serde_json<T: Serialize + ?Sized>(value: &T) {
        let expected = serde_json::to_vec(value).unwrap_or_else(|e| panic!("serde_json: {e}"));
        let ours = encode(value).unwrap_or_else(|e| panic!("rpcwire: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&expected)
        );
    }

    fn text<T: Serialize + ?Sized>(value: &T) -> String {
        let bytes = encode(value).unwrap_or_else(|e| panic!("{e}"));
        String::from_utf8(bytes).unwrap_or_else(|e| panic!("{e}"))
    }

    // --- types covering the whole serde data model -------------------------------------------

    #[derive(Serialize, Debug, Clone)]
    struct UnitStruct;

    #[derive(Serialize, Debug, Clone)]
    struct Newtype(i32);

    #[derive(Serialize, Debug, Clone)]
    struct TupleStruct(u8, String, Option<bool>);

    #[derive(Serialize, Debug, Clone)]
    enum Enum {
        Unit,
        Newtype(i64),
        Tuple(u16, char),
        Struct {
            a: Option<u32>,
            b: String,
        },
        EmptyTuple(),
        EmptyStruct {},
        #[serde(rename = "we\"ird\n")]
        Renamed,
    }

    /// Bytes through `serialize_bytes` (serde's `Vec<u8>` impl goes through `serialize_seq`).
    #[derive(Debug, Clone)]
    struct Bytes(Vec<u8>);

    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    #[derive(Serialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    enum KeyVariant {
        Alpha,
        Beta,
    }

    #[derive(Serialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
    struct KeyNewtype(String);

    #[derive(Serialize, Debug, Clone)]
    struct Everything {
        unit: (),
        unit_struct: UnitStruct,
        newtype: Newtype,
        tuple: (i8, u64, f32),
        tuple_struct: TupleStruct,
        enums: Vec<Enum>,
        option_none: Option<i32>,
        option_some: Option<Option<()>>,
        c: char,
        big: i128,
        ubig: u128,
        bytes: Bytes,
        byte_vec: Vec<u8>,
        int_keys: BTreeMap<i32, f64>,
        u128_keys: BTreeMap<u128, bool>,
        bool_keys: BTreeMap<bool, ()>,
        char_keys: BTreeMap<char, u8>,
        variant_keys: BTreeMap<KeyVariant, u8>,
        newtype_keys: BTreeMap<KeyNewtype, u8>,
        option_keys: BTreeMap<Option<i8>, u8>,
        float: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        #[serde(rename = "ключ\u{7f}\t")]
        renamed: &'static str,
        str_keys: BTreeMap<String, u8>,
    }

    /// A map with any key type, in the given order.
    struct Pairs<K, V>(Vec<(K, V)>);

    impl<K: Serialize, V: Serialize> Serialize for Pairs<K, V> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        }
    }

    fn everything() -> Everything {
        Everything {
            unit: (),
            unit_struct: UnitStruct,
            newtype: Newtype(-7),
            tuple: (i8::MIN, u64::MAX, 1.5e-7),
            tuple_struct: TupleStruct(255, String::from("x\u{0}y"), None),
            enums: vec![
                Enum::Unit,
                Enum::Newtype(i64::MIN),
                Enum::Tuple(7, '\u{1F600}'),
                Enum::Struct {
                    a: Some(3),
                    b: String::from("\\\"/"),
                },
                Enum::Struct {
                    a: None,
                    b: String::new(),
                },
                Enum::EmptyTuple(),
                Enum::EmptyStruct {},
                Enum::Renamed,
            ],
            option_none: None,
            option_some: Some(Some(())),
            c: '\u{8}',
            big: i128::MIN,
            ubig: u128::MAX,
            bytes: Bytes(vec![0, 1, 9, 10, 99, 100, 255]),
            byte_vec: vec![1, 2, 3],
            int_keys: [(-1, 0.1), (0, 1e16), (i32::MAX, -0.0), (i32::MIN, 2.5e-300)]
                .into_iter()
                .collect(),
            u128_keys: [(u128::MAX, true), (0, false)].into_iter().collect(),
            bool_keys: [(true, ()), (false, ())].into_iter().collect(),
            char_keys: [('"', 1), ('\u{1f}', 2), ('é', 3)].into_iter().collect(),
            variant_keys: [(KeyVariant::Alpha, 1), (KeyVariant::Beta, 2)]
                .into_iter()
                .collect(),
            newtype_keys: [(KeyNewtype(String::from("k\r")), 1)].into_iter().collect(),
            option_keys: [(Some(-3), 1)].into_iter().collect(),
            float: 123456789.0,
            skipped: None,
            renamed: "v",
            str_keys: [(String::from("extra"), 1)].into_iter().collect(),
        }
    }

    #[test]
    fn whole_data_model_matches_serde_json() {
        assert_matches_serde_json(&everything());
    }

    #[test]
    fn enum_representation() {
        assert_eq!(text(&Enum::Unit), r#""Unit""#);
        assert_eq!(text(&Enum::Newtype(-1)), r#"{"Newtype":-1}"#);
        assert_eq!(text(&Enum::Tuple(1, 'a')), r#"{"Tuple":[1,"a"]}"#);
        assert_eq!(
            text(&Enum::Struct {
                a: None,
                b: String::from("b")
            }),
            r#"{"Struct":{"a":null,"b":"b"}}"#
        );
        assert_eq!(text(&Enum::EmptyTuple()), r#"{"EmptyTuple":[]}"#);
        assert_eq!(text(&Enum::EmptyStruct {}), r#"{"EmptyStruct":{}}"#);
        assert_eq!(text(&Enum::Renamed), r#""we\"ird\n""#);
    }

    #[test]
    fn scalars() {
        assert_eq!(text(&()), "null");
        assert_eq!(text(&UnitStruct), "null");
        assert_eq!(text(&true), "true");
        assert_eq!(text(&false), "false");
        assert_eq!(text(&0u8), "0");
        assert_eq!(text(&i64::MIN), "-9223372036854775808");
        assert_eq!(text(&u64::MAX), "18446744073709551615");
        assert_eq!(text(&i128::MIN), "-170141183460469231731687303715884105728");
        assert_eq!(text(&u128::MAX), "340282366920938463463374607431768211455");
        assert_eq!(text(&(u128::from(u64::MAX) + 1)), "18446744073709551616");
        assert_eq!(
            text(&10_000_000_000_000_000_000u128),
            "10000000000000000000"
        );
        assert_eq!(text(&1.0f64), "1.0");
        assert_eq!(text(&-0.0f64), "-0.0");
        assert_eq!(text(&1e16f64), "1e+16");
        assert_eq!(text(&1.5e-7f64), "1.5e-7");
        assert_eq!(text(&0.1f32), "0.1");
        assert_eq!(text(&'x'), r#""x""#);
        assert_eq!(text(&Some(5)), "5");
        assert_eq!(text(&None::<u8>), "null");
        assert_eq!(text(&Bytes(vec![])), "[]");
        assert_eq!(text(&Bytes(vec![0, 200])), "[0,200]");
        for n in [0u128, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 12_345_678] {
            assert_eq!(text(&n), format!("{n}"));
            assert_eq!(text(&(n as i64).wrapping_neg()), format!("{}", -(n as i64)));
        }
    }

    /// `f32`s are written exactly as serde_json writes them, over edge cases and a spread of
    /// bit patterns (every exponent, many mantissas).
    #[test]
    fn f32_text_matches_serde_json() {
        let mut values = vec![
            0.0f32,
            -0.0,
            1.0,
            0.1,
            21.5,
            1e16,
            1e-7,
            f32::MIN_POSITIVE,
            f32::MAX,
            f32::MIN,
            f32::EPSILON,
            1.0e-45, // smallest subnormal
            16_777_216.0,
            3.4028235e38,
        ];
        let mut bits = 0x1234_5678u32;
        for _ in 0..200_000 {
            // xorshift32: a spread of sign, exponent and mantissa bits.
            bits ^= bits << 13;
            bits ^= bits >> 17;
            bits ^= bits << 5;
            values.push(f32::from_bits(bits));
        }
        for v in values.into_iter().filter(|v| v.is_finite()) {
            let expected = serde_json::to_string(&v).expect("finite");
            assert_eq!(text(&v), expected, "{v:e} ({:#010x})", v.to_bits());
        }
    }

    #[test]
    fn every_ascii_and_some_unicode_escapes_like_serde_json() {
        for b in 0u8..=0x7f {
            let s = String::from(char::from(b));
            assert_matches_serde_json(&s);
            assert_matches_serde_json(&[(s.clone(), 0)].into_iter().collect::<BTreeMap<_, _>>());
        }
        assert_eq!(text("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(text("a\"b\\c/d"), r#""a\"b\\c/d""#);
        assert_eq!(text("\u{8}\u{c}\n\r\t"), r#""\b\f\n\r\t""#);
        assert_eq!(text("é€😀\u{2028}"), "\"é€😀\u{2028}\"");
        assert_matches_serde_json("clean run \"quoted\" then \u{1b}[0m tail");

        // Every byte to escape (and a few that must not be) at every position of a string long
        // enough to go through the word-at-a-time path, and through its tail.
        for special in (0u8..0x20).chain([b'"', b'\\', b'/', 0x7f, b' ', b'!', b'#', b'[', b']']) {
            for len in [1, 7, 8, 9, 15, 16, 17, 24] {
                for pos in 0..len {
                    let mut s: Vec<char> = "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
                    s[pos] = char::from(special);
                    let s: String = s.into_iter().collect();
                    assert_matches_serde_json(&s);
                    let multi = format!("é{s}€{s}😀");
                    assert_matches_serde_json(&multi);
                }
            }
        }
    }

    #[test]
    fn empty_and_lying_lengths_match_serde_json() {
        assert_matches_serde_json(&Vec::<u8>::new());
        assert_matches_serde_json(&BTreeMap::<String, u8>::new());
        assert_matches_serde_json(&());
        assert_matches_serde_json(&((),));

        // A Serialize impl whose announced lengths are wrong, or absent.
        struct Liar(Option<usize>, usize, bool);
        impl Serialize for Liar {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::{SerializeMap, SerializeSeq};
                if self.2 {
                    let mut m = s.serialize_map(self.0)?;
                    for i in 0..self.1 {
                        m.serialize_entry(&i, &i)?;
                    }
                    m.end()
                } else {
                    let mut q = s.serialize_seq(self.0)?;
                    for i in 0..self.1 {
                        q.serialize_element(&i)?;
                    }
                    q.end()
                }
            }
        }
        for len in [None, Some(0), Some(1), Some(5)] {
            for count in [0, 1, 2] {
                for map in [false, true] {
                    assert_matches_serde_json(&Liar(len, count, map));
                }
            }
        }
    }

    #[test]
    fn collect_str_escapes_display_output() {
        struct Shown;
        impl fmt::Display for Shown {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a\"b{}\n{}", 12, char::from(1u8))
            }
        }
        struct Collected;
        impl Serialize for Collected {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&Shown)
            }
        }
        assert_eq!(text(&Collected), r#""a\"b12\n\u0001""#);
        assert_matches_serde_json(&Collected);
        let map: BTreeMap<_, _> = [(1, 2)].into_iter().collect();
        struct KeyCollected<'a>(&'a BTreeMap<i32, i32>);
        impl Serialize for KeyCollected<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.values().map(|v| (Collected, v)))
            }
        }
        assert_eq!(text(&KeyCollected(&map)), r#"{"a\"b12\n\u0001":2}"#);
        assert_matches_serde_json(&KeyCollected(&map));

        struct Failing;
        impl fmt::Display for Failing {
            fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
                Err(fmt::Error)
            }
        }
        struct CollectFailing;
        impl Serialize for CollectFailing {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&Failing)
            }
        }
        assert_eq!(encoded_len(&CollectFailing), Err(SerializeError::Custom));
    }

    #[test]
    fn buffer_too_small_reports_exact_size() {
        let value = everything();
        let expected = serde_json::to_vec(&value).unwrap_or_default();
        let n = expected.len();
        assert!(n > 100);
        let mut buf = vec![0u8; n + 8];
        for size in 0..=n + 8 {
            let result = to_slice(&value, &mut buf[..size]);
            if size < n {
                assert_eq!(result, Err(ToSliceError::BufferTooSmall { required: n }));
            } else {
                assert_eq!(result, Ok(n));
                assert_eq!(&buf[..n], &expected[..]);
            }
        }
        assert_eq!(encoded_len(&value), Ok(n));

        let mut small = [0u8; 3];
        let mut sink = SliceSink::new(&mut small);
        assert!(sink.is_empty());
        assert_eq!(sink.written(), Some(&[][..]));
        sink.put(b"ab");
        assert_eq!(
            (sink.len(), sink.fits(), sink.written()),
            (2, true, Some(&b"ab"[..]))
        );
        sink.put(b"cd");
        assert_eq!((sink.len(), sink.fits(), sink.written()), (4, false, None));
        sink.put(b"");
        sink.put(b"e");
        assert_eq!((sink.len(), sink.fits(), sink.written()), (5, false, None));
        assert!(!sink.is_empty());

        let mut counter = CountingSink::default();
        counter.put(b"abc");
        counter.put(b"");
        assert_eq!(counter.len, 3);
        let mut counter = CountingSink { len: usize::MAX };
        counter.put(b"x");
        assert_eq!(counter.len, usize::MAX);
    }

    /// What another module defines: text already known to be valid JSON.
    struct Raw<'a>(&'a str);

    impl Serialize for Raw<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_newtype_struct(RAW_JSON_TOKEN, self.0)
        }
    }

    #[test]
    fn raw_token_embeds_verbatim() {
        #[derive(Serialize)]
        struct Response<'a> {
            jsonrpc: &'static str,
            result: Raw<'a>,
            id: u32,
        }
        let response = Response {
            jsonrpc: "2.0",
            result: Raw(r#"{"a": [1, "\u00e9\n"]}"#),
            id: 1,
        };
        let expected = r#"{"jsonrpc":"2.0","result":{"a": [1, "\u00e9\n"]},"id":1}"#;
        assert_eq!(text(&response), expected);
        let mut small = [0u8; 10];
        assert_eq!(
            to_slice(&response, &mut small),
            Err(ToSliceError::BufferTooSmall {
                required: expected.len()
            })
        );

        // Through a transparent wrapper, and only for strings.
        struct Wrapped<'a>(Raw<'a>);
        impl Serialize for Wrapped<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct("Wrapped", &self.0)
            }
        }
        assert_eq!(text(&Wrapped(Raw("[true]"))), "[true]");
        struct RawNumber(u8);
        impl Serialize for RawNumber {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct(RAW_JSON_TOKEN, &self.0)
            }
        }
        assert_eq!(text(&RawNumber(7)), "7");
        struct RawInner<'a>(&'a str);
        impl Serialize for RawInner<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_newtype_struct(RAW_JSON_TOKEN, &[self.0])
            }
        }
        // Elements inside the marker are ordinary values again.
        assert_eq!(text(&RawInner("a\"")), r#"["a\""]"#);
        // Keys ignore the marker.
        let keys: BTreeMap<&str, u8> = [("k\"", 1)].into_iter().collect();
        struct RawKeys<'a>(&'a BTreeMap<&'a str, u8>);
        impl Serialize for RawKeys<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().map(|(k, v)| (Raw(k), v)))
            }
        }
        assert_eq!(text(&RawKeys(&keys)), r#"{"k\"":1}"#);
    }

    #[test]
    fn errors() {
        assert_eq!(encoded_len(&f64::NAN), Err(SerializeError::NonFiniteFloat));
        assert_eq!(
            encoded_len(&[1.0, f64::INFINITY]),
            Err(SerializeError::NonFiniteFloat)
        );
        assert_eq!(
            encoded_len(&f32::NEG_INFINITY),
            Err(SerializeError::NonFiniteFloat)
        );
        let mut buf = [0u8; 64];
        assert_eq!(
            to_slice(&[f32::NAN], &mut buf),
            Err(ToSliceError::Serialize(SerializeError::NonFiniteFloat))
        );
        // A serialization error wins over a size problem.
        assert_eq!(
            to_slice(&[f32::NAN], &mut []),
            Err(ToSliceError::Serialize(SerializeError::NonFiniteFloat))
        );

        let float_keys: Vec<(f64, u8)> = vec![(1.5, 1), (1e20, 2)];
        assert_matches_serde_json(&Pairs(float_keys));
        assert_eq!(text(&Pairs(vec![(1e20f32, 0)])), r#"{"1e+20":0}"#);
        assert_eq!(
            encoded_len(&Pairs(vec![(f64::NAN, 0)])),
            Err(SerializeError::NonFiniteFloat)
        );

        for bad in [
            encoded_len(&Pairs(vec![((), 0)])),
            encoded_len(&Pairs(vec![(UnitStruct, 0)])),
            encoded_len(&Pairs(vec![(None::<u8>, 0)])),
            encoded_len(&Pairs(vec![(vec![1u8], 0)])),
            encoded_len(&Pairs(vec![((1, 2), 0)])),
            encoded_len(&Pairs(vec![(TupleStruct(1, String::new(), None), 0)])),
            encoded_len(&Pairs(vec![(Enum::Newtype(1), 0)])),
            encoded_len(&Pairs(vec![(Enum::Tuple(1, 'a'), 0)])),
            encoded_len(&Pairs(vec![(Enum::EmptyStruct {}, 0)])),
            encoded_len(&Pairs(vec![(everything(), 0)])),
            encoded_len(&Pairs(vec![(BTreeMap::<u8, u8>::new(), 0)])),
            encoded_len(&Pairs(vec![(Bytes(vec![]), 0)])),
        ] {
            assert_eq!(bad, Err(SerializeError::KeyMustBeAString));
        }
        assert!(serde_json::to_vec(&Pairs(vec![((), 0)])).is_err());

        struct Broken;
        impl Serialize for Broken {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("nope"))
            }
        }
        assert_eq!(encoded_len(&[Broken]), Err(SerializeError::Custom));

        for e in [
            SerializeError::KeyMustBeAString,
            SerializeError::NonFiniteFloat,
            SerializeError::Custom,
        ] {
            assert!(!format!("{e}").is_empty());
            let wrapped = ToSliceError::from(e);
            assert_eq!(format!("{wrapped}"), format!("{e}"));
            assert!(core::error::Error::source(&wrapped).is_some());
        }
        let small = ToSliceError::BufferTooSmall { required: 9 };
        assert_eq!(format!("{small}"), "buffer too small: 9 bytes required");
        assert!(core::error::Error::source(&small).is_none());
    }

    #[test]
    fn works_through_dyn_sink() {
        let mut counter = CountingSink::default();
        let sink: &mut dyn Sink = &mut counter;
        assert_eq!(to_sink(&[1, 2], sink), Ok(()));
        assert_eq!(counter.len, 5);
    }

    // --- property tests against serde_json ---------------------------------------------------

    fn json_string() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                4 => prop::char::range('a', 'z'),
                2 => any::<char>(),
                1 => (0u8..0x20).prop_map(char::from),
                1 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', 'é', '\u{2028}', '😀']),
            ],
            0..12,
        )
        .prop_map(String::from_iter)
    }

    /// Longer strings, mostly clean, to exercise the word-at-a-time scan.
    fn long_json_string() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                40 => prop::char::range(' ', '~'),
                4 => any::<char>(),
                1 => (0u8..0x20).prop_map(char::from),
                1 => prop::sample::select(vec!['"', '\\', '\u{7f}', 'é', '\u{2028}', '😀']),
            ],
            0..80,
        )
        .prop_map(String::from_iter)
    }

    fn finite_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<u64>().prop_map(f64::from_bits),
            any::<i32>().prop_map(f64::from),
            (any::<i32>(), -30i32..30).prop_map(|(m, e)| f64::from(m) * 10f64.powi(e)),
            prop::sample::select(vec![
                0.0,
                -0.0,
                1e15,
                1e16,
                1e17,
                1e-5,
                1e-7,
                0.1,
                f64::MAX,
                f64::MIN_POSITIVE
            ]),
        ]
        .prop_filter("finite", |f| f.is_finite())
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            finite_f64().prop_map(Value::from),
            json_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(json_string(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn enum_value() -> impl Strategy<Value = Enum> {
        prop_oneof![
            Just(Enum::Unit),
            any::<i64>().prop_map(Enum::Newtype),
            (any::<u16>(), any::<char>()).prop_map(|(a, b)| Enum::Tuple(a, b)),
            (any::<Option<u32>>(), json_string()).prop_map(|(a, b)| Enum::Struct { a, b }),
            Just(Enum::EmptyTuple()),
            Just(Enum::EmptyStruct {}),
            Just(Enum::Renamed),
        ]
    }

    proptest! {
        #[test]
        fn value_trees_match_serde_json(value in json_value()) {
            let expected = serde_json::to_vec(&value).unwrap_or_default();
            let ours = encode(&value);
            prop_assert_eq!(ours.as_deref(), Ok(&expected[..]));
        }

        #[test]
        fn word_scan_is_exact(word in prop::array::uniform8(prop_oneof![
            any::<u8>(),
            0x20u8..0x7f,
            0x80u8..=0xff,
            prop::sample::select(vec![0x1f, 0x20, b'"', b'\\', 0x21, 0x5b, 0x5d, 0x7f, 0x00, 0xa2, 0xdc]),
        ])) {
            let mask = escape_mask(&word);
            let first = word.iter().position(|&b| ESCAPE[b as usize] != 0);
            prop_assert_eq!(mask != 0, first.is_some());
            if let Some(first) = first {
                prop_assert_eq!((mask.trailing_zeros() / 8) as usize, first);
            }
        }

        /// Both forms of the string writer (bytes only, as on 32-bit targets; words, as on
        /// 64-bit hosts) write what serde_json writes.
        #[test]
        fn both_string_writers_match_serde_json(s in long_json_string()) {
            let expected = serde_json::to_vec(&s).unwrap_or_default();
            let inner = &expected[1..expected.len() - 1];
            let mut buf = vec![0u8; expected.len() + 8];
            let mut sink = SliceSink::new(&mut buf);
            put_str_contents_with::<_, false>(&mut sink, &s);
            prop_assert_eq!(sink.written(), Some(inner));
            let mut sink = SliceSink::new(&mut buf);
            put_str_contents_with::<_, true>(&mut sink, &s);
            prop_assert_eq!(sink.written(), Some(inner));
        }

        #[test]
        fn long_strings_match_serde_json(s in long_json_string(), t in long_json_string()) {
            assert_matches_serde_json(&s);
            let map: BTreeMap<&str, &str> = [(s.as_str(), t.as_str())].into_iter().collect();
            assert_matches_serde_json(&map);
            let words = s.as_bytes().chunks_exact(8);
            for word in words {
                let word: [u8; 8] = word.try_into().unwrap_or_default();
                let first = word.iter().position(|&b| ESCAPE[b as usize] != 0);
                prop_assert_eq!(first.map(|_| 0), (escape_mask(&word) != 0).then_some(0));
                if let Some(first) = first {
                    prop_assert_eq!((escape_mask(&word).trailing_zeros() / 8) as usize, first);
                }
            }
        }

        #[test]
        fn truncated_buffers_report_exact_size(value in json_value(), cut in 0usize..64) {
            let n = encoded_len(&value).unwrap_or_default();
            let size = n.saturating_sub(cut + 1);
            let mut buf = vec![0u8; size];
            prop_assert_eq!(
                to_slice(&value, &mut buf),
                Err(ToSliceError::BufferTooSmall { required: n })
            );
        }

        #[test]
        fn floats_match_serde_json(bits in any::<u64>(), bits32 in any::<u32>(), f in finite_f64()) {
            for v in [f64::from_bits(bits), f] {
                if v.is_finite() {
                    prop_assert_eq!(encode(&v), Ok(serde_json::to_vec(&v).unwrap_or_default()));
                    assert_matches_serde_json(&Pairs(vec![(v, 0)]));
                } else {
                    prop_assert_eq!(encode(&v), Err(SerializeError::NonFiniteFloat));
                }
            }
            let v = f32::from_bits(bits32);
            if v.is_finite() {
                prop_assert_eq!(encode(&v), Ok(serde_json::to_vec(&v).unwrap_or_default()));
                assert_matches_serde_json(&Pairs(vec![(v, 0)]));
            } else {
                prop_assert_eq!(encode(&v), Err(SerializeError::NonFiniteFloat));
            }
        }

        #[test]
        fn integers_and_integer_keys_match_serde_json(
            a in any::<i64>(), b in any::<u64>(), c in any::<i128>(), d in any::<u128>(),
            e in any::<i8>(), f in any::<u16>(), shift in 0u32..128,
        ) {
            let d = d >> shift;
            let c = c >> shift;
            assert_matches_serde_json(&(a, b, c, d, e, f));
            let keys: BTreeMap<i128, u128> = [(c, d), (i128::from(a), u128::from(b))].into_iter().collect();
            assert_matches_serde_json(&keys);
            let keys: BTreeMap<u128, i8> = [(d, e)].into_iter().collect();
            assert_matches_serde_json(&keys);
            let keys: BTreeMap<i8, u16> = [(e, f)].into_iter().collect();
            assert_matches_serde_json(&keys);
        }

        #[test]
        fn derived_types_match_serde_json(
            enums in prop::collection::vec(enum_value(), 0..6),
            s in json_string(),
            c in any::<char>(),
            bytes in prop::collection::vec(any::<u8>(), 0..16),
            keys in prop::collection::btree_map(any::<i32>(), finite_f64(), 0..4),
            opt in any::<Option<Option<bool>>>(),
            t in (any::<u8>(), json_string(), any::<Option<bool>>()),
        ) {
            assert_matches_serde_json(&enums);
            let mut value = everything();
            value.enums = enums;
            value.tuple_struct = TupleStruct(t.0, t.1, t.2);
            value.c = c;
            value.bytes = Bytes(bytes.clone());
            value.byte_vec = bytes;
            value.int_keys = keys;
            value.char_keys = [(c, 1)].into_iter().collect();
            value.newtype_keys = [(KeyNewtype(s.clone()), 2)].into_iter().collect();
            value.str_keys = [(s, 3)].into_iter().collect();
            assert_matches_serde_json(&value);
            assert_matches_serde_json(&opt);
        }
    }
}
