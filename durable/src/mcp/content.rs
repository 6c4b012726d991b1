//! A `tools/call` result as the text of a tool result: text content as it
//! is, other content as a short note (images and audio are not carried into
//! the history), `structuredContent` when there is nothing else, `isError`
//! kept, and the whole cut at `MCP_MAX_RESULT_CHARS`.

use crate::toolkit::ToolOutcome;
use serde_json::Value;

/// The model's view of a `tools/call` result.
pub fn outcome(result: &Value, max_chars: usize) -> ToolOutcome {
    let mut parts: Vec<String> = Vec::new();
    for item in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
        let part = match field("type") {
            "text" => field("text").to_owned(),
            "image" | "audio" => {
                format!("[{} ({}, {} bytes) not shown]", field("type"), field("mimeType"), field("data").len() / 4 * 3)
            }
            "resource_link" => {
                let name = if field("name").is_empty() { field("uri") } else { field("name") };
                format!("[resource {name}: {}]", field("uri"))
            }
            "resource" => {
                let r = item.get("resource").unwrap_or(&Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => format!("[resource {uri}]\n{text}"),
                    None => format!(
                        "[binary resource {uri} ({}) not shown]",
                        r.get("mimeType").and_then(Value::as_str).unwrap_or("unknown type")
                    ),
                }
            }
            other => format!("[{other} content not shown]"),
        };
        parts.push(part);
    }
    if parts.iter().all(|p| p.trim().is_empty()) {
        if let Some(structured) = result.get("structuredContent") {
            parts = vec![structured.to_string()];
        }
    }
    let text = parts.join("\n");
    let total = text.chars().count();
    let mut text: String = text.chars().take(max_chars).collect();
    if total > max_chars {
        text.push_str(&format!("\n[cut: the result is {total} characters; the first {max_chars} are shown]"));
    }
    if text.trim().is_empty() {
        text = "(the tool returned nothing)".into();
    }
    ToolOutcome { text, is_error: result.get("isError").and_then(Value::as_bool).unwrap_or(false) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_of_every_kind() {
        let r = json!({"content": [
            {"type": "text", "text": "Echo: hi"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a.txt"},
            {"type": "resource", "resource": {"uri": "demo://r/1", "mimeType": "text/plain", "text": "resource body"}},
            {"type": "resource", "resource": {"uri": "demo://r/2", "mimeType": "application/zip", "blob": "UEs="}}
        ]});
        let o = outcome(&r, 10_000);
        assert!(!o.is_error);
        assert_eq!(
            o.text,
            "Echo: hi\n[image (image/png, 3 bytes) not shown]\n[resource a.txt: file:///a.txt]\n[resource demo://r/1]\n\
resource body\n[binary resource demo://r/2 (application/zip) not shown]"
        );
    }

    #[test]
    fn errors_structured_content_and_caps() {
        let o = outcome(&json!({"content": [{"type": "text", "text": "no such repo"}], "isError": true}), 100);
        assert!(o.is_error && o.text == "no such repo");
        let o = outcome(&json!({"content": [], "structuredContent": {"temperature": 22}}), 100);
        assert_eq!(o.text, r#"{"temperature":22}"#);
        let o = outcome(&json!({"content": [{"type": "text", "text": "x".repeat(50)}]}), 10);
        assert_eq!(o.text, format!("{}\n[cut: the result is 50 characters; the first 10 are shown]", "x".repeat(10)));
        assert_eq!(outcome(&json!({}), 10).text, "(the tool returned nothing)");
    }
}
