//! Telegram's formatting: its length limit, and the model's Markdown as the
//! small HTML subset Telegram accepts (`parse_mode: "HTML"`).
//!
//! The HTML is conservative (bold, inline code, code blocks, links) and every
//! other character is escaped, so the markup almost never fails; when Telegram
//! still rejects it, the outbox sends the piece again as plain text.

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

/// Markdown (as models write it) → Telegram HTML.
pub fn to_html(md: &str) -> String {
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
    fn html_is_escaped_and_simple() {
        assert_eq!(to_html("a < b & **c**"), "a &lt; b &amp; <b>c</b>");
        assert_eq!(to_html("use `x<y`"), "use <code>x&lt;y</code>");
        assert_eq!(to_html("```rust\nfn a() {}\n```"), "<pre><code>fn a() {}</code></pre>");
        assert_eq!(to_html("[site](https://e.com/?a=1&b=2)"), "<a href=\"https://e.com/?a=1&amp;b=2\">site</a>");
        assert_eq!(to_html("open ``` fence"), "open ``` fence");
        assert_eq!(to_html("snake_case and * star"), "snake_case and * star");
    }
}
