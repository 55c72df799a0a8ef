"""The report page's style sheet and script (inline in the page: no file or network is fetched at view time).

The script filters the gallery: every ``select[data-filter]`` of ``#gallery-filters`` narrows the turns (category,
predicate, class) and the cards (scene); a card stays when its scene matches and one of its turns does. The
filter state is kept in the page address (``#category=spatiotemporal&class=bus``), so a filtered view can be
shared or bookmarked. When it has run, the script sets ``data-ready="1"`` on ``<body>``.
"""

from __future__ import annotations

# Content-Security-Policy of the page: nothing may be loaded from anywhere; images only from data: URIs, style and
# script only inline. A report that tried to reach the network would be blocked and say so in the console.
CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"

STYLE = """
:root { --ink: #1d2430; --muted: #5b6474; --line: #d9dee6; --bg: #f6f7f9; --accent: #3b6fb6; }
* { box-sizing: border-box; }
[hidden] { display: none !important; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       background: var(--bg); }
header.page { background: #1d2430; color: #fff; padding: 18px 28px 12px; }
header.page h1 { margin: 0 0 4px; font-size: 22px; }
header.page p { margin: 0; color: #c9d1dd; }
nav { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line);
      padding: 8px 28px; display: flex; gap: 18px; flex-wrap: wrap; }
nav a { color: var(--accent); text-decoration: none; font-weight: 600; }
main { padding: 8px 28px 40px; max-width: 1500px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 14px 20px 18px;
          margin: 18px 0; }
section h2 { margin: 0 0 8px; font-size: 19px; }
h3 { font-size: 16px; margin: 18px 0 6px; }
.intro, .note, .source { color: var(--muted); margin: 4px 0 10px; }
.source { font-family: ui-monospace, monospace; font-size: 12px; }
.stats { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.stat { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 108px; background: var(--bg); }
.stat b { display: block; font-size: 20px; }
.stat span { color: var(--muted); font-size: 12px; }
.table-wrap { overflow-x: auto; margin: 10px 0; }
table { border-collapse: collapse; font-size: 13px; }
.table-wrap > table { width: 100%; }
caption { text-align: left; color: var(--muted); padding: 4px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; white-space: nowrap; }
th { background: var(--bg); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.share { text-align: left; }
.bar { display: inline-block; width: 90px; height: 9px; background: #e5e8ee; vertical-align: middle; }
.bar span { display: block; height: 100%; background: var(--accent); }
.charts { display: flex; flex-wrap: wrap; gap: 14px; }
figure.chart { margin: 0; flex: 1 1 520px; max-width: 100%; min-width: 0; }
figure.chart svg, figure.chart img.plot { width: 100%; height: auto; background: #fff; }
figure.chart svg, figure.chart img.plot { max-height: 460px; object-fit: contain; }  /* a lone chart: centred */
figure.chart svg text { font-family: inherit; }
figure.chart.wide { flex-basis: 100%; max-width: 100%; }
figcaption { color: var(--muted); font-size: 12px; }
.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: center; margin: 6px 0 12px; }
.filters select { max-width: 240px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(430px, 1fr)); gap: 14px; }
.cards.strips { grid-template-columns: repeat(auto-fill, minmax(620px, 1fr)); margin-top: 14px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px; background: #fff; }
.card header { font-size: 12px; color: var(--muted); margin-bottom: 6px; }
.frames img { max-width: 100%; height: auto; display: block; }
.frames.strip { display: flex; gap: 4px; overflow-x: auto; }
.frames.strip img { flex: 1 1 0; min-width: 0; }
.regions { font-size: 12px; color: var(--muted); margin: 4px 0; line-height: 1.9; }
.regions .region { border: 1px solid; border-radius: 3px; padding: 0 4px; white-space: nowrap; font-weight: 600; }
.turns { margin: 6px 0 0; padding-left: 20px; font-size: 13px; overflow-wrap: anywhere; }
.more-turns summary { cursor: pointer; color: var(--accent); font-size: 12px; font-weight: 600; margin: 4px 0 0 20px; }
.turns li { margin: 3px 0; }
.turns .tag { font-size: 11px; background: var(--bg); border: 1px solid var(--line); border-radius: 3px;
              padding: 0 4px; color: var(--muted); }
.turns .a { display: block; color: #23643a; }
.failed { color: #9c2b23; }
.answer { margin: 6px 0 0; font-size: 13px; display: grid; grid-template-columns: max-content 1fr; gap: 2px 8px; }
.answer dt { color: var(--muted); }
.answer dd { margin: 0; }
.answer .pred { color: #9c2b23; }
.answer .truth { color: #23643a; }
footer { color: var(--muted); padding: 0 28px 24px; font-size: 12px; }
"""

SCRIPT = """
(function () {
  "use strict";
  var form = document.getElementById("gallery-filters");
  if (!form) { document.body.setAttribute("data-ready", "1"); return; }
  var selects = Array.prototype.slice.call(form.querySelectorAll("select[data-filter]"));
  var cards = Array.prototype.slice.call(document.querySelectorAll("#gallery .card"));
  var count = document.getElementById("gallery-count");

  function wanted() {
    var w = {};
    selects.forEach(function (s) { w[s.getAttribute("data-filter")] = s.value; });
    return w;
  }

  function matches(li, w) {
    return (!w.category || li.getAttribute("data-category") === w.category) &&
      (!w.predicate || li.getAttribute("data-predicate") === w.predicate) &&
      (!w["class"] || li.getAttribute("data-class") === w["class"]);
  }

  function apply() {
    var w = wanted();
    var shown = 0;
    cards.forEach(function (card) {
      var any = false;
      Array.prototype.forEach.call(card.querySelectorAll(".turns li"), function (li) {
        var ok = matches(li, w);
        li.hidden = !ok;
        any = any || ok;
      });
      card.hidden = !(any && (!w.scene || card.getAttribute("data-scene") === w.scene));
      if (!card.hidden) { shown += 1; }
    });
    count.textContent = shown + " of " + cards.length + " samples";
  }

  function remember() {
    var parts = [];
    selects.forEach(function (s) {
      if (s.value) { parts.push(s.getAttribute("data-filter") + "=" + encodeURIComponent(s.value)); }
    });
    var hash = parts.length ? "#" + parts.join("&") : location.pathname + location.search;
    try { history.replaceState(null, "", hash); } catch (e) { /* file: pages may refuse; filtering still works */ }
  }

  function fromHash() {
    var text = location.hash.replace(/^#/, "");
    if (text.indexOf("=") < 0) { return; }
    text.split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      var key = pair.slice(0, at);
      var value = decodeURIComponent(pair.slice(at + 1));
      selects.forEach(function (s) {
        if (s.getAttribute("data-filter") !== key) { return; }
        for (var i = 0; i < s.options.length; i += 1) {
          if (s.options[i].value === value) { s.value = value; }
        }
      });
    });
  }

  selects.forEach(function (s) { s.addEventListener("change", function () { apply(); remember(); }); });
  document.getElementById("filter-reset").addEventListener("click", function () {
    selects.forEach(function (s) { s.value = ""; });
    apply();
    remember();
  });
  form.addEventListener("submit", function (e) { e.preventDefault(); });
  window.addEventListener("hashchange", function () { fromHash(); apply(); });
  fromHash();
  apply();
  document.body.setAttribute("data-ready", "1");
})();
"""
