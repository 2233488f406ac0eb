// Stats page charts. The page's tables already hold every number; these draw the same data (/stats.json)
// with the vendored Chart.js, in the page's colours (so dark mode follows the system) and the chosen language.
(function () {
  "use strict";

  var TEXT = {
    due: ["到期", "Due"],
    items: ["项目", "Items"],
    states: {
      new: ["新", "New"], learning: ["学习中", "Learning"], review: ["复习", "Review"],
      relearning: ["重新学习", "Relearning"], suspended: ["已暂停", "Suspended"], buried: ["已搁置", "Buried"]
    }
  };
  var STATES = ["new", "learning", "review", "relearning", "suspended", "buried"];
  var charts = [];
  var data = null;

  function say(pair) {
    var mode = document.documentElement.dataset.lang;
    if (mode === "zh") return pair[0];
    if (mode === "en") return pair[1];
    return pair[0] + " · " + pair[1];
  }

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function axes(yTitle) {
    var line = css("--line");
    var muted = css("--muted");
    return {
      x: { grid: { color: line, display: false }, ticks: { color: muted, maxRotation: 0, autoSkipPadding: 8 } },
      y: { beginAtZero: true, grid: { color: line }, border: { display: false },
           ticks: { color: muted, precision: 0 }, title: { display: true, text: say(yTitle), color: muted } }
    };
  }

  function bars(id, labels, counts, colour, yTitle, titles) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    charts.push(new window.Chart(canvas, {
      type: "bar",
      data: { labels: labels, datasets: [{ label: say(yTitle), data: counts, backgroundColor: colour, borderRadius: 3 }] },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        scales: axes(yTitle),
        plugins: {
          legend: { display: false },
          tooltip: titles ? { callbacks: { title: function (items) { return titles[items[0].dataIndex]; } } } : {}
        }
      }
    }));
  }

  function draw() {
    charts.forEach(function (chart) { chart.destroy(); });
    charts = [];
    if (!data) return;
    var Chart = window.Chart;
    Chart.defaults.color = css("--muted");
    Chart.defaults.borderColor = css("--line");
    Chart.defaults.font.family = css("--font") || Chart.defaults.font.family;

    var days = data.forecast.map(function (d) { return d.day; });
    bars("chart-forecast", days.map(function (d) { return d.slice(5); }), data.forecast.map(function (d) { return d.count; }),
         css("--accent"), TEXT.due, days);
    bars("chart-difficulty", data.difficulty.map(function (b) { return b.label; }), data.difficulty.map(function (b) { return b.count; }),
         css("--medium"), TEXT.items);
    bars("chart-stability", data.stability.map(function (b) { return b.label; }), data.stability.map(function (b) { return b.count; }),
         css("--easy"), TEXT.items);

    var canvas = document.getElementById("chart-states");
    if (canvas) canvas.parentNode.hidden = !data.states.total;  // an empty ring says nothing the table doesn't
    if (canvas && data.states.total) {
      charts.push(new Chart(canvas, {
        type: "doughnut",
        data: {
          labels: STATES.map(function (s) { return say(TEXT.states[s]); }),
          datasets: [{
            data: STATES.map(function (s) { return data.states[s]; }),
            backgroundColor: STATES.map(function (s) { return css("--st-" + s); }),
            borderColor: css("--card"), borderWidth: 2
          }]
        },
        options: {
          responsive: true, maintainAspectRatio: false, animation: false,
          plugins: { legend: { position: "right", labels: { color: css("--fg"), boxWidth: 12 } } }
        }
      }));
    }
    document.getElementById("stats").dataset.charts = String(charts.length);
  }

  function start() {
    var root = document.getElementById("stats");
    if (!root) return;
    // The calendar is wider than a phone: start it at today.
    var heatmap = document.getElementById("heatmap");
    if (heatmap) heatmap.scrollLeft = heatmap.scrollWidth;
    if (!window.Chart) return;
    fetch(root.dataset.src, { headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (json) { data = json; draw(); })
      .catch(function (e) { root.dataset.charts = "error: " + e.message; });
    // Redraw when the system switches light/dark or the language toggle changes <html data-lang>.
    var scheme = window.matchMedia("(prefers-color-scheme: dark)");
    if (scheme.addEventListener) scheme.addEventListener("change", draw);
    new MutationObserver(draw).observe(document.documentElement, { attributes: true, attributeFilter: ["data-lang"] });
  }

  document.addEventListener("DOMContentLoaded", start);
})();
