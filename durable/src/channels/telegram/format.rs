//! Telegram's formatting: its length limit, and the model's Markdown as the
//! small HTML subset Telegram accepts (`parse_mode: "HTML"`).
//!
//! The HTML is conservative (bold, inline code, code blocks, links) and every
//! other character is escaped, so the markup almost never fails; when Telegram
//! still rejects it, the outbox sends the piece again as plain text.

use crate::channels::shared::markdown::{read, Reading, Span};
use crate::ports::OutgoingChunk;

/// Telegram's limit, counted in UTF-16 code units (what Telegram counts).
pub const MAX_CHARS: usize = 4096;

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

/// Markdown (as models write it) → Telegram HTML: the conservative reading
/// (code, `**bold**`, links), everything else as escaped text.
pub fn to_html(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + 32);
    for span in read(md, Reading::default()) {
        match span {
            Span::Text(t) => escape(t, &mut out),
            Span::Code(c) => {
                out.push_str("<code>");
                escape(c, &mut out);
                out.push_str("</code>");
            }
            Span::Block { tag, body } => {
                // Without a language tag, the fence's own line break goes too.
                let body = if tag.is_some() { body } else { body.strip_prefix('\n').unwrap_or(body) };
                out.push_str("<pre><code>");
                escape(body.trim_end_matches('\n'), &mut out);
                out.push_str("</code></pre>");
            }
            Span::Open(_) => out.push_str("<b>"),
            Span::Close(_) => out.push_str("</b>"),
            Span::Link { label, url } => {
                out.push_str("<a href=\"");
                escape(url, &mut out);
                out.push_str("\">");
                escape(label, &mut out);
                out.push_str("</a>");
            }
            // Not in the conservative reading.
            Span::Item { .. } => {}
        }
    }
    out
}

/// A piece as Telegram's client sends it: in HTML when `markup` (a piece
/// whose HTML was refused goes again without).
pub fn chunk(text: &str, markup: bool, first: bool, opens: bool) -> OutgoingChunk {
    OutgoingChunk { text: text.to_owned(), formatted: markup.then(|| to_html(text)), first, opens }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped_and_simple() {
        assert_eq!(to_html("a < b & **c**"), "a &lt; b &amp; <b>c</b>");
        assert_eq!(to_html("use `x<y`"), "use <code>x&lt;y</code>");
        assert_eq!(to_html("```rust\nfn a() {}\n```"), "<pre><code>fn a() {}</code></pre>");
        assert_eq!(to_html("[site](https://e.com/?a=1&b=2)"), "<a href=\"https://e.com/?a=1&amp;b=2\">site</a>");
        assert_eq!(to_html("open ``` fence"), "open ``` fence");
        assert_eq!(to_html("snake_case and * star"), "snake_case and * star");
    }
}
