//! A script run in a fresh isolate (`run_code`).

/// A script to run in a fresh isolate (`run_code`, see `crate::codemode`):
/// its modules, and the limits the runtime enforces on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxJob {
    /// `(name, source)` of each ES module; the first is the main module,
    /// which exports the entrypoint class `Sandbox` with a `run(bridge)` method.
    pub modules: Vec<(String, String)>,
    /// Wall-clock time the whole run may take (the parent stops waiting then).
    pub wall_ms: u32,
    /// CPU time the isolate may use (`limits.cpuMs`; enforced in production,
    /// not by local workerd, where the script's own step guard holds).
    pub cpu_ms: u32,
}

/// What a running script asks for, or how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxEvent {
    /// The script calls a tool: `args` is the JSON text it passed, unchecked.
    Call { id: u32, name: String, args: String },
    /// The run is over: `Ok` with what the harness returned (a JSON text,
    /// unchecked), or `Err` with why it failed (load error, limit, crash).
    Done(Result<String, String>),
}

/// The sandbox could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("sandbox: {0}")]
pub struct SandboxError(pub String);

/// A script running in its isolate. Its tool calls come out of [`next`]
/// (several may be open at once) and are answered with [`answer`]; the last
/// event is [`SandboxEvent::Done`], after which answers are ignored.
///
/// [`next`]: SandboxRun::next
/// [`answer`]: SandboxRun::answer
pub trait SandboxRun {
    fn next(&self) -> futures::future::LocalBoxFuture<'_, SandboxEvent>;
    /// Answers call `id`: the tool's text, and whether it is an error.
    fn answer(&self, id: u32, is_error: bool, text: &str);
}
