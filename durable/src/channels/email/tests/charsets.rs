//! Mail in the charsets people write in, from other mail libraries' public
//! test corpora (`tests/fixtures/real-world/email/charsets/`, sources in
//! SOURCES.md), read through the native stand-in of the runtime's
//! `TextDecoder` (`encoding_rs`: the same WHATWG standard). Expected texts
//! are Python's `email` package's reading of the same files.

use super::super::charsets::decode;
use super::super::mime::UNREADABLE;
use super::super::Mail;

fn read(name: &str) -> Mail {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/email/charsets");
    let raw = std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    super::super::read(&raw, &crate::testing::decode_text).unwrap()
}

fn name(m: &Mail) -> Option<&str> {
    m.from.as_ref().and_then(|(_, n)| n.as_deref())
}

#[test]
fn japanese_mail_reads_in_iso_2022_jp_and_shift_jis() {
    let m = read("mimekit-japanese.eml");
    assert_eq!(m.subject, "日本語メールテスト (testing Japanese emails)", "ISO-2022-JP encoded words, folded");
    assert!(m.text.contains("日本語が\n正常に\n送れているか\nテスト."), "{:?}", m.text);
    let m = read("mikel-mail-japanese_iso_2022.eml");
    assert_eq!((m.subject.as_str(), m.text.trim()), ("まみむめも", "すみません。"));
    let m = read("mikel-mail-japanese_shift_jis.eml");
    assert!(m.text.starts_with("あいうえお\n\nこのメールはテスト用のメールです。"), "{:?}", m.text);
    assert!(m.text.contains("今後ともよろしくお願い申し上げます！"), "{:?}", m.text);
}

#[test]
fn korean_mail_reads_in_euc_kr_and_ks_c_5601_1987() {
    let m = read("mikel-mail-raw_email.eml");
    assert_eq!(m.subject, "NOTE: 한국말로 하는 것");
    assert!(m.text.starts_with("대부분의 마찬가지로, 우리는 하나님을 믿습니다."), "{:?}", m.text);
    assert_eq!(read("mikel-mail-ks_c_5601-1987.eml").text.trim(), "스티해");
    let m = read("webklex-ks_c_5601-1987_headers.eml");
    assert_eq!(m.subject, "RE: 회원님께 Ersi님이 메시지를 보냈습니다.");
    assert_eq!(name(&m), Some("김 현진"));
}

#[test]
fn chinese_mail_reads_in_big5_and_gb2312_with_gbk_characters() {
    for file in ["composed-big5.eml", "composed-gb2312.eml"] {
        let m = read(file);
        assert_eq!(m.subject, "顏氏家訓 音辭第十八", "{file}");
        assert_eq!(name(&m), Some("顏之推"), "{file}");
        assert!(m.text.starts_with("顏是家訓  北齊  顏之推\n\n卷第七　音辭　雜藝　終制"), "{file}: {:?}", m.text);
    }
    // X-GBK, a label the standard knows.
    assert_eq!(read("webklex-gbk_charset.eml").text.trim(), "Hi");
}

#[test]
fn cyrillic_names_and_texts_read_in_their_pages() {
    assert_eq!(name(&read("mikel-mail-raw_email_bad_time.eml")), Some("Атиковa"), "windows-1251 encoded word");
    let dec = &crate::testing::decode_text;
    assert_eq!(decode("koi8-r", &[240, 210, 201, 215, 197, 212], dec).as_deref(), Ok("Привет"));
    assert_eq!(decode("KOI8-U", &[240, 210, 201, 215, 166, 212], dec).as_deref(), Ok("Привіт"));
    assert_eq!(decode("windows-1251", &[207, 240, 232, 226, 229, 242], dec).as_deref(), Ok("Привет"));
    assert_eq!(decode("cp1251", &[207, 240, 232, 226, 229, 242], dec).as_deref(), Ok("Привет"));
    assert_eq!(decode("iso-8859-7", &[193, 232, 222, 237, 225], dec).as_deref(), Ok("Αθήνα"));
    assert_eq!(decode("windows-1250", &[90, 97, 191, 243, 179, 230], dec).as_deref(), Ok("Zażółć"));
}

