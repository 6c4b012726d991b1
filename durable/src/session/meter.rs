//! The Session's side of the usage ledger: every LLM call it makes is
//! written down in its own `usage` table (one SQLite insert) and sent to the
//! Agent object's ledger with the next request it makes there anyway.
//!
//! - With a budget set, [`before_call`] asks for room before each call and
//!   carries the calls finished since; [`Gate::Stop`] means no call.
//! - [`after_call`] writes the call down, releases its reservation, adds it
//!   to the turn's footer and watches the cache hit rate ([`crate::usage::cache`]).
//! - [`flush`] at the end of a drain sends what is left once it is due:
//!   finished calls wait in the session up to `USAGE_SETTLE_MS` (a minute)
//!   and go in one batch, so a conversation costs its Agent object about one
//!   request a minute, not one per turn; [`next_settle`] tells the host when
//!   to run the alarm for what is still waiting. Near a limit (the ledger
//!   says `tight`) the reservation is released at once instead.
//!
//! A call is settled once: rows stay `settled = 0` until the ledger has
//! them, and the ledger ignores a `(thread, seq)` it already holds, so a
//! lost reply or an eviction sends a call again, never loses or doubles it.
//!
//! A conversation a budget stops keeps its message open: the user is told
//! (once per new message), the drain stops, and the message is answered when
//! the Agent object wakes the session (the period turned, the limit was
//! raised) or the next message arrives. `/usage` still answers meanwhile.

use super::deps::SessionDeps;
use super::reply::send;
use super::store::SessionStore;
use crate::inbound::{ChannelKind, Inbound, ReplyTarget, SessionKey};
use crate::llm::LlmReply;
use crate::ports::{LogLevel, Platform, Sql, StorageError};
use crate::protocol::usage::{BudgetStop, CallRecord, Decision, MeterRequest, Reserve, UsageKind};
use crate::usage::{cache, prices, report};
use r2_layout::Usage;

/// Calls sent to the ledger in one request at most (the rest go next time).
const MAX_SETTLE: i64 = 200;
/// Calls a session keeps at most before it settles, however recent.
const SETTLE_BATCH: usize = 50;
/// After a failed settlement, the next try waits at least this long.
const RETRY_SETTLE_MS: i64 = 10_000;
/// How often a call waits for calls in flight before giving up (60 s at
/// the ledger's 500 ms).
const MAX_WAITS: u32 = 120;
/// Meta keys: the open message is held by a budget; the newest message
/// the user was told about.
const BLOCKED: &str = "budget_blocked";
const TOLD: &str = "budget_told";

/// Whether a call may be made.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    Go,
    Stop(BudgetStop),
}

/// What a call of `kind` counts as in the session of `key`: every call of a
/// heartbeat, job or sub-agent session is that background work, and every
/// call of a peer's delegated session is delegated work.
pub fn kind_for(key: &SessionKey, kind: UsageKind) -> UsageKind {
    match key {
        SessionKey::Heartbeat(_) => UsageKind::Heartbeat,
        SessionKey::Job { .. } => UsageKind::Job,
        SessionKey::Task { .. } => UsageKind::Subagent,
        SessionKey::Delegated { .. } => UsageKind::Delegated,
        _ => kind,
    }
}

/// Reads the calls not yet settled from SQLite, once per object (and again
/// after a batch too large for one request).
fn load<S: Sql>(store: &SessionStore<'_, S>, deps: &SessionDeps<'_>) -> Result<(), StorageError> {
    let mut m = deps.meter.borrow_mut();
    if !m.loaded {
        let thread = deps.key.render();
        m.pending = store
            .unsettled(MAX_SETTLE)?
            .into_iter()
            .map(|c| CallRecord {
                thread: thread.clone(),
                session_id: c.session_id,
                seq: c.seq,
                at: c.at,
                kind: UsageKind::parse(&c.kind).unwrap_or(UsageKind::Conversation),
                model: c.model,
                input: c.usage.input,
                output: c.usage.output,
                cache_read: c.usage.cache_read,
                cache_write: c.usage.cache_write,
                cache_write_1h: c.usage.cache_write_1h,
            })
            .collect();
        // More than a request carries: read again after these are settled.
        m.loaded = (m.pending.len() as i64) < MAX_SETTLE;
    }
    Ok(())
}

