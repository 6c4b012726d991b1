// Workspace (seed 001's operator view): every file the overlay resolves for
// the agent with where it comes from, edited in CodeMirror (loaded on
// demand). Badges say the truth: "override" only when a lower layer has
// the file, else it is the agent's own. Unsaved edits are marked and never
// dropped silently; each file of the agent has its history (versions, who
// and why, what changed, restore); a delete says what it means and can be
// undone from the page. Pinned guardrail updates are reviewed (a diff) and
// accepted, for one agent or every agent of the template. The template and
// defaults layers are edited the same way (they keep no history).
import { agentPath, del, get, post, request } from "../api.js";
import { busy, fmtAgo, h, leaving, loading, page, problem, say } from "../dom.js";
import { lineDiff } from "./diff.js";
import { historyPanel, restore, who } from "./history.js";

/** A file's badge: where it comes from, in words. */
export function badge(f, kind) {
  if (f.updateAvailable) return h("span", { class: "src src-update", "data-source": "update" }, "update available");
  if (kind === "shared") return h("span", { class: "src src-agent", "data-source": f.source }, f.pinned ? "pinned file" : "in this layer");
  if (f.source === "agent") {
    return f.inheritsOnDelete ? h("span", { class: "src src-agent", "data-source": "override" }, "override") : h("span", { class: "src src-own", "data-source": "own" }, "agent's own");
  }
  const text = { template: "from template", defaults: "from defaults", pinned: "pinned" }[f.source] ?? f.source;
  return h("span", { class: `src src-${f.source}`, "data-source": f.source }, text);
}

function layerBase(state, layer) {
  if (layer === "agent") return agentPath(state.agent, "/workspace");
  if (layer === "defaults") return "/api/defaults/workspace";
  return `/api/templates/${encodeURIComponent(layer.slice("template:".length))}/workspace`;
}

const filePath = (base, path) => `${base}/${path.split("/").map(encodeURIComponent).join("/")}`;
const byPath = (a, b) => a.path.includes("/") - b.path.includes("/") || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** A modal question with buttons; resolves to the chosen value (null: cancelled). */
function ask(title, body, choices) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { class: "ask", "aria-labelledby": "ask-title" });
    const done = (v) => {
      dialog.close();
      dialog.remove();
      resolve(v);
    };
    dialog.append(
      h("h2", { id: "ask-title" }, title),
      ...body.map((p) => h("p", {}, p)),
      h("div", { class: "row" }, choices.map(([label, value, cls]) => h("button", { type: "button", class: cls ?? "secondary", "data-choice": value, onclick: () => done(value) }, label))),
    );
    dialog.addEventListener("cancel", () => resolve(null));
    document.body.append(dialog);
    dialog.showModal();
  });
}

