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

  // A form inside [data-swap-conflicts] shows a 409 answer (htmx leaves 4xx unswapped by default): the curated
  // profile card answers a stale edit with the card itself, the conflict named and the typed text kept.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var d = event.detail;
    if (d.xhr && d.xhr.status === 409 && d.elt instanceof Element && d.elt.closest("[data-swap-conflicts]")) {
      d.shouldSwap = true;
      d.isError = false;
    }
  });

  // A <button data-copy="ID"> copies the text of the element with that id (no inline handler: the CSP allows none).
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("button[data-copy]") : null;
    var source = button ? document.getElementById(button.getAttribute("data-copy")) : null;
    if (source && navigator.clipboard) navigator.clipboard.writeText(source.textContent);
  });

  // The corridor: relax the server's sector layout with a small Fruchterman-Reingold simulation (rooms repel,
  // corridors pull, a little gravity keeps the picture centred). Positions are written back to the server's SVG.
  function relax(svg) {
    var nodes = Array.prototype.map.call(svg.querySelectorAll(".nodes a"), function (a) {
      var c = a.querySelector("circle");
      return { id: a.getAttribute("data-id"), el: c, label: a.querySelector("text"),
               x: +c.getAttribute("cx"), y: +c.getAttribute("cy"), r: +c.getAttribute("r"), dx: 0, dy: 0 };
    });
    if (nodes.length < 2 || nodes.length > 400) return;
    var byId = {};
    nodes.forEach(function (n) { byId[n.id] = n; });
    var links = Array.prototype.map.call(svg.querySelectorAll(".links line"), function (l) {
      return { el: l, a: byId[l.getAttribute("data-a")], b: byId[l.getAttribute("data-b")] };
    }).filter(function (l) { return l.a && l.b; });
    var box = svg.viewBox.baseVal, cx = box.width / 2, cy = box.height / 2, pad = 28;
    var k = 0.6 * Math.sqrt(box.width * box.height / nodes.length), steps = 200, t0 = box.width / 12;
    for (var step = 0; step < steps; step++) {
      var i, j, p, q, dx, dy, d, f;
      nodes.forEach(function (n) { n.dx = 0; n.dy = 0; });
      for (i = 0; i < nodes.length; i++) {
        p = nodes[i];
        for (j = i + 1; j < nodes.length; j++) {
          q = nodes[j]; dx = p.x - q.x; dy = p.y - q.y; d = Math.sqrt(dx * dx + dy * dy) || 0.1;
          f = k * k / d;
          p.dx += dx / d * f; p.dy += dy / d * f; q.dx -= dx / d * f; q.dy -= dy / d * f;
        }
      }
      links.forEach(function (l) {
        dx = l.a.x - l.b.x; dy = l.a.y - l.b.y; d = Math.sqrt(dx * dx + dy * dy) || 0.1; f = d * d / k;
        l.a.dx -= dx / d * f; l.a.dy -= dy / d * f; l.b.dx += dx / d * f; l.b.dy += dy / d * f;
      });
      var temp = t0 * (1 - step / steps) + 0.5;
      nodes.forEach(function (n) {
        n.dx += (cx - n.x) * k / 40; n.dy += (cy - n.y) * k / 40;  // gravity
        var len = Math.sqrt(n.dx * n.dx + n.dy * n.dy) || 1, move = Math.min(len, temp);
        n.x = Math.min(box.width - pad, Math.max(pad, n.x + n.dx / len * move));
        n.y = Math.min(box.height - pad, Math.max(pad, n.y + n.dy / len * move));
      });
    }
    nodes.forEach(function (n) {
      n.el.setAttribute("cx", n.x.toFixed(1)); n.el.setAttribute("cy", n.y.toFixed(1));
      if (n.label) { n.label.setAttribute("x", n.x.toFixed(1)); n.label.setAttribute("y", (n.y + n.r + 11).toFixed(1)); }
    });
    links.forEach(function (l) {
      l.el.setAttribute("x1", l.a.x.toFixed(1)); l.el.setAttribute("y1", l.a.y.toFixed(1));
      l.el.setAttribute("x2", l.b.x.toFixed(1)); l.el.setAttribute("y2", l.b.y.toFixed(1));
    });
    svg.setAttribute("data-relaxed", "1");
  }

  // A region with data-fallback="text" shows that text when its htmx request fails (an error status or no
  // answer), instead of keeping "Loading…" forever: the entity page's facts timeline.
  function fallback(event) {
    var target = event.detail && event.detail.target;
    if (target && target.hasAttribute && target.hasAttribute("data-fallback")) {
      var p = document.createElement("p");
      p.className = "muted";
      p.textContent = target.getAttribute("data-fallback");
      target.replaceChildren(p);
    }
  }
  document.addEventListener("htmx:responseError", fallback);
  document.addEventListener("htmx:sendError", fallback);

  // The live connection's state on <body data-live="open|closed"> (the browser tests wait for it, CSS may show it).
  document.addEventListener("htmx:wsOpen", function () { document.body.setAttribute("data-live", "open"); });
  document.addEventListener("htmx:wsClose", function () { document.body.setAttribute("data-live", "closed"); });

  function init(root) {
    var svg = (root || document).querySelector ? (root || document).querySelector("#corridor-svg") : null;
    if (svg && !svg.hasAttribute("data-relaxed")) relax(svg);
  }
  document.addEventListener("DOMContentLoaded", function () { init(document); });
  document.addEventListener("htmx:afterSettle", function (event) { init(event.target); });
})();