/// The request carrying what is left to settle and release (nothing is
/// taken out until the ledger confirms, see [`confirmed`]).
fn outgoing<S: Sql>(store: &SessionStore<'_, S>, deps: &SessionDeps<'_>) -> Result<MeterRequest, StorageError> {
    load(store, deps)?;
    let m = deps.meter.borrow();
    Ok(MeterRequest {
        agent: deps.config.agent.to_string(),
        settle: m.pending.iter().take(MAX_SETTLE as usize).cloned().collect(),
        release: m.release.clone(),
        reserve: None,
        summary: false,
    })
}

/// The ledger has what `req` carried.
fn confirmed<S: Sql>(
    store: &SessionStore<'_, S>,
    deps: &SessionDeps<'_>,
    req: &MeterRequest,
) -> Result<(), StorageError> {
    if let Some(last) = req.settle.iter().map(|c| c.seq).max() {
        store.mark_settled(last)?;
    }
    let mut m = deps.meter.borrow_mut();
    m.pending.retain(|c| !req.settle.iter().any(|s| s.seq == c.seq));
    m.release.retain(|r| !req.release.contains(r));
    // The ledger answered: what still waits need not wait for a retry.
    m.not_before = 0;
    if m.release.is_empty() {
        m.release_since = None;
    }
    Ok(())
}

/// When what is waiting must go to the ledger (`None`: nothing waits).
fn due(deps: &SessionDeps<'_>) -> Option<i64> {
    let m = deps.meter.borrow();
    let oldest = m.pending.iter().map(|c| c.at).min();
    let since = match (oldest, m.release_since) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    let at = if m.pending.len() >= SETTLE_BATCH || (m.tight && !m.release.is_empty()) {
        since
    } else {
        since.saturating_add(deps.config.usage.settle_ms)
    };
    Some(at.max(m.not_before))
}

/// When the session should run again to settle what is waiting (after a
/// drain; `None`: nothing waits, or the ledger is off).
pub fn next_settle(deps: &SessionDeps<'_>) -> Option<i64> {
    if !deps.config.usage.ledger {
        return None;
    }
    due(deps)
}

/// Sends a warning to the owner (the `notify` channel).
async fn tell_owner<P: Platform>(p: &P, deps: &SessionDeps<'_>, notice: Option<String>) -> Result<(), StorageError> {
    if let Some(text) = notice {
        let owner = ReplyTarget {
            channel: ChannelKind::Notify,
            chat_id: "owner".into(),
            extra: Some("budget".into()),
            ..Default::default()
        };
        send(p, deps, &owner, &text).await?;
    }
    Ok(())
}

/// Before an LLM call of `kind` whose request is about `prompt_tokens`
/// long: with a budget, asks the Agent object for room (waiting while
/// calls in flight may take the rest). Without a budget, or when the Agent
/// object cannot be reached (logged: a hiccup there must not silence the
/// agent), the call goes.
pub async fn before_call<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    kind: UsageKind,
    prompt_tokens: u64,
) -> Result<Gate, StorageError> {
    if let Some(stop) = super::subagent::over_limit(p, deps)? {
        return Ok(Gate::Stop(stop));
    }
    let settings = &deps.config.usage;
    if !settings.ledger || !settings.budget.is_set() {
        return Ok(Gate::Go);
    }
    let store = SessionStore::new(p.sql());
    for _ in 0..=MAX_WAITS {
        let mut req = outgoing(&store, deps)?;
        req.reserve = Some(Reserve {
            thread: deps.key.render(),
            kind,
            model: deps.config.llm.model.clone(),
            prompt_tokens,
            max_output_tokens: u64::from(deps.config.llm.max_tokens),
        });
        let reply = match p.meter(&req).await {
            Ok(r) => r,
            Err(e) => {
                p.log(LogLevel::Error, &format!("usage ledger unreachable, the call goes unmetered: {e}"));
                return Ok(Gate::Go);
            }
        };
        confirmed(&store, deps, &req)?;
        tell_owner(p, deps, reply.notice).await?;
        match reply.decision {
            Some(Decision::Go { reservation, tight }) => {
                let mut m = deps.meter.borrow_mut();
                (m.open, m.tight) = ((reservation != 0).then_some(reservation), tight);
                return Ok(Gate::Go);
            }
            Some(Decision::Stop(stop)) => return Ok(Gate::Stop(stop)),
            Some(Decision::Wait { retry_ms }) => p.sleep(retry_ms).await,
            None => return Ok(Gate::Go),
        }
    }
    Ok(Gate::Stop(BudgetStop {
        scope: "busy".into(),
        resets_at: 0,
        background: kind.is_background(),
        message: "⚠️ My budget is nearly used up and other conversations are using the rest right now, so I'm not \
calling my model. Your message is saved; send me anything to try again."
            .into(),
    }))
}

