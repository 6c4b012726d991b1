//! WhatsApp's formatting (faq.whatsapp.com "how to format your messages"):
//! `*bold*`, `_italic_`, `~strikethrough~`, `` `inline code` `` and
//! ```` ``` ```` blocks; no links with labels and no headings. The model's
//! Markdown is brought to that; nothing needs escaping.

use crate::channels::shared::markdown::{read, Reading, Span, Style};

/// WhatsApp's limit on a text message's body.
pub const MAX_CHARS: usize = 4096;

/// Markdown (as models write it) → WhatsApp's formatting.
pub fn to_whatsapp(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    for span in read(md, Reading { rich: true, items: false }) {
        match span {
            Span::Text(t) => out.push_str(t),
            Span::Code(c) => {
                out.push('`');
                out.push_str(c);
                out.push('`');
            }
            Span::Block { body, .. } => {
                out.push_str("```");
                out.push_str(body);
                out.push_str("```");
            }
            Span::Open(Style::Strike) | Span::Close(Style::Strike) => out.push('~'),
            Span::Open(_) | Span::Close(_) => out.push('*'),
            // No labelled links: the label, then the address.
            Span::Link { label, url } if label == url => out.push_str(url),
            Span::Link { label, url } => {
                out.push_str(label);
                out.push_str(" (");
                out.push_str(url);
                out.push(')');
            }
            Span::Item { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_whatsapps_formatting() {
        assert_eq!(
            to_whatsapp("**Done**, see [the map](https://maps.example/x)"),
            "*Done*, see the map (https://maps.example/x)"
        );
        assert_eq!(to_whatsapp("# Plan\n~~old~~ `a<b` & more"), "*Plan*\n~old~ `a<b` & more");
        assert_eq!(to_whatsapp("```rust\nlet x = 1;\n```"), "```let x = 1;\n```");
    }
}
