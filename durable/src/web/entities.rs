//! HTML character references (`&amp;`, `&#233;`, `&#xe9;`): numeric ones,
//! and the named ones pages actually use. The full HTML table has over two
//! thousand names; a name not here stays as written, which a reader of the
//! text still understands.

use std::borrow::Cow;

/// Character references decoded: numeric ones, and the named ones pages use
/// (an unknown name stays as written).
pub fn decode_entities(s: &str) -> Cow<'_, str> {
    if !s.contains('&') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '#')).map(|p| p + 1);
        let (body, after) = match end {
            Some(e) => (&rest[1..e], &rest[e + usize::from(rest.as_bytes()[e] == b';')..]),
            None => (&rest[1..], ""),
        };
        match entity(body) {
            Some(c) => {
                out.push(c);
                rest = after;
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn entity(body: &str) -> Option<char> {
    if let Some(num) = body.strip_prefix('#') {
        let n = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return Some(char::from_u32(n).filter(|c| *c != '\0').unwrap_or('\u{fffd}'));
    }
    const NAMED: &[(&str, char)] = &[
        ("amp", '&'),
        ("lt", '<'),
        ("gt", '>'),
        ("quot", '"'),
        ("apos", '\''),
        ("nbsp", ' '),
        ("ensp", ' '),
        ("emsp", ' '),
        ("thinsp", ' '),
        ("shy", '\u{ad}'),
        ("zwnj", '\u{200c}'),
        ("zwj", '\u{200d}'),
        ("copy", '©'),
        ("reg", '®'),
        ("trade", '™'),
        ("hellip", '…'),
        ("mdash", '—'),
        ("ndash", '–'),
        ("minus", '−'),
        ("lsquo", '‘'),
        ("rsquo", '’'),
        ("sbquo", '‚'),
        ("ldquo", '“'),
        ("rdquo", '”'),
        ("bdquo", '„'),
        ("laquo", '«'),
        ("raquo", '»'),
        ("lsaquo", '‹'),
        ("rsaquo", '›'),
        ("bull", '•'),
        ("middot", '·'),
        ("para", '¶'),
        ("sect", '§'),
        ("deg", '°'),
        ("plusmn", '±'),
        ("times", '×'),
        ("divide", '÷'),
        ("frac12", '½'),
        ("frac14", '¼'),
        ("frac34", '¾'),
        ("sup2", '²'),
        ("sup3", '³'),
        ("micro", 'µ'),
        ("euro", '€'),
        ("pound", '£'),
        ("yen", '¥'),
        ("cent", '¢'),
        ("curren", '¤'),
        ("dagger", '†'),
        ("Dagger", '‡'),
        ("prime", '′'),
        ("Prime", '″'),
        ("larr", '←'),
        ("rarr", '→'),
        ("uarr", '↑'),
        ("darr", '↓'),
        ("harr", '↔'),
        ("le", '≤'),
        ("ge", '≥'),
        ("ne", '≠'),
        ("asymp", '≈'),
        ("infin", '∞'),
        ("check", '✓'),
        ("iexcl", '¡'),
        ("iquest", '¿'),
        ("Agrave", 'À'),
        ("Aacute", 'Á'),
        ("Acirc", 'Â'),
        ("Atilde", 'Ã'),
        ("Auml", 'Ä'),
        ("Aring", 'Å'),
        ("AElig", 'Æ'),
        ("Ccedil", 'Ç'),
        ("Egrave", 'È'),
        ("Eacute", 'É'),
        ("Ecirc", 'Ê'),
        ("Euml", 'Ë'),
        ("Iacute", 'Í'),
        ("Ntilde", 'Ñ'),
        ("Oacute", 'Ó'),
        ("Ocirc", 'Ô'),
        ("Ouml", 'Ö'),
        ("Oslash", 'Ø'),
        ("Uacute", 'Ú'),
        ("Uuml", 'Ü'),
        ("szlig", 'ß'),
        ("agrave", 'à'),
        ("aacute", 'á'),
        ("acirc", 'â'),
        ("atilde", 'ã'),
        ("auml", 'ä'),
        ("aring", 'å'),
        ("aelig", 'æ'),
        ("ccedil", 'ç'),
        ("egrave", 'è'),
        ("eacute", 'é'),
        ("ecirc", 'ê'),
        ("euml", 'ë'),
        ("igrave", 'ì'),
        ("iacute", 'í'),
        ("icirc", 'î'),
        ("iuml", 'ï'),
        ("ntilde", 'ñ'),
        ("ograve", 'ò'),
        ("oacute", 'ó'),
        ("ocirc", 'ô'),
        ("otilde", 'õ'),
        ("ouml", 'ö'),
        ("oslash", 'ø'),
        ("ugrave", 'ù'),
        ("uacute", 'ú'),
        ("ucirc", 'û'),
        ("uuml", 'ü'),
        ("yacute", 'ý'),
        ("yuml", 'ÿ'),
        ("oelig", 'œ'),
        ("OElig", 'Œ'),
        ("scaron", 'š'),
        ("Scaron", 'Š'),
        ("alpha", 'α'),
        ("beta", 'β'),
        ("gamma", 'γ'),
        ("delta", 'δ'),
        ("pi", 'π'),
        ("sigma", 'σ'),
        ("omega", 'ω'),
        ("lambda", 'λ'),
        ("mu", 'μ'),
    ];
    NAMED.iter().find(|(n, _)| *n == body).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::decode_entities;

    #[test]
    fn references() {
        assert_eq!(
            decode_entities("caf&eacute; &#233; &#xE9; &amp;amp; &lt 6 &unknown; AT&T &"),
            "café é é &amp; < 6 &unknown; AT&T &"
        );
        assert_eq!(decode_entities("&#0; &#xFFFFFF; &#x1F600;"), "\u{fffd} \u{fffd} 😀");
    }
}
