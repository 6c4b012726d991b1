//! What the user is shown for the model's last reply of a turn: its text, and
//! a note when it is not a whole answer. A refusal reads as a refusal, an
//! answer cut at the output limit says so, and an empty reply is not passed
//! off as an answer.

use crate::llm::{LlmReply, StopReason};
use r2_layout::AssistantBlock;

/// Told when a turn reaches its reply deadline between model calls.
pub const TURN_PAST_DEADLINE: &str = "⚠️ This is taking longer than I can still answer here, so I stopped. \
What I did so far is saved; please ask again.";

/// Sent when the model answered with nothing at all.
pub const NOTHING_TO_ADD: &str = "(I have nothing to add.)";
/// Sent when the model declined and said nothing.
pub const DECLINED: &str = "🚫 My model declined to answer this.";
/// Follows what the model said before it declined.
pub const DECLINED_NOTE: &str = "(🚫 My model declined this request.)";
/// Kept in the history for a refusal without text.
pub const DECLINED_IN_HISTORY: &str = "[I declined to answer this.]";
/// Follows an answer cut at the output limit.
pub const CUT_NOTE: &str = "(✂️ My answer was cut off here: it reached its length limit.)";
/// Sent when the output limit was reached before any text (a reasoning
/// model can spend it all on thinking).
pub const CUT_BEFORE_ANSWER: &str = "✂️ My model reached its length limit (LLM_MAX_TOKENS) before it wrote an \
answer. Ask for something shorter, or raise the limit.";
/// Follows an answer the provider paused (Anthropic `pause_turn`).
pub const PAUSED_NOTE: &str = "(⏸️ My model paused before finishing. Say \"continue\" to let it go on.)";
/// Sent when a paused reply has no text.
pub const PAUSED_BEFORE_ANSWER: &str = "⏸️ My model paused before it answered. Say \"continue\" to let it go on.";
/// The result of a tool call cut at the output limit: it is not run (its
/// input may be cut short too).
pub const CUT_CALL: &str = "not run: your output reached its length limit before this call was complete. \
Do the work in smaller steps.";

/// The text to send for a turn's final reply; `None` when it has no text and
/// nothing to explain (scheduled runs then stay silent).
pub fn shown(reply: &LlmReply) -> Option<String> {
    let text = reply.text();
    let said = !text.trim().is_empty();
    let with_note = |note: &str| format!("{}\n\n{note}", text.trim_end());
    Some(match reply.stop {
        StopReason::Refusal if said => with_note(DECLINED_NOTE),
        StopReason::Refusal => DECLINED.to_owned(),
        StopReason::Length if said => with_note(CUT_NOTE),
        StopReason::Length => CUT_BEFORE_ANSWER.to_owned(),
        StopReason::Pause if said => with_note(PAUSED_NOTE),
        StopReason::Pause => PAUSED_BEFORE_ANSWER.to_owned(),
        _ if said => text,
        _ => return None,
    })
}

/// The blocks kept in the history for a reply: what the model said, and for
/// a refusal without text a note that it declined (rather than an empty reply).
pub fn stored_blocks(reply: &LlmReply) -> Vec<AssistantBlock> {
    let mut blocks = reply.blocks.clone();
    if reply.stop == StopReason::Refusal && reply.text().trim().is_empty() {
        blocks.push(AssistantBlock::Text { text: DECLINED_IN_HISTORY.into() });
    }
    blocks
}

/// What to resend for a final reply found in the history (a turn evicted
/// after its answer was stored): a placeholder stands for what was shown.
pub fn from_history(text: String) -> String {
    match text.as_str() {
        crate::llm::rules::EMPTY_REPLY => NOTHING_TO_ADD.to_owned(),
        DECLINED_IN_HISTORY => DECLINED.to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use r2_layout::Usage;

    fn reply(text: &str, stop: StopReason) -> LlmReply {
        LlmReply {
            blocks: vec![AssistantBlock::Text { text: text.into() }],
            stop,
            usage: Usage::default(),
            model: String::new(),
        }
    }

    #[test]
    fn answers_that_are_not_whole_say_what_they_are() {
        assert_eq!(shown(&reply("Hi!", StopReason::Stop)).as_deref(), Some("Hi!"));
        assert_eq!(shown(&reply(" \n", StopReason::Stop)), None);
        assert_eq!(
            shown(&reply("I can't help with that.", StopReason::Refusal)).as_deref(),
            Some(format!("I can't help with that.\n\n{DECLINED_NOTE}").as_str())
        );
        assert_eq!(shown(&reply("", StopReason::Refusal)).as_deref(), Some(DECLINED));
        let cut = shown(&reply("The first three steps are ", StopReason::Length)).unwrap_or_default();
        assert!(cut.starts_with("The first three steps are\n\n") && cut.ends_with(CUT_NOTE), "{cut}");
        assert_eq!(shown(&reply("", StopReason::Length)).as_deref(), Some(CUT_BEFORE_ANSWER));
        assert_eq!(shown(&reply("", StopReason::Pause)).as_deref(), Some(PAUSED_BEFORE_ANSWER));
        assert_eq!(
            stored_blocks(&reply("", StopReason::Refusal)).last(),
            Some(&AssistantBlock::Text { text: DECLINED_IN_HISTORY.into() })
        );
        assert_eq!(stored_blocks(&reply("no", StopReason::Refusal)).len(), 1);
        assert_eq!(from_history(crate::llm::rules::EMPTY_REPLY.into()), NOTHING_TO_ADD);
        assert_eq!(from_history("Hi".into()), "Hi");
    }
}
