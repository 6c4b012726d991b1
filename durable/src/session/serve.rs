//! The Session object's routes: a request read into its
//! [`crate::protocol`] type and handed to the [`SessionHost`]'s method;
//! the answer written back. The Worker's `Session` class only turns its
//! request into an [`Incoming`] and the [`Served`] into a response.
//!
//! An API message (`POST /api/turn`) is answered as an event stream
//! (`stream`), as the HTTP API's JSON once the turn is done, or, for
//! another session's `delegate` call (`?as=outcome`), as the
//! [`ApiOutcome`] itself. Refusals are `{"error"}` with a status.

use super::host::{ApiStart, PostError, SessionHost, SessionRuntime};
use super::watch::Attach;
use crate::apart::apart;
use crate::ports::StorageError;
use crate::protocol::api::{ApiOutcome, ApiTurnRequest, StopRequest, STOP_PATH, TURN_PATH};
use crate::protocol::call::Method::{Get, Post};
use crate::protocol::session::{
    Admission, EnqueueRequest, PostRequest, ADMISSION_PATH, ANSWER_PATH, ENQUEUE_PATH, MEMORY_STORED_PATH, POST_PATH,
    RESET_PATH, STATUS_PATH, WAKE_PATH,
};
use crate::serving::{stream_headers, Answer, Incoming, Keepalive, OpenStream, Served, JSON};
use crate::settings::stream::{StreamConfig, DEFAULT_KEEPALIVE_MS};
use serde::Serialize;

type Reply = Result<Answer, Answer>;

fn failed(e: StorageError) -> Answer {
    Answer::error(500, &e.to_string())
}

fn json<T: Serialize>(value: T) -> Reply {
    Ok(Answer::json(200, &value))
}

/// The 409 of an idempotency key whose answer is no longer kept.
const FORGOTTEN: &str =
    "this Idempotency-Key was used for a message more than a day ago and its answer is no longer kept: use a new key";

/// Answers one request to the Session object. `streams` opens the sink of
/// a `/stream` client's event stream.
pub async fn serve<R: SessionRuntime>(host: &SessionHost<R>, req: &Incoming, streams: &dyn OpenStream) -> Served {
    if (req.method, req.path.as_str()) == (Post, TURN_PATH) {
        let body: ApiTurnRequest = match req.json("turn") {
            Ok(b) => b,
            Err(refused) => return refused.into(),
        };
        let as_outcome = req.query("as") == Some("outcome");
        // Apart, as the routes below: a chat's turn need not compile the API's.
        return apart(api_turn(host, &body, as_outcome, streams)).await;
    }
    Served::Answer(route(host, req).await.unwrap_or_else(|refused| refused))
}

async fn route<R: SessionRuntime>(host: &SessionHost<R>, req: &Incoming) -> Reply {
    match (req.method, req.path.as_str()) {
        (Post, ENQUEUE_PATH) => {
            let body: EnqueueRequest = req.json("enqueue body")?;
            json(host.enqueue(&body).await.map_err(failed)?)
        }
        (Post, POST_PATH) => {
            let body: PostRequest = req.json("post body")?;
            match apart(host.post(&body)).await {
                Ok(reply) => json(reply),
                Err(PostError::Refused(why)) => Err(Answer::error(400, &why)),
                Err(PostError::Storage(e)) => Err(failed(e)),
            }
        }
        (Get, STATUS_PATH) => json(host.status(req.query("brief").is_some()).map_err(failed)?),
        (Post, STOP_PATH) => {
            let body: StopRequest = req.json("stop body")?;
            json(host.stop(&body))
        }
        (Post, ADMISSION_PATH) => {
            let body: Admission = req.json("admission body")?;
            host.admission(body.open).map_err(failed)?;
            Ok(Answer::ok())
        }
        (Post, WAKE_PATH) => {
            host.wake().await.map_err(failed)?;
            Ok(Answer::ok())
        }
        (Post, MEMORY_STORED_PATH) => {
            host.memory_stored();
            Ok(Answer::ok())
        }
        (Get, ANSWER_PATH) => match req.query("request") {
            Some(r) => json(host.answer(r).map_err(failed)?),
            None => Err(Answer::error(400, "answer needs ?request=")),
        },
        (Post, RESET_PATH) => match apart(host.admin_reset()).await.map_err(failed)? {
            Some(reply) => Ok(Answer::json(202, &reply)),
            None => Err(Answer::error(404, "no such session")),
        },
        _ => Err(Answer::error(404, "not found")),
    }
}

/// The thread and the idempotency key a client repeats to join the same
/// turn (also one the Worker made up): on every API answer.
fn api_headers(body: &ApiTurnRequest) -> [(String, String); 2] {
    [
        ("x-thread-id".into(), body.thread_id.clone()),
        ("idempotency-key".into(), crate::api::idempotency_of(&body.inbound.dedupe_key).to_owned()),
    ]
}

/// An API message: a stream of its turn's events, or its answer once done.
async fn api_turn<R: SessionRuntime>(
    host: &SessionHost<R>,
    body: &ApiTurnRequest,
    as_outcome: bool,
    streams: &dyn OpenStream,
) -> Served {
    let outcome = |o: ApiOutcome| -> Answer {
        if as_outcome {
            return Answer::json(200, &o);
        }
        let (status, json) = o.http(&body.thread_id);
        let mut answer = Answer::bytes(status, JSON, json.into_bytes());
        answer.headers.extend(api_headers(body));
        answer
    };
    if body.stream {
        let sink = match streams.open() {
            Ok(s) => s,
            Err(e) => return Answer::error(500, &format!("no event stream: {e}")).into(),
        };
        let how = Attach::Stream(sink, body.last_event_id.clone());
        return match host.api_turn(body, how).await {
            Err(e) => failed(e).into(),
            Ok(ApiStart::Forgotten) => Answer::error(409, FORGOTTEN).into(),
            Ok(_) => {
                let mut headers = stream_headers();
                headers.extend(api_headers(body));
                Served::Stream { headers, keepalive: keepalive(host, body.session_key.agent().as_str()) }
            }
        };
    }
    let answer = match host.api_turn(body, Attach::Wait).await {
        Err(e) => failed(e),
        Ok(ApiStart::Waiting(rx)) => match rx.await {
            Ok(o) => outcome(o),
            Err(_) => Answer::error(503, "the turn's watcher went away; ask again with the same Idempotency-Key"),
        },
        Ok(ApiStart::Answered(o)) => outcome(o),
        Ok(ApiStart::Forgotten) => Answer::error(409, FORGOTTEN),
        Ok(ApiStart::Streaming) => Answer::error(500, "a waiting request got a stream"),
    };
    answer.into()
}

/// While a `/stream` client is attached, a loop sends an SSE comment to the
/// ones that heard nothing for `STREAM_KEEPALIVE_MS` (one loop per object;
/// it ends with the last client). `None`: a loop runs already.
fn keepalive<R: SessionRuntime>(host: &SessionHost<R>, agent: &str) -> Option<Keepalive> {
    let watch = host.watch();
    if !watch.claim_pinger() {
        return None;
    }
    // An invalid value is reported by the turn's own settings.
    let every_ms = StreamConfig::load(host.runtime().vars(), agent).map_or(DEFAULT_KEEPALIVE_MS, |c| c.keepalive_ms);
    Some(Keepalive { every_ms, ping: Box::new(move || watch.ping()) })
}

#[cfg(test)]
mod tests;
