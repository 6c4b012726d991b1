//! The Agent object's background tasks against in-memory Session objects:
//! at most SUBAGENTS_MAX run, the rest wait in order; each result is posted
//! once into the chat that asked, also after a failed post; cancels.

use crate::agent::host::{AgentHost, AgentRuntime};
use crate::inbound::{ChannelKind, Inbound, ReplyTarget, SessionKey};
use crate::ports::{LogLevel, StorageError};
use crate::protocol::api::StopRequest;
use crate::protocol::session::{PostReply, PostRequest};
use crate::protocol::tasks::{TaskCall, TaskDone, TaskReply, TaskRequest, TaskSpawn};
use crate::scheduled::{EnqueueOptions, EnqueueOutcome, SessionCounters, SessionQueue};
use crate::testing::{MemSql, MemStore};
use futures::executor::block_on;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// The Session objects: what was queued, posted and stopped; posts fail
/// while `down` is set.
#[derive(Default)]
struct Sessions {
    queued: RefCell<Vec<(SessionKey, Inbound)>>,
    posts: RefCell<Vec<PostRequest>>,
    stopped: RefCell<Vec<(SessionKey, StopRequest)>>,
    woken: RefCell<Vec<SessionKey>>,
    down: Cell<bool>,
}

impl SessionQueue for Sessions {
    async fn enqueue(
        &self,
        key: &SessionKey,
        inbound: &Inbound,
        _: EnqueueOptions,
    ) -> Result<EnqueueOutcome, StorageError> {
        if self.down.get() {
            return Err(StorageError("injected: unreachable".into()));
        }
        self.queued.borrow_mut().push((key.clone(), inbound.clone()));
        Ok(EnqueueOutcome::Queued)
    }
    async fn usage(&self, _: &SessionKey) -> Result<SessionCounters, StorageError> {
        Ok(SessionCounters::default())
    }
    async fn wake(&self, key: &SessionKey) -> Result<(), StorageError> {
        self.woken.borrow_mut().push(key.clone());
        Ok(())
    }
    async fn stop(&self, key: &SessionKey, req: &StopRequest) -> Result<(), StorageError> {
        self.stopped.borrow_mut().push((key.clone(), req.clone()));
        Ok(())
    }
    async fn post(&self, req: &PostRequest) -> Result<PostReply, StorageError> {
        if self.down.get() {
            return Err(StorageError("injected: unreachable".into()));
        }
        self.posts.borrow_mut().push(req.clone());
        Ok(PostReply { queued: true, target: req.target.clone() })
    }
}

struct Runtime {
    sql: Rc<MemSql>,
    vars: HashMap<String, String>,
    sessions: Sessions,
    now: Rc<Cell<i64>>,
    alarms: RefCell<Vec<i64>>,
    http: crate::testing::ScriptedHttp,
}

impl AgentRuntime for Runtime {
    type Sql = MemSql;
    type Store = Rc<MemStore>;
    type Vars = HashMap<String, String>;
    type Queue = Sessions;
    type Http = crate::testing::ScriptedHttp;
    fn http(&self) -> &crate::testing::ScriptedHttp {
        &self.http
    }
    fn sql(&self) -> &Rc<MemSql> {
        &self.sql
    }
    fn store(&self) -> Result<Rc<MemStore>, StorageError> {
        Ok(Rc::new(MemStore::default()))
    }
    fn vars(&self) -> &HashMap<String, String> {
        &self.vars
    }
    fn queue(&self) -> &Sessions {
        &self.sessions
    }
    async fn wake(&self) -> Result<(), StorageError> {
        self.alarms.borrow_mut().push(self.now.get());
        Ok(())
    }
    async fn wake_at(&self, at: i64) -> Result<(), StorageError> {
        self.alarms.borrow_mut().push(at);
        Ok(())
    }
    async fn sleep(&self, _: u64) {}
    fn now_ms(&self) -> i64 {
        self.now.get()
    }
    fn new_uuid(&self) -> String {
        format!("{:032x}", self.now.get())
    }
    fn clock(&self) -> Box<dyn Fn() -> i64> {
        let now = self.now.clone();
        Box::new(move || now.get())
    }
    fn log(&self, _: LogLevel, _: &str) {}
}

fn host(vars: &[(&str, &str)]) -> AgentHost<Runtime> {
    AgentHost::new(Runtime {
        sql: Rc::new(MemSql::default()),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        sessions: Sessions::default(),
        now: Rc::new(Cell::new(1_773_543_600_000)),
        alarms: RefCell::default(),
        http: Default::default(),
    })
}

fn chat() -> (SessionKey, ReplyTarget) {
    let target = ReplyTarget { channel: ChannelKind::Telegram, chat_id: "-100".into(), ..Default::default() };
    (SessionKey::parse("agent:main:telegram:group:-100").unwrap(), target)
}

fn call(h: &AgentHost<Runtime>, call: TaskCall) -> TaskReply {
    block_on(h.tasks(&TaskRequest { agent: "main".into(), call })).unwrap()
}

fn spawn(h: &AgentHost<Runtime>, task: &str) -> TaskReply {
    let (origin, target) = chat();
    call(h, TaskCall::Spawn(TaskSpawn { origin, target, handoff: task.into(), title: task.into() }))
}

fn done(id: &str, text: &str) -> TaskCall {
    TaskCall::Done(TaskDone {
        id: id.into(),
        text: text.into(),
        ok: true,
        model: "m".into(),
        calls: 2,
        tokens: 100,
        cost_usd: Some(0.01),
    })
}

