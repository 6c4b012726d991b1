//! Telegram bot usernames, learned once per isolate with `getMe`: the
//! webhook needs its own bot's to tell whether a group message mentions it,
//! and a group of agents needs every agent's bot's, since people @mention
//! agents by their bots' usernames. Its own module, below both users, so the
//! webhook and the group routing share it without importing each other.

use super::client::TelegramApi;
use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Bot usernames by bot id.
    static USERNAMES: RefCell<HashMap<i64, String>> = RefCell::new(HashMap::new());
}

/// The username of bot `bot_id`, when this isolate learned it.
pub fn cached(bot_id: i64) -> Option<String> {
    USERNAMES.with(|u| u.borrow().get(&bot_id).cloned())
}

/// Keeps bot `bot_id`'s username for this isolate.
pub fn remember(bot_id: i64, name: &str) {
    USERNAMES.with(|u| u.borrow_mut().insert(bot_id, name.to_owned()));
}

/// The username of `cfg`'s bot (`getMe` once per isolate).
pub async fn bot_username(cfg: &durable::settings::AgentConfig) -> Option<String> {
    let api = TelegramApi::for_agent(cfg)?;
    let bot_id: i64 = api.token.split(':').next().and_then(|s| s.parse().ok()).unwrap_or(0);
    if let Some(name) = cached(bot_id) {
        return Some(name);
    }
    let name = api.get_me_username().await.ok().flatten()?;
    remember(bot_id, &name);
    Some(name)
}
