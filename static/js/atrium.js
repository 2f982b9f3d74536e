/* Atrium panel: a few small behaviours. Everything works without this file; it only smooths the edges. */
(function () {
  "use strict";

  // A <select data-autosubmit> submits its form on change (the scope's project picker).
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el instanceof HTMLSelectElement && el.hasAttribute("data-autosubmit") && el.form) {
      el.form.requestSubmit();
    }
  });

  // The corridor: relax the server's sector layout with a small force simulation (repulsion between rooms,
  // springs along corridors, a pull to the centre). Positions are written back to the SVG the server drew.
  function relax(svg) {
    var nodes = Array.prototype.map.call(svg.querySelectorAll(".nodes a"), function (a) {
      var c = a.querySelector("circle");
      return { id: a.getAttribute("data-id"), el: c, x: +c.getAttribute("cx"), y: +c.getAttribute("cy"),
               r: +c.getAttribute("r"), vx: 0, vy: 0 };
    });
    if (nodes.length < 2 || nodes.length > 400) return;
    var byId = {};
    nodes.forEach(function (n) { byId[n.id] = n; });
    var lines = Array.prototype.slice.call(svg.querySelectorAll(".links line"));
    var links = lines.map(function (l) {
      return { el: l, a: byId[l.getAttribute("data-a")], b: byId[l.getAttribute("data-b")] };
    }).filter(function (l) { return l.a && l.b; });
    var box = svg.viewBox.baseVal, cx = box.width / 2, cy = box.height / 2;
    for (var step = 0; step < 160; step++) {
      var heat = 1 - step / 160;
      for (var i = 0; i < nodes.length; i++) {
        var p = nodes[i];
        for (var j = i + 1; j < nodes.length; j++) {
          var q = nodes[j], dx = p.x - q.x, dy = p.y - q.y, d2 = dx * dx + dy * dy + 0.01;
          var f = 900 / d2;
          p.vx += dx * f; p.vy += dy * f; q.vx -= dx * f; q.vy -= dy * f;
        }
        p.vx += (cx - p.x) * 0.01; p.vy += (cy - p.y) * 0.01;
      }
      links.forEach(function (l) {
        var dx = l.b.x - l.a.x, dy = l.b.y - l.a.y, d = Math.sqrt(dx * dx + dy * dy) || 1, f = (d - 60) * 0.02;
        l.a.vx += dx / d * f; l.a.vy += dy / d * f; l.b.vx -= dx / d * f; l.b.vy -= dy / d * f;
      });
      nodes.forEach(function (n) {
        n.x = Math.min(box.width - n.r, Math.max(n.r, n.x + Math.max(-8, Math.min(8, n.vx)) * heat));
        n.y = Math.min(box.height - n.r, Math.max(n.r, n.y + Math.max(-8, Math.min(8, n.vy)) * heat));
        n.vx *= 0.5; n.vy *= 0.5;
      });
    }
    nodes.forEach(function (n) { n.el.setAttribute("cx", n.x.toFixed(1)); n.el.setAttribute("cy", n.y.toFixed(1)); });
    links.forEach(function (l) {
      l.el.setAttribute("x1", l.a.x.toFixed(1)); l.el.setAttribute("y1", l.a.y.toFixed(1));
      l.el.setAttribute("x2", l.b.x.toFixed(1)); l.el.setAttribute("y2", l.b.y.toFixed(1));
    });
    svg.setAttribute("data-relaxed", "1");
  }

  function init(root) {
    var svg = (root || document).querySelector ? (root || document).querySelector("#corridor-svg") : null;
    if (svg && !svg.hasAttribute("data-relaxed")) relax(svg);
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (event) { init(event.target); });
})();
