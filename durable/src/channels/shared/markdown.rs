//! The model's Markdown, read once into [`Span`]s that each platform's
//! formatter writes in its own markup.
//!
//! What is read is what models write and chats can show: fenced code
//! blocks, inline code, `**strong**` text and `[links](https://…)`; with
//! [`Reading::rich`], also headings, `__strong__`, `~~strike~~` and styles
//! inside styles, line by line; with [`Reading::items`], `- item` lines. A
//! construct that is not closed is text, and a fence never closed is text
//! from there on. The reader escapes nothing: each formatter escapes what
//! its markup needs.

/// What to read beyond the conservative core (code, `**strong**`, links).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// Headings, `__strong__`, `~~strike~~` and styles inside styles, read
    /// line by line. Without it, a text between fences is read whole (an
    /// inline code span may cross a line) and a style holds plain text.
    pub rich: bool,
    /// `- item` and `* item` lines as list items (only with `rich`).
    pub items: bool,
}

/// A style that opens and closes around spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Strong,
    Strike,
    /// A `# heading` line (its `#`s and surrounding spaces are not spans).
    Heading,
}

/// A piece of the text, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span<'a> {
    /// Text as written (a fence never closed is text too).
    Text(&'a str),
    /// An inline code span's text.
    Code(&'a str),
    /// A closed fenced block: its first line when that is a language tag
    /// (one word), and the rest (all of it when there is no tag).
    Block {
        tag: Option<&'a str>,
        body: &'a str,
    },
    Open(Style),
    Close(Style),
    /// A link to an `http(s)` URL.
    Link {
        label: &'a str,
        url: &'a str,
    },
    /// A list item starts, after this indent.
    Item {
        indent: &'a str,
    },
}

/// `md` as spans.
pub fn read(md: &str, how: Reading) -> Vec<Span<'_>> {
    let mut out = Vec::new();
    let fences = md.matches("```").count();
    for (i, part) in md.split("```").enumerate() {
        // Odd parts are code, but not the text after a fence never closed.
        let fenced = i % 2 == 1;
        if fenced && (fences.is_multiple_of(2) || i < fences) {
            let (tag, body) = match part.split_once('\n') {
                Some((first, rest)) if !first.is_empty() && !first.contains(' ') => (Some(first), rest),
                _ => (None, part),
            };
            out.push(Span::Block { tag, body });
            continue;
        }
        if fenced {
            out.push(Span::Text("```"));
        }
        if how.rich {
            lines(part, how, &mut out);
        } else {
            inline(part, how, &mut out);
        }
    }
    out
}

fn lines<'a>(text: &'a str, how: Reading, out: &mut Vec<Span<'a>>) {
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push(Span::Text("\n"));
        }
        let trimmed = line.trim_start();
        let heading = trimmed.trim_start_matches('#');
        if trimmed.starts_with('#') && heading.starts_with(' ') && !heading.trim().is_empty() {
            out.push(Span::Open(Style::Heading));
            inline(heading.trim(), how, out);
            out.push(Span::Close(Style::Heading));
        } else if let Some(item) =
            trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")).filter(|_| how.items)
        {
            out.push(Span::Item { indent: &line[..line.len() - trimmed.len()] });
            inline(item, how, out);
        } else {
            inline(line, how, out);
        }
    }
}

/// The end of a style opened by `marker` at the start of `r`: where the
/// same marker comes again, on the same line and not at once.
fn closing(r: &str, marker: &str) -> Option<usize> {
    r.find(marker).filter(|&e| e > 0 && !r[..e].contains('\n'))
}

/// A construct at the start of the rest of a text: its length and what it is.
fn construct(rest: &str, how: Reading) -> Option<(usize, Span<'_>, Option<Style>)> {
    if let Some(r) = rest.strip_prefix('`') {
        if let Some(end) = r.find('`') {
            return Some((end + 2, Span::Code(&r[..end]), None));
        }
    }
    let strong = rest.starts_with("**") || how.rich && rest.starts_with("__");
    let marker = if strong { Some((&rest[..2], Style::Strong)) } else { None };
    let marker = marker.or_else(|| (how.rich && rest.starts_with("~~")).then_some(("~~", Style::Strike)));
    if let Some((m, style)) = marker {
        let r = &rest[2..];
        if let Some(end) = closing(r, m) {
            return Some((end + 4, Span::Text(&r[..end]), Some(style)));
        }
    }
    link(rest).map(|(len, label, url)| (len, Span::Link { label, url }, None))
}

