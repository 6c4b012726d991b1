//! A session's voice replies (see [`crate::voice`]): the `/voice` command,
//! and the voice note that follows a text answer when the chat wants one.

use super::deps::SessionDeps;
use super::reply::send;
use super::store::SessionStore;
use crate::inbound::Inbound;
use crate::ports::{Channel, Http, LogLevel, Platform, SendOutcome, Sql, StorageError};
use crate::voice::{self, VoiceCommand, VOICE_META};

/// Answers `/voice on|off` (no LLM call, not part of the conversation).
pub async fn answer_command<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    cmd: VoiceCommand,
) -> Result<(), StorageError> {
    let configured = deps.config.voice.base_url.is_some();
    let text = match cmd {
        VoiceCommand::On => {
            store.set_meta(VOICE_META, "on")?;
            if configured {
                "🔊 Voice replies on: my answers here come as text and a voice note. /voice off to stop."
            } else {
                "🔊 Noted, but voice replies are not set up (TTS_BASE_URL is not set), so I answer in text."
            }
        }
        VoiceCommand::Off => {
            store.set_meta(VOICE_META, "off")?;
            "🔇 Voice replies off: text only, also when you send a voice note. /voice on to hear me again."
        }
        VoiceCommand::Show => match store.meta(VOICE_META)?.as_deref() {
            Some("on") => "🔊 Voice replies are on here. /voice off to stop.",
            Some("off") => "🔇 Voice replies are off here. /voice on to hear me.",
            _ if configured && deps.config.voice.reply_to_voice => {
                "I answer voice notes with a voice note. /voice on for every answer, /voice off for none."
            }
            _ => "I answer in text. /voice on for voice notes.",
        },
    };
    send(p, deps, &inbound.reply_target, text).await
}

/// After the text of an answer went out: the voice note, when wanted.
/// Any failure is logged and nothing more: the user has the text.
pub async fn speak<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    inbound: &Inbound,
    text: &str,
) -> Result<(), StorageError> {
    let cfg = &deps.config.voice;
    let chosen = store.meta(VOICE_META)?;
    if !voice::wanted(cfg, chosen.as_deref(), inbound) {
        return Ok(());
    }
    // Apart: most answers are text only, and their turn need not compile this.
    crate::apart::apart(async move {
        let input = voice::spoken(text, cfg.max_chars);
        let Some(req) = voice::speech_request(cfg, &input) else { return Ok(()) };
        let audio = match p.http().send(req).await {
            Ok(resp) => voice::audio_of(resp),
            Err(e) => Err(format!("TTS unreachable: {e}")),
        };
        let audio = match audio {
            Ok(a) => a,
            Err(why) => {
                // Not billed: a failed call made no speech (and most providers charge none).
                p.log(LogLevel::Warn, &format!("voice reply not made ({why}); the text was sent"));
                return Ok(());
            }
        };
        super::meter::record_tts(p, deps, store, session_id, input.chars().count() as u64)?;
        match p.channel().send_voice(&inbound.reply_target, &audio).await {
            SendOutcome::Delivered => {}
            other => p.log(LogLevel::Warn, &format!("voice note not delivered ({other:?}); the text was sent")),
        }
        Ok(())
    })
    .await
}
