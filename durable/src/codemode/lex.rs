//! A JavaScript tokenizer, just exact enough to instrument a script
//! ([`super::instrument`]): it finds where comments, strings, template
//! literals and regular expressions begin and end the way V8 does, so code
//! can never hide from the instrumenter inside what it took for a string.
//!
//! Where the language itself needs a parser to tell (is this `/` a division
//! or the start of a regular expression?), the caller decides from the
//! tokens before it and passes `regex_allowed`; the cases it cannot decide
//! are refused there, never guessed.
//!
//! What it gets wrong only in ways V8 rejects (a line break inside a string,
//! an unterminated comment) is reported as an error: a script V8 would not
//! compile is not worth instrumenting.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An identifier or a keyword (the caller tells them apart by text).
    Ident,
    /// `#name` in a class.
    PrivateName,
    Number,
    /// A string literal.
    Str,
    /// A whole template literal with no substitution, or the part after the
    /// last substitution (`` }…` ``).
    TemplateEnd,
    /// `` `…${ `` or `}…${`: an expression follows.
    TemplateOpen,
    Regex,
    /// An operator or bracket; [`Token::text`] says which.
    Punct,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token<'s> {
    pub kind: Kind,
    pub text: &'s str,
    /// Byte offset in the source.
    pub start: usize,
}

impl Token<'_> {
    pub fn end(&self) -> usize {
        self.start + self.text.len()
    }
    pub fn is(&self, kind: Kind, text: &str) -> bool {
        self.kind == kind && self.text == text
    }
}

/// Why the source could not be read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    pub offset: usize,
    pub message: &'static str,
}

/// ECMAScript's line terminators (a `//` comment ends at any of them).
pub fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Whitespace as V8 skips it between tokens. Rust's `White_Space` also has
/// U+0085, which JavaScript rejects (so the script fails either way).
fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{FEFF}'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '$' || c == '_' || c == '\\' || (!c.is_ascii() && !is_space(c))
}

/// The multi-character operators, longest first.
const PUNCTUATORS: &[&str] = &[
    ">>>=", "...", "===", "!==", "**=", "<<=", ">>=", ">>>", "&&=", "||=", "??=", "=>", "==", "!=", "<=", ">=", "&&",
    "||", "??", "?.", "++", "--", "+=", "-=", "*=", "%=", "&=", "|=", "^=", "**", "<<", ">>",
];

pub struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    /// One entry per open `{` (false) or `${` (true): a `}` closing a
    /// substitution continues its template.
    braces: Vec<bool>,
}

impl<'s> Lexer<'s> {
    pub fn new(src: &'s str) -> Self {
        Lexer { src, pos: 0, braces: Vec::new() }
    }

