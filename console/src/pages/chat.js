// Chat: the agent's threads (`main` is the owner's private chat, the others
// API threads titled by their first message) and one conversation. The
// answer streams in (POST /stream: delta / tool / done / error) rendered as
// markdown; Stop cuts it short (POST /threads/{id}/stop); what failed or
// was stopped stays in the thread after a reload (the session's notes).
import { agentPath, get, post, stream } from "../api.js";
import { fmtAgo, h, page, say } from "../dom.js";
import { markdownInto } from "../markdown.js";
import { bubble, timeline, userParts } from "./messages.js";

const sessionKey = (agent, thread) => (thread === "main" ? `agent:${agent}:main` : `agent:${agent}:api:${thread}`);
const VALID = /^[A-Za-z0-9_-]{1,64}$/;
const newThreadId = () => `c-${crypto.randomUUID().replace(/-/g, "").slice(0, 20)}`;
/** A phone or tablet: Enter makes a new line there, the Send button sends. */
const touch = () => matchMedia("(pointer: coarse)").matches;
const titleOf = (text) => {
  const line = text.split("\n").find((l) => l.trim()) ?? text;
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};

/** What the agent can do, said in an empty thread (its skills once known). */
function emptyState(agent, thread, fill) {
  const skills = h("li", { hidden: true });
  const tries = ["What do you remember about me?", "What can you do?", "Summarise https://example.com in three lines"];
  const box = h(
    "div",
    { class: "empty" },
    h("h2", {}, thread === "main" ? `Your private chat with ${agent}` : `A new chat with ${agent}`),
    h("p", { class: "muted" }, thread === "main" ? "The same conversation as your direct messages on Telegram or Discord: it knows your MEMORY.md and USER.md." : "A thread of its own: it does not see your private notes (MEMORY.md, USER.md)."),
    h("p", {}, `${agent} can:`),
    h(
      "ul",
      {},
      h("li", {}, "answer and write, with lists, tables and code"),
      h("li", {}, "remember things for you and look them up later"),
      h("li", {}, thread === "main" ? "read and edit its workspace files (SOUL.md, notes, HEARTBEAT.md…)" : "read its workspace files"),
      h("li", {}, "read a web page you give it"),
      skills,
      h("li", {}, "start over when you send /reset (the conversation is archived first)"),
    ),
    h("div", { class: "row suggestions" }, tries.map((t) => h("button", { type: "button", class: "secondary small", onclick: () => fill(t) }, t))),
  );
  // The skills come with the workspace listing: filled in when it arrives.
  get(agentPath(agent, "/workspace"))
    .then((w) => {
      const usable = (w.skills ?? []).filter((s) => !s.leftOut && !s.shadowed);
      if (!usable.length) return;
      skills.hidden = false;
      skills.replaceChildren(`use its skills: ${usable.map((s) => `${s.name} (${s.description})`).join(", ")}`);
    })
    .catch(() => {});
  return box;
}

function threadList(agent, threads, current, onNew) {
  const items = [];
  const seen = new Set();
  const add = (id, title, at) => {
    if (seen.has(id)) return;
    seen.add(id);
    const label = id === "main" ? "Private chat (main)" : title || "Untitled chat";
    items.push(
      h(
        "li",
        { "data-thread": id },
        h("a", { href: `#/chat/${encodeURIComponent(id)}`, "aria-current": id === current ? "page" : false }, h("span", { class: "title" }, label), at ? h("span", { class: "muted small" }, fmtAgo(at)) : null),
      ),
    );
  };
  if (!threads.some((t) => t.id === current) && current !== "main") add(current, "New chat", null);
  add("main", null, threads.find((t) => t.id === "main")?.updatedAt);
  for (const t of threads) add(t.id, t.title, t.updatedAt ?? t.createdAt);
  const details = h(
    "details",
    { class: "threads", open: !matchMedia("(max-width: 760px)").matches },
    h("summary", {}, "Chats"),
    h("button", { type: "button", id: "new-chat", class: "secondary", onclick: onNew }, "New chat"),
    h("ul", { class: "thread-list", "aria-label": `Chats with ${agent}` }, items),
  );
  return details;
}

