// The code editor, loaded on demand (its own chunk): CodeMirror 6 with
// Markdown. Only the workspace page imports it, when a file is opened.
import { markdown } from "@codemirror/lang-markdown";
import { EditorView, basicSetup } from "codemirror";

/** An editor in `parent` holding `text`; returns {get(), destroy()}. */
export function createEditor(parent, text, { label = "File content" } = {}) {
  const view = new EditorView({
    doc: text,
    parent,
    extensions: [basicSetup, markdown(), EditorView.lineWrapping, EditorView.contentAttributes.of({ "aria-label": label })],
  });
  return { get: () => view.state.doc.toString(), destroy: () => view.destroy(), focus: () => view.focus() };
}
