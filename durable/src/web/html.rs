//! HTML to the text a model can read: the title, headings marked as in
//! Markdown, paragraphs and list items on their own lines, links as
//! `[text](url)`, scripts, styles and navigation left out, and, when the page
//! has a `<main>` or `<article>` with real content, only that.
//!
//! Written here rather than taken from a crate: the HTML parsers that follow
//! the standard (html5ever and what is built on it) add hundreds of kB to the
//! upload, and a page read for its words needs a tolerant tag scanner, not a
//! DOM. It never fails: whatever is not markup is text.

pub use super::entities::decode_entities;
use super::weburl::WebUrl;

/// A page as text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    pub title: Option<String>,
    pub text: String,
}

/// Elements whose content is never text (skipped to their end tag).
const RAW: [&str; 9] = ["script", "style", "noscript", "template", "svg", "iframe", "object", "textarea", "select"];
/// Elements around a page's content rather than in it.
const CHROME: [&str; 3] = ["nav", "footer", "aside"];
/// The main content, when a page marks it.
const MAIN: [&str; 2] = ["main", "article"];
/// Least text in `<main>`/`<article>` for it to stand for the whole page.
const MIN_MAIN_CHARS: usize = 200;

struct Writer<'a> {
    out: String,
    base: Option<&'a WebUrl>,
    pre: usize,
    chrome: usize,
    pending_space: bool,
    link: Option<(String, usize)>,
    main_depth: usize,
    main_span: Option<(usize, Option<usize>)>,
}

impl Writer<'_> {
    fn at_line_start(&self) -> bool {
        self.out.is_empty() || self.out.ends_with('\n')
    }

    fn text(&mut self, raw: &str) {
        if self.chrome > 0 {
            return;
        }
        for c in decode_entities(raw).chars() {
            if self.pre > 0 {
                self.out.push(c);
            } else if c.is_whitespace() {
                self.pending_space = true;
            } else {
                if self.pending_space && !self.at_line_start() && !self.out.ends_with(' ') {
                    self.out.push(' ');
                }
                self.pending_space = false;
                self.out.push(c);
            }
        }
    }

    /// Ends the line and leaves `blank` empty lines (0 or 1) before what follows.
    fn block(&mut self, blank: usize) {
        if self.chrome > 0 {
            return;
        }
        self.pending_space = false;
        while self.out.ends_with(' ') {
            self.out.pop();
        }
        if self.out.is_empty() {
            return;
        }
        let have = self.out.len() - self.out.trim_end_matches('\n').len();
        for _ in have..=blank {
            self.out.push('\n');
        }
    }

    fn push_raw(&mut self, s: &str) {
        if self.chrome == 0 {
            self.out.push_str(s);
        }
    }

    fn open(&mut self, name: &str, attrs: &str) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.block(1);
                let level = name.as_bytes()[1] - b'0';
                self.push_raw(&format!("{} ", "#".repeat(level as usize)));
            }
            "p" | "table" | "ul" | "ol" | "dl" | "blockquote" | "pre" | "figure" | "section" | "header" => {
                self.block(1);
            }
            "li" => {
                self.block(0);
                self.push_raw("- ");
            }
            "br" => {
                self.pending_space = false;
                self.push_raw("\n");
            }
            "td" | "th" if !self.at_line_start() => {
                self.push_raw(" | ");
                self.pending_space = false;
            }
            "a" => {
                // The space before the link belongs before its bracket.
                if self.pending_space && self.chrome == 0 && !self.at_line_start() && !self.out.ends_with(' ') {
                    self.out.push(' ');
                    self.pending_space = false;
                }
                let href = attribute(attrs, "href").and_then(|h| self.resolve(&h));
                self.link = href.map(|h| (h, self.out.len()));
            }
            "img" => {
                if let Some(alt) = attribute(attrs, "alt").filter(|a| !a.trim().is_empty()) {
                    self.text(&format!(" [image: {}] ", alt.trim()));
                }
            }
            _ if MAIN.contains(&name) => {
                self.block(1);
                if self.main_depth == 0 && self.main_span.is_none() && self.chrome == 0 {
                    self.main_span = Some((self.out.len(), None));
                }
                self.main_depth += 1;
            }
            _ if CHROME.contains(&name) => self.chrome += 1,
            _ if is_block(name) => self.block(0),
            _ => {}
        }
        if name == "pre" {
            self.pre += 1;
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "p" | "table" | "ul" | "ol" | "dl" | "blockquote" | "pre"
            | "figure" | "section" | "header" => self.block(1),
            "a" => {
                if let Some((href, start)) = self.link.take() {
                    let inner = self.out.get(start..).unwrap_or("").trim();
                    if self.chrome == 0 && !inner.is_empty() && inner != href && self.out.is_char_boundary(start) {
                        self.out.insert(start, '[');
                        self.out.push_str(&format!("]({href})"));
                    }
                }
            }
            _ if MAIN.contains(&name) => {
                self.block(1);
                self.main_depth = self.main_depth.saturating_sub(1);
                if self.main_depth == 0 {
                    if let Some((start, None)) = self.main_span {
                        self.main_span = Some((start, Some(self.out.len())));
                    }
                }
            }
            _ if CHROME.contains(&name) => self.chrome = self.chrome.saturating_sub(1),
            _ if is_block(name) => self.block(0),
            _ => {}
        }
        if name == "pre" {
            self.pre = self.pre.saturating_sub(1);
        }
    }

    /// An absolute http(s) link target, if the href is one (relative ones
    /// are resolved against the page).
    fn resolve(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') {
            return None;
        }
        let url = match self.base {
            Some(base) => base.join(href)?,
            None => WebUrl::parse(href)?,
        };
        matches!(url.scheme.as_str(), "http" | "https").then_some(url.href)
    }
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "div" | "tr" | "dt" | "dd" | "figcaption" | "address" | "details" | "summary" | "form" | "hr" | "caption"
    )
}

