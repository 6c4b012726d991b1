//! The `remind` tool, offered in every session: set a reminder or a
//! follow-up in this chat, list them, cancel one. It reads the times here
//! ([`super::when`]) and asks the Agent object to keep it
//! ([`crate::protocol::reminders`], through [`Platform::reminders`]).

use super::when::{self, When};
use crate::inbound::{ChannelKind, ReplyTarget, SessionKey};
use crate::ports::Platform;
use crate::protocol::reminders::{Reminder, ReminderCall, ReminderReply};
use crate::protocol::session::PostMode;
use crate::toolkit::{ToolOutcome, ToolSpec};
use r2_layout::AgentId;
use serde_json::{json, Value};

pub const TOOL: &str = "remind";

/// Reminders a listing shows at most.
pub const LIST_MAX: usize = 50;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.into(),
        description: "Set a reminder or a follow-up in this chat, or list / cancel them. At its time I send `text` \
here as it is (run \"send\", no model call), or run it as a task: you get `text` as a prompt in this chat and \
your answer is sent (run \"task\", e.g. \"check the weather and tell me if I need an umbrella\"). Use it whenever \
someone asks to be reminded, and for follow-ups you offer (\"I'll check back tomorrow\"): set one rather than \
promise. When: `in` (90s, 20m, 2h, 3d, 1h30m), or `at` (a local date-time such as 2026-06-03 09:00 in your time \
zone, HH:MM for the next such time, or ISO 8601 with an offset); recurring: `every` (a duration) or `cron` (5 \
fields, local time), with an optional `until`. The result says when it fires."
            .into(),
        input_schema: crate::toolkit::schema(
            r#"{"type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["set", "list", "cancel"], "description": "Default: set"},
                "text": {"type": "string", "description": "What to say, or the task (at most 4000 characters)"},
                "in": {"type": "string", "description": "After this long: 20m, 2h, 1d"},
                "at": {"type": "string", "description": "2026-06-03 09:00 (local), 09:00, or 2026-06-03T09:00:00+02:00"},
                "every": {"type": "string", "description": "Recurring: every 30m, 2h, 1d (starts at `at`/`in`, else one period from now)"},
                "cron": {"type": "string", "description": "Recurring: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5"},
                "until": {"type": "string", "description": "Recurring: the last time it may fire (a date-time like `at`)"},
                "timezone": {"type": "string", "description": "IANA zone for local times (default: yours)"},
                "run": {"type": "string", "enum": ["send", "task"], "description": "Default: send"},
                "id": {"type": "string", "description": "cancel: the reminder's id (r12), or all"}
            }}"#,
        ),
        native: None,
    }
}

/// What the tool knows of the turn it runs in.
pub struct ReminderContext<'a> {
    pub agent: &'a AgentId,
    pub key: &'a SessionKey,
    /// Where the answer to the message being answered goes: the chat a
    /// reminder set now fires in.
    pub target: Option<ReplyTarget>,
    /// The agent's `TIMEZONE`.
    pub timezone: &'a str,
    pub now_ms: i64,
    /// Who this one-to-one chat is with, when known.
    pub speaker: Option<String>,
}

impl ReminderContext<'_> {
    /// Whose reminders this chat sees: its own, or every chat's in the
    /// owner's main session.
    pub fn scope(&self) -> Option<SessionKey> {
        match self.key {
            SessionKey::Main(_) => None,
            key => Some(key.clone()),
        }
    }
}

fn arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

