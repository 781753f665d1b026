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

/* The top bar's menu on narrow screens, the chat list as a drawer on phones, the rename and
 * delete dialogs of the chat list, and the copy buttons (code blocks, answers). */
(function () {
  "use strict";

  function setOpen(toggle, panel, open) {
    if (!panel) return;
    panel.classList.toggle("is-open", open);
    document.querySelectorAll('[aria-controls="' + panel.id + '"]').forEach(function (b) {
      b.setAttribute("aria-expanded", open ? "true" : "false");
    });
    if (panel.id === "sidebar") document.body.classList.toggle("sidebar-open", open);
    if (open && panel.id === "sidebar") {
      var first = panel.querySelector("select, button, a[href]");
      if (first) first.focus();
    } else if (!open && toggle) {
      toggle.focus();
    }
  }

  var sidebarOpener = null;

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    var topMenu = document.getElementById("topbar-menu");
    if (topMenu && topMenu.classList.contains("is-open") && !target.closest("#topbar-menu, [data-menu-toggle]")) {
      setOpen(null, topMenu, false); // a click elsewhere folds the menu
    }
    var skip = target.closest(".skip-link");
    if (skip) {  // focus the target itself: the message box, not just the scroll position
      var goal = document.getElementById((skip.getAttribute("href") || "").slice(1));
      if (goal) {
        event.preventDefault();
        goal.focus();
      }
      return;
    }
    var menu = target.closest("[data-menu-toggle]");
    if (menu) {
      var panel = document.getElementById(menu.getAttribute("aria-controls"));
      setOpen(null, panel, !(panel && panel.classList.contains("is-open")));
      return;
    }
    var toggle = target.closest("[data-sidebar-toggle]");
    if (toggle) {
      var sidebar = document.getElementById("sidebar");
      var open = !(sidebar && sidebar.classList.contains("is-open"));
      sidebarOpener = open ? toggle : null;
      setOpen(null, sidebar, open);
      return;
    }
    if (target.closest("[data-sidebar-close]")) {
      setOpen(sidebarOpener, document.getElementById("sidebar"), false);
      sidebarOpener = null;
      return;
    }
    var rename = target.closest("[data-rename-url]");
    if (rename && openDialog("rename-dialog", rename)) {
      event.preventDefault();
      return;
    }
    var remove = target.closest("[data-delete-url]");
    if (remove && openDialog("delete-dialog", remove)) {
      event.preventDefault();
      return;
    }
    if (target.closest("[data-dialog-close]")) {
      var dialog = target.closest("dialog");
      if (dialog) dialog.close();
      return;
    }
    var copyCode = target.closest(".codeblock-copy");
    if (copyCode) {
      var code = copyCode.closest(".codeblock").querySelector("pre code");
      copy(code ? code.textContent : "", copyCode);
      return;
    }
    var copyMessage = target.closest("[data-copy-message]");
    if (copyMessage) {
      var source = copyMessage.parentNode.querySelector("template.msg-source");
      copy(source ? source.content.textContent : "", copyMessage);
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    var sidebar = document.getElementById("sidebar");
    if (sidebar && sidebar.classList.contains("is-open")) {
      setOpen(sidebarOpener, sidebar, false);
      sidebarOpener = null;
      event.stopImmediatePropagation();
      return;
    }
    var menu = document.getElementById("topbar-menu");
    if (menu && menu.classList.contains("is-open")) {
      setOpen(document.getElementById("menu-toggle"), menu, false);
    }
  }, true);

  // --- rename and delete: one dialog each, pointed at the chat that was clicked --------

  function openDialog(id, trigger) {
    var dialog = document.getElementById(id);
    if (!dialog || typeof dialog.showModal !== "function") return false; // the link's page
    var form = dialog.querySelector("form");
    form.setAttribute("action", trigger.getAttribute(id === "rename-dialog" ? "data-rename-url" : "data-delete-url"));
    var title = trigger.getAttribute("data-title") || "";
    var input = dialog.querySelector('input[name="title"]');
    if (input) input.value = title;
    var shown = dialog.querySelector("[data-delete-title]");
    if (shown) shown.textContent = title;
    dialog.showModal();
    if (input) input.select();
    return true;
  }

  // --- copying -------------------------------------------------------------------------

  function flash(button, label) {
    if (!button.dataset.label) button.dataset.label = button.textContent;
    button.textContent = label;
    clearTimeout(button._netaclawTimer);
    button._netaclawTimer = setTimeout(function () {
      button.textContent = button.dataset.label;
    }, 1500);
  }

  function copyWithSelection(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "sr-only";
    document.body.appendChild(area);
    area.select();
    var done = false;
    try {
      done = document.execCommand("copy");
    } catch (e) {
      done = false;
    }
    area.remove();
    return done;
  }

  function copy(text, button) {
    var labels = document.body.dataset;
    var ok = function () { flash(button, labels.labelCopied || "Copied"); };
    var failed = function () {
      if (copyWithSelection(text)) ok();
      else flash(button, labels.labelCopyFailed || "Could not copy");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(ok, failed);
    } else {
      failed();
    }
  }

  window.NetaClaw = window.NetaClaw || {};
  window.NetaClaw.copyText = copy;
})();
