//! What the Agent object does for conversation memory on its own: index the archives
//! in R2 that are not in it yet, a few per alarm (see
//! [`crate::memory::conversation::backfill`]).

use super::host::{AgentHost, AgentRuntime};
use crate::memory::conversation::backfill::{self, Indexer};
use crate::ports::LogLevel;
use crate::protocol::memory::{ConversationSource, Exchange, MemoryCallError};
use r2_layout::AgentId;

/// Adds through the object's memory hub, borrowing it only for each call (the run
/// awaits R2 between them, and other requests use the hub meanwhile).
struct HubIndexer<'h, R: AgentRuntime + 'static> {
    host: &'h AgentHost<R>,
    now: i64,
}

impl<R: AgentRuntime + 'static> Indexer for HubIndexer<'_, R> {
    fn add(
        &mut self,
        store: &str,
        from: &ConversationSource,
        exchanges: &[Exchange],
    ) -> Result<usize, MemoryCallError> {
        let now = self.now;
        self.host.with_hub(|hub| {
            let added = hub.conversations().add(store, from, exchanges, now)?;
            if added > 0 {
                hub.stored_in(store);
            }
            Ok(added)
        })
    }
}

impl<R: AgentRuntime + 'static> AgentHost<R> {
    /// One backfill run for `agent`; true when archives remain (the caller wakes the
    /// alarm again). Failures are logged: the next run takes the archive again.
    pub(super) async fn backfill_conversations(&self, agent: &str) -> bool {
        let Ok(id) = AgentId::parse(agent) else { return false };
        let r2 = match self.runtime().store() {
            Ok(r2) => r2,
            Err(e) => {
                self.runtime().log(LogLevel::Warn, &format!("conversation backfill: {e}"));
                return false;
            }
        };
        let now = self.runtime().now_ms();
        let log = |level: LogLevel, msg: &str| self.runtime().log(level, msg);
        let mut indexer = HubIndexer { host: self, now };
        match backfill::run(&r2, &**self.runtime().sql(), &id, now, &mut indexer, &log).await {
            Ok(report) => {
                if report.archives + report.skipped > 0 {
                    log(
                        LogLevel::Info,
                        &format!(
                            "conversation backfill of {agent}: {} archives ({} exchanges) indexed, {} left out{}",
                            report.archives,
                            report.exchanges,
                            report.skipped,
                            if report.more { ", more to come" } else { "" }
                        ),
                    );
                }
                report.more
            }
            Err(e) => {
                log(LogLevel::Warn, &format!("conversation backfill of {agent}: {e} (retried at the next tick)"));
                false
            }
        }
    }
}
