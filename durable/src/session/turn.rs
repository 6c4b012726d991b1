//! The turn loop: take queued messages in order and answer each.

use super::lifecycle::{self, ResetError, ResetReason};
use super::store::{InboxItem, SessionStore};
use super::toolbox;
use crate::clock;
use crate::inbound::{ChatKind, Inbound, SessionKey, ADMIN_CHANNEL};
use crate::llm::{self, ChatRequest, LlmReply};
use crate::media::{self, MediaCache};
use crate::memory;
use crate::ports::{Channel, LogLevel, Platform, StorageError};
use crate::prompt::{self, RuntimeInfo};
use crate::settings::AgentConfig;
use crate::toolkit::ToolOutcome;
use crate::toolkit::ToolSpec;
use crate::tools::ToolContext;
use crate::workspace::{Workspace, WorkspaceCache};
use r2_layout::{AssistantBlock, Message, ResultBlock, UserBlock, UserContent};
use std::cell::{Cell, RefCell};

/// A message that failed this many times is given up (and the user told).
pub const MAX_ATTEMPTS_PER_MESSAGE: i64 = 3;

/// Told when a message waited in the queue past its reply deadline.
pub const QUEUED_PAST_DEADLINE: &str = "⚠️ Your message waited in my queue longer than I can still answer it here, \
so I did not start on it. It is saved in our history; please ask again.";
/// Told when a turn reaches its reply deadline between model calls.
pub const TURN_PAST_DEADLINE: &str = "⚠️ This is taking longer than I can still answer here, so I stopped. \
What I did so far is saved; please ask again.";

/// What a session needs besides the platform.
pub struct SessionDeps<'a> {
    pub config: &'a AgentConfig,
    pub key: &'a SessionKey,
    pub workspace_cache: &'a RefCell<WorkspaceCache>,
    /// R2 operations of the last workspace load, for `/status`; `None` while
    /// a load runs (the cache is out for it) or before the first.
    pub workspace_load_ops: &'a Cell<Option<u32>>,
    /// Media bytes kept between LLM calls (byte-budgeted LRU).
    pub media_cache: &'a RefCell<MediaCache>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DrainReport {
    pub turns: u32,
    pub llm_calls: u32,
}

