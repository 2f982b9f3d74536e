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

})();
