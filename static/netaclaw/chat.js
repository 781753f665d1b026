/* NetaClaw chat page: slash commands, sending, and the small behaviours around the
 * htmx WebSocket extension (which does the socket and the out-of-band swaps).
 *
 * Page -> server frames are the chat form's values as JSON (htmx ws-send):
 *   {"type": "chat", "sessionId": "<uuid>", "content": "<text>", "HEADERS": {...}}
 * and parseSlashCommand rewrites "/compact [focus]" into
 *   {"type": "compact", "sessionId": "<uuid>", "instructions": "<focus>"}.
 * The Stop button (and Esc) sends #stop-form, {"type": "stop", "sessionId"}; a failed or
 * stopped turn's Retry sends #retry-form, {"type": "retry", "sessionId"}. The composer stays
 * usable while the agent works: a message sent then waits as a chip under the running turn.
 */
(function () {
  "use strict";

  // The slash commands the input understands (seed §8.2). Add an entry to extend:
  // build(argument) returns the frame fields (sessionId is added by the caller).
  var SLASH_COMMANDS = {
    compact: {
      build: function (argument) {
        var frame = { type: "compact" };
        if (argument) frame.instructions = argument;
        return frame;
      },
    },
  };

  var SLASH_PATTERN = /^\/([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/;

  /**
   * Classify what the user typed.
   *   {kind: "text", content}                   - an ordinary message
   *   {kind: "command", name, frame}            - a known slash command
   *   {kind: "unknown", name}                   - "/word" that is no command
   * Text that merely starts with a path ("/usr/bin/python fails") is ordinary text.
   */
  function parseSlashCommand(raw) {
    var text = (raw || "").trim();
    var match = SLASH_PATTERN.exec(text);
    if (!match) return { kind: "text", content: raw };
    var name = match[1].toLowerCase();
    var argument = (match[2] || "").trim();
    var command = Object.prototype.hasOwnProperty.call(SLASH_COMMANDS, name)
      ? SLASH_COMMANDS[name]
      : null;
    if (!command) return { kind: "unknown", name: "/" + match[1] };
    return { kind: "command", name: name, frame: command.build(argument) };
  }

  window.NetaClaw = window.NetaClaw || {};
  window.NetaClaw.parseSlashCommand = parseSlashCommand;
  window.NetaClaw.SLASH_COMMANDS = SLASH_COMMANDS;

  function byId(id) {
    return document.getElementById(id);
  }

  function showHint(text) {
    var hint = byId("slash-hint");
    if (!hint) return;
    hint.textContent = text;
    hint.hidden = !text;
  }

  function setBusy(busy) {
    var status = byId("turn-status");
    if (status) status.setAttribute("data-busy", busy ? "true" : "false");
  }

  function isWorking() {
    var status = byId("turn-status");
    var flag = byId("compaction-flag");
    return (
      (status && status.getAttribute("data-busy") === "true") ||
      (flag && flag.getAttribute("data-compacting") === "true")
    );
  }

  function submitForm(id) {
    var form = byId(id);
    if (form && form.requestSubmit) form.requestSubmit();
  }

  // --- scrolling -------------------------------------------------------------

  var stickToBottom = true;

  function scroller() {
    return byId("scroller");
  }

  function nearBottom(el) {
    return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  function scrollToBottom() {
    var el = scroller();
    if (el) el.scrollTop = el.scrollHeight;
  }

  // --- sending ---------------------------------------------------------------

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.id === "retry-form") {
      setBusy(true);
      return;
    }
    if (!(form instanceof HTMLFormElement) || form.id !== "chat-form") return;
    var params = event.detail.parameters;
    var parsed = parseSlashCommand(params.content);
    if (parsed.kind === "unknown") {
      event.preventDefault();
      showHint(form.getAttribute("data-unknown-command").replace("__NAME__", parsed.name));
      return;
    }
    if (parsed.kind === "text" && !String(params.content || "").trim()) {
      event.preventDefault();
      showHint(form.getAttribute("data-empty-message"));
      return;
    }
    if (parsed.kind === "command") {
      var frame = Object.assign({}, parsed.frame, { sessionId: params.sessionId });
      event.detail.parameters = frame;
    } else {
      setBusy(true);
    }
    showHint("");
    var input = byId("chat-input");
    if (input) {
      input.value = "";
      input.style.height = "";
    }
    stickToBottom = true;
    scrollToBottom();
  });

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLTextAreaElement) || input.id !== "chat-input") return;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) {
      return;
    }
    event.preventDefault();
    if (input.form) input.form.requestSubmit();
  });

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLTextAreaElement) || input.id !== "chat-input") return;
    showHint("");
    input.style.height = "";
    input.style.height = Math.min(input.scrollHeight, 240) + "px";
  });

  // --- the socket ------------------------------------------------------------

  function setConnection(state) {
    var chat = byId("chat");
    if (chat) chat.setAttribute("data-ws", state);
    var label = byId("ws-status");
    if (label) {
      label.setAttribute("data-state", state);
      label.textContent = label.getAttribute("data-label-" + state) || state;
    }
  }

  document.addEventListener("htmx:wsConnecting", function () {
    setConnection("connecting");
  });
  document.addEventListener("htmx:wsOpen", function () {
    setConnection("open");
  });
  document.addEventListener("htmx:wsClose", function () {
    setConnection("closed");
  });
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var el = scroller();
    stickToBottom = el ? nearBottom(el) : true;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (stickToBottom) scrollToBottom();
  });

  // A message already on the page (rendered with it, or sent twice) is not added again;
  // a queued message that arrives in the history leaves its chip.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!target || !fragment || !fragment.children) return;
    if (target.id !== "messages" && target.id !== "queued") return;
    Array.prototype.slice.call(fragment.children).forEach(function (child) {
      if (!child.id) return;
      if (document.getElementById(child.id)) {
        child.remove();
        return;
      }
      var queued = /^queued-(\d+)$/.exec(child.id);
      if (queued && document.getElementById("msg-" + queued[1])) {
        child.remove(); // already answered: no chip
        return;
      }
      var match = /^msg-(\d+)$/.exec(child.id);
      var chip = match && document.getElementById("queued-" + match[1]);
      if (chip) chip.remove();
    });
  });

  // --- "load earlier" keeps the reading position -----------------------------

  var heightBeforeLoad = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "load-earlier") {
      var el = scroller();
      heightBeforeLoad = el ? el.scrollHeight - el.scrollTop : null;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (heightBeforeLoad === null) return;
    var el = scroller();
    if (el) el.scrollTop = el.scrollHeight - heightBeforeLoad;
    heightBeforeLoad = null;
  });

  // --- summary drawer --------------------------------------------------------

  var drawerOpener = null;

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-open-summary")) drawerOpener = elt;
  });

  document.addEventListener("htmx:afterSettle", function () {
    var root = byId("summary-drawer");
    if (!root || root.getAttribute("data-open") !== "true" || root.dataset.focused) return;
    root.dataset.focused = "1";
    var dialog = root.querySelector('[role="dialog"]');
    if (dialog) dialog.focus();
  });

  function closeDrawer() {
    var root = byId("summary-drawer");
    if (!root || root.getAttribute("data-open") !== "true") return;
    var empty = document.createElement("div");
    empty.id = "summary-drawer";
    empty.className = "drawer-root";
    empty.hidden = true;
    root.replaceWith(empty);
    if (drawerOpener && document.body.contains(drawerOpener)) drawerOpener.focus();
    drawerOpener = null;
  }

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("[data-close-drawer]")) {
      closeDrawer();
      return;
    }
    var dismiss = target.closest("[data-dismiss]");
    if (dismiss) {
      var notice = dismiss.closest(".notice");
      if (notice) notice.remove();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      var root = byId("summary-drawer");
      if (root && root.getAttribute("data-open") === "true") {
        closeDrawer();
      } else if (isWorking()) {
        event.preventDefault();
        submitForm("stop-form"); // Esc stops the agent, like the Stop button
      }
      return;
    }
    // Keep Tab inside the open drawer (it is a modal dialog).
    var root = byId("summary-drawer");
    if (event.key !== "Tab" || !root || root.getAttribute("data-open") !== "true") return;
    var dialog = root.querySelector('[role="dialog"]');
    var focusable = dialog.querySelectorAll('a[href], button, [tabindex]:not([tabindex="-1"])');
    if (!focusable.length) return;
    var first = focusable[0];
    var last = focusable[focusable.length - 1];
    if (event.shiftKey && (document.activeElement === first || document.activeElement === dialog)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    } else if (!dialog.contains(document.activeElement)) {
      event.preventDefault();
      first.focus();
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    scrollToBottom();
  });
})();
