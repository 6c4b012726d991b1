//! Makes a script stop itself: a step guard in every loop and at the start
//! of every function.
//!
//! Why: local workerd does not enforce a Dynamic Worker's CPU limit, and a
//! `while (true) {}` there stalls the whole runtime. So the script is
//! rewritten before it runs, without changing what it computes:
//!
//! - `while (c)` and `do … while (c)` become `while (__hearth_tick() && (c))`;
//! - `for (a; c; b)` becomes `for (a; __hearth_tick() && (c); b)`;
//! - `for (x of xs)` becomes `for (x of __hearth_iter(xs))`, whose `next()`
//!   ticks (`for await` likewise): an array that grows while it is walked
//!   runs no function of the script, so the loop itself must count;
//! - every function body (`) {` that is no `switch`, a `function`'s body,
//!   `=> {`) starts with `__hearth_tick();`, and an arrow with an expression
//!   body `=> e` becomes `=> __hearth_tick().v = e`: an assignment has the
//!   lowest precedence an arrow body can have, so `e` parses as before and
//!   is the value; the tick runs first (exponential recursion is a loop
//!   too, and needs no braces).
//!
//! The tick counts steps and watches the clock (`guard.js`); once over its
//! limit it throws, and keeps throwing at every later tick, so a script
//! that catches the error cannot go on: no loop passes its condition and no
//! function starts. No line break is inserted, so line numbers stay true.
//!
//! The rewrite is done on tokens ([`super::lex`]), not a parse tree. Where
//! tokens alone cannot tell what V8 will read, the script is refused with a
//! message saying what to change, never guessed at: a `/` right after `}`,
//! `++`/`--` or the name `of`; a `for (…)` head that is neither
//! `a; b; c` nor `x of/in y`. Names starting with `__hearth` and `import`
//! are refused too (the guard must stay out of the script's reach).

use super::lex::{line_of, Kind, LexError, Lexer, Token};

/// The guard functions the rewritten script calls (imported from `guard.js`).
pub const TICK: &str = "__hearth_tick";
pub const ITER: &str = "__hearth_iter";
pub const AITER: &str = "__hearth_aiter";
const RESERVED_PREFIX: &str = "__hearth";

/// The module the rewritten script is, and what it imports.
pub const GUARD_IMPORT: &str =
    "import { tick as __hearth_tick, iter as __hearth_iter, aiter as __hearth_aiter } from \"./guard.js\";";

/// The start of a script that is a function body; line 1 of the script
/// stays on line 1.
pub const BODY_HEAD: &str = "export default async function (hearth) {";

/// Words after which an expression starts (so a `/` there begins a
/// regular expression). The reserved words of strict code, less those that
/// are values themselves.
const KEYWORDS: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "switch",
    "throw",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
];

/// A script as it will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instrumented {
    /// The whole `user.js` module.
    pub module: String,
    /// The script was an ES module (it exports); else a function body.
    pub is_module: bool,
}

/// Why a script is not run, and on which line of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// What a `(` belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opener {
    If,
    While,
    For,
    ForAwait,
    With,
    Switch,
    Catch,
    Other,
}

impl Opener {
    /// A statement follows its `)`, so a `/` there begins a regex.
    fn heads_statement(self) -> bool {
        matches!(self, Opener::If | Opener::While | Opener::For | Opener::ForAwait | Opener::With)
    }
}

#[derive(Debug)]
enum Frame {
    Paren {
        opener: Opener,
        /// Offset just after the `(`.
        inner: usize,
        /// Offsets of the `;`s directly inside a `for (…)`.
        semis: Vec<usize>,
        /// Tokens of a `for`'s condition (between its two `;`s).
        cond_tokens: usize,
        /// End of a `for`'s `of` (true) or `in` (false) keyword.
        iterates: Option<(usize, bool)>,
    },
    Bracket,
    /// `{ … }`; `class`: a class body, where `name = value` is a field.
    Brace {
        class: bool,
    },
    /// A template literal's `${ … }`.
    Template,
}

/// What the previous token was, as far as the next one cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// An expression may start here (start of input, an operator, a keyword).
    Operator,
    /// An operand just ended (a name, a literal, `]`, `this`…).
    Value,
    /// `)` of what.
    Close(Opener),
    CloseBrace,
    IncDec,
    /// The name `of` (a keyword only in a `for` head).
    Of,
}