/// What a request sent, for the cache watch: its system prompt and its
/// tool definitions (count, size).
pub struct Sent<'a> {
    pub system: &'a str,
    pub tools: (usize, usize),
    /// How long the system prompt and tools were asked to stay cached.
    pub prefix_ttl: crate::llm::CacheTtl,
}

/// After an LLM call: writes it down (to settle with the next request),
/// releases its reservation, adds it to the turn's footer and checks the
/// cache hit rate.
pub fn after_call<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    kind: UsageKind,
    reply: &LlmReply,
    sent: Sent<'_>,
) -> Result<(), StorageError> {
    let model = if reply.model.is_empty() { deps.config.llm.model.as_str() } else { reply.model.as_str() };
    let now = p.now_ms();
    write_down(deps, store, session_id, kind, model, &reply.usage, now)?;
    let mut m = deps.meter.borrow_mut();
    let index = match &m.last_call {
        Some(last) if last.session_id == session_id => last.index + 1,
        _ => 0,
    };
    let u = &reply.usage;
    let shape = cache::Shape {
        session_id: session_id.to_owned(),
        index,
        at: now,
        model: model.to_owned(),
        system: sent.system.to_owned(),
        tools: sent.tools,
        prompt: u.input + u.cache_read + u.cache_write,
        // A heartbeat's or job's run is its prefix and one short message.
        cached_for_ms: match deps.key {
            SessionKey::Heartbeat(_) | SessionKey::Job { .. } => sent.prefix_ttl.ms(),
            _ => cache::CACHE_TTL_MS,
        },
    };
    if let Some((rate, cause)) = cache::diagnose(m.last_call.as_ref(), &shape, u) {
        p.log(
            LogLevel::Warn,
            &format!(
                "cache hit rate {rate:.2} below {} in steady state ({}, call {} of session {session_id}): likely {}",
                cache::STEADY_MIN_HIT_RATE,
                deps.key,
                index + 1,
                cause.words()
            ),
        );
    }
    m.last_call = Some(shape);
    Ok(())
}

/// A call stopped while the model wrote (`super::stop`): its figures went
/// with the dropped stream, so `usage` is an estimate; written down and
/// priced like any call, its reservation released.
pub fn cut_call<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    kind: UsageKind,
    usage: &Usage,
) -> Result<(), StorageError> {
    write_down(deps, store, session_id, kind, &deps.config.llm.model, usage, p.now_ms())
}

