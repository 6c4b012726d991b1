//! `delegate`: the agent asks a peer (another agent of the same Worker, one
//! of its `ALLOWED_DELEGATES`) a task and gets the peer's answer as the
//! tool's result.
//!
//! The peer answers in a session of its own, [`SessionKey::Delegated`]: one
//! per asking session, shared scope (the peer's persona and instructions,
//! none of its owner's private files), so nothing of the asker's other
//! chats and nothing private of either agent crosses; the task is the only
//! context that does, and it stays in the asker's history. The call is a
//! message queued in the peer's Session object and answered by its alarm,
//! like an HTTP API message: the asking turn only waits for the outcome.
//!
//! Everything here is decided before anything is sent: a peer that is not
//! allowed or not configured, a session too deep in a chain, a turn that
//! asked enough already are tool errors with no call made.

use crate::inbound::{ChannelKind, ChatKind, Inbound, ReplyTarget, SessionKey};
use crate::protocol::api::{ApiOutcome, ApiTurnRequest};
use crate::settings::tasks::TasksConfig;
use crate::toolkit::{ToolOutcome, ToolSpec};
use r2_layout::AgentId;
use serde_json::{json, Value};

/// The tool's name.
pub const TOOL: &str = "delegate";

/// Longest task a call may hand over, in characters.
pub const MAX_TASK_CHARS: usize = 20_000;

/// The tool as the model sees it: its peers named (the list is fixed for an
/// agent's settings, so the prefix stays cacheable).
pub fn spec(delegates: &[String]) -> ToolSpec {
    let peers = delegates.join(", ");
    ToolSpec {
        name: TOOL.into(),
        description: format!(
            "Ask a peer agent to do a task and wait for its answer, which is this tool's result. \
Peers you may ask: {peers} (AGENTS.md says what each is for). The peer works in a conversation of its own \
with its own files: it sees nothing of this chat but `task`, so say everything it needs there. Use it for \
what a peer is better placed to do, not for what you can answer yourself."
        )
        .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": delegates, "description": "The peer's id"},
                "task": {"type": "string", "description": "The whole task, with the context the peer needs"},
            },
            "required": ["agent", "task"],
        }),
        native: None,
    }
}

/// Whether a session of `key` is offered the tool.
pub fn offered(cfg: &TasksConfig, key: &SessionKey) -> bool {
    !cfg.delegates.is_empty()
        && key.delegation_depth() < cfg.delegate_depth
        && !matches!(key, SessionKey::Heartbeat(_) | SessionKey::Job { .. })
}

/// A checked call: whom to ask, what, and in which of its sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct Asking {
    pub peer: AgentId,
    pub task: String,
    /// The peer's session for this asker's session.
    pub session: SessionKey,
}

/// Checks a call of the session `caller` that has asked peers
/// `asked_this_turn` times while answering its message. `Err`: the tool's
/// error, and nothing is sent.
pub fn check(
    cfg: &TasksConfig,
    caller: &SessionKey,
    args: &Value,
    asked_this_turn: u32,
) -> Result<Asking, ToolOutcome> {
    let me = caller.agent().as_str();
    let Some(peer) = args.get("agent").and_then(Value::as_str).map(str::trim) else {
        return Err(ToolOutcome::err("missing string argument 'agent' (the peer's id)"));
    };
    let task = args.get("task").and_then(Value::as_str).unwrap_or_default().trim().to_owned();
    if task.trim().is_empty() {
        return Err(ToolOutcome::err("missing string argument 'task' (what the peer should do)"));
    }
    if task.chars().count() > MAX_TASK_CHARS {
        return Err(ToolOutcome::err(format!(
            "the task is longer than {MAX_TASK_CHARS} characters: hand over what the peer needs, not everything"
        )));
    }
    if peer == me {
        return Err(ToolOutcome::err("you cannot delegate to yourself; no call was made"));
    }
    if !cfg.delegates.iter().any(|d| d == peer) {
        let list = if cfg.delegates.is_empty() { "none".to_owned() } else { cfg.delegates.join(", ") };
        return Err(ToolOutcome::err(format!(
            "agent {peer:?} is not one you may delegate to (ALLOWED_DELEGATES: {list}); no call was made"
        )));
    }
    if !cfg.known_agents.iter().any(|a| a == peer) {
        return Err(ToolOutcome::err(format!(
            "agent {peer:?} is not an agent of this Worker (AGENTS: {}); no call was made",
            cfg.known_agents.join(", ")
        )));
    }
    let depth = caller.delegation_depth();
    if depth >= cfg.delegate_depth {
        return Err(ToolOutcome::err(
            "you were asked this by another agent and may not pass it on (DELEGATE_DEPTH); answer it yourself",
        ));
    }
    if asked_this_turn >= cfg.delegate_calls_per_turn {
        return Err(ToolOutcome::err(format!(
            "you already asked peers {asked_this_turn} times for this message (DELEGATE_CALLS_PER_TURN); \
answer now with what you have; no call was made"
        )));
    }
    let peer = AgentId::parse(peer).map_err(|e| ToolOutcome::err(format!("agent {peer:?}: {e}")))?;
    let from = caller.agent().clone();
    let session = SessionKey::Delegated { agent: peer.clone(), from, depth: depth + 1, thread: thread_of(caller) };
    Ok(Asking { peer, task, session })
}

