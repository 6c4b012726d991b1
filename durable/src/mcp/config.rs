//! `agents/{id}/mcp.json`: the agent's MCP servers, in the `mcpServers`
//! shape other MCP clients use, for servers reached over Streamable HTTP:
//!
//! ```json
//! {"mcpServers": {"github": {
//!     "url": "https://api.githubcopilot.com/mcp/",
//!     "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
//!     "scopes": ["main"], "timeoutMs": 30000}}}
//! ```
//!
//! `"approve": ["create_issue", "delete_*"]` (or `["*"]`) names the
//! server's tools whose calls wait for the owner's yes (see
//! `crate::approvals`), besides `APPROVE_TOOLS`.
//!
//! `${NAME}` placeholders in `url` and `headers` are filled from the
//! Worker's secrets when a server is called (never stored with the tools); a
//! missing secret is a configuration error naming it, and Hearth's own
//! secrets are never sent anywhere. A `command` (stdio) server cannot run on
//! Workers and is refused with a message saying so.

use crate::protocol::mcp::{McpScope, McpServerConfig};
use serde_json::Value;

/// Hearth's own secrets: a placeholder naming one is refused (an MCP server
/// is someone else's, and `mcp.json` could be edited to exfiltrate them).
const OWN_SECRETS: [&str; 10] = [
    "LLM_API_KEY",
    "TELEGRAM_BOT_TOKEN",
    "TELEGRAM_WEBHOOK_SECRET",
    "DISCORD_BOT_TOKEN",
    "DISCORD_PUBLIC_KEY",
    "ADMIN_TOKEN",
    "API_TOKENS",
    "TRANSCRIBE_API_KEY",
    "WEB_SEARCH_API_KEY",
    "HEARTH_FAULT_R2_PUT_PREFIX",
];

/// Longest server name (it is part of every tool name, which providers cap at 64).
pub const MAX_SERVER_NAME: usize = 24;

/// One `mcpServers` entry: its settings, or why it cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub config: Result<McpServerConfig, String>,
}

/// The servers of an `mcp.json`, in name order. `Err`: the file as a whole
/// is unreadable. A bad entry is an `Entry` with an error (the others work).
pub fn parse(raw: &[u8], default_timeout_ms: u32) -> Result<Vec<Entry>, String> {
    let v: Value = hearth_json::from_slice(raw).map_err(|e| format!("mcp.json is not valid JSON: {e}"))?;
    let servers = v
        .get("mcpServers")
        .and_then(Value::as_object)
        .ok_or("mcp.json needs an object \"mcpServers\": {\"name\": {\"url\": \"https://…\"}}")?;
    let mut entries: Vec<Entry> = servers
        .iter()
        .filter(|(_, s)| {
            !(s.get("disabled").and_then(Value::as_bool) == Some(true)
                || s.get("enabled").and_then(Value::as_bool) == Some(false))
        })
        .map(|(name, s)| Entry { name: name.clone(), config: server(name, s, default_timeout_ms) })
        .collect();
    crate::order::sort_by(&mut entries, |a, b| a.name.cmp(&b.name));
    Ok(entries)
}

