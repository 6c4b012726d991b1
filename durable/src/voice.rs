//! Voice replies (seed 004 §13): an answer spoken through an
//! OpenAI-compatible `/audio/speech` endpoint (`TTS_BASE_URL`, `TTS_MODEL`,
//! `TTS_VOICE`, key `TTS_API_KEY`), asked for as Ogg/Opus (`opus`), which
//! Telegram plays as a voice note and Discord as an audio attachment.
//!
//! The text reply always goes out first, through the outbox like every
//! reply; the voice note follows it. So a TTS endpoint that fails, or a
//! platform that refuses the audio, costs the user nothing: they have the
//! text. A reply up to `TTS_MAX_CHARS` (1,000) is spoken whole; a longer one
//! has its opening spoken (cut at a sentence end) with a closing "the rest
//! is in my message".
//!
//! When: a chat that said `/voice on` gets every answer spoken until
//! `/voice off`; otherwise an answer to a voice note is spoken when
//! `VOICE_REPLY_TO_VOICE` is on (the default).

use crate::inbound::Inbound;
use crate::ports::{HttpRequest, HttpResponse};
use crate::settings::voice::VoiceConfig;

/// What ends a spoken opening of a long reply.
pub const REST_IN_TEXT: &str = "The rest is in my message.";

/// The session meta key holding a chat's `/voice` choice (`on` / `off`).
pub const VOICE_META: &str = "voice";

/// A `/voice` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceCommand {
    On,
    Off,
    /// `/voice` alone: what is set.
    Show,
}

/// `/voice on|off` (also `/voice@bot on`), or `None` for anything else.
pub fn parse_command(text: &str) -> Option<VoiceCommand> {
    let mut words = text.split_whitespace();
    let cmd = words.next()?;
    if !cmd.split('@').next().is_some_and(|c| c.eq_ignore_ascii_case("/voice")) {
        return None;
    }
    Some(match words.next().map(str::to_ascii_lowercase).as_deref() {
        Some("on") => VoiceCommand::On,
        Some("off") => VoiceCommand::Off,
        _ => VoiceCommand::Show,
    })
}

/// Whether the answer to `inbound` is spoken, given the chat's `/voice`
/// choice (`chosen`: the stored `on`/`off`, if any).
pub fn wanted(cfg: &VoiceConfig, chosen: Option<&str>, inbound: &Inbound) -> bool {
    if cfg.base_url.is_none() || !crate::channels::sends_voice(inbound.reply_target.channel) {
        return false;
    }
    match chosen {
        Some("on") => true,
        Some("off") => false,
        _ => cfg.reply_to_voice && inbound.media.iter().any(|m| m.kind == "voice"),
    }
}

