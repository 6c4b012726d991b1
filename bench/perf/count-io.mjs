// A module around a Worker (Hearth's build/index.js, or the JS I/O floor)
// that counts what the Worker and its objects do: R2 operations, SQL
// statements (by object: S Session, A Agent), Durable Object calls. It
// patches the runtime classes' prototypes rather than wrapping the objects
// (the wasm-bindgen glue's instanceof checks refuse proxies). `GET /__io`
// returns what was counted since the last `GET /__io`. Used by
// bench/perf/cold-io.mjs; the module `./worker.mjs` is replaced by the Worker's path.
import * as m from "./worker.mjs";
const io = { r2: [], sql: [], calls: [] };
const patched = new Set();
function patch(obj, names, log) {
  const proto = Object.getPrototypeOf(obj);
  if (!proto || patched.has(proto)) return;
  patched.add(proto);
  for (const n of names) {
    const f = proto[n];
    if (typeof f !== "function") continue;
    Object.defineProperty(proto, n, {
      configurable: true,
      writable: true,
      value: function (...a) {
        log(n, a, this);
        return f.apply(this, a);
      },
    });
  }
}
function patchEnv(env) {
  if (env.BUCKET) patch(env.BUCKET, ["get", "list", "head", "put", "delete"], (n, a) => io.r2.push(`${n} ${typeof a[0] === "string" ? a[0] : JSON.stringify(a[0] ?? null)}`));
  for (const b of ["AGENT", "SESSION"]) {
    const ns = env[b];
    if (!ns) continue;
    patch(ns.get(ns.idFromName("__probe")), ["fetch"], (n, a) => io.calls.push(`${a[0].method ?? ""} ${new URL(a[0].url ?? a[0]).pathname}`));
  }
}
const owners = new WeakMap();
function patchState(who, state) {
  owners.set(state.storage.sql, who);
  patch(state.storage.sql, ["exec"], (n, a, self) => io.sql.push(`${owners.get(self) ?? "?"}: ${a[0].replace(/\s+/g, " ").slice(0, 100)}`));
}
const counted = (who, C) =>
  new Proxy(C, {
    construct(t, [state, env], nt) {
      patchEnv(env);
      patchState(who, state);
      return Reflect.construct(t, [state, env], nt);
    },
  });
export const Session = counted("S", m.Session);
export const Agent = counted("A", m.Agent);
export default {
  async fetch(req, env, ctx) {
    if (new URL(req.url).pathname === "/__io") {
      const out = JSON.stringify(io);
      io.r2 = [];
      io.sql = [];
      io.calls = [];
      return new Response(out);
    }
    patchEnv(env);
    return typeof m.default === "function" ? new m.default(ctx, env).fetch(req) : m.default.fetch(req, env, ctx);
  },
};
