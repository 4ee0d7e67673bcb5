//! The serializer of object keys: strings, and the scalars serde_json writes as quoted
//! strings; anything else is [`SerializeError::KeyMustBeAString`].

use core::fmt;

use serde::ser::{self, Impossible, Serialize};

use super::error::SerializeError;
use super::numbers::{put_f32, put_f64, put_i128, put_signed, put_u128, put_unsigned};
use super::sink::Sink;
use super::strings::{put_display, put_str};

/// Serializer for object keys: strings, and scalars written as quoted strings (as `serde_json`).
pub(super) struct KeySer<'a, S: ?Sized> {
    pub(super) sink: &'a mut S,
}

impl<S: Sink + ?Sized> KeySer<'_, S> {
    #[inline]
    fn quoted_float(
        self,
        put: impl FnOnce(&mut S) -> Result<(), SerializeError>,
    ) -> Result<(), SerializeError> {
        self.sink.put(b"\"");
        put(self.sink)?;
        self.sink.put(b"\"");
        Ok(())
    }
}

impl<S: Sink + ?Sized> ser::Serializer for KeySer<'_, S> {
    type Ok = ();
    type Error = SerializeError;

    type SerializeSeq = Impossible<(), SerializeError>;
    type SerializeTuple = Impossible<(), SerializeError>;
    type SerializeTupleStruct = Impossible<(), SerializeError>;
    type SerializeTupleVariant = Impossible<(), SerializeError>;
    type SerializeMap = Impossible<(), SerializeError>;
    type SerializeStruct = Impossible<(), SerializeError>;
    type SerializeStructVariant = Impossible<(), SerializeError>;

    #[inline]
    fn serialize_bool(self, v: bool) -> Result<(), SerializeError> {
        self.sink.put(if v { b"\"true\"" } else { b"\"false\"" });
        Ok(())
    }

    #[inline]
    fn serialize_i8(self, v: i8) -> Result<(), SerializeError> {
        put_signed(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_i16(self, v: i16) -> Result<(), SerializeError> {
        put_signed(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_i32(self, v: i32) -> Result<(), SerializeError> {
        put_signed(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_i64(self, v: i64) -> Result<(), SerializeError> {
        put_signed(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_i128(self, v: i128) -> Result<(), SerializeError> {
        put_i128(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_u8(self, v: u8) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_u16(self, v: u16) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_u32(self, v: u32) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_u64(self, v: u64) -> Result<(), SerializeError> {
        put_unsigned(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_u128(self, v: u128) -> Result<(), SerializeError> {
        put_u128(self.sink, v, true);
        Ok(())
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<(), SerializeError> {
        self.quoted_float(|sink| put_f32(sink, v))
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<(), SerializeError> {
        self.quoted_float(|sink| put_f64(sink, v))
    }

    #[inline]
    fn serialize_char(self, v: char) -> Result<(), SerializeError> {
        put_str(self.sink, v.encode_utf8(&mut [0u8; 4]));
        Ok(())
    }

    #[inline]
    fn serialize_str(self, v: &str) -> Result<(), SerializeError> {
        put_str(self.sink, v);
        Ok(())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<(), SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_none(self) -> Result<(), SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    #[inline]
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), SerializeError> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), SerializeError> {
        Err(SerializeError::KeyMustBeAString)
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
        _name: &'static str,
        value: &T,
    ) -> Result<(), SerializeError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _variant_index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, SerializeError> {
        Err(SerializeError::KeyMustBeAString)
    }

    fn collect_str<T: fmt::Display + ?Sized>(self, value: &T) -> Result<(), SerializeError> {
        put_display(self.sink, value)
    }
}
