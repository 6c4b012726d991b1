//! One night's sweep (see the module above for the rules).

use super::judge::{self, Shown};
use super::memory_file::{self as mf, MEMORY_FILE};
use super::state::{DreamStore, Proposal, REJECTED};
use super::{DreamHost, Permit, STORE};
use crate::ports::{LogLevel, ObjectStore, StorageError};
use crate::scheduled::store::{Claim, ScheduleStore};
use crate::scheduled::KIND_DREAM;
use crate::settings::dreaming::DreamConfig;
use crate::workspace::history::{self, Actor, Edit};
use hearth_memory::promote::AlreadySaid;
use hearth_memory::Tokenizer;
use r2_layout::{keys, AgentId};
use serde::Serialize;

/// A sweep left `running` this long (the object stopped mid-run) is taken again.
pub const STALE_RUN_MS: i64 = 30 * 60_000;

/// What the sweep needs to know.
pub struct Night<'a> {
    pub cfg: &'a DreamConfig,
    pub agent: &'a AgentId,
    /// `TEMPLATE`: MEMORY.md may be inherited (the sweep then writes the agent's own copy).
    pub template: Option<&'a str>,
    /// `HISTORY_KEEP_VERSIONS`.
    pub keep: usize,
    /// The tick's time.
    pub now: i64,
}

/// How a sweep ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// Nothing new since the last sweep: no LLM call.
    NothingNew,
    /// MEMORY.md has no room left within its prompt budget: no LLM call.
    MemoryFull,
    /// The budget's background limit: no LLM call.
    SkippedBudget,
    /// The LLM call failed or its answer could not be read: nothing written.
    Failed,
    /// MEMORY.md changed during the sweep: writing would have lost lines; nothing written.
    Refused,
    /// Judged: promotions written (or proposed, with approval on).
    Done,
}

/// One candidate's fate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub entry: String,
    /// `promoted`, `proposed`, `rejected`, `conflict`, `no_room`, `no_answer`, `refused`.
    pub verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub score: f32,
    pub hits: u32,
    pub days: u32,
}

/// What a sweep did (kept as `last` in the dream state, shown by the admin view).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub night: String,
    pub at: i64,
    pub outcome: Outcome,
    pub llm_calls: u32,
    pub tokens: u64,
    /// Entries whose evidence passed the gates, and of those how many were settled or already said.
    pub passed: usize,
    pub settled: usize,
    pub already_said: usize,
    pub verdicts: Vec<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// MEMORY.md as the agent serves it: its own, else the template's, else the defaults'.
pub async fn effective_memory<S: ObjectStore>(
    store: &S,
    agent: &AgentId,
    template: Option<&str>,
) -> Result<String, StorageError> {
    let mut layers = vec![keys::workspace_key(agent, MEMORY_FILE)];
    if let Some(t) = template {
        layers.extend(keys::catalog_template(t, MEMORY_FILE).ok());
    }
    layers.push(keys::catalog_default(MEMORY_FILE));
    for key in layers {
        if let Some(o) = store.get(&key).await? {
            return Ok(String::from_utf8_lossy(&o.body).into_owned());
        }
    }
    Ok(String::new())
}

/// The night's slot: `(slot id, start ms, local date)` of the latest `DREAM_AT`.
pub fn slot(cfg: &DreamConfig, now: i64) -> (String, i64, String) {
    let start = crate::clock::last_daily_boundary(now, &cfg.timezone, cfg.at.0, cfg.at.1);
    let date = crate::clock::date_string(start, &cfg.timezone);
    (format!("{KIND_DREAM}:{date}"), start, date)
}