/// Writes a call down (to settle with the next request), releases its
/// reservation and adds it to the turn's footer.
fn write_down<S: Sql>(
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    kind: UsageKind,
    model: &str,
    usage: &Usage,
    now: i64,
) -> Result<(), StorageError> {
    let seq = store.record_call(now, session_id, model, kind.as_str(), usage)?;
    let mut m = deps.meter.borrow_mut();
    if m.loaded {
        m.pending.push(CallRecord {
            thread: deps.key.render(),
            session_id: session_id.to_owned(),
            seq,
            at: now,
            kind,
            model: model.to_owned(),
            input: usage.input,
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            cache_write_1h: usage.cache_write_1h,
        });
    }
    if let Some(r) = m.open.take() {
        m.release.push(r);
        m.release_since.get_or_insert(now);
    }
    if deps.config.usage.footer {
        let price = m.prices.get_or_insert_with(|| prices::PriceBook::new(&deps.config.usage.prices)).price(model);
        m.turn.add(usage);
        match price {
            Some(price) => m.turn_cost = Some(m.turn_cost.unwrap_or(0.0) + prices::cost(&price, usage)),
            None => m.turn_unpriced = true,
        }
        m.turn_model = model.to_owned();
    }
    Ok(())
}

/// A voice reply's speech call: kind `tts`, the characters spoken as input
/// (priced when the model has a price per million characters, `tts-1`).
pub fn record_tts<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    session_id: &str,
    chars: u64,
) -> Result<(), StorageError> {
    let model = deps.config.voice.model.as_str();
    let (now, kind) = (p.now_ms(), UsageKind::Tts);
    let seq = store.record_call(now, session_id, model, kind.as_str(), &r2_layout::Usage::new(chars, 0, 0, 0))?;
    let mut m = deps.meter.borrow_mut();
    if m.loaded {
        let (thread, session_id, model) = (deps.key.render(), session_id.to_owned(), model.to_owned());
        let call = CallRecord {
            thread,
            session_id,
            seq,
            at: now,
            kind,
            model,
            input: chars,
            output: 0,
            cache_read: 0,
            cache_write: 0,
            cache_write_1h: 0,
        };
        m.pending.push(call);
    }
    Ok(())
}

/// A call that failed (no usage): its reservation is released.
pub fn call_failed(deps: &SessionDeps<'_>, now: i64) {
    let mut m = deps.meter.borrow_mut();
    if let Some(r) = m.open.take() {
        m.release.push(r);
        m.release_since.get_or_insert(now);
    }
}

/// Sends what waits to be settled, once it is due (the end of a drain). A
/// ledger that cannot be reached gets it on a later try.
pub async fn flush<P: Platform>(p: &P, deps: &SessionDeps<'_>) -> Result<(), StorageError> {
    if !deps.config.usage.ledger {
        return Ok(());
    }
    let store = SessionStore::new(p.sql());
    load(&store, deps)?;
    let now = p.now_ms();
    if due(deps).is_none_or(|at| at > now) {
        return Ok(());
    }
    let req = outgoing(&store, deps)?;
    match p.meter(&req).await {
        Ok(reply) => {
            confirmed(&store, deps, &req)?;
            tell_owner(p, deps, reply.notice).await?;
        }
        Err(e) => {
            deps.meter.borrow_mut().not_before = now.saturating_add(RETRY_SETTLE_MS.max(deps.config.usage.settle_ms));
            p.log(LogLevel::Warn, &format!("usage not settled yet ({} calls; retried later): {e}", req.settle.len()));
        }
    }
    Ok(())
}

/// A turn starts: its footer counts from zero, and a message a budget held
/// is tried again.
pub fn begin_turn<S: Sql>(store: &SessionStore<'_, S>, deps: &SessionDeps<'_>) -> Result<(), StorageError> {
    let mut m = deps.meter.borrow_mut();
    (m.turn, m.turn_cost, m.turn_unpriced) = (Usage::default(), None, false);
    let blocked = match m.blocked {
        Some(b) => b,
        None => store.meta(BLOCKED)?.is_some(),
    };
    if blocked {
        store.delete_meta(BLOCKED)?;
    }
    m.blocked = Some(false);
    Ok(())
}