/// The page's title and readable text. Links are resolved against `base`.
pub fn to_text(html: &str, base: Option<&WebUrl>) -> Page {
    let mut w = Writer {
        out: String::with_capacity(html.len() / 4),
        base,
        pre: 0,
        chrome: 0,
        pending_space: false,
        link: None,
        main_depth: 0,
        main_span: None,
    };
    let mut title = None;
    let bytes = html.as_bytes();
    let mut i = 0;
    while i < html.len() {
        let Some(lt) = html[i..].find('<').map(|p| p + i) else {
            w.text(&html[i..]);
            break;
        };
        w.text(&html[i..lt]);
        let rest = &html[lt..];
        let next = bytes.get(lt + 1).copied().unwrap_or(b' ');
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(html.len(), |p| lt + p + 3);
        } else if next == b'!' || next == b'?' {
            i = rest.find('>').map_or(html.len(), |p| lt + p + 1);
        } else if next == b'/' || next.is_ascii_alphabetic() {
            let closing = next == b'/';
            let name_start = lt + 1 + usize::from(closing);
            let name_end = html[name_start..]
                .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
                .map_or(html.len(), |p| name_start + p);
            let name = html[name_start..name_end].to_ascii_lowercase();
            let tag_end = tag_end(html, name_end);
            let attrs = &html[name_end..tag_end.saturating_sub(1).max(name_end)];
            i = tag_end;
            if closing {
                w.close(&name);
            } else if name == "title" || RAW.contains(&name.as_str()) {
                let close = find_ci(&html[i..], &format!("</{name}")).map_or(html.len(), |p| i + p);
                if name == "title" && title.is_none() {
                    let t = collapse(&decode_entities(&html[i..close]));
                    title = (!t.is_empty()).then_some(t);
                }
                i = html[close..].find('>').map_or(html.len(), |p| close + p + 1);
            } else {
                w.open(&name, attrs);
            }
        } else {
            w.text("<");
            i = lt + 1;
        }
    }
    let whole = tidy(&w.out);
    let text = match w.main_span {
        Some((start, end)) => {
            let main = tidy(w.out.get(start..end.unwrap_or(w.out.len())).unwrap_or(""));
            if main.chars().count() >= MIN_MAIN_CHARS {
                main
            } else {
                whole
            }
        }
        None => whole,
    };
    Page { title, text }
}

/// Where a tag that starts before `from` ends (after its `>`), skipping `>`
/// inside quoted attribute values.
fn tag_end(html: &str, from: usize) -> usize {
    let mut quote: Option<u8> = None;
    for (k, b) in html.as_bytes()[from..].iter().enumerate() {
        match (quote, *b) {
            (Some(q), b) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(*b),
            (None, b'>') => return from + k + 1,
            _ => {}
        }
    }
    html.len()
}

