// Reads a text/event-stream response as it arrives: the events so far, and a
// promise for the moment one matching a condition (or the end) comes.

const hrNow = () => Number(process.hrtime.bigint()) / 1e6;

/** Parses one event block (`id:`, `event:`, `data:` lines; `:` comments). */
export function parseEvent(block) {
  const ev = { event: "message", id: null, data: "" };
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const at = line.indexOf(":");
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
    if (field === "event") ev.event = value;
    else if (field === "id") ev.id = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  ev.data = data.join("\n");
  try {
    ev.json = JSON.parse(ev.data);
  } catch {
    ev.json = null;
  }
  return ev;
}

export function sseReader(res) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  const events = [];
  const waiters = new Set();
  const state = { done: false, error: null, raw: "" };
  const wake = () => {
    for (const w of waiters) w();
  };
  (async () => {
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        state.raw += text;
        buf += text;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const ev = parseEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
          if (ev) {
            ev.at = hrNow();
            events.push(ev);
          }
        }
        wake();
      }
    } catch (e) {
      state.error = e;
    } finally {
      state.done = true;
      wake();
    }
  })();
  const api = {
    events,
    state,
    /** The text of the `delta` events, a `replace` starting over. */
    text() {
      let out = "";
      for (const e of events) {
        if (e.event !== "delta") continue;
        if (e.json.replace) out = "";
        out += e.json.text;
      }
      return out;
    },
    /** Resolves with the first event matching `pred` (or null at the end). */
    until(pred, { timeoutMs = 15000 } = {}) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = events.find(pred);
          if (hit || state.done) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(hit ?? null);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no matching event in ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.event))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    /** Resolves once the stream ended. */
    end({ timeoutMs = 15000 } = {}) {
      return api.until(() => false, { timeoutMs });
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
  return api;
}