export async function chatPage(state, threadArg) {
  const agent = state.agent;
  const remembered = sessionStorage.getItem(`hearth-thread:${agent}`);
  const thread = [threadArg, remembered, "main"].find((t) => t && VALID.test(t));
  sessionStorage.setItem(`hearth-thread:${agent}`, thread);
  const key = sessionKey(agent, thread);
  const [threads, status] = await Promise.all([
    get(agentPath(agent, "/memory/threads")).catch(() => []),
    get(agentPath(agent, `/sessions/${encodeURIComponent(key)}`)).catch(() => ({ messages: [], notes: [] })),
  ]);
  const known = thread === "main" || threads.some((t) => t.id === thread);
  let titled = known || (status.messages ?? []).length > 0;

  const log = h("div", { class: "chat-log", role: "log", tabindex: "0", "aria-label": `Conversation with ${agent}` });
  const input = h("textarea", { id: "message", rows: 1, placeholder: `Message ${agent}`, enterkeyhint: touch() ? "enter" : "send", "aria-describedby": "composer-hint" });
  const send = h("button", { type: "submit", id: "send" }, "Send");
  const stop = h("button", { type: "button", id: "stop", class: "danger", hidden: true }, "Stop");
  const hint = h("p", { id: "composer-hint", class: "muted small hint" }, touch() ? "Enter adds a line; the Send button sends." : "Enter sends, Shift+Enter adds a line, Esc stops an answer.");
  const form = h("form", { class: "composer", "aria-label": "Write a message" }, h("label", { for: "message", class: "sr-only" }, "Message"), input, send, stop);

  const fill = (text) => {
    input.value = text;
    grow();
    input.focus();
  };
  const grow = () => {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight + 2, Math.round(window.innerHeight * 0.4))}px`;
  };
  const scroll = () => (log.scrollTop = log.scrollHeight);

  const history = timeline(status.messages ?? [], status.notes ?? []);
  log.append(...(history.length ? history : [emptyState(agent, thread, fill)]));

  let running = null;

  /** Follows the answer to the message sent with `idempotencyKey` (new, or rejoined after a reload). */
  async function follow(text, idempotencyKey, { rejoin = false } = {}) {
    const pendingKey = `hearth-pending:${agent}:${thread}`;
    sessionStorage.setItem(pendingKey, JSON.stringify({ key: idempotencyKey, text }));
    const answer = h("div", { class: "md" });
    const tools = h("div", { class: "tool-status muted small" });
    const thinking = h("p", { class: "thinking", role: "status" }, h("span", { class: "dots", "aria-hidden": "true" }), " Thinking…");
    const view = bubble("assistant", [tools, thinking, answer]);
    view.classList.add("streaming");
    view.setAttribute("aria-busy", "true");
    log.append(view);
    scroll();
    const md = markdownInto(answer);
    const steps = [];
    let shown = "";
    running = { key: idempotencyKey, view };
    send.hidden = true;
    stop.hidden = false;
    stop.disabled = false;
    log.setAttribute("aria-busy", "true");
    const finish = () => {
      thinking.remove();
      view.classList.remove("streaming");
      view.removeAttribute("aria-busy");
      view.dataset.done = "true";
      running = null;
      send.hidden = false;
      stop.hidden = true;
      log.removeAttribute("aria-busy");
      sessionStorage.removeItem(pendingKey);
    };
    try {
      if (!rejoin && !titled) {
        // A new chat is titled by its first message, alongside (not before) the
        // message: the thread is made long before the turn registers it.
        titled = true;
        post(agentPath(agent, "/memory/threads"), { threadId: thread, title: titleOf(text) }).catch(() => {});
      }
      await stream(
        agentPath(agent, "/stream"),
        { messages: [{ role: "user", content: text }], threadId: thread },
        (event, data, id) => {
          if (event === "delta") {
            const step = Number((id ?? "0").split("-")[0]) || 0;
            steps[step] = data.replace ? data.text : (steps[step] ?? "") + data.text;
            const next = steps.filter(Boolean).join("\n\n");
            if (next !== shown) {
              if (!shown) thinking.remove();
              shown = next;
              md.set(shown, { now: !answer.childNodes.length });
            }
          } else if (event === "tool") {
            tools.textContent = data.status === "running" ? `Using ${data.name}…` : `Used ${data.name}${data.status === "error" ? " (it failed)" : ""}`;
          } else if (event === "done") {
            if (data.text) md.set(data.text, { now: true });
            if (data.stopped) {
              view.classList.add("stopped");
              view.append(h("div", { class: "meta" }, h("span", { class: "badge" }, "Stopped")));
              if (!data.text) answer.replaceChildren(h("p", { class: "plain muted" }, "Stopped before anything was written."));
            }
          } else if (event === "error") {
            view.classList.add("error");
            answer.replaceChildren(h("p", { class: "plain" }, data.message), h("button", { type: "button", class: "secondary small", onclick: () => submit(text) }, "Ask again"));
          }
          scroll();
        },
        { idempotencyKey },
      );
    } catch (err) {
      view.classList.add("error");
      answer.replaceChildren(h("p", { class: "plain" }, `The answer could not be read: ${err.message}`));
      say(err.message, { error: true });
    } finally {
      finish();
      scroll();
    }
  }

  async function submit(text) {
    if (!text.trim() || running) return;
    log.querySelector(".empty")?.remove();
    log.append(bubble("user", h("p", { class: "plain" }, text), { at: Date.now() }));
    await follow(text, crypto.randomUUID());
  }

  async function stopAnswer() {
    if (!running) return;
    stop.disabled = true;
    try {
      const r = await post(agentPath(agent, `/threads/${encodeURIComponent(thread)}/stop`), { idempotencyKey: running.key });
      if (!r.stopped) say(r.reason ?? "Nothing to stop");
    } catch (err) {
      stop.disabled = false;
      say(`Could not stop: ${err.message}`, { error: true });
    }
  }

  input.addEventListener("input", grow);
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && running) {
      e.preventDefault();
      stopAnswer();
    } else if (e.key === "Enter" && !e.shiftKey && !e.isComposing && !touch()) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim() || running) return;
    input.value = "";
    grow();
    submit(text);
    input.focus();
  });
  stop.addEventListener("click", stopAnswer);

  const onNew = () => {
    location.hash = `#/chat/${newThreadId()}`;
  };
  page(
    `Chat with ${agent}`,
    h("div", { class: "chat" }, threadList(agent, threads, thread, onNew), h("section", { class: "conversation", "aria-label": "Conversation" }, log, form, hint)),
  );
  scroll();
  // Back after a reload while an answer was being written: follow it again
  // (the same Idempotency-Key joins the running turn).
  const pending = JSON.parse(sessionStorage.getItem(`hearth-pending:${agent}:${thread}`) ?? "null");
  if (pending && status.open > 0) {
    const last = [...(status.messages ?? [])].reverse().find((m) => m.role === "user");
    if (!last || userParts(last).text !== pending.text.trim()) log.append(bubble("user", h("p", { class: "plain" }, pending.text)));
    log.querySelector(".empty")?.remove();
    follow(pending.text, pending.key, { rejoin: true });
  } else if (pending) {
    sessionStorage.removeItem(`hearth-pending:${agent}:${thread}`);
  }
  // (Not on a phone: the keyboard would cover the page each time it opens.)
  if (!touch()) input.focus({ preventScroll: true });
}
