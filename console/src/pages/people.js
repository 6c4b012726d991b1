// People: who may talk to the agent (the owner's accounts, the people and
// groups let in, from OWNER_IDS/ALLOW_FROM or the chat), who asks to
// (pending pairing codes, with Approve / Deny), the claim code while the
// agent has no owner, tool calls waiting for the owner (Approve / Deny),
// and the audit log. GET|POST /api/agents/{id}/people, /approvals.
import { agentPath, get, post } from "../api.js";
import { busy, fmtAgo, fmtLocal, h, page, say } from "../dom.js";

const VIA = { settings: "settings", pairing: "a pairing code", claim: "the claim", link: "a link" };

function table(label, head, rows, empty) {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h(
    "div",
    { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label },
    h("table", {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))), h("tbody", {}, rows)),
  );
}

async function act(agent, path, body, done, redraw) {
  try {
    const r = await post(agentPath(agent, path), body);
    say(r.text ?? done);
  } catch (err) {
    say(err.message, { error: true });
  }
  await redraw();
}

export async function peoplePage(state) {
  const agent = state.agent;
  const [reply, approvals] = await Promise.all([get(agentPath(agent, "/people")), get(agentPath(agent, "/approvals")).catch(() => [])]);
  const people = reply.list ?? {};
  const redraw = () => busy(document.getElementById("main"), () => peoplePage(state));
  const person = (p, revocable) =>
    h(
      "tr",
      { "data-who": p.who },
      h("th", { scope: "row" }, p.name ? `${p.name} (${p.who})` : p.who),
      h("td", {}, p.group ? "group" : "person"),
      h("td", {}, VIA[p.via] ?? p.via, p.addedBy ? ` (by ${p.addedBy})` : ""),
      h("td", {}, p.addedAt ? fmtAgo(p.addedAt) : "—"),
      h("td", {}, revocable && p.via !== "settings" ? h("button", { type: "button", class: "secondary small", onclick: () => act(agent, "/people", { revoke: p.who }, "Revoked", redraw) }, "Revoke") : ""),
    );
  const waiting = approvals.filter((a) => a.decision === "waiting");
  const claim = people.claim
    ? h(
        "section",
        { class: "card", "data-fact": "claim" },
        h("h2", {}, "Claim this agent"),
        h("p", {}, "Nobody owns this agent yet. Send this to your bot from the account that should own it:"),
        h("p", {}, h("code", { "data-claim": people.claim }, `/claim ${people.claim}`)),
        h("p", { class: "muted" }, "On Telegram the link https://t.me/<your bot>?start=CODE does it in one tap. Setting OWNER_IDS instead works too (and wins)."),
      )
    : null;
  page(
    "People",
    claim,
    h("h2", {}, "Waiting for you"),
    table(
      "Tool calls waiting",
      ["Tool", "From", "Arguments", "Until", ""],
      waiting.map((a) =>
        h(
          "tr",
          { "data-approval": a.id },
          h("th", { scope: "row" }, a.tool),
          h("td", {}, `${a.origin.channel} ${a.origin.group ? "group" : "chat"} ${a.origin.chat}${a.origin.sender ? `, ${a.origin.sender}` : ""}`),
          h("td", {}, h("code", {}, a.args)),
          h("td", {}, fmtLocal(a.expiresAt)),
          h(
            "td",
            {},
            h("button", { type: "button", class: "small", onclick: () => act(agent, `/approvals/${a.id}`, { approve: true }, "Approved", redraw) }, "Approve"),
            " ",
            h("button", { type: "button", class: "secondary small", onclick: () => act(agent, `/approvals/${a.id}`, { approve: false }, "Denied", redraw) }, "Deny"),
          ),
        ),
      ),
      "No tool call waits for an answer.",
    ),
    table(
      "People asking to talk",
      ["Who", "Code", "Until", ""],
      (people.pending ?? []).map((p) =>
        h(
          "tr",
          { "data-pending": p.who },
          h("th", { scope: "row" }, `${p.group ? "group " : ""}${p.name ? `${p.name} (${p.who})` : p.who}`),
          h("td", {}, h("code", {}, p.code)),
          h("td", {}, fmtLocal(p.expiresAt)),
          h(
            "td",
            {},
            h("button", { type: "button", class: "small", onclick: () => act(agent, "/people", { approve: p.code }, "Approved", redraw) }, "Approve"),
            " ",
            h("button", { type: "button", class: "secondary small", onclick: () => act(agent, "/people", { deny: p.code }, "Denied", redraw) }, "Deny"),
          ),
        ),
      ),
      "Nobody asks right now. A stranger who writes to the agent gets a code to give you.",
    ),
    h("h2", {}, "Owner"),
    table("Owner", ["Account", "Kind", "Via", "Since", ""], (people.owners ?? []).map((p) => person(p, true)), "Nobody yet."),
    h("h2", {}, "Allowed"),
    table("Allowed", ["Who", "Kind", "Via", "Since", ""], (people.guests ?? []).map((p) => person(p, true)), "Nobody yet."),
    h("h2", {}, "Log"),
    table(
      "People log",
      ["When", "What", "By", "Where"],
      (people.events ?? []).map((e) => h("tr", {}, h("td", {}, fmtAgo(e.at)), h("th", { scope: "row" }, `${e.action} ${e.subject}${e.note ? ` (${e.note})` : ""}`), h("td", {}, e.by), h("td", {}, e.place))),
      "No approvals, revocations, claims or links yet.",
    ),
    h(
      "h2",
      {},
      "Tool calls answered",
    ),
    table(
      "Tool calls answered",
      ["Tool", "Answer", "By", "When"],
      approvals.filter((a) => a.decision !== "waiting").map((a) => h("tr", {}, h("th", { scope: "row" }, a.tool), h("td", {}, a.decision), h("td", {}, a.decidedBy ?? "—"), h("td", {}, a.decidedAt ? fmtAgo(a.decidedAt) : "—"))),
      "None yet.",
    ),
  );
}
