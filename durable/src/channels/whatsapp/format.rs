//! WhatsApp's formatting (faq.whatsapp.com "how to format your messages"):
//! `*bold*`, `_italic_`, `~strikethrough~`, `` `inline code` `` and
//! ```` ``` ```` blocks; no links with labels and no headings. The model's
//! Markdown is brought to that; nothing needs escaping.

/// WhatsApp's limit on a text message's body.
pub const MAX_CHARS: usize = 4096;

/// Markdown (as models write it) → WhatsApp's formatting.
pub fn to_whatsapp(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let fences = md.matches("```").count();
    for (i, part) in md.split("```").enumerate() {
        let in_code = i % 2 == 1 && (fences.is_multiple_of(2) || i < fences);
        if i > 0 {
            out.push_str("```");
        }
        if in_code {
            let body = match part.split_once('\n') {
                Some((first, rest)) if !first.is_empty() && !first.contains(' ') => rest,
                _ => part,
            };
            out.push_str(body);
        } else {
            for (j, line) in part.split('\n').enumerate() {
                if j > 0 {
                    out.push('\n');
                }
                let trimmed = line.trim_start();
                let heading = trimmed.trim_start_matches('#');
                if trimmed.starts_with('#') && heading.starts_with(' ') && !heading.trim().is_empty() {
                    out.push('*');
                    inline(heading.trim(), &mut out);
                    out.push('*');
                } else {
                    inline(line, &mut out);
                }
            }
        }
    }
    out
}

fn inline(s: &str, out: &mut String) {
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('`') {
            if let Some(end) = r.find('`') {
                out.push('`');
                out.push_str(&r[..end]);
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
                        if label == url {
                            out.push_str(url);
                        } else {
                            out.push_str(&format!("{label} ({url})"));
                        }
                        rest = tail;
                        continue;
                    }
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
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
