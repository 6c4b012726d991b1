//! Which URLs `web_fetch` may fetch: http(s) only, and never the machine
//! itself, a private network, a link-local address or a cloud metadata
//! service, whether named directly, as an IP literal in any notation, or as
//! the target of a redirect (the caller checks every hop here).
//!
//! URLs are parsed by the WHATWG rules ([`super::weburl`]: in the Worker the
//! runtime's own parser, the one `fetch` uses), so the host checked is the
//! host fetched: `http://2130706433/`, `http://0x7f.1/`, `http://0177.0.0.1/`
//! all parse to 127.0.0.1, and `[::ffff:127.0.0.1]` to an IPv6 address that
//! maps it.
//!
//! A hostname is not resolved here (a Worker has no DNS lookup): names that
//! only ever mean something local (`localhost`, `*.internal`, `*.local`…) are
//! refused by name, and in production a Worker's `fetch` cannot reach private
//! networks at all. `WEB_FETCH_ALLOW_HOSTS` lets tests fetch from 127.0.0.1.

use super::weburl::{Host, WebUrl};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Why a URL is not fetched (said to the model as it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{0:?} is not a URL")]
    NotAUrl(String),
    #[error("only http and https URLs can be fetched, not {0}:")]
    Scheme(String),
    #[error("{0} is a local name: web_fetch does not reach the machine it runs on or a private network")]
    LocalName(String),
    #[error("{0} is a {1} address: web_fetch does not reach it")]
    Address(String, &'static str),
    #[error("URLs with a user name or password are not fetched")]
    Credentials,
}

/// Checks `raw` and returns it parsed. `allow` holds `host` or `host:port`
/// entries (lowercase) exempt from the address rules (tests only).
pub fn check(raw: &str, allow: &[String]) -> Result<WebUrl, Refusal> {
    let url = WebUrl::parse(raw.trim()).ok_or_else(|| Refusal::NotAUrl(raw.chars().take(200).collect()))?;
    check_url(url, allow)
}

/// [`check`] for a URL already parsed (a redirect's target, joined to the page).
pub fn check_url(url: WebUrl, allow: &[String]) -> Result<WebUrl, Refusal> {
    if !matches!(url.scheme.as_str(), "http" | "https") {
        return Err(Refusal::Scheme(url.scheme.clone()));
    }
    if url.credentials {
        return Err(Refusal::Credentials);
    }
    let Some(host) = url.host.clone() else { return Err(Refusal::NotAUrl(url.href.clone())) };
    let host_text = url.host_text();
    let port = url.port.unwrap_or(0);
    if allow.iter().any(|a| *a == host_text || *a == format!("{host_text}:{port}")) {
        return Ok(url);
    }
    match host {
        Host::Domain(_) if is_local_name(&host_text) => Err(Refusal::LocalName(host_text)),
        Host::Domain(_) => Ok(url),
        Host::V4(ip) => match v4_kind(ip) {
            Some(kind) => Err(Refusal::Address(host_text, kind)),
            None => Ok(url),
        },
        Host::V6(ip) => match v6_kind(ip) {
            Some(kind) => Err(Refusal::Address(host_text, kind)),
            None => Ok(url),
        },
    }
}

/// Names that only mean something on the local machine or network, and the
/// cloud metadata services' names.
fn is_local_name(host: &str) -> bool {
    const EXACT: [&str; 4] = ["localhost", "metadata", "instance-data", "metadata.google.internal"];
    const SUFFIXES: [&str; 6] = [".localhost", ".local", ".internal", ".lan", ".home.arpa", ".intranet"];
    EXACT.contains(&host) || SUFFIXES.iter().any(|s| host.ends_with(s)) || !host.contains('.')
}

/// What kind of non-public IPv4 address `ip` is, if it is one.
pub fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (127, ..) => "loopback",
        (0, ..) => "unspecified (this host)",
        (10, ..) | (192, 168, _) => "private",
        (172, 16..=31, _) => "private",
        (169, 254, _) => "link-local (cloud metadata)",
        (100, 64..=127, _) => "carrier-grade NAT",
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "reserved",
        (198, 18..=19, _) => "benchmarking",
        (224..=239, ..) => "multicast",
        (240..=255, ..) => "reserved",
        _ => return None,
    })
}