/// A budget stopped the turn's call. Background work just does not run
/// (logged). A person is told, once per new message, and the message stays
/// open for later (see [`held`]).
pub async fn stopped<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
    inbound: &Inbound,
    stop: &BudgetStop,
) -> Result<(), StorageError> {
    if stop.background || inbound.channel == ChannelKind::System {
        p.log(LogLevel::Info, &format!("{} not run: {}", deps.key, stop.message));
        if matches!(deps.key, SessionKey::Task { .. }) {
            // A sub-agent's result says why there is none.
            super::subagent::stopped(p, deps, store, inbound, stop).await?;
        }
        return Ok(());
    }
    store.set_meta(BLOCKED, "1")?;
    deps.meter.borrow_mut().blocked = Some(true);
    // The newest message waiting for an answer (`/usage` is answered anyway).
    let newest = store
        .open_items()?
        .into_iter()
        .filter(|(_, payload)| {
            hearth_json::from_slice::<Inbound>(payload.as_bytes()).is_ok_and(|m| !is_usage_command(&m.text))
        })
        .map(|(seq, _)| seq)
        .max()
        .unwrap_or(0);
    let told: i64 = store.meta(TOLD)?.and_then(|v| v.parse().ok()).unwrap_or(0);
    if newest > told {
        send(p, deps, &inbound.reply_target, &stop.message).await?;
        store.set_meta(TOLD, &newest.to_string())?;
    }
    Ok(())
}

/// Whether the last turn was held by a budget: its message stays open and
/// the drain stops until the session is woken.
pub fn held(deps: &SessionDeps<'_>) -> bool {
    deps.meter.borrow().blocked == Some(true)
}

/// The turn's footer appended to its answer, when `USAGE_FOOTER` is on and
/// a person asked.
pub fn with_footer(deps: &SessionDeps<'_>, inbound: &Inbound, text: String) -> String {
    if !deps.config.usage.footer || inbound.channel == ChannelKind::System {
        return text;
    }
    let m = deps.meter.borrow();
    let cost = if m.turn_unpriced { None } else { m.turn_cost };
    format!("{text}\n\n{}", report::footer(&m.turn, cost, &m.turn_model))
}

/// `/usage`, possibly addressed as `/usage@botname`.
pub fn is_usage_command(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    first.split('@').next().unwrap_or("").eq_ignore_ascii_case("/usage")
}

/// Answers `/usage` (owner only, no LLM call): today, this month, by kind,
/// cache hit rate, budget left, from the Agent object's ledger (after
/// settling this session's calls, so the figures include them).
pub async fn answer_usage<P: Platform>(p: &P, deps: &SessionDeps<'_>, inbound: &Inbound) -> Result<(), StorageError> {
    let text = if !deps.config.is_owner(inbound.channel, &inbound.sender_id) {
        "Only my owner can see what I cost.".to_owned()
    } else if !deps.config.usage.ledger {
        "My usage ledger is off (USAGE_LEDGER=off).".to_owned()
    } else {
        let store = SessionStore::new(p.sql());
        let mut req = outgoing(&store, deps)?;
        req.summary = true;
        match p.meter(&req).await {
            Ok(reply) => {
                confirmed(&store, deps, &req)?;
                tell_owner(p, deps, reply.notice).await?;
                reply
                    .summary
                    .map_or_else(|| "⚠️ My usage ledger gave no figures.".to_owned(), |s| report::summary_text(&s))
            }
            Err(e) => format!("⚠️ I could not read my usage right now ({e}). Try again in a moment."),
        }
    };
    send(p, deps, &inbound.reply_target, &text).await?;
    Ok(())
}

/// While a budget holds the queue: answers the `/usage` commands waiting
/// behind the held message, so the owner can still see where things stand.
pub async fn answer_waiting_usage<P: Platform, S: Sql>(
    p: &P,
    deps: &SessionDeps<'_>,
    store: &SessionStore<'_, S>,
) -> Result<(), StorageError> {
    for (seq, payload) in store.pending()? {
        let Ok(inbound) = hearth_json::from_slice::<Inbound>(payload.as_bytes()) else { continue };
        if is_usage_command(&inbound.text) {
            store.start(seq, "", None)?;
            answer_usage(p, deps, &inbound).await?;
            store.finish(seq, p.now_ms())?;
        }
    }
    Ok(())
}
