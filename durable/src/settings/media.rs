//! Media settings: whether the model sees images and PDFs (`LLM_VISION`) and
//! where voice is transcribed (`TRANSCRIBE_*`).

use super::read::{setting, switch, ConfigError, Vars};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscribeConfig {
    /// `TRANSCRIBE_BASE_URL`: `POST {base}/audio/transcriptions` (OpenAI-compatible).
    pub base_url: String,
    /// `TRANSCRIBE_MODEL`, default `whisper-1`.
    pub model: String,
    /// `TRANSCRIBE_API_KEY`, else `LLM_API_KEY`.
    pub api_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaConfig {
    /// `LLM_VISION` (default true): whether the model is shown images and PDFs.
    pub vision: bool,
    pub transcribe: Option<TranscribeConfig>,
}

impl Default for MediaConfig {
    fn default() -> Self {
        MediaConfig { vision: true, transcribe: None }
    }
}

impl MediaConfig {
    pub fn load(vars: &impl Vars, agent: &str) -> Result<Self, ConfigError> {
        let get = |name: &str| setting(vars, agent, name);
        let vision = switch(vars, agent, "LLM_VISION", true)?;
        let transcribe = get("TRANSCRIBE_BASE_URL").map(|base| TranscribeConfig {
            base_url: base.trim_end_matches('/').to_owned(),
            model: get("TRANSCRIBE_MODEL").unwrap_or_else(|| "whisper-1".into()),
            api_key: get("TRANSCRIBE_API_KEY").or_else(|| get("LLM_API_KEY")),
        });
        Ok(MediaConfig { vision, transcribe })
    }
}
