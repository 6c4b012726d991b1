//! Tool calls waiting for the owner, in the Agent object (see
//! `crate::approvals`): asking the owner in their private chat with buttons
//! (on the call's own platform when the owner is there, else the first
//! where they are), the notification stream, the taps and the console's
//! answers, the timeout, and waking the session whose turn waits.

use super::host::{AgentHost, AgentIo, AgentRuntime, Refusal};
use crate::approvals::store::{ApprovalStore, Request};
use crate::approvals::{self as ap};
use crate::channels::buttons::{self, Button, Posted};
use crate::channels::Channels;
use crate::inbound::SessionKey;
use crate::people::roster::RosterStore;
use crate::ports::LogLevel;
use crate::protocol::agent::PublishRequest;
use crate::protocol::approvals::{ApprovalCall, ApprovalRow, ApprovalState, AskedIn, Decision};
use crate::protocol::dreams::{Tap, TapOutcome};
use crate::scheduled::SessionQueue;
use crate::settings::{AgentConfig, Principal};
use std::rc::Rc;

/// What an approvals call answers.
pub enum ApprovalAnswer {
    State(ApprovalState),
    List(Vec<ApprovalRow>),
}

fn state(r: &Request) -> ApprovalState {
    ApprovalState {
        id: r.row.id,
        decision: r.row.decision,
        expires_at: r.row.expires_at,
        asked_in: r.asked.as_ref().map(|(c, chat, _)| AskedIn { channel: *c, chat: chat.clone() }),
    }
}

fn minutes(ms: i64) -> i64 {
    (ms / 60_000).max(1)
}

