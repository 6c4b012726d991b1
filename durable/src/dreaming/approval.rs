//! Approval of promotions (`DREAM_APPROVAL=telegram`): each fact a sweep
//! would write is sent to the owner on Telegram with two inline buttons
//! (callback data `dream:{id}:a` / `dream:{id}:r`). Only approved facts are
//! written, under their sweep's `## Dreamed …` heading; a refusal is
//! remembered (the fact and the note's content are not proposed again);
//! proposals unanswered for `DREAM_APPROVAL_HOURS` expire (not written, and
//! their buttons say so).
//!
//! The Agent object sends the proposals itself, through the Telegram client
//! of `crate::channels::telegram` (its buttons, shared with tool-call
//! approvals: `crate::channels::buttons`): `sendMessage` with
//! `reply_markup.inline_keyboard`, then, when the owner taps,
//! `answerCallbackQuery` (the short note Telegram shows) and
//! `editMessageReplyMarkup` (the buttons become the outcome). A proposal
//! that could not be sent stays `new` and is sent on the next tick.

use super::memory_file::{self as mf, MEMORY_FILE};
use super::state::{DreamStore, Proposal, PROMOTED, REFUSED_BY_OWNER};
use super::STORE;
use crate::channels::buttons::Button;
use crate::channels::telegram::client::TelegramApi;
use crate::ports::{Io, LogLevel, ObjectStore, Sql, StorageError};
pub use crate::protocol::dreams::{Tap, TapOutcome};
use crate::workspace::history::{self, Actor, Edit};
use r2_layout::AgentId;

/// Where proposals go: the owner's Telegram chat with the agent's bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Telegram {
    pub api: TelegramApi,
    /// The owner's Telegram id (a private chat's id is the user's id).
    pub owner: String,
}

/// A plain message to the owner (the budget's warning when dreaming crossed it).
pub async fn tell_owner<I: Io>(io: &I, tg: &Telegram, text: &str) -> Result<(), String> {
    tg.api.send_text(io, &tg.owner, text).await.map_err(|e| e.to_string())
}

fn buttons(id: i64) -> [Button; 2] {
    [
        Button { label: "✅ Approve".into(), data: format!("dream:{id}:a") },
        Button { label: "❌ Reject".into(), data: format!("dream:{id}:r") },
    ]
}

/// The button once settled: one that says how (a tap on it answers again).
fn settled_button(id: i64, label: &str) -> Button {
    Button { label: label.into(), data: format!("dream:{id}:s") }
}

fn proposal_text(p: &Proposal) -> String {
    format!(
        "💭 While dreaming I found a memory worth keeping (from note \"{}\": score {:.2}, {} hits on {} days):\n\n{}\n\n\
         Approve it to add it to MEMORY.md. I ask once; without an answer it expires.",
        p.entry_name, p.score, p.hits, p.days, p.fact
    )
}

/// Sends the proposals not sent yet. Returns how many went out.
pub async fn send_new<S: Sql + ?Sized, I: Io>(
    dreams: &DreamStore<'_, S>,
    io: &I,
    tg: &Telegram,
    log: &dyn Fn(LogLevel, &str),
) -> Result<usize, StorageError> {
    let mut sent = 0;
    for p in dreams.proposals_in("new")? {
        match tg.api.post_buttons(io, &tg.owner, &proposal_text(&p), &buttons(p.id)).await {
            Ok(mid) => match mid.parse::<i64>() {
                Ok(mid) => {
                    dreams.mark_sent(p.id, &tg.owner, mid)?;
                    sent += 1;
                }
                Err(_) => log(LogLevel::Warn, "dreaming: the proposal was sent, but its message id is not a number"),
            },
            Err(e) => {
                log(LogLevel::Warn, &format!("dreaming: proposal {} not sent yet ({e}); next tick", p.id));
                break;
            }
        }
    }
    Ok(sent)
}