/// The asker's session as the peer's session names it: 16 hex digits of a
/// SHA-256 of its key (a key may be long and holds `:`).
pub fn thread_of(caller: &SessionKey) -> String {
    crate::text::sha256_hex(caller.render().as_bytes())[..16].to_owned()
}

/// The dedupe key of the `nth` asking (from 0) while the session `caller`
/// answers its message `message`: a turn resumed after an eviction that
/// asks the same again joins the same answer; anything else is a new one.
/// (Tool call ids are not used: some OpenAI-compatible servers number them
/// from `call_0` in every reply.)
pub fn request_id(caller: &SessionKey, message: &str, nth: u32, asking: &Asking) -> String {
    let what = crate::text::sha256_hex(format!("{}\n{}", asking.peer, asking.task).as_bytes());
    format!("delegate:{}:{message}:{nth}:{}", caller.render(), &what[..16])
}

/// The message queued in the peer's session under `request` ([`request_id`]).
pub fn request(asking: &Asking, caller: &SessionKey, request: String, now: i64) -> ApiTurnRequest {
    let from = caller.agent().as_str();
    let text = format!(
        "[Agent {from} asks you this. Your answer goes back to {from} as the result of its `delegate` call.]\n\n{}",
        asking.task
    );
    let thread = asking.session.render();
    ApiTurnRequest {
        session_key: asking.session.clone(),
        inbound: Inbound {
            dedupe_key: request.clone(),
            channel: ChannelKind::Api,
            kind: ChatKind::Direct,
            chat_id: thread.clone(),
            sender_id: format!("agent:{from}"),
            sender_name: from.to_owned(),
            text,
            addressed: true,
            thread_id: None,
            reply_target: ReplyTarget {
                channel: ChannelKind::Api,
                chat_id: thread.clone(),
                extra: Some(request),
                ..Default::default()
            },
            received_at: now,
            media: vec![],
            context: vec![],
            group: None,
            mentions: vec![],
            batch: None,
            order: None,
        },
        thread_id: thread,
        stream: false,
        last_event_id: None,
    }
}

/// The tool's result for the peer's outcome.
pub fn answered(peer: &AgentId, outcome: &ApiOutcome) -> ToolOutcome {
    match outcome {
        ApiOutcome::Done { text, usage, stopped } => {
            let text = if text.trim().is_empty() { "(it answered nothing)" } else { text.as_str() };
            let cut = if *stopped { " Its answer was stopped while written." } else { "" };
            ToolOutcome::ok(format!(
                "{peer} answered:\n\n{text}\n\n({peer}'s own usage: {} prompt and {} completion tokens, in its \
ledger as `delegated`.{cut})",
                usage.prompt_tokens, usage.completion_tokens
            ))
        }
        ApiOutcome::Failed { message } => ToolOutcome::err(format!("{peer} could not answer: {message}")),
    }
}

/// The tool's error when the peer did not answer in time.
pub fn timed_out(peer: &AgentId, timeout_ms: u64) -> ToolOutcome {
    ToolOutcome::err(format!(
        "{peer} did not answer within {} s (DELEGATE_TIMEOUT_SECONDS), so it was stopped; answer without it or \
ask again with a smaller task",
        timeout_ms / 1000
    ))
}

