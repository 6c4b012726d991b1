//! What a person wrote in an email, without what mail programs add: the
//! quoted history of the thread (`On … wrote:` and `> ` lines, Outlook's
//! `-----Original Message-----` and `From:/Sent:/To:` blocks), the
//! signature after `-- `, and "Sent from my iPhone". The agent has the
//! thread in its history already; the history quoted again would cost
//! tokens on every message and read as if the person said it anew.
//!
//! Cautious: a line is dropped only when it has one of these forms, and a
//! message this would empty is kept whole.
//!
//! A forward is not history: what the person forwards is what they want
//! read. An inline forward (Gmail's `---------- Forwarded message
//! ---------`, Apple Mail's `Begin forwarded message:`, Thunderbird's
//! `-------- Forwarded Message --------`, Outlook's header block under an
//! `FW:` subject, and their translations) is kept whole, forwarded headers
//! included ([`written`]); only a forward inside quoted history goes with it.

/// Attribution lines of quoted replies in the languages mail programs use
/// (`On Tue, … Ana wrote:`, `Le … a écrit :`, `Am … schrieb …:`, `El … escribió:`,
/// `Il … ha scritto:`, `Em … escreveu:`, and the CJK and Russian forms below).
fn is_attribution(line: &str) -> bool {
    let l = line.trim();
    let ends = |s: &str| l.ends_with(s);
    let starts = |s: &str| l.starts_with(s);
    (starts("On ") && ends("wrote:"))
        || (starts("Le ") && (ends("a écrit :") || ends("a écrit:")))
        || (starts("Am ") && (ends("schrieb:") || l.contains(" schrieb ") && ends(":")))
        || (starts("El ") && ends("escribió:"))
        || (starts("Il ") && ends("ha scritto:"))
        || (starts("Em ") && ends("escreveu:"))
        || (starts("Op ") && ends("geschreven:"))
        // Chinese, Korean, Japanese and Russian mail programs' forms:
        // `于 2013年01月31日 05:25, Ana 写道:`, `2013년 1월 31일 (목) 오전 5:25, Ana <a@b>님이 작성:`,
        // `2013年1月31日(木) 5:25 Ana <a@b>:`, `31.01.2013 5:25, Ана пишет:`.
        || ["写道:", "写道：", "寫道:", "寫道：", "님이 작성:", "のメッセージ:", "написал(а):", "написал:", "пишет:"]
            .iter()
            .any(|e| ends(e))
        || (l.contains('年') && l.contains('日') && ends(">:"))
}

/// An attribution split over two lines (`On Tue, Mar 1, 2011 at 6:02 PM,` /
/// `Ana <ana@example.com> wrote:`).
fn is_split_attribution(line: &str, next: Option<&str>) -> bool {
    let l = line.trim();
    l.starts_with("On ") && !l.ends_with("wrote:") && next.is_some_and(|n| n.trim().ends_with("wrote:"))
}

/// Outlook's header block of the message being replied to or forwarded:
/// `From: …` followed within a few lines by `Sent:`/`Date:` and `To:`/`Subject:`.
fn is_header_block(lines: &[&str], i: usize) -> bool {
    let bare = |l: &str| l.trim().trim_start_matches('*').trim_start_matches('>').trim().to_owned();
    if !bare(lines[i]).starts_with("From:") {
        return false;
    }
    let window: Vec<String> = lines[i + 1..].iter().take(5).map(|l| bare(l)).collect();
    let has = |p: &str| window.iter().any(|l| l.starts_with(p));
    (has("Sent:") || has("Date:")) && (has("To:") || has("Subject:"))
}

fn is_separator(line: &str) -> bool {
    let l = line.trim();
    l.contains("-----Original Message-----")
        || l.contains("----- Original Message -----")
        || l.starts_with("-------- Forwarded Message")
        || (l.len() >= 10 && l.chars().all(|c| c == '_'))
        || (l.len() >= 10 && l.chars().all(|c| c == '-'))
}

fn is_quoted(line: &str) -> bool {
    line.trim_start().starts_with('>')
}