/// Takes every open message, oldest first, and runs its turn. Returns when
/// the queue is empty. Storage errors stop the drain (the alarm retries);
/// LLM and channel errors are handled inside the turn.
pub async fn drain<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> Result<DrainReport, StorageError> {
    let store = SessionStore::new(p.sql());
    let mut report = DrainReport::default();
    while let Some(item) = store.next_open()? {
        let inbound: Option<Inbound> = serde_json::from_str(&item.payload).ok();
        let Some(inbound) = inbound else {
            p.log(LogLevel::Error, &format!("dropping unreadable queued message {}", item.seq));
            store.finish(item.seq, p.now_ms())?;
            continue;
        };
        if item.attempts >= MAX_ATTEMPTS_PER_MESSAGE {
            p.log(LogLevel::Error, &format!("giving up on message {} after {} attempts", item.seq, item.attempts));
            let _ = p
                .channel()
                .send_text(
                    &inbound.reply_target,
                    "⚠️ I could not process your message after several tries. It is saved in our history.",
                )
                .await;
            store.finish(item.seq, p.now_ms())?;
            continue;
        }
        // A reset is recognised whether it starts now or resumes (eviction,
        // or a retry after a storage error): never answered as a message.
        if is_reset_command(&inbound.text) {
            if item.active {
                p.log(LogLevel::Warn, &format!("resuming interrupted reset for message {}", item.seq));
                store.retry(item.seq)?;
            } else {
                store.start(item.seq, "", None)?;
            }
            let text = match reset_now(p, deps, &inbound.channel, ResetReason::Command).await? {
                Ok(o) if o.messages == 0 => "🧹 Fresh start (there was nothing to archive).".to_owned(),
                Ok(o) => format!(
                    "🧹 Fresh start. I archived our conversation ({} messages){}.",
                    o.messages,
                    if o.memories > 0 {
                        format!(" and noted {} things to remember", o.memories)
                    } else {
                        String::new()
                    }
                ),
                Err(e) => {
                    p.log(LogLevel::Error, &format!("reset failed: {e}"));
                    "⚠️ I couldn't archive our conversation, so I kept it: nothing was deleted. Try /reset again in a moment.".to_owned()
                }
            };
            send(p, &inbound.reply_target, &text).await;
            store.finish(item.seq, p.now_ms())?;
            report.turns += 1;
            continue;
        }
        if !item.active {
            let last_activity = store.meta("updated_at")?.and_then(|v| v.parse().ok());
            if let Some(reason) = lifecycle::policy_reset_due(deps, last_activity, p.now_ms()) {
                if let Err(e) = reset_now(p, deps, &inbound.channel, reason).await? {
                    // The old session goes on; the next message tries again.
                    p.log(LogLevel::Error, &format!("{reason:?} reset failed, history kept: {e}"));
                }
            }
        }
        let session_id = store.session_id(|| p.new_uuid(), p.now_ms())?;
        if !item.active && inbound.reply_target.past_deadline(p.now_ms()) {
            // Waited in the queue until its answer could no longer arrive:
            // keep the message, spend nothing on it, say so.
            begin(p, &store, &item, &inbound, &session_id, deps, Additions::default())?;
            send(p, &inbound.reply_target, QUEUED_PAST_DEADLINE).await;
            store.finish(item.seq, p.now_ms())?;
            report.turns += 1;
            continue;
        }
        let recall = if item.active { None } else { memory::recall(p.memory(), deps.key, &inbound.text).await };
        // Attachments are fetched and stored once, before the message is started.
        let attached = if item.active {
            Vec::new()
        } else {
            media::ingest(p, deps.config, &deps.key.render(), item.seq, &inbound, deps.media_cache).await?
        };
        begin(p, &store, &item, &inbound, &session_id, deps, Additions { recall, attached })?;
        if let Some(answer) = answered_before_interruption(&store, &item, &session_id)? {
            // Evicted between the answer and its bookkeeping: deliver it
            // (at least once) instead of paying for the turn again.
            send(p, &inbound.reply_target, &answer).await;
            store.finish(item.seq, p.now_ms())?;
            report.turns += 1;
            continue;
        }
        report.llm_calls += run_turn(p, &store, &inbound, &session_id, deps).await?;
        store.finish(item.seq, p.now_ms())?;
        report.turns += 1;
    }
    Ok(report)
}

/// For a resumed message: the final answer already in the history, if the
/// turn got that far (the last message is an assistant reply with text and
/// no tool calls).
fn answered_before_interruption<S: crate::ports::Sql>(
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    session_id: &str,
) -> Result<Option<String>, StorageError> {
    if !item.active {
        return Ok(None);
    }
    let rows = store.history_rows(session_id)?;
    Ok(match rows.last() {
        Some((_, Message::Assistant { content, .. }))
            if !content.iter().any(|b| matches!(b, AssistantBlock::ToolCall { .. })) =>
        {
            let text = rows.last().map(|(_, m)| m.text()).unwrap_or_default();
            (!text.trim().is_empty()).then_some(text)
        }
        _ => None,
    })
}

/// `/reset` or `/new`, possibly addressed as `/reset@botname`.
pub fn is_reset_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    let cmd = first.split('@').next().unwrap_or("");
    cmd.eq_ignore_ascii_case("/reset") || cmd.eq_ignore_ascii_case("/new")
}

/// Runs a reset; the outer `Result` is storage trouble (the alarm retries),
/// the inner one an archive failure the user is told about.
async fn reset_now<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    channel: &str,
    reason: ResetReason,
) -> Result<Result<lifecycle::ResetOutcome, ResetError>, StorageError> {
    let prepared = prepare(p, deps, channel).await;
    match lifecycle::reset(p, deps, &prepared, reason).await {
        Ok(o) => Ok(Ok(o)),
        Err(ResetError::Storage(e)) => Err(e),
        Err(e) => Ok(Err(e)),
    }
}

