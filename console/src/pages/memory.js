// Memory: per store (the owner's `main`, each group's, …) browse (GET
// /memory/notes, newest first, a page at a time), search, read and edit
// notes through POST /memory/call. After a save or a delete the list and
// the count are read again; a refused save (422) is said beside the form,
// with the text kept.
import { agentPath, get, post } from "../api.js";
import { busy, fmtTime, h, loading, page, problem, say } from "../dom.js";

const STORE_WORDS = (s) => (s === "main" ? "main (your private notes)" : s);

export async function memoryPage(state) {
  const agent = state.agent;
  const call = (body) => post(agentPath(agent, "/memory/call"), body);
  const { stores } = await get(agentPath(agent, "/memory/stores"));
  const store = h("select", { id: "store" }, stores.map((s) => h("option", { value: s }, STORE_WORDS(s))));
  const query = h("input", { id: "query", type: "search", placeholder: "words to find" });
  const results = h("ul", { class: "tree notes", "aria-label": "Notes" });
  const detail = h("section", { class: "card note-detail", "aria-label": "Note" }, h("p", { class: "muted" }, "Pick a note, search, or add one."));
  const stats = h("p", { class: "muted", id: "memory-stats", "aria-live": "polite" });

  async function showStats() {
    const s = await call({ call: "stats", store: store.value }).catch(() => null);
    const n = (k, one, many) => `${k} ${k === 1 ? one : many}`;
    stats.textContent = s?.stats ? `${n(s.stats.entries, "entry", "entries")}: ${n(s.stats.notes, "note", "notes")}, ${n(s.stats.archives, "archived summary", "archived summaries")}` : "";
  }
  const PAGE = 50;
  /** The store's entries newest first; "More" appends the next page. */
  async function browse(offset = 0) {
    const r = await get(agentPath(agent, `/memory/notes?store=${encodeURIComponent(store.value)}&offset=${offset}&limit=${PAGE}`));
    const items = r.notes.map((n) => h("li", { "data-note": n.name }, h("button", { type: "button", onclick: () => open(n.name) }, h("span", { class: "name" }, n.name), h("span", { class: "muted" }, ` ${n.summary}${n.length > n.summary.length ? ` (${n.length} chars)` : ""}`))));
    if (offset === 0) results.replaceChildren(...items);
    else results.querySelector("li[data-more]")?.replaceWith(...items);
    const next = offset + r.notes.length;
    if (next < r.total) results.append(h("li", { "data-more": "" }, h("button", { type: "button", class: "secondary", onclick: () => browse(next) }, `More (${r.total - next} older)`)));
    if (!r.total) results.replaceChildren(h("li", { class: "muted" }, "No notes in this store yet."));
  }
  async function search(e) {
    e?.preventDefault();
    await busy(results, async () => {
      try {
        if (!query.value.trim()) return await browse();
        const r = await call({ call: "search", store: store.value, query: query.value, k: 50 });
        const hits = r.hits ?? [];
        results.replaceChildren(
          ...hits.map((hit) => {
            const entry = hit.entry ?? hit;
            return h("li", { "data-note": entry.name }, h("button", { type: "button", onclick: () => open(entry.name) }, h("span", { class: "name" }, entry.name), h("span", { class: "muted" }, hit.score ? ` score ${hit.score.toFixed(2)}` : "")));
          }),
        );
        if (!hits.length) results.replaceChildren(h("li", { class: "muted" }, "No notes found."));
      } catch (err) {
        results.replaceChildren(h("li", {}, problem(`The notes could not be read: ${err.message}`)));
      }
    });
  }
  /** Reads the list and the count again (after a save or a delete). */
  const refresh = () => Promise.all([showStats(), search()]);

  // What the detail pane shows is the user's latest choice: a note read late
  // (a slow network) does not replace a form opened since.
  let showing = 0;
  function editor(name, content, meta) {
    showing++;
    const isNew = !name;
    const nameInput = h("input", { id: "note-name", value: name ?? "", readonly: !isNew, required: true, placeholder: isNew ? "a short name, e.g. tea" : undefined });
    const text = h("textarea", { id: "note-content", rows: 12, value: content ?? "" });
    const error = h("div", { class: "form-error", "aria-live": "assertive" });
    const save = async (e) => {
      e.preventDefault();
      error.replaceChildren();
      const op = isNew ? { op: "add", name: nameInput.value.trim(), content: text.value, kind: "note", created_at: Date.now() } : { op: "write", name, content: text.value };
      if (isNew && !op.name) {
        error.replaceChildren(problem("Give the note a name."));
        nameInput.focus();
        return;
      }
      try {
        await busy(detail, () => call({ call: "op", store: store.value, op }));
      } catch (err) {
        error.replaceChildren(problem(`Not saved: ${err.message}`));
        return;
      }
      say(`Saved ${op.name}`);
      await refresh();
      await open(op.name);
    };
    const remove = async () => {
      if (!confirm(`Delete the note ${name}? It cannot be brought back.`)) return;
      try {
        await busy(detail, () => call({ call: "op", store: store.value, op: { op: "remove", name } }));
      } catch (err) {
        error.replaceChildren(problem(`Not deleted: ${err.message}`));
        return;
      }
      say(`Deleted ${name}`);
      detail.replaceChildren(h("p", { class: "muted" }, `Deleted ${name}.`));
      await refresh();
    };
    const form = h(
      "form",
      { class: "note-form", onsubmit: save },
      h("h2", {}, isNew ? "New note" : name),
      meta ? h("p", { class: "muted small" }, meta) : null,
      h("label", { for: "note-name" }, "Name"),
      nameInput,
      h("label", { for: "note-content" }, "Content"),
      text,
      error,
      h("div", { class: "row" }, h("button", { type: "submit", id: "note-save" }, "Save"), isNew ? null : h("button", { type: "button", class: "danger", id: "note-delete", onclick: remove }, "Delete")),
    );
    detail.replaceChildren(form);
    (isNew ? nameInput : text).focus();
  }
  async function open(name) {
    const ticket = ++showing;
    detail.replaceChildren(loading());
    await busy(detail, async () => {
      try {
        const r = await call({ call: "get", store: store.value, name });
        if (ticket !== showing) return;
        const entry = r.entry;
        if (!entry) {
          detail.replaceChildren(problem(`${name} is gone.`));
          return;
        }
        editor(entry.name, entry.content, `${entry.kind} · ${fmtTime(entry.created_at)}${entry.aliases?.length ? ` · also ${entry.aliases.join(", ")}` : ""}`);
      } catch (err) {
        if (ticket === showing) detail.replaceChildren(problem(`${name} could not be read: ${err.message}`));
      }
    });
  }
  store.addEventListener("change", () => {
    detail.replaceChildren(h("p", { class: "muted" }, "Pick a note, search, or add one."));
    refresh();
  });
  page(
    "Memory",
    h("form", { class: "row", onsubmit: search, role: "search" }, h("label", { for: "store" }, "Store"), store, h("label", { for: "query" }, "Search"), query, h("button", { type: "submit" }, "Search"), h("button", { type: "button", class: "secondary", id: "new-note", onclick: () => editor(null, "") }, "New note")),
    stats,
    h("div", { class: "cols" }, results, detail),
  );
  await refresh();
}