/// Mobile mail's footer: "Sent from my iPhone", "Sent from my BlackBerry®
/// wireless device", "Get Outlook for iOS" (a short line, not a sentence).
fn is_mobile_footer(line: &str) -> bool {
    let l = line.trim();
    let short = l.split_whitespace().count() <= 7 && !l.contains(',');
    short
        && (l.starts_with("Sent from my ") || l.starts_with("Get Outlook for ") || l.starts_with("Sent from Mail for"))
}

/// A mailing list's footer (a rule, then the list's name or its
/// `listinfo`/unsubscribe link): added by the list, not written.
fn is_list_footer(lines: &[&str], i: usize) -> bool {
    is_separator(lines[i])
        && lines[i + 1..].iter().take(4).any(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("mailing list") || l.contains("listinfo") || l.contains("unsubscribe")
        })
}

/// What the person wrote, and what they forwarded: the text without quoted
/// history and signature ([`stripped`]) above a forward, the forward whole.
pub fn written(text: &str, subject: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let lines: Vec<&str> = text.lines().collect();
    let marker = lines.iter().position(|l| is_forward_marker(l)).or_else(|| {
        // Outlook forwards with the same block it replies with: the subject says which.
        is_forward_subject(subject)
            .then(|| {
                (0..lines.len())
                    .find(|&i| is_header_block(&lines, i) || is_separator(lines[i]) && is_header_block_near(&lines, i))
            })
            .flatten()
    });
    let Some(at) = marker else { return stripped(&text) };
    let own = lines[..at].join("\n");
    // A forward inside the quoted history is history (`-----Original
    // Message-----` above it): the whole goes, as any quote.
    if history_start(&lines[..at]).is_some() {
        return stripped(&text);
    }
    let forward = lines[at..].join("\n");
    let own = if own.trim().is_empty() { String::new() } else { stripped(&own) };
    if own.is_empty() {
        forward.trim_end().to_owned()
    } else {
        format!("{own}\n\n{}", forward.trim_end())
    }
}

/// A forward's opening line, in the forms and languages mail programs write.
fn is_forward_marker(line: &str) -> bool {
    const WORDS: &[&str] = &[
        "forward",
        "fwd",
        "reenviado",
        "transféré",
        "weitergeleitet",
        "inoltrato",
        "encaminhad",
        "doorgestuurd",
        "vidarebefordrat",
        "videresendt",
        "välitetty",
        "przekazan",
        "přeposlan",
        "пересыла",
        "転送",
        "转发",
        "轉寄",
        "전달",
    ];
    const OPENINGS: &[&str] = &[
        "begin forwarded message",
        "anfang der weitergeleiteten nachricht",
        "début du message réexpédié",
        "début du message transféré",
        "inicio del mensaje reenviado",
        "inizio messaggio inoltrato",
        "início da mensagem reencaminhada",
        "転送されたメッセージ",
    ];
    let l = line.trim().to_lowercase();
    let dashed = l.starts_with("--") && l.ends_with("--") && l.len() > 4;
    let inner = l.trim_matches(|c: char| c == '-' || c.is_whitespace());
    (dashed && WORDS.iter().any(|w| inner.contains(w)) && !inner.contains("original"))
        || OPENINGS.iter().any(|o| l.starts_with(o))
}

/// `Fwd:`, `FW:` and the forms of other languages' mail programs.
fn is_forward_subject(subject: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "fw:",
        "fwd:",
        "wg:",
        "tr:",
        "rv:",
        "enc:",
        "i:",
        "doorst:",
        "vs:",
        "vb:",
        "pd:",
        "fs:",
        "转发:",
        "转发：",
        "轉寄:",
        "转寄:",
        "전달:",
        "転送:",
        "fwd：",
    ];
    let s = subject.trim().to_lowercase();
    PREFIXES.iter().any(|p| s.starts_with(p))
}

/// Where quoted history starts in `lines`, if anywhere (see [`stripped`]).
fn history_start(lines: &[&str]) -> Option<usize> {
    (0..lines.len()).find(|&i| {
        let next = lines.get(i + 1).copied();
        let outlook = is_header_block(lines, i) || is_separator(lines[i]) && is_header_block_near(lines, i);
        let attribution = is_attribution(lines[i]) || is_split_attribution(lines[i], next);
        let only_quotes_after =
            || lines[i + 1..].iter().filter(|l| !l.trim().is_empty()).all(|l| is_quoted(l) || is_attribution(l));
        outlook || attribution && only_quotes_after()
    })
}

