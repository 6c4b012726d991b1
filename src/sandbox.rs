//! `run_code`'s sandbox in the Worker: the Worker Loader binding `LOADER`
//! (`[[worker_loaders]]` in wrangler.toml) and the small JS side in
//! `src/sandbox.js` (an RpcTarget must be a JS class). Which tools a
//! script may call, and everything about its calls, is decided in
//! `durable::codemode`; this only carries events across.

use crate::js::js_message;
use durable::ports::{SandboxError, SandboxEvent, SandboxJob, SandboxRun};
use futures::future::LocalBoxFuture;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use worker::Env;

#[wasm_bindgen(module = "/src/sandbox.js")]
extern "C" {
    type JsRun;
    #[wasm_bindgen(catch, js_name = startSandbox)]
    fn start_sandbox(loader: &JsValue, modules: &js_sys::Array, wall_ms: u32, cpu_ms: u32) -> Result<JsRun, JsValue>;
    #[wasm_bindgen(method)]
    fn next(this: &JsRun) -> js_sys::Promise;
    #[wasm_bindgen(method)]
    fn answer(this: &JsRun, id: u32, is_error: bool, text: &str);
}

/// The binding name.
pub const LOADER: &str = "LOADER";

/// The Worker Loader binding, if the Worker has one.
pub fn loader_of(env: &Env) -> Option<JsValue> {
    js_sys::Reflect::get(env.as_ref(), &LOADER.into()).ok().filter(|v| v.is_object())
}

/// Starts `job` under `loader`.
pub fn start(loader: &JsValue, job: &SandboxJob) -> Result<Box<dyn SandboxRun>, SandboxError> {
    let modules = js_sys::Array::new();
    for (name, source) in &job.modules {
        modules.push(&js_sys::Array::of2(&name.into(), &source.into()));
    }
    start_sandbox(loader, &modules, job.wall_ms, job.cpu_ms)
        .map(|run| Box::new(Run(run)) as Box<dyn SandboxRun>)
        .map_err(|e| SandboxError(js_message(&e)))
}

struct Run(JsRun);

impl SandboxRun for Run {
    fn next(&self) -> LocalBoxFuture<'_, SandboxEvent> {
        let promise = self.0.next();
        Box::pin(async move {
            match JsFuture::from(promise).await {
                Ok(event) => read_event(&event),
                Err(e) => SandboxEvent::Done(Err(js_message(&e))),
            }
        })
    }

    fn answer(&self, id: u32, is_error: bool, text: &str) {
        self.0.answer(id, is_error, text);
    }
}

/// `{kind: "call", id, name, args}` or `{kind: "done", ok, text}`.
fn read_event(event: &JsValue) -> SandboxEvent {
    let get = |key: &str| js_sys::Reflect::get(event, &key.into()).unwrap_or(JsValue::UNDEFINED);
    let text = |key: &str| get(key).as_string().unwrap_or_default();
    match get("kind").as_string().as_deref() {
        Some("call") => SandboxEvent::Call {
            id: get("id").as_f64().map_or(0, |id| id as u32),
            name: text("name"),
            args: text("args"),
        },
        Some("done") if get("ok").as_bool() == Some(true) => SandboxEvent::Done(Ok(text("text"))),
        Some("done") => SandboxEvent::Done(Err(text("text"))),
        _ => SandboxEvent::Done(Err("the sandbox sent an event that cannot be read".into())),
    }
}