fn inline<'a>(s: &'a str, how: Reading, out: &mut Vec<Span<'a>>) {
    let mut plain = 0;
    let mut at = 0;
    while at < s.len() {
        let rest = &s[at..];
        let Some((len, span, style)) = construct(rest, how) else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        if plain < at {
            out.push(Span::Text(&s[plain..at]));
        }
        match (style, span) {
            (Some(style), Span::Text(inner)) => {
                out.push(Span::Open(style));
                if how.rich {
                    inline(inner, how, out);
                } else {
                    out.push(Span::Text(inner));
                }
                out.push(Span::Close(style));
            }
            (_, span) => out.push(span),
        }
        at += len;
        plain = at;
    }
    if plain < s.len() {
        out.push(Span::Text(&s[plain..]));
    }
}

/// `[label](http…)` at the start of `rest`: its length, label and URL.
fn link(rest: &str) -> Option<(usize, &str, &str)> {
    let r = rest.strip_prefix('[')?;
    let (label, after) = r.split_once("](")?;
    let (url, tail) = after.split_once(')')?;
    let ok = !label.contains('\n') && (url.starts_with("https://") || url.starts_with("http://"));
    ok.then_some((rest.len() - tail.len(), label, url))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: Reading = Reading { rich: false, items: false };
    const RICH: Reading = Reading { rich: true, items: true };

    #[test]
    fn the_core_reads_code_strong_and_links_and_leaves_the_rest_as_text() {
        use Span::*;
        assert_eq!(
            read("a **b** `c` [d](https://e.io) ~~f~~", CORE),
            [
                Text("a "),
                Open(Style::Strong),
                Text("b"),
                Close(Style::Strong),
                Text(" "),
                Code("c"),
                Text(" "),
                Link { label: "d", url: "https://e.io" },
                Text(" ~~f~~"),
            ]
        );
        // Inside a style, the core keeps plain text; an inline code span may cross a line.
        assert_eq!(read("**a `b`**", CORE)[1], Text("a `b`"));
        assert_eq!(read("`a\nb`", CORE), [Code("a\nb")]);
        // Not closed, not at once, across a line, not http: text.
        for s in ["**a", "****", "**a\nb**", "[a](ftp://x)", "[a\nb](https://x)"] {
            assert!(read(s, CORE).iter().all(|p| matches!(p, Text(_))), "{s}");
        }
    }

    #[test]
    fn fences_give_blocks_and_a_fence_never_closed_is_text() {
        use Span::*;
        assert_eq!(read("```rust\nfn a() {}\n```", CORE), [Block { tag: Some("rust"), body: "fn a() {}\n" }]);
        assert_eq!(read("```\nx\n```", CORE)[0], Block { tag: None, body: "\nx\n" });
        assert_eq!(read("```a b\nx```", CORE)[0], Block { tag: None, body: "a b\nx" });
        assert_eq!(read("open ``` fence", CORE), [Text("open "), Text("```"), Text(" fence")]);
    }

    #[test]
    fn a_rich_reading_adds_headings_items_strike_and_nesting() {
        use Span::*;
        assert_eq!(
            read("## Plan\n  - **a ~~b~~**", RICH),
            [
                Open(Style::Heading),
                Text("Plan"),
                Close(Style::Heading),
                Text("\n"),
                Item { indent: "  " },
                Open(Style::Strong),
                Text("a "),
                Open(Style::Strike),
                Text("b"),
                Close(Style::Strike),
                Close(Style::Strong),
            ]
        );
        assert_eq!(read("__x__", RICH)[1], Text("x"));
        assert_eq!(read("- x", Reading { items: false, ..RICH }), [Text("- x")]);
        assert_eq!(read("#nope", RICH), [Text("#nope")]);
    }
}
