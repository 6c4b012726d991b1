// Tasks: the agent's background sub-agents (spawn_task), running and
// waiting first, then the recent ones with what they found; each says which
// chat asked, what it cost, and whether its result reached that chat.
// A task that waits or runs can be cancelled.
import { agentPath, del, get } from "../api.js";
import { busy, fmtAgo, fmtUsd, h, page, say } from "../dom.js";
import { describeKey } from "./sessions.js";

const STATES = { queued: "Waiting", running: "Running", done: "Done", failed: "Ended without a result", cancelled: "Cancelled" };

function when(t) {
  if (t.state === "queued") return `asked ${fmtAgo(t.createdAt)}`;
  if (t.state === "running") return `started ${fmtAgo(t.startedAt ?? t.createdAt)}`;
  return `ended ${fmtAgo(t.endedAt ?? t.createdAt)}`;
}

function taskCard(state, t) {
  const open = t.state === "queued" || t.state === "running";
  const cancel = async () => {
    try {
      await del(agentPath(state.agent, `/tasks/${encodeURIComponent(t.id)}`));
      say(`Task ${t.id} cancelled.`);
    } catch (err) {
      say(err.message, { error: true });
    }
    await busy(document.getElementById("main"), () => tasksPage(state));
  };
  return h(
    "li",
    { class: "card", "data-task": t.id, "data-state": t.state },
    h("h2", {}, `${t.id}: ${t.title}`),
    h(
      "dl",
      { class: "facts" },
      h("dt", {}, "State"),
      h("dd", { "data-fact": "state" }, `${STATES[t.state] ?? t.state}, ${when(t)}`),
      h("dt", {}, "Asked in"),
      h("dd", {}, describeKey(t.origin).title),
      t.model ? [h("dt", {}, "Model"), h("dd", {}, t.model)] : null,
      t.costUsd !== null && t.costUsd !== undefined ? [h("dt", {}, "Cost"), h("dd", {}, fmtUsd(t.costUsd))] : null,
      t.state === "done" || t.state === "failed" ? [h("dt", {}, "Result posted"), h("dd", {}, t.delivered ? "yes, in the chat that asked" : "not yet (tried again)")] : null,
    ),
    t.result ? h("details", {}, h("summary", {}, "What it found"), h("blockquote", { class: "said" }, t.result)) : null,
    open ? h("button", { type: "button", class: "danger", "data-cancel": t.id, onclick: cancel }, `Cancel ${t.id}`) : null,
  );
}

export async function tasksPage(state) {
  const r = await get(agentPath(state.agent, "/tasks"));
  const tasks = r.tasks ?? [];
  page(
    "Tasks",
    h("p", { class: "muted", "data-fact": "running" }, `${r.running ?? 0} of ${r.max ?? 0} sub-agents running (SUBAGENTS_MAX); the rest wait their turn. In a chat, /tasks lists that chat's tasks.`),
    tasks.length ? h("ul", { class: "tasks" }, tasks.map((t) => taskCard(state, t))) : h("p", { class: "muted" }, "No background tasks yet. The agent starts one with its spawn_task tool when asked to work on something in the background."),
  );
}
