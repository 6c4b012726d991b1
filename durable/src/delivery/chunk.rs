//! A reply cut into the pieces a channel takes (Telegram 4096, Discord 2000
//! characters), and Telegram's pieces rendered to the small HTML subset it
//! accepts.
//!
//! The HTML is conservative (bold, inline code, code blocks, links) and every
//! other character is escaped, so the markup almost never fails; when Telegram
//! still rejects it, the outbox sends the piece again as plain text.

use crate::inbound::ChannelKind;
use crate::ports::OutgoingChunk;

/// Telegram's limit, counted in UTF-16 code units (what Telegram counts).
pub const TELEGRAM_MAX_CHARS: usize = 4096;
/// Discord's message length limit.
pub const DISCORD_MAX_CHARS: usize = 2000;

/// A relay between agents' sessions (not a chat platform) is not cut.
pub const RELAY_MAX_CHARS: usize = 200_000;

/// The longest piece `channel` takes.
pub fn limit_for(channel: ChannelKind) -> usize {
    match channel {
        ChannelKind::Discord => DISCORD_MAX_CHARS,
        // A relay to another agent's session is one message, whole.
        ChannelKind::Relay => RELAY_MAX_CHARS,
        _ => TELEGRAM_MAX_CHARS,
    }
}

/// Whether `channel` gets its pieces as HTML (Telegram; Discord renders the
/// model's Markdown itself).
pub fn uses_html(channel: ChannelKind) -> bool {
    channel == ChannelKind::Telegram
}

/// The pieces of `text` for `channel`, in order.
pub fn pieces(channel: ChannelKind, text: &str) -> Vec<String> {
    split_message(text, limit_for(channel))
}

/// The piece as the adapter sends it: as HTML when `markup`.
pub fn render(text: &str, markup: bool, first: bool, opens: bool) -> OutgoingChunk {
    OutgoingChunk { text: text.to_owned(), html: markup.then(|| to_telegram_html(text)), first, opens }
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Splits `text` into chunks of at most `limit` UTF-16 units, preferring
/// paragraph breaks, then line breaks, then spaces; never inside a character.
pub fn split_message(text: &str, limit: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text.trim();
    while utf16_len(rest) > limit {
        // Byte index of the furthest char boundary within the limit.
        let mut units = 0;
        let mut hard = 0;
        for (i, c) in rest.char_indices() {
            units += c.len_utf16();
            if units > limit {
                break;
            }
            hard = i + c.len_utf8();
        }
        let window = &rest[..hard];
        let cut =
            ["\n\n", "\n", " "].iter().find_map(|sep| window.rfind(sep).filter(|&i| i > hard / 3)).unwrap_or(hard);
        let (head, tail) = rest.split_at(cut.max(1).min(rest.len()));
        if !head.trim().is_empty() {
            chunks.push(head.trim_end().to_owned());
        }
        rest = tail.trim_start();
    }
    if !rest.is_empty() {
        chunks.push(rest.to_owned());
    }
    chunks
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
}

/// Markdown (as models write it) → Telegram HTML.
pub fn to_telegram_html(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + 32);
    let mut in_code = false;
    // Odd segments are fenced code when the fence is closed.
    let fence_count = md.matches("```").count();
    for (seen, part) in md.split("```").enumerate() {
        if in_code && seen <= fence_count - (fence_count % 2) {
            // Drop a language tag on the first line.
            let body = match part.split_once('\n') {
                Some((first, rest)) if !first.contains(' ') && !first.is_empty() => rest,
                _ => part.strip_prefix('\n').unwrap_or(part),
            };
            out.push_str("<pre><code>");
            escape(body.trim_end_matches('\n'), &mut out);
            out.push_str("</code></pre>");
        } else {
            if in_code {
                out.push_str("```"); // unclosed fence: keep it literally
            }
            inline(part, &mut out);
        }
        in_code = !in_code;
    }
    out
}

fn inline(s: &str, out: &mut String) {
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            if let Some(end) = r.find('`') {
                out.push_str("<code>");
                escape(&r[..end], out);
                out.push_str("</code>");
                rest = &r[end + 1..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix("**") {
            if let Some(end) = r.find("**").filter(|&e| e > 0 && !r[..e].contains('\n')) {
                out.push_str("<b>");
                escape(&r[..end], out);
                out.push_str("</b>");
                rest = &r[end + 2..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix('[') {
            if let Some((label, after)) = r.split_once("](") {
                if let Some((url, tail)) = after.split_once(')') {
                    if !label.contains('\n') && (url.starts_with("https://") || url.starts_with("http://")) {
                        out.push_str("<a href=\"");
                        escape(url, out);
                        out.push_str("\">");
                        escape(label, out);
                        out.push_str("</a>");
                        rest = tail;
                        continue;
                    }
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        let n = c.len_utf8();
        escape(&rest[..n], out);
        rest = &rest[n..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_boundaries_within_the_limit() {
        let para = "word ".repeat(300); // 1500 chars
        let text = format!("{para}\n\n{para}\n\n{para}");
        let chunks = split_message(&text, 4096);
        assert_eq!(chunks.len(), 2);
        assert!(chunks.iter().all(|c| utf16_len(c) <= 4096));
        assert_eq!(chunks.join(" ").split_whitespace().count(), 900);
        let long = "x".repeat(10_000);
        let chunks = split_message(&long, 4096);
        assert_eq!(chunks.iter().map(|c| c.len()).collect::<Vec<_>>(), [4096, 4096, 1808]);
        let emoji = "😀".repeat(3000); // 2 UTF-16 units each
        assert!(split_message(&emoji, 4096).iter().all(|c| utf16_len(c) <= 4096));
        assert!(split_message("   ", 4096).is_empty());
    }

    #[test]
    fn each_channel_gets_its_limit_and_only_telegram_html() {
        let text = format!("{}\n\n{}", "a".repeat(1500), "b".repeat(1500));
        assert_eq!(pieces(ChannelKind::Telegram, &text).len(), 1);
        assert_eq!(pieces(ChannelKind::Discord, &text).len(), 2);
        assert!(uses_html(ChannelKind::Telegram) && !uses_html(ChannelKind::Discord));
        let c = render("a < **b**", true, true, false);
        assert_eq!(c.html.as_deref(), Some("a &lt; <b>b</b>"));
        assert_eq!(render("x", false, false, false).html, None);
    }

    #[test]
    fn html_is_escaped_and_simple() {
        assert_eq!(to_telegram_html("a < b & **c**"), "a &lt; b &amp; <b>c</b>");
        assert_eq!(to_telegram_html("use `x<y`"), "use <code>x&lt;y</code>");
        assert_eq!(to_telegram_html("```rust\nfn a() {}\n```"), "<pre><code>fn a() {}</code></pre>");
        assert_eq!(
            to_telegram_html("[site](https://e.com/?a=1&b=2)"),
            "<a href=\"https://e.com/?a=1&amp;b=2\">site</a>"
        );
        assert_eq!(to_telegram_html("open ``` fence"), "open ``` fence");
        assert_eq!(to_telegram_html("snake_case and * star"), "snake_case and * star");
    }
}
