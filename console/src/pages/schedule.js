// Schedule, said plainly: when the next heartbeat is (in the agent's local
// time), what the last one did and said; each cron.json job with its next
// and last run and what it last said; the reminders the agent set in its
// chats (when each fires next, where, Cancel); problems first; tokens last.
import { agentPath, del, get } from "../api.js";
import { fmtAgo, fmtInt, fmtLocal, h, page, say } from "../dom.js";

// The heartbeat's last outcome (`HeartbeatOutcome::label`) in words.
const OUTCOMES = {
  queued: "ran",
  disabled: "off",
  inactive: "not run: outside the active hours",
  not_due: "not due yet",
  busy: "not run: the heartbeat was still busy with the last one",
  skipped: "no model call needed",
  misconfigured: "not run: a setting is wrong",
  retrying: "waiting to run: the heartbeat's session could not be reached",
};
const SKIPPED = { absent: "there is no HEARTBEAT.md", empty: "HEARTBEAT.md is empty", all_done: "every item of HEARTBEAT.md is checked", no_open_item: "HEARTBEAT.md has no unchecked item" };

function outcomeWords(last) {
  if (!last || typeof last !== "object" || !last.outcome) return "has not run yet";
  const [kind, ...rest] = String(last.outcome).split(": ");
  const detail = rest.join(": ");
  const words = OUTCOMES[kind] ?? kind;
  if (!detail) return words;
  return `${words} (${SKIPPED[detail] ?? detail})`;
}

const said = (entry) => (entry?.last ? h("blockquote", { class: "said" }, entry.last.text, h("footer", { class: "muted small" }, fmtAgo(entry.last.at))) : h("p", { class: "muted" }, "Nothing said yet."));

function tokensTable(t) {
  const row = (name, x) => h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, fmtInt(x?.runs)), h("td", {}, fmtInt(x?.totalTokens)));
  return h(
    "div",
    { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Tokens of scheduled work" },
    h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Work"), h("th", { scope: "col" }, "Runs"), h("th", { scope: "col" }, "Tokens"))), h("tbody", {}, row("Heartbeats", t?.heartbeat), Object.entries(t?.byJob ?? {}).map(([n, x]) => row(`Job ${n}`, x)), row("Dreaming (nightly memory sweep)", t?.dreaming))),
  );
}

const RUN = { say: "sends the text", turn: "runs it as a task" };

function repeatWords(r) {
  if (r.cron) return `at the times of ${r.cron} (${r.timezone})`;
  if (r.everyMs) return `every ${fmtAgo(Date.now() + r.everyMs).replace(/^in /, "")}`;
  return "once";
}

// The reminders the agent set in its chats: each with its chat, its next
// time in the agent's zone and Cancel (the same as `/reminders cancel`).
function remindersCard(agent, list, tz) {
  const items = list?.reminders ?? [];
  const body = h("ul", { class: "jobs", "aria-label": "Pending reminders" });
  const empty = h("p", { class: "muted", "data-fact": "no-reminders", hidden: items.length > 0 }, "No reminders pending. The agent sets them with its remind tool when someone asks (\"remind me in an hour…\"), and for follow-ups it offers.");
  for (const r of items) {
    const cancel = h("button", { type: "button", "aria-label": `Cancel reminder ${r.id}` }, "Cancel");
    const li = h(
      "li",
      { "data-reminder": r.id },
      h("h3", {}, r.text.length > 120 ? `${r.text.slice(0, 120)}…` : r.text),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Next"),
        h("dd", { "data-fact": "reminder-next" }, r.nextAt ? `${fmtLocal(r.nextAt, r.timezone || tz)} (${fmtAgo(r.nextAt)})` : "—"),
        h("dt", {}, "Chat"),
        h("dd", {}, r.chat),
        h("dt", {}, "Repeats"),
        h("dd", {}, repeatWords(r)),
        h("dt", {}, "When due"),
        h("dd", {}, RUN[r.mode] ?? r.mode),
      ),
      cancel,
    );
    cancel.addEventListener("click", async () => {
      if (!confirm(`Cancel the reminder “${r.text.slice(0, 60)}” (${r.id})?`)) return;
      cancel.disabled = true;
      try {
        await del(agentPath(agent, `/reminders/${encodeURIComponent(r.id)}`));
        li.remove();
        if (!body.children.length) empty.hidden = false;
        say(`Reminder ${r.id} cancelled.`);
      } catch (e) {
        cancel.disabled = false;
        say(`Could not cancel ${r.id}: ${e.message}`, { error: true });
      }
    });
    body.append(li);
  }
  const limit = list?.limit ? ` (at most ${fmtInt(list.limit)} pending)` : "";
  return h(
    "section",
    { class: "card", "aria-labelledby": "reminders-title" },
    h("h2", { id: "reminders-title" }, "Reminders"),
    list ? h("p", { class: "muted" }, `${fmtInt(list.pending)} pending${limit}. Each fires in the chat where it was set; /reminders there lists them.`) : h("p", { class: "error" }, "The reminders could not be read."),
    body,
    empty,
  );
}