/// What kind of non-public IPv6 address `ip` is, if it is one; an address
/// that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is judged by it.
pub fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if ip.is_loopback() {
        return Some("loopback");
    }
    if ip.is_unspecified() {
        return Some("unspecified (this host)");
    }
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible)
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => return v4_kind(embedded(hi, lo)),
        // 64:ff9b::a.b.c.d (NAT64)
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => return v4_kind(embedded(hi, lo)),
        // 2002:aabb:ccdd::/48 (6to4)
        [0x2002, hi, lo, ..] => return v4_kind(embedded(hi, lo)),
        _ => {}
    }
    Some(match s[0] {
        0xfc00..=0xfdff => "private (unique local)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "site-local",
        0xff00..=0xffff => "multicast",
        // Teredo tunnels carry an (obfuscated) IPv4 address of their own.
        0x2001 if s[1] == 0 => "Teredo tunnel",
        0x2001 if s[1] == 0xdb8 => "documentation",
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(raw: &str) -> Refusal {
        check(raw, &[]).expect_err(raw)
    }

    #[test]
    fn only_http_and_https() {
        for raw in [
            "file:///etc/passwd",
            "ftp://example.com/x",
            "gopher://example.com",
            "javascript:alert(1)",
            "data:text/html,hi",
        ] {
            assert!(matches!(refused(raw), Refusal::Scheme(_)), "{raw}");
        }
        assert!(matches!(refused("not a url"), Refusal::NotAUrl(_)));
        assert!(matches!(refused("https://user:pw@example.com/"), Refusal::Credentials));
        assert_eq!(check("https://example.com/a?b#c", &[]).unwrap().as_str(), "https://example.com/a?b#c");
        assert!(check("http://93.184.215.14/", &[]).is_ok(), "a public address");
        assert!(check("http://[2606:4700::1111]/", &[]).is_ok(), "a public IPv6 address");
    }

    #[test]
    fn loopback_in_every_notation() {
        for raw in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.0.0.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127.000.000.001/",
            "http://[::1]/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::127.0.0.1]/",
            "http://[2002:7f00:1::]/",
            "http://0/",
            "http://0.0.0.0:8080/",
            "http://[::]/",
            "HTTP://LOCALHOST/",
            "http://localhost./",
            "http://api.localhost/",
        ] {
            let r = refused(raw);
            assert!(matches!(r, Refusal::Address(..) | Refusal::LocalName(_)), "{raw}: {r:?}");
        }
    }

    #[test]
    fn private_link_local_and_metadata() {
        for (raw, kind) in [
            ("http://10.1.2.3/", "private"),
            ("http://172.16.0.1/", "private"),
            ("http://172.31.255.255/", "private"),
            ("http://192.168.1.1/", "private"),
            ("http://169.254.169.254/latest/meta-data/", "link-local (cloud metadata)"),
            ("http://2852039166/", "link-local (cloud metadata)"),
            ("http://100.64.0.1/", "carrier-grade NAT"),
            ("http://[fd00:ec2::254]/", "private (unique local)"),
            ("http://[fe80::1]/", "link-local"),
            ("http://[::ffff:10.0.0.1]/", "private"),
            ("http://[::ffff:169.254.169.254]/", "link-local (cloud metadata)"),
            ("http://224.0.0.1/", "multicast"),
            ("http://255.255.255.255/", "reserved"),
        ] {
            match refused(raw) {
                Refusal::Address(_, k) => assert_eq!(k, kind, "{raw}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
        for raw in [
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://metadata/",
            "http://printer.local/",
            "http://intranet/",
        ] {
            assert!(matches!(refused(raw), Refusal::LocalName(_)), "{raw}");
        }
        assert!(check("http://172.32.0.1/", &[]).is_ok(), "just outside 172.16/12");
    }

    #[test]
    fn the_test_allowance_names_a_host_and_port() {
        let allow = vec!["127.0.0.1:8123".to_owned()];
        assert!(check("http://127.0.0.1:8123/page", &allow).is_ok());
        assert!(check("http://2130706433:8123/page", &allow).is_ok(), "the same address, written otherwise");
        assert!(check("http://127.0.0.1:8124/", &allow).is_err(), "another port is not allowed");
        assert!(check("http://127.0.0.1/", &allow).is_err());
        assert!(check("http://localhost:8123/", &allow).is_err(), "names are matched as written");
        assert!(check("http://127.0.0.1/", &["127.0.0.1".to_owned()]).is_ok());
    }
}