#[test]
fn labels_the_standard_lacks_are_mapped_and_utf7_is_ours() {
    let dec = &crate::testing::decode_text;
    assert_eq!(decode("cp932", &[147, 250, 150, 123, 140, 234], dec).as_deref(), Ok("日本語"));
    assert_eq!(decode("CP949", &[199, 209, 177, 185, 190, 238], dec).as_deref(), Ok("한국어"));
    assert_eq!(decode("iso-2022-jp-2", b"\x1b$B$9$_$^$;$s!#\x1b(B", dec).as_deref(), Ok("すみません。"));
    assert_eq!(decode("utf-7", b"Hi Mom -+Jjo--!", dec).as_deref(), Ok("Hi Mom -\u{263a}-!"));
    assert_eq!(decode("\"ISO8859_1\"", b"Fr\xf6sche", dec).as_deref(), Ok("Frösche"));
}

#[test]
fn what_cannot_be_read_is_said_so_never_mojibake() {
    let dec = &crate::testing::decode_text;
    // Big5 text declared US-ASCII (enmime's fixture): not guessed.
    let m = read("enmime-chardet-success-big-5.raw");
    assert!(
        m.text.starts_with("[This part of the email could not be read: its charset (us-ascii)"),
        "{:?}",
        &m.text[..80]
    );
    assert!(!m.text.contains('\u{fffd}'));
    // An unknown label over ASCII text is still ASCII (enmime's `fakescii`).
    assert_eq!(read("enmime-unk-charset-part.raw").text.trim(), "A text section");
    assert!(decode("fakescii", "日本".as_bytes(), dec).is_err_and(|e| e.contains("fakescii")));
    assert!(decode("x-user-defined", &[0xe9, 0xe9], dec).is_err());
    assert!(decode("hz-gb-2312", b"~{<:Ky2;S{#,NpJ)l6HK!#~}", dec).is_err(), "no decoder: said so");
    assert!(decode("shift_jis", &b"\x82 ".repeat(20), dec).is_err_and(|e| e.contains("not valid shift_jis")));
    // An encoded word in an unknown charset.
    let raw = b"From: a@example.com\r\nSubject: =?x-klingon?B?5pel5pys?= news\r\n\r\nhi\r\n";
    let m = super::super::read(raw, dec).unwrap();
    assert_eq!(m.subject, format!("{UNREADABLE} news"));
}

#[test]
fn mislabelled_utf8_and_undeclared_latin1_are_read_as_what_they_are() {
    let dec = &crate::testing::decode_text;
    assert_eq!(decode("iso-8859-1", "Café".as_bytes(), dec).as_deref(), Ok("Café"), "UTF-8 labelled Latin-1");
    assert_eq!(decode("us-ascii", "日本".as_bytes(), dec).as_deref(), Ok("日本"), "UTF-8 labelled ASCII");
    assert_eq!(
        decode("", b"Die Fr\xf6sche, \xfcber die Stra\xdfe", dec).as_deref(),
        Ok("Die Frösche, über die Straße")
    );
    assert!(decode("", &[0xc6, 0xfc, 0xcb, 0xdc, 0xb8, 0xec], dec).is_err(), "EUC-JP undeclared: runs of 8-bit bytes");
}

#[test]
fn raw_8bit_headers_are_read_in_the_messages_charset_or_said_unreadable() {
    let dec = &crate::testing::decode_text;
    let subject: &[u8] = &[137, 239, 139, 99, 130, 204, 130, 168, 146, 109, 130, 231, 130, 185];
    let name: &[u8] = &[147, 99, 146, 134];
    let message = |charset: &str| {
        [
            &b"From: \""[..],
            name,
            b"\" <tanaka@docomo.ne.jp>\r\nSubject: ",
            subject,
            format!("\r\nContent-Type: text/plain; charset={charset}\r\n\r\n").as_bytes(),
            name,
            b"\r\n",
        ]
        .concat()
    };
    // Old Japanese mobile mail: the Subject in raw Shift_JIS, like the body.
    let m = super::super::read(&message("Shift_JIS"), dec).unwrap();
    assert_eq!((m.subject.as_str(), m.from.as_ref().and_then(|f| f.1.as_deref())), ("会議のお知らせ", Some("田中")));
    assert_eq!(m.text.trim(), "田中");
    // The same bytes in a UTF-8 message cannot be read: said so, not Latin-1 garbage.
    let m = super::super::read(&message("utf-8"), dec).unwrap();
    assert_eq!(m.subject, UNREADABLE);
}
