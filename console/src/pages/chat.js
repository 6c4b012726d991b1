// Chat: a thread of the picked agent, streamed through POST /stream (SSE
// delta / tool / done / error). `/reset` is an ordinary message.
import { agentPath, get, stream } from "../api.js";
import { h, page, say } from "../dom.js";
import { bubble, textOf } from "./messages.js";

const sessionKey = (agent, thread) => (thread === "main" ? `agent:${agent}:main` : `agent:${agent}:api:${thread}`);

export async function chatPage(state) {
  const agent = state.agent;
  const threads = await get(agentPath(agent, "/memory/threads")).catch(() => []);
  const thread = h("input", { id: "thread", list: "threads", value: sessionStorage.getItem("hearth-thread") || "main", size: 20 });
  const log = h("div", { class: "chat-log card", role: "log", "aria-label": "Conversation", "aria-live": "polite" });
  const input = h("textarea", { id: "message", rows: 3, placeholder: "Message (or /reset)" });
  const send = h("button", { type: "submit" }, "Send");
  const form = h("form", {}, h("label", { for: "message" }, "Message"), input, h("div", { class: "row" }, send, h("span", { class: "muted" }, "Enter sends, Shift+Enter a new line")));

  async function loadHistory() {
    log.replaceChildren();
    sessionStorage.setItem("hearth-thread", thread.value);
    try {
      const s = await get(agentPath(agent, `/sessions/${encodeURIComponent(sessionKey(agent, thread.value))}`));
      for (const m of s.messages ?? []) log.append(bubble(m.role, textOf(m)));
      log.scrollTop = log.scrollHeight;
    } catch {
      /* a new thread has no history yet */
    }
  }

  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    send.disabled = true;
    log.append(bubble("user", text));
    const answer = bubble("assistant", "");
    answer.classList.add("streaming");
    const body = document.createTextNode("");
    answer.append(body);
    log.append(answer);
    const tools = h("span", { class: "tool" });
    answer.prepend(tools);
    try {
      await stream(
        agentPath(agent, "/stream"),
        { messages: [{ role: "user", content: text }], threadId: thread.value },
        (event, data) => {
          if (event === "delta") body.data = data.replace ? data.text : body.data + data.text;
          else if (event === "tool") tools.textContent = `tool ${data.name}: ${data.status}`;
          else if (event === "done") body.data = data.text;
          else if (event === "error") {
            body.data = data.message;
            answer.classList.add("error");
          }
          log.scrollTop = log.scrollHeight;
        },
        { idempotencyKey: crypto.randomUUID() },
      );
      answer.classList.remove("streaming");
      answer.dataset.done = "true";
    } catch (err) {
      body.data = err.message;
      answer.classList.add("error");
      say(err.message, { error: true });
    } finally {
      send.disabled = false;
      input.focus();
    }
  });
  thread.addEventListener("change", loadHistory);

  page(
    `Chat with ${agent}`,
    h(
      "div",
      { class: "row" },
      h("label", { for: "thread" }, "Thread"),
      thread,
      h("datalist", { id: "threads" }, h("option", { value: "main" }), threads.map((t) => h("option", { value: t.id }, t.title ?? ""))),
      h("button", { type: "button", class: "secondary", onclick: loadHistory }, "Open"),
    ),
    log,
    form,
  );
  await loadHistory();
}