/// A `class` or `function` whose body is the next `{` at `depth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    Class(usize),
    Function(usize),
}

struct Rewriter<'s> {
    src: &'s str,
    frames: Vec<Frame>,
    prev: Prev,
    /// The last two tokens that were names (not after a `.`), for the
    /// keyword a `(` follows, and `for await`.
    last_word: Option<&'s str>,
    word_before: Option<&'s str>,
    after_dot: bool,
    after_arrow: bool,
    /// The `=` of a class field: its value is computed at each `new`.
    after_field: bool,
    /// `class`/`function` seen, confirmed by the token after it.
    candidate: Option<(&'s str, usize)>,
    pending: Vec<Pending>,
    /// The token before was `export`.
    after_export: bool,
    /// The `{` after `switch (…)` ended here: unless a `case`, `default` or
    /// `}` follows, it was a method named `switch`, whose body needs a tick.
    switch_brace: Option<usize>,
    exports: bool,
    inserts: Vec<(usize, String)>,
}

impl<'s> Rewriter<'s> {
    fn refuse(&self, offset: usize, message: impl Into<String>) -> Refusal {
        Refusal { line: line_of(self.src, offset), message: message.into() }
    }

    fn insert(&mut self, at: usize, text: impl Into<String>) {
        self.inserts.push((at, text.into()));
    }

    fn regex_allowed(&self) -> bool {
        match self.prev {
            Prev::Operator => true,
            Prev::Close(o) => o.heads_statement(),
            Prev::Value | Prev::CloseBrace | Prev::IncDec | Prev::Of => false,
        }
    }

    fn token(&mut self, t: Token<'s>) -> Result<(), Refusal> {
        let after_dot = std::mem::take(&mut self.after_dot);
        let after_export = std::mem::take(&mut self.after_export);
        if let Some(at) = self.switch_brace.take() {
            let case = t.kind == Kind::Ident && matches!(t.text, "case" | "default") || t.is(Kind::Punct, "}");
            if !case {
                self.insert(at, format!("{TICK}();"));
            }
        }
        if after_export && (t.is(Kind::Punct, "*") || t.is(Kind::Punct, "{")) {
            return Err(self.refuse(t.start, "only `export default …` and exported declarations are supported"));
        }
        if let Some((word, depth)) = self.candidate.take() {
            // `class Name`, `class extends`, `class {`; `function f`, `function (`, `function*`.
            let confirmed = match word {
                "class" => t.kind == Kind::Ident || t.is(Kind::Punct, "{"),
                _ => t.kind == Kind::Ident || t.is(Kind::Punct, "(") || t.is(Kind::Punct, "*"),
            };
            if confirmed {
                self.pending.push(if word == "class" { Pending::Class(depth) } else { Pending::Function(depth) });
            }
        }
        let arrow_body = std::mem::take(&mut self.after_arrow);
        let field_value = std::mem::take(&mut self.after_field);
        if (arrow_body && !t.is(Kind::Punct, "{")) || field_value {
            self.insert(t.start, format!("{TICK}().v = "));
        }
        if t.kind == Kind::Punct
            && t.text.starts_with('/')
            && matches!(self.prev, Prev::CloseBrace | Prev::IncDec | Prev::Of)
        {
            return Err(self.refuse(
                t.start,
                "a '/' right after '}', '++', '--' or `of` could be a division or a regular expression: \
add a semicolon, parentheses or spaces to say which",
            ));
        }
        if let Some(Frame::Paren { opener: Opener::For | Opener::ForAwait, semis, cond_tokens, .. }) =
            self.frames.last_mut()
        {
            if semis.len() == 1 && !t.is(Kind::Punct, ";") {
                *cond_tokens += 1;
            }
        }
        match t.kind {
            Kind::Ident if !after_dot => self.word(t)?,
            Kind::Ident | Kind::PrivateName | Kind::Number | Kind::Str | Kind::Regex => self.prev = Prev::Value,
            Kind::TemplateOpen => {
                if t.text.starts_with('}') {
                    self.close(t, |f| matches!(f, Frame::Template))?;
                }
                self.frames.push(Frame::Template);
                self.prev = Prev::Operator;
            }
            Kind::TemplateEnd => {
                if t.text.starts_with('}') {
                    self.close(t, |f| matches!(f, Frame::Template))?;
                }
                self.prev = Prev::Value;
            }
            Kind::Punct => self.punct(t, arrow_body)?,
        }
        if t.kind != Kind::Ident || after_dot {
            self.last_word = None;
            self.word_before = None;
        }
        Ok(())
    }

