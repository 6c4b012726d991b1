//! The web console's login, decided without the platform (issue 18).
//!
//! `POST /console/login` with `ADMIN_TOKEN` sets a cookie that stands for the
//! owner on `/api/...`, so the browser never keeps the token itself. The
//! cookie is not the token: it is `v1.{expiry}.{mac}`, `mac` the
//! HMAC-SHA256 of `hearth-console-v1.{expiry}` keyed with `ADMIN_TOKEN`.
//! Nothing is stored: changing `ADMIN_TOKEN` ends every console session, and
//! one ends by itself at its expiry ([`SESSION_SECONDS`]).
//!
//! A cookie is sent by the browser whoever made the page, so a request that
//! changes something and is authenticated by the cookie alone must show it
//! came from the console ([`check_write`]): an `Origin` equal to the
//! Worker's own and the header `X-Hearth-Console: 1` (which a cross-site form
//! cannot set, and a cross-site `fetch` cannot send without a CORS preflight
//! Hearth never grants). `SameSite=Strict` keeps the cookie off cross-site
//! requests in the first place; the check is the second lock.

use sha2::{Digest, Sha256};

/// The cookie's name.
pub const COOKIE_NAME: &str = "hearth_console";
/// How long a login lasts (12 hours).
pub const SESSION_SECONDS: i64 = 12 * 3600;
/// The header a console write carries.
pub const CONSOLE_HEADER: &str = "x-hearth-console";
const VERSION: &str = "v1";

/// HMAC-SHA256 (RFC 2104), on the `sha2` already in the upload.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut block = [0u8; BLOCK];
    if key.len() > BLOCK {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    outer.into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn mac(secret: &str, expiry: i64) -> String {
    hex(&hmac_sha256(secret.as_bytes(), format!("hearth-console-{VERSION}.{expiry}").as_bytes()))
}

/// The cookie value for a login at `now_secs` (Unix seconds).
pub fn session_value(secret: &str, now_secs: i64) -> String {
    let expiry = now_secs + SESSION_SECONDS;
    format!("{VERSION}.{expiry}.{}", mac(secret, expiry))
}

/// Constant time in the length of `expected`.
fn same(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(0);
    }
    diff == 0
}

/// Whether `value` is a cookie this `secret` made that has not expired.
pub fn session_valid(value: &str, secret: &str, now_secs: i64) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut parts = value.splitn(3, '.');
    let (Some(VERSION), Some(expiry), Some(given)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(expiry) = expiry.parse::<i64>() else { return false };
    // The MAC is checked whatever the expiry says, so timing tells nothing.
    let ok = same(given.as_bytes(), mac(secret, expiry).as_bytes());
    ok && now_secs < expiry && expiry <= now_secs + SESSION_SECONDS
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim().trim_matches('"'))
    })
}

/// `Set-Cookie` for a login (`Some(value)`) or a logout (`None`). `Secure`
/// always: browsers take Secure cookies from `http://localhost` and
/// `http://127.0.0.1` too (they are secure contexts), so `npm run dev` works.
pub fn set_cookie(value: Option<&str>) -> String {
    let (value, age) = match value {
        Some(v) => (v, SESSION_SECONDS),
        None => ("", 0),
    };
    format!("{COOKIE_NAME}={value}; Path=/; Max-Age={age}; HttpOnly; Secure; SameSite=Strict")
}

