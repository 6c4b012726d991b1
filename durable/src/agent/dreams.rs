//! Dreaming in the Agent object: after each cron tick's schedule work,
//! tonight's sweep if it is due ([`crate::dreaming::sweep::night`]), the
//! proposals to send or expire; the daily clean-up of the workspace history
//! (on its own claim, whether or not the agent dreams); a tap on a proposal's button; the admin view.
//!
//! The sweep's one LLM call is made here, by the Agent object itself (no
//! Session is involved: nobody waits for it, and it has no conversation).
//! Before it, the usage ledger is asked for room as kind `dreaming`
//! ([`AgentHost::reserve_call`]): when the budget's background share
//! (`BUDGET_BACKGROUND_PERCENT`) is spent, or calls in flight hold the
//! rest, the sweep is skipped tonight. After it, the call is settled in the
//! ledger (`byKind.dreaming` in `GET /api/agents/{id}/usage`, thread
//! `agent:{id}:dreaming`) and its tokens also go to the schedule's ledger.

use super::host::{AgentHost, AgentIo, AgentRuntime, Refusal};
use crate::dreaming::approval::{self, TapContext, Telegram};
use crate::dreaming::state::DreamStore;
use crate::dreaming::sweep::{self, Night};
use crate::dreaming::Permit;
use crate::dreaming::{self, Completion, DreamHost, Picked};
use crate::llm::{self, ChatRequest, LlmIo};
use crate::ports::LogLevel;
use crate::protocol::dreams::{Tap, TapOutcome};
use crate::protocol::usage::{CallRecord, Decision, UsageKind};
use crate::scheduled::store::{Claim, ScheduleStore};
use crate::scheduled::KIND_HISTORY_GC;
use crate::settings::dreaming::{history_keep, DreamConfig};
use crate::settings::{agent_ids, AgentConfig, LlmConfig};
use crate::workspace::history;
use hearth_memory::promote::Thresholds;
use r2_layout::{Message, UserContent};
use serde_json::{json, Value};
use std::collections::HashSet;

/// The runtime as the LLM module wants it.
struct Io<'a, R: AgentRuntime>(&'a R);

impl<R: AgentRuntime> LlmIo for Io<'_, R> {
    type Http = R::Http;
    fn http(&self) -> &R::Http {
        self.0.http()
    }
    async fn sleep(&self, ms: u64) {
        self.0.sleep(ms).await
    }
    fn log(&self, level: LogLevel, msg: &str) {
        self.0.log(level, msg)
    }
}

/// What the sweep gets from the Agent object.
struct Dreamer<'a, R: AgentRuntime + 'static> {
    host: &'a AgentHost<R>,
    store: R::Store,
    llm: LlmConfig,
    agent: String,
    /// The owner's budget warning, when the call crossed it (sent after the sweep).
    notice: std::cell::RefCell<Option<String>>,
}

impl<R: AgentRuntime + 'static> DreamHost for Dreamer<'_, R> {
    type Store = R::Store;
    type Sql = R::Sql;
    fn store(&self) -> &R::Store {
        &self.store
    }
    fn sql(&self) -> &R::Sql {
        self.host.runtime().sql()
    }
    fn select(&self, memory_md: &str, gates: &Thresholds, settled: &HashSet<(u64, u64)>) -> Result<Picked, String> {
        self.host.with_hub(|hub| dreaming::pick(hub, memory_md, gates, settled))
    }
    async fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Result<Completion, String> {
        let cfg = LlmConfig { max_tokens: self.llm.max_tokens.min(max_tokens), ..self.llm.clone() };
        let now = self.host.runtime().now_ms();
        let messages = [Message::User {
            content: UserContent::Text(user.to_owned()),
            timestamp: now,
            sender: None,
            channel: None,
        }];
        let media = llm::Hydrated::default();
        let req = ChatRequest {
            system,
            messages: &messages,
            tools: &[],
            media: &media,
            appended_user: None,
            memo: None,
            stamps: &[],
            prefix_ttl: crate::llm::CacheTtl::FiveMinutes,
        };
        let reply = llm::complete(&Io(self.host.runtime()), &cfg, &req).await.map_err(|e| e.to_string())?;
        Ok(Completion { text: reply.text(), usage: reply.usage, model: reply.model })
    }
    fn reserve(&self, prompt_tokens: u64, max_output_tokens: u64) -> Permit {
        let asked =
            self.host.reserve_call(&self.agent, UsageKind::Dreaming, &self.llm.model, prompt_tokens, max_output_tokens);
        match asked {
            Ok(Decision::Go { reservation, .. }) => Permit::Go(reservation),
            Ok(Decision::Wait { .. }) => Permit::Skip("calls in flight hold the rest of the budget".into()),
            Ok(Decision::Stop(stop)) => Permit::Skip(format!(
                "the {} budget's background share (BUDGET_BACKGROUND_PERCENT) is spent: {}",
                stop.scope, stop.message
            )),
            // A broken budget setting must not make dreaming spend without limit.
            Err(r) => Permit::Skip(format!("the budget could not be checked: {}", r.message)),
        }
    }
    fn settle(&self, reservation: u64, c: &Completion, at: i64) {
        let u = &c.usage;
        let call = CallRecord {
            thread: format!("agent:{}:dreaming", self.agent),
            session_id: "dreaming".into(),
            seq: at,
            at,
            kind: UsageKind::Dreaming,
            model: if c.model.is_empty() { self.llm.model.clone() } else { c.model.clone() },
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            cache_write_1h: u.cache_write_1h,
        };
        match self.host.settle_call(&self.agent, call, reservation) {
            Ok(Some(notice)) => *self.notice.borrow_mut() = Some(notice),
            Ok(None) => {}
            Err(r) => self.log(LogLevel::Error, &format!("dreaming: usage not recorded: {}", r.message)),
        }
    }
    fn log(&self, level: LogLevel, msg: &str) {
        self.host.runtime().log(level, msg)
    }
}

