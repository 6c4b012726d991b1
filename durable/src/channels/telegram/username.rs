//! Telegram bot usernames, learned once per isolate with `getMe`: the
//! webhook needs its own bot's to tell whether a group message mentions it,
//! and a group of agents needs every agent's bot's, since people @mention
//! agents by their bots' usernames.

use super::client::TelegramApi;
use crate::ports::{Front, Io};
use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Bot usernames by bot id (an isolate's bots do not change names often
    /// enough to matter; a new isolate asks again).
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

/// The username of `api`'s bot (`getMe` once per isolate).
pub async fn bot_username<I: Io>(io: &I, api: &TelegramApi) -> Option<String> {
    let bot_id = api.bot_id();
    if let Some(name) = cached(bot_id) {
        return Some(name);
    }
    let name = api.get_me_username(io).await.ok().flatten()?;
    remember(bot_id, &name);
    Some(name)
}

/// What else `agent` is @mentioned by in a Telegram group: its bot's
/// username (none without a token, or when `getMe` fails).
pub async fn handles<F: Front>(front: &F, agent: &str) -> Vec<String> {
    let Some(api) = front.config(agent).ok().and_then(|cfg| TelegramApi::for_agent(&cfg)) else {
        return vec![];
    };
    bot_username(front, &api).await.into_iter().collect()
}
