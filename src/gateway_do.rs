//! The `Gateway` Durable Object: one per agent whose `DISCORD_GATEWAY` is
//! on, holding the bot's WebSocket to Discord's Gateway. An outgoing
//! WebSocket cannot hibernate, so the object stays resident while connected
//! (the README states the cost). The protocol's decisions are
//! `durable::channels::discord::gateway`; this file owns the socket, the
//! alarm (heartbeats and planned reconnects) and the stored state, and hands
//! each `MESSAGE_CREATE` to `durable::channels::discord::events` for routing.
//!
//! Kept alive by the cron tick (`ensure` every 5 minutes) and by its own
//! alarm: an object restarted by a deploy or an eviction wakes on its alarm,
//! reads its stored session and resumes. Per frame one JS crossing brings the
//! text in; the frame is read once into typed structs.

use crate::adapters::{self, EnvVars};
use crate::js::js_message;
use durable::channels::discord::gateway::{Action, GatewayState, Phase, DEFAULT_GATEWAY_URL};
use durable::channels::discord::relay::Lanes;
use durable::ports::LogLevel;
use durable::protocol::gateway::{EnsureRequest, ENSURE_PATH, STATUS_PATH};
use durable::settings::setting;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use worker::worker_sys::web_sys;
use worker::{durable_object, DurableObject, Env, Method, Request, Response, Result, State};

const STATE_KEY: &str = "gateway";
const AGENT_KEY: &str = "agent";

/// An open socket and the listeners it holds (removed before dropping).
struct Socket {
    ws: web_sys::WebSocket,
    on_message: Closure<dyn FnMut(web_sys::MessageEvent)>,
    on_close: Closure<dyn FnMut(web_sys::CloseEvent)>,
}

impl Socket {
    fn shut(self, code: u16) {
        let _ = self.ws.remove_event_listener_with_callback("message", self.on_message.as_ref().unchecked_ref());
        let _ = self.ws.remove_event_listener_with_callback("close", self.on_close.as_ref().unchecked_ref());
        let _ = self.ws.close_with_code(code);
    }
}

struct Inner {
    state: State,
    env: Env,
    agent: RefCell<Option<String>>,
    gw: RefCell<GatewayState>,
    loaded: Cell<bool>,
    socket: RefCell<Option<Socket>>,
    /// Bumped for every socket: events of an older one are ignored.
    generation: Cell<u32>,
    /// The alarm as last set (saves a storage call per frame).
    alarm_at: Cell<Option<i64>>,
    /// What was last stored (phase, session, fatal, bot id): stored again when it changes.
    stored: RefCell<Option<String>>,
    /// The relays of each channel's messages, one after the other (kept
    /// across reconnects: a resumed socket's replay follows the old one's).
    lanes: Lanes,
}

#[durable_object(alarm)]
pub struct Gateway(Rc<Inner>);

fn jitter() -> f64 {
    js_sys::Math::random()
}

impl Inner {
    fn vars(&self) -> EnvVars {
        EnvVars::of(&self.env)
    }

    fn setting(&self, name: &str) -> Option<String> {
        let agent = self.agent.borrow().clone()?;
        setting(&self.vars(), &agent, name)
    }

    /// `DISCORD_GATEWAY` (an invalid value reads as off, with the error).
    fn enabled(&self) -> std::result::Result<bool, String> {
        // An object never asked to start has no agent yet: off.
        let Some(agent) = self.agent.borrow().clone() else { return Ok(false) };
        durable::settings::discord_gateway(&self.vars(), &agent).map_err(|e| e.to_string())
    }

    /// Closes what is open and plans nothing: the Gateway is off, or cannot
    /// start (`why`, shown as `lastError` until a later ensure starts it).
    async fn stop(self: &Rc<Self>, why: Option<String>) {
        self.apply(vec![Action::Close(1000)]);
        {
            let mut gw = self.gw.borrow_mut();
            gw.phase = Phase::Idle;
            gw.next_heartbeat_at = None;
            gw.reconnect_at = None;
            gw.handshake_deadline = None;
            if why.is_some() {
                gw.fatal = None;
                gw.last_error = why;
            }
        }
        self.rearm().await;
    }

    fn url(&self) -> String {
        self.setting("DISCORD_GATEWAY_URL").unwrap_or_else(|| DEFAULT_GATEWAY_URL.to_owned())
    }

    async fn load(&self) -> Result<()> {
        if self.loaded.get() {
            return Ok(());
        }
        let storage = self.state.storage();
        if self.agent.borrow().is_none() {
            *self.agent.borrow_mut() = storage.get::<String>(AGENT_KEY).await?;
        }
        if let Some(mut st) = storage.get::<GatewayState>(STATE_KEY).await? {
            // A new instance holds no socket, whatever was stored.
            if st.phase != Phase::Failed {
                st.phase = Phase::Idle;
                st.next_heartbeat_at = None;
                st.reconnect_at = None;
                st.handshake_deadline = None;
                st.awaiting_ack = false;
            }
            *self.gw.borrow_mut() = st;
        }
        self.loaded.set(true);
        Ok(())
    }