/// Expires the proposals past their time and marks their buttons. Returns how many.
pub async fn expire<S: Sql + ?Sized, I: Io>(
    dreams: &DreamStore<'_, S>,
    io: &I,
    tg: Option<&Telegram>,
    now: i64,
    log: &dyn Fn(LogLevel, &str),
) -> Result<usize, StorageError> {
    let gone = dreams.expire(now)?;
    if let Some(tg) = tg {
        for p in &gone {
            let (Some(chat), Some(mid)) = (&p.chat, p.message_id) else { continue };
            let settled = settled_button(p.id, "⌛ Expired: not written");
            if let Err(e) = tg.api.settle_buttons(io, chat, &mid.to_string(), &settled).await {
                log(LogLevel::Warn, &format!("dreaming: expired proposal {} not marked: {e}", p.id));
            }
        }
    }
    Ok(gone.len())
}

/// `dream:{id}:{a|r|s}`.
pub fn parse_data(data: &str) -> Option<(i64, char)> {
    let rest = data.strip_prefix("dream:")?;
    let (id, action) = rest.split_once(':')?;
    let action = action.chars().next().filter(|c| matches!(c, 'a' | 'r' | 's') && action.len() == 1)?;
    Some((id.parse().ok()?, action))
}

/// Writes an approved fact into MEMORY.md, under its sweep's heading
/// (nothing when MEMORY.md already holds its line). Err(note) when it
/// cannot (no room left, or a line would be lost).
pub async fn write_fact<O: ObjectStore>(
    store: &O,
    agent: &AgentId,
    template: Option<&str>,
    p: &Proposal,
    now: i64,
    keep: usize,
) -> Result<Result<(), String>, StorageError> {
    let current = super::sweep::effective_memory(store, agent, template).await?;
    let line = p.line();
    if current.lines().any(|l| l.trim_end() == line) {
        // Written already (a tap whose write succeeded but whose answer was not stored).
        return Ok(Ok(()));
    }
    let next = mf::insert_under(&current, &p.heading, &line);
    if mf::chars(&next) > crate::prompt::MAX_FILE_CHARS {
        return Ok(Err(format!(
            "MEMORY.md is full ({} characters of {}): make room, then tap Approve again",
            mf::chars(&current),
            crate::prompt::MAX_FILE_CHARS
        )));
    }
    if let Err(lost) = mf::check_append_only(&current, &next) {
        return Ok(Err(format!("writing it would change {} line(s) of MEMORY.md, so I did not", lost.len())));
    }
    let why = format!("dreaming {}: \"{}\" approved by the owner", p.night, crate::text::truncate_chars(&p.fact, 80));
    history::apply(store, agent, Edit::write(MEMORY_FILE, next, Actor::Dreaming, why), now, keep).await.map_err(
        |e| match e {
            history::HistoryError::Storage(s) => s,
            other => StorageError(other.to_string()),
        },
    )?;
    Ok(Ok(()))
}

/// What a tap needs to act.
pub struct TapContext<'a, O: ObjectStore, I: Io> {
    pub store: &'a O,
    pub io: &'a I,
    pub tg: &'a Telegram,
    pub agent: &'a AgentId,
    pub template: Option<&'a str>,
    pub keep: usize,
    pub now: i64,
}

/// Handles a tap: only the owner's count. Answers the callback and marks the
/// buttons (best effort: the decision stands even if Telegram is not told).
pub async fn tap<S: Sql + ?Sized, O: ObjectStore, I: Io>(
    dreams: &DreamStore<'_, S>,
    cx: &TapContext<'_, O, I>,
    t: &Tap,
    log: &dyn Fn(LogLevel, &str),
) -> Result<TapOutcome, StorageError> {
    let outcome = decide(dreams, cx, t).await?;
    if let Err(e) = cx.tg.api.answer_tap(cx.io, &t.callback_id, &outcome.note).await {
        log(LogLevel::Warn, &format!("dreaming: callback not answered: {e}"));
    }
    let label = match outcome.state.as_deref() {
        Some("approved") => Some("✅ Approved: in MEMORY.md"),
        Some("rejected") => Some("❌ Rejected: I will not propose it again"),
        Some("expired") => Some("⌛ Expired: not written"),
        _ => None,
    };
    if let (Some(label), Some(chat), Some(mid), Some((id, action))) =
        (label, &t.chat, t.message_id, parse_data(&t.data))
    {
        if action != 's' {
            if let Err(e) = cx.tg.api.settle_buttons(cx.io, chat, &mid.to_string(), &settled_button(id, label)).await {
                log(LogLevel::Warn, &format!("dreaming: proposal {id} buttons not updated: {e}"));
            }
        }
    }
    Ok(outcome)
}

