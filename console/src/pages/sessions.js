// Sessions: the agent's conversations by channel, each by who it is with
// (a person's name, a group, a thread's title) and its last message; the
// archived ones after. Open one to read it (archived and compacted parts
// too) or reset it.
import { agentPath, get, post } from "../api.js";
import { busy, fmtAgo, fmtTime, h, loading, page, problem, say } from "../dom.js";
import { conversation } from "./messages.js";

const CHANNELS = { telegram: "Telegram", discord: "Discord", slack: "Slack", whatsapp: "WhatsApp", email: "Email", api: "HTTP API" };
const channelName = (c) => CHANNELS[c] ?? c;

/** A session key in words: its group (for listing), a title, who the user is. */
export function describeKey(key, { title, threadTitles = new Map() } = {}) {
  const [, , first, ...rest] = key.split(":");
  if (first === "main") return { group: "Your private chat", title: "Private chat with you", user: "You" };
  if (first === "heartbeat") return { group: "Heartbeat and jobs", title: "Heartbeat check-ins", user: "Check-in" };
  if (first === "job") return { group: "Heartbeat and jobs", title: `Scheduled job “${rest[0]}”`, user: "Job" };
  if (first === "api") return { group: "Console and API chats", title: threadTitles.get(rest[0]) || `Thread ${rest[0]}`, user: "You" };
  const [kind, id, , topic] = rest;
  const channel = channelName(first);
  if (kind === "dm") return { group: channel, title: title ? `${title} (direct messages)` : `Direct messages with ${id}`, user: title || "They" };
  if (kind === "group") return { group: channel, title: `Group chat ${id}${topic ? `, topic ${topic}` : ""}`, user: "Someone" };
  return { group: channel, title: key, user: "User" };
}

export async function sessionsPage(state) {
  const agent = state.agent;
  const [data, threads] = await Promise.all([get(agentPath(agent, "/sessions")), get(agentPath(agent, "/memory/threads")).catch(() => [])]);
  const threadTitles = new Map(threads.filter((t) => t.title).map((t) => [t.id, t.title]));
  const view = h("section", { "aria-label": "Conversation", class: "card reader" }, h("p", { class: "muted" }, "Pick a conversation to read it."));
  const live = data.live ?? [];
  const described = new Map(live.map((s) => [s.sessionKey, describeKey(s.sessionKey, { title: s.title, threadTitles })]));
  const describe = (key) => described.get(key) ?? describeKey(key, { threadTitles });

  const select = (btn) => {
    for (const b of document.querySelectorAll(".session-list button[aria-current]")) b.removeAttribute("aria-current");
    btn?.setAttribute("aria-current", "true");
  };

  // The conversation shown is the last one asked for (a slow read does not win).
  let reading = 0;
  async function openLive(key, btn) {
    const ticket = ++reading;
    select(btn);
    const d = describe(key);
    view.replaceChildren(h("h2", {}, d.title), loading());
    await busy(view, async () => {
      let s;
      try {
        s = await get(agentPath(agent, `/sessions/${encodeURIComponent(key)}`));
      } catch (err) {
        if (ticket === reading) view.replaceChildren(h("h2", {}, d.title), problem(err.message));
        return;
      }
      if (ticket !== reading) return;
      view.replaceChildren(
        h("h2", {}, d.title),
        h("p", { class: "muted small" }, `${s.messageCount} messages${s.compactions ? `, ${s.compactions} compacted parts archived` : ""}${s.open ? `, ${s.open} waiting to be answered` : ""} · ${key}`),
        h("div", { class: "row" }, h("button", { type: "button", class: "danger", id: "reset-session", onclick: () => reset(key, d) }, "Reset this conversation")),
        conversation(s.messages ?? [], s.notes ?? [], `Conversation: ${d.title}`),
      );
    });
  }
  async function openArchive(id, title, btn) {
    const ticket = ++reading;
    select(btn);
    view.replaceChildren(h("h2", {}, title), loading());
    await busy(view, async () => {
      try {
        const a = await get(agentPath(agent, `/archives/${encodeURIComponent(id)}`));
        if (ticket !== reading) return;
        const m = a.metadata ?? {};
        view.replaceChildren(h("h2", {}, title), h("p", { class: "muted small" }, `${m.messageCount ?? a.messages?.length ?? 0} messages, archived ${fmtTime(Number(m.archivedAt))} · ${a.key}`), conversation(a.messages ?? [], [], `Archived conversation: ${title}`));
      } catch (err) {
        if (ticket === reading) view.replaceChildren(h("h2", {}, title), problem(err.message));
      }
    });
  }
  async function reset(key, d) {
    if (!confirm(`Reset “${d.title}”? The conversation is archived first (you can read it under Archived), then it starts fresh.`)) return;
    try {
      await post(agentPath(agent, `/sessions/${encodeURIComponent(key)}/reset`));
      say("Reset queued: the conversation is archived and starts fresh");
    } catch (err) {
      say(err.message, { error: true });
    }
  }

  // Live conversations, grouped by channel, most recent first within each.
  const groups = new Map();
  for (const s of live) {
    const d = describe(s.sessionKey);
    if (!groups.has(d.group)) groups.set(d.group, []);
    groups.get(d.group).push(s);
  }
  const lastLine = (s, d) => {
    if (!s.last) return null;
    const speaker = s.last.role === "assistant" ? agent : d.user;
    return h("span", { class: "last" }, `${speaker}: ${s.last.text}`);
  };
  const liveList = [...groups.entries()].map(([group, items]) =>
    h(
      "section",
      { class: "session-group", "aria-label": group },
      h("h3", {}, group),
      h(
        "ul",
        { class: "session-list" },
        items.map((s) => {
          const d = describe(s.sessionKey);
          return h("li", { "data-key": s.sessionKey }, h("button", { type: "button", onclick: (e) => openLive(s.sessionKey, e.currentTarget) }, h("span", { class: "title" }, d.title), lastLine(s, d), h("span", { class: "muted small" }, s.updatedAt ? fmtAgo(s.updatedAt) : "")));
        }),
      ),
    ),
  );
  const archives = (data.archives ?? []).slice().sort((a, b) => b.uploaded - a.uploaded);
  const idOf = (key) => key.split("/").pop().replace(/\.jsonl\.gz$/, "");
  const archiveList = archives.map((a) => {
    const m = a.metadata ?? {};
    const id = idOf(a.key);
    const d = m.sessionKey ? describe(m.sessionKey) : { title: "A conversation" };
    const part = /-part\d+$/.test(id);
    const title = `${d.title}${part ? " (older part, compacted)" : ""}`;
    return h("li", { "data-archive": id }, h("button", { type: "button", onclick: (e) => openArchive(id, title, e.currentTarget) }, h("span", { class: "title" }, title), h("span", { class: "muted small" }, `${m.messageCount ? `${m.messageCount} messages · ` : ""}archived ${fmtAgo(Number(m.archivedAt) || a.uploaded)}`)));
  });
  page(
    "Sessions",
    h("p", { class: "muted" }, "Every conversation the agent has, by channel and who it is with. The last message shown may be up to a minute old."),
    h(
      "div",
      { class: "cols" },
      h(
        "div",
        { class: "sessions-col" },
        h("h2", {}, "Live"),
        liveList.length ? liveList : h("p", { class: "muted" }, "No conversations yet."),
        h("h2", {}, "Archived"),
        archiveList.length ? h("ul", { class: "session-list" }, archiveList) : h("p", { class: "muted" }, "None: a conversation is archived when it is reset (/reset, daily) or compacted."),
      ),
      view,
    ),
  );
}