    /// Stores the state when what matters across a restart changed (or `always`).
    async fn persist(&self, always: bool) {
        let st = self.gw.borrow().clone();
        let mark = format!("{:?}|{:?}|{:?}|{:?}", st.phase, st.session, st.fatal, st.bot_user_id);
        if !always && self.stored.borrow().as_deref() == Some(mark.as_str()) {
            return;
        }
        match self.state.storage().put(STATE_KEY, &st).await {
            Ok(()) => *self.stored.borrow_mut() = Some(mark),
            Err(e) => adapters::log(LogLevel::Warn, &format!("gateway state not stored: {e}")),
        }
    }

    /// Sets the alarm to the state's next wake, when it moved.
    async fn rearm(&self) {
        let next = self.gw.borrow().next_wake();
        if next == self.alarm_at.get() {
            return;
        }
        let storage = self.state.storage();
        let r = match next {
            Some(at) => storage.set_alarm((at - adapters::now_ms()).max(1)).await,
            None => storage.delete_alarm().await,
        };
        match r {
            Ok(()) => self.alarm_at.set(next),
            Err(e) => adapters::log(LogLevel::Warn, &format!("gateway alarm not set: {e}")),
        }
    }

    /// Carries out what the state machine decided, then stores and rearms.
    async fn run(self: &Rc<Self>, actions: Vec<Action>) {
        self.apply(actions);
        self.persist(false).await;
        self.rearm().await;
    }

    /// The synchronous part: sends and closes now, connects and messages in
    /// their own tasks.
    fn apply(self: &Rc<Self>, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send(frame) => {
                    let sent = self.socket.borrow().as_ref().map(|s| s.ws.send_with_str(&frame));
                    if let Some(Err(e)) = sent {
                        adapters::log(LogLevel::Warn, &format!("gateway send failed: {}", js_message(&e)));
                    }
                }
                Action::Close(code) => {
                    self.generation.set(self.generation.get().wrapping_add(1));
                    if let Some(s) = self.socket.borrow_mut().take() {
                        s.shut(code);
                    }
                }
                Action::Connect(url) => {
                    let me = self.clone();
                    wasm_bindgen_futures::spawn_local(async move { me.connect(url).await });
                }
                Action::Message(msg) => {
                    let env = self.env.clone();
                    let agent = self.agent.borrow().clone().unwrap_or_default();
                    let bot = self.gw.borrow().bot_user_id.clone();
                    // Its place in its channel's lane now, in the order the
                    // frames came; the relay waits for the one before.
                    let ticket = self.lanes.join(&msg.channel_id);
                    wasm_bindgen_futures::spawn_local(async move {
                        let front = crate::front::WorkerFront::new(&env);
                        durable::channels::discord::events::relay_message(&front, &agent, bot.as_deref(), &msg, ticket)
                            .await;
                    });
                }
                Action::Log(line) => {
                    let agent = self.agent.borrow().clone().unwrap_or_default();
                    adapters::log(LogLevel::Warn, &format!("agent {agent}: {line}"));
                }
            }
        }
    }

    async fn connect(self: &Rc<Self>, url: String) {
        self.apply(vec![Action::Close(durable::channels::discord::gateway::CLOSE_TO_RESUME)]);
        let generation = self.generation.get();
        match open_socket(&url).await {
            Ok(ws) if self.generation.get() == generation => {
                let me = self.clone();
                // One JS crossing per frame: its text.
                let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
                    if me.generation.get() != generation {
                        return;
                    }
                    let Some(text) = e.data().as_string() else { return };
                    let token = me.setting("DISCORD_BOT_TOKEN").unwrap_or_default();
                    let actions = me.gw.borrow_mut().on_frame(&text, &token, adapters::now_ms(), jitter());
                    let me = me.clone();
                    wasm_bindgen_futures::spawn_local(async move { me.run(actions).await });
                });
                let me = self.clone();
                let on_close = Closure::<dyn FnMut(web_sys::CloseEvent)>::new(move |e: web_sys::CloseEvent| {
                    if me.generation.get() != generation {
                        return;
                    }
                    me.socket.borrow_mut().take();
                    let actions = me.gw.borrow_mut().on_close(e.code(), &e.reason(), adapters::now_ms(), jitter());
                    let me = me.clone();
                    wasm_bindgen_futures::spawn_local(async move { me.run(actions).await });
                });
                let _ = ws.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref());
                let _ = ws.add_event_listener_with_callback("close", on_close.as_ref().unchecked_ref());
                if let Err(e) = js_sys::Reflect::get(&ws, &"accept".into())
                    .and_then(|f| f.dyn_into::<js_sys::Function>())
                    .and_then(|f| f.call0(&ws))
                {
                    let actions = self.gw.borrow_mut().on_connect_failed(&js_message(&e), adapters::now_ms(), jitter());
                    self.run(actions).await;
                    return;
                }
                *self.socket.borrow_mut() = Some(Socket { ws, on_message, on_close });
            }
            // Superseded while connecting (a newer connect or a close).
            Ok(ws) => {
                let _ = ws.close_with_code(1000);
            }
            Err(why) => {
                let actions = self.gw.borrow_mut().on_connect_failed(&why, adapters::now_ms(), jitter());
                self.run(actions).await;
            }
        }
    }
}

