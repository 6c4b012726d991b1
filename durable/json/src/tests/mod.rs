use super::*;

/// The derive against serde's.
mod derive;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, PartialEq)]
struct Inner {
    id: u64,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Outer {
    name: String,
    inner: Option<Inner>,
    list: Vec<Inner>,
    kind: Kind,
    #[serde(default)]
    extra: Value,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Kind {
    Text { text: String },
    Nothing,
}

#[test]
fn reads_what_serde_json_reads() {
    let text = r#"{"name":"a","inner":{"id":1,"tags":["x"]},"list":[{"id":2},{"id":3}],"kind":{"type":"text","text":"hi"},"extra":{"k":[1,2,{"z":null}]}}"#;
    let ours: Outer = from_str(text).unwrap();
    let theirs: Outer = serde_json::from_str(text).unwrap();
    assert_eq!(ours, theirs);
    let v: Value = from_str(text).unwrap();
    assert_eq!(v, serde_json::from_str::<Value>(text).unwrap());
    assert_eq!(from_value::<Outer>(v).unwrap(), theirs);
    let nothing: Kind = from_slice(br#"{"type":"nothing"}"#).unwrap();
    assert_eq!(nothing, Kind::Nothing);
}

#[test]
fn errors_are_serde_jsons() {
    for bad in [r#"{"name":1}"#, r#"{"name":"a""#, r#"{"name":"a"} x"#, ""] {
        let ours = from_str::<Outer>(bad).unwrap_err().to_string();
        let theirs = serde_json::from_str::<Outer>(bad).unwrap_err().to_string();
        assert_eq!(ours, theirs, "{bad}");
    }
}

#[test]
fn a_struct_is_not_read_from_an_array() {
    assert!(serde_json::from_value::<Inner>(json!([1, ["x"]])).is_ok(), "serde_json would");
    let err = from_value::<Inner>(json!([1, ["x"]])).unwrap_err().to_string();
    assert!(err.contains("invalid type: sequence"), "{err}");
    assert!(from_str::<Inner>("[1]").is_err());
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum External {
    Unit,
    Newtype(u32),
    Tuple(u8, String),
    Fields { a: i64, b: Option<bool> },
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(untagged)]
enum Either {
    Number(f64),
    Words(Vec<String>),
}

#[derive(Debug, Deserialize, PartialEq)]
struct Flat {
    id: String,
    #[serde(flatten)]
    rest: std::collections::BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize, PartialEq)]
struct Shapes {
    external: Vec<External>,
    either: Vec<Either>,
    by_id: std::collections::HashMap<u64, char>,
    flat: Flat,
    #[serde(with = "serde_bytes_as_seq")]
    bytes: Vec<u8>,
    unit: (),
    pair: (i8, u128),
}

mod serde_bytes_as_seq {
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

#[test]
fn every_shape_reads_as_serde_json_reads_it() {
    let text = r#"{"external":["unit",{"newtype":7},{"tuple":[1,"x"]},{"fields":{"a":-3,"b":null}}],
        "either":[1.5,["a","b"]],"by_id":{"12":"z"},"flat":{"id":"f","x":[1],"y":{"z":"é\n"}},
        "bytes":[0,255],"unit":null,"pair":[-1,340282366920938463463374607431768211455]}"#;
    let ours: Shapes = from_str(text).unwrap();
    let theirs: Shapes = serde_json::from_str(text).unwrap();
    assert_eq!(ours, theirs);
    // Borrowed strings come through borrowed.
    let borrowed: std::collections::BTreeMap<&str, &str> = from_str(r#"{"k":"v"}"#).unwrap();
    assert_eq!(borrowed["k"], "v");
}

#[test]
fn nested_errors_read_as_serde_jsons() {
    let bad = [
        r#"{"external":[{"nope":1}],"either":[],"by_id":{},"flat":{"id":"f"},"bytes":[],"unit":null,"pair":[1,2]}"#,
        r#"{"external":[],"either":[true],"by_id":{},"flat":{"id":"f"},"bytes":[],"unit":null,"pair":[1,2]}"#,
        r#"{"external":[],"either":[],"by_id":{"x":"z"},"flat":{"id":"f"},"bytes":[],"unit":null,"pair":[1,2]}"#,
        r#"{"external":[],"either":[],"by_id":{},"flat":{"id":"f"},"bytes":[],"unit":null,"pair":[300,1]}"#,
        r#"{"external":[],"either":[],"by_id":{},"flat":{"id":"f"},"bytes":[],"unit":null}"#,
    ];
    for text in bad {
        let ours = from_str::<Shapes>(text).unwrap_err().to_string();
        let theirs = serde_json::from_str::<Shapes>(text).unwrap_err().to_string();
        assert_eq!(ours, theirs, "{text}");
    }
}

#[test]
fn unplaced_says_what_from_value_says() {
    for v in
        [json!({"name": 1}), json!({"name": "a", "list": [{"id": -1}]}), json!({"name": "a", "kind": {"type": "x"}})]
    {
        let by_value = from_value::<Outer>(v.clone()).unwrap_err().to_string();
        let by_text = from_slice::<Outer>(&serde_json::to_vec(&v).unwrap()).unwrap_err();
        assert!(by_text.line() > 0, "{by_text}");
        assert_eq!(unplaced(&by_text), by_value);
    }
}

/// The same struct read with serde's `flatten` and with [`with_rest`].
#[derive(Debug, Deserialize, PartialEq)]
struct Flattened {
    id: u64,
    #[serde(default)]
    name: Option<String>,
    #[serde(flatten)]
    other: serde_json::Map<String, Value>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(remote = "Self")]
struct Kept {
    id: u64,
    #[serde(default)]
    name: Option<String>,
    #[serde(skip)]
    other: serde_json::Map<String, Value>,
}

impl<'de> Deserialize<'de> for Kept {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let (mut s, other) = with_rest(d, |d| Kept::deserialize(d))?;
        s.other = other;
        Ok(s)
    }
}

#[test]
fn with_rest_reads_as_flatten_does() {
    for text in [
        r#"{"id": 1}"#,
        r#"{"b": [1, {"c": null}], "id": 2, "a": 1.5, "name": "x"}"#,
        r#"{"id": 3, "z": -4, "z": "again"}"#,
        r#"{"name": "x"}"#,
        r#"{"id": "one"}"#,
        r#"{"id": 1, "id": 2}"#,
        r#"[1]"#,
        r#"{"id": 1, "x": }"#,
    ] {
        let flat = from_str::<Flattened>(text).map(|f| (f.id, f.name, f.other));
        let flat = flat.map_err(|e| e.to_string().replace("Flattened", "Kept"));
        let split = from_str::<Kept>(text).map(|s| (s.id, s.name, s.other)).map_err(|e| e.to_string());
        assert_eq!(flat, split, "{text}");
    }
}