/// The origin (`scheme://host[:port]`) of an absolute URL.
pub fn origin_of(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")? + 3;
    let rest = &url[scheme_end..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    Some(&url[..scheme_end + end])
}

/// Why a cookie-authenticated write is refused (a 403 naming it), if it is.
/// `url` is the request's URL, `host` its `Host` header (a dev server may
/// rewrite one of them; the browser's `Origin` must match either).
pub fn check_write(
    origin: Option<&str>,
    console_header: Option<&str>,
    url: &str,
    host: Option<&str>,
) -> Result<(), String> {
    let Some(origin) = origin.filter(|o| !o.is_empty() && *o != "null") else {
        return Err("a console write needs an Origin header (the console's own page sends one)".into());
    };
    let own = origin_of(url);
    let via_host = host.and_then(|h| origin_of(origin).filter(|o| o.split_once("://").is_some_and(|(_, x)| x == h)));
    if own != Some(origin) && via_host.is_none() {
        return Err(format!("Origin {origin:?} is not this Worker's: console writes are same-origin only"));
    }
    if console_header.map(str::trim) != Some("1") {
        return Err("a console write needs the header X-Hearth-Console: 1".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231 test cases 1 and 6 (a key longer than the block).
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(hex(&mac), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
        let mac = hmac_sha256(&[0xaa; 131], b"Test Using Larger Than Block-Size Key - Hash Key First");
        assert_eq!(hex(&mac), "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    }

    #[test]
    fn a_session_is_valid_for_its_secret_until_it_expires() {
        let v = session_value("s3cret-token", 1_000);
        assert!(v.starts_with("v1."));
        assert!(!v.contains("s3cret"), "the cookie is not the token");
        assert!(session_valid(&v, "s3cret-token", 1_000));
        assert!(session_valid(&v, "s3cret-token", 1_000 + SESSION_SECONDS - 1));
        assert!(!session_valid(&v, "s3cret-token", 1_000 + SESSION_SECONDS));
        assert!(!session_valid(&v, "another-token", 1_000), "a new ADMIN_TOKEN ends it");
        assert!(!session_valid(&v, "", 1_000));
    }

    #[test]
    fn a_forged_or_stretched_session_is_refused() {
        let v = session_value("k", 1_000);
        let later = v.replacen(&(1_000 + SESSION_SECONDS).to_string(), &(9_000_000).to_string(), 1);
        assert!(!session_valid(&later, "k", 1_000), "expiry edited: the MAC no longer matches");
        for bad in ["", "v1", "v1.x.y", "v2.5000.abc", "v1.5000.", "v1.50000.zz"] {
            assert!(!session_valid(bad, "k", 1_000), "{bad:?}");
        }
    }

    #[test]
    fn cookies_are_read_from_the_header() {
        let h = "a=1; hearth_console=v1.5.ab ; other=x";
        assert_eq!(cookie(h, COOKIE_NAME), Some("v1.5.ab"));
        assert_eq!(cookie("hearth_consolex=1", COOKIE_NAME), None);
        assert_eq!(cookie("", COOKIE_NAME), None);
    }

    #[test]
    fn the_cookie_is_httponly_secure_and_strict() {
        let c = set_cookie(Some("v1.1.ab"));
        for part in ["hearth_console=v1.1.ab", "HttpOnly", "Secure", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
            assert!(c.contains(part), "{c} lacks {part}");
        }
        assert!(set_cookie(None).contains("Max-Age=0"));
    }

    #[test]
    fn writes_must_be_same_origin_and_carry_the_header() {
        let url = "https://hearth.example.workers.dev/api/agents/main/stream";
        let own = Some("https://hearth.example.workers.dev");
        assert_eq!(check_write(own, Some("1"), url, None), Ok(()));
        assert!(check_write(own, None, url, None).unwrap_err().contains("X-Hearth-Console"));
        assert!(check_write(None, Some("1"), url, None).unwrap_err().contains("Origin"));
        assert!(check_write(Some("null"), Some("1"), url, None).is_err());
        let evil = check_write(Some("https://evil.example"), Some("1"), url, None).unwrap_err();
        assert!(evil.contains("evil.example"), "{evil}");
        // A dev server that rewrote the URL: the Host header the browser sent still counts.
        let dev = "http://127.0.0.1:8787/api/x";
        assert_eq!(check_write(Some("http://localhost:8787"), Some("1"), dev, Some("localhost:8787")), Ok(()));
        assert!(check_write(Some("http://evil:8787"), Some("1"), dev, Some("localhost:8787")).is_err());
        assert_eq!(origin_of("http://a:1/b?c"), Some("http://a:1"));
        assert_eq!(origin_of("http://a"), Some("http://a"));
        assert_eq!(origin_of("nope"), None);
    }
}