export async function workspacePage(state, layerArg, openArg) {
  const layer = layerArg || sessionStorage.getItem("hearth-layer") || "agent";
  const base = layerBase(state, layer);
  let data;
  try {
    data = await get(base);
  } catch (err) {
    if (layer === "agent") throw err;
    sessionStorage.removeItem("hearth-layer");
    return workspacePage(state, "agent");
  }
  data.files.sort(byPath);
  data.skills?.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : b.local - a.local));
  const template = layer === "agent" ? data.template : state.template;
  if (layer === "agent") state.template = data.template;
  const kind = layer === "agent" ? "agent" : "shared";
  const redraw = (open) => workspacePage(state, layer, open);

  let current = null; // {file, editor, saved}
  const dirty = () => current?.editor && current.editor.get() !== current.saved;
  const mayLeave = (silent) => {
    if (!dirty()) return true;
    if (silent) return false;
    return confirm(`${current.file.path} has unsaved changes. Leave without saving them?`);
  };
  leaving.guard = mayLeave;

  const choices = [["agent", `Agent ${state.agent}`], ...(template ? [[`template:${template}`, `Template ${template}`]] : []), ["defaults", "Defaults"]];
  const picker = h("select", { id: "layer" }, choices.map(([v, t]) => h("option", { value: v, selected: v === layer }, t)));
  picker.addEventListener("change", () => {
    if (!mayLeave()) {
      picker.value = layer;
      return;
    }
    sessionStorage.setItem("hearth-layer", picker.value);
    leaving.guard = null;
    workspacePage(state, picker.value);
  });
  const pane = h("section", { class: "card file-pane", "aria-label": "File" }, h("p", { class: "muted" }, "Pick a file to open it."));
  const notice = h("div", { class: "notice", role: "status" });
  const tree = h(
    "ul",
    { class: "tree", "aria-label": "Files" },
    data.files.map((f) => h("li", { "data-path": f.path }, h("button", { type: "button", onclick: () => openFile(f) }, h("span", { class: "name" }, f.path), badge(f, kind)))),
  );

  function markDirty() {
    const on = dirty();
    pane.classList.toggle("dirty", on);
    const flag = pane.querySelector(".unsaved");
    if (flag) flag.hidden = !on;
    const item = tree.querySelector(`li[data-path="${CSS.escape(current.file.path)}"]`);
    item?.classList.toggle("dirty", on);
    item?.querySelector("button")?.setAttribute("aria-description", on ? "unsaved changes" : "");
    for (const id of ["save", "discard"]) {
      const b = pane.querySelector(`#${id}`);
      if (b) b.disabled = !on && !current.file.new;
    }
  }

  // The file shown is the last one asked for (a slow read does not win).
  let opening = 0;
  async function openFile(f) {
    if (current && current.file.path !== f.path && !mayLeave()) return;
    const ticket = ++opening;
    for (const b of tree.querySelectorAll("button")) b.removeAttribute("aria-current");
    tree.querySelector(`li[data-path="${CSS.escape(f.path)}"] button`)?.setAttribute("aria-current", "true");
    current?.editor?.destroy();
    current = { file: f, editor: null, saved: "" };
    pane.replaceChildren(h("h2", { id: "file-title" }, f.path), loading());
    await busy(pane, async () => {
      let file;
      try {
        file = f.new ? { content: "", ...f } : await get(filePath(base, f.path));
      } catch (err) {
        if (ticket === opening) pane.replaceChildren(h("h2", { id: "file-title" }, f.path), problem(`${f.path} could not be read: ${err.message}`));
        return;
      }
      if (ticket !== opening) return;
      const host = h("div", { class: "editor" });
      const actions = h("div", { class: "row actions" });
      const inherited = kind === "agent" && f.source !== "agent";
      actions.append(h("button", { type: "button", id: "save", onclick: () => save(f), disabled: !f.new }, inherited ? "Save as override" : "Save"));
      actions.append(h("button", { type: "button", class: "secondary", id: "discard", disabled: true, onclick: () => discard() }, "Discard changes"));
      if ((kind === "agent" && f.source === "agent") || (kind === "shared" && !f.new)) {
        const label = kind === "agent" && f.inheritsOnDelete ? "Remove override" : "Delete file";
        actions.append(h("button", { type: "button", class: "danger", id: "delete", onclick: () => remove(f) }, label));
      }
      if (f.updateAvailable) actions.append(h("button", { type: "button", class: "secondary", id: "review", onclick: () => review(f.path) }, "Review update"));
      const where = kind === "agent" ? explain(f) : `${file.key ?? ""}`;
      pane.replaceChildren(
        h("h2", { id: "file-title" }, f.path, " ", h("span", { class: "unsaved badge", hidden: true }, "unsaved")),
        h("p", { class: "muted small" }, where),
        actions,
        host,
        kind === "agent" && !f.new ? historyPanel(state.agent, f.path, undefined, () => redraw(f.path)) : null,
      );
      const { createEditor } = await import("../editor.js");
      if (ticket !== opening) return;
      current.saved = file.content;
      current.editor = createEditor(host, file.content, { label: `Content of ${f.path}`, onChange: markDirty });
      pane.dataset.open = f.path;
      markDirty();
    });
  }

  /** Where the file comes from, and what saving and deleting do, in words. */
  function explain(f) {
    const lower = data.template ? `the template ${data.template} or the defaults` : "the defaults";
    if (f.source === "agent" && f.inheritsOnDelete) return `The agent's own version of a file it would otherwise inherit (from ${lower}). Saving keeps a version in the history; removing the override brings back the inherited one.`;
    if (f.source === "agent") return "The agent's own file (no template or default has one). Every save keeps a version in the history.";
    if (f.source === "pinned") return `A guardrail pinned from the template ${data.template}: the agent serves this version until you accept an update.`;
    return `Inherited from ${f.source === "template" ? `the template ${data.template}` : "the defaults"}. Saving makes the agent's own copy (an override); the inherited file stays as it is.`;
  }

  async function save(f) {
    let url = filePath(base, f.path);
    if (kind === "agent" && f.pinned) {
      if (!confirm(`${f.path} is a pinned guardrail file. Override it for this agent anyway?`)) return;
      url += "?accept=override";
    }
    const text = current.editor.get();
    try {
      await busy(pane, () => request("PUT", url, { body: text, headers: { "content-type": "text/plain; charset=utf-8" } }));
      current.saved = text;
      say(`Saved ${f.path}`);
      await redraw(f.path);
    } catch (err) {
      say(`Not saved: ${err.message}`, { error: true });
      pane.querySelector(".actions")?.after(problem(`${f.path} was not saved: ${err.message}. Your text is still here.`));
    }
  }

  function discard() {
    if (!current?.editor) return;
    current.editor.set(current.saved);
    markDirty();
  }

  async function remove(f) {
    const override = kind === "agent" && f.inheritsOnDelete;
    const [title, body, label] =
      kind === "shared"
        ? [`Delete ${f.path} from this layer?`, [`Every agent that inherits ${f.path} from this layer loses it (unless it has its own).`, "This layer keeps no history: the content cannot be brought back from the console."], "Delete for every agent"]
        : override
          ? [`Remove the override of ${f.path}?`, [`${state.agent} goes back to the version it inherits.`, "Your version stays in the file's history: you can restore it from this page."], "Remove override"]
          : [`Delete ${f.path}?`, [`${state.agent} will no longer have ${f.path}: no template or default provides one.`, "It stays in the file's history, and you can bring it back from this page (Undo, or Recently deleted)."], `Delete ${f.path}`];
    if ((await ask(title, body, [[label, "yes", "danger"], ["Cancel", null]])) !== "yes") return;
    let change = null;
    try {
      const r = await busy(pane, () => del(filePath(base, f.path)));
      change = r.change ?? null;
    } catch (err) {
      say(`Not deleted: ${err.message}`, { error: true });
      return;
    }
    if (current?.file.path === f.path) current.saved = current.editor?.get() ?? "";
    leaving.guard = null;
    await redraw(override ? f.path : null);
    if (kind === "agent" && change?.previous) {
      // Said on the new page, with a way back.
      const fresh = document.querySelector(".notice");
      fresh?.replaceChildren(
        h("span", {}, override ? `Removed the override of ${f.path}: it inherits again.` : `Deleted ${f.path}.`),
        h("button", { type: "button", class: "secondary small", id: "undo-delete", onclick: () => restore(state.agent, f.path, `sha256:${change.previous}`, "undo of a delete in the console", () => redraw(f.path)) }, "Undo"),
      );
    } else {
      say(`Deleted ${f.path}`);
    }
  }

  async function review(file) {
    const pin = data.pins?.files?.find((p) => p.file === file) ?? {};
    const dialog = h("dialog", { "aria-labelledby": "review-title", class: "review" });
    const accept = async (bulk) => {
      const url = bulk ? `/api/templates/${encodeURIComponent(data.template)}/pins/${encodeURIComponent(file)}/accept` : agentPath(state.agent, `/pins/${encodeURIComponent(file)}/accept`);
      try {
        const r = await post(url);
        dialog.close();
        say(bulk ? `Accepted for ${r.result?.succeeded ?? 0} agent(s) of ${data.template}` : `Accepted ${file}`);
        await redraw(file);
      } catch (err) {
        say(err.message, { error: true });
      }
    };
    dialog.append(
      h("h2", { id: "review-title" }, `Review ${file}: pinned vs latest template`),
      h("div", { class: "diff" }, h("div", {}, h("h3", {}, "Pinned (served now)"), h("pre", { class: "pinned", tabindex: "0" }, pin.pinnedContent ?? "")), h("div", {}, h("h3", {}, "Latest template"), h("pre", { class: "current", tabindex: "0" }, pin.currentContent ?? ""))),
      h("h3", {}, "Changes"),
      lineDiff(pin.pinnedContent ?? "", pin.currentContent ?? ""),
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", id: "accept", onclick: () => accept(false) }, `Accept for ${state.agent}`),
        h("button", { type: "button", class: "secondary", id: "accept-bulk", onclick: () => accept(true) }, `Accept for every agent of ${data.template}`),
        h("button", { type: "button", class: "secondary", onclick: () => dialog.close() }, "Cancel"),
      ),
    );
    dialog.addEventListener("close", () => dialog.remove());
    document.body.append(dialog);
    dialog.showModal();
  }

  // A template's layer: which agents have a pinned update waiting, accepted in bulk.
  let pending = null;
  if (layer.startsWith("template:")) {
    const name = layer.slice("template:".length);
    const waiting = (await get("/api/pins/pending").catch(() => ({ agents: [] }))).agents.filter((a) => a.template === name);
    const files = [...new Set(waiting.flatMap((a) => a.files))];
    const acceptAll = async (file) => {
      try {
        const r = await post(`/api/templates/${encodeURIComponent(name)}/pins/${encodeURIComponent(file)}/accept`);
        say(`Accepted ${file} for ${r.result?.succeeded ?? 0} agent(s)${r.result?.failed ? `, ${r.result.failed} failed` : ""}`);
        await workspacePage(state, layer);
      } catch (err) {
        say(err.message, { error: true });
      }
    };
    pending = h(
      "section",
      { "aria-labelledby": "pending-title" },
      h("h2", { id: "pending-title" }, "Pinned updates waiting"),
      files.length
        ? h("ul", {}, files.map((f) => h("li", { "data-pending": f }, `${f}: ${waiting.filter((a) => a.files.includes(f)).map((a) => a.agent).join(", ")} `, h("button", { type: "button", class: "secondary", onclick: () => acceptAll(f) }, `Accept ${f} for all`))))
        : h("p", { class: "muted" }, "Every agent of this template serves its latest guardrails."),
    );
  }

  // The agent's files deleted lately (from its history), each one restorable.
  const deleted = h("section", { class: "deleted", "aria-labelledby": "deleted-title", hidden: true });
  if (kind === "agent") {
    get(agentPath(state.agent, "/history?limit=50"))
      .then(({ changes }) => {
        const present = new Set(data.files.map((f) => f.path));
        const latest = new Map();
        for (const c of changes ?? []) if (!latest.has(c.path)) latest.set(c.path, c);
        const gone = [...latest.values()].filter((c) => !c.sha256 && c.previous && !present.has(c.path));
        if (!gone.length) return;
        deleted.hidden = false;
        deleted.replaceChildren(
          h("h2", { id: "deleted-title" }, "Recently deleted"),
          h("ul", { class: "plain-list" }, gone.map((c) => h("li", { "data-deleted": c.path }, h("span", {}, `${c.path}, deleted by ${who(c.actor)} ${fmtAgo(c.at)} `), h("button", { type: "button", class: "secondary small", onclick: () => restore(state.agent, c.path, `sha256:${c.previous}`, "restored from Recently deleted in the console", () => redraw(c.path)) }, `Restore ${c.path}`)))),
        );
      })
      .catch(() => {});
  }

  const newPath = h("input", { id: "new-path", placeholder: "notes/idea.md", size: 16 });
  const skills = data.skills
    ? h(
        "section",
        { "aria-labelledby": "skills-title" },
        h("h2", { id: "skills-title" }, "Skills"),
        h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Skills" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Skill"), h("th", {}, "Where"), h("th", {}, "What"), h("th", {}, "Status"))), h("tbody", {}, data.skills.map((s) => h("tr", { "data-skill": s.name }, h("td", {}, s.name), h("td", {}, s.local ? "agent's own" : "global"), h("td", {}, s.description), h("td", { class: s.leftOut ? "error" : "" }, s.leftOut ? `left out: ${s.leftOut}` : s.shadowed ? "shadowed by the agent's own" : "available")))))),
      )
    : null;
  page(
    "Workspace",
    notice,
    h("div", { class: "row" }, h("label", { for: "layer" }, "Layer"), picker),
    h("p", { class: "muted small legend" }, kind === "agent" ? "● agent's own or override (a lower layer has it too) · ▢ from the template · ≡ from the defaults · ■ pinned · ▲ pinned update available" : "Files of this shared layer: every agent that has no copy of its own reads them."),
    kind === "shared" ? h("p", { id: "no-history", class: "muted" }, "This layer keeps no history: saving or deleting replaces the file for every agent that inherits it, and the old content is not kept. Keep your own copy (the folder you seed from).") : null,
    h(
      "div",
      { class: "cols" },
      h(
        "div",
        { class: "tree-col" },
        tree,
        h("form", { class: "row new-file", onsubmit: (e) => (e.preventDefault(), newPath.value.trim() && openFile({ path: newPath.value.trim(), source: "agent", new: true })) }, h("label", { for: "new-path" }, "New file"), newPath, h("button", { type: "submit", class: "secondary" }, "Create")),
        deleted,
      ),
      pane,
    ),
    pending,
    skills,
  );
  if (openArg) {
    const f = data.files.find((x) => x.path === openArg);
    if (f) await openFile(f);
  }
}

