// The offline handbook: language toggle, search over both languages, ←/→ between cards, print with answers open.
// Works from file:// with no network; math is already rendered (or rendered here by the inlined KaTeX).
(function () {
  "use strict";
  var KEY = "depthcards_handbook_lang";
  var MODES = ["zh", "both", "en"];
  var root = document.documentElement;
  var fixed = root.dataset.langFixed === "true";
  var cards = Array.prototype.slice.call(document.querySelectorAll("article.hb-card"));
  var tocItems = {};
  document.querySelectorAll(".toc-cards li[data-card]").forEach(function (li) { tocItems[li.dataset.card] = li; });
  var texts = null;

  function setLang(mode) {
    if (fixed || MODES.indexOf(mode) < 0) return;
    root.dataset.lang = mode;
    try { localStorage.setItem(KEY, mode); } catch (e) { /* file:// storage may be off */ }
    document.querySelectorAll("[data-lang-mode]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.langMode === mode));
    });
  }

  function renderMath() {
    if (!window.katex) return;
    document.querySelectorAll(".math.inline:not([data-rendered]), .math.display:not([data-rendered])").forEach(function (el) {
      try {
        window.katex.render(el.textContent, el, { displayMode: el.classList.contains("display"), throwOnError: false, output: "htmlAndMathml" });
        el.dataset.rendered = "1";
      } catch (e) { el.classList.add("math-error"); }
    });
  }

  // Search: every word must occur in the card, in either language (substring match, so Chinese needs no spaces).
  function search(query) {
    var words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (texts === null) texts = cards.map(function (c) { return c.textContent.toLowerCase(); });
    var shown = 0;
    cards.forEach(function (card, i) {
      var hit = words.every(function (w) { return texts[i].indexOf(w) >= 0; });
      card.hidden = !hit;
      if (tocItems[card.id]) tocItems[card.id].hidden = !hit;
      if (hit) shown++;
    });
    document.getElementById("dc_empty").hidden = shown > 0;
    document.getElementById("dc_count").textContent = words.length ? shown + " / " + cards.length : "";
  }

  function visibleCards() { return cards.filter(function (c) { return !c.hidden; }); }

  function currentIndex(list) {
    var target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null;
    var top = 80;
    var best = -1;
    for (var i = 0; i < list.length; i++) {
      if (list[i].getBoundingClientRect().top <= top) best = i; else break;
    }
    if (target && list.indexOf(target) >= 0) {
      var t = list.indexOf(target);
      var r = target.getBoundingClientRect();
      if (r.top <= top && r.bottom > top) return t;
    }
    return best;
  }

  function go(step) {
    var list = visibleCards();
    if (!list.length) return;
    var i = currentIndex(list);
    var next = Math.max(0, Math.min(list.length - 1, i < 0 ? 0 : i + step));
    if (i < 0 && step < 0) next = 0;
    location.hash = "#" + list[next].id;
    list[next].scrollIntoView();
  }

  function markCurrent() {
    var id = location.hash.slice(1);
    document.querySelectorAll(".toc-cards li.current").forEach(function (li) { li.classList.remove("current"); });
    if (tocItems[id]) tocItems[id].classList.add("current");
  }

  var timer = null;
  var box = document.getElementById("dc_q");
  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { search(box.value); }, 120);
  });
  box.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { clearTimeout(timer); search(box.value); var first = visibleCards()[0]; if (first) { location.hash = "#" + first.id; } }
    if (e.key === "Escape") { box.value = ""; search(""); box.blur(); }
  });

  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-lang-mode]");
    if (b) setLang(b.dataset.langMode);
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "ArrowRight") { e.preventDefault(); go(1); }
    else if (e.key === "ArrowLeft") { e.preventDefault(); go(-1); }
    else if (e.key === "/") { e.preventDefault(); box.focus(); box.select(); }
    else if (e.key === "l" || e.key === "L") { setLang(MODES[(MODES.indexOf(root.dataset.lang) + 1) % MODES.length]); }
  });
  window.addEventListener("hashchange", markCurrent);

  // Printing opens every follow-up answer, then closes the ones that were closed.
  var opened = [];
  window.addEventListener("beforeprint", function () {
    opened = Array.prototype.filter.call(document.querySelectorAll("details.followup"), function (d) { return !d.open; });
    opened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () { opened.forEach(function (d) { d.open = false; }); opened = []; });

  if (!fixed) {
    var saved = null;
    try { saved = localStorage.getItem(KEY); } catch (e) { /* ignore */ }
    if (saved) setLang(saved);
  }
  renderMath();
  markCurrent();
  document.body.dataset.ready = "1";
})();
