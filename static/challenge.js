// Challenge and playground pages: the CodeMirror editor, Run (fetch + JSON), Submit (htmx), and diagnosis
// lines highlighted in the editor (or in a highlighted snippet). Loaded only on those pages.
(function () {
  "use strict";
  var editor = null;
  var source = null;  // the <textarea name="code">: the form field, and the editor without JavaScript

  function darkQuery() { return window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null; }

  function setupEditor() {
    source = document.querySelector("#solve textarea.code-source");
    var mount = document.querySelector("#solve [data-editor]");
    if (!source || !mount || !window.DCEditor) return;
    var dark = darkQuery();
    editor = window.DCEditor.create(mount, {
      doc: source.value,
      dark: !!(dark && dark.matches),
      onChange: function (text) { source.value = text; }
    });
    source.hidden = true;
    editor.view.contentDOM.setAttribute("aria-label", "Code / 代码");
    mount.dataset.ready = "true";
    if (dark && dark.addEventListener) dark.addEventListener("change", function (e) { editor.setDark(e.matches); });
    window.dcEditor = editor;  // for the browser tests and the console
  }

  function code() { return editor ? editor.getValue() : (source ? source.value : ""); }

  function setCode(text) {
    if (editor) editor.setValue(text);
    if (source) source.value = text;
  }

  // lines: [{line, kind: "raised" | "saved" | "modified"}]
  function highlight(lines) {
    if (editor) editor.highlight(lines);
    var snippet = document.getElementById("snippet");
    if (!snippet) return;
    snippet.querySelectorAll(".cm-diag").forEach(function (el) { el.className = ""; });
    lines.forEach(function (l) {
      var el = snippet.querySelector("#code-line-" + l.line);
      if (el) el.className = "cm-diag cm-diag-" + l.kind;
    });
  }

  function linesOf(result) {
    var found = [];
    var d = result.diagnosis || {};
    [[result.line, "raised"], [d.saved_by_line, "saved"], [d.modified_at_line, "modified"]].forEach(function (pair) {
      if (typeof pair[0] === "number" && !found.some(function (f) { return f.line === pair[0]; })) {
        found.push({ line: pair[0], kind: pair[1] });
      }
    });
    return found;
  }

  // Run ///////////////////////////////////////////////////////////////////
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function bi(zh, en) {
    var frag = document.createDocumentFragment();
    var a = el("span", "l-zh", zh); a.lang = "zh";
    var b = el("span", "l-en", en); b.lang = "en";
    frag.appendChild(a); frag.appendChild(b);
    return frag;
  }

  function renderRun(box, result) {
    box.textContent = "";
    var ok = result.outcome === "ok";
    box.className = "run-output " + (ok ? "passed" : "failed");
    var head = el("h2", "run-title");
    head.appendChild(document.createTextNode(ok ? "✓ " : "✗ "));
    head.appendChild(el("code", "outcome", result.outcome));
    var meta = (result.line ? " · line " + result.line : "") + " · " + Math.round(result.duration_ms) + " ms";
    head.appendChild(el("span", "count", meta));
    box.appendChild(head);
    if (result.diagnosis) {
      var p = el("p", "diagnosis");
      p.appendChild(bi(result.diagnosis.zh, result.diagnosis.en));
      box.appendChild(p);
    }
    if (result.exception_type) {
      box.appendChild(el("pre", "exception", result.exception_type + ": " + result.message));
    }
    if (result.stdout) box.appendChild(el("pre", "stdout", result.stdout));
    if (result.stderr) box.appendChild(el("pre", "stderr", result.stderr));
    if (result.isolated === false) box.appendChild(el("p", "warning", "⚠ ran WITHOUT isolation / 没有隔离"));
    box.hidden = false;
    highlight(linesOf(result));
  }

  function renderRefusal(box, status, detail) {
    box.textContent = "";
    box.className = "run-output failed";
    box.appendChild(el("p", "verdict-error", "HTTP " + status + ": " + (typeof detail === "string" ? detail : JSON.stringify(detail))));
    box.hidden = false;
  }

  var running = false;
  function run() {
    var page = document.getElementById("challenge");
    var box = document.getElementById("run-output");
    var button = document.querySelector("[data-run]");
    if (!page || !page.dataset.runUrl || !box || running) return;
    running = true;
    if (button) button.disabled = true;
    box.hidden = false;
    box.className = "run-output pending";
    box.textContent = "…";
    fetch(page.dataset.runUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify({ code: code() })
    }).then(function (response) {
      return response.json().then(function (data) {
        if (response.ok) renderRun(box, data); else renderRefusal(box, response.status, data.detail);
      });
    }).catch(function (err) {
      renderRefusal(box, 0, String(err));
    }).finally(function () {
      running = false;
      if (button) button.disabled = false;
    });
  }

  function submit() {
    var form = document.getElementById("solve");
    var button = form && form.querySelector("[data-submit]");
    if (form && button && !button.disabled) form.requestSubmit(button);
  }

  // Wiring ////////////////////////////////////////////////////////////////
  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target : null;
    if (!t) return;
    if (t.closest("[data-run]")) { e.preventDefault(); run(); }
    if (t.closest("[data-reset]") && source) { setCode(source.dataset.starter || ""); highlight([]); }
  });
  document.addEventListener("change", function (e) {
    if (e.target.matches && e.target.matches("[data-examples]")) {
      var template = document.getElementById("example-" + e.target.value);
      if (template) { setCode(template.content.textContent); highlight([]); }
    }
  });
  // Capture phase: CodeMirror would otherwise take Ctrl+Enter as "insert blank line".
  document.addEventListener("keydown", function (e) {
    if (!(e.ctrlKey || e.metaKey) || e.key !== "Enter") return;
    if (!document.getElementById("solve")) return;
    e.preventDefault();
    e.stopPropagation();
    if (e.shiftKey) submit(); else run();
  }, true);
  // The form field follows the editor even if onChange was missed (e.g. programmatic edits).
  document.addEventListener("htmx:configRequest", function (e) {
    if (editor && e.detail.parameters && "code" in e.detail.parameters) e.detail.parameters.code = editor.getValue();
  });
  // Refusals (413, 422, 429, 503) come back as a verdict panel with the reason: show it instead of nothing.
  document.addEventListener("htmx:beforeSwap", function (e) {
    var target = e.detail.target;
    if (target && target.id === "verdict" && e.detail.xhr.status >= 400) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    var verdict = document.getElementById("verdict");
    if (verdict && verdict.dataset.status === "done") highlight(JSON.parse(verdict.dataset.lines || "[]"));
  });
  document.addEventListener("DOMContentLoaded", function () {
    setupEditor();
    var verdict = document.getElementById("verdict");
    if (verdict && verdict.dataset.status === "done") highlight(JSON.parse(verdict.dataset.lines || "[]"));
  });
})();