/// Runs tonight's sweep if it has not run yet. `Ok(None)`: not tonight
/// (off, or taken already).
pub async fn night<H: DreamHost>(h: &H, n: &Night<'_>) -> Result<Option<Report>, StorageError> {
    if !n.cfg.enabled {
        return Ok(None);
    }
    let (slot_id, slot_ms, date) = slot(n.cfg, n.now);
    let claim = Claim { slot_id, kind: KIND_DREAM.into(), name: "dreaming".into(), slot_ms, payload: None };
    let sched = ScheduleStore::new(h.sql());
    sched.init()?;
    if !sched.claim_own(&claim, n.now, n.now - STALE_RUN_MS)? {
        return Ok(None);
    }
    let dreams = DreamStore::new(h.sql());
    dreams.init()?;
    let mut spent: Option<u64> = None;
    let report = match sweep(h, n, &dreams, &date, &mut spent).await {
        Ok(r) => r,
        // Before the LLM call nothing was spent: the claim stays `running`
        // and is taken again after STALE_RUN_MS. After it, taking it again
        // would pay for a second call the same night: the night is over.
        Err(e) => {
            if let Some(tokens) = spent {
                let failed = Report {
                    llm_calls: 1,
                    tokens,
                    note: Some(format!("the sweep failed after its LLM call: {e}; it runs again tomorrow")),
                    ..ended(&date, n.now, Outcome::Failed, &super::Picked::default(), None)
                };
                let _ = dreams.set("last", &serde_json::to_string(&failed).unwrap_or_default());
                sched.fail_own(&claim, Some(&r2_layout::Usage::new(tokens, 0, 0, 0)), n.now)?;
            }
            return Err(e);
        }
    };
    let usage = (report.llm_calls > 0).then(|| r2_layout::Usage::new(report.tokens, 0, 0, 0));
    dreams.set("last_dream_ts", &n.now.to_string())?;
    dreams.set("last", &serde_json::to_string(&report).unwrap_or_default())?;
    sched.finish_own(&claim, usage.as_ref(), n.now)?;
    h.log(
        LogLevel::Info,
        &format!(
            "dreaming {}: {:?}, {} considered, {} LLM call(s)",
            report.night,
            report.outcome,
            report.verdicts.len(),
            report.llm_calls
        ),
    );
    Ok(Some(report))
}

fn ended(date: &str, at: i64, outcome: Outcome, picked: &super::Picked, note: Option<String>) -> Report {
    Report {
        night: date.to_owned(),
        at,
        outcome,
        llm_calls: 0,
        tokens: 0,
        passed: picked.passed,
        settled: picked.settled,
        already_said: picked.already_said,
        verdicts: Vec::new(),
        note,
    }
}

