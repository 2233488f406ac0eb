// DepthCards page behaviour: language toggle, KaTeX, keyboard shortcuts, knowledge graph.
(function () {
  "use strict";
  var LANG_COOKIE = "depthcards_lang";
  var MODES = ["zh", "both", "en"];

  function setLang(mode) {
    if (MODES.indexOf(mode) < 0) return;
    document.documentElement.dataset.lang = mode;
    document.cookie = LANG_COOKIE + "=" + mode + "; path=/; max-age=31536000; samesite=lax";
    try { localStorage.setItem(LANG_COOKIE, mode); } catch (e) { /* private mode */ }
    document.querySelectorAll("[data-lang-mode]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.langMode === mode));
    });
  }

  function renderMath(root) {
    if (!window.katex) return;
    root.querySelectorAll(".math.inline, .math.display").forEach(function (el) {
      if (el.dataset.rendered) return;
      var display = el.classList.contains("display");
      try {
        window.katex.render(el.textContent, el, { displayMode: display, throwOnError: false, output: "htmlAndMathml" });
        el.dataset.rendered = "1";
      } catch (e) { el.classList.add("math-error"); el.title = String(e); }
    });
  }

  function drawGraph(container) {
    if (!window.cytoscape || !container) return;
    fetch(container.dataset.src).then(function (r) { return r.json(); }).then(function (elements) {
      var dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
      var lang = document.documentElement.dataset.lang === "zh" ? "zh" : "en";
      var colors = { easy: dark ? "#69db7c" : "#2f9e44", medium: dark ? "#ffa94d" : "#e67700", hard: dark ? "#ff8787" : "#c92a2a" };
      var cy = window.cytoscape({
        container: container,
        elements: elements.nodes.concat(elements.edges),
        wheelSensitivity: 0.3,
        style: [
          { selector: "node", style: { label: "data(" + lang + ")", "font-size": 12, color: dark ? "#e4e7ef" : "#1d2230",
            "text-wrap": "wrap", "text-max-width": 110, "text-valign": "bottom", "text-margin-y": 3, "min-zoomed-font-size": 7 } },
          { selector: "node[kind='card']", style: { "background-color": function (n) { return colors[n.data("difficulty")] || "#888"; },
            width: 14, height: 14 } },
          { selector: "node[kind='topic']", style: { "background-opacity": dark ? 0.12 : 0.06, "background-color": "#3b5bdb",
            "border-color": "#3b5bdb", "border-width": 1, "text-valign": "top", "font-size": 13, "font-weight": "bold", shape: "round-rectangle", padding: 24 } },
          { selector: "edge", style: { width: 1, "line-color": dark ? "#58607a" : "#b8bfd3", "target-arrow-shape": "triangle",
            "target-arrow-color": dark ? "#58607a" : "#b8bfd3", "curve-style": "bezier", "arrow-scale": 0.7, opacity: 0.8 } },
          { selector: "node:selected, node.hover", style: { "border-width": 3, "border-color": "#3b5bdb", "z-index": 10 } },
          { selector: "edge.hover", style: { "line-color": "#3b5bdb", "target-arrow-color": "#3b5bdb", width: 2, opacity: 1 } }
        ],
        // Labels are part of a node's size, so titles do not pile on top of each other.
        layout: { name: "cose", animate: false, nodeDimensionsIncludeLabels: true, idealEdgeLength: function () { return 140; },
          nodeRepulsion: function () { return 1200000; }, nestingFactor: 0.9, gravity: 0.3, numIter: 2500, padding: 24 },
        minZoom: 0.2, maxZoom: 2.5
      });
      // Fit, but never blow a small graph up to giant labels.
      cy.fit(undefined, 24);
      if (cy.zoom() > 1.1) { cy.zoom(1.1); cy.center(); }
      cy.on("mouseover", "node[kind='card']", function (evt) { evt.target.addClass("hover"); evt.target.connectedEdges().addClass("hover"); });
      cy.on("mouseout", "node[kind='card']", function (evt) { evt.target.removeClass("hover"); evt.target.connectedEdges().removeClass("hover"); });
      cy.on("tap", "node[kind='card']", function (evt) { window.location.href = evt.target.data("href"); });
      container.dataset.ready = String(cy.nodes("[kind='card']").length);
    });
  }

  // Review page ///////////////////////////////////////////////////////////
  var shownAt = Date.now();

  function reviewer() { return document.getElementById("reviewer"); }

  function reveal() {
    var r = reviewer();
    if (!r) return false;
    var card = r.querySelector(".review-card");
    if (!card || card.dataset.revealed === "true") return false;
    card.dataset.revealed = "true";
    r.querySelector(".back").hidden = false;
    r.querySelector(".grades").hidden = false;
    var button = r.querySelector("[data-reveal]");
    if (button) button.hidden = true;
    var good = r.querySelector(".grade-3");
    if (good) good.focus({ preventScroll: true });
    return true;
  }

  function grade(rating) {
    var r = reviewer();
    var card = r && r.querySelector(".review-card");
    if (!card || card.dataset.revealed !== "true") return;
    var button = r.querySelector('.grades [data-rating="' + rating + '"]');
    if (button) button.click();
  }

  function submitAction(name) {
    var form = document.querySelector('#reviewer form[data-action="' + name + '"]');
    if (form) { var b = form.querySelector("button"); if (b && !b.disabled) form.requestSubmit(b); }
  }

  function toggleHelp() {
    var help = document.getElementById("help");
    if (!help) return;
    if (help.open) help.close(); else help.showModal();
  }

  function onReviewKey(e) {
    if (!reviewer()) return false;
    if ((e.ctrlKey || e.metaKey) && (e.key === "z" || e.key === "Z")) { submitAction("undo"); return true; }
    if (e.ctrlKey || e.metaKey || e.altKey) return false;
    var card = reviewer().querySelector(".review-card");
    var revealed = card && card.dataset.revealed === "true";
    switch (e.key) {
      case " ": case "Enter":
        if (e.target && e.target.tagName === "BUTTON" && e.key === "Enter") return false;  // let a focused button act
        if (!reveal() && revealed) grade(3);
        return true;
      case "1": case "2": case "3": case "4": grade(e.key); return true;
      case "u": case "U": submitAction("undo"); return true;
      case "-": submitAction("bury"); return true;
      case "@": submitAction("suspend"); return true;
      case "?": toggleHelp(); return true;
    }
    return false;
  }

  function onKey(e) {
    var t = e.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (typing) return;
    if (onReviewKey(e)) { e.preventDefault(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/") {
      var q = document.getElementById("q");
      if (q) { e.preventDefault(); q.focus(); q.select(); } else { window.location.href = "/"; }
    } else if (e.key === "l" || e.key === "L") {
      var cur = MODES.indexOf(document.documentElement.dataset.lang);
      setLang(MODES[(cur + 1) % MODES.length]);
    } else if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
      var card = document.getElementById("card");
      var href = card && card.dataset[e.key === "ArrowLeft" ? "prev" : "next"];
      if (href) window.location.href = href;
    }
  }

  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-lang-mode]");
    if (b) setLang(b.dataset.langMode);
    if (e.target.closest && e.target.closest("[data-reveal]")) reveal();
    if (e.target.closest && e.target.closest("[data-help]")) toggleHelp();
  });
  // Time spent on an item goes with its answer (review log duration).
  document.addEventListener("htmx:configRequest", function (e) {
    if (e.detail.path === "/review/answer") e.detail.parameters.duration_ms = String(Date.now() - shownAt);
  });
  document.addEventListener("htmx:responseError", function (e) {
    var flash = document.getElementById("flash");
    if (!flash) return;
    var text = e.detail.xhr.responseText || "";
    var doc = new DOMParser().parseFromString(text, "text/html");
    var message = doc.querySelector(".message");
    flash.textContent = (message ? message.textContent : text).trim() || ("Error " + e.detail.xhr.status);
    flash.hidden = false;
  });
  document.addEventListener("keydown", onKey);
  document.addEventListener("DOMContentLoaded", function () {
    renderMath(document);
    drawGraph(document.getElementById("graph"));
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    renderMath(e.target);
    if (e.target.id === "reviewer" || (e.target.querySelector && e.target.querySelector("#reviewer"))) {
      shownAt = Date.now();
      var flash = document.getElementById("flash");
      if (flash) flash.hidden = true;
    }
  });
})();
