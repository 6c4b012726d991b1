//! `#[derive(hearth_json::Deserialize)]` against serde's derive: each struct
//! below is written once and derived both ways; every input must give the
//! same value or the same error text.

use crate::{from_str, from_value};
use serde::de::{DeserializeOwned, Deserializer};
use std::fmt::Debug;

fn seven() -> u32 {
    7
}

fn lower<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s: String = serde::Deserialize::deserialize(d)?;
    Ok(s.to_lowercase())
}

mod upper {
    use serde::de::Deserializer;
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let s: Option<String> = serde::Deserialize::deserialize(d)?;
        Ok(s.map(|s| s.to_uppercase()))
    }
}

macro_rules! both {
    ($($item:item)*) => {
        mod theirs {
            #![allow(dead_code)]
            use super::*;
            $( #[derive(Debug, PartialEq, serde::Deserialize)] $item )*
        }
        mod ours {
            #![allow(dead_code)]
            use super::*;
            $( #[derive(Debug, PartialEq, hearth_json::Deserialize)] $item )*
        }
    };
}

both! {
    pub struct Plain {
        id: u64,
        name: String,
        tags: Option<Vec<String>>,
        inner: Option<Inner>,
    }

    pub struct Inner {
        #[serde(default)]
        n: i32,
        #[serde(rename = "type")]
        kind: String,
    }

    #[serde(rename_all = "camelCase")]
    pub struct Camel {
        user_id: u64,
        #[serde(alias = "chat", alias = "room")]
        chat_id: Option<i64>,
        #[serde(default = "seven")]
        count: u32,
        #[serde(skip)]
        cache: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        #[serde(deserialize_with = "lower")]
        word: String,
        #[serde(default, with = "upper")]
        shout: Option<String>,
        r#type: Option<String>,
        #[serde(rename(serialize = "x", deserialize = "in_place"))]
        place: Option<bool>,
        #[serde(skip_deserializing, default = "seven")]
        later: u32,
    }

    #[serde(deny_unknown_fields, rename_all = "snake_case")]
    pub struct Strict {
        a: bool,
        #[serde(default)]
        b_list: Vec<u8>,
    }

    #[derive(Default)]
    #[serde(default)]
    pub struct Defaults {
        x: u32,
        y: String,
        #[serde(default = "seven")]
        z: u32,
        inner: Option<Inner>,
    }

    #[serde(rename = "Other", rename_all = "SCREAMING-KEBAB-CASE")]
    pub struct Renamed {
        big_name: u8,
        #[serde(rename = "Own")]
        own_name: Option<u8>,
    }

    pub struct Empty {}

    #[serde(rename_all = "snake_case")]
    pub enum Mode {
        Fast,
        SlowAndSteady,
        #[serde(rename = "x")]
        Other,
        #[serde(alias = "ok", alias = "fine!")]
        Fine,
    }

    #[serde(rename_all = "camelCase")]
    pub enum Event {
        Ping,
        Named(String),
        Counted(Option<u32>),
        #[serde(rename_all = "camelCase")]
        Moved {
            from_x: i32,
            #[serde(default)]
            to_x: i32,
            note: Option<String>,
            #[serde(alias = "w")]
            who: Option<Inner>,
        },
        #[serde(rename = "gone")]
        Left {},
    }

    #[serde(remote = "Shape", rename_all = "lowercase")]
    pub enum ShapeDe {
        Dot,
        Circle {
            radius: u32,
            #[serde(default)]
            label: Option<String>,
        },
        Named(String),
    }

    #[serde(rename_all = "PascalCase")]
    pub struct Nested {
        plain: Option<Plain>,
        list: Vec<Camel>,
        map: std::collections::BTreeMap<String, Strict>,
        mode: Option<Mode>,
        events: Option<Vec<Event>>,
    }
}

/// The real type of the `remote` twins above.
#[derive(Debug, PartialEq)]
pub enum Shape {
    Dot,
    Circle { radius: u32, label: Option<String> },
    Named(String),
}

fn shape_reads(text: &str) -> (Result<String, String>, Result<String, String>) {
    let read = |f: fn(
        crate::Objects<&mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>>,
    ) -> crate::Result<Shape>| {
        let mut de = serde_json::Deserializer::from_slice(text.as_bytes());
        f(crate::Objects(&mut de))
            .and_then(|v| de.end().map(|()| v))
            .map(|v| format!("{v:?}"))
            .map_err(|e| e.to_string())
    };
    (read(|d| theirs::ShapeDe::deserialize(d)), read(|d| ours::ShapeDe::deserialize(d)))
}

fn compare<A: DeserializeOwned + Debug, B: DeserializeOwned + Debug>(text: &str) {
    let theirs = from_str::<A>(text).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
    let ours = from_str::<B>(text).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
    assert_eq!(ours, theirs, "{}: {text}", std::any::type_name::<B>());
    if let Ok(value) = from_str::<serde_json::Value>(text) {
        let theirs = from_value::<A>(value.clone()).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
        let ours = from_value::<B>(value).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
        assert_eq!(ours, theirs, "{} from a Value: {text}", std::any::type_name::<B>());
    }
}

fn all(text: &str) {
    compare::<theirs::Plain, ours::Plain>(text);
    compare::<theirs::Inner, ours::Inner>(text);
    compare::<theirs::Camel, ours::Camel>(text);
    compare::<theirs::Strict, ours::Strict>(text);
    compare::<theirs::Defaults, ours::Defaults>(text);
    compare::<theirs::Renamed, ours::Renamed>(text);
    compare::<theirs::Empty, ours::Empty>(text);
    compare::<theirs::Nested, ours::Nested>(text);
    compare::<theirs::Mode, ours::Mode>(text);
    compare::<theirs::Event, ours::Event>(text);
    let (theirs, ours) = shape_reads(text);
    assert_eq!(ours, theirs, "ShapeDe: {text}");
}

const KEYS: &[&str] = &[
    "id",
    "name",
    "tags",
    "inner",
    "n",
    "type",
    "kind",
    "userId",
    "user_id",
    "chatId",
    "chat",
    "room",
    "count",
    "cache",
    "note",
    "word",
    "shout",
    "in_place",
    "x",
    "place",
    "later",
    "a",
    "b_list",
    "bList",
    "y",
    "z",
    "BIG-NAME",
    "big_name",
    "Own",
    "OWN-NAME",
    "Plain",
    "List",
    "Map",
    "unknown",
    "i\\u0064",
    "\\u0074ype",
    "",
];

const VALUES: &[&str] = &[
    "1",
    "-1",
    "0",
    "300",
    "1.5",
    "\"s\"",
    "\"Hi Mixed\"",
    "\"\\u0041b\"",
    "true",
    "false",
    "null",
    "[]",
    "[\"a\",\"b\"]",
    "[1,2]",
    "{}",
    "{\"n\":1,\"type\":\"t\"}",
    "{\"type\":\"t\",\"type\":\"u\"}",
    "{\"a\":true}",
    "{\"a\":true,\"c\":1}",
    "{\"id\":1,\"name\":\"n\"}",
    "[{\"userId\":1,\"word\":\"W\"}]",
    "{\"k\":{\"a\":false,\"b_list\":[1]}}",
];

#[test]
fn hand_picked_inputs_read_the_same() {
    for text in [
        r#"{"id":1,"name":"a"}"#,
        r#"{"id":1,"name":"a","tags":["x"],"inner":{"type":"t"}}"#,
        r#"{"id":1,"name":"a","id":2}"#,
        r#"{"name":"a"}"#,
        r#"{"userId":5,"word":"LOUD","chat":9,"shout":"hey","type":"t","in_place":true,"later":1,"cache":"c"}"#,
        r#"{"userId":5,"word":"x","chatId":1,"room":2}"#,
        r#"{"a":true,"b_list":[1,2]}"#,
        r#"{"a":true,"other":1}"#,
        r#"{}"#,
        r#"{"x":3,"inner":null}"#,
        r#"{"BIG-NAME":3,"Own":4}"#,
        r#"{"big_name":3}"#,
        r#"{"Plain":{"id":1,"name":"p"},"List":[{"userId":1,"word":"W"}],"Map":{"k":{"a":false}}}"#,
        r#"{"List":[{"userId":1,"word":"W","userId":2}],"Map":{}}"#,
        r#"{"List":[],"Map":{"k":{"a":false,"zz":0}}}"#,
        r#"[1,"a"]"#,
        r#"[]"#,
        r#""text""#,
        r#"null"#,
        r#"7"#,
        r#"{"id":1,"name":"a"} trailing"#,
        r#"{"id":1,"name":"a""#,
        r#"{"id":1,}"#,
        r#"{"id" 1}"#,
        r#"{1:2}"#,
        r#"{"i\u0064":1,"name":"\u0041"}"#,
        r#""fast""#,
        r#""slow_and_steady""#,
        r#""SlowAndSteady""#,
        r#""x""#,
        r#""other""#,
        r#""ok""#,
        r#""fine!""#,
        r#""nope""#,
        r#"{"fast":null}"#,
        r#"{"fast":1}"#,
        r#"{"fast":null,"x":null}"#,
        r#""ping""#,
        r#"{"ping":null}"#,
        r#"{"named":"n"}"#,
        r#"{"named":null}"#,
        r#""named""#,
        r#"{"counted":null}"#,
        r#"{"counted":3}"#,
        r#"{"moved":{"fromX":1,"w":{"type":"t"}}}"#,
        r#"{"moved":{"fromX":1,"toX":2,"note":"n","who":{"type":"t"},"who":null}}"#,
        r#"{"moved":{"toX":2}}"#,
        r#"{"moved":{}}"#,
        r#""moved""#,
        r#"{"gone":{}}"#,
        r#"{"gone":{"a":1}}"#,
        r#"{"Left":{}}"#,
        r#""dot""#,
        r#"{"circle":{"radius":2,"label":"c"}}"#,
        r#"{"circle":{"label":"c"}}"#,
        r#"{"named":"n"} x"#,
        r#"{"circle":{"radius":2}"#,
        r#"{"Mode":"fast","Events":["ping",{"named":"n"},{"moved":{"fromX":-1}}],"List":[],"Map":{}}"#,
        r#"{"Mode":"slow","List":[],"Map":{}}"#,
    ] {
        all(text);
    }
}

/// A small LCG from `seed`: the same inputs every run. `next(n)` is below `n`.
fn lcg(mut state: u64) -> impl FnMut(usize) -> usize {
    move |n| {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    }
}

/// The one difference: a struct variant, like a struct, is read from an
/// object only (serde's derive also takes an array of its fields in order).
#[test]
fn a_struct_variant_is_an_object_only() {
    let text = r#"{"circle":[2,"c"]}"#;
    let (theirs, ours) = shape_reads(text);
    assert_eq!(theirs.as_deref(), Ok(r#"Circle { radius: 2, label: Some("c") }"#));
    assert_eq!(ours.unwrap_err(), "invalid type: sequence, expected struct variant Shape::Circle at line 1 column 11");
}

#[test]
fn generated_enums_read_the_same() {
    let mut next = lcg(0x9e37_79b9_7f4a_7c15);
    const NAMES: &[&str] =
        &["ping", "named", "counted", "moved", "gone", "Left", "dot", "circle", "fast", "x", "ok", "?"];
    // No arrays as a variant's body: see `a_struct_variant_is_an_object_only`.
    const BODIES: &[&str] = &[
        "null",
        "1",
        "\"s\"",
        "{}",
        "{\"fromX\":1}",
        "{\"radius\":1}",
        "{\"radius\":1,\"radius\":2}",
        "{\"fromX\":1,\"w\":null,\"who\":null}",
        "{\"label\":\"l\",\"radius\":0,\"z\":[]}",
        "true",
    ];
    for _ in 0..5_000 {
        let name = NAMES[next(NAMES.len())];
        let text = match next(3) {
            0 => format!("\"{name}\""),
            1 => format!("{{\"{name}\":{}}}", BODIES[next(BODIES.len())]),
            _ => format!("{{\"{name}\":{},\"{}\":null}}", BODIES[next(BODIES.len())], NAMES[next(NAMES.len())]),
        };
        compare::<theirs::Mode, ours::Mode>(&text);
        compare::<theirs::Event, ours::Event>(&text);
        let (theirs, ours) = shape_reads(&text);
        assert_eq!(ours, theirs, "ShapeDe: {text}");
    }
}

#[test]
fn generated_objects_read_the_same() {
    let mut next = lcg(0x2545_f491_4f6c_dd1d);
    for _ in 0..20_000 {
        let entries = next(7);
        let mut text = String::from("{");
        for i in 0..entries {
            if i > 0 {
                text.push(',');
            }
            text.push('"');
            text.push_str(KEYS[next(KEYS.len())]);
            text.push_str("\":");
            text.push_str(VALUES[next(VALUES.len())]);
        }
        text.push('}');
        all(&text);
    }
}
