"""The dashboard's look (inline CSS) and its one small script (an error recorder, filter boxes, copy
buttons, and the page's own report of how the browser drew it).

The page reads the same without the script: it only hides rows that do not match a filter, copies
repro commands to the clipboard, and writes ``data-`` attributes nobody sees. Those attributes are how
a test (or a curious reader, in the browser's inspector) knows the browser did its part:

- ``<html data-errors=N>``: errors the page met (uncaught exceptions, failed loads, ``console.error``),
  set to 0 before anything else in the script runs, and ``data-error-list`` saying which;
- ``<html data-ready="true">``: the script ran to its end, after the page had loaded;
- on each chart's ``<figure>``, ``data-rendered-x``, ``-y``, ``-width`` and ``-height`` (where its
  drawing is on the page, in CSS pixels, from ``getBoundingClientRect`` after layout) and
  ``data-rendered-marks`` (its marks that the browser laid out with a non-empty box).

Nothing here loads anything from anywhere."""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = """
:root {
  --ink: #1d2430; --muted: #5b6573; --faint: #8a94a3; --line: #dfe3e8; --panel: #ffffff;
  --page: #f4f6f8; --accent: #2557a7; --pass: #3a9a5b; --diverge: #e8870e; --error: #d1343b;
  --timeout: #8a4fbf; --closed: #5f7a8c;
}
* { box-sizing: border-box; }
html { scroll-padding-top: 56px; }
body { margin: 0; background: var(--page); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
code, pre, .mono { font-size: 12.5px;
  font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "DejaVu Sans Mono", monospace; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
header.top { background: #16202e; color: #fff; padding: 18px 0 14px; }
header.top h1 { margin: 0; font-size: 21px; font-weight: 600; letter-spacing: .2px; }
header.top .meta { color: #b7c1cf; font-size: 13px; margin-top: 3px; }
.wrap { max-width: 1240px; margin: 0 auto; padding: 0 24px; }
nav.sections { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line); }
nav.sections .wrap { display: flex; gap: 4px; flex-wrap: wrap; }
nav.sections a { color: var(--muted); padding: 11px 10px; font-weight: 500; display: inline-block; }
nav.sections a:hover { color: var(--ink); text-decoration: none; background: var(--page); }
nav.sections .count { color: var(--faint); font-weight: 400; margin-left: 3px; }
main { padding: 18px 0 40px; }
section.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px;
  padding: 18px 22px 20px; margin: 0 0 18px; }
section.panel > h2 { margin: 0 0 4px; font-size: 17px; font-weight: 600; }
section.panel > p.lead { margin: 0 0 14px; color: var(--muted); }
h3 { font-size: 14px; margin: 18px 0 8px; }
p.empty { color: var(--muted); font-style: italic; margin: 8px 0; }
.verdict { display: flex; align-items: center; gap: 12px; padding: 12px 16px; border-radius: 6px;
  margin: 4px 0 16px; font-size: 15px; font-weight: 500; }
.verdict .dot { width: 12px; height: 12px; border-radius: 50%; flex: none; }
.verdict.good { background: #e8f5ec; color: #14532d; } .verdict.good .dot { background: var(--pass); }
.verdict.warn { background: #fdf1df; color: #6b3a00; } .verdict.warn .dot { background: var(--diverge); }
.verdict.bad { background: #fbe6e6; color: #7a1016; } .verdict.bad .dot { background: var(--error); }
.verdict.none { background: var(--page); color: var(--muted); }
.verdict.none .dot { background: var(--faint); }
.tiles { display: grid; grid-template-columns: repeat(5, 1fr); gap: 12px; margin-bottom: 16px; }
.tile { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; }
.tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .4px; }
.tile .value { font-size: 24px; font-weight: 600; margin-top: 2px; font-variant-numeric: tabular-nums; }
.tile .note { color: var(--muted); font-size: 12.5px; }
.up { color: #1f7a3f; } .down { color: #b3261e; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: baseline; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafbfc; }
td.num, th.num { text-align: right; }
tbody tr:hover td { background: #f8fafc; }
.scroll { overflow: auto; max-height: 720px; border: 1px solid var(--line); border-radius: 6px; }
.scroll table th { position: sticky; top: 0; z-index: 1; }
table.grid td.cell { text-align: center; min-width: 92px; border-left: 2px solid #fff; }
table.grid td.cell .rate { font-weight: 600; }
table.grid td.cell .counts { font-size: 11.5px; opacity: .85; }
table.grid th.target { text-align: center; border-left: 2px solid #fff; }
table.grid col.api-col { width: 190px; } table.grid col.version-col { width: 80px; }
table.grid td.api { font-weight: 500; white-space: nowrap; }
table.grid td.api.repeat { color: var(--faint); font-weight: 400; }
.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap; gap: 14px;
  color: var(--muted); font-size: 12.5px; }
.legend .swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 5px;
  vertical-align: -1px; border: 1px solid rgba(0,0,0,.08); }
.tools { display: flex; align-items: center; gap: 12px; margin: 4px 0 10px; }
.tools input[type=search] { width: 280px; padding: 6px 10px; font: inherit;
  border: 1px solid var(--line); border-radius: 5px; }
.tools .hint { color: var(--faint); font-size: 12.5px; }
figure.chart { margin: 10px 0 18px; }
figure.chart figcaption { font-weight: 600; margin-bottom: 6px; }
figure.chart svg { width: 100%; height: auto; display: block; }
svg .grid { stroke: #e7eaee; stroke-width: 1; }
svg .tick { fill: var(--faint); font-size: 11px; }
svg .axis-title { fill: var(--muted); font-size: 12px; }
svg .label { fill: var(--ink); font-size: 12px; }
svg .value { fill: var(--muted); font-size: 11px; }
svg .sublabel { fill: var(--muted); font-size: 11px; font-family: ui-monospace, Menlo, Consolas, monospace; }
svg .line { fill: none; stroke-width: 2; }
svg .mark:hover { opacity: .8; }
.charts-2 { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
.scroll.clusters { max-height: 900px; border: 0; padding-right: 4px; }
.cluster { border: 1px solid var(--line); border-left: 4px solid var(--diverge); border-radius: 6px;
  padding: 10px 14px; margin: 0 0 10px; }
.cluster .sig { font-weight: 600; word-break: break-all; }
.cluster .facts { display: flex; flex-wrap: wrap; gap: 6px 18px; color: var(--muted); margin: 6px 0;
  font-size: 13px; }
.cluster table.values { width: auto; margin: 4px 0 6px; }
.cluster table.values td, .cluster table.values th { padding: 2px 12px 2px 0; max-width: 520px;
  word-break: break-all; }
.cluster .why { margin: 4px 0; }
.cluster ol.steps { margin: 4px 0 6px 18px; padding: 0; }
.cluster pre.message { white-space: pre-wrap; word-break: break-all; margin: 6px 0; }
.cluster .facts b { color: var(--ink); font-weight: 600; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 10px; font-size: 11.5px; font-weight: 600;
  background: #edf0f4; color: var(--muted); margin-right: 4px; white-space: nowrap; }
.badge.new { background: #fde2c4; color: #8a4300; }
.badge.fixed { background: #d7efdf; color: #14532d; }
.badge.v-pass { background: #d7efdf; color: #14532d; }
.badge.v-violation { background: #f8cccc; color: #7a1016; }
.badge.v-error { background: #e7d7f3; color: #4b1f73; }
.badge.v-inconclusive { background: #edf0f4; color: #56606b; }
.repro { display: flex; align-items: stretch; gap: 0; margin-top: 6px; }
.repro pre { margin: 0; flex: 1; background: #16202e; color: #e6edf3; padding: 7px 10px;
  border-radius: 5px 0 0 5px; overflow-x: auto; white-space: pre; }
.repro button { border: 0; background: #2b3a50; color: #dbe4ee; padding: 0 12px; border-radius: 0 5px 5px 0;
  cursor: pointer; font: inherit; font-size: 12px; }
.repro button:hover { background: #3a4d68; }
details.violation { border: 1px solid #f1c2c2; border-radius: 6px; margin: 0 0 8px; background: #fffafa; }
details.violation > summary { cursor: pointer; padding: 8px 12px; font-weight: 500; }
details.violation pre { margin: 0 12px 12px; background: #fff; padding: 8px 10px; border-radius: 5px;
  border: 1px solid var(--line); max-height: 320px; overflow: auto; white-space: pre-wrap; }
table.chaos td { vertical-align: top; }
table.chaos td.chaos-cell { min-width: 190px; border-left: 2px solid #fff; }
td.chaos-cell .of-runs { color: var(--muted); font-size: 12px; margin-right: 8px; }
td.chaos-cell .counts { color: var(--muted); font-size: 12px; margin-top: 3px; }
td.chaos-cell ul { list-style: none; padding: 0; margin: 4px 0 0; font-size: 12px; }
td.chaos-cell li.violation { color: #7a1016; font-weight: 600; }
td.chaos-cell li.unseen { color: var(--faint); }
.changes { display: grid; grid-template-columns: 1fr 1fr; gap: 18px; }
ul.plain { list-style: none; padding: 0; margin: 0; }
ul.plain { max-height: 440px; overflow-y: auto; }
ul.plain li { padding: 4px 0; border-bottom: 1px dashed var(--line); }
ul.plain li .mono { overflow-wrap: anywhere; }
.hint { color: var(--faint); }
footer { color: var(--faint); font-size: 12.5px; padding: 6px 0 30px; }
@media (max-width: 900px) { .tiles { grid-template-columns: repeat(2, 1fr); }
  .charts-2, .changes { grid-template-columns: 1fr; } }
@media print { nav.sections { position: static; } .tools, .repro button { display: none; } }
"""