impl<R: AgentRuntime + 'static> AgentHost<R> {
    fn approvals_config(&self, agent: &str) -> Result<Rc<AgentConfig>, Refusal> {
        self.runtime().agent_config(agent).map_err(|e| match e {
            crate::settings::ConfigError::UnknownAgent(..) => Refusal { status: 404, message: e.to_string() },
            _ => Refusal { status: 500, message: e.to_string() },
        })
    }

    /// The owner's accounts: `OWNER_IDS`, then those claimed or linked.
    pub(super) fn owners(&self, cfg: &AgentConfig) -> Vec<Principal> {
        let mut owners = cfg.owners.clone();
        if let Ok(roster) = RosterStore::new(&**self.runtime().sql()) {
            if let Ok(view) = roster.view(!cfg.owners.is_empty()) {
                owners.extend(view.owners.into_iter().filter(|p| !cfg.owners.contains(p)));
            }
        }
        owners
    }

    /// An approvals call (`POST /approvals/call`).
    pub async fn approvals(&self, call: &ApprovalCall) -> Result<ApprovalAnswer, Refusal> {
        let agent = match call {
            ApprovalCall::Ask(a) => &a.agent,
            ApprovalCall::Status { agent, .. } | ApprovalCall::Decide { agent, .. } | ApprovalCall::List { agent } => {
                agent
            }
        };
        let cfg = self.approvals_config(agent)?;
        let sql = &**self.runtime().sql();
        let store = ApprovalStore::new(sql)?;
        let now = self.runtime().now_ms();
        match call {
            ApprovalCall::Ask(ask) => {
                let prompt = ap::prompt(agent, &ask.origin, &ask.tool, &ask.args, minutes(ask.timeout_ms));
                let (req, made) = store.open(ask, &prompt, now)?;
                if made {
                    self.ask_owner(&cfg, &store, &req).await?;
                    self.runtime().log(
                        LogLevel::Info,
                        &format!(
                            "approvals: {} in {} waits for the owner (request {})",
                            ask.tool, ask.session_key, req.row.id
                        ),
                    );
                }
                let req = store.get(req.row.id)?.unwrap_or(req);
                Ok(ApprovalAnswer::State(state(&req)))
            }
            ApprovalCall::Status { id, expire, .. } => {
                let req =
                    store.get(*id)?.ok_or_else(|| Refusal { status: 404, message: format!("no request {id}") })?;
                if *expire && req.row.decision == Decision::Waiting && req.row.expires_at <= now {
                    self.settle(&cfg, &store, &req, Decision::Expired, "timeout", false).await?;
                }
                let req = store.get(*id)?.unwrap_or(req);
                Ok(ApprovalAnswer::State(state(&req)))
            }
            ApprovalCall::Decide { id, approve, by, .. } => {
                let req =
                    store.get(*id)?.ok_or_else(|| Refusal { status: 404, message: format!("no request {id}") })?;
                let decision = if *approve { Decision::Approved } else { Decision::Denied };
                if req.row.decision == Decision::Waiting && req.row.expires_at <= now {
                    self.settle(&cfg, &store, &req, Decision::Expired, "timeout", true).await?;
                } else if req.row.decision == Decision::Waiting {
                    self.settle(&cfg, &store, &req, decision, by, true).await?;
                }
                let req = store.get(*id)?.unwrap_or(req);
                Ok(ApprovalAnswer::State(state(&req)))
            }
            ApprovalCall::List { .. } => Ok(ApprovalAnswer::List(store.list(100)?)),
        }
    }

    /// Asks the owner: in their private chat with buttons (a call from a
    /// group is never asked in the group), and on the notification stream.
    async fn ask_owner<S: crate::ports::Sql + ?Sized>(
        &self,
        cfg: &AgentConfig,
        store: &ApprovalStore<'_, S>,
        req: &Request,
    ) -> Result<(), Refusal> {
        let channels = Channels::for_agent(self.runtime().vars(), cfg);
        let owners = self.owners(cfg);
        let origin = req.row.origin.channel;
        let mut candidates: Vec<&Principal> = owners.iter().filter(|o| o.channel == origin).collect();
        candidates.extend(owners.iter().filter(|o| o.channel != origin));
        let buttons = [Button::approve(ap::data(req.row.id, 'a')), Button::deny(ap::data(req.row.id, 'd'))];
        let io = AgentIo(self.runtime());
        let mut asked = None;
        for owner in candidates.into_iter().filter(|o| buttons::can_ask(&channels, o.channel)) {
            match buttons::post(&io, &channels, owner, &req.prompt, &buttons).await {
                Ok(p) => {
                    asked = Some(p);
                    break;
                }
                Err(e) => self.runtime().log(LogLevel::Warn, &format!("approvals: {owner} not asked: {e}")),
            }
        }
        if let Some(p) = &asked {
            store.asked_in(req.row.id, p.channel, &p.chat, &p.message)?;
        }
        if let Some(key) = SessionKey::parse(&req.row.session_key) {
            let notice = format!(
                "🔐 Approval {} waits: {} from {} ({}). Approve or deny it on the console, or with POST /api/agents/{}/approvals/{} {{\"approve\": true}}.",
                req.row.id,
                req.row.tool,
                ap::origin_words(&req.row.origin),
                req.row.args,
                cfg.agent,
                req.row.id
            );
            if let Err(e) = self.publish(&PublishRequest { session_key: key, notices: vec![notice] }) {
                self.runtime().log(LogLevel::Warn, &format!("approvals: not on the notification stream: {e}"));
            }
        }
        Ok(())
    }

    /// Settles a request: recorded (the first answer stands), the owner's
    /// buttons say how (unless `buttons_too` is false because the tap's own
    /// answer replaces them), and the session whose turn waits is woken.
    async fn settle<S: crate::ports::Sql + ?Sized>(
        &self,
        cfg: &AgentConfig,
        store: &ApprovalStore<'_, S>,
        req: &Request,
        decision: Decision,
        by: &str,
        buttons_too: bool,
    ) -> Result<bool, Refusal> {
        let now = self.runtime().now_ms();
        if !store.decide(req.row.id, decision, by, now)? {
            return Ok(false);
        }
        self.runtime().log(
            LogLevel::Info,
            &format!("approvals: request {} ({}) {} by {by}", req.row.id, req.row.tool, decision.as_str()),
        );
        if buttons_too {
            if let Some((channel, chat, message)) = &req.asked {
                let channels = Channels::for_agent(self.runtime().vars(), cfg);
                let at = Posted { channel: *channel, chat: chat.clone(), message: message.clone() };
                let settled = Button { label: ap::settled_label(decision).into(), data: ap::data(req.row.id, 's') };
                if let Err(e) = buttons::settle(&AgentIo(self.runtime()), &channels, &at, &req.prompt, &settled).await {
                    self.runtime()
                        .log(LogLevel::Warn, &format!("approvals: request {} buttons not settled: {e}", req.row.id));
                }
            }
        }
        if let Some(key) = SessionKey::parse(&req.row.session_key) {
            if let Err(e) = self.runtime().queue().wake(&key).await {
                self.runtime().log(LogLevel::Warn, &format!("approvals: {key} not woken: {e}"));
            }
        }
        Ok(true)
    }

    /// A tap on an approval's button: only the owner's count (anyone
    /// else's changes nothing and is told so).
    pub async fn approval_tap(&self, tap: &Tap) -> Result<TapOutcome, Refusal> {
        let cfg = self.approvals_config(&tap.agent)?;
        let sql = &**self.runtime().sql();
        let store = ApprovalStore::new(sql)?;
        let now = self.runtime().now_ms();
        let note = |text: &str| TapOutcome { note: text.to_owned(), state: None, settled: None };
        let outcome = match ap::parse_data(&tap.data) {
            None => note("I don't know this button."),
            Some((id, action)) => match store.get(id)? {
                None => note("I have no such request."),
                Some(req) => {
                    let tapper = Principal::new(tap.channel, tap.from.clone());
                    if !self.owners(&cfg).contains(&tapper) {
                        self.runtime().log(
                            LogLevel::Warn,
                            &format!("approvals: {tapper} tapped request {id}, and is not the owner: nothing done"),
                        );
                        note(ap::NOT_YOURS)
                    } else {
                        let wanted = match action {
                            'a' => Some(Decision::Approved),
                            'd' => Some(Decision::Denied),
                            _ => None,
                        };
                        let mut decision = req.row.decision;
                        let mut already = true;
                        if let (Decision::Waiting, Some(w)) = (decision, wanted) {
                            decision = if req.row.expires_at <= now { Decision::Expired } else { w };
                            already = !self.settle(&cfg, &store, &req, decision, &tapper.to_string(), false).await?;
                            if already {
                                decision = store.get(id)?.map_or(decision, |r| r.row.decision);
                            }
                        }
                        let label = ap::settled_label(decision);
                        TapOutcome {
                            note: ap::tap_note(decision, already).to_owned(),
                            state: Some(decision.as_str().to_owned()),
                            settled: (decision != Decision::Waiting).then(|| format!("{}\n\n{label}", req.prompt)),
                        }
                    }
                }
            },
        };
        self.answer_tap(&cfg, tap, &outcome).await;
        Ok(outcome)
    }

    /// The tap's answer where the platform takes it from us (Telegram's
    /// callback, Slack's `response_url`); Discord's is the webhook's reply.
    async fn answer_tap(&self, cfg: &AgentConfig, tap: &Tap, outcome: &TapOutcome) {
        let channels = Channels::for_agent(self.runtime().vars(), cfg);
        let io = AgentIo(self.runtime());
        let log = |e: String| self.runtime().log(LogLevel::Warn, &format!("approvals: a tap not answered: {e}"));
        match tap.channel {
            crate::inbound::ChannelKind::Telegram => {
                if let Err(e) = buttons::answer_tap(&io, &channels, tap.channel, &tap.callback_id, &outcome.note).await
                {
                    log(e);
                }
                if let (Some(text), Some(chat), Some(mid), Some((id, action))) =
                    (&outcome.settled, &tap.chat, tap.message_id, ap::parse_data(&tap.data))
                {
                    if action != 's' {
                        let decision = outcome.state.as_deref().and_then(Decision::parse).unwrap_or(Decision::Waiting);
                        let at = Posted { channel: tap.channel, chat: chat.clone(), message: mid.to_string() };
                        let settled = Button { label: ap::settled_label(decision).into(), data: ap::data(id, 's') };
                        if let Err(e) = buttons::settle(&io, &channels, &at, text, &settled).await {
                            log(e);
                        }
                    }
                }
            }
            crate::inbound::ChannelKind::Slack => {
                if let (Some(url), Some(text)) = (&tap.respond_to, &outcome.settled) {
                    let decision = outcome.state.as_deref().and_then(Decision::parse).unwrap_or(Decision::Waiting);
                    let prompt = text.rsplit_once("\n\n").map_or(text.as_str(), |(p, _)| p);
                    let body = crate::channels::slack::buttons::replaced(prompt, ap::settled_label(decision));
                    let req = crate::ports::HttpRequest::post_json(url.clone(), &body, 10_000);
                    use crate::ports::Http;
                    match self.runtime().http().send(req).await {
                        Ok(r) if r.status == 200 => {}
                        Ok(r) => log(format!("response_url answered {}", r.status)),
                        Err(e) => log(e.to_string()),
                    }
                }
            }
            _ => {}
        }
    }

    /// Any of the agent's buttons: an approval's, else dreaming's.
    pub async fn tap(&self, tap: &Tap) -> Result<TapOutcome, Refusal> {
        if tap.data.starts_with("ok:") {
            self.approval_tap(tap).await
        } else {
            self.dream_tap(tap).await
        }
    }
}