async fn decide<S: Sql + ?Sized, O: ObjectStore, I: Io>(
    dreams: &DreamStore<'_, S>,
    cx: &TapContext<'_, O, I>,
    t: &Tap,
) -> Result<TapOutcome, StorageError> {
    let note = |s: &str| TapOutcome { note: s.to_owned(), state: None, settled: None };
    if t.from != cx.tg.owner {
        return Ok(note("Only my owner can decide what I remember."));
    }
    let Some((id, action)) = parse_data(&t.data) else { return Ok(note("I don't know this button.")) };
    let Some(p) = dreams.proposal(id)? else { return Ok(note("I have no such proposal.")) };
    let settled = |p: &Proposal| TapOutcome {
        note: match p.state.as_str() {
            "approved" => "Already approved: it is in MEMORY.md.".into(),
            "rejected" => "Already rejected.".into(),
            "expired" => "This proposal expired; it was not written.".into(),
            "approving" => "I'm writing it to MEMORY.md right now.".into(),
            other => format!("This proposal is {other}."),
        },
        state: Some(p.state.clone()),
        settled: None,
    };
    // `approving`: another tap is writing it (an Approve may take it over once that claim is stale).
    let open = matches!(p.state.as_str(), "new" | "sent") || (p.state == "approving" && action == 'a');
    if action == 's' || !open {
        return Ok(settled(&p));
    }
    if p.expires_at <= cx.now {
        dreams.answer(id, "expired", cx.now)?;
        return Ok(TapOutcome {
            note: "This proposal expired; it was not written.".into(),
            state: Some("expired".into()),
            settled: None,
        });
    }
    if action == 'r' {
        if !dreams.answer(id, "rejected", cx.now)? {
            // Answered meanwhile (another tap).
            return Ok(dreams.proposal(id)?.map_or_else(|| note("I have no such proposal."), |p| settled(&p)));
        }
        {
            dreams.mark(
                STORE,
                p.entry_id,
                p.content_hash,
                REFUSED_BY_OWNER,
                Some(&p.fact),
                Some("rejected by the owner"),
                cx.now,
            )?;
        }
        return Ok(TapOutcome {
            note: "Rejected: I won't propose it again.".into(),
            state: Some("rejected".into()),
            settled: None,
        });
    }
    // Claim it first: a second tap while this one writes (Telegram delivers
    // taps one by one, the owner may tap twice) must not write the fact again.
    if !dreams.claim_for_approval(id, cx.now)? {
        return Ok(match dreams.proposal(id)? {
            Some(p) => settled(&p),
            None => note("I have no such proposal."),
        });
    }
    let written = match write_fact(cx.store, cx.agent, cx.template, &p, cx.now, cx.keep).await {
        Ok(w) => w,
        Err(e) => {
            dreams.unclaim(id)?;
            return Err(e);
        }
    };
    match written {
        Ok(()) => {
            if dreams.approved(id, cx.now)? {
                dreams.mark(STORE, p.entry_id, p.content_hash, PROMOTED, Some(&p.fact), None, cx.now)?;
                dreams.add_promoted(1)?;
            }
            Ok(TapOutcome {
                note: "Approved: added to MEMORY.md.".into(),
                state: Some("approved".into()),
                settled: None,
            })
        }
        Err(why) => {
            dreams.unclaim(id)?;
            Ok(TapOutcome { note: format!("Not written: {why}."), state: Some(p.state.clone()), settled: None })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_data;

    #[test]
    fn callback_data_is_checked() {
        assert_eq!(parse_data("dream:12:a"), Some((12, 'a')));
        assert_eq!(parse_data("dream:12:r"), Some((12, 'r')));
        for bad in ["dream:x:a", "dream:1:approve", "other:1:a", "dream:1", ""] {
            assert_eq!(parse_data(bad), None, "{bad}");
        }
    }
}