export async function schedulePage(state) {
  const agent = state.agent;
  const [s, sessions, reminders] = await Promise.all([
    get(agentPath(agent, "/schedule")),
    get(agentPath(agent, "/sessions")).catch(() => ({ live: [] })),
    get(agentPath(agent, "/reminders")).catch(() => null),
  ]);
  const bySession = new Map((sessions.live ?? []).map((e) => [e.sessionKey, e]));
  if (!s.heartbeat) {
    // No cron trigger reached this agent yet: nothing is planned to show
    // but the reminders (they do not wait for the trigger).
    return page(
      "Schedule",
      h("section", { class: "card", "data-fact": "not-started" }, h("h2", {}, "Not started yet"), h("p", {}, "The scheduler has not run for this agent yet. The cron trigger runs every 5 minutes once deployed; then the next heartbeat and the jobs of cron.json show here, in the agent's local time."), h("p", { class: "muted" }, "Locally (npm run dev): curl \"http://127.0.0.1:8787/__scheduled?cron=*/5+*+*+*+*\" runs it now.")),
      remindersCard(agent, reminders, "UTC"),
    );
  }
  const hb = s.heartbeat ?? {};
  const set = hb.settings ?? {};
  const tz = set.timezone || "UTC";
  const problems = [...(s.errors ?? []), ...(s.warnings ?? []), ...(set.error ? [set.error] : [])];
  const heartbeat = h(
    "section",
    { class: "card", "aria-labelledby": "hb-title" },
    h("h2", { id: "hb-title" }, "Heartbeat"),
    set.enabled
      ? h(
          "dl",
          { class: "facts" },
          h("dt", {}, "Next check-in"),
          h("dd", { "data-fact": "next-heartbeat" }, hb.nextSlot ? `${fmtLocal(hb.nextSlot, tz)} (${fmtAgo(hb.nextSlot)})` : "not planned"),
          h("dt", {}, "How often"),
          h("dd", {}, `every ${set.intervalMinutes ?? 30} minutes${set.activeHours ? `, between ${set.activeHours}` : ", all day"} (${tz})`),
          h("dt", {}, "What it does"),
          h("dd", {}, set.runProse ? "reads HEARTBEAT.md and acts on it" : "reads HEARTBEAT.md; runs only when it has an unchecked item (- [ ] …)"),
          h("dt", {}, "Last check-in"),
          h("dd", { "data-fact": "last-heartbeat" }, hb.lastRunTick ? `${fmtLocal(hb.lastRunTick, tz)} (${fmtAgo(hb.lastRunTick)}): ${outcomeWords(hb.last)}` : "none yet"),
        )
      : h("p", {}, "The heartbeat is off (HEARTBEAT_ENABLED=false)."),
    h("h3", {}, "What it last said"),
    said(bySession.get(`agent:${agent}:heartbeat`)),
  );
  const jobs = h(
    "section",
    { class: "card", "aria-labelledby": "jobs-title" },
    h("h2", { id: "jobs-title" }, "Jobs (cron.json)"),
    (s.jobs ?? []).length
      ? h(
          "ul",
          { class: "jobs" },
          s.jobs.map((j) =>
            h(
              "li",
              { "data-job": j.name },
              h("h3", {}, j.name),
              h(
                "dl",
                { class: "facts" },
                h("dt", {}, "Next run"),
                h("dd", {}, j.nextRun ? `${fmtLocal(j.nextRun, j.timezone || tz)} (${fmtAgo(j.nextRun)})` : "not planned"),
                h("dt", {}, "When"),
                h("dd", {}, h("code", {}, j.cron), ` in ${j.timezone || tz}`),
                h("dt", {}, "Last run"),
                h("dd", {}, j.lastSlot ? `${fmtLocal(j.lastSlot, j.timezone || tz)} (${fmtAgo(j.lastSlot)})` : "not yet"),
                h("dt", {}, "Asks"),
                h("dd", {}, j.message),
              ),
              h("h4", {}, "What it last said"),
              said(bySession.get(`agent:${agent}:job:${j.name}`)),
            ),
          ),
        )
      : h("p", { class: "muted" }, "No jobs. Add them to the agent's cron.json (see README, Heartbeats and jobs)."),
    (s.failedRuns ?? []).length ? h("p", { class: "error" }, `Failed runs: ${s.failedRuns.join(", ")}`) : null,
    (s.pendingRuns ?? []).length ? h("p", { class: "muted" }, `Waiting to run: ${s.pendingRuns.join(", ")}`) : null,
  );
  page(
    "Schedule",
    h("p", { class: "muted" }, `Times are the agent's local time (${tz}).${s.lastTick ? ` The scheduler last ran ${fmtAgo(s.lastTick)}.` : " The scheduler has not run yet (the cron trigger runs every 5 minutes)."}`),
    problems.length ? h("section", { class: "card problems", "aria-labelledby": "problems-title" }, h("h2", { id: "problems-title" }, "Needs your attention"), h("ul", { class: "error" }, problems.map((w) => h("li", {}, typeof w === "string" ? w : JSON.stringify(w))))) : null,
    h("div", { class: "grid2" }, heartbeat, jobs),
    remindersCard(agent, reminders, tz),
    h("h2", {}, "Tokens of scheduled work"),
    tokensTable(s.tokens),
  );
}