    fn rest(&self) -> &'s str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn err(&self, offset: usize, message: &'static str) -> LexError {
        LexError { offset, message }
    }

    /// Skips whitespace and comments (and a leading `#!` line).
    fn skip_trivia(&mut self) -> Result<(), LexError> {
        if self.pos == 0 && self.src.starts_with("#!") {
            self.skip_line();
        }
        loop {
            let rest = self.rest();
            if let Some(c) = rest.chars().next().filter(|c| is_space(*c)) {
                self.pos += c.len_utf8();
            } else if rest.starts_with("//") {
                self.skip_line();
            } else if let Some(comment) = rest.strip_prefix("/*") {
                let start = self.pos;
                match comment.find("*/") {
                    Some(end) => self.pos += 2 + end + 2,
                    None => return Err(self.err(start, "this /* comment is never closed")),
                }
            } else {
                return Ok(());
            }
        }
    }

    fn skip_line(&mut self) {
        let rest = self.rest();
        self.pos += rest.find(is_line_terminator).unwrap_or(rest.len());
    }

    /// The next token, or `None` at the end. `regex_allowed`: a `/` here
    /// starts a regular expression (else it is a division).
    pub fn next(&mut self, regex_allowed: bool) -> Result<Option<Token<'s>>, LexError> {
        self.skip_trivia()?;
        let start = self.pos;
        let Some(c) = self.peek() else { return Ok(None) };
        let kind = match c {
            '\'' | '"' => {
                self.string(c)?;
                Kind::Str
            }
            '`' => {
                self.pos += 1;
                self.template_part(start)?
            }
            '}' if self.braces.last() == Some(&true) => {
                self.braces.pop();
                self.pos += 1;
                self.template_part(start)?
            }
            '/' if regex_allowed => {
                self.regex()?;
                Kind::Regex
            }
            '#' => {
                self.pos += 1;
                self.ident();
                Kind::PrivateName
            }
            '0'..='9' => {
                self.number();
                Kind::Number
            }
            '.' if self.rest()[1..].starts_with(|c: char| c.is_ascii_digit()) => {
                self.number();
                Kind::Number
            }
            c if is_ident_char(c) => {
                self.ident();
                Kind::Ident
            }
            _ => {
                self.punct();
                Kind::Punct
            }
        };
        Ok(Some(Token { kind, text: &self.src[start..self.pos], start }))
    }

    fn string(&mut self, quote: char) -> Result<(), LexError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else { return Err(self.err(start, "this string is never closed")) };
            self.pos += c.len_utf8();
            match c {
                '\\' => self.skip_escaped(),
                '\n' | '\r' => return Err(self.err(start, "this string is never closed on its line")),
                c if c == quote => return Ok(()),
                _ => {}
            }
        }
    }

    /// After a backslash: skips the escaped character (a CR LF pair as one).
    fn skip_escaped(&mut self) {
        if self.rest().starts_with("\r\n") {
            self.pos += 2;
        } else if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    /// After `` ` `` or a substitution's `}`: up to `${` or the closing `` ` ``.
    fn template_part(&mut self, start: usize) -> Result<Kind, LexError> {
        loop {
            let Some(c) = self.peek() else { return Err(self.err(start, "this template literal is never closed")) };
            self.pos += c.len_utf8();
            match c {
                '\\' => self.skip_escaped(),
                '`' => return Ok(Kind::TemplateEnd),
                '$' if self.rest().starts_with('{') => {
                    self.pos += 1;
                    self.braces.push(true);
                    return Ok(Kind::TemplateOpen);
                }
                _ => {}
            }
        }
    }

    fn regex(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        self.pos += 1;
        let mut in_class = false;
        loop {
            let Some(c) = self.peek() else { return Err(self.err(start, "this regular expression is never closed")) };
            if is_line_terminator(c) {
                return Err(self.err(start, "this regular expression is never closed on its line"));
            }
            self.pos += c.len_utf8();
            match c {
                '\\' => match self.peek() {
                    Some(e) if is_line_terminator(e) => {
                        return Err(self.err(start, "this regular expression is never closed on its line"))
                    }
                    Some(e) => self.pos += e.len_utf8(),
                    None => {}
                },
                '[' => in_class = true,
                ']' => in_class = false,
                '/' if !in_class => break,
                _ => {}
            }
        }
        self.ident(); // flags
        Ok(())
    }

    fn number(&mut self) {
        let hex = matches!(self.rest().as_bytes().get(..2), Some(b"0x" | b"0X"));
        let mut prev = '\0';
        while let Some(c) = self.peek() {
            let exponent_sign = matches!(c, '+' | '-') && matches!(prev, 'e' | 'E') && !hex;
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' || exponent_sign {
                self.pos += 1;
                prev = c;
            } else {
                break;
            }
        }
    }

    fn ident(&mut self) {
        while let Some(c) = self.peek().filter(|c| is_ident_char(*c)) {
            self.pos += c.len_utf8();
            if c == '\\' {
                // `\uXXXX` or `\u{…}`: V8 checks it; we only keep it whole.
                if self.rest().starts_with("u{") {
                    self.pos += self.rest().find('}').map_or(self.rest().len(), |e| e + 1);
                } else if self.rest().starts_with('u') {
                    self.pos += 1;
                }
            }
        }
    }

    fn punct(&mut self) {
        let rest = self.rest();
        let len = PUNCTUATORS
            .iter()
            // `a?.5:b` is a conditional, not optional chaining.
            .find(|p| rest.starts_with(**p) && !(**p == "?." && rest[2..].starts_with(|c: char| c.is_ascii_digit())))
            .map_or_else(|| rest.chars().next().map_or(1, char::len_utf8), |p| p.len());
        // A `/` that is a division, and `/=`.
        let len = if rest.starts_with("/=") { 2 } else { len };
        match rest.as_bytes().first() {
            Some(b'{') => self.braces.push(false),
            Some(b'}') => {
                self.braces.pop();
            }
            _ => {}
        }
        self.pos += len;
    }
}

