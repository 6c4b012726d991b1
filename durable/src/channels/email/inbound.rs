//! The Worker's `email` handler: mail that Email Routing delivers to an
//! agent's address. In order: which agent (its `EMAIL_ADDRESS` is the
//! envelope recipient); the message read; mail sent by programs accepted and
//! left unanswered (no loops between agents and auto-responders); only the
//! owner and `ALLOW_FROM` senders reach the agent (anyone else gets an SMTP
//! rejection, so their server tells them, and it costs nothing), and only
//! when the receiving server proved the `From:` address ([`super::auth`]:
//! an aligned SPF, DKIM or DMARC pass), whatever `EMAIL_AUTH` says short of
//! `off`; then the attachments kept in the bucket and the message queued in
//! its session.
//!
//! Email Routing does not deliver a message twice once it is accepted: a
//! message that cannot be queued is rejected with a temporary reason, so the
//! sender learns it did not arrive.

use super::auth::{ascii_domain, prove, Sender, DEFAULT_AUTH_SERVID};
use super::client::reply_extra;
use super::{inline_forwards, quote, read, reply_subject, thread_of, Mail};
use crate::channels::shared::web::enqueue_reliably;
use crate::inbound::{ChannelKind, ChatKind, Inbound, InboundMedia, ReplyTarget, SendOrder, SessionKey};
use crate::ports::{Front, LogLevel};
use crate::routing::{route, Route};
use crate::settings::{agent_ids, principal_id, setting, AgentConfig};

/// What became of an email: accepted (and why, for the log), or refused
/// with a reason the sending server passes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accepted(String),
    Rejected(String),
}

/// Handles one delivered message (`from`/`to`: the SMTP envelope).
pub async fn handle<F: Front>(front: &F, envelope_from: &str, envelope_to: &str, raw: &[u8]) -> Verdict {
    let vars = front.vars();
    let to = envelope_to.trim().to_ascii_lowercase();
    let agent = agent_ids(vars)
        .into_iter()
        .find(|a| setting(vars, a, "EMAIL_ADDRESS").is_some_and(|addr| addr.eq_ignore_ascii_case(&to)));
    let Some(agent) = agent else {
        return Verdict::Rejected(format!("no one receives mail at {to} here"));
    };
    let cfg = match front.config(&agent) {
        Ok(c) => c,
        Err(e) => {
            front.log(LogLevel::Error, &format!("email for agent {agent} refused: {e}"));
            return Verdict::Rejected("this mailbox cannot take mail right now; please try again later".into());
        }
    };
    let dec = |label: &str, bytes: &[u8]| front.decode_text(label, bytes);
    let mut mail = match read(raw, &dec) {
        Ok(m) => m,
        Err(e) => return Verdict::Rejected(format!("not a readable email: {e}")),
    };
    inline_forwards(&mut mail, &dec);
    if mail.automatic {
        front.log(LogLevel::Info, &format!("email to {agent} from a program ({envelope_from}): not answered"));
        return Verdict::Accepted("an automatic message: not answered".into());
    }
    let servid = setting(vars, &agent, "EMAIL_AUTH_SERVID").unwrap_or_else(|| DEFAULT_AUTH_SERVID.into());
    // `check` (the default) and `require` (an older name) both mean: proven
    // or refused. Only `off`, for a local test setup, lets an unproven
    // sender in, and says so for every message.
    let checked = !setting(vars, &agent, "EMAIL_AUTH").is_some_and(|v| v.trim().eq_ignore_ascii_case("off"));
    let proof = if checked {
        prove(&mail, &servid)
    } else {
        front.log(
            LogLevel::Warn,
            &format!("email to {agent} from {envelope_from}: EMAIL_AUTH=off, the sender is not checked (a setting for local tests only)"),
        );
        Sender::Unproven("EMAIL_AUTH=off".into())
    };
    let sender = mail.from.as_ref().map(|(a, _)| a.clone()).unwrap_or_else(|| envelope_from.to_ascii_lowercase());
    let Some(sender_id) = sender_id(&cfg, &sender) else {
        return Verdict::Rejected(format!("{sender:?} is not an email address"));
    };
    let inbound = to_inbound(&mail, &to, &sender_id, front.now_ms());
    let key = match route(&cfg, &inbound) {
        Route::Turn(key) => key,
        Route::Stranger | Route::GroupNotAllowed | Route::NotAddressed => {
            front.log(LogLevel::Info, &format!("email from stranger email:{sender_id} to agent {agent}: refused"));
            return Verdict::Rejected(format!(
                "this agent only reads mail from people its owner allows; your id is email:{sender_id}"
            ));
        }
    };
    // Whoever would reach the agent must be proven: the owner above all
    // (their main session holds MEMORY.md and USER.md).
    match proof {
        Sender::Proven { via, domain } => front.log(
            LogLevel::Info,
            &format!("email from email:{sender_id} to {agent}: sender proven by {via} ({domain})"),
        ),
        Sender::Unproven(why) if checked => {
            front
                .log(LogLevel::Warn, &format!("email to {agent} claiming to be from email:{sender_id} refused: {why}"));
            return Verdict::Rejected(format!(
                "the sender could not be verified: {why} (an aligned SPF, DKIM or DMARC pass is required)"
            ));
        }
        Sender::Unproven(_) => {}
    }
    let inbound = match stash(front, &key, &mail, inbound).await {
        Ok(i) => i,
        Err(e) => {
            front.log(LogLevel::Error, &format!("email attachments for {key} not kept: {e}"));
            return Verdict::Rejected("this mailbox cannot take mail right now; please try again later".into());
        }
    };
    match enqueue_reliably(front, &key, &inbound).await {
        Ok(true) => Verdict::Accepted(format!("queued in {key}")),
        Ok(false) => Verdict::Accepted("a repeat".into()),
        Err(_) => Verdict::Rejected("this mailbox cannot take mail right now; please try again later".into()),
    }
}

