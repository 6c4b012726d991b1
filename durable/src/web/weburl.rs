//! URLs as the runtime's `fetch` reads them: by the WHATWG URL Standard. In
//! the Worker the runtime's own `URL` parses them, the very parser `fetch`
//! uses, so the address [`super::guard`] checks is the address fetched (and
//! the upload carries no URL parser); natively (tests) the `url` crate,
//! which implements the same standard. The e2e tests run the guard's cases
//! through the runtime's parser.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A URL's host, as the standard serializes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A name, lowercase (and punycode for non-ASCII names).
    Domain(String),
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

/// A parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebUrl {
    /// The whole URL, serialized (what is fetched).
    pub href: String,
    /// `http`, `https`, `file`… (no colon).
    pub scheme: String,
    pub host: Option<Host>,
    /// The host as the URL serializes it (`[::ffff:7f00:1]` for IPv6), lowercase.
    pub hostname: String,
    /// The port, explicit or the scheme's default (`None`: neither).
    pub port: Option<u16>,
    /// The URL carries a user name or password.
    pub credentials: bool,
}

impl WebUrl {
    /// `input` parsed on its own; `None`: not a URL.
    pub fn parse(input: &str) -> Option<WebUrl> {
        imp::parse(input, None)
    }

    /// `input` (a link, a redirect's `location`) resolved against this URL.
    pub fn join(&self, input: &str) -> Option<WebUrl> {
        imp::parse(input, Some(&self.href))
    }

    pub fn as_str(&self) -> &str {
        &self.href
    }

    /// The host as the URL serializes it (`[::1]` for IPv6), lowercase,
    /// without a trailing dot.
    pub fn host_text(&self) -> String {
        self.hostname.trim_end_matches('.').to_owned()
    }
}

impl fmt::Display for WebUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.href)
    }
}

/// The parts a parser reports, made into a [`WebUrl`].
fn assemble(href: String, protocol: &str, hostname: &str, port: Option<u16>, credentials: bool) -> WebUrl {
    let scheme = protocol.trim_end_matches(':').to_ascii_lowercase();
    let host = if hostname.is_empty() {
        None
    } else if let Some(v6) = hostname.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        v6.parse().ok().map(Host::V6)
    } else if let Ok(v4) = hostname.parse::<Ipv4Addr>() {
        Some(Host::V4(v4))
    } else {
        Some(Host::Domain(hostname.to_ascii_lowercase()))
    };
    let port = port.or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    WebUrl { href, scheme, host, hostname: hostname.to_ascii_lowercase(), port, credentials }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::{assemble, WebUrl};

    pub fn parse(input: &str, base: Option<&str>) -> Option<WebUrl> {
        let url = match base {
            Some(base) => url::Url::parse(base).ok()?.join(input).ok()?,
            None => url::Url::parse(input).ok()?,
        };
        let credentials = !url.username().is_empty() || url.password().is_some();
        Some(assemble(url.to_string(), url.scheme(), url.host_str().unwrap_or(""), url.port(), credentials))
    }
}

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::{assemble, WebUrl};
    use js_sys::{Array, Function, Reflect};
    use wasm_bindgen::{JsCast, JsValue};

    /// `new URL(input, base)`; `None` when it throws (not a URL).
    pub fn parse(input: &str, base: Option<&str>) -> Option<WebUrl> {
        let ctor: Function = Reflect::get(&js_sys::global(), &"URL".into()).ok()?.dyn_into().ok()?;
        let args = match base {
            Some(b) => Array::of2(&JsValue::from_str(input), &JsValue::from_str(b)),
            None => Array::of1(&JsValue::from_str(input)),
        };
        let url = Reflect::construct(&ctor, &args).ok()?;
        let get = |k: &str| Reflect::get(&url, &k.into()).ok().and_then(|v| v.as_string()).unwrap_or_default();
        let port = get("port").parse().ok();
        let credentials = !get("username").is_empty() || !get("password").is_empty();
        Some(assemble(get("href"), &get("protocol"), &get("hostname"), port, credentials))
    }
}

/// `s` as a query value (`application/x-www-form-urlencoded`: unreserved
/// bytes as they are, a space as `+`, the rest percent-encoded).
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b as char),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_joins_as_the_standard_says() {
        let u = WebUrl::parse("HTTP://User:pw@Example.COM:8080/a/b?c#d").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.clone(), u.port, u.credentials),
            ("http", Some(Host::Domain("example.com".into())), Some(8080), true)
        );
        let u = WebUrl::parse("http://0x7f.1/").unwrap();
        assert_eq!(
            (u.host, u.port, u.href.as_str()),
            (Some(Host::V4(Ipv4Addr::LOCALHOST)), Some(80), "http://127.0.0.1/")
        );
        let u = WebUrl::parse("https://[::ffff:127.0.0.1]/").unwrap();
        assert_eq!(u.host_text(), "[::ffff:7f00:1]");
        let page = WebUrl::parse("https://example.com/docs/page.html").unwrap();
        assert_eq!(page.join("../x?y=1").unwrap().href, "https://example.com/x?y=1");
        assert_eq!(page.join("//other.test/p").unwrap().href, "https://other.test/p");
        assert_eq!(page.join("http://10.0.0.1/").unwrap().host_text(), "10.0.0.1");
        assert!(WebUrl::parse("not a url").is_none());
        assert_eq!(WebUrl::parse("file:///etc/passwd").unwrap().host, None);
        assert_eq!(form_encode("rust wasm & café"), "rust+wasm+%26+caf%C3%A9");
    }
}
