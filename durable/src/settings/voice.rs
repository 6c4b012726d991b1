//! Voice replies (`TTS_*`): text to speech through an OpenAI-compatible
//! `/audio/speech` endpoint. Off unless `TTS_BASE_URL` is set.

use super::read::{number, setting, switch, ConfigError, Vars};

/// Default model and voice (OpenAI's).
pub const DEFAULT_TTS_MODEL: &str = "gpt-4o-mini-tts";
pub const DEFAULT_TTS_VOICE: &str = "alloy";
/// Replies up to this many characters are spoken whole; longer ones get
/// their opening spoken (default 1000).
pub const DEFAULT_TTS_MAX_CHARS: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct VoiceConfig {
    /// `TTS_BASE_URL` (e.g. `https://api.openai.com/v1`); `None`: no voice replies.
    pub base_url: Option<String>,
    /// `TTS_API_KEY` (a secret).
    pub api_key: Option<String>,
    pub model: String,
    pub voice: String,
    pub max_chars: usize,
    /// `VOICE_REPLY_TO_VOICE` (default `true`): a voice note is answered
    /// with one, in chats that did not say `/voice off`.
    pub reply_to_voice: bool,
}

impl VoiceConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let reply_to_voice = switch(vars, agent, "VOICE_REPLY_TO_VOICE", true)?;
        Ok(VoiceConfig {
            base_url: setting(vars, agent, "TTS_BASE_URL").map(|u| u.trim_end_matches('/').to_owned()),
            api_key: setting(vars, agent, "TTS_API_KEY"),
            model: setting(vars, agent, "TTS_MODEL").unwrap_or_else(|| DEFAULT_TTS_MODEL.into()),
            voice: setting(vars, agent, "TTS_VOICE").unwrap_or_else(|| DEFAULT_TTS_VOICE.into()),
            max_chars: number(vars, agent, "TTS_MAX_CHARS", DEFAULT_TTS_MAX_CHARS)?.max(50),
            reply_to_voice,
        })
    }
}
