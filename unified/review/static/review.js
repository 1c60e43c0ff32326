// The review page's keys (the page works without them: every action is a link or a form).
// 1 / 0 label the highlighted metric (the first one without your label), s skips,
// n / → and p / ← walk the queue, e writes a note, ? shows the keys.
(function () {
  "use strict";
  function active() {
    return document.querySelector(".metric.open") || document.querySelector(".metric");
  }
  function mark() {
    var a = active();
    if (a) a.classList.add("active");
  }
  function label(value) {
    var m = active();
    if (!m) return;
    if (m.dataset.graded === "yes") {
      m.querySelector("input[name=value]").focus();
      return;
    }
    var form = m.querySelector("form.label");
    form.requestSubmit(form.querySelector('button[value="' + value + '"]'));
  }
  function go(id) {
    var a = document.getElementById(id);
    if (a) window.location.href = a.href;
  }
  function toggleKeys() {
    var d = document.getElementById("keys");
    if (d.open) d.close(); else d.showModal();
  }
  document.addEventListener("DOMContentLoaded", function () {
    mark();
    document.getElementById("show-keys").addEventListener("click", toggleKeys);
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    var typing = t && (t.tagName === "TEXTAREA" || t.tagName === "INPUT" || t.tagName === "SELECT");
    if (typing) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    switch (e.key) {
      case "1": label("1"); break;
      case "0": label("0"); break;
      case "s": document.getElementById("skip").requestSubmit(); break;
      case "n": case "ArrowRight": go("next"); break;
      case "p": case "ArrowLeft": go("prev"); break;
      case "e": var m = active(); if (m) m.querySelector("textarea").focus(); break;
      case "?": toggleKeys(); break;
      default: return;
    }
    e.preventDefault();
  });
})();
