//! JSON into Rust types as `serde_json` reads it, with two differences that
//! make the upload smaller: a struct is read from an object only, never from
//! an array, and `serde_json`'s parser is compiled once, not once per type.
//!
//! Why, 1: serde's derive gives every struct two readers, `visit_map` (`{"a":
//! 1}`) and `visit_seq` (`[1]`), and `serde_json` links both for every
//! struct it reads. Nothing Hearth reads sends a struct as an array (the
//! platforms send objects, and `serde_json` writes structs as objects), so
//! the second reader is dead weight (~95 kB of WASM when it was measured,
//! `docs/SIZE_REPORT.md`). Here `deserialize_struct` asks for a map, and a
//! struct variant of an enum is read from an object too.
//!
//! Why, 2: serde's traits are generic over the visitor, so `serde_json`'s
//! `deserialize_map`, `next_key_seed`, `deserialize_option`, … are compiled
//! again for every type read, and inlined into each derive's `visit_map`
//! (with ~140 types, ~300 kB of WASM: `docs/notes/slim.md`). This crate puts
//! one non-generic seam between the two: every `serde_json` method is called
//! with one visitor type ([`Thunk`]) that hands what it got (a string, a map,
//! a number…) through a `dyn` [`Sink`] to the type's own visitor. What is left
//! per type is the derive's code and a small shim per method it uses.
//!
//! Everything else reads as with `serde_json`: the same parser does the
//! reading and calls the same visitor methods in the same order, and errors
//! are `serde_json::Error`s with the same text (an error crossing the seam is
//! carried by its message, which keeps the position: its category may read
//! "data" where `serde_json` says "syntax"). Use [`from_slice`], [`from_str`]
//! and [`from_value`] everywhere in the Worker's code: a type read both
//! through here and through `serde_json` directly is linked twice.

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, Expected, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;

pub use serde_json::{Error, Result};

#[cfg(test)]
mod tests;

/// `serde_json::from_slice`, structs from objects only.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    from_slice_seed(bytes, PhantomData)
}

/// `serde_json::from_str`, structs from objects only.
pub fn from_str<'a, T: Deserialize<'a>>(s: &'a str) -> Result<T> {
    from_slice_seed(s.as_bytes(), PhantomData)
}

/// `serde_json::from_value`, structs from objects only. The value is written
/// out and read again (one reader for everything; a value is small where
/// Hearth does this).
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    from_slice(&serde_json::to_vec(&value)?)
}

/// What [`from_slice`] does, for a seed (a reader that carries state).
pub fn from_slice_seed<'a, S: DeserializeSeed<'a>>(bytes: &'a [u8], seed: S) -> Result<S::Value> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let mut first = Some(&mut json);
    let value = seed.deserialize(De(&mut first))?;
    end(json)?;
    Ok(value)
}

/// Only whitespace after the value (`serde_json`'s own check).
#[inline(never)]
fn end(mut json: serde_json::Deserializer<serde_json::de::SliceRead<'_>>) -> Result<()> {
    json.end()
}

// ---------------------------------------------------------------------------
// The seam. Everything below `De` is compiled once per `serde_json` type
// (its deserializer and its map key reader), everything above once per type
// read, and kept small.

