//! The agent's reminders in its Agent object ([`crate::reminders`]): the
//! calls of the `remind` tool, `/reminders` and the admin API, and the part
//! of the alarm that fires them. The alarm is shared with the object's other
//! work: it is set for the soonest reminder only when nothing earlier is set.

use super::host::{AgentHost, AgentRuntime};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::reminders::{ReminderCall, ReminderReply};
use crate::reminders::fire::FireReport;

impl<R: AgentRuntime + 'static> AgentHost<R> {
    /// A call to the agent's reminders. Bad input is an answer with an
    /// `error` (nothing changed); `Err` is storage trouble. A reminder set
    /// sets the alarm for its time (unless an earlier one is set).
    pub async fn reminders(&self, call: &ReminderCall) -> Result<ReminderReply, StorageError> {
        let sql = &**self.runtime().sql();
        let limit = |agent: &str| crate::reminders::max_pending(self.runtime().vars(), agent);
        let answered = crate::reminders::answer(sql, call, self.runtime().now_ms(), &limit)?;
        if let Some(at) = answered.wake_at {
            // The reminder is kept: an alarm not set now is set by the next
            // cron tick's wake (at most 5 minutes), so the caller hears it is set.
            if let Err(e) = self.runtime().wake_at(at).await {
                self.runtime()
                    .log(LogLevel::Error, &format!("reminder kept, its alarm not set (the next tick sets it): {e}"));
            }
        }
        Ok(answered.reply)
    }

    /// The alarm's reminders: fires what is due. Storage trouble is logged
    /// (the alarm's other work still runs; the next alarm fires it).
    pub(super) async fn fire_reminders(&self) -> Option<FireReport> {
        let log = |level: LogLevel, msg: &str| self.runtime().log(level, msg);
        let sql = &**self.runtime().sql();
        match crate::reminders::fire::fire(sql, self.runtime().queue(), self.runtime().now_ms(), &log).await {
            Ok(report) => {
                if report.claimed + report.failed > 0 {
                    log(
                        LogLevel::Info,
                        &format!(
                            "reminders: {} due, {} posted, {} failed",
                            report.claimed, report.posted, report.failed
                        ),
                    );
                }
                Some(report)
            }
            Err(e) => {
                log(LogLevel::Error, &format!("reminders not fired (the next alarm tries again): {e}"));
                None
            }
        }
    }

    /// Sets the alarm for the next reminder or retry (at once when more is
    /// due than one alarm fires), unless an earlier alarm is set.
    pub(super) async fn rearm_reminders(&self, fired: Option<FireReport>) -> Result<(), StorageError> {
        let next = match fired {
            Some(FireReport { more: true, .. }) => return self.runtime().wake().await,
            Some(report) => report.next_wake,
            // It failed: try again soon (whatever else the store says).
            None => Some(self.runtime().now_ms() + crate::reminders::fire::RETRY_MS),
        };
        match next {
            Some(at) => self.runtime().wake_at(at).await,
            None => Ok(()),
        }
    }
}