/// The tool's error when the peer's session could not be reached.
pub fn unreachable(peer: &AgentId, why: &str) -> ToolOutcome {
    ToolOutcome::err(format!("{peer} could not be reached ({why}); answer without it"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::api::ApiUsage;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> TasksConfig {
        let mut vars: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        vars.entry("AGENTS".into()).or_insert_with(|| "main,research".into());
        TasksConfig::load(&vars, "main").unwrap()
    }

    fn main_key() -> SessionKey {
        SessionKey::parse("agent:main:main").unwrap()
    }

    fn args(agent: &str, task: &str) -> Value {
        json!({"agent": agent, "task": task})
    }

    #[test]
    fn an_allowed_peer_is_asked_in_its_session_for_this_chat() {
        let c = cfg(&[("ALLOWED_DELEGATES", "research")]);
        let a = check(&c, &main_key(), &args("research", "Find the 2024 figures"), 0).unwrap();
        assert_eq!(a.peer.as_str(), "research");
        let SessionKey::Delegated { agent, from, depth, thread } = &a.session else { panic!("{:?}", a.session) };
        assert_eq!((agent.as_str(), from.as_str(), *depth), ("research", "main", 1));
        assert_eq!(a.session.scope(), r2_layout::Scope::Shared, "never the peer's private files");
        let group = SessionKey::parse("agent:main:telegram:group:-1").unwrap();
        let other = check(&c, &group, &args("research", "x"), 0).unwrap();
        assert_ne!(other.session, a.session, "each asking chat has its own session with the peer");
        assert_eq!(thread.len(), 16);
        let id = request_id(&main_key(), "telegram:update:9", 0, &a);
        assert!(id.starts_with("delegate:agent:main:main:telegram:update:9:0:"), "{id}");
        assert_ne!(id, request_id(&main_key(), "telegram:update:9", 1, &a), "the next asking is another");
        let other = Asking { task: "another task".into(), ..a.clone() };
        assert_ne!(id, request_id(&main_key(), "telegram:update:9", 0, &other), "another task is another");
        let req = request(&a, &main_key(), id.clone(), 5);
        assert_eq!(req.inbound.dedupe_key, id);
        assert_eq!(req.inbound.reply_target.extra.as_deref(), Some(id.as_str()));
        assert!(req.inbound.text.ends_with("Find the 2024 figures") && req.inbound.text.contains("Agent main"));
        assert!(!req.stream);
    }

    #[test]
    fn refusals_make_no_call_and_say_why() {
        let c = cfg(&[("ALLOWED_DELEGATES", "research,ghost")]);
        let refused = |key: &SessionKey, a: Value, asked: u32| check(&c, key, &a, asked).unwrap_err();
        let e = refused(&main_key(), args("work", "x"), 0);
        assert!(
            e.is_error && e.text.contains("not one you may delegate to") && e.text.contains("research"),
            "{}",
            e.text
        );
        let e = refused(&main_key(), args("ghost", "x"), 0);
        assert!(e.text.contains("not an agent of this Worker"), "{}", e.text);
        let e = refused(&main_key(), args("main", "x"), 0);
        assert!(e.text.contains("yourself"), "{}", e.text);
        let e = refused(&main_key(), args("research", " "), 0);
        assert!(e.text.contains("task"), "{}", e.text);
        let e = refused(&main_key(), args("research", "x"), 3);
        assert!(e.text.contains("already asked peers 3 times"), "{}", e.text);
        let asked = SessionKey::parse("agent:main:from:research:1:abc").unwrap();
        let e = refused(&asked, args("research", "x"), 0);
        assert!(e.text.contains("may not pass it on"), "{}", e.text);
        assert!(!offered(&c, &asked), "a delegated session is not offered the tool by default");
        assert!(offered(&c, &main_key()));
        assert!(!offered(&cfg(&[]), &main_key()), "nobody to ask: no tool");
    }

    #[test]
    fn a_deeper_chain_when_allowed() {
        let c = cfg(&[("ALLOWED_DELEGATES", "research"), ("DELEGATE_DEPTH", "2")]);
        let asked = SessionKey::parse("agent:main:from:research:1:abc").unwrap();
        let a = check(&c, &asked, &args("research", "x"), 0).unwrap();
        assert_eq!(a.session.delegation_depth(), 2);
        let twice = a.session.clone();
        assert!(check(&c, &twice, &args("research", "x"), 0).is_err());
    }

    #[test]
    fn outcomes_as_tool_results() {
        let peer = AgentId::parse("research").unwrap();
        let usage = ApiUsage { prompt_tokens: 120, completion_tokens: 8, ..Default::default() };
        let ok = answered(&peer, &ApiOutcome::Done { text: "42".into(), usage, stopped: false });
        assert!(!ok.is_error && ok.text.starts_with("research answered:\n\n42") && ok.text.contains("120 prompt"));
        let failed = answered(&peer, &ApiOutcome::Failed { message: "the model is down".into() });
        assert!(failed.is_error && failed.text.contains("the model is down"));
        assert!(timed_out(&peer, 120_000).text.contains("within 120 s"));
    }
}
