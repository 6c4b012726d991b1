//! Slack's formatting: its length limit, the model's Markdown as Slack's
//! `mrkdwn` (api.slack.com/reference/surfaces/formatting), and Slack's
//! message text read back into plain words.
//!
//! `mrkdwn` differs from Markdown where models write most: bold is
//! `*bold*`, links are `<url|label>`, there are no headings, and `&`, `<`,
//! `>` must be escaped everywhere. Code spans and blocks keep their text.

use crate::channels::shared::markdown::{read, Reading, Span, Style};

/// Slack advises at most 4,000 characters per message (and truncates past
/// 40,000): replies are cut at 4,000.
pub const MAX_CHARS: usize = 4000;

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
}

/// Markdown (as models write it) → Slack `mrkdwn`.
pub fn to_mrkdwn(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + 16);
    for span in read(md, Reading { rich: true, items: true }) {
        match span {
            Span::Text(t) => escape(t, &mut out),
            Span::Code(c) => {
                out.push('`');
                escape(c, &mut out);
                out.push('`');
            }
            // The language tag goes (Slack would show it as code).
            Span::Block { body, .. } => {
                out.push_str("```");
                escape(body, &mut out);
                out.push_str("```");
            }
            Span::Open(Style::Strike) | Span::Close(Style::Strike) => out.push('~'),
            Span::Open(_) | Span::Close(_) => out.push('*'),
            Span::Link { label, url } => {
                out.push('<');
                escape(url, &mut out);
                out.push('|');
                escape(label, &mut out);
                out.push('>');
            }
            Span::Item { indent } => {
                out.push_str(indent);
                out.push_str("• ");
            }
        }
    }
    out
}

/// A message's text as the words people wrote: Slack's `<@U123>`,
/// `<#C123|general>`, `<!here>` and `<https://…|label>` made readable, its
/// `&amp;`, `&lt;`, `&gt;` decoded.
pub fn to_plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('>') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let inner = &after[..close];
        let (target, label) = match inner.split_once('|') {
            Some((t, l)) => (t, Some(l)),
            None => (inner, None),
        };
        match (target.chars().next(), label) {
            (Some('@'), Some(l)) => out.push_str(&format!("@{l}")),
            (Some('@'), None) => out.push_str(target),
            (Some('#'), Some(l)) => out.push_str(&format!("#{l}")),
            (Some('#'), None) => out.push_str(target),
            (Some('!'), _) => out.push_str(&format!("@{}", target[1..].split('^').next().unwrap_or(""))),
            (_, Some(l)) if l != target => out.push_str(&format!("{l} ({target})")),
            _ => out.push_str(target),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_mrkdwn() {
        assert_eq!(to_mrkdwn("a < b & **c**"), "a &lt; b &amp; *c*");
        assert_eq!(to_mrkdwn("see [the docs](https://e.com/?a=1&b=2)"), "see <https://e.com/?a=1&amp;b=2|the docs>");
        assert_eq!(to_mrkdwn("## Plan\n- one\n- **two**"), "*Plan*\n• one\n• *two*");
        assert_eq!(to_mrkdwn("~~old~~ and `x<y`"), "~old~ and `x&lt;y`");
        assert_eq!(to_mrkdwn("```rust\nfn a() -> B<C> {}\n```"), "```fn a() -&gt; B&lt;C&gt; {}\n```");
        assert_eq!(to_mrkdwn("snake_case * star"), "snake_case * star");
        assert_eq!(to_mrkdwn("an open ``` fence"), "an open ``` fence");
    }

    #[test]
    fn slack_text_reads_as_words() {
        assert_eq!(
            to_plain("<@U0LAN0Z89> is it everything a river should be?"),
            "@U0LAN0Z89 is it everything a river should be?"
        );
        assert_eq!(to_plain("in <#C024BE7LR|general>, <!here>"), "in #general, @here");
        assert_eq!(
            to_plain("<https://example.com|the site> and <https://a.io>"),
            "the site (https://example.com) and https://a.io"
        );
        assert_eq!(to_plain("1 &lt; 2 &amp;&amp; 3 &gt; 2"), "1 < 2 && 3 > 2");
        assert_eq!(to_plain("a <unclosed"), "a <unclosed");
    }
}