/// The text of a message without the quoted history and the signature.
pub fn stripped(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(footer) = (0..lines.len()).find(|&i| is_list_footer(&lines, i)) {
        lines.truncate(footer);
    }
    // Where the quoted history starts: an attribution, a separator or a
    // header block. Everything from there is the history when what follows
    // is only quoted lines, headers or the old message (top posting); if the
    // person wrote below the quote (bottom posting), only the quoted lines go.
    let cut = history_start(&lines).unwrap_or(lines.len());
    let mut kept: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < cut {
        let line = lines[i];
        let next = lines.get(i + 1).copied();
        if is_quoted(line) || is_attribution(line) {
            i += 1;
            continue;
        }
        if is_split_attribution(line, next) {
            i += 2;
            continue;
        }
        kept.push(line);
        i += 1;
    }
    // The signature: from the delimiter (`-- `, or the common `--`) to the end.
    if let Some(sig) = kept.iter().rposition(|l| *l == "-- " || *l == "--") {
        if sig > 0 {
            kept.truncate(sig);
        }
    }
    while kept.last().is_some_and(|l| l.trim().is_empty() || is_mobile_footer(l)) {
        kept.pop();
    }
    while kept.first().is_some_and(|l| l.trim().is_empty()) {
        kept.remove(0);
    }
    let out = kept.join("\n");
    if out.trim().is_empty() {
        // Only a quote (or only a signature): better the whole than nothing.
        text.trim().to_owned()
    } else {
        out.trim_end().to_owned()
    }
}

/// A separator line counts as the start of history when a header block or
/// the old message's `From:` follows it closely.
fn is_header_block_near(lines: &[&str], i: usize) -> bool {
    (i + 1..(i + 4).min(lines.len())).any(|j| is_header_block(lines, j) || lines[j].trim().starts_with("From:"))
        || lines[i].contains("Original Message")
        || lines[i].contains("Forwarded Message")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/replies");
        std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    #[test]
    fn top_posted_replies_lose_the_quoted_thread() {
        assert_eq!(
            stripped(&fixture("email_1_3.txt")),
            "Oh thanks.\n\nHaving the function would be great.\n\n-Abhishek Kona"
        );
        let greedy = stripped(&fixture("greedy_on.txt"));
        assert!(greedy.starts_with("On your remote host you can run:"), "a line starting with On is kept: {greedy}");
        assert!(greedy.ends_with("the tunnel is not working."), "{greedy}");
        let one = stripped(&fixture("email_one_is_not_on.txt"));
        assert!(one.ends_with("Locally (on development), when I run..."), "{one}");
        assert!(!one.contains("Dave Tapley"), "{one}");
    }

    #[test]
    fn outlook_headers_end_the_message() {
        assert_eq!(stripped(&fixture("email_2_1.txt")), "Outlook with a reply");
        assert_eq!(stripped(&fixture("email_2_3.txt")), "Outlook with a reply directly above line");
    }

    #[test]
    fn bottom_posted_replies_keep_what_was_written_below_the_quote() {
        let body = stripped(&fixture("email_1_2.txt"));
        assert!(body.starts_with("Hi,\n\nYou can list the keys for the bucket"), "{body}");
        assert!(!body.contains("What is the best way"), "the quote is gone: {body}");
        assert!(!body.contains("Abhishek Kona wrote"), "{body}");
    }

    #[test]
    fn signatures_and_mobile_footers_go_and_plain_text_stays() {
        assert_eq!(stripped(&fixture("correct_sig.txt")), "this is an email with a correct -- signature.");
        assert_eq!(stripped(&fixture("email_iPhone.txt")), "Here is another email");
        assert_eq!(
            stripped(&fixture("email_sent_from_my_not_signature.txt")),
            "Here is another email\n\nSent from my desk, is much easier then my mobile phone."
        );
        let bullets = fixture("email_1_5.txt");
        assert_eq!(stripped(&bullets), bullets.trim_end(), "nothing to strip");
        assert_eq!(stripped("> only a quote\n> here"), "> only a quote\n> here", "never emptied");
    }
}