/// The owner's Telegram chat with the agent's bot, when there is one.
fn telegram(cfg: &AgentConfig) -> Option<Telegram> {
    Some(Telegram {
        api: crate::channels::telegram::client::TelegramApi::for_agent(cfg)?,
        owner: cfg.owner_on(crate::inbound::ChannelKind::Telegram)?.to_owned(),
    })
}

impl<R: AgentRuntime + 'static> AgentHost<R> {
    /// After the alarm's ticks: dreaming at the newest tick's time. Trouble
    /// is logged, never fails the alarm (the ticks' work is done; a sweep
    /// whose claim is left `running` is taken again after a while).
    pub(super) async fn after_ticks(&self) {
        let state = ScheduleStore::new(&**self.runtime().sql());
        let (agent, now) = match (state.get("agent"), state.last_processed_tick()) {
            (Ok(Some(a)), Ok(Some(t))) => (a, t),
            _ => return,
        };
        // The history's clean-up first, on its own daily claim: it must not
        // depend on dreaming being on (or configured right).
        if let Err(e) = self.clean_history(&agent, now).await {
            self.runtime().log(LogLevel::Warn, &format!("history clean-up of agent {agent}: {e}"));
        }
        if let Err(e) = self.dream_at(&agent, now).await {
            self.runtime().log(LogLevel::Error, &format!("dreaming of agent {agent}: {e}"));
        }

        // The admin view says which tick dreaming looked at last (run or not).
        let dreams = DreamStore::new(&**self.runtime().sql());
        if let Err(e) = dreams.init().and_then(|_| dreams.set("checked_tick", &now.to_string())) {
            self.runtime().log(LogLevel::Warn, &format!("dreaming: {e}"));
        }
    }

    /// Once a day, the agent's day (`TIMEZONE`; claim `gc:{local date}`):
    /// deletes the history's blobs no kept change names
    /// ([`history::collect_garbage`]). Whether or not the agent dreams. A clean-up that fails leaves its claim `running`: it is
    /// taken again after [`sweep::STALE_RUN_MS`].
    async fn clean_history(&self, agent: &str, now: i64) -> Result<(), String> {
        let agent_cfg = AgentConfig::load(self.runtime().vars(), agent).map_err(|e| e.to_string())?;
        let slot_ms = crate::clock::last_daily_boundary(now, &agent_cfg.timezone, 0, 0);
        let date = crate::clock::date_string(slot_ms, &agent_cfg.timezone);
        let claim = Claim {
            slot_id: format!("{KIND_HISTORY_GC}:{date}"),
            kind: KIND_HISTORY_GC.into(),
            name: "history".into(),
            slot_ms,
            payload: None,
        };
        let sched = ScheduleStore::new(&**self.runtime().sql());
        sched.init().map_err(|e| e.to_string())?;
        if !sched.claim_own(&claim, now, now - sweep::STALE_RUN_MS).map_err(|e| e.to_string())? {
            return Ok(());
        }
        let store = self.runtime().store().map_err(|e| e.to_string())?;
        let r = history::collect_garbage(&store, &agent_cfg.agent, now).await.map_err(|e| e.to_string())?;
        sched.finish_own(&claim, None, now).map_err(|e| e.to_string())?;
        if r.blobs_deleted > 0 {
            self.runtime().log(LogLevel::Info, &format!("history clean-up of agent {agent}: {r:?}"));
        }
        Ok(())
    }

    async fn dream_at(&self, agent: &str, now: i64) -> Result<(), String> {
        let vars = self.runtime().vars();
        let cfg = DreamConfig::load(vars, agent).map_err(|e| e.to_string())?;
        let agent_cfg = AgentConfig::load(vars, agent).map_err(|e| e.to_string())?;
        let tg = telegram(&agent_cfg);
        if cfg.approval && tg.is_none() {
            return Err("DREAM_APPROVAL=telegram needs TELEGRAM_BOT_TOKEN and a telegram: id in OWNER_IDS; \
                        no sweep until then"
                .into());
        }
        let log = |level: LogLevel, msg: &str| self.runtime().log(level, msg);
        let sql = &**self.runtime().sql();
        let dreams = DreamStore::new(sql);
        dreams.init().map_err(|e| e.to_string())?;
        approval::expire(&dreams, &AgentIo(self.runtime()), tg.as_ref(), now, &log).await.map_err(|e| e.to_string())?;
        let store = self.runtime().store().map_err(|e| e.to_string())?;
        let dreamer = Dreamer {
            host: self,
            store,
            llm: agent_cfg.llm.clone(),
            agent: agent.to_owned(),
            notice: Default::default(),
        };
        let night = Night {
            cfg: &cfg,
            agent: &agent_cfg.agent,
            template: agent_cfg.overlay.template.as_deref(),
            keep: agent_cfg.history_keep,
            now,
        };
        sweep::night(&dreamer, &night).await.map_err(|e| e.to_string())?;
        let notice = dreamer.notice.borrow_mut().take();
        if let Some(notice) = notice {
            log(LogLevel::Warn, &format!("dreaming: {notice}"));
            if let Some(tg) = &tg {
                if let Err(e) = approval::tell_owner(&AgentIo(self.runtime()), tg, &notice).await {
                    log(LogLevel::Warn, &format!("dreaming: budget notice not sent: {e}"));
                }
            }
        }
        if let Some(tg) = &tg {
            approval::send_new(&dreams, &AgentIo(self.runtime()), tg, &log).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// A tap on a proposal's button (from the Worker's Telegram webhook).
    pub async fn dream_tap(&self, tap: &Tap) -> Result<TapOutcome, Refusal> {
        let vars = self.runtime().vars();
        if !agent_ids(vars).contains(&tap.agent) {
            return Err(Refusal { status: 404, message: format!("unknown agent {:?}", tap.agent) });
        }
        let cfg = AgentConfig::load(vars, &tap.agent).map_err(|e| Refusal { status: 500, message: e.to_string() })?;
        let Some(tg) = telegram(&cfg) else {
            return Err(Refusal { status: 409, message: "the agent has no Telegram owner".into() });
        };
        let store = self.runtime().store()?;
        let sql = &**self.runtime().sql();
        let dreams = DreamStore::new(sql);
        dreams.init()?;
        let cx = TapContext {
            store: &store,
            io: &AgentIo(self.runtime()),
            tg: &tg,
            agent: &cfg.agent,
            template: cfg.overlay.template.as_deref(),
            keep: cfg.history_keep,
            now: self.runtime().now_ms(),
        };
        let log = |level: LogLevel, msg: &str| self.runtime().log(level, msg);
        Ok(approval::tap(&dreams, &cx, tap, &log).await?)
    }

    /// `GET /api/agents/{id}/dreams`: settings, figures, the last sweep, proposals.
    pub fn dream_status(&self, agent: &str) -> Result<Value, Refusal> {
        let vars = self.runtime().vars();
        if !agent_ids(vars).iter().any(|a| a == agent) {
            return Err(Refusal { status: 404, message: format!("unknown agent {agent:?}") });
        }
        let bad = |e: crate::settings::ConfigError| Refusal { status: 500, message: e.to_string() };
        let cfg = DreamConfig::load(vars, agent).map_err(bad)?;
        let keep = history_keep(vars, agent).map_err(bad)?;
        let sql = &**self.runtime().sql();
        let dreams = DreamStore::new(sql);
        dreams.init()?;
        let last: Value =
            dreams.get("last")?.and_then(|v| hearth_json::from_slice(v.as_bytes()).ok()).unwrap_or(Value::Null);
        let (slot_id, _, _) = sweep::slot(&cfg, self.runtime().now_ms());
        let g = cfg.gates;
        Ok(json!({
            "agent": agent,
            "settings": {
                "enabled": cfg.enabled,
                "at": format!("{:02}:{:02}", cfg.at.0, cfg.at.1),
                "timezone": cfg.timezone,
                "minScore": g.min_score, "minHits": g.min_hits, "minQueries": g.min_queries, "minDays": g.min_days,
                "maxCandidates": g.max_candidates,
                "approval": if cfg.approval { "telegram" } else { "off" },
                "approvalHours": cfg.approval_hours,
                "historyKeepVersions": keep,
            },
            "memoriesPromoted": dreams.promoted_total()?,
            "lastDreamTs": dreams.last_dream_ts()?,
            "lastCheckedTick": dreams.get("checked_tick")?.and_then(|v| v.parse::<i64>().ok()),
            "currentSlot": slot_id,
            "last": last,
            "proposals": dreams.recent_proposals(20)?,
        }))
    }
}