async fn sweep<H: DreamHost>(
    h: &H,
    n: &Night<'_>,
    dreams: &DreamStore<'_, H::Sql>,
    date: &str,
    spent: &mut Option<u64>,
) -> Result<Report, StorageError> {
    let base = effective_memory(h.store(), n.agent, n.template).await?;
    let settled = dreams.settled_set(STORE)?;
    let picked = h.select(&base, &n.cfg.gates, &settled).map_err(StorageError)?;
    if picked.candidates.is_empty() {
        return Ok(ended(date, n.now, Outcome::NothingNew, &picked, None));
    }
    let heading = mf::heading(n.now);
    // The smallest section one fact could make: no room for it, no call.
    let smallest = mf::section_cost(&base, &heading, &[mf::fact_line("x", 0.0, 0, 0)]);
    if mf::room(&base) < smallest {
        let note = format!(
            "MEMORY.md has {} characters: no room left within its {}-character prompt budget; {} memories wait",
            mf::chars(&base),
            crate::prompt::MAX_FILE_CHARS,
            picked.candidates.len()
        );
        return Ok(ended(date, n.now, Outcome::MemoryFull, &picked, Some(note)));
    }
    let shown: Vec<Shown<'_>> = picked
        .candidates
        .iter()
        .map(|c| Shown {
            id: c.entry_id,
            name: &c.name,
            kind: c.kind,
            content: crate::text::truncate_chars(&c.content, judge::CONTENT_CHARS),
            hits: c.hits,
            questions: c.queries as usize,
            days: c.days as usize,
            score: (c.score * 100.0).round() / 100.0,
        })
        .collect();
    let user = judge::user_message(&base, &shown);
    let estimate = ((judge::SYSTEM.len() + user.len()) / 4) as u64;
    let reservation = match h.reserve(estimate, u64::from(judge::MAX_OUTPUT_TOKENS)) {
        Permit::Go(r) => r,
        Permit::Skip(why) => return Ok(ended(date, n.now, Outcome::SkippedBudget, &picked, Some(why))),
    };
    let completion = h.complete(judge::SYSTEM, &user, judge::MAX_OUTPUT_TOKENS).await;
    let mut report = ended(date, n.now, Outcome::Done, &picked, None);
    let completion = match completion {
        Ok(c) => c,
        Err(e) => {
            h.settle(
                reservation,
                &super::Completion { text: String::new(), usage: Default::default(), model: String::new() },
                n.now,
            );
            report.outcome = Outcome::Failed;
            report.note = Some(format!("the LLM call failed: {e}"));
            diary(h, n, &report, &picked).await;
            return Ok(report);
        }
    };
    h.settle(reservation, &completion, n.now);
    *spent = Some(completion.usage.total_tokens);
    report.llm_calls = 1;
    report.tokens = completion.usage.total_tokens;
    let decisions = match judge::parse(&completion.text) {
        Ok(d) => d,
        Err(e) => {
            report.outcome = Outcome::Failed;
            report.note = Some(format!("the model's answer could not be read ({e}); nothing was written"));
            diary(h, n, &report, &picked).await;
            return Ok(report);
        }
    };

    // Judge each candidate, in the selection's order (best first).
    let mut said = AlreadySaid::new(Tokenizer::Unicode, &base);
    let not_again = AlreadySaid::new(Tokenizer::Unicode, &dreams.facts_not_to_propose()?.join("\n"));
    let mut lines: Vec<String> = Vec::new();
    let mut accepted: Vec<(usize, String)> = Vec::new();
    for (i, c) in picked.candidates.iter().enumerate() {
        let mut v = Verdict {
            entry: c.name.clone(),
            verdict: "no_answer",
            fact: None,
            reason: None,
            score: c.score,
            hits: c.hits,
            days: c.days,
        };
        let Some(d) = decisions.iter().find(|d| d.id == c.entry_id) else {
            v.reason = Some("the model gave no verdict; it comes back another night".into());
            report.verdicts.push(v);
            continue;
        };
        let conflict = d.conflicts_with.as_deref().map(str::trim).filter(|s| !s.is_empty());
        let fact = d.fact.as_deref().and_then(mf::sanitize_fact);
        let (verdict, reason) = match (d.promote, conflict, fact) {
            (_, Some(line), _) => ("conflict", Some(format!("contradicts or updates the MEMORY.md line {line:?}"))),
            (false, None, _) => ("rejected", Some(d.reason.clone().unwrap_or_else(|| "not lasting".into()))),
            (true, None, None) => ("rejected", Some("the model's fact was empty".into())),
            (true, None, Some(f)) if said.says(&f) => {
                v.fact = Some(f);
                ("rejected", Some("MEMORY.md already says it".into()))
            }
            (true, None, Some(f)) if not_again.says(&f) => {
                v.fact = Some(f);
                ("rejected", Some("you refused this fact before, or it waits for your answer".into()))
            }
            (true, None, Some(f)) => {
                let line = mf::fact_line(&f, c.score, c.hits, c.days);
                let mut with = lines.clone();
                with.push(line.clone());
                if mf::section_cost(&base, &heading, &with) > mf::room(&base) {
                    v.fact = Some(f);
                    ("no_room", Some("no room left in MEMORY.md's prompt budget; it comes back".into()))
                } else {
                    said.add(&f);
                    lines.push(line);
                    accepted.push((i, f.clone()));
                    v.fact = Some(f);
                    (if n.cfg.approval { "proposed" } else { "promoted" }, None)
                }
            }
        };
        v.verdict = verdict;
        v.reason = reason;
        report.verdicts.push(v);
    }

    if n.cfg.approval {
        let expires = n.now + i64::from(n.cfg.approval_hours) * 3_600_000;
        for (i, fact) in &accepted {
            let c = &picked.candidates[*i];
            dreams.propose(&Proposal {
                id: 0,
                night: date.to_owned(),
                heading: heading.clone(),
                entry_id: c.entry_id,
                entry_name: c.name.clone(),
                content_hash: c.content_hash,
                fact: fact.clone(),
                score: c.score,
                hits: c.hits,
                queries: c.queries,
                days: c.days,
                state: "new".into(),
                chat: None,
                message_id: None,
                created_at: n.now,
                expires_at: expires,
                answered_at: None,
            })?;
        }
    } else if !lines.is_empty() {
        let proposed = mf::append_section(&base, &heading, &lines);
        // Re-read: a change made during the sweep (by the owner, the agent)
        // must not be lost, nor any line of MEMORY.md ever removed or rewritten.
        let current = effective_memory(h.store(), n.agent, n.template).await?;
        let check = if current == base {
            mf::check_append_only(&base, &proposed)
        } else {
            Err(mf::check_append_only(&current, &proposed).err().unwrap_or_default())
        };
        if let Err(lost) = check {
            report.outcome = Outcome::Refused;
            report.note = Some(if lost.is_empty() {
                "MEMORY.md changed while I was dreaming; writing my version would have undone that change, so \
                 nothing was written. These memories come back tomorrow."
                    .into()
            } else {
                format!(
                    "MEMORY.md changed while I was dreaming; writing my version would have removed {} line(s) ({}), \
                     so nothing was written. These memories come back tomorrow.",
                    lost.len(),
                    lost.iter().take(3).map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", ")
                )
            });
            for v in &mut report.verdicts {
                if v.verdict == "promoted" {
                    v.verdict = "refused";
                }
            }
            diary(h, n, &report, &picked).await;
            return Ok(report);
        }
        let why = format!("dreaming {date}: {} fact(s) promoted", lines.len());
        let edit = Edit::write(MEMORY_FILE, proposed, Actor::Dreaming, why);
        history::apply(h.store(), n.agent, edit, n.now, n.keep).await.map_err(history_err)?;
        for (i, fact) in &accepted {
            let c = &picked.candidates[*i];
            dreams.mark(STORE, c.entry_id, c.content_hash, super::state::PROMOTED, Some(fact), None, n.now)?;
        }
        dreams.add_promoted(lines.len() as u64)?;
    }
    for (c, v) in picked.candidates.iter().zip(&report.verdicts) {
        if matches!(v.verdict, "rejected" | "conflict") {
            dreams.mark(STORE, c.entry_id, c.content_hash, REJECTED, v.fact.as_deref(), v.reason.as_deref(), n.now)?;
        }
    }
    diary(h, n, &report, &picked).await;
    Ok(report)
}

