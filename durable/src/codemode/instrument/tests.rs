//! The rewriter's tests: what it inserts, what it leaves alone, what it refuses.

use super::*;

/// The rewritten script without the module's head and tail.
fn body(code: &str) -> String {
    let m = instrument(code).unwrap_or_else(|e| panic!("{code:?} refused: {e}")).module;
    let m = m.strip_prefix(BODY_HEAD).unwrap_or(&m);
    let end = m.rfind("\n}\n").or_else(|| m.rfind("\n;")).unwrap();
    m[..end].to_owned()
}

fn refused(code: &str) -> Refusal {
    match instrument(code) {
        Err(r) => r,
        Ok(m) => panic!("{code:?} was accepted: {}", m.module),
    }
}

#[test]
fn loops_check_the_guard_each_time_round() {
    assert_eq!(body("while (x < 3) x++"), "while (__hearth_tick() && (x < 3)) x++");
    assert_eq!(body("do { x++ } while(x)"), "do { x++ } while(__hearth_tick() && (x))");
    assert_eq!(body("for (let i = 0; i < n; i++) s += i"), "for (let i = 0; __hearth_tick() && ( i < n); i++) s += i");
    assert_eq!(body("for(;;){}"), "for(; __hearth_tick() ;){__hearth_tick();}");
    assert_eq!(body("for (const x of xs) f(x)"), "for (const x of __hearth_iter( xs)) f(x)");
    assert_eq!(body("for await (const x of g()) {}"), "for await (const x of __hearth_aiter( g())) {__hearth_tick();}");
    assert_eq!(body("for (const k in o) ;"), "for (const k in o) ;", "for-in walks finitely many keys");
    assert_eq!(body("for (of of of) ;"), "for (of of __hearth_iter( of)) ;");
    assert_eq!(body("for (const [a, b] of m) ;"), "for (const [a, b] of __hearth_iter( m)) ;");
    // A `for` head with a function in it: only its own `;`s count.
    assert_eq!(
        body("for (let f = () => { a; b; }; f(); ) ;"),
        "for (let f = () => {__hearth_tick(); a; b; }; __hearth_tick() && ( f()); ) ;"
    );
}

#[test]
fn functions_tick_when_they_start() {
    assert_eq!(body("function f(a) { return a }"), "function f(a) {__hearth_tick(); return a }");
    assert_eq!(
        body("const o = { m() { }, get g() { } }"),
        "const o = { m() {__hearth_tick(); }, get g() {__hearth_tick(); } }"
    );
    assert_eq!(body("xs.map(x => x * 2)"), "xs.map(x => __hearth_tick().v = x * 2)");
    assert_eq!(body("xs.forEach(x => { t += x })"), "xs.forEach(x => {__hearth_tick(); t += x })");
    assert_eq!(body("f(async (a, b) => await a ?? b)"), "f(async (a, b) => __hearth_tick().v = await a ?? b)");
    assert_eq!(body("const f = function* () { yield 1 }"), "const f = function* () {__hearth_tick(); yield 1 }");
    // A class body is no function; its methods are.
    assert_eq!(
        body("class A extends mixin(B) { m() { } static { } }"),
        "class A extends mixin(B) { m() {__hearth_tick(); } static { } }"
    );
    assert_eq!(
        body("class A extends function () { } { }"),
        "class A extends function () {__hearth_tick(); } { }",
        "a function in the heritage is still a function"
    );
    assert_eq!(body("switch (x) { case 1: break }"), "switch (x) { case 1: break }");
    assert_eq!(
        body("class A { x = (d++, d < 40 && new A()); static y = {}; m(a = 1) { } }"),
        "class A { x = __hearth_tick().v = (d++, d < 40 && new A()); static y = __hearth_tick().v = {}; m(a = 1) {__hearth_tick(); } }",
        "a field's value is computed at each `new`, with no function around it"
    );
    assert_eq!(
        body("const o = { switch(n) { return n } }"),
        "const o = { switch(n) {__hearth_tick(); return n } }",
        "a method named switch is a function"
    );
    assert_eq!(
        body("const o = { class: 1, m(n) { return n } }"),
        "const o = { class: 1, m(n) {__hearth_tick(); return n } }",
        "a key named class opens no class"
    );
    assert_eq!(body("if (a) { b() } else { c() }"), "if (a) {__hearth_tick(); b() } else { c() }");
}

#[test]
fn what_is_not_code_is_left_alone() {
    let src = "const s = 'while(1){}' + `for(;;){} ${ n }` // for(;;){}\n/* while(1) */ const r = /while(1){}/g";
    assert_eq!(body(src), src);
    // A regex after a statement's `)`; a division after a call's.
    assert_eq!(body("if (x) /a/.test(s)"), "if (x) /a/.test(s)");
    assert_eq!(body("y = f(x) / 2 / g"), "y = f(x) / 2 / g");
}

#[test]
fn lines_stay_where_they_were() {
    let src = "let n = 0\nwhile (n < 3) {\n  n++\n}\nreturn n";
    let m = instrument(src).unwrap();
    assert!(!m.is_module);
    let lines: Vec<&str> = m.module.lines().collect();
    assert!(lines[0].starts_with(BODY_HEAD) && lines[0].ends_with("let n = 0"), "{}", lines[0]);
    assert_eq!(lines[1], "while (__hearth_tick() && (n < 3)) {__hearth_tick();");
    assert_eq!(lines[4], "return n");
}

#[test]
fn a_module_keeps_its_default_export() {
    let m = instrument("export default async function (hearth) {\n  return 1\n}").unwrap();
    assert!(m.is_module);
    assert!(m.module.starts_with("export default async function (hearth) {__hearth_tick();\n"), "{}", m.module);
    assert!(m.module.ends_with(&format!("\n;{GUARD_IMPORT}\n")));
    assert!(!instrument("const o = { export: 1 }; return o").unwrap().is_module);
}

#[test]
fn what_cannot_be_read_for_sure_is_refused() {
    for (code, line, what) in [
        ("let a = {}\n/x/.test(s)", 2, "division or a regular expression"),
        ("x++ / 2", 1, "division or a regular expression"),
        ("let of = 4\nx = of / 2", 2, "division or a regular expression"),
        ("import fs from 'fs'", 1, "`import` is not available"),
        ("const m = await import('x')", 1, "`import` is not available"),
        ("__hearth_tick = () => true", 1, "reserved"),
        ("let __hearthX = 1", 1, "reserved"),
        ("f(\n", 2, "'(' is never closed"),
        ("}\nwhile(1){}\n{", 1, "closes nothing"),
        ("for (x) {}", 1, "for loop's head"),
        ("export * from './guard.js'", 1, "export default"),
        ("export { a }", 1, "export default"),
        ("const f = x =>", 1, "no body"),
        ("`${ a", 1, "never closed"),
        ("'abc", 1, "never closed"),
    ] {
        let r = refused(code);
        assert_eq!(r.line, line, "{code:?}: {r}");
        assert!(r.message.contains(what), "{code:?}: {r}");
    }
}

#[test]
fn tricks_to_close_the_wrapper_or_hide_a_loop_fail() {
    // Closing the function the body is wrapped in needs an unbalanced '}'.
    assert!(refused("}); while (true) {} (function () {").message.contains("closes nothing"));
    // A loop after a U+2028 ends the `//` comment and is code.
    assert_eq!(body("// c\u{2028}while (1) {}"), "// c\u{2028}while (__hearth_tick() && (1)) {__hearth_tick();}");
    // A no-break space does not make `while` a different name.
    assert_eq!(body("while\u{a0}(1);"), "while\u{a0}(__hearth_tick() && (1));");
}