fn channel_name(channel: ChannelKind) -> String {
    let name = channel.as_str();
    let mut c = name.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// The chat, as a listing names it.
pub fn chat_label(key: &SessionKey, target: Option<&ReplyTarget>, speaker: Option<&str>) -> String {
    let on = target.filter(|t| t.channel.is_platform()).map(|t| format!(" ({})", channel_name(t.channel)));
    match key {
        SessionKey::Main(_) => format!("your private chat{}", on.unwrap_or_default()),
        SessionKey::Heartbeat(_) => "the heartbeat".into(),
        SessionKey::Job { job, .. } => format!("job {job}"),
        SessionKey::Api { thread, .. } => format!("HTTP thread {thread}"),
        SessionKey::Direct { channel, peer, .. } => match speaker {
            Some(name) => format!("{} DM with {name}", channel_name(*channel)),
            None => format!("{} DM {peer}", channel_name(*channel)),
        },
        SessionKey::Group { channel, chat, topic: None, .. } => format!("{} group {chat}", channel_name(*channel)),
        SessionKey::Group { channel, chat, topic: Some(t), .. } => {
            format!("{} group {chat}, topic {t}", channel_name(*channel))
        }
        SessionKey::Delegated { from, .. } => format!("a request delegated by {from}"),
        SessionKey::Task { id, .. } => format!("background task {id}"),
    }
}

/// A reminder as the model is shown it.
fn shown(r: &Reminder, now: i64, with_chat: bool) -> Value {
    let mut v = json!({
        "id": r.id,
        "text": r.text,
        "run": if r.mode == PostMode::Turn { "task" } else { "send" },
        "fires": r.next_at.map(|at| when::said(at, now, &r.timezone)),
    });
    if let Some(repeats) = when::repeat_said(&when::Repeat::of(r)) {
        v["repeats"] = json!(repeats);
    }
    if let Some(until) = r.until {
        v["until"] = json!(crate::clock::datetime_string(until, &r.timezone));
    }
    if with_chat {
        v["chat"] = json!(r.chat);
    }
    v
}

fn answer(reply: Result<ReminderReply, crate::ports::StorageError>) -> Result<ReminderReply, ToolOutcome> {
    match reply {
        Ok(r) => match &r.error {
            Some(why) => Err(ToolOutcome::err(why.clone())),
            None => Ok(r),
        },
        Err(e) => Err(ToolOutcome::err(format!("reminders are unavailable right now ({e}); nothing was changed"))),
    }
}

/// Runs one call of the tool.
pub async fn run<P: Platform>(p: &P, ctx: &ReminderContext<'_>, args: &Value) -> ToolOutcome {
    // A sub-agent's or a delegated peer's session has no chat of its own:
    // a reminder set there would fire where nobody reads it.
    if matches!(ctx.key, SessionKey::Delegated { .. } | SessionKey::Task { .. }) {
        return ToolOutcome::err(
            "reminders are set in a chat, and this session is a background task or a delegated request: \
say the follow-up in your answer instead",
        );
    }
    let outcome = match arg(args, "action").unwrap_or("set") {
        "set" => set(p, ctx, args).await,
        "list" => list(p, ctx).await,
        "cancel" => cancel(p, ctx, args).await,
        other => Err(ToolOutcome::err(format!("unknown action {other:?}: use set, list or cancel"))),
    };
    outcome.unwrap_or_else(|e| e)
}

async fn set<P: Platform>(p: &P, ctx: &ReminderContext<'_>, args: &Value) -> Result<ToolOutcome, ToolOutcome> {
    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
    let mode = match arg(args, "run").unwrap_or("send") {
        "send" => PostMode::Say,
        "task" => PostMode::Turn,
        other => return Err(ToolOutcome::err(format!("unknown run {other:?}: use send or task"))),
    };
    let timezone = arg(args, "timezone").unwrap_or(ctx.timezone);
    let w = When {
        at: arg(args, "at"),
        after: arg(args, "in"),
        every: arg(args, "every"),
        cron: arg(args, "cron"),
        until: arg(args, "until"),
        timezone,
    };
    let timing = when::timing(&w, ctx.now_ms).map_err(|why| ToolOutcome::err(format!("{why}. Nothing was set.")))?;
    let Some(target) = ctx.target.clone().filter(|t| t.channel != ChannelKind::Admin) else {
        return Err(ToolOutcome::err("this conversation has no chat a reminder could be sent to"));
    };
    let whatsapp_until = crate::channels::whatsapp::ReplyExtra::of(&target).map(|e| e.until);
    let (every_ms, cron) = timing.repeat.fields();
    let reminder = Reminder {
        session_key: ctx.key.render(),
        chat: chat_label(ctx.key, Some(&target), ctx.speaker.as_deref()),
        target: Some(target),
        text: text.to_owned(),
        mode,
        every_ms,
        cron,
        next_at: Some(timing.first_at),
        until: timing.until,
        timezone: timezone.to_owned(),
        ..Default::default()
    };
    let call = ReminderCall::set(ctx.agent.as_str(), reminder);
    let reply = answer(p.reminders(&call).await)?;
    let Some(set) = reply.reminders.first() else {
        return Err(ToolOutcome::err("the reminder was not confirmed; try listing before setting it again"));
    };
    let mut v = shown(set, ctx.now_ms, false);
    v["set"] = json!(true);
    let mut notes = Vec::new();
    if timing.time_only {
        notes.push("only a time of day was given: this is the next such time".to_owned());
    }
    if whatsapp_until.is_some_and(|until| timing.first_at > until) {
        notes.push(
            "WhatsApp delivers only within 24 hours of the person's last message: unless they write before then, \
             it cannot arrive there, and the owner is told instead"
                .to_owned(),
        );
    }
    if !notes.is_empty() {
        v["note"] = json!(notes.join("; "));
    }
    Ok(ToolOutcome::ok(v.to_string()))
}

async fn list<P: Platform>(p: &P, ctx: &ReminderContext<'_>) -> Result<ToolOutcome, ToolOutcome> {
    let scope = ctx.scope();
    let call = ReminderCall::list(ctx.agent.as_str(), scope.clone());
    let reply = answer(p.reminders(&call).await)?;
    let listed: Vec<Value> =
        reply.reminders.iter().take(LIST_MAX).map(|r| shown(r, ctx.now_ms, scope.is_none())).collect();
    let mut v = json!({"reminders": listed, "pending": reply.matched});
    if reply.matched as usize > listed.len() {
        v["note"] = json!(format!("the {LIST_MAX} soonest are shown"));
    }
    if scope.is_none() {
        v["scope"] = json!("every chat of yours (this is your owner's private session)");
    }
    Ok(ToolOutcome::ok(v.to_string()))
}

async fn cancel<P: Platform>(p: &P, ctx: &ReminderContext<'_>, args: &Value) -> Result<ToolOutcome, ToolOutcome> {
    let Some(id) = arg(args, "id") else {
        return Err(ToolOutcome::err("cancel needs the reminder's `id` (list shows them), or `all`"));
    };
    let call = ReminderCall::cancel(ctx.agent.as_str(), id, ctx.scope());
    let reply = answer(p.reminders(&call).await)?;
    if reply.reminders.is_empty() {
        let where_ = if ctx.scope().is_some() { " in this chat" } else { "" };
        return Err(ToolOutcome::err(format!("no pending reminder {id}{where_}: nothing was cancelled")));
    }
    let cancelled: Vec<Value> =
        reply.reminders.iter().map(|r| json!({"id": r.id, "text": r.text, "chat": r.chat})).collect();
    Ok(ToolOutcome::ok(json!({"cancelled": cancelled}).to_string()))
}

/// `my_stats`' line about reminders: pending in this chat (every chat's in
/// the owner's main session), and the soonest. `None`: unavailable.
pub async fn stats<P: Platform>(p: &P, ctx: &ReminderContext<'_>) -> Option<Value> {
    let call = ReminderCall::list(ctx.agent.as_str(), ctx.scope());
    let reply = p.reminders(&call).await.ok().filter(|r| r.error.is_none())?;
    let next = reply.reminders.first().and_then(|r| r.next_at);
    Some(json!({
        "reminders_pending": reply.matched,
        "next_reminder": next.map(|at| when::said(at, ctx.now_ms, ctx.timezone)),
    }))
}