    fn word(&mut self, t: Token<'s>) -> Result<(), Refusal> {
        let w = t.text;
        if w.starts_with(RESERVED_PREFIX) {
            return Err(self.refuse(t.start, format!("names starting with {RESERVED_PREFIX} are reserved")));
        }
        match w {
            "import" => {
                return Err(self.refuse(
                    t.start,
                    "`import` is not available: the sandbox has no modules to load; use the `hearth` object",
                ))
            }
            "export" if self.frames.is_empty() => {
                self.exports = true;
                self.after_export = true;
            }
            "class" | "function" => self.candidate = Some((w, self.frames.len())),
            "of" | "in" => {
                let is_of = w == "of";
                let binding_ended = matches!(self.prev, Prev::Value | Prev::CloseBrace | Prev::Of);
                if let Some(Frame::Paren { opener: Opener::For | Opener::ForAwait, semis, iterates, .. }) =
                    self.frames.last_mut()
                {
                    if semis.is_empty() && iterates.is_none() && (!is_of || binding_ended) {
                        *iterates = Some((t.end(), is_of));
                    }
                }
            }
            _ => {}
        }
        self.prev = match w {
            "this" | "super" | "null" | "true" | "false" => Prev::Value,
            "of" => Prev::Of,
            _ if KEYWORDS.contains(&w) => Prev::Operator,
            _ => Prev::Value,
        };
        self.word_before = self.last_word;
        self.last_word = Some(w);
        Ok(())
    }

