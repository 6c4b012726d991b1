// A conversation's messages (history rows and archive lines share one shape:
// role user / assistant / toolResult), rendered as text.
import { h } from "../dom.js";

const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>\s*/g;

export function textOf(m) {
  if (m.role === "user") {
    if (typeof m.content === "string") return m.content.replace(REMINDER, "");
    return (m.content ?? []).map((b) => (b.type === "text" ? b.text.replace(REMINDER, "") : `[${b.type}: ${b.filename ?? b.r2Key ?? ""}]`)).join("\n");
  }
  if (m.role === "assistant") {
    return (m.content ?? [])
      .map((b) => {
        if (b.type === "text") return b.text;
        if (b.type === "toolCall") return `[tool ${b.name} ${JSON.stringify(b.arguments)}]`;
        if (b.type === "native" && b.block?.type === "text") return b.block.text;
        return "";
      })
      .filter(Boolean)
      .join("\n");
  }
  return `[${m.toolName} → ${(m.content ?? []).map((b) => b.text).join("\n").slice(0, 400)}]`;
}

export function bubble(role, text) {
  const cls = role === "user" ? "user" : "assistant";
  return h("div", { class: `bubble ${cls}` }, h("span", { class: "tool" }, role === "toolResult" ? "tool result" : role), text);
}

export function conversation(messages) {
  return h("div", { class: "chat-log", role: "log", "aria-label": "Conversation" }, messages.map((m) => bubble(m.role, textOf(m))));
}