/// Which `deserialize_*` method a type asked for.
#[derive(Clone, Copy)]
enum Method {
    Any,
    Bool,
    I8,
    I16,
    I32,
    I64,
    I128,
    U8,
    U16,
    U32,
    U64,
    U128,
    F32,
    F64,
    Char,
    Str,
    String,
    Bytes,
    ByteBuf,
    Option,
    Unit,
    UnitStruct(&'static str),
    NewtypeStruct(&'static str),
    Seq,
    Tuple(usize),
    TupleStruct(&'static str, usize),
    Map,
    Enum(&'static str, &'static [&'static str]),
    Identifier,
    IgnoredAny,
}

/// What a deserializer handed its visitor: one case per `visit_*` method.
enum Got<'a, 'de> {
    Bool(bool),
    I64(i64),
    I128(i128),
    U64(u64),
    U128(u128),
    F64(f64),
    Str(&'a str),
    BorrowedStr(&'de str),
    String(String),
    Bytes(&'a [u8]),
    BorrowedBytes(&'de [u8]),
    ByteBuf(Vec<u8>),
    None,
    Some(De<'a, 'de>),
    Unit,
    Newtype(De<'a, 'de>),
    Seq(Seq<'a, 'de>),
    Map(Map<'a, 'de>),
    Enum(Enum<'a, 'de>),
}

/// The type's visitor, behind `dyn`: takes what the deserializer got.
trait Sink<'de> {
    fn got(&mut self, got: Got<'_, 'de>) -> Result<()>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result;
}

/// A deserializer behind `dyn`: runs one method, once.
trait ErasedDe<'de> {
    fn run(&mut self, method: Method, sink: &mut dyn Sink<'de>) -> Result<()>;
}

/// A seed behind `dyn`.
trait ErasedSeed<'de> {
    fn seed(&mut self, de: De<'_, 'de>) -> Result<()>;
}

trait ErasedMap<'de> {
    fn next_key(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<bool>;
    fn next_value(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()>;
    fn size_hint(&self) -> Option<usize>;
}

trait ErasedSeq<'de> {
    fn next_element(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<bool>;
    fn size_hint(&self) -> Option<usize>;
}

/// An enum's access: first the variant's name, then its content.
trait ErasedEnum<'de> {
    fn variant(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()>;
    fn unit(&mut self) -> Result<()>;
    fn newtype(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()>;
    fn tuple(&mut self, len: usize, sink: &mut dyn Sink<'de>) -> Result<()>;
    fn fields(&mut self, fields: &'static [&'static str], sink: &mut dyn Sink<'de>) -> Result<()>;
}

/// An error of another type (always a `serde_json::Error` here) as a
/// `serde_json::Error`: its message carries its position (`serde_json`
/// reads " at line L column C" back).
fn to_json<E: fmt::Display>(e: E) -> Error {
    de::Error::custom(e)
}

fn from_json<E: de::Error>(e: Error) -> E {
    E::custom(e)
}

#[cold]
fn used_up() -> Error {
    de::Error::custom("hearth_json: a reader was used twice")
}

// --- below the seam: serde_json's types, one visitor type --------------------

/// The one visitor `serde_json` is called with.
struct Thunk<'s, 'de>(&'s mut dyn Sink<'de>);

impl<'de> Thunk<'_, 'de> {
    fn give<E: de::Error>(self, got: Got<'_, 'de>) -> std::result::Result<(), E> {
        self.0.got(got).map_err(from_json)
    }
}

impl<'de> Visitor<'de> for Thunk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
        self.give(Got::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
        self.give(Got::I64(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> std::result::Result<(), E> {
        self.give(Got::I128(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
        self.give(Got::U64(v))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> std::result::Result<(), E> {
        self.give(Got::U128(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        self.give(Got::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.give(Got::Str(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> std::result::Result<(), E> {
        self.give(Got::BorrowedStr(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<(), E> {
        self.give(Got::String(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> std::result::Result<(), E> {
        self.give(Got::Bytes(v))
    }

    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> std::result::Result<(), E> {
        self.give(Got::BorrowedBytes(v))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> std::result::Result<(), E> {
        self.give(Got::ByteBuf(v))
    }

    fn visit_none<E: de::Error>(self) -> std::result::Result<(), E> {
        self.give(Got::None)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.give(Got::Unit)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        let mut d = Some(d);
        self.give(Got::Some(De(&mut d)))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        let mut d = Some(d);
        self.give(Got::Newtype(De(&mut d)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        self.give(Got::Seq(Seq(&mut seq)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        self.give(Got::Map(Map(&mut map)))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> std::result::Result<(), A::Error> {
        let mut access = EnumState::<'de, A> { access: Some(data), variant: None };
        self.give(Got::Enum(Enum(&mut access)))
    }
}

/// The one seed `serde_json` is handed.
struct SeedThunk<'s, 'de>(&'s mut dyn ErasedSeed<'de>);

impl<'de> DeserializeSeed<'de> for SeedThunk<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        let mut d = Some(d);
        self.0.seed(De(&mut d)).map_err(from_json)
    }
}

impl<'de, D: Deserializer<'de>> ErasedDe<'de> for Option<D> {
    fn run(&mut self, method: Method, sink: &mut dyn Sink<'de>) -> Result<()> {
        let d = self.take().ok_or_else(used_up)?;
        let v = Thunk(sink);
        match method {
            Method::Any => d.deserialize_any(v),
            Method::Bool => d.deserialize_bool(v),
            Method::I8 => d.deserialize_i8(v),
            Method::I16 => d.deserialize_i16(v),
            Method::I32 => d.deserialize_i32(v),
            Method::I64 => d.deserialize_i64(v),
            Method::I128 => d.deserialize_i128(v),
            Method::U8 => d.deserialize_u8(v),
            Method::U16 => d.deserialize_u16(v),
            Method::U32 => d.deserialize_u32(v),
            Method::U64 => d.deserialize_u64(v),
            Method::U128 => d.deserialize_u128(v),
            Method::F32 => d.deserialize_f32(v),
            Method::F64 => d.deserialize_f64(v),
            Method::Char => d.deserialize_char(v),
            Method::Str => d.deserialize_str(v),
            Method::String => d.deserialize_string(v),
            Method::Bytes => d.deserialize_bytes(v),
            Method::ByteBuf => d.deserialize_byte_buf(v),
            Method::Option => d.deserialize_option(v),
            Method::Unit => d.deserialize_unit(v),
            Method::UnitStruct(name) => d.deserialize_unit_struct(name, v),
            Method::NewtypeStruct(name) => d.deserialize_newtype_struct(name, v),
            Method::Seq => d.deserialize_seq(v),
            Method::Tuple(len) => d.deserialize_tuple(len, v),
            Method::TupleStruct(name, len) => d.deserialize_tuple_struct(name, len, v),
            Method::Map => d.deserialize_map(v),
            Method::Enum(name, variants) => d.deserialize_enum(name, variants, v),
            Method::Identifier => d.deserialize_identifier(v),
            Method::IgnoredAny => d.deserialize_ignored_any(v),
        }
        .map_err(to_json)
    }
}

impl<'de, A: MapAccess<'de>> ErasedMap<'de> for A {
    fn next_key(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<bool> {
        self.next_key_seed(SeedThunk(seed)).map(|k| k.is_some()).map_err(to_json)
    }

    fn next_value(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()> {
        self.next_value_seed(SeedThunk(seed)).map_err(to_json)
    }

    fn size_hint(&self) -> Option<usize> {
        MapAccess::size_hint(self)
    }
}

impl<'de, A: SeqAccess<'de>> ErasedSeq<'de> for A {
    fn next_element(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<bool> {
        self.next_element_seed(SeedThunk(seed)).map(|e| e.is_some()).map_err(to_json)
    }

    fn size_hint(&self) -> Option<usize> {
        SeqAccess::size_hint(self)
    }
}

/// An `EnumAccess`, and once its variant is read, that variant's access.
struct EnumState<'de, A: EnumAccess<'de>> {
    access: Option<A>,
    variant: Option<A::Variant>,
}

impl<'de, A: EnumAccess<'de>> ErasedEnum<'de> for EnumState<'de, A> {
    fn variant(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()> {
        let access = self.access.take().ok_or_else(used_up)?;
        let ((), variant) = access.variant_seed(SeedThunk(seed)).map_err(to_json)?;
        self.variant = Some(variant);
        Ok(())
    }

    fn unit(&mut self) -> Result<()> {
        self.variant.take().ok_or_else(used_up)?.unit_variant().map_err(to_json)
    }

    fn newtype(&mut self, seed: &mut dyn ErasedSeed<'de>) -> Result<()> {
        let variant = self.variant.take().ok_or_else(used_up)?;
        variant.newtype_variant_seed(SeedThunk(seed)).map_err(to_json)
    }

    fn tuple(&mut self, len: usize, sink: &mut dyn Sink<'de>) -> Result<()> {
        let variant = self.variant.take().ok_or_else(used_up)?;
        variant.tuple_variant(len, Thunk(sink)).map_err(to_json)
    }

    fn fields(&mut self, fields: &'static [&'static str], sink: &mut dyn Sink<'de>) -> Result<()> {
        let variant = self.variant.take().ok_or_else(used_up)?;
        variant.struct_variant(fields, Thunk(sink)).map_err(to_json)
    }
}

// --- above the seam: the types read, small shims -----------------------------

/// The deserializer every type reads from.
struct De<'a, 'de>(&'a mut (dyn ErasedDe<'de> + 'a));

/// The map access every struct visitor reads from.
struct Map<'a, 'de>(&'a mut (dyn ErasedMap<'de> + 'a));

struct Seq<'a, 'de>(&'a mut (dyn ErasedSeq<'de> + 'a));

struct Enum<'a, 'de>(&'a mut (dyn ErasedEnum<'de> + 'a));

/// The cases a method can get from `serde_json`'s deserializer, as bits. A
/// case outside them is answered as serde's default visitor method answers
/// it ([`unexpected`]), without linking the type's own method. The one place
/// `serde_json` hands another case is its map key reader, which gives a
/// string to any method it has no reader for (a struct or a sequence as a
/// key: an "invalid type: string" error either way, unless a hand-written
/// visitor accepted strings there; none does in Hearth).
const BOOL: u16 = 1;
const NUM: u16 = 1 << 1;
const STR: u16 = 1 << 2;
const BYTES: u16 = 1 << 3;
const OPTION: u16 = 1 << 4;
const UNIT: u16 = 1 << 5;
const NEWTYPE: u16 = 1 << 6;
const SEQ: u16 = 1 << 7;
const MAP: u16 = 1 << 8;
const ENUM: u16 = 1 << 9;
const ANY: u16 = u16::MAX;

/// The type's visitor, waiting for what the method gets.
struct Slot<'de, V: Visitor<'de>, const CASES: u16>(Option<V>, Option<V::Value>);

impl<'de, V: Visitor<'de>, const CASES: u16> Sink<'de> for Slot<'de, V, CASES> {
    fn got(&mut self, got: Got<'_, 'de>) -> Result<()> {
        let v = self.0.take().ok_or_else(used_up)?;
        self.1 = Some(visit::<V, CASES>(v, got)?);
        Ok(())
    }

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.0 {
            Some(v) => v.expecting(f),
            None => f.write_str("a value"),
        }
    }
}

/// Hands `got` to the visitor's method for it.
#[inline(always)]
fn visit<'de, V: Visitor<'de>, const CASES: u16>(v: V, got: Got<'_, 'de>) -> Result<V::Value> {
    let has = |case: u16| CASES & case != 0;
    match got {
        Got::Bool(b) if has(BOOL) => v.visit_bool(b),
        Got::I64(n) if has(NUM) => v.visit_i64(n),
        Got::I128(n) if has(NUM) => v.visit_i128(n),
        Got::U64(n) if has(NUM) => v.visit_u64(n),
        Got::U128(n) if has(NUM) => v.visit_u128(n),
        Got::F64(n) if has(NUM) => v.visit_f64(n),
        Got::Str(s) if has(STR) => v.visit_str(s),
        Got::BorrowedStr(s) if has(STR) => v.visit_borrowed_str(s),
        Got::String(s) if has(STR) => v.visit_string(s),
        Got::Bytes(b) if has(BYTES) => v.visit_bytes(b),
        Got::BorrowedBytes(b) if has(BYTES) => v.visit_borrowed_bytes(b),
        Got::ByteBuf(b) if has(BYTES) => v.visit_byte_buf(b),
        Got::None if has(OPTION) => v.visit_none(),
        Got::Some(d) if has(OPTION) => v.visit_some(d),
        Got::Unit if has(UNIT) => v.visit_unit(),
        Got::Newtype(d) if has(NEWTYPE) => v.visit_newtype_struct(d),
        Got::Seq(s) if has(SEQ) => v.visit_seq(s),
        Got::Map(m) if has(MAP) => v.visit_map(m),
        Got::Enum(e) if has(ENUM) => v.visit_enum(e),
        other => Err(unexpected(other, &v)),
    }
}

/// What serde's default `visit_*` method answers (an invalid type).
#[inline(never)]
fn unexpected(got: Got<'_, '_>, exp: &dyn Expected) -> Error {
    let other;
    let unexp = match &got {
        Got::Bool(b) => Unexpected::Bool(*b),
        Got::I64(n) => Unexpected::Signed(*n),
        Got::U64(n) => Unexpected::Unsigned(*n),
        Got::F64(n) => Unexpected::Float(*n),
        Got::I128(n) => {
            other = format!("integer `{n}` as i128");
            Unexpected::Other(&other)
        }
        Got::U128(n) => {
            other = format!("integer `{n}` as u128");
            Unexpected::Other(&other)
        }
        Got::Str(s) => Unexpected::Str(s),
        Got::BorrowedStr(s) => Unexpected::Str(s),
        Got::String(s) => Unexpected::Str(s),
        Got::Bytes(b) => Unexpected::Bytes(b),
        Got::BorrowedBytes(b) => Unexpected::Bytes(b),
        Got::ByteBuf(b) => Unexpected::Bytes(b),
        Got::None | Got::Some(_) => Unexpected::Option,
        Got::Unit => Unexpected::Unit,
        Got::Newtype(_) => Unexpected::NewtypeStruct,
        Got::Seq(_) => Unexpected::Seq,
        Got::Map(_) => Unexpected::Map,
        Got::Enum(_) => Unexpected::Enum,
    };
    de::Error::invalid_type(unexp, exp)
}

impl<'de> De<'_, 'de> {
    fn call<V: Visitor<'de>, const CASES: u16>(self, method: Method, v: V) -> Result<V::Value> {
        let mut slot = Slot::<'de, V, CASES>(Some(v), None);
        self.0.run(method, &mut slot)?;
        slot.1.ok_or_else(used_up)
    }
}

macro_rules! methods {
    ($($name:ident => $method:ident, $cases:expr;)*) => {$(
        fn $name<V: Visitor<'de>>(self, v: V) -> Result<V::Value> {
            self.call::<V, { $cases }>(Method::$method, v)
        }
    )*};
}

impl<'de> Deserializer<'de> for De<'_, 'de> {
    type Error = Error;

    methods! {
        deserialize_any => Any, ANY;
        deserialize_bool => Bool, BOOL;
        deserialize_i8 => I8, NUM;
        deserialize_i16 => I16, NUM;
        deserialize_i32 => I32, NUM;
        deserialize_i64 => I64, NUM;
        deserialize_i128 => I128, NUM;
        deserialize_u8 => U8, NUM;
        deserialize_u16 => U16, NUM;
        deserialize_u32 => U32, NUM;
        deserialize_u64 => U64, NUM;
        deserialize_u128 => U128, NUM;
        deserialize_f32 => F32, NUM;
        deserialize_f64 => F64, NUM;
        deserialize_char => Char, STR;
        deserialize_str => Str, STR;
        deserialize_string => String, STR;
        deserialize_bytes => Bytes, BYTES | SEQ;
        deserialize_byte_buf => ByteBuf, BYTES | SEQ;
        deserialize_option => Option, OPTION;
        deserialize_unit => Unit, UNIT;
        deserialize_seq => Seq, SEQ;
        deserialize_map => Map, MAP;
        deserialize_identifier => Identifier, STR;
        deserialize_ignored_any => IgnoredAny, ANY;
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> Result<V::Value> {
        self.call::<V, UNIT>(Method::UnitStruct(name), v)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, v: V) -> Result<V::Value> {
        self.call::<V, NEWTYPE>(Method::NewtypeStruct(name), v)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value> {
        self.call::<V, SEQ>(Method::Tuple(len), v)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(self, name: &'static str, len: usize, v: V) -> Result<V::Value> {
        self.call::<V, SEQ>(Method::TupleStruct(name, len), v)
    }

    /// The point of (1): a struct is a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        self.call::<V, MAP>(Method::Map, v)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value> {
        self.call::<V, ENUM>(Method::Enum(name, variants), v)
    }

    fn is_human_readable(&self) -> bool {
        true
    }
}

/// A seed waiting for its deserializer.
struct SeedSlot<'de, S: DeserializeSeed<'de>>(Option<S>, Option<S::Value>);

impl<'de, S: DeserializeSeed<'de>> ErasedSeed<'de> for SeedSlot<'de, S> {
    fn seed(&mut self, de: De<'_, 'de>) -> Result<()> {
        let seed = self.0.take().ok_or_else(used_up)?;
        self.1 = Some(seed.deserialize(de)?);
        Ok(())
    }
}

impl<'de> MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let mut slot = SeedSlot::<'de, _>(Some(seed), None);
        self.0.next_key(&mut slot)?;
        Ok(slot.1)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value> {
        let mut slot = SeedSlot::<'de, _>(Some(seed), None);
        self.0.next_value(&mut slot)?;
        slot.1.ok_or_else(used_up)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de> SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let mut slot = SeedSlot::<'de, _>(Some(seed), None);
        self.0.next_element(&mut slot)?;
        Ok(slot.1)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'a, 'de> EnumAccess<'de> for Enum<'a, 'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self)> {
        let mut slot = SeedSlot::<'de, _>(Some(seed), None);
        self.0.variant(&mut slot)?;
        Ok((slot.1.ok_or_else(used_up)?, self))
    }
}

impl<'de> VariantAccess<'de> for Enum<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<()> {
        self.0.unit()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        let mut slot = SeedSlot::<'de, _>(Some(seed), None);
        self.0.newtype(&mut slot)?;
        slot.1.ok_or_else(used_up)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, v: V) -> Result<V::Value> {
        let mut slot = Slot::<'de, V, SEQ>(Some(v), None);
        self.0.tuple(len, &mut slot)?;
        slot.1.ok_or_else(used_up)
    }

    /// A struct variant is read from an object only, as a struct is.
    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], v: V) -> Result<V::Value> {
        let mut slot = Slot::<'de, V, MAP>(Some(v), None);
        self.0.fields(fields, &mut slot)?;
        slot.1.ok_or_else(used_up)
    }
}