#[test]
fn tasks_start_in_their_own_sessions_at_most_three_at_once_and_the_rest_wait_in_order() {
    let h = host(&[]);
    let replies: Vec<TaskReply> = (1..=5).map(|i| spawn(&h, &format!("task {i}"))).collect();
    assert!(h.runtime().sessions.queued.borrow().is_empty(), "a spawn only adds the row and sets the alarm");
    assert_eq!(h.runtime().alarms.borrow().len(), 5);
    assert_eq!((replies[4].ahead, replies[4].running, replies[4].max), (4, 0, 3));
    block_on(h.alarm()).unwrap();
    let states: Vec<String> = call(&h, TaskCall::List { origin: None }).tasks.iter().map(|t| t.state.clone()).collect();
    assert_eq!(states, ["queued", "queued", "running", "running", "running"], "newest first");
    let queued = h.runtime().sessions.queued.borrow().clone();
    assert_eq!(queued.len(), 3);
    assert_eq!(queued[0].0.render(), "agent:main:task:shared:t1", "a group's task has the group's (shared) scope");
    assert!(queued[0].1.text.ends_with("task 1"), "the handoff is its message");
    assert_eq!(queued[0].1.reply_target.deadline_ms, Some(h.runtime().now.get() + 15 * 60_000));
    // One ends: its result goes to the chat, and the oldest waiting one starts.
    call(&h, done("t2", "the answer to 2"));
    let posts = h.runtime().sessions.posts.borrow().clone();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].session_key, chat().0);
    assert_eq!(posts[0].id, "task:t2");
    assert!(posts[0].text.contains("Task t2 done") && posts[0].text.contains("the answer to 2"), "{}", posts[0].text);
    assert_eq!(posts[0].target.as_ref().map(|t| t.chat_id.as_str()), Some("-100"));
    let started: Vec<String> = h.runtime().sessions.queued.borrow().iter().map(|(k, _)| k.render()).collect();
    assert_eq!(started.last().map(String::as_str), Some("agent:main:task:shared:t4"));
    // A repeated report posts nothing more.
    call(&h, done("t2", "the answer to 2"));
    assert_eq!(h.runtime().sessions.posts.borrow().len(), 1);
    let list = call(&h, TaskCall::List { origin: Some(chat().0) });
    let ids: Vec<(&str, &str)> = list.tasks.iter().map(|t| (t.id.as_str(), t.state.as_str())).collect();
    assert_eq!(ids, [("t5", "queued"), ("t4", "running"), ("t3", "running"), ("t1", "running"), ("t2", "done")]);
    assert_eq!(call(&h, TaskCall::List { origin: Some(SessionKey::parse("agent:main:main").unwrap()) }).tasks, []);
}

#[test]
fn a_result_that_cannot_be_posted_is_posted_later_once() {
    let h = host(&[]);
    spawn(&h, "look it up");
    block_on(h.alarm()).unwrap();
    h.runtime().sessions.down.set(true);
    call(&h, done("t1", "found it"));
    assert!(h.runtime().sessions.posts.borrow().is_empty());
    let retry = *h.runtime().alarms.borrow().last().unwrap();
    assert!(retry > h.runtime().now.get(), "an alarm for the next try");
    h.runtime().sessions.down.set(false);
    block_on(h.alarm()).unwrap();
    assert!(h.runtime().sessions.posts.borrow().is_empty(), "not before its time");
    h.runtime().now.set(retry);
    block_on(h.alarm()).unwrap();
    block_on(h.alarm()).unwrap();
    let posts = h.runtime().sessions.posts.borrow();
    assert_eq!(posts.len(), 1, "posted once");
    assert!(posts[0].text.contains("found it"));
}

#[test]
fn a_cancelled_task_stops_and_its_place_goes_to_the_next() {
    let h = host(&[("SUBAGENTS_MAX", "1")]);
    spawn(&h, "first");
    spawn(&h, "second");
    block_on(h.alarm()).unwrap();
    let other = SessionKey::parse("agent:main:main").unwrap();
    let refused = call(&h, TaskCall::Cancel { id: "t1".into(), origin: Some(other) });
    assert!(!refused.ok, "another chat's task is not this chat's to cancel");
    let r = call(&h, TaskCall::Cancel { id: "t1".into(), origin: Some(chat().0) });
    assert!(r.ok && r.task.as_ref().unwrap().state == "running");
    let stopped = h.runtime().sessions.stopped.borrow().clone();
    assert_eq!(stopped[0].0.render(), "agent:main:task:shared:t1");
    assert_eq!(stopped[0].1.request.as_deref(), Some("task:t1"));
    assert_eq!(h.runtime().sessions.queued.borrow().last().unwrap().0.render(), "agent:main:task:shared:t2");
    // Its run reports when it ends: kept, never posted.
    call(&h, done("t1", "late"));
    assert!(h.runtime().sessions.posts.borrow().is_empty());
}

#[test]
fn a_sub_agent_that_never_reports_is_woken_then_given_up() {
    let h = host(&[("SUBAGENT_TIMEOUT_MINUTES", "1")]);
    spawn(&h, "slow work");
    block_on(h.alarm()).unwrap();
    let start = h.runtime().now.get();
    h.runtime().now.set(start + 3 * 60_000);
    block_on(h.alarm()).unwrap();
    assert_eq!(h.runtime().sessions.woken.borrow().len(), 1);
    assert!(h.runtime().sessions.posts.borrow().is_empty());
    h.runtime().now.set(start + 40 * 60_000);
    block_on(h.alarm()).unwrap();
    let posts = h.runtime().sessions.posts.borrow();
    assert_eq!(posts.len(), 1);
    assert!(
        posts[0].text.contains("ended without a result") && posts[0].text.contains("given up"),
        "{}",
        posts[0].text
    );
}