fn server(name: &str, s: &Value, default_timeout_ms: u32) -> Result<McpServerConfig, String> {
    let ok_name = !name.is_empty()
        && name.len() <= MAX_SERVER_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        && !name.contains("__");
    if !ok_name {
        return Err(format!(
            "the server name {name:?} must be 1-{MAX_SERVER_NAME} letters, digits, '-' or '_' (no \"__\"): \
it becomes part of the tool names mcp__{{server}}__{{tool}}"
        ));
    }
    let s = s.as_object().ok_or("a server is an object with a \"url\"")?;
    if s.contains_key("command") {
        return Err("stdio servers (\"command\") cannot run on Cloudflare Workers: give the server's Streamable \
HTTP endpoint as \"url\" (many servers offer one, or run it behind an HTTP bridge)"
            .into());
    }
    let transport = s.get("type").or_else(|| s.get("transport")).and_then(Value::as_str).unwrap_or("http");
    match transport.to_ascii_lowercase().as_str() {
        "http" | "streamable-http" | "streamablehttp" | "streamable_http" => {}
        "sse" => {
            return Err("the old HTTP+SSE transport is not supported: use the server's Streamable HTTP endpoint".into())
        }
        other => return Err(format!("transport {other:?} is not supported: Hearth speaks Streamable HTTP (\"http\")")),
    }
    let url = s.get("url").and_then(Value::as_str).ok_or("a server needs a \"url\" (its Streamable HTTP endpoint)")?;
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!("\"url\" must be an http(s) URL, not {url:?}"));
    }
    check_placeholders(url)?;
    let mut headers = Vec::new();
    if let Some(h) = s.get("headers") {
        let h = h.as_object().ok_or("\"headers\" is an object of header names to values")?;
        for (k, v) in h {
            let v = v.as_str().ok_or_else(|| format!("header {k:?} must be a string"))?;
            check_placeholders(v)?;
            headers.push((k.clone(), v.to_owned()));
        }
    }
    let scopes = match s.get("scopes") {
        None => vec![McpScope::Main],
        Some(Value::Array(list)) => {
            let mut scopes = Vec::new();
            for item in list {
                match item.as_str() {
                    Some("all") => scopes.extend(McpScope::ALL),
                    Some(name) => scopes.push(
                        McpScope::ALL
                            .into_iter()
                            .find(|s| s.as_str() == name)
                            .ok_or_else(|| format!("scope {name:?} is not one of main, jobs, api, dms, groups, all"))?,
                    ),
                    None => return Err("\"scopes\" lists names: main, jobs, api, dms, groups or all".into()),
                }
            }
            crate::order::sort(&mut scopes);
            scopes.dedup();
            scopes
        }
        Some(_) => return Err("\"scopes\" is a list, e.g. [\"main\", \"jobs\"]".into()),
    };
    let timeout_ms = match s.get("timeoutMs") {
        None => default_timeout_ms,
        Some(t) => t
            .as_u64()
            .filter(|t| (1..=600_000).contains(t))
            .map(|t| t as u32)
            .ok_or("\"timeoutMs\" is a number of milliseconds from 1 to 600000")?,
    };
    let approve = match s.get("approve") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|t| {
                t.as_str()
                    .map(str::to_owned)
                    .ok_or("\"approve\" lists tool names or * patterns, e.g. [\"create_issue\", \"delete_*\"]")
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("\"approve\" is a list of tool names or * patterns, e.g. [\"*\"]".into()),
    };
    Ok(McpServerConfig { name: name.to_owned(), url: url.to_owned(), headers, scopes, timeout_ms, approve })
}

/// The `${NAME}` placeholders of `text`, checked: well-formed and not one of
/// Hearth's own secrets.
fn check_placeholders(text: &str) -> Result<(), String> {
    for name in placeholders(text)? {
        let base = name.split("__").next().unwrap_or(&name);
        if OWN_SECRETS.contains(&base) {
            return Err(format!("${{{name}}} is one of Hearth's own secrets and is never sent to an MCP server"));
        }
    }
    Ok(())
}

/// The names of the `${NAME}` placeholders in `text`.
fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed placeholder in {text:?}"))?;
        let name = &after[..end];
        let ok = name.bytes().next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ok {
            return Err(format!("${{{name}}} is not a placeholder: use ${{NAME}} with letters, digits and '_'"));
        }
        out.push(name.to_owned());
        rest = &after[end + 1..];
    }
    Ok(out)
}