/// Finds `needle` (ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    (0..h.len().saturating_sub(n.len() - 1)).find(|&k| h[k..k + n.len()].eq_ignore_ascii_case(n))
}

/// The value of attribute `name` in a tag's attribute text.
fn attribute(attrs: &str, name: &str) -> Option<String> {
    let b = attrs.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' && b[i] != b'/' {
            i += 1;
        }
        let key = &attrs[start..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = "";
        if i < b.len() && b[i] == b'=' {
            i += 1;
            while i < b.len() && b[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < b.len() && (b[i] == b'"' || b[i] == b'\'') {
                let q = b[i];
                let vs = i + 1;
                i = attrs[vs..].bytes().position(|c| c == q).map_or(b.len(), |p| vs + p);
                value = &attrs[vs..i];
                i += 1;
            } else {
                let vs = i;
                while i < b.len() && !b[i].is_ascii_whitespace() {
                    i += 1;
                }
                value = &attrs[vs..i];
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return Some(decode_entities(value).into_owned());
        }
        if start == i {
            i += 1;
        }
    }
    None
}

/// Whitespace runs as one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lines without trailing spaces, at most one empty line in a row, trimmed.
fn tidy(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut blank = 0;
    for line in s.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        to_text(html, None).text
    }

    #[test]
    fn a_page_reads_as_text_with_its_structure() {
        let base = WebUrl::parse("https://example.com/docs/page.html").unwrap();
        let page = to_text(
            "<!DOCTYPE html><html><head><title>  The &amp; Title </title><meta charset=utf-8>\
<style>body{color:red}</style><script>var x = '<p>not text</p>';</script></head>\
<body><h1>Heading</h1><p>First   paragraph\nwith <b>bold</b> and a <a href=\"/other?a=1&amp;b=2\">link</a>.</p>\
<!-- a comment --><ul><li>one</li><li>two &lt;3</li></ul><p>caf&eacute; &#233; &#xe9; &unknown; 5 &lt 6</p>\
<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>\
<pre>  keep\n    spacing</pre><p>end<br>line</p></body></html>",
            Some(&base),
        );
        assert_eq!(page.title.as_deref(), Some("The & Title"));
        assert_eq!(
            page.text,
            "# Heading\n\nFirst paragraph with bold and a [link](https://example.com/other?a=1&b=2).\n\n- one\n- two <3\n\n\
café é é &unknown; 5 < 6\n\nk | v\na | 1\n\n  keep\n    spacing\n\nend\nline"
        );
    }

    #[test]
    fn navigation_is_left_out_and_the_article_preferred() {
        let body = "Words of the article. ".repeat(12);
        let html = format!(
            "<nav><a href='https://x.test/'>Home</a></nav><header>Site</header><article><h2>Story</h2><p>{body}</p></article>\
<aside>Ads</aside><footer>© 2026</footer>"
        );
        let t = text(&html);
        assert!(t.starts_with("## Story\n\nWords of the article."), "{t}");
        assert!(!t.contains("Home") && !t.contains("Ads") && !t.contains("2026") && !t.contains("Site"), "{t}");
        // A thin article does not stand for the page.
        let t = text("<p>Intro text</p><article>Short</article>");
        assert_eq!(t, "Intro text\n\nShort");
    }

    #[test]
    fn broken_markup_is_still_text() {
        assert_eq!(text("a < b and c > d"), "a < b and c > d");
        assert_eq!(text("<p>unclosed <b>tags"), "unclosed tags");
        assert_eq!(text("<script>never closed"), "");
        assert_eq!(text("<div title='a > b'>x</div>"), "x");
        assert_eq!(text("<a href=javascript:alert(1)>click</a>"), "click");
        assert_eq!(text("<a href='https://a.test/'>https://a.test/</a>"), "https://a.test/");
        assert_eq!(text("<img alt='a cat' src=x.png><!-- never closed"), "[image: a cat]");
        assert_eq!(text("&"), "&");
        assert_eq!(text("&#0; &#xFFFFFF;"), "\u{fffd} \u{fffd}");
        assert_eq!(text("<SCRIPT>x</SCRIPT >After"), "After");
        assert_eq!(text("ünïcödé <b>ok</b>"), "ünïcödé ok");
    }
}
