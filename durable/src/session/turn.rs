//! One turn: prompt, LLM, tools, reply.

use super::answer;
use super::compaction;
use super::context::{estimate_known, estimate_tokens, trim_to_fit};
use super::deps::SessionDeps;
use super::live::Lent;
use super::meter;
use super::prefix::{prepare, KnownSession, Prepared};
use super::preview::Previewer;
use super::replay::keep_strict_form;
use super::reply::{send, send_answer};
use super::store::SessionStore;
use super::toolbox;
use super::watch::Run;
use crate::apart::apart;
use crate::inbound::{ChannelKind, Inbound};
use crate::llm::{self, rules, ChatRequest, LlmReply, StopReason};
use crate::media;
use crate::memory;
use crate::ports::{Channel, LogLevel, Platform, StorageError};
use crate::protocol::usage::UsageKind;
use crate::toolkit::ToolOutcome;
use crate::tools::ToolContext;
use crate::workspace::Workspace;
use r2_layout::{AssistantBlock, Message};

pub use super::answer::TURN_PAST_DEADLINE;

/// One turn: prompt, LLM, tools, reply, for queued message `seq` ("typing…"
/// was sent when the drain took it), in `session` as the drain read it.
/// Returns the number of LLM calls.
pub async fn run_turn<P: Platform, S: crate::ports::Sql>(
    p: &P,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    seq: i64,
    session: KnownSession<'_>,
    deps: &SessionDeps<'_>,
) -> Result<u32, StorageError> {
    let session_id = session.id;
    let cfg = deps.config;
    let key = deps.key;
    let scope = key.scope();
    let target = &inbound.reply_target;
    meter::begin_turn(store, deps)?;
    let Prepared { system, tools: tool_specs, workspace, tools_len } =
        prepare(p, deps, inbound.channel.as_str(), Some(session)).await;
    // A post's turn (a reminder, a task's result) is background work.
    let post = super::post::mark(p.sql(), inbound)?;
    let prefix_ttl = match &post {
        Some(mark) => super::post::cache_ttl(deps, mark),
        None => super::prefix::cache_ttl(store, deps)?,
    };
    let memory_ctx = memory::tools::MemoryToolContext {
        agent: &cfg.agent,
        store: crate::protocol::memory::store_for(key),
        scope,
        model: &cfg.llm.model,
        workspace: &workspace,
        now_ms: p.now_ms(),
        timezone: &cfg.timezone,
        records_use: memory::tools::MemoryToolContext::records_use_of(key),
    };
    // A turn that stopped on a call waiting for the owner goes on from there.
    let resuming = super::parked::Resuming { memory: &memory_ctx, workspace: &workspace, tools: &tool_specs };
    if super::parked::resume(p, deps, store, inbound, seq, session_id, resuming).await? == super::parked::Resume::Parked
    {
        return Ok(0);
    }
    // Lent by the history cache, not copied: a warm turn pays for the new rows.
    let mut history = Lent::take(deps.history, store, session_id)?;
    // Model calls of this message made before an eviction: the steps its
    // watchers count continue after them.
    let steps_before = history
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User { .. }))
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    let preview = Previewer::new(p, deps, inbound, seq);
    let mut calls = 0;
    let mut compacted = false;
    let budget = deps.context_budget();
    for round in 0..cfg.llm.max_tool_rounds {
        if target.past_deadline(p.now_ms()) {
            // Tell the user while the reply can still reach them, rather than
            // finish (or compact for) an answer nobody will see.
            p.log(LogLevel::Warn, &format!("turn stopped at its reply deadline after {round} rounds"));
            send(p, deps, target, TURN_PAST_DEADLINE).await?;
            return Ok(calls);
        }
        if deps.watch.stop_asked() {
            // Stopped while a tool ran: no further call.
            apart(super::stop::stopped(p, deps, store, session_id, inbound, seq, None)).await?;
            return Ok(calls);
        }
        let kind = match post {
            Some(_) => UsageKind::Job,
            None => meter::kind_for(deps.key, if round == 0 { UsageKind::Conversation } else { UsageKind::ToolRound }),
        };
        let (result, prompt_tokens) = {
            let mut view = media::prepare(p, cfg, deps.media_cache, &history).await;
            // The history's text is measured as its rows came (the cache keeps
            // each message's count); a request the media notes rewrote is
            // measured whole.
            let measure = |view: &media::hydrate::Prepared<'_>, history: &Lent<'_>| match &view.messages {
                std::borrow::Cow::Borrowed(m) => {
                    estimate_known(&system, m, history.text_tokens(), tools_len, &view.media)
                }
                std::borrow::Cow::Owned(m) => estimate_tokens(&system, m, tools_len, &view.media),
            };
            let mut size = measure(&view, &history);
            if !compacted && size > budget {
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
                    apart(with_typing(p, inbound, compaction::compact(p, deps, &prepared, session_id, &media_now)))
                        .await?;
                if let Some(c) = compaction {
                    calls += 1;
                    p.log(
                        LogLevel::Info,
                        &format!(
                            "compacted {} messages into {} ({})",
                            c.compacted_messages, c.part_key, c.archive_name
                        ),
                    );
                    history.renew(store, session_id)?;
                }
                view = media::prepare(p, cfg, deps.media_cache, &history).await;
                size = measure(&view, &history);
            }
            // What the cache stamped, when the request is the history as lent.
            let stamps = match view.messages {
                std::borrow::Cow::Borrowed(_) if size <= budget => history.stamps(),
                _ => &[],
            };
            let trimmed;
            let messages: &[Message] = if size > budget {
                // No second compaction and no retry: this request is trimmed once.
                p.log(LogLevel::Warn, "context still too large after compaction: trimming this request");
                trimmed = trim_to_fit(&view.messages, &system, tools_len, budget, &view.media);
                &trimmed
            } else {
                &view.messages
            };
            if let meter::Gate::Stop(stop) = meter::before_call(p, deps, kind, size.min(budget)).await? {
                apart(meter::stopped(p, deps, store, inbound, &stop)).await?;
                return Ok(calls);
            }
            calls += 1;
            let req = ChatRequest {
                system: &system,
                messages,
                tools: &tool_specs,
                media: &view.media,
                appended_user: None,
                memo: Some(deps.wire_memo),
                stamps,
                prefix_ttl,
            };
            deps.watch.step(steps_before + round as usize);
            // Streamed only when someone follows the answer as it is written.
            let sink = |d: llm::Delta<'_>| deps.watch.delta(d);
            let sink: llm::DeltaSink<'_> = (deps.watch.streaming() || preview.active()).then_some(&sink);
            let call = deps.watch.unless_stopped(llm::complete_repairing_with(p, &cfg.llm, &req, sink));
            (with_typing(p, inbound, preview.during(p, deps, target, call)).await, size.min(budget))
        };
        let reply: LlmReply = match result {
            Run::NotStarted => {
                calls -= 1;
                meter::call_failed(deps, p.now_ms());
                apart(super::stop::stopped(p, deps, store, session_id, inbound, seq, None)).await?;
                return Ok(calls);
            }
            Run::Stopped => {
                let cut = super::stop::CutCall { kind, prompt_tokens };
                apart(super::stop::stopped(p, deps, store, session_id, inbound, seq, Some(cut))).await?;
                return Ok(calls);
            }
            Run::Done(Ok(done)) => {
                if done.strict {
                    // The provider took the history only as plain text: keep
                    // it so, or every later turn is refused first.
                    let n = keep_strict_form(store, deps.history, session_id)?;
                    p.log(LogLevel::Warn, &format!("history refused by the provider: {n} messages kept as plain text"));
                    history.renew(store, session_id)?;
                }
                done.reply
            }
            Run::Done(Err(e)) => {
                meter::call_failed(deps, p.now_ms());
                p.log(LogLevel::Error, &format!("turn failed: {e}"));
                deps.watch.failed(&e.user_message());
                super::notes::record(p.sql(), session_id, p.now_ms(), super::notes::ERROR, &e.user_message())?;
                send(p, deps, target, &e.user_message()).await?;
                return Ok(calls);
            }
        };
        let now = p.now_ms();
        let sent = meter::Sent { system: &system, tools: (tool_specs.len(), tools_len), prefix_ttl };
        meter::after_call(p, deps, store, session_id, kind, &reply, sent)?;
        deps.watch.usage(&reply.usage);
        // Stored as the providers accept it (an empty id gets one, an input
        // that is no object becomes one): the results below carry these ids.
        let assistant = rules::conform(Message::Assistant {
            content: answer::stored_blocks(&reply),
            timestamp: now,
            model: Some(if reply.model.is_empty() { cfg.llm.model.clone() } else { reply.model.clone() }),
            stop_reason: Some(reply.stop.as_str().to_owned()),
            usage: Some(reply.usage),
        });
        store.append(session_id, &assistant)?;
        let calls_wanted: Vec<(String, String, serde_json::Value)> = match &assistant {
            Message::Assistant { content, .. } => content
                .iter()
                .filter_map(|b| match b {
                    AssistantBlock::ToolCall { id, name, arguments } => {
                        Some((id.clone(), name.clone(), arguments.clone()))
                    }
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        history.push(assistant);
        let last_round = round + 1 == cfg.llm.max_tool_rounds;
        if calls_wanted.is_empty() && reply.stop == llm::StopReason::Pause && !last_round {
            // The provider paused its own tools (a long web search): asking
            // again with its partial reply continues the turn.
            continue;
        }
        if calls_wanted.is_empty() {
            match answer::shown(&reply) {
                Some(text) => {
                    super::group::relay(p, deps, inbound, &text, seq)?;
                    send_answer(p, deps, target, &meter::with_footer(deps, inbound, text.clone()), seq).await?;
                    super::voice::speak(p, deps, store, session_id, inbound, &text).await?;
                }
                None => {
                    p.log(LogLevel::Warn, "model returned an empty reply");
                    // A person is waiting (Discord shows "thinking…" until
                    // edited); scheduled runs stay silent.
                    if inbound.channel != ChannelKind::System {
                        send(p, deps, target, answer::NOTHING_TO_ADD).await?;
                    }
                }
            }
            return Ok(calls);
        }
        // Cut at the output limit while writing calls: their input may be cut
        // too, so none runs; the model is told and goes on.
        let cut = reply.stop == StopReason::Length;
        let wrote_workspace = calls_wanted.iter().any(|(_, n, _)| toolbox::writes_workspace(n));
        let tool_names: Vec<&str> = tool_specs.iter().map(|t| &*t.name).collect();
        let tool_ctx = ToolContext {
            store: p.store(),
            agent: &cfg.agent,
            scope,
            workspace: &workspace,
            tool_names: &tool_names,
            session_id,
            live: &history,
            now_ms: p.now_ms(),
            history_keep: cfg.history_keep,
        };
        let mut results = Vec::with_capacity(calls_wanted.len());
        for (id, name, args) in calls_wanted {
            let outcome = if last_round {
                ToolOutcome::err("tool round limit reached; answer now")
            } else if cut {
                ToolOutcome::err(answer::CUT_CALL)
            } else {
                // The tool round's calls are apart: a turn that only answers
                // need not compile them.
                match apart(super::parked::gate(p, deps, inbound, seq, &id, &name, &args)).await? {
                    // It waits for the owner: the turn stops (the results so far are stored).
                    super::parked::Gate::Park => return Ok(calls),
                    super::parked::Gate::Refuse(outcome) => outcome,
                    super::parked::Gate::Run => {
                        deps.watch.tool(&name, "running");
                        let outcome = match apart(super::handoff::run(p, deps, inbound, &history, &name, &args)).await {
                            Some(outcome) => outcome,
                            None => apart(super::code::run(p, deps, &memory_ctx, &tool_ctx, &name, &args)).await,
                        };
                        deps.watch.tool(&name, if outcome.is_error { "error" } else { "done" });
                        outcome
                    }
                }
            };
            let result = toolbox::result_message(id, name, outcome, p.now_ms());
            store.append(session_id, &result)?;
            results.push(result);
        }
        let spawned = super::handoff::started(&results);
        history.extend(results);
        if wrote_workspace {
            // Folder listings are cached for a minute; our own writes show at once.
            deps.workspace_cache.borrow_mut().invalidate_listings();
        }
        if !spawned.is_empty() {
            // Background tasks started: this reply goes out now.
            apart(super::handoff::end_after_spawn(p, deps, store, session_id, inbound, seq, &reply.text(), &spawned))
                .await?;
            return Ok(calls);
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
    send(p, deps, target, &note).await?;
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
    inbound.channel != ChannelKind::System
        && !matches!(inbound.reply_target.channel, ChannelKind::Admin | ChannelKind::Notify)
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
