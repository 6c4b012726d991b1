//! A webhook's types (from [`super::shared::web`], so `channels::webhook::X`
//! names them as before), and what runs after a handler's answer: the work
//! it left ([`run_later`]) and the note to a stranger ([`tell`]), sent
//! through whichever platform the note's target is on.

pub use super::shared::web::*;

use super::outbound::Channels;
use crate::inbound::ReplyTarget;
use crate::ports::{Front, Http, LogLevel};

/// Runs a handler's [`Later`].
pub async fn run_later<F: Front>(front: &F, later: Later) {
    match later {
        Later::Tell { agent, target, text } => tell(front, &agent, &target, &text).await,
        Later::Respond { url, body } => {
            let req = crate::ports::HttpRequest::post_json(url, &body, 10_000);
            match front.http().send(req).await {
                Ok(r) if r.status == 200 => {}
                Ok(r) => front.log(LogLevel::Warn, &format!("a button's answer was refused: HTTP {}", r.status)),
                Err(e) => front.log(LogLevel::Warn, &format!("a button's answer was not sent: {e}")),
            }
        }
        Later::Enqueue { key, inbound } => {
            let _ = enqueue_reliably(front, &key, &inbound).await;
        }
    }
}

/// Sends a note outside any session (a stranger's code, a claim's
/// outcome) as the agent's bot. Its failure is only logged.
pub async fn tell<F: Front>(front: &F, agent: &str, target: &ReplyTarget, text: &str) {
    let Ok(cfg) = front.config(agent) else { return };
    let channels = Channels::for_agent(front.vars(), &cfg);
    if let Err(e) = channels.send_text(front, target, text).await {
        front.log(LogLevel::Warn, &format!("a note to {} {} was not sent: {e}", target.channel, target.chat_id));
    }
}
