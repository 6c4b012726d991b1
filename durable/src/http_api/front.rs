//! What every route of the HTTP API shares: the [`ApiFront`] port and the
//! replies (a refusal in the one `{"error": …}` shape, JSON, an object's
//! answer relayed). The routes sit above it, [`super::serve`] above them.

use crate::api::ApiError;
use crate::ports::{Front, ObjectStore};
use crate::protocol::call::{Call, CallError};
pub(super) use crate::serving::Answer as WebReply;

/// What the HTTP API needs from the Worker beyond a webhook's [`Front`]:
/// typed calls to the objects, read ([`ApiFront::call`]) or relayed to the
/// client as they came ([`ApiFront::relay`]).
#[allow(async_fn_in_trait)]
pub trait ApiFront: Front {
    type Store: ObjectStore;
    /// The agents' bucket (the workspace and its history).
    fn store(&self) -> Result<Self::Store, String>;
    async fn call<C: Call>(&self, call: &C) -> Result<C::Reply, CallError>;
    /// The object's answer as it came: its status and body.
    async fn relay<C: Call>(&self, call: &C) -> Result<(u16, Vec<u8>), String>;
    /// A new random id (a thread's, when the client names none).
    fn new_uuid(&self) -> String;
    /// Every tool name a session may have (the workspace's skills view
    /// names the ones a skill needs that Hearth lacks); the sessions' list,
    /// which sits above this floor.
    fn tool_names(&self) -> Vec<&'static str>;
}

/// A refusal as a reply.
pub fn refused(e: &ApiError) -> WebReply {
    WebReply::bytes(e.status, crate::serving::JSON, e.body())
}

pub(super) fn error(status: u16, message: impl Into<String>) -> WebReply {
    refused(&ApiError::new(status, message))
}

pub(super) fn json<T: serde::Serialize>(value: &T) -> WebReply {
    WebReply::json(200, value)
}

/// `call`'s answer relayed to the client (an object that cannot be reached: 503).
pub(super) async fn relay<F: ApiFront, C: Call>(front: &F, call: &C) -> WebReply {
    relayed(front.relay(call).await)
}

/// [`relay`]'s reply from the answer, once for every call type (issue 37 item 4).
#[inline(never)]
fn relayed(answer: Result<(u16, Vec<u8>), String>) -> WebReply {
    match answer {
        Ok((status, body)) => WebReply::bytes(status, crate::serving::JSON, body),
        Err(e) => error(503, format!("the agent's object could not be reached: {e}")),
    }
}
