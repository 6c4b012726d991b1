//! The owner's commands about people, answered in their private chat with
//! no LLM call (`crate::people::commands`): `/approve CODE`, `/revoke
//! channel:id`, `/people`, `/link`. The Agent object decides; the session
//! says what it did (through the outbox) and, when someone was let in,
//! tells them too. Anywhere but the owner's main session they change
//! nothing.

use super::deps::SessionDeps;
use super::reply::send;
use crate::inbound::{ChannelKind, Inbound, SessionKey};
use crate::people::commands::OwnerCommand;
use crate::people::texts;
use crate::ports::{LogLevel, Platform, StorageError};
use crate::protocol::people::{Acting, PeopleCall};
use crate::settings::Principal;

/// Answers `cmd`, sent in `inbound`.
pub async fn answer<P: Platform>(
    p: &P,
    deps: &SessionDeps<'_>,
    inbound: &Inbound,
    cmd: OwnerCommand,
) -> Result<(), StorageError> {
    let target = &inbound.reply_target;
    if !matches!(deps.key, SessionKey::Main(_)) {
        p.log(LogLevel::Info, &format!("{} sent an owner's command in {}: refused", inbound.sender_id, deps.key));
        return send(p, deps, target, texts::ONLY_OWNER).await;
    }
    let agent = deps.config.agent.to_string();
    let by = if inbound.channel.is_platform() {
        format!("{}:{}", inbound.channel, inbound.sender_id)
    } else {
        inbound.channel.as_str().to_owned()
    };
    let place = if inbound.channel.is_platform() {
        format!("{} chat {}", inbound.channel, inbound.chat_id)
    } else {
        format!("the {} thread", inbound.channel)
    };
    let acting = Acting { by, place };
    let call = match cmd {
        OwnerCommand::AlreadyOwner => return send(p, deps, target, texts::ALREADY_OWNER).await,
        OwnerCommand::Revoke(Err(_)) => return send(p, deps, target, texts::REVOKE_USAGE).await,
        OwnerCommand::Approve(code) => PeopleCall::Approve { agent, code, acting },
        OwnerCommand::Revoke(Ok(who)) => PeopleCall::Revoke { agent, who, acting },
        OwnerCommand::People => PeopleCall::List { agent },
        OwnerCommand::Link if inbound.channel == ChannelKind::Api || !inbound.channel.is_platform() => {
            return send(p, deps, target, "Send /link from your chat with me (Telegram, Discord, …), not over HTTP.")
                .await;
        }
        OwnerCommand::Link => {
            PeopleCall::Link { agent, owner: Principal::new(inbound.channel, inbound.sender_id.clone()), acting }
        }
    };
    match p.people(&call).await {
        Ok(reply) => {
            send(p, deps, target, &reply.text).await?;
            if let Some(tell) = reply.tell {
                send(p, deps, &tell.target, &tell.text).await?;
            }
            Ok(())
        }
        Err(e) => {
            p.log(LogLevel::Error, &format!("people: {e}"));
            send(
                p,
                deps,
                target,
                &format!("⚠️ I could not do that right now ({e}). Nothing changed; try again in a moment."),
            )
            .await
        }
    }
}
