//! JSON into Rust types as `serde_json` reads it, less one thing: a struct
//! is read from an object only, never from an array.
//!
//! Why: serde's derive gives every struct two readers, `visit_map` (`{"a":
//! 1}`) and `visit_seq` (`[1]`), and `serde_json` links both for every
//! struct it reads. Nothing Hearth reads sends a struct as an array (the
//! platforms send objects, and `serde_json` writes structs as objects), so
//! the second reader is dead weight: ~100 structs, ~95 kB of WASM, 27.8
//! KiB of the gzipped upload (measured: `docs/SIZE_REPORT.md`). Reading
//! through [`from_slice`], [`from_str`] or [`from_value`] wraps the
//! deserializer so that `deserialize_struct` asks for a map; the array
//! reader is then never called, and the linker drops it.
//!
//! Every other shape reads as with `serde_json` (the wrapper forwards each
//! call; errors are `serde_json::Error`). Use these three everywhere in the
//! Worker's code: a type read both through here and through `serde_json`
//! directly is linked twice.

use serde::de::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use std::fmt;

pub use serde_json::{Error, Result};

// The derive's code names `::hearth_json`; this lets the crate's own tests use it.
extern crate self as hearth_json;

mod rest;
pub use rest::{with_rest, Split};

/// `serde_json::from_slice`, structs from objects only.
pub fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = T::deserialize(Objects(&mut de))?;
    end(&mut de)?;
    Ok(value)
}

/// Only whitespace after the value: `serde_json`'s own check, kept out of
/// line so that it is compiled once, not inlined into every type's reader.
#[inline(never)]
fn end(de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>) -> Result<()> {
    de.end()
}

/// `serde_json::from_str`, structs from objects only.
pub fn from_str<'a, T: Deserialize<'a>>(s: &'a str) -> Result<T> {
    // The slice reader: one reader type, so one copy of each struct's code.
    from_slice(s.as_bytes())
}

/// `e`'s text without serde_json's " at line L column C": what
/// [`from_value`] would have said, for a value read from its own text
/// again (where the place is in text the caller never saw).
pub fn unplaced(e: &Error) -> String {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&place) {
        Some(bare) if e.line() > 0 => bare.to_owned(),
        _ => text,
    }
}

/// `serde_json::from_value`, structs from objects only.
pub fn from_value<T: de::DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    T::deserialize(Objects(value))
}

/// A deserializer whose `deserialize_struct` reads a map. Public for a
/// reader that starts a `serde_json::Deserializer` of its own (wrap it, so
/// its types are the same instances as everywhere else).
pub struct Objects<D>(pub D);

/// The wrapper again around what a visitor or seed is handed, so that
/// nested structs read through it too.
struct Wrap<V>(V);

macro_rules! forward {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, D::Error> {
            self.0.$method(Wrap(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Objects<D> {
    type Error = D::Error;

    forward!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, len: usize, visitor: V) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    /// The point of it all: a struct is a map.
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_map(Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! visit {
    ($($method:ident: $t:ty),*) => {$(
        fn $method<E: de::Error>(self, v: $t) -> std::result::Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    visit!(
        visit_bool: bool, visit_i8: i8, visit_i16: i16, visit_i32: i32, visit_i64: i64, visit_i128: i128,
        visit_u8: u8, visit_u16: u16, visit_u32: u32, visit_u64: u64, visit_u128: u128, visit_f32: f32,
        visit_f64: f64, visit_char: char, visit_str: &str, visit_borrowed_str: &'de str, visit_string: String,
        visit_bytes: &[u8], visit_borrowed_bytes: &'de [u8], visit_byte_buf: Vec<u8>
    );

    fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        self.0.visit_some(Objects(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Objects(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Self::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Self::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> std::result::Result<Self::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Self::Value, D::Error> {
        self.0.deserialize(Objects(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> std::result::Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> std::result::Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Wrap(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> std::result::Result<T::Value, A::Error> {
        self.0.next_value_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> std::result::Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Wrap(seed))?;
        Ok((value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> std::result::Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> std::result::Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Wrap(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> std::result::Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // compares with serde_json's own readers
mod tests;

/// What `#[derive(hearth_json::Deserialize)]` (`derive/src/lib.rs`) expands
/// to. Not an API: only the derive's code names it.
#[doc(hidden)]
pub mod __private {
    pub use serde;

    use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, Visitor};
    use std::fmt;

    /// Reads the value of field `name` into its slot. Out of line and
    /// generic over the value's type only (and the one map type), so every
    /// struct's `String` fields share one copy: a struct's own reader is then
    /// a call per field, not the read inlined per field.
    #[inline(never)]
    pub fn field<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
        map: &mut A,
        slot: &mut Option<T>,
        name: &'static str,
    ) -> Result<(), A::Error> {
        if slot.is_some() {
            return Err(de::Error::duplicate_field(name));
        }
        *slot = Some(map.next_value()?);
        Ok(())
    }

    /// Reads past the value of a key no field reads.
    #[inline(never)]
    pub fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
        map.next_value::<de::IgnoredAny>().map(|_| ())
    }

    /// Marks a key no field reads (ignored, as serde's `__ignore`).
    pub const UNKNOWN: usize = usize::MAX;

    /// A struct's key, or an enum's variant name, read as its position in
    /// `keys` (serde's `FIELDS` or `VARIANTS`: each name and its aliases):
    /// one seed for every derived type, so serde_json's key-reading code is
    /// linked once rather than once per type.
    pub struct Key {
        keys: &'static [&'static str],
        /// Refuse a name not in `keys` (`deny_unknown_fields`; always for variants).
        deny: bool,
        variant: bool,
    }

    impl Key {
        pub const fn fields(keys: &'static [&'static str], deny: bool) -> Key {
            Key { keys, deny, variant: false }
        }

        pub const fn variants(keys: &'static [&'static str]) -> Key {
            Key { keys, deny: true, variant: true }
        }

        fn find<E: de::Error>(&self, key: &[u8]) -> Result<usize, E> {
            match self.keys.iter().position(|k| k.as_bytes() == key) {
                Some(at) => Ok(at),
                None if self.variant => Err(E::unknown_variant(&String::from_utf8_lossy(key), self.keys)),
                None if self.deny => Err(E::unknown_field(&String::from_utf8_lossy(key), self.keys)),
                None => Ok(UNKNOWN),
            }
        }
    }

    impl<'de> DeserializeSeed<'de> for Key {
        type Value = usize;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
            d.deserialize_identifier(self)
        }
    }

    impl<'de> Visitor<'de> for Key {
        type Value = usize;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str(if self.variant { "variant identifier" } else { "field identifier" })
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
            self.find(v.as_bytes())
        }

        fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<usize, E> {
            self.find(v)
        }
    }
}

pub use hearth_json_derive::Deserialize;
