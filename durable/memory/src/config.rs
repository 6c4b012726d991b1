//! Store settings.

use crate::bm25::Bm25Params;
use crate::error::MemoryError;
use crate::tokenize::Tokenizer;

/// Size limits, so every record fits one Durable Object row (≤ 2 MB) with room to spare
/// and one oversized write cannot blow the 128 MB isolate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub max_name_bytes: usize,
    pub max_content_bytes: usize,
    pub max_aliases: usize,
}

/// The largest `max_content_bytes` accepted: a log record must stay under 2 MB.
pub const MAX_CONTENT_BYTES_CEILING: usize = 1536 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits { max_name_bytes: 256, max_content_bytes: 256 * 1024, max_aliases: 32 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MemoryConfig {
    pub bm25: Bm25Params,
    pub tokenizer: Tokenizer,
    pub limits: Limits,
    /// Write a checkpoint automatically once this many operations have gone to the log
    /// since the last one (None: only when [`crate::MemoryStore::checkpoint`] is called,
    /// e.g. from an alarm). Bounds the work a cold load does re-indexing log rows.
    pub checkpoint_after: Option<usize>,
}

/// Default checkpoint interval: re-indexing 256 changed notes at load costs about 1 ms
/// natively, while the checkpoint (a few ms at 10,000 notes) is amortised over 256 writes.
pub const DEFAULT_CHECKPOINT_AFTER: usize = 256;

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            bm25: Bm25Params::default(),
            tokenizer: Tokenizer::Unicode,
            limits: Limits::default(),
            checkpoint_after: Some(DEFAULT_CHECKPOINT_AFTER),
        }
    }
}

impl MemoryConfig {
    pub fn validate(&self) -> Result<(), MemoryError> {
        if !self.bm25.is_valid() {
            return Err(MemoryError::InvalidConfig("k1 must be finite and >= 0, b within [0, 1]"));
        }
        if self.limits.max_content_bytes > MAX_CONTENT_BYTES_CEILING {
            return Err(MemoryError::InvalidConfig("max_content_bytes must keep a record under 2 MB"));
        }
        if self.limits.max_name_bytes == 0 || self.limits.max_name_bytes > 4096 {
            return Err(MemoryError::InvalidConfig("max_name_bytes must be within 1..=4096"));
        }
        if self.limits.max_aliases > 256 {
            return Err(MemoryError::InvalidConfig("max_aliases must be at most 256"));
        }
        Ok(())
    }
}