/// Opens a WebSocket with `fetch` and `Upgrade: websocket` (how workerd
/// opens outgoing sockets); the socket still needs `accept()`.
async fn open_socket(url: &str) -> std::result::Result<web_sys::WebSocket, String> {
    let http = url.replacen("wss://", "https://", 1).replacen("ws://", "http://", 1);
    let headers = [("upgrade".to_owned(), "websocket".to_owned())];
    let req = crate::js::request("GET", &http, &headers, None, None).map_err(|e| e.to_string())?;
    let resp = crate::js::fetch(&req).await.map_err(|e| e.to_string())?;
    let ws = js_sys::Reflect::get(&resp, &"webSocket".into()).map_err(|e| js_message(&e))?;
    if ws.is_null() || ws.is_undefined() {
        return Err(format!("the gateway answered HTTP {} without a WebSocket", resp.status()));
    }
    ws.dyn_into::<web_sys::WebSocket>().map_err(|_| "not a WebSocket".to_owned())
}

impl DurableObject for Gateway {
    fn new(state: State, env: Env) -> Self {
        Gateway(Rc::new(Inner {
            state,
            env,
            agent: RefCell::new(None),
            gw: RefCell::default(),
            loaded: Cell::new(false),
            socket: RefCell::new(None),
            generation: Cell::new(0),
            alarm_at: Cell::new(None),
            stored: RefCell::new(None),
            lanes: Lanes::default(),
        }))
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        let me = &self.0;
        me.load().await?;
        match (req.method(), req.path().as_str()) {
            (Method::Post, ENSURE_PATH) => {
                let body: EnsureRequest = match adapters::request_json(&mut req).await {
                    Ok(b) => b,
                    Err(e) => return Response::error(format!("bad ensure body: {e}"), 400),
                };
                if me.agent.borrow().as_deref() != Some(body.agent.as_str()) {
                    me.state.storage().put(AGENT_KEY, &body.agent).await?;
                    *me.agent.borrow_mut() = Some(body.agent.clone());
                }
                match me.enabled() {
                    Ok(false) => me.stop(None).await,
                    // Not `failed`: the cron tick starts it once the setting is fixed.
                    Err(e) => me.stop(Some(e)).await,
                    Ok(true) if me.setting("DISCORD_BOT_TOKEN").is_none() => {
                        me.stop(Some("DISCORD_BOT_TOKEN is not set for this agent".into())).await
                    }
                    Ok(true) => {
                        let url = me.url();
                        let actions = me.gw.borrow_mut().ensure(&url, body.force, adapters::now_ms());
                        me.run(actions).await;
                    }
                }
                me.persist(false).await;
                status(me)
            }
            (Method::Get, STATUS_PATH) => status(me),
            _ => Response::error("not found", 404),
        }
    }

    async fn alarm(&self) -> Result<Response> {
        let me = &self.0;
        me.load().await?;
        me.alarm_at.set(None);
        if me.enabled() != Ok(true) {
            return Response::ok("gateway off");
        }
        let url = me.url();
        let mut actions = Vec::new();
        // What is due now is done now (a zombie's reconnect follows its
        // close at once): an alarm set for "now" inside the alarm handler
        // could be taken for the one that is running.
        for _ in 0..3 {
            let now = adapters::now_ms();
            actions.extend(me.gw.borrow_mut().on_alarm(now, &url, jitter()));
            if me.gw.borrow().next_wake().is_none_or(|at| at > now) {
                break;
            }
        }
        me.run(actions).await;
        // The sequence moves with every event: kept at each heartbeat.
        me.persist(true).await;
        Response::ok("ok")
    }
}

fn status(me: &Inner) -> Result<Response> {
    let open = me.socket.borrow().is_some();
    Response::from_json(&me.gw.borrow().status(me.agent.borrow().clone(), me.enabled() == Ok(true), open))
}
