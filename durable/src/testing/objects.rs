//! The Agent object's services as a Session reaches them, in process: its
//! memory, usage ledger and reminders over their own SQLite (the same code
//! as production), its approvals and the other sessions as a test scripts
//! them.

use super::sql::MemSql;
use crate::ports::*;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// The Agent object's memory in process: a real [`crate::memory::MemoryHub`]
/// over its own SQLite, reached through the same JSON as in production.
pub struct InProcessMemory {
    pub hub: RefCell<crate::memory::MemoryHub<MemSql>>,
    pub sql: std::rc::Rc<MemSql>,
    pub calls: RefCell<Vec<crate::protocol::memory::MemoryCall>>,
    pub unavailable: Cell<bool>,
}

impl Default for InProcessMemory {
    fn default() -> Self {
        let sql = std::rc::Rc::new(MemSql::default());
        InProcessMemory {
            hub: RefCell::new(crate::memory::MemoryHub::new(sql.clone())),
            sql,
            calls: RefCell::default(),
            unavailable: Cell::new(false),
        }
    }
}

impl MemoryService for InProcessMemory {
    async fn call(
        &self,
        call: &crate::protocol::memory::MemoryCall,
    ) -> Result<crate::protocol::memory::MemoryReply, crate::protocol::memory::MemoryCallError> {
        self.calls.borrow_mut().push(call.clone());
        if self.unavailable.get() {
            return Err(crate::protocol::memory::MemoryCallError::Unavailable("injected".into()));
        }
        self.hub.borrow_mut().call(call.clone())
    }
}

/// The Agent object's usage ledger in process: a real
/// [`crate::usage::book::UsageBook`] over its own SQLite, reached through
/// the same typed requests as in production (recorded).
pub struct InProcessUsage {
    pub book: RefCell<crate::usage::book::UsageBook>,
    pub sql: MemSql,
    pub requests: RefCell<Vec<crate::protocol::usage::MeterRequest>>,
    pub unavailable: Cell<bool>,
}

impl Default for InProcessUsage {
    fn default() -> Self {
        InProcessUsage {
            book: RefCell::new(crate::usage::book::UsageBook::new("main", "UTC", Default::default())),
            sql: MemSql::default(),
            requests: RefCell::default(),
            unavailable: Cell::new(false),
        }
    }
}

impl InProcessUsage {
    /// The ledger with these settings (budget, prices) in `timezone`.
    pub fn configure(&self, settings: crate::settings::usage::UsageSettings, timezone: &str) {
        *self.book.borrow_mut() = crate::usage::book::UsageBook::new("main", timezone, settings);
    }
}

/// The agent's reminders as its Agent object keeps them (the same code,
/// its own SQLite), with every call recorded.
#[derive(Default)]
pub struct InProcessReminders {
    pub sql: MemSql,
    /// `REMINDERS_MAX` (default: the runtime's).
    pub max: Cell<Option<u32>>,
    pub calls: RefCell<Vec<crate::protocol::reminders::ReminderCall>>,
    /// The alarm times the Agent object would set.
    pub wake_ats: RefCell<Vec<i64>>,
    /// The Agent object cannot be reached.
    pub unavailable: Cell<bool>,
}

/// The Agent object's approvals as a test scripts them: every call, and
/// how a request stands (`Waiting` until the test decides; a request past
/// its time asked with `expire` becomes `Expired`).
#[derive(Debug)]
pub struct TestApprovals {
    pub calls: Vec<crate::protocol::approvals::ApprovalCall>,
    pub decision: crate::protocol::approvals::Decision,
    pub expires_at: i64,
    /// Where the owner is asked (`None`: no chat).
    pub asked_in: Option<crate::protocol::approvals::AskedIn>,
}

impl Default for TestApprovals {
    fn default() -> Self {
        TestApprovals {
            calls: Vec::new(),
            decision: crate::protocol::approvals::Decision::Waiting,
            expires_at: 0,
            asked_in: None,
        }
    }
}

/// Other Session objects, as a session's turn reaches them.
#[derive(Default)]
pub struct SessionDoubles {
    pub asked: RefCell<Vec<crate::protocol::api::ApiTurnRequest>>,
    pub answers: RefCell<VecDeque<Option<crate::protocol::api::ApiOutcome>>>,
    pub stopped: RefCell<Vec<(crate::inbound::SessionKey, crate::protocol::api::StopRequest)>>,
    /// Calls to the agent's task list, and its answers in turn (none left:
    /// `{"ok": true}`; `None`: the Agent object cannot be reached).
    pub tasks: RefCell<Vec<crate::protocol::tasks::TaskRequest>>,
    pub task_replies: RefCell<VecDeque<Option<crate::protocol::tasks::TaskReply>>>,
}