/// The 1-based line of byte `offset` in `src`.
pub fn line_of(src: &str, offset: usize) -> usize {
    let upto = &src[..offset.min(src.len())];
    let mut line = 1;
    let mut chars = upto.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if is_line_terminator(c) {
            line += 1;
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens of `src`, treating every `/` after an identifier, number,
    /// string or closing bracket as a division (as the caller mostly does).
    fn tokens(src: &str) -> Result<Vec<(Kind, &str)>, LexError> {
        let mut lx = Lexer::new(src);
        let mut out: Vec<(Kind, &str)> = Vec::new();
        loop {
            let regex_allowed = match out.last() {
                None => true,
                Some((Kind::Ident | Kind::Number | Kind::Str | Kind::Regex | Kind::TemplateEnd, _)) => false,
                Some((Kind::Punct, p)) => !matches!(*p, ")" | "]" | "}"),
                Some(_) => true,
            };
            match lx.next(regex_allowed)? {
                Some(t) => out.push((t.kind, t.text)),
                None => return Ok(out),
            }
        }
    }

    #[test]
    fn comments_strings_and_templates_hide_nothing_they_should_not() {
        use Kind::*;
        let t = tokens("a = 'it\\'s' + \"x\" // while(true){}\u{2028}while").unwrap();
        assert_eq!(
            t,
            vec![(Ident, "a"), (Punct, "="), (Str, "'it\\'s'"), (Punct, "+"), (Str, "\"x\""), (Ident, "while")],
            "a // comment ends at U+2028 as V8 ends it"
        );
        let t = tokens("`a${ b + `c${d}` }e` / 2").unwrap();
        assert_eq!(
            t,
            vec![
                (TemplateOpen, "`a${"),
                (Ident, "b"),
                (Punct, "+"),
                (TemplateOpen, "`c${"),
                (Ident, "d"),
                (TemplateEnd, "}`"),
                (TemplateEnd, "}e`"),
                (Punct, "/"),
                (Number, "2"),
            ]
        );
        let t = tokens("x = /[/]\\/while/g; y").unwrap();
        assert_eq!(t[2], (Regex, "/[/]\\/while/g"));
        assert_eq!(t.last(), Some(&(Ident, "y")));
        let t = tokens("a /* while */ b").unwrap();
        assert_eq!(t, vec![(Ident, "a"), (Ident, "b")]);
    }

    #[test]
    fn unicode_spaces_separate_tokens() {
        // A no-break space after `while` must not glue them into one name.
        let t = tokens("while\u{00A0}(x)\u{FEFF}y").unwrap();
        assert_eq!(t[0], (Kind::Ident, "while"));
        assert_eq!(t[1], (Kind::Punct, "("));
        assert_eq!(t.last(), Some(&(Kind::Ident, "y")));
        let t = tokens("caf\u{e9} = 1").unwrap();
        assert_eq!(t[0], (Kind::Ident, "caf\u{e9}"));
    }

    #[test]
    fn what_v8_would_refuse_is_an_error() {
        for (src, what) in [
            ("'abc", "never closed"),
            ("'ab\nc'", "on its line"),
            ("/* open", "never closed"),
            ("`a", "never closed"),
            ("x = /ab\nc/", "on its line"),
        ] {
            let e = tokens(src).unwrap_err();
            assert!(e.message.contains(what), "{src:?}: {e:?}");
        }
        // A line continuation inside a string is fine.
        assert!(tokens("'a\\\r\nb'").is_ok());
    }

    #[test]
    fn punctuators_and_numbers() {
        use Kind::*;
        let t = tokens("a?.b ?? c?.5:1 ... x >>>= 1e+5 .5 0x1e+1").unwrap();
        let texts: Vec<&str> = t.iter().map(|t| t.1).collect();
        assert_eq!(
            texts,
            vec!["a", "?.", "b", "??", "c", "?", ".5", ":", "1", "...", "x", ">>>=", "1e+5", ".5", "0x1e", "+", "1"]
        );
        assert_eq!(t[6].0, Number);
        assert_eq!(tokens("#!/usr/bin/env node\nx").unwrap(), vec![(Ident, "x")]);
        assert_eq!(tokens("this.#p").unwrap()[2], (PrivateName, "#p"));
    }

    #[test]
    fn lines() {
        assert_eq!(line_of("a\nb\r\nc\u{2028}d", 0), 1);
        assert_eq!(line_of("a\nb\r\nc\u{2028}d", 2), 2);
        assert_eq!(line_of("a\nb\r\nc\u{2028}d", 5), 3);
        assert_eq!(line_of("a\nb\r\nc\u{2028}d", 9), 4);
    }
}
