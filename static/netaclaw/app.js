/* NetaClaw: small behaviours shared by every page (no framework, no external assets). */
(function () {
  "use strict";

  // Loaded without defer, so this delegated listener exists before the first select does:
  // the language select submits itself (the <noscript> button covers no-JS browsers).
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target instanceof HTMLSelectElement && target.hasAttribute("data-autosubmit")) {
      target.form.submit();
    }
  });

  // A range input shows its value next to it: <output data-range-output="input-id">.
  function syncRange(input) {
    document.querySelectorAll('[data-range-output="' + input.id + '"]').forEach(function (out) {
      out.textContent = input.value + (out.getAttribute("data-suffix") || "");
    });
  }
  document.addEventListener("input", function (event) {
    if (event.target instanceof HTMLInputElement && event.target.type === "range") {
      syncRange(event.target);
    }
  });

  // The channel form: base URL is required for OpenAI-compatible servers.
  function syncProvider(form) {
    var provider = form.querySelector('[name="provider"]');
    var baseUrl = form.querySelector('[name="base_url"]');
    if (!provider || !baseUrl) return;
    var required = provider.value === "openai_compatible";
    baseUrl.required = required;
    var field = baseUrl.closest(".field");
    if (field) field.classList.toggle("is-required", required);
  }
  document.addEventListener("change", function (event) {
    var form = event.target instanceof Element && event.target.closest("[data-channel-form]");
    if (form) syncProvider(form);
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll('input[type="range"]').forEach(syncRange);
    document.querySelectorAll("[data-channel-form]").forEach(syncProvider);
  });
})();