/// The sender's principal id: the address as `OWNER_IDS`/`ALLOW_FROM`
/// write it when one of them names the same mailbox (an internationalised
/// domain written as Unicode there, as punycode in the mail, or the other
/// way round), else as the mail writes it.
fn sender_id(cfg: &AgentConfig, address: &str) -> Option<String> {
    let ascii = |a: &str| {
        let (local, domain) = a.rsplit_once('@')?;
        Some(format!("{}@{}", local.to_lowercase(), ascii_domain(domain)?))
    };
    let mine = ascii(address);
    let listed = cfg.owners.iter().chain(&cfg.allow_from).filter(|p| p.channel == ChannelKind::Email);
    for p in listed {
        if mine.is_some() && ascii(&p.id) == mine {
            return Some(p.id.clone());
        }
    }
    principal_id(ChannelKind::Email, address)
}

/// The message as the runtime sees it (attachments not kept yet).
pub fn to_inbound(mail: &Mail, agent_address: &str, sender: &str, now_ms: i64) -> Inbound {
    let me = |a: &String| a.eq_ignore_ascii_case(agent_address);
    let others: Vec<String> = mail.to.iter().chain(&mail.cc).filter(|a| !me(a) && *a != sender).cloned().collect();
    let thread = thread_of(mail);
    // The owner writing to the agent alone is a direct message (the main
    // session); anything else is a thread of its own, its people's messages
    // named in it.
    let kind = if others.is_empty() { ChatKind::Direct } else { ChatKind::Group };
    let chat_id = match kind {
        ChatKind::Direct => sender.to_owned(),
        ChatKind::Group => thread.clone(),
    };
    let mut text = quote::written(&mail.text, &mail.subject);
    if mail.in_reply_to.is_empty() && !mail.subject.is_empty() {
        text = format!("[Subject: {}]\n{text}", mail.subject);
    }
    // The reply goes to the sender, whose address was proven, and to no one
    // else: not to the others of the thread (a sender could name anyone in
    // Cc), not to a `Reply-To:` (anyone's text).
    let reply_to: Vec<String> = vec![sender.to_owned()];
    let mut references = mail.references.clone();
    if let Some(id) = &mail.message_id {
        if !references.contains(id) {
            references.push(id.clone());
        }
    }
    let sender_name = mail.from.as_ref().and_then(|(_, n)| n.clone()).unwrap_or_else(|| sender.to_owned());
    let dedupe = match &mail.message_id {
        Some(id) => format!("email:{id}"),
        None => format!(
            "email:{}",
            crate::text::sha256_hex(format!("{sender}\n{}\n{}", mail.subject, mail.text).as_bytes())
        ),
    };
    Inbound {
        dedupe_key: dedupe,
        channel: ChannelKind::Email,
        kind,
        chat_id: chat_id.clone(),
        sender_id: sender.to_owned(),
        sender_name,
        text,
        addressed: true,
        thread_id: None,
        reply_target: ReplyTarget {
            channel: ChannelKind::Email,
            chat_id: sender.to_owned(),
            reply_to: mail.message_id.clone(),
            extra: Some(reply_extra(
                &reply_to,
                &[],
                &reply_subject(&mail.subject),
                mail.message_id.as_deref(),
                &references,
                &thread,
            )),
            ..Default::default()
        },
        received_at: now_ms,
        media: vec![],
        context: vec![],
        group: None,
        mentions: vec![],
        batch: None,
        // Seconds of the sender's own clock: the best a mailbox knows of
        // which of two messages was written first.
        order: mail.date.map(|d| SendOrder::new("email", d)),
    }
}

/// The attachments kept in the bucket beside the session's media (reset
/// removes them with it), named in `inbound` for the session to ingest.
async fn stash<F: Front>(front: &F, key: &SessionKey, mail: &Mail, mut inbound: Inbound) -> Result<Inbound, String> {
    let limit = r2_layout::mime::MAX_MEDIA_BYTES;
    for (i, a) in mail.attachments.iter().enumerate() {
        let hash = crate::text::sha256_hex(&a.bytes);
        let ext = r2_layout::mime::extension_for(&a.mime);
        let object = r2_layout::keys::media_object(&key.render(), &format!("email-{}-{i}", &hash[..16]), ext)
            .map_err(|e| e.to_string())?;
        let size = a.bytes.len() as u64;
        // Too large to keep: the session tells the person, as for any channel.
        if size <= limit {
            front.stash(&object, a.bytes.clone(), &a.mime).await?;
        }
        inbound.media.push(InboundMedia {
            handle: object,
            mime_type: a.mime.clone(),
            filename: a.name.clone(),
            size: Some(size),
            kind: if a.mime.starts_with("image/") { "photo" } else { "attachment" }.into(),
        });
    }
    Ok(inbound)
}
