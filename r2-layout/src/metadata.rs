//! R2 custom-metadata records (seed 003). Values are strings, as R2 stores them;
//! numbers are decimal. R2 allows 8 KiB of custom metadata per object.

/// Metadata of `sessions/{sessionId}.jsonl.gz`, written on reset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveMetadata {
    pub session_key: String,
    pub session_id: String,
    pub agent_id: String,
    pub message_count: u64,
    pub archived_at: i64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

impl ArchiveMetadata {
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        vec![
            ("sessionKey".into(), self.session_key.clone()),
            ("sessionId".into(), self.session_id.clone()),
            ("agentId".into(), self.agent_id.clone()),
            ("messageCount".into(), self.message_count.to_string()),
            ("archivedAt".into(), self.archived_at.to_string()),
            ("inputTokens".into(), self.input_tokens.to_string()),
            ("outputTokens".into(), self.output_tokens.to_string()),
            ("totalTokens".into(), self.total_tokens.to_string()),
        ]
    }
}

/// Metadata of `sessions/{sessionId}-part{ts}.jsonl.gz`, written by compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartMetadata {
    pub session_key: String,
    pub session_id: String,
    pub agent_id: String,
    pub part_number: i64,
    pub message_count: u64,
    pub archived_at: i64,
}

impl PartMetadata {
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        vec![
            ("sessionKey".into(), self.session_key.clone()),
            ("sessionId".into(), self.session_id.clone()),
            ("agentId".into(), self.agent_id.clone()),
            ("partNumber".into(), self.part_number.to_string()),
            ("messageCount".into(), self.message_count.to_string()),
            ("archivedAt".into(), self.archived_at.to_string()),
        ]
    }
}

/// Metadata of `media/{sessionKey}/{uuid}.{ext}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaMetadata {
    pub original_filename: String,
    pub uploaded_at: i64,
    pub session_key: String,
}

impl MediaMetadata {
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        vec![
            ("originalFilename".into(), self.original_filename.clone()),
            ("uploadedAt".into(), self.uploaded_at.to_string()),
            ("sessionKey".into(), self.session_key.clone()),
        ]
    }
}