fn history_err(e: history::HistoryError) -> StorageError {
    match e {
        history::HistoryError::Storage(s) => s,
        other => StorageError(other.to_string()),
    }
}

/// The DREAMS.md entry of a sweep that got as far as the LLM call.
pub fn diary_entry(n: &Night<'_>, r: &Report, picked: &super::Picked) -> String {
    let g = &n.cfg.gates;
    let mut out = format!(
        "## {}\n\nConsidered {} memories with enough evidence (score ≥ {:.2}, hits ≥ {}, questions ≥ {}, days ≥ {}); \
         {} LLM call ({} tokens).\n",
        mf::utc_minute(r.at),
        picked.candidates.len(),
        g.min_score,
        g.min_hits,
        g.min_queries,
        g.min_days,
        r.llm_calls,
        r.tokens
    );
    if let Some(note) = &r.note {
        out.push_str(&format!("\n{}: {note}\n", if r.outcome == Outcome::Refused { "**Refused**" } else { "Note" }));
    }
    if !r.verdicts.is_empty() {
        out.push('\n');
    }
    for v in &r.verdicts {
        let evidence = format!("score={:.2}, hits={}, days={}", v.score, v.hits, v.days);
        let fact = v.fact.as_deref().map(|f| format!(" \"{f}\"")).unwrap_or_default();
        let reason = v.reason.as_deref().unwrap_or("");
        let line = match v.verdict {
            "promoted" => format!("- ✅ Promoted{fact} (from `{}`; {evidence})", v.entry),
            "proposed" => format!("- 📨 Proposed to you on Telegram:{fact} (from `{}`; {evidence})", v.entry),
            "rejected" => format!("- ❌ Rejected `{}`{fact}: {reason}", v.entry),
            "conflict" => format!(
                "- ⚠️ Not written `{}`: {reason}. Dreaming never changes a MEMORY.md line; edit it yourself if it is out of date",
                v.entry
            ),
            "no_room" => format!("- ⏸ Waits `{}`{fact}: {reason}", v.entry),
            "refused" => format!("- ⛔ Not written{fact} (from `{}`): the sweep was refused", v.entry),
            _ => format!("- … `{}`: {reason}", v.entry),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Appends the sweep's entry to DREAMS.md (a failure is logged: the sweep's
/// work stands without its diary).
async fn diary<H: DreamHost>(h: &H, n: &Night<'_>, r: &Report, picked: &super::Picked) {
    let entry = diary_entry(n, r, picked);
    let key = keys::workspace_key(n.agent, mf::DREAMS_FILE);
    let existing = match h.store().get(&key).await {
        Ok(o) => o.map(|o| String::from_utf8_lossy(&o.body).into_owned()),
        Err(e) => {
            h.log(LogLevel::Error, &format!("dreaming: DREAMS.md not read: {e}"));
            return;
        }
    };
    let text = mf::dreams_with(existing.as_deref(), &entry);
    let why = format!("dreaming {}: diary", r.night);
    if let Err(e) =
        history::apply(h.store(), n.agent, Edit::write(mf::DREAMS_FILE, text, Actor::Dreaming, why), n.now, n.keep)
            .await
    {
        h.log(LogLevel::Error, &format!("dreaming: DREAMS.md not written: {e}"));
    }
}