/// Markdown a voice should not read out (`**`, backticks, `#` headings,
/// link targets), gone; the words kept.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        // [label](url) → label
        let (before, after) = rest.split_at(i);
        out.push_str(before);
        match after.find(')') {
            Some(j) => rest = &after[j + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out.lines()
        .map(|l| l.trim_start_matches(['#', '>', ' ']).trim_start_matches("- "))
        .collect::<Vec<_>>()
        .join("\n")
        .replace(['*', '`', '[', ']', '_'], "")
}

/// What is spoken for `text`: all of it up to `max_chars`, else its
/// opening up to the last sentence end within that, and [`REST_IN_TEXT`].
pub fn spoken(text: &str, max_chars: usize) -> String {
    let words = plain(text);
    let words = words.trim();
    if words.chars().count() <= max_chars {
        return words.to_owned();
    }
    let budget = max_chars.saturating_sub(REST_IN_TEXT.len() + 2);
    let head: String = words.chars().take(budget).collect();
    let cut = head.rfind(['.', '!', '?', '\n']).filter(|&i| i > budget / 3).map_or(head.len(), |i| i + 1);
    let opening = head[..cut].trim_end();
    let sep = if opening.ends_with(['.', '!', '?']) { " " } else { "… " };
    format!("{opening}{sep}{REST_IN_TEXT}")
}

/// The `/audio/speech` request for `input` (Ogg/Opus).
pub fn speech_request(cfg: &VoiceConfig, input: &str) -> Option<HttpRequest> {
    let base = cfg.base_url.as_deref()?;
    let body = serde_json::json!({"model": cfg.model, "voice": cfg.voice, "input": input, "response_format": "opus"});
    let mut req = HttpRequest::post_json(format!("{base}/audio/speech"), &body, 60_000);
    if let Some(key) = &cfg.api_key {
        req = req.header("authorization", &format!("Bearer {key}"));
    }
    Some(req)
}

/// The audio of a speech response, or why there is none. Ogg data starts
/// with `OggS`: an endpoint that answers 200 with JSON or MP3 is refused
/// rather than sent as a voice note that will not play.
pub fn audio_of(resp: HttpResponse) -> Result<Vec<u8>, String> {
    if resp.status != 200 {
        let said = crate::text::truncate_chars(resp.text().trim(), 200);
        return Err(format!("TTS answered HTTP {}: {said}", resp.status));
    }
    if !resp.body.starts_with(b"OggS") {
        return Err(format!("TTS answered {} bytes that are not Ogg/Opus", resp.body.len()));
    }
    Ok(resp.body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::{ChannelKind, ChatKind, InboundMedia, ReplyTarget};

    fn cfg(base: Option<&str>) -> VoiceConfig {
        let mut vars = std::collections::HashMap::new();
        if let Some(b) = base {
            vars.insert("TTS_BASE_URL".to_owned(), b.to_owned());
        }
        VoiceConfig::load(&vars, "main").unwrap()
    }

    fn msg(voice: bool) -> Inbound {
        Inbound {
            dedupe_key: "k".into(),
            channel: ChannelKind::Telegram,
            kind: ChatKind::Direct,
            chat_id: "1".into(),
            sender_id: "1".into(),
            sender_name: "A".into(),
            text: String::new(),
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget { channel: ChannelKind::Telegram, chat_id: "1".into(), ..Default::default() },
            received_at: 0,
            media: if voice {
                vec![InboundMedia {
                    handle: "f".into(),
                    mime_type: "audio/ogg".into(),
                    filename: None,
                    size: None,
                    kind: "voice".into(),
                }]
            } else {
                vec![]
            },
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        }
    }

    #[test]
    fn voice_is_spoken_when_asked_or_answering_a_voice_note() {
        let on = cfg(Some("https://tts.example/v1"));
        assert!(wanted(&on, None, &msg(true)), "a voice note gets a voice reply");
        assert!(!wanted(&on, None, &msg(false)));
        assert!(wanted(&on, Some("on"), &msg(false)), "/voice on");
        assert!(!wanted(&on, Some("off"), &msg(true)), "/voice off wins over a voice note");
        assert!(!wanted(&cfg(None), Some("on"), &msg(true)), "no TTS endpoint, no voice");
        let mut quiet = on.clone();
        quiet.reply_to_voice = false;
        assert!(!wanted(&quiet, None, &msg(true)));
    }

    #[test]
    fn commands() {
        assert_eq!(parse_command("/voice on"), Some(VoiceCommand::On));
        assert_eq!(parse_command("/voice@hearth_bot OFF"), Some(VoiceCommand::Off));
        assert_eq!(parse_command("/voice"), Some(VoiceCommand::Show));
        assert_eq!(parse_command("/voiceover"), None);
        assert_eq!(parse_command("voice on"), None);
    }

    #[test]
    fn long_replies_have_their_opening_spoken_and_markdown_is_not_read() {
        assert_eq!(
            spoken("**Yes.** See [the docs](https://x.example/a_b) and `cargo`.", 1000),
            "Yes. See the docs and cargo."
        );
        let long = "First sentence here. ".repeat(100);
        let s = spoken(&long, 300);
        assert!(s.chars().count() <= 300, "{}", s.len());
        assert!(s.ends_with(REST_IN_TEXT));
        assert!(s.starts_with("First sentence here. First"));
        assert!(!s.contains("here… "), "cut at a sentence end: {s}");
    }

    #[test]
    fn only_ogg_audio_is_accepted() {
        let ok = HttpResponse { status: 200, headers: vec![], body: b"OggS\0\x02rest".to_vec() };
        assert!(audio_of(ok).is_ok());
        let mp3 = HttpResponse { status: 200, headers: vec![], body: b"ID3\x04".to_vec() };
        assert!(audio_of(mp3).unwrap_err().contains("not Ogg"));
        let down = HttpResponse { status: 503, headers: vec![], body: b"{\"error\":\"busy\"}".to_vec() };
        assert!(audio_of(down).unwrap_err().contains("503"));
        let req = speech_request(&cfg(Some("https://tts.example/v1/")), "hi").unwrap();
        assert_eq!(req.url, "https://tts.example/v1/audio/speech");
        let body: serde_json::Value = hearth_json::from_slice(&req.body).unwrap();
        assert_eq!(body["response_format"], "opus");
        assert_eq!(body["model"], "gpt-4o-mini-tts");
    }
}
