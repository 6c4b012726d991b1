//! A struct's own fields, and its other entries kept by name: what
//! `#[serde(flatten)] other: Map<String, Value>` gives, without serde's
//! buffering reader.
//!
//! serde reads a struct with a flattened field by first gathering every
//! entry it does not know into its `Content` tree, then reading the map
//! from that: a second reader for `Value` and `Content`'s own code (about
//! 20 kB of WASM), linked for two telegram structs alone. [`with_rest`]
//! reads the struct as a plain one (its derive with `#[serde(remote =
//! "Self")]`, the map field `#[serde(skip)]`) from a map that hands it the
//! entries it names and keeps the others.

use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Reads `T` with `read` (a struct's derived reader) from `d`; the entries
/// whose key is none of the struct's fields are returned by name, as read.
pub fn with_rest<'de, D: Deserializer<'de>, T>(
    d: D,
    read: impl FnOnce(Split<'_, D>) -> Result<T, D::Error>,
) -> Result<(T, Map<String, Value>), D::Error> {
    let mut rest = Map::new();
    let value = read(Split { d, rest: &mut rest })?;
    Ok((value, rest))
}

/// The deserializer handed to the struct's reader: its struct is read as
/// a map that keeps what the struct does not name.
pub struct Split<'r, D> {
    d: D,
    rest: &'r mut Map<String, Value>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Split<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.d.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.d.deserialize_map(Fields { fields, visitor, rest: self.rest })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The struct's visitor, handed the map through [`Known`].
struct Fields<'r, V> {
    fields: &'static [&'static str],
    visitor: V,
    rest: &'r mut Map<String, Value>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Fields<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Known { map, fields: self.fields, rest: self.rest })
    }
}

/// The object's entries: those the struct names go to it, the others to `rest`.
struct Known<'r, A> {
    map: A,
    fields: &'static [&'static str],
    rest: &'r mut Map<String, Value>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Known<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<String>()? {
            if self.fields.contains(&key.as_str()) {
                return seed.deserialize(IntoDeserializer::<A::Error>::into_deserializer(key)).map(Some);
            }
            let value: Value = self.map.next_value()?;
            self.rest.insert(key, value);
        }
        Ok(None)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}
