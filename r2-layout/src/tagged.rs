//! Internally tagged enums (`{"role": "user", ...}`, `{"type": "text", ...}`)
//! read without serde's content buffer.
//!
//! serde's derive reads an internally tagged enum by first buffering the
//! whole object into its `Content` tree, then reading the variant from that:
//! every row parsed twice, and a second copy of each variant's reader (about
//! 48 kB of WASM for [`crate::message::Message`] and its blocks alone).
//! [`tag_first`] reads the tag when it is the object's first key (as serde
//! writes these enums) and then the variant's fields straight from the rest
//! of the object, through the enum's externally tagged twin (a plain
//! `#[derive(Deserialize)]` enum with the same variants). An object whose tag
//! comes later (written by another tool) is gathered, re-ordered and read the
//! same way: the same result, only slower.

#[doc(hidden)]
pub use serde as __serde;
use serde::de::{
    self, DeserializeOwned, Deserializer, EnumAccess, IntoDeserializer, MapAccess, VariantAccess, Visitor,
};
use std::fmt;
use std::marker::PhantomData;

/// `Deserialize` for an internally tagged enum `$ty` through [`tag_first`]:
/// `$twin` is its externally tagged twin, `#[derive(Deserialize)]` with
/// `#[serde(remote = "...")]`, so that it must list exactly the real variants
/// and fields (a difference does not compile); only what reading needs
/// (names, defaults) is repeated there.
///
/// `read_tagged!(fn $name, ...)` writes the same reader as a function
/// `$name`, for `#[serde(deserialize_with)]` where `$ty` is another
/// crate's (whose `Deserialize` cannot be written here).
#[macro_export]
macro_rules! read_tagged {
    (fn $name:ident, $ty:ty, $twin:ident, $tag:literal, $expecting:literal) => {
        fn $name<'de, D: $crate::tagged::__serde::Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
            struct Twin($ty);
            impl<'de> $crate::tagged::__serde::Deserialize<'de> for Twin {
                fn deserialize<D: $crate::tagged::__serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    $twin::deserialize(d).map(Twin)
                }
            }
            $crate::tagged::tag_first::<D, Twin>(d, $tag, $expecting).map(|t| t.0)
        }
    };
    ($ty:ty, $twin:ident, $tag:literal, $expecting:literal) => {
        impl<'de> $crate::tagged::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::tagged::__serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::read_tagged!(fn read, $ty, $twin, $tag, $expecting);
                read(d)
            }
        }
    };
}

/// Reads `T` (an externally tagged enum) from an object whose `tag` key names
/// the variant and whose other keys are the variant's fields.
pub fn tag_first<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
    tag: &'static str,
    expecting: &'static str,
) -> Result<T, D::Error> {
    d.deserialize_map(TagFirst { tag, expecting, out: PhantomData })
}

struct TagFirst<T> {
    tag: &'static str,
    expecting: &'static str,
    out: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> Visitor<'de> for TagFirst<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::missing_field(self.tag));
        };
        if first == self.tag {
            let variant: String = map.next_value()?;
            return T::deserialize(Rest { variant, map });
        }
        // The tag is further on: gather the object, put the tag first, read again.
        let json = reordered(first, &mut map, self.tag)?;
        let mut again = serde_json::Deserializer::from_slice(&json);
        tag_first(hearth_json::Objects(&mut again), self.tag, self.expecting).map_err(de::Error::custom)
    }
}

/// The rest of the object `map` is reading (its first key, `first`, read),
/// written out again with `tag` first. Generic over the map only, not over
/// the enum read: compiled once per map type, not once per tagged enum.
#[inline(never)]
fn reordered<'de, A: MapAccess<'de>>(first: String, map: &mut A, tag: &'static str) -> Result<Vec<u8>, A::Error> {
    let mut rest = serde_json::Map::new();
    rest.insert(first, map.next_value()?);
    while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
        rest.insert(k, v);
    }
    let variant = rest.remove(tag).ok_or_else(|| de::Error::missing_field(tag))?;
    tag_then_rest(tag, &variant, &rest).map_err(de::Error::custom)
}

/// `{"<tag>": <variant>, <rest>}` as JSON.
fn tag_then_rest(
    tag: &str,
    variant: &serde_json::Value,
    rest: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Result<Vec<u8>> {
    let mut json = format!("{{{}:", serde_json::Value::from(tag)).into_bytes();
    json.extend_from_slice(variant.to_string().as_bytes());
    match serde_json::to_vec(rest)?.split_first() {
        Some((_, fields)) if !rest.is_empty() => {
            json.push(b',');
            json.extend_from_slice(fields);
        }
        _ => json.push(b'}'),
    }
    Ok(json)
}

/// The rest of the object, offered as the variant `variant` of an
/// externally tagged enum.
struct Rest<A> {
    variant: String,
    map: A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Rest<A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for Rest<A> {
    type Error = A::Error;
    type Variant = Fields<A>;

    fn variant_seed<V: de::DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Fields<A>), A::Error> {
        let variant = seed.deserialize(self.variant.into_deserializer())?;
        Ok((variant, Fields(self.map)))
    }
}

/// The variant's fields: the object's remaining entries.
struct Fields<A>(A);

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for Fields<A> {
    type Error = A::Error;

    fn unit_variant(mut self) -> Result<(), A::Error> {
        while self.0.next_entry::<de::IgnoredAny, de::IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        seed.deserialize(de::value::MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, A::Error> {
        Err(de::Error::custom("a tagged object cannot hold a tuple variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}
