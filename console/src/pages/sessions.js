// Sessions: live ones (the Agent object's registry) and archives (R2),
// a conversation read (archived and compacted parts too), reset.
import { agentPath, get, post } from "../api.js";
import { fmtTime, h, page, say } from "../dom.js";
import { conversation } from "./messages.js";

export async function sessionsPage(state) {
  const agent = state.agent;
  const data = await get(agentPath(agent, "/sessions"));
  const view = h("section", { "aria-label": "Conversation", class: "card" }, h("p", { class: "muted" }, "Pick a session or an archive."));

  async function openLive(key) {
    const s = await get(agentPath(agent, `/sessions/${encodeURIComponent(key)}`));
    view.replaceChildren(
      h("h2", {}, key),
      h("p", { class: "muted" }, `${s.messageCount} messages, ${s.compactions} compactions, ${s.open} queued`),
      h("button", { type: "button", class: "danger", onclick: () => reset(key) }, "Reset this session"),
      conversation(s.messages ?? []),
    );
  }
  async function openArchive(id) {
    const a = await get(agentPath(agent, `/archives/${encodeURIComponent(id)}`));
    view.replaceChildren(h("h2", {}, `Archive ${a.sessionId}`), h("p", { class: "muted" }, JSON.stringify(a.metadata)), conversation(a.messages ?? []));
  }
  async function reset(key) {
    if (!confirm(`Reset ${key}? It is archived first.`)) return;
    await post(agentPath(agent, `/sessions/${encodeURIComponent(key)}/reset`));
    say("Reset queued");
  }

  const live = data.live ?? [];
  const archives = (data.archives ?? []).slice().sort((a, b) => b.uploaded - a.uploaded);
  const idOf = (key) => key.split("/").pop().replace(/\.jsonl\.gz$/, "");
  page(
    "Sessions",
    h(
      "div",
      { class: "cols" },
      h(
        "div",
        {},
        h("h2", {}, "Live"),
        live.length ? h("ul", { class: "tree" }, live.map((s) => h("li", {}, h("button", { type: "button", onclick: () => openLive(s.sessionKey ?? s.key) }, s.sessionKey ?? s.key, h("span", { class: "muted" }, fmtTime(s.lastActive ?? s.updatedAt)))))) : h("p", { class: "muted" }, "None."),
        h("h2", {}, "Archives"),
        archives.length ? h("ul", { class: "tree" }, archives.map((a) => h("li", {}, h("button", { type: "button", onclick: () => openArchive(idOf(a.key)) }, idOf(a.key), h("span", { class: "muted" }, fmtTime(a.uploaded)))))) : h("p", { class: "muted" }, "None."),
      ),
      view,
    ),
  );
}
