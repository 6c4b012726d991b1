// A conversation's messages (history rows and archive lines share one shape:
// role user / assistant / toolResult), and the session's notes (a failed
// model, an answer stopped before a word), drawn as a chat: the user's text
// as they typed it, the agent's as rendered markdown, tools as small
// folded lines.
import { h } from "../dom.js";
import { renderMarkdown } from "../markdown.js";

const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>\s*/g;

/** What the user wrote (Hearth's reminders left out), and what they attached. */
export function userParts(m) {
  if (typeof m.content === "string") return { text: m.content.replace(REMINDER, "").trim(), files: [] };
  const blocks = m.content ?? [];
  const texts = blocks.filter((b) => b.type === "text").map((b) => b.text.replace(REMINDER, "").trim()).filter(Boolean);
  const files = blocks.filter((b) => b.type !== "text").map((b) => `${b.type}: ${b.filename ?? b.r2Key?.split("/").pop() ?? ""}`);
  return { text: texts.join("\n\n"), files };
}

/** An assistant message's visible text. */
export function assistantText(m) {
  return (m.content ?? [])
    .map((b) => (b.type === "text" ? b.text : b.type === "native" && b.block?.type === "text" ? b.block.text : ""))
    .filter(Boolean)
    .join("\n");
}

/** Plain text of any message (search, previews). */
export function textOf(m) {
  if (m.role === "user") return userParts(m).text;
  if (m.role === "assistant") return assistantText(m);
  return (m.content ?? []).map((b) => b.text).join("\n");
}

const time = (ms) => (ms ? h("time", { datetime: new Date(ms).toISOString() }, new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })) : null);

function toolLine(summary, detail) {
  return h("details", { class: "tool" }, h("summary", {}, summary), h("pre", {}, detail));
}

/** A bubble: `role` user / assistant / note; `body` its content nodes. */
export function bubble(role, body, { at, mark, error = false } = {}) {
  const label = role === "user" ? "You" : role === "note" ? "Notice" : "Agent";
  return h(
    "article",
    { class: `bubble ${role}${error ? " error" : ""}${mark === "stopped" ? " stopped" : ""}`, "aria-label": label },
    h("div", { class: "body" }, body),
    mark || at ? h("div", { class: "meta" }, mark === "stopped" ? h("span", { class: "badge" }, "Stopped") : null, time(at)) : null,
  );
}

/** One history message as it is shown (null: nothing to show). */
export function messageView(m) {
  if (m.role === "user") {
    const { text, files } = userParts(m);
    if (!text && !files.length) return null;
    return bubble("user", [h("p", { class: "plain" }, text), files.map((f) => h("span", { class: "chip" }, f))], { at: m.timestamp });
  }
  if (m.role === "assistant") {
    const text = assistantText(m);
    const calls = (m.content ?? []).filter((b) => b.type === "toolCall");
    const nodes = [];
    if (text) nodes.push(h("div", { class: "md" }, renderMarkdown(text)));
    for (const c of calls) nodes.push(toolLine(`Used ${c.name}`, JSON.stringify(c.arguments, null, 2)));
    if (!nodes.length) return null;
    const stopped = m.stopReason === "stopped";
    if (!text) return h("div", { class: "tools" }, nodes);
    return bubble("assistant", nodes, { at: m.timestamp, mark: stopped ? "stopped" : null });
  }
  const out = (m.content ?? []).map((b) => b.text).join("\n");
  return h("div", { class: "tools" }, toolLine(`${m.toolName} ${m.isError ? "failed" : "answered"}`, out.length > 4000 ? `${out.slice(0, 4000)}…` : out));
}

/** A note of the session (a failure, an early stop). */
export function noteView(n) {
  return bubble("note", h("p", { class: "plain" }, n.text), { at: n.at, error: n.kind === "error", mark: n.kind === "stopped" ? "stopped" : null });
}

/** Messages and notes in time order (a note goes after the messages of its time). */
export function timeline(messages = [], notes = []) {
  const out = [];
  const rest = [...notes].sort((a, b) => a.at - b.at);
  for (const m of messages) {
    while (rest.length && rest[0].at < (m.timestamp ?? 0)) out.push(noteView(rest.shift()));
    const v = messageView(m);
    if (v) out.push(v);
  }
  for (const n of rest) out.push(noteView(n));
  return out;
}

/** A conversation to read (sessions and archives). */
export function conversation(messages, notes = [], label = "Conversation") {
  const nodes = timeline(messages, notes);
  return h("div", { class: "chat-log", role: "log", tabindex: "0", "aria-label": label }, nodes.length ? nodes : h("p", { class: "muted" }, "No messages."));
}
