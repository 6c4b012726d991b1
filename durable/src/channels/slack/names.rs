//! A Slack sender's name. Slack's events carry only the user id
//! (`U024BE7LH`); the name people see comes from the Web API's `users.info`
//! (bot scope `users:read`). It is looked up in the webhook, before the
//! message is queued, so the name travels with the message everywhere a
//! sender's name goes: a channel's speaker labels in the prompt, the
//! conversation memory, the console's session list.
//!
//! Names are kept in the isolate's memory for a day (a failure, as the id,
//! for ten minutes): a busy channel asks Slack once per person, not per
//! message, and no object call or storage read is added to the webhook's
//! path. Memory, not the Agent object's SQLite: the lookup happens in the
//! Worker, before any object is called, and an isolate that starts cold
//! costs one `users.info` per person, which Slack's Tier 4 limit (100+ a
//! minute) absorbs. A failure (network, timeout, `user_not_found`,
//! `missing_scope`) leaves the id as the name: the message is never lost,
//! and waits at most [`LOOKUP_TIMEOUT_MS`].

use super::client::SlackApi;
use crate::ports::{Http, HttpRequest, Io, LogLevel};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;

/// A name is asked again after a day (people rename themselves).
pub const NAME_TTL_MS: i64 = 24 * 60 * 60 * 1000;
/// A failed lookup is tried again after ten minutes (a scope just added).
pub const FAILURE_TTL_MS: i64 = 10 * 60 * 1000;
/// Slack wants the webhook's answer within 3 s: the lookup gets half.
pub const LOOKUP_TIMEOUT_MS: u32 = 1_500;
/// People kept per isolate; past it, the expired ones go (all, if none has).
const MAX_NAMES: usize = 2_000;

