//! `run_code`'s sandbox with scripted runs.

use crate::ports::*;
use std::cell::RefCell;
use std::collections::VecDeque;

/// A sandbox whose runs are scripted: each run gives the next list of
/// events (its script's calls, then how it ended); the jobs it was given and
/// the answers to the calls are recorded.
#[derive(Default)]
pub struct ScriptedSandbox {
    pub runs: VecDeque<Vec<SandboxEvent>>,
    pub jobs: Vec<SandboxJob>,
    pub answers: std::rc::Rc<RefCell<Vec<(u32, bool, String)>>>,
}

pub(super) struct ScriptedRun {
    pub(super) events: RefCell<VecDeque<SandboxEvent>>,
    pub(super) answers: std::rc::Rc<RefCell<Vec<(u32, bool, String)>>>,
}

impl SandboxRun for ScriptedRun {
    fn next(&self) -> futures::future::LocalBoxFuture<'_, SandboxEvent> {
        let event = self.events.borrow_mut().pop_front().unwrap_or(SandboxEvent::Done(Err("no more events".into())));
        Box::pin(async move { event })
    }
    fn answer(&self, id: u32, is_error: bool, text: &str) {
        self.answers.borrow_mut().push((id, is_error, text.to_owned()));
    }
}
