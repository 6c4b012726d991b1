// The parent's side of run_code (imported by src/sandbox.rs through
// wasm-bindgen): loads a script's modules into a fresh isolate from the
// Worker Loader binding and turns its tool calls into events for Rust.
//
// Why JavaScript: the isolate reaches Hearth only through an RpcTarget
// passed to its entrypoint, and an RpcTarget is a JS class. The bridge has
// one method, `call(name, argsJson)`; it checks only the types and sizes of
// what it is given and queues it; which tools exist, their arguments and
// their guards are decided in Rust (durable/src/codemode). The isolate gets
// no env, no bindings, and no network (`globalOutbound: null`).
import { RpcTarget } from "cloudflare:workers";

// One call's arguments, and the harness's report, in characters.
const MAX_ARGS_CHARS = 2 * 1024 * 1024;
const MAX_REPORT_CHARS = 256 * 1024;

class Bridge extends RpcTarget {
  #run;
  constructor(run) {
    super();
    this.#run = run;
  }
  call(name, args) {
    return this.#run.call(name, args);
  }
}

class SandboxRun {
  #events = [];
  #waiting = null;
  #open = new Map();
  #nextId = 1;
  #done = false;
  #timer;

  constructor(loader, modules, wallMs, cpuMs) {
    const code = {
      compatibilityDate: "2026-04-01",
      mainModule: modules[0][0],
      modules: Object.fromEntries(modules),
      env: {},
      globalOutbound: null,
      limits: { cpuMs },
    };
    this.#timer = setTimeout(() => this.#finish(false, `the script did not finish within ${wallMs} ms`), wallMs);
    const bridge = new Bridge(this);
    (async () => {
      // A new id is a new isolate. (`loader.load(code)` is the same without
      // the id, but local workerd 1.20260426 aborts now and then when such an
      // isolate is torn down: "tried to defer destruction during isolate
      // shutdown", after some 30 to 160 runs in one process; with `get` it
      // did not in 480 runs.)
      const worker = loader.get(crypto.randomUUID(), async () => code);
      const entrypoint = worker.getEntrypoint("Sandbox");
      try {
        const report = await entrypoint.run(bridge);
        if (typeof report !== "string" || report.length > MAX_REPORT_CHARS) throw new Error("the sandbox answered something unexpected");
        this.#finish(true, report);
      } finally {
        // Let the isolate go soon, not whenever the collector gets to it, but
        // after the Session has its report (tearing it down takes a moment).
        setTimeout(() => {
          entrypoint[Symbol.dispose]?.();
          worker[Symbol.dispose]?.();
        }, 0);
      }
    })().catch((e) => this.#finish(false, String(e?.message ?? e)));
  }

  call(name, args) {
    if (this.#done) return { error: true, text: "the run is over" };
    if (typeof name !== "string" || name.length > 128 || typeof args !== "string") {
      return { error: true, text: "a call needs a tool name and its arguments as JSON text" };
    }
    if (args.length > MAX_ARGS_CHARS) return { error: true, text: `arguments longer than ${MAX_ARGS_CHARS} characters` };
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#open.set(id, resolve);
      this.#push({ kind: "call", id, name, args });
    });
  }

  /** The next event: a call `{kind, id, name, args}` or the end `{kind: "done", ok, text}`. */
  next() {
    if (this.#events.length) return Promise.resolve(this.#events.shift());
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  answer(id, isError, text) {
    const resolve = this.#open.get(id);
    if (!resolve) return;
    this.#open.delete(id);
    resolve({ error: isError, text });
  }

  #push(event) {
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = null;
      waiting(event);
    } else {
      this.#events.push(event);
    }
  }

  #finish(ok, text) {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    for (const resolve of this.#open.values()) resolve({ error: true, text: "the run is over" });
    this.#open.clear();
    this.#push({ kind: "done", ok, text });
  }
}

/** Starts `modules` ([[name, source], …], the first the main one) under `LOADER`. */
export function startSandbox(loader, modules, wallMs, cpuMs) {
  return new SandboxRun(loader, modules, wallMs, cpuMs);
}