/// The name to show for a `users.info` user object: the display name, else
/// the profile's real name, else the user's `real_name`, else its `name`.
/// Slack leaves fields the user never filled empty, `null` or absent.
pub fn pick_name(user: &Value) -> Option<String> {
    let profile = user.get("profile");
    let field = |v: Option<&Value>, key: &str| {
        v.and_then(|v| v.get(key)).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    field(profile, "display_name")
        .or_else(|| field(profile, "real_name"))
        .or_else(|| field(Some(user), "real_name"))
        .or_else(|| field(Some(user), "name"))
}

/// The name in a `users.info` answer, or Slack's error (`user_not_found`,
/// `missing_scope`...).
pub fn read_answer(status: u16, body: &[u8]) -> Result<String, String> {
    let v: Value = hearth_json::from_slice(body).map_err(|_| format!("HTTP {status}, not JSON"))?;
    if v.get("ok") != Some(&Value::Bool(true)) {
        let error = v.get("error").and_then(Value::as_str).unwrap_or("no error given");
        return Err(match v.get("needed").and_then(Value::as_str) {
            Some(needed) => format!("{error} (the bot token needs {needed})"),
            None => error.to_owned(),
        });
    }
    v.get("user").and_then(pick_name).ok_or_else(|| "a user without any name".to_owned())
}

/// Names looked up, with when each expires.
#[derive(Default)]
pub struct NameCache {
    names: HashMap<String, (String, i64)>,
}

impl NameCache {
    pub fn get(&self, key: &str, now_ms: i64) -> Option<&str> {
        self.names.get(key).filter(|(_, until)| *until > now_ms).map(|(n, _)| n.as_str())
    }

    pub fn put(&mut self, key: String, name: String, until_ms: i64, now_ms: i64) {
        if self.names.len() >= MAX_NAMES {
            self.names.retain(|_, (_, until)| *until > now_ms);
            if self.names.len() >= MAX_NAMES {
                self.names.clear();
            }
        }
        self.names.insert(key, (name, until_ms));
    }
}

thread_local! {
    /// The isolate's names, keyed by agent and user id.
    static NAMES: RefCell<NameCache> = RefCell::default();
}

/// The name of `user` as `agent`'s Slack app sees it: cached, else asked
/// with `users.info`, else the id.
pub async fn sender_name<I: Io>(io: &I, api: &SlackApi, agent: &str, user: &str) -> String {
    // Ids are upper-case letters and digits; anything else is not asked about
    // (and never needs escaping in the query string).
    if user.is_empty() || !user.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return user.to_owned();
    }
    let key = format!("{agent}:{user}");
    let now = io.now_ms();
    if let Some(name) = NAMES.with(|c| c.borrow().get(&key, now).map(str::to_owned)) {
        return name;
    }
    // users.info takes its arguments as a query string (not JSON).
    let req = HttpRequest::get(format!("{}/users.info?user={user}", api.base), LOOKUP_TIMEOUT_MS)
        .header("authorization", &format!("Bearer {}", api.token));
    let found = match io.http().send(req).await {
        Ok(resp) => read_answer(resp.status, &resp.body),
        Err(e) => Err(e.to_string()),
    };
    let (name, ttl) = match found {
        Ok(name) => (name, NAME_TTL_MS),
        Err(why) => {
            io.log(LogLevel::Warn, &format!("slack users.info {user}: {why}; the id stands for the name"));
            (user.to_owned(), FAILURE_TTL_MS)
        }
    };
    NAMES.with(|c| c.borrow_mut().put(key, name.clone(), now + ttl, now));
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::Backoff;
    use crate::testing::FakeFront;
    use futures::executor::block_on;
    use serde_json::json;

    fn api() -> SlackApi {
        SlackApi {
            base: "https://slack.test/api".into(),
            token: "xoxb-1".into(),
            backoff: Backoff { attempts: 2, base_ms: 1, max_ms: 1 },
        }
    }

    fn docs_answer() -> Vec<u8> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/real-world/slack");
        std::fs::read(dir.join("users-info-docs.json")).unwrap()
    }

    #[test]
    fn the_display_name_first_then_the_real_names_then_the_handle() {
        // Slack's documented answer: the display name.
        assert_eq!(read_answer(200, &docs_answer()), Ok("spengler".into()));
        // No display name set (empty, as Slack sends it): the profile's real name.
        let u = json!({"name": "egon", "real_name": "Egon S", "profile": {"display_name": "", "real_name": "Egon Spengler"}});
        assert_eq!(pick_name(&u).as_deref(), Some("Egon Spengler"));
        // Profile names null or absent: the user's own real_name, then its name.
        let u = json!({"name": "egon", "real_name": "Egon S", "profile": {"display_name": null}});
        assert_eq!(pick_name(&u).as_deref(), Some("Egon S"));
        let u = json!({"name": "egon", "real_name": "  ", "profile": {}});
        assert_eq!(pick_name(&u).as_deref(), Some("egon"));
        assert_eq!(pick_name(&json!({"id": "U1", "profile": {}})), None);
    }

    #[test]
    fn slacks_refusals_are_errors_that_name_the_scope() {
        let e = read_answer(200, br#"{"ok":false,"error":"user_not_found"}"#).unwrap_err();
        assert_eq!(e, "user_not_found");
        let body =
            br#"{"ok":false,"error":"missing_scope","needed":"users:read","provided":"chat:write,app_mentions:read"}"#;
        assert!(read_answer(200, body).unwrap_err().contains("users:read"));
        assert!(read_answer(502, b"<html>bad gateway</html>").is_err());
        assert!(read_answer(200, br#"{"ok":true,"user":{"id":"U1"}}"#).is_err());
    }

    #[test]
    fn a_name_is_asked_once_with_the_bot_token_then_kept_for_a_day() {
        let front = FakeFront::default();
        front.http.reply(200, std::str::from_utf8(&docs_answer()).unwrap());
        assert_eq!(block_on(sender_name(&front, &api(), "main", "W012A3CDE")), "spengler");
        let req = front.http.requests.borrow()[0].clone();
        assert_eq!((req.method, req.url.as_str()), ("GET", "https://slack.test/api/users.info?user=W012A3CDE"));
        assert!(req.headers.contains(&("authorization".into(), "Bearer xoxb-1".into())));
        assert_eq!(req.timeout_ms, LOOKUP_TIMEOUT_MS);
        // Again within the day: from memory, no request.
        front.now.set(front.now.get() + NAME_TTL_MS - 1);
        assert_eq!(block_on(sender_name(&front, &api(), "main", "W012A3CDE")), "spengler");
        assert_eq!(front.http.requests.borrow().len(), 1);
        // Another agent's app asks for itself.
        front.http.reply(200, r#"{"ok":true,"user":{"id":"W012A3CDE","name":"egon","profile":{}}}"#);
        assert_eq!(block_on(sender_name(&front, &api(), "work", "W012A3CDE")), "egon");
        // A day later: asked again (a rename shows).
        front.now.set(front.now.get() + 2);
        front.http.reply(200, r#"{"ok":true,"user":{"id":"W012A3CDE","profile":{"display_name":"Egon"}}}"#);
        assert_eq!(block_on(sender_name(&front, &api(), "main", "W012A3CDE")), "Egon");
        assert_eq!(front.http.requests.borrow().len(), 3);
    }

    #[test]
    fn a_failed_lookup_leaves_the_id_and_is_not_repeated_for_ten_minutes() {
        let front = FakeFront::default();
        front.http.reply(200, r#"{"ok":false,"error":"user_not_found"}"#);
        assert_eq!(block_on(sender_name(&front, &api(), "main", "U0UNKNOWN")), "U0UNKNOWN");
        assert_eq!(block_on(sender_name(&front, &api(), "main", "U0UNKNOWN")), "U0UNKNOWN");
        assert_eq!(front.http.requests.borrow().len(), 1);
        // A network failure (none scripted): the id too.
        assert_eq!(block_on(sender_name(&front, &api(), "main", "U0OTHER")), "U0OTHER");
        // Ten minutes on, the unknown user is asked again.
        front.now.set(front.now.get() + FAILURE_TTL_MS);
        front.http.reply(200, r#"{"ok":true,"user":{"id":"U0UNKNOWN","real_name":"Ray Stantz","profile":{}}}"#);
        assert_eq!(block_on(sender_name(&front, &api(), "main", "U0UNKNOWN")), "Ray Stantz");
        // An id that is not one is never put in a URL.
        assert_eq!(block_on(sender_name(&front, &api(), "main", "U1&user=U2")), "U1&user=U2");
        assert_eq!(front.http.requests.borrow().len(), 3);
    }
}
