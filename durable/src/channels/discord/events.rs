//! What happens to a `MESSAGE_CREATE` the agent's `Gateway` object
//! received: read into an `Inbound`, routed like a webhook's message (the
//! owner's DMs to the main session, `ALLOW_FROM` for the rest; in a server,
//! only messages that mention the bot or reply to it, in allowed channels),
//! and queued in its Session object, which dedupes on the message id and
//! runs one turn at a time. The Gateway does not redeliver, so a failed
//! enqueue is tried again a few times before it is logged as lost.
//!
//! The messages of one channel are relayed one after the other, in the
//! order the Gateway sent them ([`super::relay`]), each naming the one
//! relayed before it (`SendOrder::after`), so its session need not hold it
//! for a straggler.

use super::client::DiscordApi;
use super::message::{to_inbound, without_mention, GatewayMessage};
use super::relay::{Ticket, PATIENCE_MS};
use crate::channels::shared::access::admit;
use crate::channels::shared::groups::route_group;
use crate::channels::shared::web::enqueue_reliably;
use crate::inbound::{ChannelKind, ReplyTarget};
use crate::ports::{Front, LogLevel};
use crate::routing::Route;

/// Relays `msg` when its turn in its channel's lane comes (`ticket`, taken
/// when its frame was read), and lets the next one go when done (accepted,
/// answered otherwise, or given up and logged).
pub async fn relay_message<F: Front>(
    front: &F,
    agent: &str,
    bot_id: Option<&str>,
    msg: &GatewayMessage,
    mut ticket: Ticket,
) {
    ticket.wait(front.sleep(PATIENCE_MS)).await;
    handle_message(front, agent, bot_id, msg, &ticket).await;
}

