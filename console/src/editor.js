// The code editor, loaded on demand (its own chunk): CodeMirror 6 with
// Markdown. Only the workspace page imports it, when a file is opened.
//
// It lives in a shadow root: there CodeMirror's styles go into a
// constructed style sheet (adoptedStyleSheets) instead of a <style>
// element, which the console's CSP (style-src 'self') would block.
import { markdown } from "@codemirror/lang-markdown";
import { EditorView, basicSetup } from "codemirror";

const theme = EditorView.theme({
  "&": { height: "420px", fontSize: "14px", backgroundColor: "#fff" },
  ".cm-scroller": { overflow: "auto", fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace" },
});

/** An editor in `parent` holding `text`; returns {get(), destroy(), focus()}. */
export function createEditor(parent, text, { label = "File content" } = {}) {
  const root = parent.attachShadow({ mode: "open" });
  const view = new EditorView({
    doc: text,
    root,
    extensions: [basicSetup, markdown(), theme, EditorView.lineWrapping, EditorView.contentAttributes.of({ "aria-label": label })],
  });
  root.append(view.dom);
  return { get: () => view.state.doc.toString(), destroy: () => view.destroy(), focus: () => view.focus() };
}