# First, a recorder of every error the page meets from here on (this script's own included: the listener
# is in place before the rest runs), and of any image that already failed to load. Then the filter
# boxes, which name the table or list they filter (data-filter=ID); rows match on their text. Then the
# copy buttons. Last, once the page has loaded, what the browser made of each chart, and the flag.
SCRIPT = """
(function () {
  var root = document.documentElement, errors = [];
  function note(text) {
    errors.push(String(text));
    root.setAttribute('data-errors', String(errors.length));
    root.setAttribute('data-error-list', errors.join('\\n').slice(0, 4000));
  }
  root.setAttribute('data-errors', '0');
  window.addEventListener('error', function (event) {  // capture: failed loads do not bubble
    var target = event.target || {};
    note(event.message || ('failed to load ' + (target.src || target.href || target.tagName)));
  }, true);
  window.addEventListener('unhandledrejection', function (event) {
    note('unhandled rejection: ' + event.reason);
  });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    return consoleError.apply(console, arguments);
  };
  document.querySelectorAll('img').forEach(function (img) {
    if (img.complete && !img.naturalWidth) { note('failed to load ' + img.src); }
  });
})();
document.querySelectorAll('input[data-filter]').forEach(function (box) {
  var target = document.getElementById(box.dataset.filter);
  box.addEventListener('input', function () {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean);
    target.querySelectorAll('[data-row]').forEach(function (row) {
      var text = row.textContent.toLowerCase();
      row.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  });
});
document.querySelectorAll('button[data-copy]').forEach(function (button) {
  button.addEventListener('click', function () {
    var text = document.getElementById(button.dataset.copy).textContent;
    navigator.clipboard.writeText(text).then(function () {
      button.textContent = 'copied';
      setTimeout(function () { button.textContent = 'copy'; }, 1200);
    });
  });
});
// Once laid out: what each chart measures on screen, then the flag that the script got this far.
function reportRendering() {
  document.querySelectorAll('figure[data-chart]').forEach(function (figure) {
    var drawing = figure.querySelector('svg') || figure;
    var box = drawing.getBoundingClientRect();
    figure.setAttribute('data-rendered-x', String(Math.round(box.left + window.scrollX)));
    figure.setAttribute('data-rendered-y', String(Math.round(box.top + window.scrollY)));
    figure.setAttribute('data-rendered-width', String(Math.round(box.width)));
    figure.setAttribute('data-rendered-height', String(Math.round(box.height)));
    var drawn = 0;
    figure.querySelectorAll('.mark').forEach(function (mark) {
      var markBox = mark.getBoundingClientRect();
      if (markBox.width > 0 && markBox.height > 0) { drawn += 1; }
    });
    figure.setAttribute('data-rendered-marks', String(drawn));
  });
  document.documentElement.setAttribute('data-ready', 'true');
}
if (document.readyState === 'complete') {
  reportRendering();
} else {
  window.addEventListener('load', reportRendering);
}
"""