async fn handle_message<F: Front>(front: &F, agent: &str, bot_id: Option<&str>, msg: &GatewayMessage, lane: &Ticket) {
    let Ok(cfg) = front.config(agent) else {
        front.log(LogLevel::Error, &format!("gateway message for agent {agent} dropped: its settings are invalid"));
        return;
    };
    let mut inbound = match to_inbound(msg, bot_id, front.now_ms()) {
        Ok(i) => i,
        Err(_) => return,
    };
    // Relayed in order after the one before it of this channel: once its
    // session took that one, nothing sent earlier can still come.
    if let Some(order) = inbound.order.as_mut() {
        order.after = lane.previous();
    }
    // A group of agents routes on the message as written (every bot of the
    // group reads the same); a session of this bot alone reads it without
    // the mention that addressed the bot.
    // A copy not queued is logged by `enqueue_reliably`: the Gateway does not redeliver.
    // Every session of the group gets it (same dedupe key), so the next
    // message of the channel names it.
    if route_group(front, &cfg, &inbound, true, async |a: &str| super::handles(front, a)).await.is_some() {
        lane.relaying(&inbound.dedupe_key);
        return;
    }
    if let Some(id) = bot_id {
        inbound.text = without_mention(&inbound.text, id);
    }
    let (route, notice) = admit(front, &cfg, &inbound, false).await;
    match route {
        Route::Turn(key) => {
            // Named before it is accepted: should this relay outlast the
            // next one's patience, that one's session holds it for this one.
            lane.relaying(&inbound.dedupe_key);
            let _ = enqueue_reliably(front, &key, &inbound).await;
        }
        // Someone (or a channel) not let in: their code, once per cooldown.
        Route::Stranger | Route::GroupNotAllowed => {
            if let Some(text) = notice {
                let target = ReplyTarget {
                    channel: ChannelKind::Discord,
                    chat_id: inbound.chat_id.clone(),
                    ..Default::default()
                };
                let api = DiscordApi::for_agent(front.vars(), &cfg);
                if let Err(e) = api.send_text(front, &target, &text).await {
                    front.log(
                        LogLevel::Warn,
                        &format!("a note to {} {} was not sent: {e}", target.channel, target.chat_id),
                    );
                }
            }
        }
        Route::NotAddressed => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::discord::relay::Lanes;
    use crate::testing::FakeFront;

    const BOT: &str = "1016612301262041098";

    /// A MESSAGE_CREATE `d` in guild channel `channel` (the fields Discord sends that the reader uses).
    fn frame(id: &str, channel: &str, content: &str, to_bot: bool) -> GatewayMessage {
        let mentions = if to_bot {
            serde_json::json!([{"id": BOT, "username": "Hearth", "bot": true}])
        } else {
            serde_json::json!([])
        };
        hearth_json::from_value(serde_json::json!({
            "id": id, "channel_id": channel, "guild_id": "200", "type": 0, "content": content,
            "author": {"id": "42", "username": "pat"}, "mentions": mentions,
        }))
        .unwrap()
    }

    /// Relays the frames in order through one set of lanes: (text, what it names as before) per queued copy.
    fn relayed(front: &FakeFront, frames: &[GatewayMessage]) -> Vec<(String, Option<String>)> {
        let lanes = Lanes::default();
        // Places taken in frame order first, as the Gateway object does, then relayed.
        let tickets: Vec<_> = frames.iter().map(|m| lanes.join(&m.channel_id)).collect();
        futures::executor::block_on(async {
            for (m, t) in frames.iter().zip(tickets) {
                relay_message(front, "main", Some(BOT), m, t).await;
            }
        });
        front
            .queued
            .borrow()
            .iter()
            .map(|(_, i)| (i.text.clone(), i.order.as_ref().and_then(|o| o.after.clone())))
            .collect()
    }

    #[test]
    fn each_relayed_message_names_the_one_relayed_before_it_in_its_channel() {
        let front = FakeFront::with(&[("ALLOW_FROM", "discord:300,discord:301")]);
        let got = relayed(
            &front,
            &[
                frame("1001", "300", &format!("<@{BOT}> one"), true),
                frame("1002", "300", "not to the bot", false),
                frame("1003", "301", &format!("<@{BOT}> elsewhere"), true),
                frame("1004", "300", &format!("<@{BOT}> two"), true),
            ],
        );
        assert_eq!(
            got,
            [
                ("one".into(), None),
                ("elsewhere".into(), None),
                // 1002 went to no session: 1004 follows 1001.
                ("two".into(), Some("discord:message:1001".into())),
            ],
            "the first of a channel names nothing (its session holds it); channels are apart"
        );
    }

    #[test]
    fn a_relay_given_up_is_still_named_so_the_next_one_waits_for_it() {
        let front = FakeFront::with(&[("ALLOW_FROM", "discord:300")]);
        let lanes = Lanes::default();
        let one = frame("1001", "300", &format!("<@{BOT}> one"), true);
        let two = frame("1002", "300", &format!("<@{BOT}> two"), true);
        let (t1, t2) = (lanes.join("300"), lanes.join("300"));
        *front.enqueue_error.borrow_mut() = Some("session unavailable".into());
        futures::executor::block_on(relay_message(&front, "main", Some(BOT), &one, t1));
        assert!(front.logs.borrow().iter().any(|l| l.contains("discord:message:1001") && l.contains("not queued")));
        *front.enqueue_error.borrow_mut() = None;
        futures::executor::block_on(relay_message(&front, "main", Some(BOT), &two, t2));
        let queued = front.queued.borrow();
        assert_eq!(queued.len(), 1, "the next message is relayed after the failed one");
        // Its session never took 1001, so it holds 1002 as for any webhook.
        assert_eq!(queued[0].1.order.as_ref().unwrap().after.as_deref(), Some("discord:message:1001"));
    }

    #[test]
    fn a_group_of_agents_gets_the_name_in_every_copy() {
        let front = FakeFront::with(&[
            ("AGENTS", "main,perf"),
            ("GROUPS", r#"{"discord:300": {"agents": ["main", "perf"], "moderator": "main"}}"#),
        ]);
        let got = relayed(
            &front,
            &[frame("1001", "300", "how do we scale?", false), frame("1002", "300", "and the cost?", false)],
        );
        assert_eq!(got.len(), 4, "both messages to both agents: {got:?}");
        assert_eq!(got[0].1, None);
        assert_eq!(got[1].1, None);
        assert_eq!(got[2].1.as_deref(), Some("discord:message:1001"));
        assert_eq!(got[3].1.as_deref(), Some("discord:message:1001"));
    }
}
