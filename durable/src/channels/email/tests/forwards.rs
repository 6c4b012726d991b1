//! Forwards kept whole while quoted history still goes: real messages
//! (`tests/fixtures/real-world/email/forwards/`: a 2005 Gmail forward from
//! the `mail` gem's fixtures, replies from talon's, attached emails from
//! MimeKit's and php-imap's; SOURCES.md) and the other mail programs'
//! forms, written as they write them.

use super::super::quote::written;
use super::super::{inline_forwards, Mail};

fn raw(name: &str) -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/forwards");
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn read(raw: &[u8]) -> Mail {
    let mut m = super::super::read(raw, &crate::testing::decode_text).unwrap();
    inline_forwards(&mut m, &crate::testing::decode_text);
    m
}

#[test]
fn a_gmail_forward_reaches_the_model_whole_with_its_headers() {
    let m = read(&raw("mikel-mail-raw_email8.eml"));
    assert_eq!(m.subject, "Fwd: Signed email causes file attachments");
    let text = written(&m.text, &m.subject);
    assert!(text.starts_with("We should not include these files or vcards as attachments.\n\n---------- Forwarded message ----------\nFrom: xxxxx xxxxxx <xxxxxxxx@xxx.com>\nDate: May 8, 2005 1:17 PM\nSubject: Signed email causes file attachments\nTo: xxxxxxx@xxxxxxxxxx.com"), "{text}");
    assert!(text.ends_with("Test attachments oddly encoded with japanese charset."), "{text}");
}

#[test]
fn quoted_history_is_still_stripped_in_every_mail_programs_reply() {
    for file in
        ["talon-outlook.eml", "talon-hotmail.eml", "talon-apple_mail.eml", "talon-gmail.eml", "talon-thunderbird.eml"]
    {
        let m = read(&raw(file));
        assert_eq!(written(&m.text, &m.subject), "Hello", "{file}");
    }
}

const OUTLOOK_BLOCK: &str = "Please see below.\n\n________________________________\nFrom: Pat Doe <pat@example.org>\nSent: Tuesday, March 3, 2026 9:12 AM\nTo: Olga <olga@example.com>\nSubject: Lisbon flights\n\nThe 9:40 flight is the cheapest.\n";

#[test]
fn outlooks_block_is_a_forward_under_fw_and_history_under_re() {
    let fwd = written(OUTLOOK_BLOCK, "FW: Lisbon flights");
    assert!(fwd.starts_with("Please see below.\n\n________________________________\nFrom: Pat Doe"), "{fwd}");
    assert!(fwd.ends_with("The 9:40 flight is the cheapest."), "{fwd}");
    assert_eq!(written(OUTLOOK_BLOCK, "WG: Lisbon flights"), fwd, "German Outlook");
    assert_eq!(written(OUTLOOK_BLOCK, "RE: Lisbon flights"), "Please see below.");
}

#[test]
fn apple_mail_thunderbird_and_translated_gmail_forwards_are_kept() {
    let apple = "FYI\n\nSent from my iPhone\n\nBegin forwarded message:\n\nFrom: Bank <alerts@bank.example>\nDate: 9 February 2026 at 10:02:11 GMT\nTo: olga@example.com\nSubject: Purchase alert\n\nAmount: 25.50\n";
    let kept = written(apple, "Fwd: Purchase alert");
    assert!(kept.starts_with("FYI\n\nBegin forwarded message:\n\nFrom: Bank <alerts@bank.example>"), "{kept}");
    assert!(kept.ends_with("Amount: 25.50"), "{kept}");
    let tb = "-------- Forwarded Message --------\nSubject: \tMinutes\nDate: \tMon, 2 Mar 2026 10:00:00 +0100\nFrom: \tAna <ana@example.org>\nTo: \tteam@example.org\n\nMinutes attached.\n\n-- \nAna\n";
    assert_eq!(written(tb, "Fwd: Minutes"), tb.trim_end(), "the forwarded message's own signature stays");
    let ja = "よろしくお願いします。\n\n---------- 転送されたメッセージ ---------\nFrom: 田中 <tanaka@example.jp>\nDate: 2026年3月2日(月) 10:00\nSubject: 会議\nTo: <olga@example.com>\n\n明日の会議は10時です。\n";
    let kept = written(ja, "Fwd: 会議");
    assert!(
        kept.contains("---------- 転送されたメッセージ ---------\nFrom: 田中")
            && kept.ends_with("明日の会議は10時です。"),
        "{kept}"
    );
}

#[test]
fn a_forward_inside_quoted_history_goes_with_it() {
    // talon's test_forwarded_message_in_quotations.
    let text = "Blah\n\n-----Original Message-----\n\nFYI\n\n---------- Forwarded message ----------\nFrom: bob@example.com\nDate: Tue, Sep 4, 2012 at 1:35 PM\nSubject: Two\nline subject\nTo: rob@example.com\n\n";
    assert_eq!(written(text, "Re: Two"), "Blah");
    // And a reply quoting in Chinese keeps only the answer.
    let zh = "好的，明天见。\n\n于 2013年01月31日 05:25, Hans Verkuil 写道:\n> 明天开会吗？\n";
    assert_eq!(written(zh, "Re: 开会"), "好的，明天见。");
}

#[test]
fn an_attached_email_is_read_like_an_inline_forward() {
    let m = read(&raw("mimekit-simple-embedded-message.eml"));
    assert_eq!(
        m.text,
        "This is the message body.\n\n---------- Forwarded message ---------\nFrom: mimekit@example.com\nDate: Tue, 12 Nov 2013 09:12:42 -0500\nSubject: embedded message\nTo: mimekit@example.com\n\nThis is the embedded message body."
    );
    assert!(
        m.attachments.is_empty(),
        "no unreadable .eml file: {:?}",
        m.attachments.iter().map(|a| &a.mime).collect::<Vec<_>>()
    );
    let m = read(&raw("webklex-embedded_email.eml"));
    assert!(m.text.starts_with("email that contains embedded message\n\n---------- Forwarded message ---------\nFrom: demo-from@cerstor.cz"), "{}", m.text);
    assert!(m.text.contains("Subject: demo") && m.text.ends_with("demo text"), "{}", m.text);
    // The forwarded email's own attachment is kept in its place.
    assert_eq!(m.attachments.len(), 1);
    assert_eq!(
        (m.attachments[0].name.as_deref(), m.attachments[0].bytes.as_slice()),
        (Some("testfile.txt"), &b" this is content of test file"[..])
    );
    // The model reads it whole: the forward line keeps it from the history stripper.
    assert_eq!(written(&m.text, &m.subject), m.text);
}
