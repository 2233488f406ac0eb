// The editor for code challenges: CodeMirror 6 with Python, a dark theme that follows the system,
// and line highlights for the sandbox's diagnosis (the line that raised, saved, or modified).
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";
import { oneDark } from "@codemirror/theme-one-dark";
import { EditorState, StateEffect, StateField, Compartment } from "@codemirror/state";
import { Decoration } from "@codemirror/view";

const setMarks = StateEffect.define();
const marks = StateField.define({
  create: () => Decoration.none,
  update(value, tr) {
    value = value.map(tr.changes);
    for (const e of tr.effects) if (e.is(setMarks)) value = e.value;
    return tr.docChanged ? Decoration.none : value;
  },
  provide: (f) => EditorView.decorations.from(f),
});

export function create(parent, { doc = "", dark = false, onChange = null } = {}) {
  const theme = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        basicSetup,
        python(),
        marks,
        theme.of(dark ? oneDark : []),
        EditorView.updateListener.of((u) => { if (u.docChanged && onChange) onChange(u.state.doc.toString()); }),
      ],
    }),
  });
  return {
    view,
    getValue: () => view.state.doc.toString(),
    setValue: (text) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } }),
    setDark: (on) => view.dispatch({ effects: theme.reconfigure(on ? oneDark : []) }),
    // lines: [{line: 3, kind: "raised" | "saved" | "modified"}], 1-based
    highlight(lines) {
      const doc = view.state.doc;
      const ranges = lines
        .filter((l) => l.line >= 1 && l.line <= doc.lines)
        .sort((a, b) => a.line - b.line)
        .map((l) => Decoration.line({ class: "cm-diag cm-diag-" + l.kind }).range(doc.line(l.line).from));
      view.dispatch({ effects: setMarks.of(Decoration.set(ranges, true)) });
    },
  };
}