    /// `arrow_body`: the token before was `=>`.
    fn punct(&mut self, t: Token<'s>, arrow_body: bool) -> Result<(), Refusal> {
        let prev = self.prev;
        self.prev = Prev::Operator;
        match t.text {
            "(" => {
                let opener = match (self.word_before, self.last_word) {
                    (_, Some("if")) => Opener::If,
                    (_, Some("while")) => Opener::While,
                    (_, Some("for")) => Opener::For,
                    (Some("for"), Some("await")) => Opener::ForAwait,
                    (_, Some("with")) => Opener::With,
                    (_, Some("switch")) => Opener::Switch,
                    (_, Some("catch")) => Opener::Catch,
                    _ => Opener::Other,
                };
                self.frames.push(Frame::Paren {
                    opener,
                    inner: t.end(),
                    semis: Vec::new(),
                    cond_tokens: 0,
                    iterates: None,
                });
            }
            ")" => {
                let Some(Frame::Paren { opener, inner, semis, cond_tokens, iterates }) =
                    self.close(t, |f| matches!(f, Frame::Paren { .. }))?
                else {
                    return Ok(());
                };
                self.loop_head(t, opener, inner, &semis, cond_tokens, iterates)?;
                self.prev = Prev::Close(opener);
            }
            "[" => self.frames.push(Frame::Bracket),
            "]" => {
                self.close(t, |f| matches!(f, Frame::Bracket))?;
                self.prev = Prev::Value;
            }
            "{" => {
                let depth = self.frames.len();
                let mut class = false;
                let body = match self.pending.last() {
                    Some(Pending::Class(d)) if *d == depth => {
                        self.pending.pop();
                        class = true;
                        false
                    }
                    Some(Pending::Function(d)) if *d == depth => {
                        self.pending.pop();
                        true
                    }
                    _ => matches!(prev, Prev::Close(o) if o != Opener::Switch),
                };
                if body || arrow_body {
                    self.insert(t.end(), format!("{TICK}();"));
                } else if prev == Prev::Close(Opener::Switch) {
                    self.switch_brace = Some(t.end());
                }
                self.frames.push(Frame::Brace { class });
            }
            "}" => {
                self.close(t, |f| matches!(f, Frame::Brace { .. }))?;
                self.prev = Prev::CloseBrace;
            }
            "++" | "--" => self.prev = Prev::IncDec,
            "=>" => self.after_arrow = true,
            // A class field's value runs at each `new` with no function of
            // the script around it (its constructor may be implicit).
            "=" if matches!(self.frames.last(), Some(Frame::Brace { class: true })) => self.after_field = true,
            "." | "?." => self.after_dot = true,
            ";" => {
                if let Some(Frame::Paren { opener: Opener::For | Opener::ForAwait, semis, .. }) = self.frames.last_mut()
                {
                    semis.push(t.start);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Pops the innermost frame, which must be `want`; forgets the
    /// `class`/`function` bodies that were never opened inside it.
    fn close(&mut self, t: Token<'s>, want: impl Fn(&Frame) -> bool) -> Result<Option<Frame>, Refusal> {
        match self.frames.pop() {
            Some(f) if want(&f) => {
                let depth = self.frames.len();
                self.pending.retain(|p| match p {
                    Pending::Class(d) | Pending::Function(d) => *d <= depth,
                });
                Ok(Some(f))
            }
            _ => Err(self.refuse(t.start, format!("'{}' closes nothing open here", &t.text[..1]))),
        }
    }

    /// At the `)` of a loop's head: puts the guard into it.
    fn loop_head(
        &mut self,
        close: Token<'s>,
        opener: Opener,
        inner: usize,
        semis: &[usize],
        cond_tokens: usize,
        iterates: Option<(usize, bool)>,
    ) -> Result<(), Refusal> {
        match opener {
            Opener::While => {
                self.insert(inner, format!("{TICK}() && ("));
                self.insert(close.start, ")");
            }
            Opener::For | Opener::ForAwait => {
                match (semis, iterates) {
                    ([first, _], _) if cond_tokens == 0 => self.insert(first + 1, format!(" {TICK}() ")),
                    ([first, second], _) => {
                        self.insert(first + 1, format!(" {TICK}() && ("));
                        self.insert(*second, ")");
                    }
                    ([], Some((of_end, true))) => {
                        let wrap = if opener == Opener::ForAwait { AITER } else { ITER };
                        self.insert(of_end, format!(" {wrap}("));
                        self.insert(close.start, ")");
                    }
                    // `for (k in o)` walks the keys it had when it began: finite.
                    ([], Some((_, false))) => {}
                    _ => return Err(self.refuse(
                        close.start,
                        "this for loop's head is neither `init; condition; update` nor `x of items` / `k in object`",
                    )),
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Rewrites `code` (a function body, or a module that exports a default
/// function) into the `user.js` module that runs in the sandbox.
pub fn instrument(code: &str) -> Result<Instrumented, Refusal> {
    let mut r = Rewriter {
        src: code,
        frames: Vec::new(),
        prev: Prev::Operator,
        last_word: None,
        word_before: None,
        after_dot: false,
        after_arrow: false,
        after_field: false,
        candidate: None,
        pending: Vec::new(),
        after_export: false,
        switch_brace: None,
        exports: false,
        inserts: Vec::new(),
    };
    let mut lexer = Lexer::new(code);
    let lex_err = |e: LexError| Refusal { line: line_of(code, e.offset), message: e.message.to_owned() };
    while let Some(t) = lexer.next(r.regex_allowed()).map_err(lex_err)? {
        r.token(t)?;
    }
    if let Some(open) = r.frames.last() {
        let what = match open {
            Frame::Paren { .. } => "a '(' is never closed",
            Frame::Bracket => "a '[' is never closed",
            Frame::Brace { .. } => "a '{' is never closed",
            Frame::Template => "a template's '${' is never closed",
        };
        return Err(Refusal { line: line_of(code, code.len()), message: what.into() });
    }
    if r.after_arrow || r.after_field {
        return Err(Refusal { line: line_of(code, code.len()), message: "an arrow function has no body".into() });
    }
    // Stable: insertions at one offset keep the order they were made in.
    crate::order::sort_by_key(&mut r.inserts, |(at, _)| *at);
    let mut body = String::with_capacity(code.len() + r.inserts.iter().map(|(_, s)| s.len()).sum::<usize>());
    let mut from = 0;
    for (at, text) in &r.inserts {
        body.push_str(&code[from..*at]);
        body.push_str(text);
        from = *at;
    }
    body.push_str(&code[from..]);
    let module = if r.exports {
        format!("{body}\n;{GUARD_IMPORT}\n")
    } else {
        format!("{BODY_HEAD}{body}\n}}\n{GUARD_IMPORT}\n")
    };
    Ok(Instrumented { module, is_module: r.exports })
}

#[cfg(test)]
mod tests;
