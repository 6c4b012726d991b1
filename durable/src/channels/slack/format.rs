//! Slack's formatting: its length limit, the model's Markdown as Slack's
//! `mrkdwn` (api.slack.com/reference/surfaces/formatting), and Slack's
//! message text read back into plain words.
//!
//! `mrkdwn` differs from Markdown where models write most: bold is
//! `*bold*`, links are `<url|label>`, there are no headings, and `&`, `<`,
//! `>` must be escaped everywhere. Code spans and blocks keep their text.

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
    let fences = md.matches("```").count();
    for (i, part) in md.split("```").enumerate() {
        // Odd parts are code, but not the text after a fence never closed.
        let in_code = i % 2 == 1 && (fences.is_multiple_of(2) || i < fences);
        if i > 0 {
            out.push_str("```");
        }
        if in_code {
            // Drop a language tag on the first line (Slack shows it as code).
            let body = match part.split_once('\n') {
                Some((first, rest)) if !first.is_empty() && !first.contains(' ') => rest,
                _ => part,
            };
            escape(body, &mut out);
        } else {
            lines(part, &mut out);
        }
    }
    out
}

fn lines(text: &str, out: &mut String) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let heading = trimmed.trim_start_matches('#');
        if trimmed.starts_with('#') && heading.starts_with(' ') && !heading.trim().is_empty() {
            out.push('*');
            inline(heading.trim(), out);
            out.push('*');
        } else if let Some(item) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str("• ");
            inline(item, out);
        } else {
            inline(line, out);
        }
    }
}

fn inline(s: &str, out: &mut String) {
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            if let Some(end) = r.find('`') {
                out.push('`');
                escape(&r[..end], out);
                out.push('`');
                rest = &r[end + 1..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix("**").or_else(|| rest.strip_prefix("__")) {
            let marker = &rest[..2];
            if let Some(end) = r.find(marker).filter(|&e| e > 0) {
                out.push('*');
                inline(&r[..end], out);
                out.push('*');
                rest = &r[end + 2..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix("~~") {
            if let Some(end) = r.find("~~").filter(|&e| e > 0) {
                out.push('~');
                inline(&r[..end], out);
                out.push('~');
                rest = &r[end + 2..];
                continue;
            }
        }
        if let Some(r) = rest.strip_prefix('[') {
            if let Some((label, after)) = r.split_once("](") {
                if let Some((url, tail)) = after.split_once(')') {
                    if !label.contains('\n') && (url.starts_with("https://") || url.starts_with("http://")) {
                        out.push('<');
                        escape(url, out);
                        out.push('|');
                        escape(label, out);
                        out.push('>');
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