/// `text` with its placeholders filled by `secret`. Err: the first secret
/// that is not set, named.
pub fn fill(text: &str, secret: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed placeholder in {text:?}"));
        };
        let name = &after[..end];
        match secret(name) {
            Some(value) => out.push_str(&value),
            None => {
                return Err(format!(
                    "${{{name}}} is not set: add it as a secret (npx wrangler secret put {name}, or .dev.vars locally)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A server's URL and headers with their placeholders filled.
pub fn resolve(
    server: &McpServerConfig,
    secret: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, Vec<(String, String)>), String> {
    let url = fill(&server.url, secret).map_err(|e| format!("MCP server {}: {e}", server.name))?;
    let headers = server
        .headers
        .iter()
        .map(|(k, v)| Ok((k.clone(), fill(v, secret).map_err(|e| format!("MCP server {}: {e}", server.name))?)))
        .collect::<Result<Vec<_>, String>>()?;
    Ok((url, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(json: &str) -> Result<McpServerConfig, String> {
        let mut entries = parse(json.as_bytes(), 30_000).map_err(|e| format!("file: {e}"))?;
        entries.remove(0).config
    }

    #[test]
    fn the_usual_shape_with_placeholders() {
        let entries = parse(
            br#"{"mcpServers": {
                "zeta": {"url": "https://z.test/mcp"},
                "github": {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                           "scopes": ["main", "jobs"], "timeoutMs": 5000, "description": "ignored"},
                "off": {"url": "https://o.test", "disabled": true}
            }}"#,
            30_000,
        )
        .unwrap();
        assert_eq!(entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["github", "zeta"]);
        let github = entries[0].config.clone().unwrap();
        assert_eq!(github.scopes, [McpScope::Main, McpScope::Jobs]);
        assert_eq!(github.timeout_ms, 5000);
        assert_eq!(entries[1].config.clone().unwrap().scopes, [McpScope::Main], "the owner's main session by default");
        let secret = |name: &str| (name == "GITHUB_TOKEN").then(|| "ghp_1".to_owned());
        let (url, headers) = resolve(&github, &secret).unwrap();
        assert_eq!(url, "https://api.githubcopilot.com/mcp/");
        assert_eq!(headers, [("Authorization".to_owned(), "Bearer ghp_1".to_owned())]);
        let e = resolve(&github, &|_| None).unwrap_err();
        assert!(e.contains("${GITHUB_TOKEN} is not set") && e.contains("github"), "{e}");
    }

    #[test]
    fn what_cannot_work_is_said_plainly() {
        let e = one(
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}}"#,
        )
        .unwrap_err();
        assert!(e.contains("stdio") && e.contains("Workers"), "{e}");
        assert!(one(r#"{"mcpServers": {"old": {"url": "https://o.test/sse", "type": "sse"}}}"#)
            .unwrap_err()
            .contains("SSE"));
        assert!(one(r#"{"mcpServers": {"x": {"url": "ftp://o.test"}}}"#).unwrap_err().contains("http(s)"));
        assert!(one(r#"{"mcpServers": {"a b": {"url": "https://o.test"}}}"#).unwrap_err().contains("server name"));
        assert!(one(r#"{"mcpServers": {"x": {"url": "https://o.test", "scopes": ["everyone"]}}}"#)
            .unwrap_err()
            .contains("everyone"));
        let e = one(r#"{"mcpServers": {"x": {"url": "https://o.test", "headers": {"x-key": "${LLM_API_KEY}"}}}}"#)
            .unwrap_err();
        assert!(e.contains("Hearth's own secrets"), "{e}");
        let e = one(r#"{"mcpServers": {"x": {"url": "https://o.test/?k=${ADMIN_TOKEN__WORK}"}}}"#).unwrap_err();
        assert!(e.contains("Hearth's own secrets"), "{e}");
        assert!(one(r#"{"mcpServers": {"x": {"url": "https://o.test", "headers": {"a": "${bad name}"}}}}"#).is_err());
        assert!(parse(b"{", 1).unwrap_err().contains("not valid JSON"));
        assert!(parse(br#"{"servers": {}}"#, 1).unwrap_err().contains("mcpServers"));
        let all = one(r#"{"mcpServers": {"x": {"url": "https://o.test", "scopes": ["all", "main"]}}}"#).unwrap();
        assert_eq!(all.scopes.len(), 5);
    }

    #[test]
    fn a_servers_approve_list_names_its_tools_that_wait_for_the_owner() {
        let s =
            one(r#"{"mcpServers": {"gh": {"url": "https://g.test", "approve": ["create_*", "merge_pull_request"]}}}"#)
                .unwrap();
        assert_eq!(s.approve, ["create_*", "merge_pull_request"]);
        assert!(one(r#"{"mcpServers": {"gh": {"url": "https://g.test"}}}"#).unwrap().approve.is_empty());
        assert!(one(r#"{"mcpServers": {"gh": {"url": "https://g.test", "approve": "all"}}}"#)
            .unwrap_err()
            .contains("approve"));
        assert!(one(r#"{"mcpServers": {"gh": {"url": "https://g.test", "approve": [1]}}}"#)
            .unwrap_err()
            .contains("approve"));
    }
}