/// The stable part of every request of a session: system prompt and tools.
pub struct Prepared {
    pub system: String,
    pub tools: Vec<ToolSpec>,
    pub workspace: Workspace,
    /// Bytes the tool definitions add to a request (for the context estimate).
    pub tools_len: usize,
}

/// Loads the workspace and builds the system prompt and tool list.
pub async fn prepare<P: Platform>(p: &P, deps: &SessionDeps<'_>, channel: &str) -> Prepared {
    let cfg = deps.config;
    let scope = deps.key.scope();
    let (today, yesterday) = clock::today_and_yesterday(p.now_ms(), &cfg.timezone);
    let workspace = {
        let pins = crate::workspace::pins_for_turn(p, &cfg.overlay).await;
        let overlay = cfg.overlay.inputs(&pins);
        // Taken out for the load, not borrowed across its awaits, so nothing
        // the object serves meanwhile can find it borrowed; `/status` reads
        // the ops count beside it, unknown until the load is done.
        deps.workspace_load_ops.set(None);
        let mut cache = std::mem::take(&mut *deps.workspace_cache.borrow_mut());
        let loaded = crate::workspace::load_workspace(
            p.store(),
            &cfg.agent,
            scope,
            &today,
            &yesterday,
            p.now_ms(),
            &overlay,
            &toolbox::all_tool_names(),
            &mut cache,
        )
        .await;
        *deps.workspace_cache.borrow_mut() = cache;
        deps.workspace_load_ops.set(loaded.as_ref().ok().map(|ws| ws.r2_ops));
        match loaded {
            Ok(ws) => ws,
            Err(e) => {
                // Better to answer with the core prompt than not at all.
                p.log(LogLevel::Error, &format!("workspace load failed: {e}"));
                Workspace::default()
            }
        }
    };
    for w in &workspace.warnings {
        p.log(LogLevel::Warn, w);
    }
    let tools = toolbox::tool_specs(scope);
    let tool_names: Vec<&str> = tools.iter().map(|t| t.name).collect();
    let session_key = deps.key.render();
    let system = prompt::build_system_prompt(
        &workspace,
        &RuntimeInfo {
            agent: cfg.agent.as_str(),
            session_key: &session_key,
            channel,
            model: &cfg.llm.model,
            timezone: &cfg.timezone,
            scope,
            tool_names: &tool_names,
        },
    );
    let tools_len =
        tools.iter().map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len() + 32).sum();
    Prepared { system, tools, workspace, tools_len }
}

/// What joins the user's text in the stored message: notes recalled from
/// memory and the attached media's blocks.
#[derive(Default)]
struct Additions {
    recall: Option<String>,
    attached: Vec<UserBlock>,
}

/// First attempt: the user's message joins the history as the row goes
/// active. A resumed attempt finds it there already.
fn begin<P: Platform, S: crate::ports::Sql>(
    p: &P,
    store: &SessionStore<'_, S>,
    item: &InboxItem,
    inbound: &Inbound,
    session_id: &str,
    deps: &SessionDeps<'_>,
    Additions { recall, attached }: Additions,
) -> Result<(), StorageError> {
    if item.active {
        p.log(LogLevel::Warn, &format!("resuming interrupted turn for message {}", item.seq));
        return store.retry(item.seq);
    }
    let now = p.now_ms();
    let local = clock::datetime_string(now, &deps.config.timezone);
    let mut text = inbound.text.clone();
    if inbound.kind == ChatKind::Group && !inbound.sender_name.is_empty() {
        text = format!("[{}]: {}", inbound.sender_name, text);
    }
    let mut blocks = vec![UserBlock::Text { text: prompt::system_reminder(&local) }];
    blocks.extend(recall.map(|text| UserBlock::Text { text }));
    let only_media = !attached.is_empty() && text.trim().is_empty();
    blocks.extend(attached);
    if !only_media {
        blocks.push(UserBlock::Text { text });
    }
    let message = Message::User { content: UserContent::Blocks(blocks), timestamp: now };
    store.start(item.seq, session_id, Some(&message))
}

