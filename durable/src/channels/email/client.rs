//! Replies by email, through the runtime's `send_email` binding
//! ([`Io::send_email`]): one message per reply, from the agent's address
//! (`EMAIL_ADDRESS`, shown as `EMAIL_NAME`), to the person who wrote (and
//! whoever else was in To/Cc), in the thread of the message answered.
//! A reply target without a message to answer (a note to the owner) starts
//! a thread of the agent's notes.
//!
//! Email Routing sends only to the account's verified destination addresses:
//! a binding that refuses an address makes the chat unreachable (reported
//! to the owner), not a reply tried again and again.

use super::compose::{self, Envelope};
use crate::inbound::ReplyTarget;
use crate::ports::{ChannelError, Io, MailError, OutgoingChunk, SendOutcome};
use crate::settings::{setting, AgentConfig, Vars};
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailApi {
    /// The agent's address.
    pub address: String,
    pub name: Option<String>,
}

impl EmailApi {
    /// The agent's mailbox (`None` without `EMAIL_ADDRESS`).
    pub fn for_agent(vars: &impl Vars, cfg: &AgentConfig) -> Option<EmailApi> {
        let agent = cfg.agent.as_str();
        Some(EmailApi {
            address: setting(vars, agent, "EMAIL_ADDRESS")?.to_ascii_lowercase(),
            name: setting(vars, agent, "EMAIL_NAME"),
        })
    }

    /// The envelope of a reply to `target`.
    fn envelope(&self, target: &ReplyTarget) -> Envelope {
        let extra: Value = target.extra.as_deref().and_then(|e| hearth_json::from_str(e).ok()).unwrap_or(Value::Null);
        let list = |k: &str| -> Vec<String> {
            extra[k]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default()
        };
        let mut to = list("to");
        if to.is_empty() {
            to.push(target.chat_id.clone());
        }
        let me = |a: &String| a.eq_ignore_ascii_case(&self.address);
        to.retain(|a| !me(a));
        let mut cc = list("cc");
        cc.retain(|a| !me(a) && !to.contains(a));
        let name = self.name.clone().unwrap_or_else(|| "your agent".into());
        Envelope {
            from: self.address.clone(),
            from_name: self.name.clone(),
            to,
            cc,
            subject: extra["subject"].as_str().map(str::to_owned).unwrap_or_else(|| format!("Notes from {name}")),
            in_reply_to: extra["inReplyTo"].as_str().map(str::to_owned),
            references: list("references"),
            thread: extra["thread"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| crate::text::sha256_hex(target.chat_id.as_bytes())[..16].to_owned()),
        }
    }

    /// Sends one piece of a reply (a whole reply: email pieces are large).
    pub async fn send_chunk<I: Io>(&self, io: &I, target: &ReplyTarget, piece: &OutgoingChunk) -> SendOutcome {
        let env = self.envelope(target);
        if env.to.is_empty() {
            return SendOutcome::Unreachable("no one to send the email to".into());
        }
        let id = compose::message_id(&env.thread, &env.from, &piece.text, if piece.first { "first" } else { "more" });
        let raw = compose::message(&env, &piece.text, &crate::clock::rfc5322(io.now_ms()), &id);
        for rcpt in env.to.iter().chain(&env.cc) {
            match io.send_email(&env.from, rcpt, raw.as_bytes()).await {
                Ok(()) => {}
                Err(MailError::NoBinding) => return SendOutcome::Unreachable(MailError::NoBinding.to_string()),
                Err(MailError::Refused(why)) => {
                    let lower = why.to_ascii_lowercase();
                    let permanent = ["not allowed", "not verified", "invalid", "does not match", "unverified"];
                    let why = format!("email to {rcpt}: {why}");
                    return if permanent.iter().any(|p| lower.contains(p)) {
                        SendOutcome::Unreachable(why)
                    } else {
                        SendOutcome::Retry { after_ms: None, why }
                    };
                }
            }
        }
        SendOutcome::Delivered
    }

    /// An attachment the email handler stashed in the bucket.
    pub async fn attachment<I: Io>(&self, io: &I, key: &str, max_bytes: u64) -> Result<Vec<u8>, ChannelError> {
        let bytes = io.stashed(key).await.map_err(ChannelError::Failed)?;
        if bytes.len() as u64 > max_bytes {
            return Err(ChannelError::TooLarge(bytes.len() as u64));
        }
        Ok(bytes)
    }
}

/// What a reply target carries to answer an email in its thread.
pub fn reply_extra(
    to: &[String],
    cc: &[String],
    subject: &str,
    in_reply_to: Option<&str>,
    references: &[String],
    thread: &str,
) -> String {
    json!({"to": to, "cc": cc, "subject": subject, "inReplyTo": in_reply_to, "references": references, "thread": thread})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::ChannelKind;
    use crate::testing::FakeFront;
    use futures::executor::block_on;

    fn api() -> EmailApi {
        EmailApi { address: "ember@agents.example".into(), name: Some("Ember".into()) }
    }

    #[test]
    fn a_reply_goes_to_everyone_in_the_thread_with_its_headers() {
        let front = FakeFront::with(&[]);
        let target = ReplyTarget {
            channel: ChannelKind::Email,
            chat_id: "ana@example.com".into(),
            extra: Some(reply_extra(
                &["ana@example.com".into(), "ember@agents.example".into()],
                &["pat@example.org".into()],
                "Re: plans",
                Some("m2@example.com"),
                &["m1@example.com".into(), "m2@example.com".into()],
                "0123456789abcdef",
            )),
            ..Default::default()
        };
        let piece = crate::channels::render(ChannelKind::Email, "See you **Friday**.", false, true, true);
        assert_eq!(block_on(api().send_chunk(&front, &target, &piece)), SendOutcome::Delivered);
        let mails = front.mails.borrow();
        let rcpts: Vec<&str> = mails.iter().map(|(_, to, _)| to.as_str()).collect();
        assert_eq!(rcpts, ["ana@example.com", "pat@example.org"], "the agent does not mail itself");
        let raw = String::from_utf8(mails[0].2.clone()).unwrap();
        assert!(raw.contains("In-Reply-To: <m2@example.com>\r\n"), "{raw}");
        assert!(raw.contains("References: <m1@example.com>\r\n <m2@example.com>"), "{raw}");
        assert!(raw.contains("Subject: Re: plans\r\n"));
        assert!(raw.contains("From: \"Ember\" <ember@agents.example>"));
        assert!(raw.contains("Message-ID: <0123456789abcdef."));
    }

    #[test]
    fn a_binding_that_refuses_the_address_makes_the_chat_unreachable() {
        let front = FakeFront::with(&[]);
        *front.mail_error.borrow_mut() = Some(MailError::Refused("email to ana@example.com not allowed".into()));
        let target =
            ReplyTarget { channel: ChannelKind::Email, chat_id: "ana@example.com".into(), ..Default::default() };
        let piece = crate::channels::render(ChannelKind::Email, "hi", false, true, true);
        assert!(matches!(block_on(api().send_chunk(&front, &target, &piece)), SendOutcome::Unreachable(_)));
        *front.mail_error.borrow_mut() = Some(MailError::NoBinding);
        assert!(
            matches!(block_on(api().send_chunk(&front, &target, &piece)), SendOutcome::Unreachable(w) if w.contains("SEND_EMAIL"))
        );
    }
}
