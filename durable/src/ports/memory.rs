//! The agent's memory, as a session reaches it.

/// The agent's BM25 memory, hosted by the Agent object: a session reaches it
/// through this port (see [`crate::memory`]).
#[allow(async_fn_in_trait)]
pub trait MemoryService {
    async fn call(
        &self,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError>;

    /// Stores a compaction or reset summary as an Archive entry of `store`
    /// (a taken name gets a numeric suffix; the same add repeated, with the
    /// same summary and time, finds the entry it made). Returns the entry's name.
    async fn add_archive(
        &self,
        store: &str,
        name: &str,
        summary: &str,
        created_at: i64,
    ) -> Result<String, crate::protocol::memory::MemoryCallError> {
        let call = crate::protocol::memory::MemoryCall::AddArchive {
            store: store.to_owned(),
            name: name.to_owned(),
            summary: summary.to_owned(),
            created_at,
        };
        match self.call(&call).await? {
            crate::protocol::memory::MemoryReply::Applied { name: Some(name), .. } => Ok(name),
            other => Err(crate::protocol::memory::MemoryCallError::Unavailable(format!("unexpected reply {other:?}"))),
        }
    }
}