/// One turn: prompt, LLM, tools, reply. Returns the number of LLM calls.
async fn run_turn<P: Platform, S: crate::ports::Sql>(
    p: &P,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    session_id: &str,
    deps: &SessionDeps<'_>,
) -> Result<u32, StorageError> {
    let cfg = deps.config;
    let key = deps.key;
    let scope = key.scope();
    let target = &inbound.reply_target;
    p.channel().typing(target).await;
    let Prepared { system, tools: tool_specs, workspace, tools_len } = prepare(p, deps, &inbound.channel).await;
    let memory_ctx = memory::tools::MemoryToolContext {
        agent: &cfg.agent,
        store: crate::protocol::memory::store_for(key),
        scope,
        model: &cfg.llm.model,
        workspace: &workspace,
        now_ms: p.now_ms(),
    };
    let mut history = lifecycle::conversation(store, session_id)?;
    let mut calls = 0;
    let mut compacted = false;
    let budget = lifecycle::budget(deps);
    for round in 0..cfg.llm.max_tool_rounds {
        if target.past_deadline(p.now_ms()) {
            // Tell the user while the reply can still reach them, rather than
            // finish (or compact for) an answer nobody will see.
            p.log(LogLevel::Warn, &format!("turn stopped at its reply deadline after {round} rounds"));
            send(p, target, TURN_PAST_DEADLINE).await;
            return Ok(calls);
        }
        let result = {
            let mut view = media::prepare(p, cfg, deps.media_cache, &history).await;
            if !compacted && lifecycle::estimate_tokens(&system, &view.messages, tools_len, &view.media) > budget {
                // Once per turn: compaction never loops.
                compacted = true;
                let media_now = view.media.clone();
                drop(view);
                let prepared = Prepared {
                    system: system.clone(),
                    tools: tool_specs.clone(),
                    workspace: Workspace::default(),
                    tools_len,
                };
                let compaction =
                    with_typing(p, inbound, lifecycle::compact(p, deps, &prepared, session_id, &media_now)).await?;
                if let Some(c) = compaction {
                    calls += 1;
                    p.log(
                        LogLevel::Info,
                        &format!(
                            "compacted {} messages into {} ({})",
                            c.compacted_messages, c.part_key, c.archive_name
                        ),
                    );
                    history = lifecycle::conversation(store, session_id)?;
                }
                view = media::prepare(p, cfg, deps.media_cache, &history).await;
            }
            let trimmed;
            let messages: &[Message] =
                if lifecycle::estimate_tokens(&system, &view.messages, tools_len, &view.media) > budget {
                    // No second compaction and no retry: this request is trimmed once.
                    p.log(LogLevel::Warn, "context still too large after compaction: trimming this request");
                    trimmed = lifecycle::trim_to_fit(&view.messages, &system, tools_len, budget, &view.media);
                    &trimmed
                } else {
                    &view.messages
                };
            calls += 1;
            let req =
                ChatRequest { system: &system, messages, tools: &tool_specs, media: &view.media, appended_user: None };
            with_typing(p, inbound, llm::complete(p, &cfg.llm, &req)).await
        };
        let reply: LlmReply = match result {
            Ok(r) => r,
            Err(e) => {
                p.log(LogLevel::Error, &format!("turn failed: {e}"));
                send(p, target, &e.user_message()).await;
                return Ok(calls);
            }
        };
        let now = p.now_ms();
        store.record_usage(now, session_id, &cfg.llm.model, &reply.usage)?;
        let assistant = Message::Assistant {
            content: reply.blocks.clone(),
            timestamp: now,
            model: Some(if reply.model.is_empty() { cfg.llm.model.clone() } else { reply.model.clone() }),
            stop_reason: Some(reply.stop.as_str().to_owned()),
            usage: Some(reply.usage),
        };
        store.append(session_id, &assistant)?;
        history.push(assistant);
        let calls_wanted: Vec<(String, String, serde_json::Value)> =
            reply.tool_calls().map(|(id, n, a)| (id.to_owned(), n.to_owned(), a.clone())).collect();
        let last_round = round + 1 == cfg.llm.max_tool_rounds;
        if calls_wanted.is_empty() {
            let text = reply.text();
            if text.trim().is_empty() {
                p.log(LogLevel::Warn, "model returned an empty reply");
                // A person is waiting (Discord shows "thinking…" until edited);
                // scheduled runs stay silent.
                if inbound.channel != crate::inbound::SYSTEM_CHANNEL {
                    send(p, target, "(I have nothing to add.)").await;
                }
            } else {
                send(p, target, &text).await;
            }
            return Ok(calls);
        }
        let wrote_workspace = calls_wanted.iter().any(|(_, n, _)| toolbox::writes_workspace(n));
        let tool_names: Vec<&str> = tool_specs.iter().map(|t| t.name).collect();
        let tool_ctx = ToolContext {
            store: p.store(),
            agent: &cfg.agent,
            scope,
            workspace: &workspace,
            tool_names: &tool_names,
            session_id,
            live: &history,
        };
        let mut results = Vec::with_capacity(calls_wanted.len());
        for (id, name, args) in calls_wanted {
            let outcome = if last_round {
                ToolOutcome::err("tool round limit reached; answer now")
            } else {
                toolbox::run(p, &memory_ctx, &tool_ctx, &name, &args).await
            };
            let result = Message::ToolResult {
                tool_call_id: id,
                tool_name: name,
                content: vec![ResultBlock::Text { text: outcome.text }],
                is_error: outcome.is_error,
                timestamp: p.now_ms(),
            };
            store.append(session_id, &result)?;
            results.push(result);
        }
        history.extend(results);
        if wrote_workspace {
            // Folder listings are cached for a minute; our own writes show at once.
            deps.workspace_cache.borrow_mut().invalidate_listings();
        }
        if last_round {
            break;
        }
        p.channel().typing(target).await;
    }
    // Rounds used up while the model still wanted tools: say what we have.
    let partial: String = history
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { content, .. } => content.iter().find_map(|b| match b {
                AssistantBlock::Text { text } if !text.trim().is_empty() => Some(text.clone()),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or_default();
    let note = if partial.is_empty() {
        "⚠️ I used all my tool steps for this message without finishing. Ask me to continue.".to_owned()
    } else {
        format!("{partial}\n\n(⚠️ I ran out of tool steps for this message.)")
    };
    send(p, target, &note).await;
    Ok(calls)
}

/// Chat apps drop "typing…" after about 5 s: re-sent this often while the
/// model works.
pub const TYPING_REFRESH_MS: u64 = 4_000;
/// Refreshes at most this many times per call (10 minutes: past every retry).
const MAX_TYPING_REFRESHES: u32 = 150;

/// Whether someone is waiting in a chat for this turn (not a scheduled run,
/// not an admin action).
fn person_waiting(inbound: &Inbound) -> bool {
    inbound.channel != crate::inbound::SYSTEM_CHANNEL
        && !matches!(inbound.reply_target.channel.as_str(), ADMIN_CHANNEL | crate::inbound::NOTIFY_CHANNEL)
}

/// Runs `work` (an LLM call) while keeping "typing…" shown in the chat.
async fn with_typing<P: Platform, F: std::future::Future>(p: &P, inbound: &Inbound, work: F) -> F::Output {
    if !person_waiting(inbound) {
        return work.await;
    }
    let refresh = async {
        for _ in 0..MAX_TYPING_REFRESHES {
            p.sleep(TYPING_REFRESH_MS).await;
            p.channel().typing(&inbound.reply_target).await;
        }
    };
    let work = std::pin::pin!(work);
    let refresh = std::pin::pin!(refresh);
    match futures::future::select(work, refresh).await {
        futures::future::Either::Left((out, _)) => out,
        futures::future::Either::Right(((), work)) => work.await,
    }
}

async fn send<P: Platform>(p: &P, target: &crate::inbound::ReplyTarget, text: &str) {
    if target.channel == ADMIN_CHANNEL {
        p.log(LogLevel::Info, &format!("admin: {text}"));
        return;
    }
    if let Err(e) = p.channel().send_text(target, text).await {
        // The reply is in the history; the channel adapter already retried.
        p.log(LogLevel::Error, &format!("reply not delivered: {e}"));
    }
}
